//! The writer's state machine without I/O: lines it builds load back as written.

use forkpoint_core::writer::WriterCore;
use forkpoint_core::{ErrorCode, LoadOptions, Session};

use crate::common::*;

fn writer_over(text: &str) -> (WriterCore, Vec<u8>) {
    let bytes = text.as_bytes().to_vec();
    let s = Session::from_bytes(bytes.clone(), &LoadOptions::default(), None).unwrap();
    (
        WriterCore::from_session(s, bytes.len() as u64, 42, &LoadOptions::default()).unwrap(),
        bytes,
    )
}

fn flush(w: &mut WriterCore, file: &mut Vec<u8>) {
    while let Some(b) = w.take_batch(None) {
        file.extend_from_slice(&b.bytes);
        w.committed(&b);
    }
}

#[test]
fn appends_fill_id_parent_and_timestamp() {
    let header = WriterCore::new_header_line("s1", 1_770_000_000_000, "/w", None);
    let (mut w, mut file) = writer_over(&header);
    let (a, _) = w
        .append(
            r#"{"type":"message","message":{"role":"user","content":"hi","timestamp":1}}"#,
            1_770_000_001_000,
        )
        .unwrap();
    let (b, t) = w.append(r#"{"type":"message","message":{"role":"assistant","content":[],"provider":"p","model":"m"},"n":1.10}"#, 1_770_000_002_000).unwrap();
    assert_eq!(a.len(), 8);
    assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
    assert_ne!(a, b);
    assert_eq!(w.durable_ticket(), 0);
    flush(&mut w, &mut file);
    assert_eq!(w.durable_ticket(), t);
    let s = load(&file).unwrap();
    assert_eq!(s.path_ids(&b).unwrap(), [a.clone(), b.clone()]);
    let line = s.entry_json(&b).unwrap();
    assert!(line.starts_with(&format!(r#"{{"type":"message","id":"{b}","parentId":"{a}","timestamp":"2026-02-02T02:40:02.000Z""#)), "{line}");
    assert!(
        line.ends_with(r#""n":1.10}"#),
        "raw values are kept: {line}"
    );
}

#[test]
fn move_leaf_labels_and_branch_summaries() {
    let header = WriterCore::new_header_line("s2", 0, "/w", None);
    let (mut w, mut file) = writer_over(&header);
    let (a, _) = w
        .append(
            r#"{"type":"message","message":{"role":"user","content":"a"}}"#,
            1,
        )
        .unwrap();
    let (b, _) = w
        .append(
            r#"{"type":"message","message":{"role":"assistant","content":[]}}"#,
            2,
        )
        .unwrap();
    w.move_leaf(Some(&a), 3).unwrap();
    assert_eq!(w.leaf_id(), Some(a.as_str()));
    let (c, _) = w
        .append(
            r#"{"type":"message","message":{"role":"user","content":"c"}}"#,
            4,
        )
        .unwrap();
    w.append_label(&b, Some("old"), 5).unwrap();
    let (d, _) = w
        .branch_with_summary(Some(&b), "went back", Some(r#"{"readFiles":[]}"#), None, 6)
        .unwrap();
    flush(&mut w, &mut file);
    let s = load(&file).unwrap();
    assert_eq!(s.path_ids(&c).unwrap(), [a.clone(), c.clone()]);
    assert_eq!(s.label(&b), Some("old"));
    assert_eq!(s.path_ids(&d).unwrap(), [a.clone(), b.clone(), d.clone()]);
    assert_eq!(s.metadata().leaf_id.as_deref(), Some(d.as_str()));
    let e: serde_json::Value = serde_json::from_str(&s.entry_json(&d).unwrap()).unwrap();
    assert_eq!(e["fromId"], b.as_str());
    assert_eq!(e["details"]["readFiles"], serde_json::json!([]));
    // A move to before the first entry; the next append is a root.
    w.move_leaf(None, 7).unwrap();
    let (r, _) = w
        .append(r#"{"type":"custom","customType":"x"}"#, 8)
        .unwrap();
    flush(&mut w, &mut file);
    let s = load(&file).unwrap();
    assert_eq!(s.path_ids(&r).unwrap(), std::slice::from_ref(&r));
}

#[test]
fn bad_appends_are_rejected_and_change_nothing() {
    let header = WriterCore::new_header_line("s3", 0, "/w", None);
    let (mut w, _) = writer_over(&header);
    let (a, _) = w
        .append(r#"{"type":"custom","customType":"x"}"#, 1)
        .unwrap();
    for (bad, code) in [
        ("not json", ErrorCode::InvalidInput),
        ("[1]", ErrorCode::InvalidInput),
        (r#"{"customType":"x"}"#, ErrorCode::InvalidInput),
        (r#"{"type":"session"}"#, ErrorCode::InvalidInput),
        (
            &format!(r#"{{"type":"custom","id":"{a}"}}"#),
            ErrorCode::InvalidId,
        ),
        (r#"{"type":"custom","id":""}"#, ErrorCode::InvalidId),
        (
            r#"{"type":"custom","parentId":"missing"}"#,
            ErrorCode::NotFound,
        ),
        (r#"{"type":"leaf"}"#, ErrorCode::InvalidInput),
        (
            r#"{"type":"label","targetId":"missing"}"#,
            ErrorCode::NotFound,
        ),
        (r#"{"type":"custom"} x"#, ErrorCode::InvalidInput),
    ] {
        let e = w.append(bad, 2).unwrap_err();
        assert_eq!(e.code, code, "{bad}");
    }
    assert_eq!(w.entry_count(), 1);
    assert_eq!(w.leaf_id(), Some(a.as_str()));
    assert_eq!(
        w.move_leaf(Some("missing"), 3).unwrap_err().code,
        ErrorCode::NotFound
    );
}

#[test]
fn old_versions_need_migration() {
    let s = load(&bytes("v1-legacy.jsonl")).unwrap();
    let e = WriterCore::from_session(s, 0, 1, &LoadOptions::default()).unwrap_err();
    assert_eq!(e.code, ErrorCode::MigrationRequired);
}

#[test]
fn hint_follows_compactions_and_leaf_moves() {
    let header = WriterCore::new_header_line("s4", 0, "/w", None);
    let (mut w, mut file) = writer_over(&header);
    let (a, _) = w
        .append(
            r#"{"type":"thinking_level_change","thinkingLevel":"high"}"#,
            1,
        )
        .unwrap();
    let (b, _) = w
        .append(
            r#"{"type":"message","message":{"role":"user","content":"b"}}"#,
            2,
        )
        .unwrap();
    let _ = w.take_hint(true);
    w.append(
        &format!(
            r#"{{"type":"compaction","summary":"s","firstKeptEntryId":"{b}","tokensBefore":1}}"#
        ),
        3,
    )
    .unwrap();
    w.append(
        r#"{"type":"message","message":{"role":"user","content":"c"}}"#,
        4,
    )
    .unwrap();
    flush(&mut w, &mut file);
    let h = w
        .take_hint(false)
        .expect("a compaction makes the hint stale");
    assert_eq!(h.anchor_id, b);
    // The thinking level before the anchor: the entry that sets it, not its value.
    assert_eq!(
        h.thinking_entry
            .as_ref()
            .and_then(|e| e.as_ref())
            .map(|e| &*e.id),
        Some(&*a)
    );
    assert!(w.take_hint(false).is_none(), "nothing changed since");
    // The hint drives a lazy load that equals the full one.
    let l = lazy(&file, Default::default(), Some(h.to_json())).unwrap();
    assert_eq!(l.metadata(false).unwrap().mode, "hint");
    assert_eq!(
        l.context_json(false).unwrap(),
        load(&file).unwrap().context_json(None, false).unwrap()
    );
    w.move_leaf(Some(&a), 5).unwrap();
    flush(&mut w, &mut file);
    assert!(
        w.take_hint(false).is_some(),
        "a leaf move makes the hint stale"
    );
}
