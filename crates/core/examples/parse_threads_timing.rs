//! Times `J::parse_owned_threads` against `J::parse_owned` (for profiling):
//! `parse_threads_timing FILE THREADS`.
use std::time::Instant;

use forkpoint_core::normalize::J;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let text = std::fs::read_to_string(&args[0]).expect("file");
    let threads: usize = args.get(1).and_then(|t| t.parse().ok()).unwrap_or(2);
    for _ in 0..3 {
        let copy = text.clone();
        let t = Instant::now();
        let one = J::parse_owned(copy).expect("json");
        let t_one = t.elapsed();
        let copy = text.clone();
        let t = Instant::now();
        let two = J::parse_owned_threads(copy, threads).expect("json");
        let t_two = t.elapsed();
        assert_eq!(one.text().len(), two.text().len());
        eprintln!("one thread {t_one:?}, {threads} threads {t_two:?}");
    }
}
