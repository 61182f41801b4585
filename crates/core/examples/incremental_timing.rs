//! Times `RequestCache` on a context JSON file (for profiling):
//! `incremental_timing FILE TARGET`: the request before the last assistant
//! turn (converted whole, kept), then the next one.
use std::time::Instant;

use forkpoint_core::normalize::incremental::RequestCache;
use forkpoint_core::normalize::{J, Provider, ToOptions};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let text = std::fs::read_to_string(&args[0]).expect("file");
    let target =
        Provider::parse(args.get(1).map(String::as_str).unwrap_or("anthropic")).expect("target");
    let J::Arr(msgs) = J::parse(&text).expect("json") else {
        panic!("array")
    };
    let texts: Vec<String> = msgs.iter().map(J::text).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let a = texts
        .iter()
        .rposition(|m| m.contains("\"role\":\"assistant\""))
        .expect("an assistant message");
    let opts = ToOptions {
        pairing: true,
        ..Default::default()
    };
    let mut cache = RequestCache::new();
    cache.lean = std::env::var("LEAN").is_ok_and(|v| v == "1");
    if let Some(n) = std::env::var("THREADS").ok().and_then(|n| n.parse().ok()) {
        cache.threads = n;
    }
    let t = Instant::now();
    let c = cache.convert(&texts[..a], target, &opts).expect("convert");
    let t_convert = t.elapsed();
    let t = Instant::now();
    let body = cache.write(&c.request, target);
    let t_write = t.elapsed();
    let t = Instant::now();
    let c = cache
        .convert(texts.as_slice(), target, &opts)
        .expect("convert");
    let t_next = t.elapsed();
    let t = Instant::now();
    let body2 = cache.write(&c.request, target);
    let t_write2 = t.elapsed();
    // Repeated (for profiling): the same request again is the same work as step N+1.
    let reps: usize = std::env::var("REPS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(0);
    let t = Instant::now();
    for _ in 0..reps {
        let c = cache
            .convert(texts.as_slice(), target, &opts)
            .expect("convert");
        std::hint::black_box(&c);
    }
    if reps > 0 {
        eprintln!("convert again: {:?} each", t.elapsed() / reps as u32);
    }
    eprintln!(
        "step N: convert {t_convert:?} write {t_write:?} ({} bytes) | step N+1: convert {t_next:?} write {t_write2:?} ({} bytes), kept {} of {}, first conversion {} on {} threads",
        body.len(),
        body2.len(),
        cache.kept(),
        texts.len(),
        if cache.splits > 0 { "cut" } else { "whole" },
        cache.threads
    );
}
