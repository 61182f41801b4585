//! Where a full load's time goes: `load_timing <path> [runs]` prints, per run,
//! the read (std's, on one thread, and `read_all`'s), the UTF-8 check, the scan on one and on all threads, and the
//! context (median of the runs, in ms).
use std::time::Instant;

use forkpoint_core::{LoadOptions, Session};

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_default();
    let runs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(5).max(1);
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    let opts = LoadOptions::default();
    let mut rows: Vec<[f64; 7]> = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let one_read = std::fs::read(&path).map(|b| b.len()).unwrap_or_default();
        let read1 = ms(t);
        let t = Instant::now();
        let bytes = forkpoint_fs::io::read_all(std::path::Path::new(&path), &Default::default())
            .unwrap_or_default();
        let read = ms(t);
        assert_eq!(one_read, bytes.len());
        let t = Instant::now();
        let ok = std::str::from_utf8(&bytes).is_ok();
        let utf8 = ms(t);
        let copy = bytes.clone();
        let t = Instant::now();
        let one = Session::from_bytes_threads(copy, &opts, None, 1)
            .map(|_| ())
            .is_ok();
        let scan1 = ms(t);
        let t = Instant::now();
        let s = Session::from_bytes_threads(bytes, &opts, None, threads);
        let scan_n = ms(t);
        let t = Instant::now();
        let ctx_ok = s
            .as_ref()
            .is_ok_and(|s| s.context_json(None, false).is_ok());
        let context = ms(t);
        let t = Instant::now();
        drop(s);
        let drop_ms = ms(t);
        assert!(ok && one && ctx_ok, "not UTF-8 or not loadable");
        rows.push([read1, read, utf8, scan1, scan_n, context, drop_ms]);
    }
    let med = |k: usize| {
        let mut v: Vec<f64> = rows.iter().map(|r| r[k]).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "read: std {:.1}, read_all {:.1}  utf8 {:.1}  load: 1 thread {:.1}, {threads} threads {:.1}  context {:.1}  drop {:.1}",
        med(0),
        med(1),
        med(2),
        med(3),
        med(4),
        med(5),
        med(6)
    );
}
