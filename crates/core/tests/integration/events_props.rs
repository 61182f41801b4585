//! The hub's promise: any interleaving of appends, commits (in batches) and a
//! subscription from any bookmark, with storage reads answered late, delivers
//! exactly the committed events after the bookmark that pass the filter, once
//! each, in seq order.

use std::sync::Arc;

use forkpoint_core::eventlog::{EventLogCore, Hub, Poll, ReadOut, Since};
use forkpoint_core::events::{Channel, EventFilter, EventMeta, parse_event_line};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Append(u8),
    Commit(u8),
    Poll(u8),
    AnswerRead,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..4).prop_map(Op::Append),
        2 => (1u8..6).prop_map(Op::Commit),
        3 => (1u8..5).prop_map(Op::Poll),
        2 => Just(Op::AnswerRead),
    ]
}

const KINDS: [(&str, Option<Channel>); 4] = [
    ("tool:end", None),
    ("permission_required", None),
    ("agent_resumed", None),
    ("custom_x", Some(Channel::Monitor)),
];

/// Storage: the committed lines. A read returns the matching events after
/// `since` (up to `limit`) and the last seq it looked at.
fn read(
    storage: &[(EventMeta, Arc<str>)],
    since: Option<u64>,
    filter: &EventFilter,
    limit: usize,
) -> ReadOut {
    let mut out = ReadOut::new(since);
    for (m, l) in storage
        .iter()
        .filter(|(m, _)| since.is_none_or(|s| m.seq > s))
    {
        out.last_examined = Some(m.seq);
        if filter.matches(m) {
            out.push(m.seq, l);
            if out.len() >= limit {
                break;
            }
        }
    }
    out
}

fn run(pre: usize, since_pick: u8, filter_pick: u8, cap: usize, ops: Vec<Op>) {
    let mut core = EventLogCore::new(None, None, 64, 1 << 20);
    core.hub = Hub::new(None, None, cap, 1 << 20);
    let mut storage: Vec<(EventMeta, Arc<str>)> = vec![];
    let append = |core: &mut EventLogCore, k: u8| {
        let (kind, ch) = KINDS[k as usize % KINDS.len()];
        let json = match ch {
            Some(c) => format!(
                r#"{{"type":"{kind}","channel":"{}","n":{}}}"#,
                c.as_str(),
                k
            ),
            None => format!(r#"{{"type":"{kind}","n":{k}}}"#),
        };
        core.append(&json, 0).unwrap();
    };
    let commit = |core: &mut EventLogCore, storage: &mut Vec<(EventMeta, Arc<str>)>, n: usize| {
        if let Some(b) = core.take_batch(Some(n)) {
            storage.extend(b.items.iter().cloned());
            core.committed(b);
        }
    };
    for i in 0..pre {
        append(&mut core, i as u8);
    }
    commit(&mut core, &mut storage, usize::MAX);
    let since = match since_pick % 4 {
        0 => Since::Live,
        1 => Since::Start,
        _ => Since::After(since_pick as u64 % (pre as u64 + 1)),
    };
    let filter = match filter_pick % 3 {
        0 => EventFilter::default(),
        1 => EventFilter {
            channels: Some(vec![Channel::Monitor]),
            ..Default::default()
        },
        _ => EventFilter {
            kinds: Some(vec!["tool:end".into(), "custom_x".into()]),
            ..Default::default()
        },
    };
    let after = match since {
        Since::Live => core.hub.durable(),
        Since::Start => None,
        Since::After(s) => Some(s),
    };
    let id = core.hub.subscribe(filter.clone(), since);
    let mut delivered: Vec<u64> = vec![];
    let mut pending_read: Option<(Option<u64>, usize)> = None;
    let take = |lines: Vec<Arc<str>>, delivered: &mut Vec<u64>| {
        for l in lines {
            delivered.push(parse_event_line(&l, 64).unwrap().seq);
        }
    };
    let step = |op: &Op,
                core: &mut EventLogCore,
                storage: &mut Vec<_>,
                delivered: &mut Vec<u64>,
                pending: &mut Option<(Option<u64>, usize)>| match *op {
        Op::Append(k) => append(core, k),
        Op::Commit(n) => commit(core, storage, n as usize),
        Op::Poll(max) if pending.is_none() => match core.hub.poll(id, max as usize).unwrap() {
            Poll::Events(ls) => take(ls, delivered),
            Poll::Read { since, limit } => *pending = Some((since, limit)),
            Poll::Pending => {}
        },
        Op::Poll(_) => {}
        Op::AnswerRead => {
            if let Some((s, limit)) = pending.take() {
                // The read sees storage as it is now (later commits included).
                let json = core
                    .hub
                    .provide(id, read(storage, s, &filter, limit))
                    .unwrap();
                let events: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap();
                delivered.extend(events.iter().map(|e| e["seq"].as_u64().unwrap()));
            }
        }
    };
    for op in &ops {
        step(
            op,
            &mut core,
            &mut storage,
            &mut delivered,
            &mut pending_read,
        );
    }
    // Drain: commit everything, answer reads, poll until pending.
    commit(&mut core, &mut storage, usize::MAX);
    for _ in 0..10_000 {
        if pending_read.is_some() {
            step(
                &Op::AnswerRead,
                &mut core,
                &mut storage,
                &mut delivered,
                &mut pending_read,
            );
            continue;
        }
        match core.hub.poll(id, 3).unwrap() {
            Poll::Events(ls) => take(ls, &mut delivered),
            Poll::Read { since, limit } => pending_read = Some((since, limit)),
            Poll::Pending => break,
        }
    }
    let expected: Vec<u64> = storage
        .iter()
        .filter(|(m, _)| after.is_none_or(|a| m.seq > a) && filter.matches(m))
        .map(|(m, _)| m.seq)
        .collect();
    assert_eq!(delivered, expected, "since {since:?} filter {filter:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)))]
    #[test]
    fn subscription_delivers_exactly_once_in_order(
        pre in 0usize..30,
        since_pick in any::<u8>(),
        filter_pick in any::<u8>(),
        cap in 1usize..8,
        ops in proptest::collection::vec(op(), 0..120),
    ) {
        run(pre, since_pick, filter_pick, cap, ops);
    }
}

/// A line as the log writes it (or a variant of one): the envelope, extra
/// members (some naming an envelope member again, some escaped), and maybe a cut.
fn line() -> impl Strategy<Value = String> {
    let value = prop_oneof![
        any::<i32>().prop_map(|n| n.to_string()),
        "[a-z\"\\\\é\u{1}]{0,6}".prop_map(|s| serde_json::to_string(&s).unwrap()),
        Just("[1,{\"b\":null}]".to_string()),
        Just("1.5e3".to_string()),
        Just("7".to_string()),
    ];
    let key = prop_oneof![
        Just("\"delta\"".to_string()),
        Just("\"seq\"".to_string()),
        Just("\"type\"".to_string()),
        Just("\"s\\u0065q\"".to_string()),
        Just("\"channel\"".to_string()),
        Just("\"x\"".to_string()),
    ];
    (
        0u64..100_000,
        prop_oneof![
            Just("-0".to_string()),
            (-5i64..1_000_000).prop_map(|n| n.to_string()),
            Just("12.0".to_string())
        ],
        prop_oneof![
            Just("progress"),
            Just("control"),
            Just("monitor"),
            Just("other")
        ],
        prop_oneof![
            Just("\"tool:end\"".to_string()),
            Just("\"t\\u00e9\"".to_string()),
            Just("\"\"".to_string()),
            Just("3".to_string())
        ],
        proptest::collection::vec((key, value), 0..4),
        proptest::option::of(0usize..200),
    )
        .prop_map(|(seq, ts, ch, kind, rest, cut)| {
            let mut s = format!(r#"{{"seq":{seq},"timestamp":{ts},"channel":"{ch}","type":{kind}"#);
            for (k, v) in rest {
                s.push_str(&format!(",{k}:{v}"));
            }
            s.push('}');
            if let Some(c) = cut {
                let c = c.min(s.len());
                let c = (0..=c).rev().find(|i| s.is_char_boundary(*i)).unwrap_or(0);
                s.truncate(c);
            }
            s
        })
}

/// What `JSON.parse` would make of a line's envelope (serde_json keeps the
/// last of repeated members, as `JSON.parse` does).
fn oracle(line: &str) -> Option<(u64, i64, String, String)> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(512)))]
    #[test]
    fn event_lines_read_as_json_parse_would(l in line()) {
        let got = parse_event_line(&l, 64)
            .ok()
            .map(|m| (m.seq, m.timestamp, m.channel.as_str().to_string(), m.kind.to_string()));
        prop_assert_eq!(got, oracle(&l), "{}", l);
    }
}
