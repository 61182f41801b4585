//! Times the phases of `toProvider` on a context JSON file (for profiling):
//! `convert_timing FILE TARGET` (`THREADS=n`: `to_provider_lines` on n threads).
use std::time::Instant;

use forkpoint_core::normalize::{self, J, Provider, ToOptions};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let text = std::fs::read_to_string(&args[0]).expect("file");
    let target =
        Provider::parse(args.get(1).map(String::as_str).unwrap_or("anthropic")).expect("target");
    let t = Instant::now();
    let parsed = J::parse(&text).expect("json");
    let t_parse = t.elapsed();
    let msgs = match parsed {
        J::Arr(a) => a,
        _ => panic!("array"),
    };
    let t = Instant::now();
    let opts = ToOptions {
        pairing: true,
        ..Default::default()
    };
    let c = normalize::convert(msgs, target, &opts).expect("convert");
    let t_convert = t.elapsed();
    let t = Instant::now();
    let out = c.request.text();
    let t_text = t.elapsed();
    let threads = std::env::var("THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(1);
    let t = Instant::now();
    let two = J::parse_owned_threads(text.clone(), threads).expect("json");
    let t_two = t.elapsed();
    drop(two);
    let t = Instant::now();
    let mut body = String::with_capacity(out.len() + 64);
    c.request.write_threads(&mut body, threads);
    let t_wt = t.elapsed();
    assert_eq!(body, out);
    let t = Instant::now();
    let total = normalize::to_provider_lines(text.clone(), target.name(), None, threads)
        .expect("all")
        .len();
    let t_all = t.elapsed();
    eprintln!(
        "parse {:?} (on {threads} threads {t_two:?}) convert {:?} text {:?} (on threads {t_wt:?}, {} bytes) | to_provider_lines {:?} ({total})",
        t_parse,
        t_convert,
        t_text,
        out.len(),
        t_all
    );
}
