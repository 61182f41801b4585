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
    // Copies made before the clock starts; the results are dropped after it stops.
    let copies: Vec<Vec<J>> = (0..n).map(|_| msgs.clone()).collect();
    let mut done = Vec::with_capacity(n);
    let t = std::time::Instant::now();
    for copy in copies {
        done.push(normalize::convert(copy, target, &opts).expect("convert"));
    }
    eprintln!("convert x{n}: {:?} each", t.elapsed() / n as u32);
    drop(done);
}
