//! Each fixture file's expected facts, errors and round trip.

use forkpoint_core::{ErrorCode, LazyOptions};
use serde_json::Value;

use crate::common::*;

fn ctx(s: &forkpoint_core::Session, leaf: Option<&str>) -> Value {
    serde_json::from_str(&s.context_json(leaf, false).unwrap()).unwrap()
}

fn ids(v: &Value) -> Vec<String> {
    v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap_or("?").to_string())
        .collect()
}

#[test]
fn v3_basic_context_settings_and_round_trip() {
    let b = bytes("v3-basic.jsonl");
    let s = load(&b).unwrap();
    let m = s.metadata();
    assert_eq!((m.entry_count, m.message_count, m.version), (6, 4, 3));
    assert_eq!(m.leaf_id.as_deref(), Some("a0000006"));
    let c = ctx(&s, None);
    assert_eq!(ids(&c), ["user", "assistant", "toolResult", "assistant"]);
    assert_eq!(c["thinkingLevel"], "medium");
    assert_eq!(c["model"]["modelId"], "claude-sonnet-4-5");
    assert_eq!(s.original_bytes(), &b[..]);
    // The tool call's arguments keep their bytes (1.5 as written).
    assert!(
        s.context_json(None, false)
            .unwrap()
            .contains(r#""timeout":1.5"#)
    );
}

#[test]
fn v1_is_migrated_in_memory_with_deterministic_ids() {
    let b = bytes("v1-legacy.jsonl");
    let s = load(&b).unwrap();
    let m = s.metadata();
    assert_eq!(m.version, 1);
    assert_eq!(m.leaf_id.as_deref(), Some("00000009"));
    // Linear chain: 00000001 .. 00000009.
    assert_eq!(
        s.path_ids("00000009").unwrap(),
        (1..=9).map(|i| format!("{i:08x}")).collect::<Vec<_>>()
    );
    // firstKeptEntryIndex 4 became firstKeptEntryId "00000004".
    let comp: Value = serde_json::from_str(&s.entry_json("00000006").unwrap()).unwrap();
    assert_eq!(comp["firstKeptEntryId"], "00000004");
    assert!(comp.get("firstKeptEntryIndex").is_none());
    let c = ctx(&s, None);
    assert_eq!(
        ids(&c),
        [
            "compactionSummary",
            "user",
            "assistant",
            "custom",
            "user",
            "assistant"
        ]
    );
    assert_eq!(c["thinkingLevel"], "high");
    // The input bytes are untouched.
    assert_eq!(s.original_bytes(), &b[..]);
    assert_eq!(std::fs::read(fixture("v1-legacy.jsonl")).unwrap(), b);
}

#[test]
fn v2_hook_message_becomes_custom() {
    let s = load(&bytes("v2-hookmessage.jsonl")).unwrap();
    let c = ctx(&s, None);
    assert_eq!(ids(&c), ["user", "custom", "assistant"]);
    let e: Value = serde_json::from_str(&s.entry_json("b0000002").unwrap()).unwrap();
    assert_eq!(e["message"]["role"], "custom");
}

#[test]
fn branches_leaves_labels_and_paths() {
    let s = load(&bytes("branches.jsonl")).unwrap();
    let m = s.metadata();
    assert_eq!((m.branch_points, m.leaf_count), (2, 3));
    assert_eq!(m.name.as_deref(), Some("Parser design"));
    let leaves: Vec<String> = s.leaves().into_iter().map(|n| n.id).collect();
    assert_eq!(
        leaves,
        ["c0000005", "c0000008", "c0000015"],
        "the label entry is a node"
    );
    let bps: Vec<String> = s.branch_points().into_iter().map(|n| n.id).collect();
    assert_eq!(bps, ["c0000001", "c0000007"]);
    assert_eq!(s.label("c0000002"), Some("plan A (old)"));
    assert_eq!(
        s.label("c0000007"),
        None,
        "cleared by a label entry without label"
    );
    // Context from the first branch's leaf vs the current leaf.
    assert_eq!(
        ids(&ctx(&s, Some("c0000004"))),
        ["user", "assistant", "user", "assistant"]
    );
    // Current leaf: branch summary (non-empty) becomes a message; the empty one does not.
    assert_eq!(
        ids(&ctx(&s, None)),
        ["user", "branchSummary", "assistant", "user", "assistant"]
    );
    assert_eq!(
        s.path_ids("c0000008").unwrap(),
        ["c0000001", "c0000006", "c0000007", "c0000008"]
    );
    let err = s.context_json(Some("nope"), false).unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound);
}

#[test]
fn only_the_newest_compaction_counts() {
    let s = load(&bytes("compactions.jsonl")).unwrap();
    let c = ctx(&s, None);
    assert_eq!(
        ids(&c),
        [
            "compactionSummary",
            "custom",
            "bashExecution",
            "bashExecution",
            "assistant",
            "user",
            "assistant"
        ]
    );
    assert_eq!(c["messages"][0]["summary"], "q1..q3 happened.");
    assert_eq!(c["messages"][0]["tokensBefore"], 9000);
    assert_eq!(c["thinkingLevel"], "low");
    assert_eq!(
        c["model"]["provider"], "anthropic",
        "the last assistant message sets the model"
    );
    // LLM view: the excluded bash run is gone, summaries and custom messages are user text.
    let llm: Value = serde_json::from_str(&s.context_json(None, true).unwrap()).unwrap();
    let msgs = llm["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 6);
    assert!(
        msgs[0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("The conversation history before this point")
    );
    assert_eq!(msgs[1]["content"][0]["text"], "run the tests");
    assert_eq!(
        msgs[2]["content"][0]["text"],
        "Ran `false`\n(no output)\n\nCommand exited with code 1"
    );
    // From the first compaction's branch point the older compaction applies.
    assert_eq!(
        ids(&ctx(&s, Some("d0000007"))),
        ["compactionSummary", "user", "assistant", "user"]
    );
}

#[test]
fn torn_tail_is_cut_and_reported() {
    let b = bytes("torn-tail.jsonl");
    let s = load(&b).unwrap();
    let m = s.metadata();
    assert_eq!(m.entry_count, 3);
    let t = m.torn_tail.unwrap();
    assert_eq!((t.line, t.offset, t.bytes), (Some(5), 946, 57));
    assert_eq!(t.offset + t.bytes, b.len() as u64);
}

#[test]
fn torn_tail_at_every_byte_of_the_last_line() {
    let full = bytes("missing-newline.jsonl");
    let last_start = full[..full.len() - 1]
        .iter()
        .rposition(|&c| c == b'\n')
        .unwrap()
        + 1;
    for cut in last_start..=full.len() {
        let s = load(&full[..cut]).unwrap_or_else(|e| panic!("cut {cut}: {e}"));
        let m = s.metadata();
        if cut == full.len() {
            assert_eq!(m.entry_count, 4);
            assert!(m.missing_final_newline && m.torn_tail.is_none());
        } else if cut == last_start {
            assert_eq!(m.entry_count, 3);
            assert!(m.torn_tail.is_none());
        } else {
            assert_eq!(m.entry_count, 3, "cut {cut}");
            assert_eq!(m.torn_tail.unwrap().offset, last_start as u64);
        }
        // Lazy agrees.
        let l = lazy(&full[..cut], LazyOptions::default(), None).unwrap();
        assert_eq!(
            l.context_json(false).unwrap(),
            s.context_json(None, false).unwrap(),
            "cut {cut}"
        );
    }
}

#[test]
fn corruption_in_the_middle_is_an_error_with_location_or_a_counted_skip() {
    let b = bytes("corrupt-middle.jsonl");
    let e = load(&b).unwrap_err();
    assert_eq!(e.code, ErrorCode::CorruptedData);
    assert_eq!(e.line, Some(3));
    let line3 = b
        .split(|&c| c == b'\n')
        .take(2)
        .map(|l| l.len() + 1)
        .sum::<usize>();
    assert_eq!(e.offset, Some(line3 as u64));
    let s = load_lenient(&b).unwrap();
    let m = s.metadata();
    assert_eq!(m.skipped_lines, 1);
    assert_eq!(m.skipped[0].line, Some(3));
    assert_eq!(m.entry_count, 3);
}

#[test]
fn crlf_lines_load() {
    let s = load(&bytes("crlf.jsonl")).unwrap();
    assert_eq!(s.metadata().entry_count, 3);
    assert_eq!(ids(&ctx(&s, None)), ["user", "assistant", "user"]);
}

#[test]
fn lone_surrogates_keep_their_lines_and_escapes() {
    let b = bytes("lone-surrogates.jsonl");
    let s = load(&b).unwrap();
    assert_eq!(s.metadata().entry_count, 3);
    let c = s.context_json(None, false).unwrap();
    assert!(
        c.contains(r"\ud83d and \ude00"),
        "escapes are passed through byte for byte"
    );
    assert_eq!(
        s.label("f0000001"),
        Some("x\u{FFFD}y"),
        "decoded for Rust: lone surrogate -> U+FFFD"
    );
}

#[test]
fn orphans_are_roots() {
    let s = load(&bytes("orphan.jsonl")).unwrap();
    let m = s.metadata();
    assert_eq!(m.orphans, 1);
    let roots: Vec<String> = s.roots().into_iter().map(|n| n.id).collect();
    assert_eq!(roots, ["g0000001", "g0000003"]);
    assert_eq!(ids(&ctx(&s, None)), ["user", "assistant"]);
}

#[test]
fn unknown_types_and_fields_are_kept_byte_for_byte() {
    let b = bytes("unknown-types.jsonl");
    let s = load(&b).unwrap();
    assert_eq!(s.original_bytes(), &b[..]);
    let line = s.entry_json("h0000001").unwrap();
    assert!(line.contains(r#""extra":1.10,"big":12345678901234567890,"exp":1E+5,"neg":-0"#));
    let nodes = s.leaves();
    assert_eq!(nodes[0].kind, "message");
    assert_eq!(s.node(1).kind, "forkpoint.experiment");
    let c = s.context_json(None, false).unwrap();
    assert!(c.contains(r#""timestamp":1.10"#) && c.contains(r#""newBlockField":{"v":2}"#));
}

#[test]
fn leaf_entries_move_the_current_leaf() {
    let s = load(&bytes("leaf-moves.jsonl")).unwrap();
    assert_eq!(s.metadata().leaf_id.as_deref(), Some("i0000002"));
    assert_eq!(s.metadata().leaf_count, 2, "the leaf pointer is not a node");
    let s = load(&bytes("leaf-moves-then-append.jsonl")).unwrap();
    assert_eq!(s.metadata().leaf_id.as_deref(), Some("j0000005"));
    assert_eq!(
        s.path_ids("j0000005").unwrap(),
        ["j0000001", "j0000002", "j0000005"],
        "a child of a pointer hangs under its target"
    );
    let s = load(&bytes("leaf-null.jsonl")).unwrap();
    assert_eq!(s.metadata().leaf_id, None);
    assert_eq!(ids(&ctx(&s, None)).len(), 0);
}

#[test]
fn cycles_are_errors_or_broken_when_lenient() {
    let b = bytes("cycle.jsonl");
    let e = load(&b).unwrap_err();
    assert_eq!((e.code, e.line), (ErrorCode::CorruptedData, Some(3)));
    let s = load_lenient(&b).unwrap();
    assert_eq!(s.metadata().broken_cycles, 1);
    assert_eq!(s.path_ids("l0000003").unwrap(), ["l0000002", "l0000003"]);
}

#[test]
fn duplicate_ids_later_wins() {
    let s = load(&bytes("duplicate-ids.jsonl")).unwrap();
    assert_eq!(s.metadata().duplicate_ids, 1);
    let c = s.context_json(None, false).unwrap();
    assert!(c.contains("new copy") && !c.contains("old copy"));
}

#[test]
fn gzip_sessions_load() {
    let s = load(&bytes("branches.jsonl.gz")).unwrap();
    let m = s.metadata();
    assert!(m.gzip);
    assert_eq!((m.entry_count, m.branch_points), (3, 1));
    assert_eq!(
        s.original_bytes(),
        &bytes("branches.jsonl.gz")[..],
        "export keeps the gzip bytes"
    );
    assert!(s.text().ends_with("\n") && s.text().starts_with("{\"type\":\"session\""));
    // Lazy on gzip reads the whole file and agrees.
    let b = bytes("branches.jsonl.gz");
    let l = lazy(&b, LazyOptions::default(), None).unwrap();
    assert_eq!(
        l.context_json(false).unwrap(),
        s.context_json(None, false).unwrap()
    );
    assert_eq!(l.metadata(false).unwrap().mode, "full");
}

#[test]
fn nesting_and_line_limits() {
    let e = load(&bytes("deep-nesting.jsonl")).unwrap_err();
    assert_eq!((e.code, e.line), (ErrorCode::LimitExceeded, Some(2)));
    let opts = forkpoint_core::LoadOptions {
        max_line_bytes: 100,
        ..Default::default()
    };
    let e = forkpoint_core::Session::from_bytes(bytes("v3-basic.jsonl"), &opts, None).unwrap_err();
    assert_eq!(e.code, ErrorCode::LimitExceeded);
    assert_eq!(e.line, Some(1));
    let opts = forkpoint_core::LoadOptions {
        max_entries: 2,
        ..Default::default()
    };
    let e = forkpoint_core::Session::from_bytes(bytes("v3-basic.jsonl"), &opts, None).unwrap_err();
    assert_eq!(e.code, ErrorCode::LimitExceeded);
}

#[test]
fn files_that_are_not_sessions() {
    for (name, needle) in [
        ("not-sessions/empty.jsonl", "empty"),
        ("not-sessions/blank-lines.jsonl", "blank"),
        ("not-sessions/newer-version.jsonl", "newer"),
        ("not-sessions/codex-rollout.jsonl", "Codex"),
        ("not-sessions/plain-text.jsonl", "not JSON"),
        ("not-sessions/binary.jsonl", "binary"),
    ] {
        let e = load(&bytes(name)).unwrap_err();
        assert_eq!(e.code, ErrorCode::UnsupportedFormat, "{name}");
        assert!(e.message.contains(needle), "{name}: {}", e.message);
    }
    for real in [
        "marot-spotter_tool_heavy.jsonl",
        "marot-spotter_subagent.jsonl",
    ] {
        let b = std::fs::read(fixture(&format!("../../../shared/fixtures/real/{real}"))).unwrap();
        let e = load(&b).unwrap_err();
        assert_eq!(e.code, ErrorCode::UnsupportedFormat);
        assert!(e.message.contains("Claude Code"), "{}", e.message);
    }
}

#[test]
fn real_pi_sessions_load_and_lazy_agrees() {
    for real in [
        "badlogic-pi-mono_large-session.jsonl",
        "mattpocock-sandcastle_resumed-session.jsonl",
    ] {
        let b = std::fs::read(fixture(&format!("../../../shared/fixtures/real/{real}"))).unwrap();
        let s = load(&b).unwrap();
        assert!(s.metadata().entry_count > 0);
        let l = lazy(&b, LazyOptions::default(), None).unwrap();
        assert_eq!(
            l.context_json(false).unwrap(),
            s.context_json(None, false).unwrap(),
            "{real}"
        );
        assert_eq!(s.original_bytes(), &b[..]);
    }
    let b = std::fs::read(fixture(
        "../../../shared/fixtures/real/badlogic-pi-mono_large-session.jsonl",
    ))
    .unwrap();
    let m = load(&b).unwrap().metadata();
    assert_eq!((m.version, m.entry_count, m.message_count), (1, 1018, 914));
}

#[test]
fn tree_runs_collapse_linear_stretches() {
    let s = load(&bytes("branches.jsonl")).unwrap();
    let runs = s.tree_runs();
    type Shape = (String, String, u32, Option<u32>, Vec<u32>);
    let shape: Vec<Shape> = runs
        .iter()
        .map(|r| {
            (
                r.first_id.clone(),
                r.last_id.clone(),
                r.entries,
                r.parent,
                r.children.clone(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            ("c0000001".into(), "c0000001".into(), 1, None, vec![1, 2]),
            ("c0000002".into(), "c0000005".into(), 4, Some(0), vec![]),
            ("c0000006".into(), "c0000007".into(), 2, Some(0), vec![3, 4]),
            ("c0000008".into(), "c0000008".into(), 1, Some(2), vec![]),
            ("c0000009".into(), "c0000015".into(), 7, Some(2), vec![]),
        ]
    );
    assert!(runs[4].current && !runs[1].current);
    assert_eq!(runs[1].labels[0].label, "plan A (old)");
    let total: u32 = runs.iter().map(|r| r.entries).sum();
    assert_eq!(total as u64, s.metadata().entry_count);
}
