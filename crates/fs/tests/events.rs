//! Event logs on real files.

use std::path::Path;
use std::sync::Arc;

use forkpoint_core::events::{Channel, EventFilter};
use forkpoint_core::{Durability, ErrorCode, EventLogOptions};
use forkpoint_fs::events::FileEventLog;

fn rw() -> EventLogOptions {
    EventLogOptions::default()
}

fn open(p: &Path, o: &EventLogOptions) -> FileEventLog {
    FileEventLog::open(p, o).unwrap().0
}

fn emit(log: &FileEventLog, json: &str) -> u64 {
    let b = log.append(json, 1_770_000_000_000).unwrap();
    log.wait(b.seq).unwrap();
    b.seq
}

fn seqs(log: &FileEventLog, since: Option<u64>, f: &EventFilter) -> Vec<u64> {
    log.read(since, None, f).unwrap().seqs().collect()
}

#[test]
fn seq_grows_across_reopen_and_reads_filter() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("events.jsonl");
    let log = open(&p, &rw());
    assert_eq!(emit(&log, r#"{"type":"tool:start","call":{"id":"a"}}"#), 1);
    assert_eq!(
        emit(&log, r#"{"type":"permission_required","call":{"id":"a"}}"#),
        2
    );
    log.close().unwrap();
    let log = open(&p, &rw());
    assert_eq!(log.last_bookmark().unwrap().unwrap().seq, 2);
    assert_eq!(
        emit(
            &log,
            r#"{"type":"agent_resumed","strategy":"crash","sealed":[]}"#
        ),
        3
    );
    let all = EventFilter::default();
    assert_eq!(seqs(&log, None, &all), [1, 2, 3]);
    assert_eq!(seqs(&log, Some(1), &all), [2, 3]);
    let control = EventFilter {
        channels: Some(vec![Channel::Control]),
        ..Default::default()
    };
    assert_eq!(seqs(&log, None, &control), [2]);
    let limited = EventFilter {
        limit: Some(1),
        ..Default::default()
    };
    assert_eq!(seqs(&log, Some(1), &limited), [2]);
    let range = log.read(Some(0), Some(2), &all).unwrap();
    assert_eq!(range.len(), 2);
    log.close().unwrap();
}

#[test]
fn a_torn_tail_never_swallows_the_next_append() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("events.jsonl");
    let log = open(&p, &rw());
    for _ in 0..3 {
        emit(&log, r#"{"type":"done","step":1,"reason":"completed"}"#);
    }
    log.close().unwrap();
    let good = std::fs::read(&p).unwrap();
    let last = br#"{"seq":4,"timestamp":1770000000000,"channel":"progress","type":"done","step":2,"reason":"completed"}"#;
    for cut in 0..=last.len() {
        let mut bytes = good.clone();
        bytes.extend_from_slice(&last[..cut]);
        std::fs::write(&p, &bytes).unwrap();
        let _ = std::fs::remove_file(p.with_extension("jsonl.idx.json"));
        let (log, info) = FileEventLog::open(&p, &rw()).unwrap();
        let complete = cut == last.len();
        assert_eq!(info.repaired.is_some(), cut > 0 && !complete, "cut {cut}");
        let next = emit(&log, r#"{"type":"done","step":3,"reason":"completed"}"#);
        assert_eq!(
            next,
            if complete { 5 } else { 4 },
            "cut {cut}: seq continues after the last durable event"
        );
        log.close().unwrap();
        let log = open(&p, &rw());
        let all = seqs(&log, None, &EventFilter::default());
        assert_eq!(
            all.last(),
            Some(&next),
            "cut {cut}: the append after the tear survives"
        );
        assert_eq!(all.len() as u64, next);
        log.close().unwrap();
    }
}

#[test]
fn a_torn_line_followed_by_blank_lines_is_cut_with_them() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("events.jsonl");
    let log = open(&p, &rw());
    emit(&log, r#"{"type":"done","step":1,"reason":"completed"}"#);
    log.close().unwrap();
    let good = std::fs::read(&p).unwrap();
    let mut bytes = good.clone();
    bytes.extend_from_slice(b"{\"seq\":2,\"timest\n\n  \n");
    std::fs::write(&p, &bytes).unwrap();
    // A follower ignores the tail and keeps looking at it.
    let ro = EventLogOptions {
        read_only: true,
        ..rw()
    };
    let (r, info) = FileEventLog::open(&p, &ro).unwrap();
    assert_eq!(info.repaired.unwrap().offset, good.len() as u64);
    assert_eq!(r.last_bookmark().unwrap().unwrap().seq, 1);
    drop(r);
    let (log, info) = FileEventLog::open(&p, &rw()).unwrap();
    let t = info.repaired.unwrap();
    assert_eq!(
        (t.offset, t.bytes),
        (good.len() as u64, (bytes.len() - good.len()) as u64)
    );
    assert_eq!(std::fs::metadata(&p).unwrap().len(), good.len() as u64);
    emit(&log, r#"{"type":"done","step":2,"reason":"completed"}"#);
    log.close().unwrap();
    // The next append follows the last good line: no gap, nothing lost on reopen.
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.starts_with(std::str::from_utf8(&good).unwrap()) && !text.contains('\0'));
    let log = open(&p, &rw());
    assert_eq!(seqs(&log, None, &EventFilter::default()), [1, 2]);
}

#[test]
fn reads_in_parts_include_an_event_with_seq_zero() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("zero.jsonl");
    std::fs::write(
        &p,
        "{\"seq\":0,\"timestamp\":1,\"channel\":\"monitor\",\"type\":\"x\"}\n",
    )
    .unwrap();
    let log = open(&p, &rw());
    let mut c = log.cursor(None, None, EventFilter::default()).unwrap();
    let part: serde_json::Value =
        serde_json::from_str(&log.read_part(&mut c, 1 << 20).unwrap()).unwrap();
    assert_eq!(part[0]["seq"], 0);
    assert_eq!(log.read_part(&mut c, 1 << 20).unwrap(), "[]");
}

#[test]
fn read_ahead_gives_the_read_in_order_and_stops_when_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("ahead.jsonl");
    let log = Arc::new(open(&p, &rw()));
    let pad = "x".repeat(200);
    for i in 0..3000 {
        let kind = if i % 3 == 0 { "tool:end" } else { "text_chunk" };
        let b = log
            .append(&format!(r#"{{"type":"{kind}","pad":"{pad}"}}"#), 1)
            .unwrap();
        if i == 2999 {
            log.wait(b.seq).unwrap();
        }
    }
    let filter = EventFilter {
        kinds: Some(vec!["text_chunk".into()]),
        limit: Some(1500),
        ..EventFilter::default()
    };
    let want: Vec<u64> = seqs(&log, Some(40), &filter);
    assert_eq!(want.len(), 1500);
    // Parts of ~4 KB, at most two ahead: many parts, the thread often waits.
    let mut a = log
        .read_ahead(log.cursor(Some(40), None, filter.clone()).unwrap(), 4096, 2)
        .unwrap();
    let mut got = Vec::new();
    let mut parts = 0;
    loop {
        let text = match a.try_next() {
            Some(r) => r.unwrap(),
            None => a.wait_next().unwrap(),
        };
        if text == "[]" {
            break;
        }
        parts += 1;
        let part: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
        got.extend(part.iter().map(|e| e["seq"].as_u64().unwrap()));
    }
    assert!(parts > 20, "{parts} parts");
    assert_eq!(got, want);
    assert_eq!(a.wait_next().unwrap(), "[]");
    // Dropped after one part: the thread ends (the log can still be closed and reopened).
    let mut b = log
        .read_ahead(
            log.cursor(None, None, EventFilter::default()).unwrap(),
            4096,
            1,
        )
        .unwrap();
    assert_ne!(b.wait_next().unwrap(), "[]");
    drop(b);
    log.close().unwrap();
}

#[test]
fn corruption_is_reported_with_line_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("events.jsonl");
    let log = open(&p, &rw());
    for _ in 0..5 {
        emit(&log, r#"{"type":"state_changed","state":"WORKING"}"#);
    }
    log.close().unwrap();
    let text = std::fs::read_to_string(&p).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut bad = lines.clone();
    bad[2] = "{\"seq\":3,garbage";
    std::fs::write(&p, bad.join("\n") + "\n").unwrap();
    let _ = std::fs::remove_file(p.with_extension("jsonl.idx.json"));
    let e = FileEventLog::open(&p, &rw()).err().unwrap();
    assert_eq!(e.code, ErrorCode::CorruptedData);
    assert_eq!(e.line, Some(3));
    assert_eq!(e.offset, Some((lines[0].len() + lines[1].len() + 2) as u64));
    assert_eq!(
        std::fs::read_to_string(&p).unwrap(),
        bad.join("\n") + "\n",
        "refused untouched"
    );
    // A seq that goes backwards is corruption too.
    let mut back = lines.clone();
    back.swap(1, 3);
    std::fs::write(&p, back.join("\n") + "\n").unwrap();
    let e = FileEventLog::open(&p, &rw()).err().unwrap();
    assert_eq!((e.code, e.line), (ErrorCode::CorruptedData, Some(3)));
}

#[test]
fn index_is_rebuilt_when_missing_or_stale_and_reads_agree() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("events.jsonl");
    let idx = p.with_extension("jsonl.idx.json");
    let log = open(
        &p,
        &EventLogOptions {
            durability: Durability::Group,
            ..rw()
        },
    );
    let n = 5000u64;
    let log = Arc::new(log);
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                for i in 0..n / 4 {
                    let b = log
                        .append(&format!(r#"{{"type":"tool:end","t":{t},"i":{i}}}"#), 0)
                        .unwrap();
                    log.wait(b.seq).unwrap();
                }
            })
        })
        .collect();
    handles.into_iter().for_each(|h| h.join().unwrap());
    log.close().unwrap();
    let all = EventFilter::default();
    let check = |log: &FileEventLog| {
        for since in [
            None,
            Some(0),
            Some(1),
            Some(1023),
            Some(1024),
            Some(1025),
            Some(4097),
            Some(n - 1),
            Some(n),
            Some(n + 5),
        ] {
            let got = seqs(log, since, &all);
            let want: Vec<u64> = (since.map_or(1, |s| s + 1)..=n).collect();
            assert_eq!(got, want, "since {since:?}");
        }
    };
    let (log, info) = FileEventLog::open(&p, &rw()).unwrap();
    assert!(!info.index_rebuilt);
    assert_eq!(info.events, n);
    check(&log);
    log.close().unwrap();
    // Missing index.
    std::fs::remove_file(&idx).unwrap();
    let (log, info) = FileEventLog::open(&p, &rw()).unwrap();
    assert!(info.index_rebuilt);
    check(&log);
    log.close().unwrap();
    // An index that lies (an entry claims a lower seq than the one at its
    // offset): reads notice, rebuild, and stay exact.
    let text = std::fs::read_to_string(&idx).unwrap();
    assert!(text.contains("[2049,"));
    std::fs::write(&idx, text.replacen("[2049,", "[2040,", 1)).unwrap();
    let log = open(&p, &rw());
    assert_eq!(seqs(&log, Some(2045), &all), (2046..=n).collect::<Vec<_>>());
    check(&log);
    log.close().unwrap();
    assert!(
        std::fs::read_to_string(&idx).unwrap().contains("[2049,"),
        "the index was rewritten"
    );
    // A stale index (the file grew without it): extended by scanning the tail.
    let old_index = std::fs::read_to_string(&idx).unwrap();
    let log = open(&p, &rw());
    emit(&log, r#"{"type":"done","step":1,"reason":"completed"}"#);
    log.close().unwrap();
    std::fs::write(&idx, old_index).unwrap();
    let (log, info) = FileEventLog::open(&p, &rw()).unwrap();
    assert!(!info.index_rebuilt);
    assert_eq!(info.events, n + 1);
    assert_eq!(seqs(&log, Some(n), &all), [n + 1]);
}

#[test]
fn one_writer_and_readers_that_follow() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("events.jsonl");
    let w = open(&p, &rw());
    emit(&w, r#"{"type":"done","step":1,"reason":"completed"}"#);
    assert_eq!(
        FileEventLog::open(&p, &rw()).err().unwrap().code,
        ErrorCode::LogLocked
    );
    let r = open(
        &p,
        &EventLogOptions {
            read_only: true,
            ..rw()
        },
    );
    assert_eq!(
        r.append(r#"{"type":"done"}"#, 0).unwrap_err().code,
        ErrorCode::InvalidInput
    );
    assert_eq!(r.last_bookmark().unwrap().unwrap().seq, 1);
    emit(&w, r#"{"type":"done","step":2,"reason":"completed"}"#);
    // A half-written line from the writer is not read until it is complete.
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
    f.write_all(br#"{"seq":3,"timestamp":1,"channel":"progress","type":"do"#)
        .unwrap();
    assert_eq!(seqs(&r, Some(0), &EventFilter::default()), [1, 2]);
    f.write_all(b"ne\"}\n").unwrap();
    assert_eq!(seqs(&r, Some(1), &EventFilter::default()), [2, 3]);
    assert_eq!(r.last_bookmark().unwrap().unwrap().seq, 3);
}

#[test]
fn memory_mode_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("never.jsonl");
    let log = open(
        &p,
        &EventLogOptions {
            durability: Durability::Memory,
            ..rw()
        },
    );
    assert_eq!(emit(&log, r#"{"type":"done"}"#), 1);
    assert_eq!(seqs(&log, None, &EventFilter::default()), [1]);
    assert!(!p.exists());
}

/// Runs a subscription to its end: polls, answering reads with `fill_json`
/// (`limit` events each), and returns the delivered seqs.
fn drain(log: &FileEventLog, id: u32, limit: usize, between: &mut dyn FnMut(usize)) -> Vec<u64> {
    let mut got = vec![];
    for round in 0.. {
        let step: serde_json::Value =
            serde_json::from_str(&log.poll_json(id, 64).unwrap()).unwrap();
        let events = match step["kind"].as_str().unwrap() {
            "events" => step["events"].clone(),
            "read" => {
                let since = step["since"].as_u64();
                serde_json::from_str(&log.fill_json(id, since, limit).unwrap()).unwrap()
            }
            _ => break,
        };
        got.extend(
            events
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["seq"].as_u64().unwrap()),
        );
        between(round);
    }
    got
}

#[test]
fn subscriptions_read_the_file_in_resumed_steps_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("sub.jsonl");
    let w = open(&p, &rw());
    let mut last = 0;
    for i in 0..5000 {
        let ev = if i % 3 == 0 {
            r#"{"type":"token_usage","n":1}"#
        } else {
            r#"{"type":"text_chunk","delta":"x"}"#
        };
        last = w.append(ev, 1).unwrap().seq;
    }
    w.wait(last).unwrap();
    w.close().unwrap();
    drop(w);
    // The ring of a fresh open holds nothing: everything comes from the file,
    // in steps of 100 that continue where the previous one stopped, while a
    // writer keeps appending (the reader is read-only and follows it).
    let w = open(&p, &rw());
    let r = open(
        &p,
        &EventLogOptions {
            read_only: true,
            ..rw()
        },
    );
    let monitor = EventFilter {
        channels: Some(vec![Channel::Monitor]),
        ..Default::default()
    };
    let id = r
        .subscribe(
            monitor.clone(),
            forkpoint_core::eventlog::Since::After(1234),
        )
        .unwrap();
    let mut appended = 0;
    let got = drain(&r, id, 100, &mut |round| {
        if round < 30 {
            let b = w.append(r#"{"type":"token_usage","n":2}"#, 1).unwrap();
            w.wait(b.seq).unwrap();
            appended += 1;
        }
    });
    let expected: Vec<u64> = seqs(&r, Some(1234), &monitor);
    assert_eq!(got, expected);
    assert!(expected.len() > 1200 && got.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(
        *got.last().unwrap(),
        r.last_bookmark().unwrap().unwrap().seq
    );
    assert_eq!(appended, 30);
    r.unsubscribe(id).unwrap();
    assert_eq!(
        r.fill_json(id, Some(1), 10).unwrap_err().code,
        ErrorCode::Closed
    );
}
