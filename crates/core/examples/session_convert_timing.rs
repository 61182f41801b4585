//! Times `session.toProvider` in Rust (development aid; `npm run bench` is the
//! real benchmark): `session_convert_timing FILE TARGET [THREADS [ROUNDS]]`.
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bytes = std::fs::read(&args[0]).expect("read");
    let s = forkpoint_core::Session::from_bytes_threads(bytes, &Default::default(), None, 2)
        .expect("load");
    let target = args.get(1).map(String::as_str).unwrap_or("anthropic");
    let threads: usize = args.get(2).and_then(|t| t.parse().ok()).unwrap_or(1);
    let rounds: usize = args.get(3).and_then(|t| t.parse().ok()).unwrap_or(3);
    for _ in 0..rounds {
        let t0 = Instant::now();
        let c = s.context(None).expect("context");
        let t1 = Instant::now();
        drop(c);
        let out =
            forkpoint_core::normalize::session_to_provider_lines(&s, None, target, None, threads)
                .expect("convert");
        let t2 = Instant::now();
        let ascii = out.is_ascii();
        let t3 = Instant::now();
        drop(out);
        let t4 = Instant::now();
        eprintln!(
            "context {:?} | to_provider_lines {:?} | is_ascii {ascii} {:?} | drop {:?}",
            t1 - t0,
            t2 - t1,
            t3 - t2,
            t4 - t3
        );
    }
}
