//! Random sessions (branches, compactions, leaf moves, labels, settings) checked
//! three ways: the span-based full load against a plain `serde_json` oracle of
//! pi's rules, and lazy loads (no hint, fresh hint, stale hint) against the full load.

use std::collections::HashMap;

use forkpoint_core::LazyOptions;
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::common::*;

/// A deterministic random session.
struct Gen {
    state: u64,
    lines: Vec<String>,
    parent: HashMap<String, Option<String>>,
    nodes: Vec<String>,
    leaf: Option<String>,
    clock: i64,
    n: u32,
}

impl Gen {
    fn new(seed: u64) -> Gen {
        let mut g = Gen {
            state: seed | 1,
            lines: vec![],
            parent: HashMap::new(),
            nodes: vec![],
            leaf: None,
            clock: 1_770_000_000_000,
            n: 0,
        };
        g.lines.push(json!({"type":"session","version":3,"id":format!("sess-{seed}"),"timestamp":"2026-02-01T00:00:00.000Z","cwd":"/w"}).to_string());
        g
    }
    fn r(&mut self, n: u64) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state % n.max(1)
    }
    fn pick(&mut self) -> String {
        let i = self.r(self.nodes.len() as u64) as usize;
        self.nodes[i].clone()
    }
    fn ts(&mut self) -> String {
        self.clock += 1000 + self.r(5000) as i64;
        forkpoint_core::time::ms_to_iso(self.clock)
    }
    fn path(&self, from: Option<&String>) -> Vec<String> {
        let mut p = vec![];
        let mut cur = from.cloned();
        while let Some(c) = cur {
            p.push(c.clone());
            cur = self.parent.get(&c).cloned().flatten();
        }
        p.reverse();
        p
    }
    fn push(&mut self, ty: &str, mut fields: Value) -> String {
        self.n += 1;
        let id = format!("{:08x}", self.n.wrapping_mul(2_654_435_761));
        let parent = self.leaf.clone();
        let obj = fields.as_object_mut().unwrap();
        let mut line = serde_json::Map::new();
        line.insert("type".into(), json!(ty));
        line.insert("id".into(), json!(id));
        line.insert("parentId".into(), json!(parent));
        line.insert("timestamp".into(), json!(self.ts()));
        for (k, v) in obj.iter() {
            line.insert(k.clone(), v.clone());
        }
        self.lines.push(Value::Object(line).to_string());
        self.parent.insert(id.clone(), parent);
        self.nodes.push(id.clone());
        self.leaf = Some(id.clone());
        id
    }
    fn text(&mut self) -> String {
        let len = if self.r(40) == 0 {
            20_000 + self.r(80_000)
        } else {
            5 + self.r(200)
        };
        let mut s = String::with_capacity(len as usize);
        while (s.len() as u64) < len {
            s.push_str(
                ["lorem ", "ipsum \"q\" ", "é ", "\\ ", "line\n", "tab\t"][self.r(6) as usize],
            );
        }
        s
    }
    fn step(&mut self) {
        let t = self.clock;
        match self.r(100) {
            0..=24 => {
                let text = self.text();
                self.push("message", json!({"message":{"role":"user","content":[{"type":"text","text":text}],"timestamp":t}}));
            }
            25..=49 => {
                let text = self.text();
                let (p, m) = [
                    ("anthropic", "claude-opus-4-5"),
                    ("openai", "gpt-5.1"),
                    ("google", "gemini-3"),
                ][self.r(3) as usize];
                self.push("message", json!({"message":{"role":"assistant","content":[{"type":"text","text":text}],"api":"x","provider":p,"model":m,"usage":{},"stopReason":"stop","timestamp":t}}));
            }
            50..=57 => {
                let text = self.text();
                self.push("message", json!({"message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":text}],"isError":false,"timestamp":t}}));
            }
            58..=61 => {
                let lvl = ["off", "low", "medium", "high"][self.r(4) as usize];
                self.push("thinking_level_change", json!({"thinkingLevel": lvl}));
            }
            62..=64 => {
                let m = format!("m{}", self.r(5));
                self.push("model_change", json!({"provider":"openai","modelId":m}));
            }
            65..=71 => {
                // Compaction: keep from a random entry of the path (or none found).
                let path = self.path(self.leaf.as_ref());
                let fk = match self.r(10) {
                    0 => json!("not-an-id"),
                    1 => Value::Null,
                    _ if !path.is_empty() => {
                        json!(path[path.len() - 1 - self.r(path.len().min(12) as u64) as usize])
                    }
                    _ => Value::Null,
                };
                let tb = self.r(100000);
                let mut f = json!({"summary": format!("summary {}", self.n), "tokensBefore": tb});
                if !fk.is_null() {
                    f["firstKeptEntryId"] = fk;
                }
                self.push("compaction", f);
            }
            72..=77 if !self.nodes.is_empty() => {
                // Branch: continue from an earlier entry (pi's in-memory branch),
                // sometimes with a branch summary.
                let at = self.pick();
                self.leaf = Some(at.clone());
                if self.r(2) == 0 {
                    let s = if self.r(4) == 0 {
                        String::new()
                    } else {
                        "left a branch".into()
                    };
                    self.push("branch_summary", json!({"fromId": at, "summary": s}));
                }
            }
            78..=81 if !self.nodes.is_empty() => {
                // A durable leaf move; its parentId is the target (as the writer writes it).
                let target = if self.r(15) == 0 {
                    None
                } else {
                    Some(self.pick())
                };
                self.n += 1;
                let id = format!("leaf{:04x}", self.n);
                let ts = self.ts();
                self.lines.push(json!({"type":"leaf","id":id,"parentId":target,"timestamp":ts,"targetId":target}).to_string());
                self.leaf = target;
            }
            82..=85 if !self.nodes.is_empty() => {
                let target = self.pick();
                self.push("label", json!({"targetId": target, "label": "mark"}));
            }
            86..=90 => {
                let text = self.text();
                self.push(
                    "custom_message",
                    json!({"customType":"note","content":text,"display":true}),
                );
            }
            91..=93 => {
                let ex = self.r(2) == 0;
                self.push("message", json!({"message":{"role":"bashExecution","command":"ls","output":"x","exitCode":0,"cancelled":false,"truncated":false,"timestamp":t,"excludeFromContext":ex}}));
            }
            94..=96 => {
                let k = self.r(9);
                self.push("custom", json!({"customType":"state","data":{"k":k}}));
            }
            _ => {
                self.push("session_info", json!({"name":"s"}));
            }
        }
    }
    fn bytes(&self) -> Vec<u8> {
        let mut s = self.lines.join("\n");
        s.push('\n');
        s.into_bytes()
    }
}

/// pi's buildSessionContext over parsed values, with FORMAT.md's leaf rules.
fn oracle(bytes: &[u8]) -> Value {
    let text = std::str::from_utf8(bytes).unwrap();
    let entries: Vec<Value> = text
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut by_id: HashMap<String, usize> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        by_id.insert(e["id"].as_str().unwrap().to_string(), i);
    }
    let resolve = |mut i: usize| -> Option<usize> {
        for _ in 0..=entries.len() {
            if entries[i]["type"] != "leaf" {
                return Some(i);
            }
            i = *by_id.get(entries[i]["targetId"].as_str()?)?;
        }
        None
    };
    let last_node = entries.iter().rposition(|e| e["type"] != "leaf");
    let last_ptr = entries.iter().rposition(|e| e["type"] == "leaf");
    let leaf = match (last_ptr, last_node) {
        (Some(p), n) if n.is_none_or(|n| p > n) => match entries[p]["targetId"].as_str() {
            None => None,
            Some(t) => by_id.get(t).and_then(|&j| resolve(j)).or(n),
        },
        (_, n) => n,
    };
    let mut path = vec![];
    let mut cur = leaf;
    while let Some(i) = cur {
        path.push(i);
        cur = entries[i]["parentId"]
            .as_str()
            .filter(|p| *p != entries[i]["id"])
            .and_then(|p| by_id.get(p))
            .and_then(|&j| resolve(j));
    }
    path.reverse();
    let ms = |e: &Value| forkpoint_core::time::iso_to_ms(e["timestamp"].as_str().unwrap()).unwrap();
    let mut thinking = json!("off");
    let mut model = Value::Null;
    let mut comp = None;
    for &i in &path {
        let e = &entries[i];
        match e["type"].as_str().unwrap() {
            "thinking_level_change" => thinking = e["thinkingLevel"].clone(),
            "model_change" => model = json!({"provider": e["provider"], "modelId": e["modelId"]}),
            "message" if e["message"]["role"] == "assistant" => {
                model =
                    json!({"provider": e["message"]["provider"], "modelId": e["message"]["model"]})
            }
            "compaction" => comp = Some(i),
            _ => {}
        }
    }
    let emit = |i: usize, out: &mut Vec<Value>| {
        let e = &entries[i];
        match e["type"].as_str().unwrap() {
            "message" => out.push(e["message"].clone()),
            "custom_message" => out.push(json!({"role":"custom","customType":e["customType"],"content":e["content"],"display":e["display"],"timestamp":ms(e)})),
            "branch_summary" if e["summary"].as_str().is_some_and(|s| !s.is_empty()) => {
                out.push(json!({"role":"branchSummary","summary":e["summary"],"fromId":e["fromId"],"timestamp":ms(e)}))
            }
            _ => {}
        }
    };
    let mut msgs = vec![];
    // History: the path's messages before the context's first entry (none with
    // no compaction: the context is the whole path).
    let mut history = vec![];
    match comp {
        Some(c) => {
            let ce = &entries[c];
            let mut m = json!({"role":"compactionSummary","summary":ce["summary"],"tokensBefore":ce["tokensBefore"],"timestamp":ms(ce)});
            if ce.get("tokensBefore").is_none() {
                m.as_object_mut().unwrap().remove("tokensBefore");
            }
            msgs.push(m);
            let ci = path.iter().position(|&p| p == c).unwrap();
            let start = ce["firstKeptEntryId"]
                .as_str()
                .and_then(|fk| path[..ci].iter().position(|&p| entries[p]["id"] == fk))
                .unwrap_or(ci);
            for &i in path[start..ci].iter().chain(&path[ci + 1..]) {
                emit(i, &mut msgs);
            }
            path[..start].iter().for_each(|&i| emit(i, &mut history));
        }
        None => path.iter().for_each(|&i| emit(i, &mut msgs)),
    }
    json!({"messages": msgs, "thinkingLevel": thinking, "model": model, "history": history})
}

/// Every message `loadMoreHistory` gives, `n` at a time until a page is empty,
/// oldest first.
fn all_history(l: &mut forkpoint_core::lazy::LazyLoader, b: &[u8], n: usize) -> Vec<Value> {
    let mut older: Vec<Value> = vec![];
    for _ in 0..1000 {
        l.request_more_history(n).unwrap();
        drive(l, b).unwrap();
        let page: Vec<Value> = serde_json::from_str(&l.take_history_json().unwrap()).unwrap();
        if page.is_empty() {
            break;
        }
        older.splice(0..0, page);
    }
    older
}

fn check(seed: u64, steps: usize) {
    let mut g = Gen::new(seed);
    for _ in 0..steps {
        g.step();
    }
    let b = g.bytes();
    let full = load(&b).unwrap();
    let full_ctx = full.context_json(None, false).unwrap();
    let ours: Value = serde_json::from_str(&full_ctx).unwrap();
    let mut want = oracle(&b);
    let want_history = want.as_object_mut().unwrap().remove("history").unwrap();
    assert_eq!(ours, want, "seed {seed}: full load vs oracle");

    // Lazy without a hint, then with the hint it wrote.
    let l = lazy(&b, LazyOptions::default(), None).unwrap();
    assert_eq!(
        l.context_json(false).unwrap(),
        full_ctx,
        "seed {seed}: lazy (scan)"
    );
    let hint = l.new_hint().map(|h| h.to_json());
    let l2 = lazy(&b, LazyOptions::default(), hint.clone()).unwrap();
    assert_eq!(
        l2.context_json(false).unwrap(),
        full_ctx,
        "seed {seed}: lazy (hint)"
    );
    if hint.is_some() {
        let md = l2.metadata(false).unwrap();
        assert_eq!(
            md.mode,
            "hint",
            "seed {seed}: {:?} hint {}",
            md.hint_rejected,
            hint.as_deref().unwrap_or("")
        );
    }
    // History behind the context, paged back to its start, from a first open
    // (which stops reading once satisfied and follows the path behind the
    // context by its skimmed keys) and from a hinted one: every message of the
    // path before the context, in order.
    for (how, h) in [("scan", None), ("hint", hint.clone())] {
        let mut lh = lazy(&b, LazyOptions::default(), h).unwrap();
        let older = all_history(&mut lh, &b, 5);
        assert_eq!(
            Value::Array(older),
            want_history,
            "seed {seed}: history ({how})"
        );
        assert_eq!(
            lh.context_json(false).unwrap(),
            full_ctx,
            "seed {seed}: context after history ({how})"
        );
    }
    // Without settings resolution the messages are still exact.
    let l3 = lazy(
        &b,
        LazyOptions {
            resolve_settings: false,
            use_hint: false,
            ..Default::default()
        },
        None,
    )
    .unwrap();
    let v3: Value = serde_json::from_str(&l3.context_json(false).unwrap()).unwrap();
    assert_eq!(
        v3["messages"], ours["messages"],
        "seed {seed}: lazy without settings"
    );

    // The file grows (more branches, leaf moves, compactions): the old hint is
    // validated and either still serves or is bypassed; the result stays exact.
    for _ in 0..steps / 3 {
        g.step();
    }
    let b2 = g.bytes();
    let full2 = load(&b2).unwrap().context_json(None, false).unwrap();
    let l4 = lazy(&b2, LazyOptions::default(), hint).unwrap();
    assert_eq!(
        l4.context_json(false).unwrap(),
        full2,
        "seed {seed}: lazy (stale hint)"
    );

    // maxMessages: the newest N, then history pages back to the start of the path.
    let n = 3;
    let mut l5 = lazy(
        &b2,
        LazyOptions {
            max_messages: Some(n),
            ..Default::default()
        },
        None,
    )
    .unwrap();
    let full_v: Value = serde_json::from_str(&full2).unwrap();
    let all = full_v["messages"].as_array().unwrap();
    let got: Value = serde_json::from_str(&l5.context_json(false).unwrap()).unwrap();
    let got = got["messages"].as_array().unwrap();
    let has_summary = all
        .first()
        .is_some_and(|m| m["role"] == "compactionSummary");
    let body = &all[usize::from(has_summary)..];
    let want_tail = &body[body.len().saturating_sub(n as usize)..];
    assert_eq!(
        &got[got.len() - want_tail.len()..],
        want_tail,
        "seed {seed}: newest messages"
    );
    let older = all_history(&mut l5, &b2, 4);
    assert!(
        older.len() >= body.len() - want_tail.len(),
        "seed {seed}: history covers the cut context"
    );
}

#[test]
fn random_sessions_small() {
    for seed in 1..=300u64 {
        check(seed, 40);
    }
}

#[test]
fn random_sessions_large() {
    for seed in 1000..1012u64 {
        check(seed, 600);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(64)))]
    #[test]
    fn prop_lazy_equals_full(seed in 1u64..u64::MAX, steps in 1usize..120) {
        check(seed, steps);
    }
}

/// Splitting the scan across threads gives the same result as one thread,
/// including errors (which line), skips and torn tails.
#[test]
fn parallel_scan_equals_sequential() {
    use forkpoint_core::{LoadOptions, Session};
    let meta = |r: &forkpoint_core::Result<Session>| match r {
        Ok(s) => {
            let m = s.metadata();
            format!(
                "{:?} {} {:?} {} {:?} {}",
                (
                    m.entry_count,
                    m.leaf_count,
                    m.branch_points,
                    m.line_count,
                    m.skipped_lines
                ),
                serde_json::to_string(&m.skipped).unwrap(),
                m.torn_tail,
                m.missing_final_newline,
                m.leaf_id,
                s.context_json(None, false).unwrap()
            )
        }
        Err(e) => format!("error {} {:?} {:?}", e.code, e.line, e.offset),
    };
    for seed in 1..=150u64 {
        let mut g = Gen::new(seed);
        for _ in 0..60 {
            g.step();
        }
        // Damage: a bad line somewhere, a blank line, maybe a torn tail.
        let mut lines = g.lines.clone();
        let k = 1 + g.r(lines.len() as u64 - 1) as usize;
        match seed % 4 {
            0 => lines.insert(k, "{\"type\":\"message\",".into()),
            1 => lines.insert(k, "   ".into()),
            2 => {}
            _ => lines.insert(k, "\u{0}\u{1}garbage".into()),
        }
        let mut b = lines.join("\n").into_bytes();
        b.push(b'\n');
        if seed % 3 == 0 {
            b.extend_from_slice(b"{\"type\":\"mess");
        }
        for lenient in [false, true] {
            let opts = LoadOptions {
                lenient,
                ..Default::default()
            };
            let one = Session::from_bytes_split(b.clone(), &opts, None, 1, 0);
            for threads in [2, 3, 5] {
                let many = Session::from_bytes_split(b.clone(), &opts, None, threads, 0);
                assert_eq!(
                    meta(&one),
                    meta(&many),
                    "seed {seed} lenient {lenient} threads {threads}"
                );
            }
            // Where no thread can be had, the caller scans every part itself.
            let alone = forkpoint_core::threads::on_one_thread(|| {
                Session::from_bytes_split(b.clone(), &opts, None, 3, 0)
            });
            assert_eq!(meta(&one), meta(&alone), "seed {seed} lenient {lenient}");
        }
    }
}

#[test]
fn regressions() {
    // A stale hint whose anchor is a compaction kept by another compaction (found by proptest).
    check(695_926_738_804_255_450, 85);
    // maxMessages stopped inside a compaction's kept region, whose first kept entry was
    // not loaded yet: history pages came back empty (found once the scan stopped
    // walking past the context for settings).
    check(3_291_403_921_742_751_310, 104);
}

/// A file of several MiB is scanned in batches of lines on one thread: a bad
/// line on either side of a batch boundary is reported at its own line and
/// offset, and a clean file loads whole, as with the threads' split.
#[test]
fn batched_scan_reports_the_line_across_batch_boundaries() {
    use forkpoint_core::{ErrorCode, LoadOptions, Session};
    let header = r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}"#;
    // 96 entries of about 64 KiB: 6 MiB, so several batch boundaries.
    let filler = "x\\n\\\"é".repeat(64 * 1024 / 8);
    let mut lines = vec![header.to_string()];
    let mut parent = "null".to_string();
    for i in 0..96 {
        lines.push(format!(
            r#"{{"type":"message","id":"e{i}","parentId":{parent},"timestamp":"2025-01-01T00:00:00.000Z","message":{{"role":"user","content":"{filler}","timestamp":1}}}}"#
        ));
        parent = format!("\"e{i}\"");
    }
    let text = |lines: &[String]| {
        let mut b = lines.join("\n").into_bytes();
        b.push(b'\n');
        b
    };
    let opts = LoadOptions::default();
    let s = Session::from_bytes_split(text(&lines), &opts, None, 1, usize::MAX).unwrap();
    assert_eq!(s.len(), 96);
    assert_eq!(s.leaf_id(), Some("e95"));
    assert_eq!(s.context(None).unwrap().messages.len(), 96);
    for bad in [15, 16, 17, 33, 60, 95] {
        let mut damaged = lines.clone();
        // Line `bad + 1` (1-based) gets a raw control character inside a string.
        damaged[bad] = damaged[bad].replacen("x\\n", "x\u{1}", 1);
        let offset: usize = damaged[..bad].iter().map(|l| l.len() + 1).sum();
        for threads in [1, 2] {
            let e = Session::from_bytes_split(text(&damaged), &opts, None, threads, 0).unwrap_err();
            assert_eq!(
                e.code,
                ErrorCode::CorruptedData,
                "line {bad} threads {threads}"
            );
            assert_eq!(e.line, Some(bad as u64 + 1), "line {bad} threads {threads}");
            assert_eq!(
                e.offset,
                Some(offset as u64),
                "line {bad} threads {threads}"
            );
        }
    }
}

/// A first open follows the path behind a compaction by skimmed keys once the
/// model is known from behind the context; the hint it writes must still name
/// the newest model before its anchor. A later path through the same anchor,
/// with a compaction of its own and no model after the anchor, takes its model
/// from that entry of the hint.
#[test]
fn the_hint_names_the_newest_model_behind_the_context() {
    let ts = "2026-02-01T00:00:00.000Z";
    // Entries behind the anchor are long, so that a hinted load reads past them.
    let msg = |id: &str, parent: Option<&str>, role: &str, model: &str| {
        let text = match id {
            "e2" | "e3" => format!("{id} {}", "x".repeat(80_000)),
            _ => id.to_string(),
        };
        let mut m =
            json!({"role": role, "content": [{"type": "text", "text": text}], "timestamp": 1});
        if role == "assistant" {
            m = json!({"role": "assistant", "content": [{"type": "text", "text": text}], "api": "x",
                "provider": "openai", "model": model, "usage": {}, "stopReason": "stop", "timestamp": 1});
        }
        json!({"type": "message", "id": id, "parentId": parent, "timestamp": ts, "message": m})
            .to_string()
    };
    let mut lines = vec![
        json!({"type": "session", "version": 3, "id": "s", "timestamp": ts, "cwd": "/"})
            .to_string(),
        json!({"type": "model_change", "id": "e1", "parentId": null, "timestamp": ts,
            "provider": "openai", "modelId": "old"})
        .to_string(),
        msg("e2", Some("e1"), "user", ""),
        msg("e3", Some("e2"), "assistant", "behind"),
        msg("e4", Some("e3"), "user", ""),
        json!({"type": "model_change", "id": "e5", "parentId": "e4", "timestamp": ts,
            "provider": "openai", "modelId": "in-context"})
        .to_string(),
        json!({"type": "compaction", "id": "e6", "parentId": "e5", "timestamp": ts,
            "summary": "s1", "firstKeptEntryId": "e4", "tokensBefore": 1})
        .to_string(),
        msg("e7", Some("e6"), "user", ""),
    ];
    let text = |lines: &[String]| format!("{}\n", lines.join("\n")).into_bytes();
    let b = text(&lines);
    let first = lazy(&b, LazyOptions::default(), None).unwrap();
    assert_eq!(
        first.context_json(false).unwrap(),
        load(&b).unwrap().context_json(None, false).unwrap()
    );
    let hint = first.new_hint().map(|h| h.to_json()).expect("a hint");
    // A new branch from the anchor, compacted again from it: no model after it.
    lines.push(msg("e8", Some("e4"), "user", ""));
    lines.push(
        json!({"type": "compaction", "id": "e9", "parentId": "e8", "timestamp": ts,
            "summary": "s2", "firstKeptEntryId": "e4", "tokensBefore": 1})
        .to_string(),
    );
    lines.push(msg("e10", Some("e9"), "user", ""));
    let b2 = text(&lines);
    let full = load(&b2).unwrap().context_json(None, false).unwrap();
    assert!(full.contains(r#""modelId":"behind""#), "{full}");
    let later = lazy(&b2, LazyOptions::default(), Some(hint)).unwrap();
    assert_eq!(later.metadata(false).unwrap().mode, "hint");
    assert_eq!(later.context_json(false).unwrap(), full);
}

/// A damaged message line on the path behind the context (helper review). A
/// lenient load drops it, so the path ends there and the thinking level set
/// before it is not in force: a first open must parse such lines, not skim them.
/// A strict first open skims them (as a hinted one never reads them) and finds
/// the damage when history reaches the line.
#[test]
fn a_damaged_line_behind_the_context_ends_a_lenient_path() {
    let ts = "2026-02-01T00:00:00.000Z";
    let user = |id: &str, parent: &str| {
        json!({"type": "message", "id": id, "parentId": parent, "timestamp": ts,
            "message": {"role": "user", "content": [{"type": "text", "text": id}], "timestamp": 1}})
        .to_string()
    };
    let damaged = [
        // Brackets that balance around text that is not JSON.
        format!(
            r#"{{"type":"message","id":"e2","parentId":"e1","timestamp":"{ts}","message":{{"role":"user","content":[1 2],"timestamp":1}}}}"#
        ),
        // Deeper than maxDepth (20 here).
        format!(
            r#"{{"type":"message","id":"e2","parentId":"e1","timestamp":"{ts}","message":{{"role":"user","content":{}1{},"timestamp":1}}}}"#,
            "[".repeat(30),
            "]".repeat(30)
        ),
    ];
    for bad in damaged {
        let lines = [
            json!({"type": "session", "version": 3, "id": "s", "timestamp": ts, "cwd": "/"})
                .to_string(),
            json!({"type": "thinking_level_change", "id": "e1", "parentId": null,
                "timestamp": ts, "thinkingLevel": "high"})
            .to_string(),
            bad,
            json!({"type": "message", "id": "e3", "parentId": "e2", "timestamp": ts,
                "message": {"role": "assistant", "content": [{"type": "text", "text": "e3"}],
                "api": "x", "provider": "openai", "model": "behind", "usage": {},
                "stopReason": "stop", "timestamp": 1}})
            .to_string(),
            user("e4", "e3"),
            json!({"type": "compaction", "id": "e5", "parentId": "e4", "timestamp": ts,
                "summary": "s", "firstKeptEntryId": "e4", "tokensBefore": 1})
            .to_string(),
            user("e6", "e5"),
        ];
        let b = format!("{}\n", lines.join("\n")).into_bytes();
        let lenient = LazyOptions {
            lenient: true,
            max_depth: 20,
            ..Default::default()
        };
        let full = forkpoint_core::Session::from_bytes(
            b.clone(),
            &forkpoint_core::LoadOptions {
                lenient: true,
                max_depth: 20,
                ..Default::default()
            },
            None,
        )
        .unwrap()
        .context_json(None, false)
        .unwrap();
        assert!(full.contains(r#""thinkingLevel":"off""#), "{full}");
        let mut first = lazy(&b, lenient.clone(), None).unwrap();
        assert_eq!(first.context_json(false).unwrap(), full);
        let hint = first.new_hint().map(|h| h.to_json());
        let hinted = lazy(&b, lenient.clone(), hint).unwrap();
        assert_eq!(hinted.context_json(false).unwrap(), full);
        first.request_more_history(10).unwrap();
        drive(&mut first, &b).unwrap();
        let page: Value = serde_json::from_str(&first.take_history_json().unwrap()).unwrap();
        assert_eq!(page.as_array().map(Vec::len), Some(1), "{page}");

        // Strict: the first open skims the line; history finds it damaged.
        let strict = LazyOptions {
            max_depth: 20,
            ..Default::default()
        };
        let mut s = lazy(&b, strict, None).unwrap();
        assert!(
            s.context_json(false)
                .unwrap()
                .contains(r#""thinkingLevel":"high""#)
        );
        s.request_more_history(10).unwrap();
        let err = drive(&mut s, &b).unwrap_err();
        assert!(
            matches!(
                err.code,
                forkpoint_core::ErrorCode::CorruptedData | forkpoint_core::ErrorCode::LimitExceeded
            ),
            "{err:?}"
        );
    }
}
