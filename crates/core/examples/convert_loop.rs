//! Profiling aid: parses a context JSON file once, then converts it N times.
use forkpoint_core::normalize::{self, J, Provider, ToOptions};
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let text = std::fs::read_to_string(&args[0]).expect("file");
    let target = Provider::parse(&args[1]).expect("target");
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(5);
    let J::Arr(msgs) = J::parse(&text).expect("json") else {
        panic!()
    };
    let opts = ToOptions {
        pairing: true,
        ..Default::default()
    };
    let t = std::time::Instant::now();
    for _ in 0..n {
        let c = normalize::convert(msgs.clone(), target, &opts).expect("convert");
        std::hint::black_box(c);
    }
    eprintln!("convert x{n}: {:?} each", t.elapsed() / n as u32);
}
