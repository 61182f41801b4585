//! Defects found by the adversarial trial of 0.1.0 (issue "Hardening"), one test
//! or more per defect, each written to fail on 0.1.0.

use forkpoint_core::lazy::{LazyLoader, Step};
use forkpoint_core::{ErrorCode, LazyOptions, LoadOptions, Result};
use serde_json::{Value, json};

use crate::common::*;

/// Drives a lazy load, failing the test instead of spinning if it does not end.
fn lazy_bounded(b: &[u8], opts: LazyOptions, hint: Option<String>) -> Result<LazyLoader> {
    let mut l = LazyLoader::new(b.len() as u64, opts, None, hint);
    for _ in 0..10_000 {
        match l.next_step()? {
            Step::Done => return Ok(l),
            Step::Read { offset, len } => {
                let (s, e) = (offset as usize, (offset + len) as usize);
                l.provide(b[s..e].to_vec())?;
            }
        }
    }
    panic!("the lazy load did not end in 10,000 reads");
}

struct Builder {
    lines: Vec<String>,
    n: u32,
    last: Option<String>,
}

impl Builder {
    fn new() -> Builder {
        Builder {
            lines: vec![json!({"type":"session","version":3,"id":"hard-1","timestamp":"2026-02-01T00:00:00.000Z","cwd":"/w"}).to_string()],
            n: 0,
            last: None,
        }
    }
    fn entry(&mut self, ty: &str, fields: Value) -> String {
        self.n += 1;
        let id = format!("e{:04}", self.n);
        let mut o = json!({"type": ty, "id": id, "parentId": self.last, "timestamp": "2026-02-01T00:00:01.000Z"});
        for (k, v) in fields.as_object().unwrap() {
            o[k] = v.clone();
        }
        self.lines.push(o.to_string());
        self.last = Some(id.clone());
        id
    }
    fn user(&mut self, text: &str) -> String {
        self.entry(
            "message",
            json!({"message":{"role":"user","content":text,"timestamp":1}}),
        )
    }
    fn assistant(&mut self, text: &str) -> String {
        self.entry("message", json!({"message":{"role":"assistant","content":[{"type":"text","text":text}],"provider":"p","model":"m","api":"a","usage":{},"stopReason":"stop","timestamp":2}}))
    }
    fn tool_result(&mut self, text: &str) -> String {
        self.entry("message", json!({"message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":text}],"isError":false,"timestamp":3}}))
    }
    fn bytes(&self) -> Vec<u8> {
        let mut s = self.lines.join("\n");
        s.push('\n');
        s.into_bytes()
    }
}

/// Offset of the line of entry `id`.
fn offset_of_id(bytes: &[u8], id: &str) -> u64 {
    let needle = format!("\"id\":\"{id}\"");
    let mut off = 0u64;
    for line in bytes.split_inclusive(|&c| c == b'\n') {
        if String::from_utf8_lossy(line).contains(&needle) {
            return off;
        }
        off += line.len() as u64;
    }
    panic!("no entry {id}");
}

fn ctx_full(b: &[u8]) -> Value {
    let s = load(b).expect("full load");
    serde_json::from_str(&s.context_json(None, false).unwrap()).unwrap()
}

fn ctx_lazy(l: &LazyLoader) -> Value {
    serde_json::from_str(&l.context_json(false).unwrap()).unwrap()
}

fn no_hint() -> LazyOptions {
    LazyOptions {
        use_hint: false,
        ..Default::default()
    }
}

/// Item 1: the reverse scan met a line longer than its largest chunk (16 MiB) and
/// never settled. It must end, with the full load's context, whatever a line's length.
#[test]
fn reverse_scan_crosses_lines_longer_than_its_chunks() {
    let mut b = Builder::new();
    b.user("run it");
    b.assistant("running");
    b.tool_result(&"x".repeat(17 << 20));
    b.assistant("done");
    let bytes = b.bytes();
    let l = lazy_bounded(&bytes, no_hint(), None).expect("lazy load");
    assert_eq!(ctx_lazy(&l), ctx_full(&bytes));
    // The same file with its long line last (no line after it).
    let mut b = Builder::new();
    b.user("run it");
    b.tool_result(&"y".repeat(17 << 20));
    let bytes = b.bytes();
    let l = lazy_bounded(&bytes, no_hint(), None).expect("lazy load, long last line");
    assert_eq!(ctx_lazy(&l), ctx_full(&bytes));
}

/// Item 1, at the limit: a line just under `maxLineBytes` loads lazily as it does
/// whole, one just over is `LIMIT_EXCEEDED` both ways.
#[test]
fn reverse_scan_honours_max_line_bytes_exactly() {
    let limit: u64 = 1 << 20;
    for (extra, ok) in [(-64i64, true), (64, false)] {
        let mut b = Builder::new();
        b.user("a");
        let id = b.tool_result("");
        // Grow the tool result's line to limit + extra bytes.
        let line = b.lines.pop().unwrap();
        let pad = (limit as i64 + extra - line.len() as i64) as usize;
        b.lines.push(line.replace(
            "\"text\":\"\"",
            &format!("\"text\":\"{}\"", "z".repeat(pad)),
        ));
        assert_eq!(
            b.lines.last().unwrap().len() as i64,
            limit as i64 + extra,
            "{id}"
        );
        b.assistant("after");
        let bytes = b.bytes();
        let opts = LazyOptions {
            max_line_bytes: limit,
            ..no_hint()
        };
        let lazy = lazy_bounded(&bytes, opts, None);
        let full = forkpoint_core::Session::from_bytes(
            bytes.clone(),
            &LoadOptions {
                max_line_bytes: limit,
                ..Default::default()
            },
            None,
        );
        if ok {
            let l = lazy.expect("under the limit");
            assert_eq!(ctx_lazy(&l), ctx_full(&bytes));
            assert!(full.is_ok());
        } else {
            assert_eq!(lazy.err().map(|e| e.code), Some(ErrorCode::LimitExceeded));
            assert_eq!(full.err().map(|e| e.code), Some(ErrorCode::LimitExceeded));
        }
    }
}

/// A session with a compaction whose kept part holds no settings: the context's
/// thinking level and model come from before the hint's anchor.
fn compacted_session() -> Builder {
    let mut b = Builder::new();
    b.entry(
        "model_change",
        json!({"provider":"anthropic","modelId":"claude-real"}),
    );
    b.entry("thinking_level_change", json!({"thinkingLevel":"low"}));
    b.user("old");
    let kept = b.user("kept");
    b.entry(
        "compaction",
        json!({"summary":"s","firstKeptEntryId":kept,"tokensBefore":10}),
    );
    for i in 0..12 {
        b.user(&format!("u{i}"));
    }
    b
}

/// Item 6: the hint's thinking level and model were reported as the hint said.
/// They are read from the entries the hint points to; a hint whose pointers do not
/// name such entries is refused, and the context is the file's.
#[test]
fn the_hint_cannot_change_the_settings() {
    let bytes = compacted_session().bytes();
    let full = ctx_full(&bytes);
    assert_eq!(full["thinkingLevel"], "low");
    let first = lazy_bounded(&bytes, LazyOptions::default(), None).unwrap();
    let hint: Value = serde_json::to_value(first.new_hint().expect("a hint")).unwrap();
    assert!(hint.get("thinkingLevel").is_none() && hint.get("model").is_none());
    let served = lazy_bounded(&bytes, LazyOptions::default(), Some(hint.to_string())).unwrap();
    assert_eq!(served.metadata(false).unwrap().mode, "hint");
    assert_eq!(ctx_lazy(&served), full);

    // 0.1.0's hint held values; an attacker's (or a stale) one is not believed.
    let mut v1 = hint.clone();
    v1["version"] = json!(1);
    v1["thinkingLevel"] = json!("xhigh");
    v1["model"] = json!({"provider":"evil","modelId":"attacker-model"});
    let l = lazy_bounded(&bytes, LazyOptions::default(), Some(v1.to_string())).unwrap();
    assert_eq!(ctx_lazy(&l), full);
    assert_eq!(l.metadata(false).unwrap().mode, "scan");

    // Pointers moved to other entries: another id, or an entry of another kind.
    let old_user_offset = offset_of_id(&bytes, "e0003");
    for (field, to) in [
        (
            "thinkingEntry",
            json!({"id":"e0003","offset":old_user_offset}),
        ),
        ("modelEntry", json!({"id":"e0003","offset":old_user_offset})),
        (
            "thinkingEntry",
            json!({"id":"zzzz","offset":hint["thinkingEntry"]["offset"]}),
        ),
        (
            "modelEntry",
            json!({"id":"e0002","offset":hint["thinkingEntry"]["offset"]}),
        ),
    ] {
        let mut h = hint.clone();
        h[field] = to.clone();
        // Keep the ranges over the pointed line so the check is on content, not ranges.
        let l = lazy_bounded(&bytes, LazyOptions::default(), Some(h.to_string())).unwrap();
        assert_eq!(ctx_lazy(&l), full, "{field} → {to}");
        assert_ne!(l.metadata(false).unwrap().mode, "hint", "{field} → {to}");
    }
}

/// Item 6: a hinted range that ends inside a line was used, and its cut last line
/// taken for a torn tail (one message missing). Such a hint is refused.
#[test]
fn a_hinted_range_that_ends_inside_a_line_is_refused() {
    let mut b = compacted_session();
    b.entry("thinking_level_change", json!({"thinkingLevel":"high"}));
    b.entry("model_change", json!({"provider":"p","modelId":"m2"}));
    let bytes = b.bytes();
    let full = ctx_full(&bytes);
    let first = lazy_bounded(&bytes, LazyOptions::default(), None).unwrap();
    let mut hint: Value = serde_json::to_value(first.new_hint().unwrap()).unwrap();
    let ranges = hint["ranges"].as_array().unwrap().clone();
    let n = ranges.len();
    let last_start = ranges[n - 1][0].as_u64().unwrap();
    // Split the last range inside the line that starts 3 lines before the end.
    let ends: Vec<u64> = bytes
        .iter()
        .enumerate()
        .filter(|(_, c)| **c == b'\n')
        .map(|(i, _)| i as u64 + 1)
        .collect();
    let cut = ends[ends.len() - 4] + 20;
    assert!(cut > last_start);
    let mut new_ranges: Vec<Value> = ranges[..n - 1].to_vec();
    new_ranges.push(json!([last_start, cut]));
    new_ranges.push(json!([cut + 1, bytes.len()]));
    hint["ranges"] = json!(new_ranges);
    let l = lazy_bounded(&bytes, LazyOptions::default(), Some(hint.to_string())).unwrap();
    assert_eq!(ctx_lazy(&l), full);
    assert!(l.metadata(false).unwrap().torn_tail.is_none());
}

/// Item 7: a final line that a newline ends is whole: if it does not parse it is
/// corrupt (`CORRUPTED_DATA`, or a counted skip when lenient) — never cut as torn.
/// Only a final line with no newline after it can be torn. Full, lazy and
/// incremental loads agree.
#[test]
fn a_complete_corrupt_last_line_is_not_torn() {
    let mut b = Builder::new();
    b.user("a");
    b.assistant("b");
    let good = b.bytes();
    let bad_lines: [&[u8]; 3] = [
        b"{\"type\":\"message\",\"id\":\"x1\",\"parentId\":\"e0002\",\"message\":{\"role\":\"user\",\"content\":\"raw \x01 control\"}}",
        b"{\"type\":\"message\",\"id\":\"x1\",\"parentId\":\"e0002\",\"message\":{\"role\":\"user\",\"content\":\"bad \xff utf8\"}}",
        b"{\"type\":\"message\",\"id\":\"x1\",",
    ];
    for bad in bad_lines {
        for tail in [&b"\n"[..], b"\n\n", b"\n  \n"] {
            let mut bytes = good.clone();
            bytes.extend_from_slice(bad);
            bytes.extend_from_slice(tail);
            let e = load(&bytes).expect_err("corrupt, not torn");
            assert_eq!(e.code, ErrorCode::CorruptedData, "{e:?}");
            assert_eq!(e.line, Some(4));
            let l = load_lenient(&bytes).unwrap();
            let md = l.metadata();
            assert!(md.torn_tail.is_none());
            assert_eq!(md.skipped_lines, 1);
            let lz = lazy_bounded(&bytes, no_hint(), None).expect_err("lazy: corrupt");
            assert_eq!(lz.code, ErrorCode::CorruptedData);
        }
        // The same line without its newline is a torn write, cut and reported.
        let mut bytes = good.clone();
        bytes.extend_from_slice(bad);
        let s = load(&bytes).expect("torn tail");
        let t = s.metadata().torn_tail.expect("reported");
        assert_eq!(t.offset, good.len() as u64);
        let lz = lazy_bounded(&bytes, no_hint(), None).unwrap();
        assert_eq!(
            lz.metadata(false).unwrap().torn_tail.map(|t| t.offset),
            Some(good.len() as u64)
        );
        assert_eq!(ctx_lazy(&lz), ctx_full(&good));
    }
}

/// Item 11: an unfinished very deep last line was `LIMIT_EXCEEDED` on the full load
/// and a torn tail on the lazy load. Unfinished (brackets open, no newline): torn
/// both ways. Whole and too deep: `LIMIT_EXCEEDED` both ways.
#[test]
fn deep_last_lines_agree_between_full_and_lazy() {
    let mut b = Builder::new();
    b.user("a");
    let good = b.bytes();
    let deep = |close: bool| {
        let mut l = String::from(r#"{"type":"custom","id":"d1","parentId":"e0001","data":"#);
        l.push_str(&"[".repeat(5000));
        if close {
            l.push_str(&"]".repeat(5000));
            l.push('}');
        }
        l
    };
    // Unfinished.
    let mut bytes = good.clone();
    bytes.extend_from_slice(deep(false).as_bytes());
    let full = load(&bytes).expect("full: torn");
    assert_eq!(
        full.metadata().torn_tail.map(|t| t.offset),
        Some(good.len() as u64)
    );
    let lz = lazy_bounded(&bytes, no_hint(), None).expect("lazy: torn");
    assert_eq!(
        lz.metadata(false).unwrap().torn_tail.map(|t| t.offset),
        Some(good.len() as u64)
    );
    // Whole, with and without a newline.
    for nl in ["", "\n"] {
        let mut bytes = good.clone();
        bytes.extend_from_slice(deep(true).as_bytes());
        bytes.extend_from_slice(nl.as_bytes());
        assert_eq!(
            load(&bytes).err().map(|e| e.code),
            Some(ErrorCode::LimitExceeded),
            "full {nl:?}"
        );
        assert_eq!(
            lazy_bounded(&bytes, no_hint(), None).err().map(|e| e.code),
            Some(ErrorCode::LimitExceeded),
            "lazy {nl:?}"
        );
    }
}

/// Item 5: ids `"\ud800"` and `"\udfff"` both decoded to U+FFFD and collided: the
/// context had 1 message where pi's has 2. Ids compare as JavaScript compares them.
#[test]
fn ids_with_lone_surrogates_stay_distinct() {
    let lines = [
        r#"{"type":"session","version":3,"id":"s","timestamp":"2026-02-01T00:00:00.000Z","cwd":"/w"}"#,
        r#"{"type":"message","id":"\ud800","parentId":null,"timestamp":"2026-02-01T00:00:01.000Z","message":{"role":"user","content":"one","timestamp":1}}"#,
        r#"{"type":"message","id":"\udfff","parentId":"\ud800","timestamp":"2026-02-01T00:00:02.000Z","message":{"role":"user","content":"two","timestamp":2}}"#,
        r#"{"type":"message","id":"\ufffd","parentId":"\uDFFF","timestamp":"2026-02-01T00:00:03.000Z","message":{"role":"user","content":"three","timestamp":3}}"#,
    ];
    let bytes = (lines.join("\n") + "\n").into_bytes();
    let full = ctx_full(&bytes);
    let texts: Vec<&str> = full["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["one", "two", "three"]);
    let l = lazy_bounded(&bytes, no_hint(), None).unwrap();
    assert_eq!(ctx_lazy(&l), full);
    // The ids handed out find their entries again.
    let s = load(&bytes).unwrap();
    let leaf = s.metadata().leaf_id.unwrap();
    let path = s.path_ids(&leaf).unwrap();
    assert_eq!(path.len(), 3);
    assert_ne!(path[0], path[1]);
    let ctx: Value = serde_json::from_str(&s.context_json(Some(&path[1]), false).unwrap()).unwrap();
    assert_eq!(ctx["messages"].as_array().unwrap().len(), 2);
    // A writer continues the file with the escapes, as JavaScript would write them.
    let mut w = forkpoint_core::writer::WriterCore::from_session(
        s,
        bytes.len() as u64,
        1,
        &LoadOptions::default(),
    )
    .unwrap();
    w.append(
        r#"{"type":"message","parentId":"\ud800","message":{"role":"user","content":"four"}}"#,
        5,
    )
    .unwrap();
    w.move_leaf(Some(&path[0]), 6).unwrap();
    // The handle a caller was given, passed back inside an appended entry's JSON.
    let handle = serde_json::to_string(&path[1]).unwrap();
    w.append(
        &format!(r#"{{"type":"message","parentId":{handle},"message":{{"role":"user","content":"five"}}}}"#),
        7,
    )
    .unwrap();
    let batch = w.take_batch(None).unwrap();
    let text = String::from_utf8_lossy(&batch.bytes).into_owned();
    assert!(text.contains(r#""parentId":"\ud800""#), "{text}");
    assert!(text.contains(r#""targetId":"\ud800""#), "{text}");
    assert!(text.contains(r#""parentId":"\udfff""#), "{text}");
}

/// The reverse scan passes over lines that are plainly not the path's next entry
/// without parsing them; one that a later-read line names as its parent (a parent
/// written after its child) is read again and parsed.
#[test]
fn passed_over_parents_are_found_again() {
    let msg = |id: &str, parent: Option<&str>, text: &str| {
        json!({"type":"message","id":id,"parentId":parent,"timestamp":"2026-02-01T00:00:01.000Z","message":{"role":"user","content":text,"timestamp":1}}).to_string()
    };
    let lines = [
        json!({"type":"session","version":3,"id":"fw","timestamp":"2026-02-01T00:00:00.000Z","cwd":"/w"}).to_string(),
        msg("A", None, "a"),
        msg("C", Some("B"), "c"),
        msg("X", Some("A"), "off the path"),
        msg("B", Some("A"), "b"),
        msg("Y", Some("A"), "off the path too"),
        msg("D", Some("C"), "d"),
    ];
    let bytes = (lines.join("\n") + "\n").into_bytes();
    let full = ctx_full(&bytes);
    assert_eq!(full["messages"].as_array().unwrap().len(), 4);
    let l = lazy_bounded(&bytes, no_hint(), None).unwrap();
    assert_eq!(ctx_lazy(&l), full);
    // A passed-over parent that turns out corrupt is an error, not a gap.
    let mut bad = lines.clone();
    bad[4] = bad[4].replace("\"b\"", "\"b\u{1}\"");
    let bytes = (bad.join("\n") + "\n").into_bytes();
    assert_eq!(
        lazy_bounded(&bytes, no_hint(), None).err().map(|e| e.code),
        Some(ErrorCode::CorruptedData)
    );
}

/// Behind a complete context the scan only looks for the thinking level and model:
/// off-path lines there are skimmed, and the path's entries are parsed but their
/// text is not kept. The context, the history pages (which read those entries
/// again) and the hint it writes stay exact.
#[test]
fn skimmed_history_and_hint_stay_exact() {
    let mut b = Builder::new();
    b.entry("thinking_level_change", json!({"thinkingLevel":"medium"}));
    b.entry("model_change", json!({"provider":"a","modelId":"old"}));
    for i in 0..40 {
        b.user(&format!("q{i}"));
        b.assistant(&format!("a{i}"));
        b.entry(
            "branch_summary",
            json!({"fromId":"x","summary": format!("s{i}")}),
        );
        b.entry(
            "custom",
            json!({"customType":"t","data":{"id":"nested","type":"thinking_level_change"}}),
        );
    }
    let kept = b.user("kept");
    b.assistant("answer");
    b.entry(
        "compaction",
        json!({"summary":"sum","firstKeptEntryId":kept,"tokensBefore":1}),
    );
    b.user("after");
    let bytes = b.bytes();
    let full = ctx_full(&bytes);
    let mut l = lazy_bounded(&bytes, LazyOptions::default(), None).unwrap();
    assert_eq!(ctx_lazy(&l), full);
    assert_eq!(full["thinkingLevel"], "medium");
    // History pages back to the root, as a full load's path has them.
    let s = load(&bytes).unwrap();
    let leaf = s.metadata().leaf_id.unwrap();
    let path: Vec<Value> = serde_json::from_str(&s.path_json(&leaf).unwrap()).unwrap();
    let producing = path
        .iter()
        .take_while(|e| e["id"] != json!(kept))
        .filter(|e| e["type"] == "message" || e["type"] == "branch_summary")
        .count();
    let mut older: Vec<Value> = vec![];
    for _ in 0..100 {
        l.request_more_history(7).unwrap();
        drive(&mut l, &bytes).unwrap();
        let page: Vec<Value> = serde_json::from_str(&l.take_history_json().unwrap()).unwrap();
        if page.is_empty() {
            break;
        }
        older.splice(0..0, page);
    }
    assert_eq!(older.len(), producing);
    assert_eq!(older[0]["content"], "q0");
    // The hint it wrote serves the next open exactly; it knows the entries that
    // set the thinking level and the model before the anchor.
    let first = lazy_bounded(&bytes, LazyOptions::default(), None).unwrap();
    let h = first.new_hint().unwrap();
    assert!(matches!(h.model_entry, Some(Some(_))));
    assert!(matches!(h.thinking_entry, Some(Some(_))));
    let l2 = lazy_bounded(&bytes, LazyOptions::default(), Some(h.to_json())).unwrap();
    assert_eq!(ctx_lazy(&l2), full);
}

const H: &str =
    r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-02-01T00:00:00.000Z","cwd":"/w"}"#;

fn file(lines: &[&str]) -> Vec<u8> {
    let mut s = String::from(H);
    for l in lines {
        s.push('\n');
        s.push_str(l);
    }
    s.push('\n');
    s.into_bytes()
}

fn lenient() -> LazyOptions {
    LazyOptions {
        lenient: true,
        use_hint: false,
        ..Default::default()
    }
}

/// Found by review: a bad line on the leaf's path behind the context was taken
/// from the skim without a parse — strict lazy loads succeeded where full loads
/// fail, lenient ones gave another thinking level. Path lines are always parsed.
#[test]
fn bad_lines_on_the_path_behind_the_context_are_found() {
    for bad in [
        r#"{"type":"custom","id":"b","parentId":"a","customType":"x","data":[tru]}"#,
        r#"{"type":"label","id":"b","parentId":"a"}"#,
    ] {
        let bytes = file(&[
            r#"{"type":"thinking_level_change","id":"a","parentId":null,"thinkingLevel":"high"}"#,
            bad,
            r#"{"type":"compaction","id":"c","parentId":"b","summary":"s","tokensBefore":1}"#,
            r#"{"type":"message","id":"d","parentId":"c","message":{"role":"user","content":"hi"}}"#,
        ]);
        let full = load(&bytes).map(|_| ()).unwrap_err();
        let lazy = lazy_bounded(&bytes, LazyOptions::default(), None)
            .map(|_| ())
            .unwrap_err();
        assert_eq!(
            (full.code, lazy.code),
            (ErrorCode::CorruptedData, ErrorCode::CorruptedData)
        );
        let full = load_lenient(&bytes).unwrap();
        let full: Value = serde_json::from_str(&full.context_json(None, false).unwrap()).unwrap();
        let l = lazy_bounded(&bytes, lenient(), None).unwrap();
        assert_eq!(ctx_lazy(&l), full, "{bad}");
    }
}

/// Found by review: a passed-over line read again that turns out bad (lenient) hid
/// an earlier, valid entry with the same id.
#[test]
fn a_bad_passed_over_duplicate_does_not_hide_the_good_one() {
    let bytes = file(&[
        r#"{"type":"message","id":"p","parentId":null,"message":{"role":"user","content":"good parent"}}"#,
        r#"{"type":"message","id":"c","parentId":"p","message":{"role":"user","content":"child"}}"#,
        r#"{"type":"message","id":"p","parentId":null,"message":{"role":"user","content":[tru]}}"#,
        r#"{"type":"message","id":"d","parentId":"c","message":{"role":"user","content":"leaf"}}"#,
    ]);
    let full: Value = serde_json::from_str(
        &load_lenient(&bytes)
            .unwrap()
            .context_json(None, false)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(full["messages"].as_array().unwrap().len(), 3);
    let l = lazy_bounded(&bytes, lenient(), None).unwrap();
    assert_eq!(ctx_lazy(&l), full);
}

/// Found by review: the incremental loader dropped a whole bad last line when blank
/// space (with no newline) followed it; and a lenient full load cut a whole, too
/// deep last line without newline as torn where the lazy load skipped it.
#[test]
fn incremental_and_lenient_loads_settle_last_lines_like_the_rest() {
    let good =
        r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"hi"}}"#;
    let mut bytes = file(&[good, r#"{"type":"message",bad"#]);
    bytes.extend_from_slice(b"   ");
    assert_eq!(
        load(&bytes).map(|_| ()).unwrap_err().code,
        ErrorCode::CorruptedData
    );
    let mut inc = forkpoint_core::incremental::Incremental::new(LoadOptions::default(), None, 100);
    let mut batch = forkpoint_core::incremental::Batch::default();
    let r = inc.feed(&bytes, true, bytes.len() as u64, &mut batch);
    assert_eq!(r.map(|_| ()).unwrap_err().code, ErrorCode::CorruptedData);

    let mut deep = String::from(r#"{"type":"custom","id":"d","parentId":"a","data":"#);
    deep.push_str(&"[".repeat(600));
    deep.push_str(&"]".repeat(600));
    deep.push('}');
    let mut bytes = file(&[good]);
    bytes.extend_from_slice(deep.as_bytes());
    let opts = LoadOptions {
        lenient: true,
        ..Default::default()
    };
    let full = forkpoint_core::Session::from_bytes(bytes.clone(), &opts, None).unwrap();
    let md = full.metadata();
    assert!(md.torn_tail.is_none());
    assert_eq!(md.skipped_lines, 1);
    let l = lazy_bounded(&bytes, lenient(), None).unwrap();
    assert!(l.metadata(false).unwrap().torn_tail.is_none());
}

/// Found by review: a `leaf` pointer whose target is another pointer. The full
/// load follows it (no target: the last node); the lazy load now does the same.
#[test]
fn pointers_to_pointers_resolve_as_in_the_full_load() {
    let m =
        r#"{"type":"message","id":"m","parentId":null,"message":{"role":"user","content":"hi"}}"#;
    let n =
        r#"{"type":"message","id":"n","parentId":"m","message":{"role":"user","content":"there"}}"#;
    for lines in [
        vec![
            m,
            r#"{"type":"leaf","id":"p","parentId":null,"targetId":null}"#,
            r#"{"type":"leaf","id":"q","parentId":"p","targetId":"p"}"#,
        ],
        vec![
            m,
            n,
            r#"{"type":"leaf","id":"p","parentId":null,"targetId":"m"}"#,
            r#"{"type":"leaf","id":"q","parentId":"p","targetId":"p"}"#,
        ],
        vec![
            m,
            r#"{"type":"leaf","id":"p","parentId":null,"targetId":"n"}"#,
            n,
            r#"{"type":"leaf","id":"q","parentId":"p","targetId":"p"}"#,
        ],
        vec![
            m,
            n,
            r#"{"type":"leaf","id":"n","parentId":null,"targetId":"m"}"#,
            r#"{"type":"leaf","id":"q","parentId":"p","targetId":"n"}"#,
        ],
    ] {
        let bytes = file(&lines);
        let full = ctx_full(&bytes);
        for hint in [false, true] {
            let opts = LazyOptions {
                use_hint: hint,
                ..Default::default()
            };
            let l = lazy_bounded(&bytes, opts, None).unwrap();
            assert_eq!(ctx_lazy(&l), full, "{lines:?}");
        }
    }
}

/// `maxFileBytes` bounds every read of a whole file handed in: a full load
/// of bytes, a lazy resume that must read a gzip or version 1 file whole, and
/// an import; a file of exactly the limit loads. (The file store checks the size before
/// it reads: crates/fs/src/io.rs.)
#[test]
fn max_file_bytes_bounds_every_whole_read() {
    use std::io::Write;
    let plain = file(&[]);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&plain).unwrap();
    let gz = gz.finish().unwrap();
    let v1 = b"{\"type\":\"session\",\"id\":\"s1\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/\"}\n".to_vec();
    for bytes in [&plain, &gz, &v1] {
        let n = bytes.len() as u64;
        let limit = |max_file_bytes| LoadOptions {
            max_file_bytes,
            ..LoadOptions::default()
        };
        let load = |max_file_bytes| {
            forkpoint_core::Session::from_file_bytes(bytes.clone(), &limit(max_file_bytes), None)
        };
        assert!(load(n).is_ok());
        let e = load(n - 1).unwrap_err();
        assert_eq!(e.code, ErrorCode::LimitExceeded, "{e}");
        assert!(e.message.contains("maxFileBytes"), "{e}");
        // The stores' own loads of their sessions are not files handed in.
        assert!(forkpoint_core::Session::from_bytes(bytes.clone(), &limit(n - 1), None).is_ok());
        let limits = forkpoint_core::LimitOptions {
            max_file_bytes: n - 1,
            ..Default::default()
        };
        let e = forkpoint_core::normalize::import::import_session_with(
            bytes,
            forkpoint_core::normalize::import::ImportFormat::Auto,
            None,
            "2026-01-01T00:00:00.000Z",
            &limits,
        )
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::LimitExceeded, "{e}");
    }
    // Lazily: the tail of a plain version 3 file is read whatever its size;
    // a file read whole is held to the limit.
    let lazy = |b: &[u8], max_file_bytes| {
        lazy_bounded(
            b,
            LazyOptions {
                max_file_bytes,
                ..LazyOptions::default()
            },
            None,
        )
    };
    assert!(lazy(&plain, 1).is_ok());
    for b in [&gz, &v1] {
        assert!(lazy(b, b.len() as u64).is_ok());
        let Err(e) = lazy(b, b.len() as u64 - 1) else {
            panic!("a file past maxFileBytes was read");
        };
        assert_eq!(e.code, ErrorCode::LimitExceeded, "{e}");
        assert!(e.message.contains("maxFileBytes"), "{e}");
    }
}
