//! Defects of 0.1.0 found by the adversarial trial, on real files.

use std::path::Path;

use forkpoint_core::{ErrorCode, LazyOptions, WriterOptions};
use forkpoint_fs::{FileWriter, load_lazy};

fn opts() -> WriterOptions {
    WriterOptions {
        cwd: Some("/w".into()),
        ..Default::default()
    }
}

fn append(w: &FileWriter, json: &str) -> String {
    let (id, t) = w.submit(|c| c.append(json, 1_770_000_000_000)).unwrap();
    w.wait(t).unwrap();
    id
}

fn session(p: &Path) -> Vec<u8> {
    let (w, _) = FileWriter::open(p, &opts(), 1_770_000_000_000, 7).unwrap();
    append(
        &w,
        r#"{"type":"message","message":{"role":"user","content":"a"}}"#,
    );
    append(
        &w,
        r#"{"type":"message","message":{"role":"user","content":"b"}}"#,
    );
    w.close().unwrap();
    std::fs::read(p).unwrap()
}

/// Item 7: opening a writer on a file whose complete last line (newline-ended)
/// holds a raw control character or invalid UTF-8 cut it off with fsync, as if
/// torn. It is `CORRUPTED_DATA` now, and the file keeps every byte.
#[test]
fn a_writer_never_cuts_a_complete_last_line() {
    let dir = tempfile::tempdir().unwrap();
    for (i, bad) in [
        &b"{\"type\":\"message\",\"id\":\"c1\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"x\x07y\"}}\n"[..],
        b"{\"type\":\"message\",\"id\":\"c2\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"x\xc3y\"}}\n",
    ]
    .into_iter()
    .enumerate()
    {
        let p = dir.path().join(format!("s{i}.jsonl"));
        let mut bytes = session(&p);
        bytes.extend_from_slice(bad);
        std::fs::write(&p, &bytes).unwrap();
        let e = FileWriter::open(&p, &opts(), 0, 1).err().unwrap();
        assert_eq!(e.code, ErrorCode::CorruptedData, "{e:?}");
        assert_eq!(e.line, Some(4));
        assert_eq!(std::fs::read(&p).unwrap(), bytes, "nothing cut");
        let e = load_lazy(&p, LazyOptions::default()).err().unwrap();
        assert_eq!(e.code, ErrorCode::CorruptedData);
        // Without the newline it is a torn write: cut back and reported.
        std::fs::write(&p, &bytes[..bytes.len() - 1]).unwrap();
        let (w, report) = FileWriter::open(&p, &opts(), 0, 1).unwrap();
        assert!(report.repaired.is_some());
        w.close().unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), bytes[..bytes.len() - bad.len()]);
    }
}

/// Item 1 on a real file: a 17 MB tool output in the agent's session and no hint.
#[test]
fn lazy_load_crosses_a_17_mb_line_without_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big.jsonl");
    let (w, _) = FileWriter::open(&p, &opts(), 1_770_000_000_000, 7).unwrap();
    append(
        &w,
        r#"{"type":"message","message":{"role":"user","content":"go"}}"#,
    );
    let big = "o".repeat(17 << 20);
    append(
        &w,
        &format!(
            r#"{{"type":"message","message":{{"role":"toolResult","toolCallId":"c","toolName":"bash","content":[{{"type":"text","text":"{big}"}}],"isError":false}}}}"#
        ),
    );
    append(
        &w,
        r#"{"type":"message","message":{"role":"user","content":"next"}}"#,
    );
    w.close().unwrap();
    let _ = std::fs::remove_file(format!("{}.idx.json", p.display()));
    let lf = load_lazy(&p, LazyOptions::default()).unwrap();
    let md = lf.loader.metadata(lf.hint_written).unwrap();
    assert_eq!(md.context_messages, 3);
    assert_eq!(md.mode, "scan");
}

/// A resume hint written by 0.1.0 (version 1, settings as values) is not believed:
/// the load scans, gives the full load's context, and replaces it with version 2.
#[test]
fn hints_written_by_0_1_0_are_replaced() {
    let fixtures = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/written-by-0.1.0");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("compactions.jsonl");
    std::fs::copy(fixtures.join("compactions.jsonl"), &p).unwrap();
    let hint = dir.path().join("compactions.jsonl.idx.json");
    std::fs::copy(fixtures.join("compactions.jsonl.idx.json"), &hint).unwrap();
    let full = forkpoint_fs::read_session(&p, &Default::default())
        .unwrap()
        .context_json(None, false)
        .unwrap();
    let lf = load_lazy(&p, LazyOptions::default()).unwrap();
    let md = lf.loader.metadata(lf.hint_written).unwrap();
    assert_eq!(md.mode, "scan");
    assert!(md.hint_rejected.unwrap().contains("version 1"));
    assert!(lf.hint_written);
    assert_eq!(lf.loader.context_json(false).unwrap(), full);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&hint).unwrap()).unwrap();
    assert_eq!(v["version"], 2);
    let again = load_lazy(&p, LazyOptions::default()).unwrap();
    assert_eq!(again.loader.metadata(false).unwrap().mode, "hint");
    assert_eq!(again.loader.context_json(false).unwrap(), full);
}

/// Found by review: a file holding only a header this version cannot read (a newer
/// version), with no newline, was taken for a torn header and emptied.
#[test]
fn a_writer_never_empties_a_newer_header() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("newer.jsonl");
    let header = br#"{"type":"session","version":4,"id":"s","timestamp":"2026-02-01T00:00:00.000Z","cwd":"/w"}"#;
    std::fs::write(&p, header).unwrap();
    let e = FileWriter::open(&p, &opts(), 0, 1).err().unwrap();
    assert_eq!(e.code, ErrorCode::UnsupportedFormat);
    assert_eq!(std::fs::read(&p).unwrap(), header);
    // A header cut short is still started afresh.
    std::fs::write(&p, &header[..40]).unwrap();
    let (w, report) = FileWriter::open(&p, &opts(), 0, 1).unwrap();
    assert!(report.repaired.is_some());
    w.close().unwrap();
}
