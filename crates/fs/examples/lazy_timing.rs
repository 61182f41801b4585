//! Development aid: time a lazy resume and compare it with a full load.
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("path");
    let p = std::path::Path::new(&path);
    // FRESH=1: remove the resume hint before each load (times the first open).
    let fresh = std::env::var("FRESH").is_ok_and(|v| v == "1");
    for _ in 0..3 {
        if fresh {
            let _ = std::fs::remove_file(format!("{path}.idx.json"));
        }
        let t0 = Instant::now();
        let lf = forkpoint_fs::load_lazy(p, Default::default()).expect("lazy");
        let ctx = lf.loader.context_json(false).expect("ctx");
        let t1 = Instant::now();
        let m = lf.loader.metadata(lf.hint_written).unwrap();
        println!(
            "lazy {:?} mode {} read {} msgs {} written {} rejected {:?}",
            t1 - t0,
            m.mode,
            m.bytes_read,
            m.context_messages,
            lf.hint_written,
            m.hint_rejected
        );
        if std::env::var("ONLY_LAZY").is_ok_and(|v| v == "1") {
            continue;
        }
        let full = forkpoint_fs::read_session(p, &Default::default()).unwrap();
        let fctx = full.context_json(None, false).unwrap();
        println!("equal: {}", fctx == ctx);
        if fctx != ctx {
            println!(
                "full {} lazy {}",
                &fctx[fctx.len().saturating_sub(300)..],
                &ctx[ctx.len().saturating_sub(300)..]
            );
        }
    }
}
