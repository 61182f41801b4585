//! An event line reads as `JSON.parse` would read its envelope (serde_json
//! keeps the last of repeated members, as `JSON.parse` does), through the fast
//! path for the log's own lines and the general one for others; never panics.
#![no_main]

use forkpoint_core::events::parse_event_line;
use libfuzzer_sys::fuzz_target;

/// `None` when serde_json cannot tell (numbers beyond f64, which `JSON.parse`
/// reads as Infinity and serde_json rejects).
fn oracle(line: &str) -> Option<Option<(u64, i64, String, String)>> {
    match serde_json::from_str::<serde_json::Value>(line) {
        Ok(v) => Some(envelope(&v)),
        Err(e) if e.to_string().contains("out of range") => None,
        Err(_) => Some(None),
    }
}

fn envelope(v: &serde_json::Value) -> Option<(u64, i64, String, String)> {
    let whole = |x: &serde_json::Value| {
        x.as_f64()
            .filter(|n| n.fract() == 0.0 && n.abs() <= 9_007_199_254_740_991.0)
    };
    let seq = whole(&v["seq"]).filter(|n| *n >= 0.0)? as u64;
    let ts = whole(&v["timestamp"])? as i64;
    let ch = v["channel"]
        .as_str()
        .filter(|c| ["progress", "control", "monitor"].contains(c))?;
    let kind = v["type"].as_str()?;
    Some((seq, ts, ch.to_string(), kind.to_string()))
}

fuzz_target!(|data: &[u8]| {
    // Most inputs start like the log's own lines, so the fast path is exercised.
    let mut line = String::from("{\"seq\":");
    let Ok(text) = std::str::from_utf8(data) else { return };
    line.push_str(text);
    for l in [text, line.as_str()] {
        let got = parse_event_line(l, 100)
            .ok()
            .map(|m| (m.seq, m.timestamp, m.channel.as_str().to_string(), m.kind.to_string()));
        let deep = l.bytes().filter(|&c| c == b'[' || c == b'{').count() > 100;
        if !deep && !l.contains("\\ud8") && !l.contains("\\uD8") && !l.contains("\\udc") && !l.contains("\\uDC") {
            if let Some(want) = oracle(l) {
                assert_eq!(got, want, "{l:?}");
            }
        }
    }
});
