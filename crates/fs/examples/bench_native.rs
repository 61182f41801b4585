//! One benchmark measurement in native Rust (used by `npm run bench`):
//! `bench_native full|lazy <path>` prints `{"ms","rssPeakKb","contextMessages"}`.
use std::path::Path;
use std::time::Instant;

use forkpoint_core::{LazyOptions, LoadOptions};

fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(str::to_string)
        })
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_default();
    let path = args.next().unwrap_or_default();
    let p = Path::new(&path);
    let t0 = Instant::now();
    let ctx = match mode.as_str() {
        "full" => forkpoint_fs::read_session(p, &LoadOptions::default())
            .and_then(|s| s.context_json(None, false)),
        "lazy" => forkpoint_fs::load_lazy(p, LazyOptions::default())
            .and_then(|l| l.loader.context_json(false)),
        other => panic!("unknown mode {other}"),
    };
    let ms = t0.elapsed().as_secs_f64() * 1000.0;
    match ctx {
        Ok(ctx) => {
            let v: serde_json::Value = serde_json::from_str(&ctx).unwrap_or_default();
            let n = v["messages"].as_array().map_or(0, Vec::len);
            println!(
                "{{\"ms\":{ms},\"rssPeakKb\":{},\"contextMessages\":{n}}}",
                peak_rss_kb()
            );
        }
        Err(e) => println!(
            "{{\"error\":{}}}",
            serde_json::to_string(&e.to_string()).unwrap_or_default()
        ),
    }
}
