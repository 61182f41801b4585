//! Timing of the full-load stages on one thread, in process (development aid).
use std::time::Instant;

fn best<F: FnMut() -> usize>(name: &str, n: usize, mut f: F) {
    if let Ok(only) = std::env::var("ONLY")
        && !only.split(',').any(|o| o == name)
    {
        return;
    }
    let mut times = vec![];
    let mut x = 0;
    for _ in 0..n {
        let t = Instant::now();
        x += f();
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "{name:<14} min {:7.1} ms  median {:7.1} ms  ({x})",
        times[0],
        times[n / 2]
    );
}

fn main() {
    let path = std::env::args().nth(1).expect("path");
    let n: usize = std::env::args().nth(2).map_or(7, |s| s.parse().unwrap());
    let bytes = std::fs::read(&path).expect("read");
    let text = std::str::from_utf8(&bytes).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    best("from_utf8", n, || {
        std::str::from_utf8(&bytes).map_or(0, |s| s.len() & 1)
    });
    best("memchr", n, || memchr::memchr_iter(b'\n', &bytes).count());
    best("validate", n, || {
        lines
            .iter()
            .map(|l| forkpoint_core::json::validate(l.as_bytes(), 512).map_or(1, |_| 0))
            .sum()
    });
    best("envelope", n, || {
        lines
            .iter()
            .skip(1)
            .map(|l| forkpoint_core::entry::parse_envelope(l, 512).map_or(1, |e| e.members))
            .sum()
    });
    best("copy", n, || bytes.to_vec().len());
    best("from_bytes", n, || {
        forkpoint_core::Session::from_bytes(bytes.clone(), &Default::default(), None)
            .unwrap()
            .len()
    });
    best("threads2", n, || {
        forkpoint_core::Session::from_bytes_threads(bytes.clone(), &Default::default(), None, 2)
            .unwrap()
            .len()
    });
}
