//! Quick timing of a full load (development aid; `npm run bench` is the real benchmark).
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("path");
    let t0 = Instant::now();
    let bytes = std::fs::read(&path).expect("read");
    let t1 = Instant::now();
    let s = forkpoint_core::Session::from_bytes_threads(bytes, &Default::default(), Some(path), 2)
        .expect("load");
    let t2 = Instant::now();
    let ctx = s.context_json(None, false).expect("ctx");
    let t3 = Instant::now();
    let m = s.metadata();
    println!(
        "read {:?} parse {:?} context {:?} ({} bytes) entries {} leaves {} bp {} leaf {:?}",
        t1 - t0,
        t2 - t1,
        t3 - t2,
        ctx.len(),
        m.entry_count,
        m.leaf_count,
        m.branch_points,
        m.leaf_id
    );
    let c = s.context(None).unwrap();
    println!("context messages {}", c.messages.len());
}
