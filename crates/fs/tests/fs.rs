//! The file layer on real files: appends with fsync and group commit, the lock,
//! torn-tail repair, migration, gzip, the resume hint, listing, batches.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use forkpoint_core::{Durability, ErrorCode, LazyOptions, LoadOptions, WriterOptions};
use forkpoint_fs::incremental::IncrementalFile;
use forkpoint_fs::{FileWriter, list_sessions, load_lazy, read_session};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

fn opts() -> WriterOptions {
    WriterOptions {
        cwd: Some("/w".into()),
        ..Default::default()
    }
}

fn open(p: &Path, o: &WriterOptions) -> FileWriter {
    FileWriter::open(p, o, 1_770_000_000_000, 7).unwrap().0
}

fn append(w: &FileWriter, json: &str) -> String {
    let (id, t) = w.submit(|c| c.append(json, 1_770_000_000_000)).unwrap();
    w.wait(t).unwrap();
    id
}

#[test]
fn create_append_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    let (w, report) = FileWriter::open(&p, &opts(), 1_770_000_000_000, 1).unwrap();
    assert!(report.created);
    let a = append(
        &w,
        r#"{"type":"message","message":{"role":"user","content":"hi","timestamp":1}}"#,
    );
    let b = append(
        &w,
        r#"{"type":"message","message":{"role":"assistant","content":[],"provider":"p","model":"m"}}"#,
    );
    w.close().unwrap();
    assert_eq!(
        w.submit(|c| c.append("{}", 0)).unwrap_err().code,
        ErrorCode::Closed
    );
    let s = read_session(&p, &LoadOptions::default()).unwrap();
    assert_eq!(s.path_ids(&b).unwrap(), [a, b.clone()]);
    assert_eq!(s.header().cwd.as_deref(), Some("/w"));
    // The hint exists and drives a lazy load.
    assert!(p.with_extension("jsonl.idx.json").exists());
    let lf = load_lazy(&p, LazyOptions::default()).unwrap();
    assert_eq!(
        lf.loader.context_json(false).unwrap(),
        s.context_json(None, false).unwrap()
    );
    // Reopening continues the same tree.
    let w = open(&p, &opts());
    assert_eq!(w.leaf_id().unwrap().as_deref(), Some(b.as_str()));
    w.close().unwrap();
}

#[test]
fn second_writer_gets_session_locked() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    let w = open(&p, &opts());
    let e = FileWriter::open(&p, &opts(), 0, 1).err().unwrap();
    assert_eq!(e.code, ErrorCode::SessionLocked);
    w.close().unwrap();
    // Released on close.
    open(&p, &opts()).close().unwrap();
}

#[test]
fn torn_tail_is_repaired_and_the_next_append_survives_at_every_cut() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    let w = open(&p, &opts());
    append(
        &w,
        r#"{"type":"message","message":{"role":"user","content":"one"}}"#,
    );
    w.close().unwrap();
    let good = std::fs::read(&p).unwrap();
    let torn_line = br#"{"type":"message","id":"deadbeef","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"lost"}}"#;
    for cut in 0..=torn_line.len() {
        let mut bytes = good.clone();
        bytes.extend_from_slice(&torn_line[..cut]);
        std::fs::write(&p, &bytes).unwrap();
        let (w, report) = FileWriter::open(&p, &opts(), 0, cut as u64).unwrap();
        let complete = cut == torn_line.len();
        if cut == 0 {
            assert!(report.repaired.is_none() && !report.newline_added);
        } else if complete {
            assert!(
                report.newline_added,
                "a complete last line is kept and terminated"
            );
        } else {
            assert_eq!(
                report.repaired.as_ref().unwrap().offset,
                good.len() as u64,
                "cut {cut}"
            );
        }
        let id = append(
            &w,
            r#"{"type":"message","message":{"role":"user","content":"next"}}"#,
        );
        w.close().unwrap();
        let s = read_session(&p, &LoadOptions::default()).unwrap();
        let m = s.metadata();
        assert!(m.torn_tail.is_none(), "cut {cut}");
        assert_eq!(m.entry_count, if complete { 3 } else { 2 }, "cut {cut}");
        assert!(s.entry_json(&id).unwrap().contains("next"));
    }
}

#[test]
fn group_commit_from_many_threads_keeps_every_append_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("g.jsonl");
    let w = Arc::new(open(
        &p,
        &WriterOptions {
            durability: Durability::Group,
            ..opts()
        },
    ));
    let mut handles = vec![];
    for t in 0..8 {
        let w = w.clone();
        handles.push(std::thread::spawn(move || {
            let mut ids = vec![];
            for i in 0..50 {
                let (id, ticket) = w
                    .submit(|c| {
                        c.append(
                            &format!(r#"{{"type":"custom","customType":"t{t}","data":{i}}}"#),
                            0,
                        )
                    })
                    .unwrap();
                w.wait(ticket).unwrap();
                ids.push(id);
            }
            ids
        }));
    }
    let all: Vec<String> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    w.close().unwrap();
    let s = read_session(&p, &LoadOptions::default()).unwrap();
    assert_eq!(s.metadata().entry_count, 400);
    for id in &all {
        s.entry_json(id).unwrap();
    }
    // One chain: each append's parent is the previous line.
    let leaf = s.metadata().leaf_id.unwrap();
    assert_eq!(s.path_ids(&leaf).unwrap().len(), 400);
}

#[test]
fn old_versions_are_migrated_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("old.jsonl");
    std::fs::copy(fixture("v1-legacy.jsonl"), &p).unwrap();
    let before = std::fs::read(&p).unwrap();
    let e = FileWriter::open(&p, &opts(), 0, 1).err().unwrap();
    assert_eq!(e.code, ErrorCode::MigrationRequired);
    assert_eq!(
        std::fs::read(&p).unwrap(),
        before,
        "refusing changes nothing"
    );
    let old_ctx = read_session(&p, &LoadOptions::default())
        .unwrap()
        .context_json(None, false)
        .unwrap();
    let (w, report) = FileWriter::open(
        &p,
        &WriterOptions {
            migrate: true,
            ..opts()
        },
        0,
        1,
    )
    .unwrap();
    assert_eq!(report.migrated_from, Some(1));
    append(&w, r#"{"type":"custom","customType":"after-migration"}"#);
    w.close().unwrap();
    let s = read_session(&p, &LoadOptions::default()).unwrap();
    assert_eq!(s.metadata().version, 3);
    assert_eq!(
        s.context_json(None, false).unwrap(),
        old_ctx,
        "the context survives migration"
    );
}

#[test]
fn gzip_sessions_are_appended_member_by_member() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl.gz");
    let w = open(&p, &opts());
    let a = append(
        &w,
        r#"{"type":"message","message":{"role":"user","content":"zipped"}}"#,
    );
    w.close().unwrap();
    let raw = std::fs::read(&p).unwrap();
    assert_eq!(&raw[..2], &[0x1f, 0x8b]);
    // A torn member from a crash is dropped on open, and appending continues.
    let mut torn = raw.clone();
    torn.extend_from_slice(&forkpoint_core::gz::encode_member(b"{\"type\":\"custom\"}\n")[..10]);
    std::fs::write(&p, &torn).unwrap();
    let (w, report) = FileWriter::open(&p, &opts(), 0, 2).unwrap();
    assert_eq!(report.repaired.unwrap().offset, raw.len() as u64);
    let b = append(
        &w,
        r#"{"type":"message","message":{"role":"assistant","content":[]}}"#,
    );
    w.close().unwrap();
    let s = read_session(&p, &LoadOptions::default()).unwrap();
    assert!(s.metadata().gzip);
    assert_eq!(s.path_ids(&b).unwrap(), [a, b.clone()]);
}

#[test]
fn listing_reads_headers_and_tails() {
    let dir = tempfile::tempdir().unwrap();
    for f in [
        "v3-basic.jsonl",
        "branches.jsonl",
        "leaf-moves.jsonl",
        "not-sessions/codex-rollout.jsonl",
    ] {
        let name = Path::new(f).file_name().unwrap();
        std::fs::copy(fixture(f), dir.path().join(name)).unwrap();
    }
    std::fs::write(dir.path().join("notes.txt"), "ignored").unwrap();
    let w = open(&dir.path().join("fresh.jsonl"), &opts());
    append(&w, r#"{"type":"session_info","name":"Fresh"}"#);
    w.close().unwrap();
    let list = list_sessions(dir.path()).unwrap();
    assert_eq!(list.len(), 5);
    let by = |n: &str| list.iter().find(|i| i.path.ends_with(n)).unwrap();
    assert_eq!(by("branches.jsonl").name.as_deref(), Some("Parser design"));
    assert_eq!(by("leaf-moves.jsonl").leaf_id.as_deref(), Some("i0000002"));
    assert_eq!(by("v3-basic.jsonl").leaf_id.as_deref(), Some("a0000006"));
    assert_eq!(
        by("codex-rollout.jsonl").error.as_ref().unwrap().code,
        ErrorCode::UnsupportedFormat
    );
    let fresh = by("fresh.jsonl");
    assert_eq!(
        (fresh.entry_count, fresh.message_count),
        (Some(1), Some(0)),
        "counts from the hint"
    );
}

#[test]
fn incremental_batches_cover_the_file_with_offsets() {
    let p = fixture("branches.jsonl");
    let bytes = std::fs::read(&p).unwrap();
    let mut inc = IncrementalFile::new(&p, 4, LoadOptions::default());
    let mut seen = vec![];
    while inc.has_more().unwrap() {
        let b = inc.load_next().unwrap();
        assert!(b.entries.len() <= 4);
        for (text, &off) in b.entries.iter().zip(&b.info.offsets) {
            assert!(bytes[off as usize..].starts_with(text.as_bytes()));
            seen.push(text.clone());
        }
        if b.info.done {
            break;
        }
    }
    assert_eq!(seen.len(), 15);
    inc.reset();
    assert_eq!(inc.load_next().unwrap().entries[0], seen[0]);
    // A torn tail stops the batches and is reported, without an endless loop.
    let mut inc = IncrementalFile::new(&fixture("torn-tail.jsonl"), 100, LoadOptions::default());
    let b = inc.load_next().unwrap();
    assert_eq!(b.entries.len(), 3);
    assert!(!inc.has_more().unwrap());
    // Corruption in the middle is an error with the line.
    let mut inc = IncrementalFile::new(
        &fixture("corrupt-middle.jsonl"),
        100,
        LoadOptions::default(),
    );
    let e = inc.load_next().unwrap_err();
    assert_eq!((e.code, e.line), (ErrorCode::CorruptedData, Some(3)));
}

#[test]
fn lazy_file_resume_and_stale_hint() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    let w = open(&p, &opts());
    let first = append(
        &w,
        r#"{"type":"message","message":{"role":"user","content":"a"}}"#,
    );
    for i in 0..50 {
        append(
            &w,
            &format!(r#"{{"type":"message","message":{{"role":"user","content":"{i}"}}}}"#),
        );
    }
    append(
        &w,
        &format!(
            r#"{{"type":"compaction","summary":"s","firstKeptEntryId":"{first}","tokensBefore":1}}"#
        ),
    );
    append(
        &w,
        r#"{"type":"message","message":{"role":"user","content":"after"}}"#,
    );
    w.close().unwrap();
    let lf = load_lazy(&p, LazyOptions::default()).unwrap();
    let m = lf.loader.metadata(false).unwrap();
    assert_eq!(m.mode, "hint");
    assert_eq!(m.entry_count, Some(53));
    // Another writer moves the leaf back to the first entry without updating the
    // hint: the hint's anchor is still on the path, so it still serves.
    let w = open(
        &p,
        &WriterOptions {
            hint: false,
            ..opts()
        },
    );
    w.submit(|c| c.move_leaf(Some(&first), 0))
        .map(|(_, t)| w.wait(t))
        .unwrap()
        .unwrap();
    w.close().unwrap();
    let lf = load_lazy(&p, LazyOptions::default()).unwrap();
    let full = read_session(&p, &LoadOptions::default()).unwrap();
    assert_eq!(
        lf.loader.context_json(false).unwrap(),
        full.context_json(None, false).unwrap()
    );
    assert_eq!(lf.loader.metadata(false).unwrap().mode, "hint");
    // Then it starts a new root: the anchor is off the path, the hint is bypassed
    // (the result stays exact) and replaced.
    let w = open(
        &p,
        &WriterOptions {
            hint: false,
            ..opts()
        },
    );
    w.submit(|c| c.move_leaf(None, 0))
        .map(|(_, t)| w.wait(t))
        .unwrap()
        .unwrap();
    append(
        &w,
        r#"{"type":"message","message":{"role":"user","content":"new root"}}"#,
    );
    w.close().unwrap();
    let lf = load_lazy(&p, LazyOptions::default()).unwrap();
    let full = read_session(&p, &LoadOptions::default()).unwrap();
    assert_eq!(
        lf.loader.context_json(false).unwrap(),
        full.context_json(None, false).unwrap()
    );
    assert!(lf.hint_written, "a stale hint is replaced");
}

#[test]
fn resume_after_a_rewind_reads_only_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    let w = open(&p, &opts());
    let filler = "x".repeat(1000);
    let mut ids = vec![];
    for i in 0..2000 {
        ids.push(append(
            &w,
            &format!(
                r#"{{"type":"message","message":{{"role":"user","content":"{i} {filler}"}}}}"#
            ),
        ));
    }
    // Rewind to an early entry (a checkpoint restore) and continue from there.
    w.submit(|c| c.move_leaf(Some(&ids[100]), 0))
        .map(|(_, t)| w.wait(t))
        .unwrap()
        .unwrap();
    append(
        &w,
        &format!(
            r#"{{"type":"compaction","summary":"s","firstKeptEntryId":"{}","tokensBefore":1}}"#,
            ids[95]
        ),
    );
    for i in 0..5 {
        append(
            &w,
            &format!(r#"{{"type":"message","message":{{"role":"user","content":"after {i}"}}}}"#),
        );
    }
    w.close().unwrap();
    let size = std::fs::metadata(&p).unwrap().len();
    let lf = load_lazy(&p, LazyOptions::default()).unwrap();
    let m = lf.loader.metadata(false).unwrap();
    assert_eq!(m.mode, "hint");
    assert!(
        m.bytes_read < 64 << 10,
        "read {} of {size} bytes",
        m.bytes_read
    );
    let full = read_session(&p, &LoadOptions::default()).unwrap();
    assert_eq!(
        lf.loader.context_json(false).unwrap(),
        full.context_json(None, false).unwrap()
    );
    assert_eq!(full.context(None).unwrap().messages.len(), 1 + 6 + 5);
}

#[test]
fn files_that_cannot_be_appended_to_are_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    for (name, code) in [
        ("corrupt-middle.jsonl", ErrorCode::CorruptedData),
        (
            "not-sessions/codex-rollout.jsonl",
            ErrorCode::UnsupportedFormat,
        ),
        ("not-sessions/binary.jsonl", ErrorCode::UnsupportedFormat),
        ("cycle.jsonl", ErrorCode::CorruptedData),
    ] {
        let p = dir.path().join(Path::new(name).file_name().unwrap());
        std::fs::copy(fixture(name), &p).unwrap();
        let before = std::fs::read(&p).unwrap();
        let e = FileWriter::open(&p, &opts(), 0, 1).err().unwrap();
        assert_eq!(e.code, code, "{name}");
        assert_eq!(std::fs::read(&p).unwrap(), before, "{name} was changed");
    }
    // A file holding only a torn first line (a crash while the header was written)
    // never had anything durable: it is started afresh.
    let p = dir.path().join("torn-header.jsonl");
    std::fs::write(&p, br#"{"type":"session","version":3,"id":"abc","times"#).unwrap();
    let (w, report) = FileWriter::open(
        &p,
        &WriterOptions {
            session_id: Some("fresh".into()),
            ..opts()
        },
        0,
        1,
    )
    .unwrap();
    assert!(report.created && report.repaired.is_some());
    w.close().unwrap();
    assert_eq!(
        read_session(&p, &LoadOptions::default())
            .unwrap()
            .header()
            .id,
        "fresh"
    );
    // A one-line file that is not a session header is not touched.
    let p = dir.path().join("other.jsonl");
    std::fs::write(&p, b"just some text").unwrap();
    assert_eq!(
        FileWriter::open(&p, &opts(), 0, 1).err().unwrap().code,
        ErrorCode::UnsupportedFormat
    );
    assert_eq!(std::fs::read(&p).unwrap(), b"just some text");
}

/// `meta.json` on disk holds none of the credentials of issue 12 (item 8):
/// neither when the agent is created nor when its configuration is changed
/// (the agent runtime over `FileStorage`), and what the store hands back is
/// what it wrote.
#[test]
fn agent_meta_on_disk_holds_no_credentials() {
    use forkpoint_core::agent::meta::{AgentMeta, MetaChanges};
    use forkpoint_core::agent::runtime::AgentRuntime;
    use forkpoint_core::storage::AgentStorage;
    use forkpoint_fs::FileStorage;
    use pollster::block_on;
    use serde_json::json;

    const KEY: &str = "sk-proj-Ab3dEfGh1jKlMnOpQrStUvWxYz0123456789";
    const ANT: &str = "sk-ant-api03-Ab3dEfGh1jKlMnOpQrStUvWxYz0123456789";
    const JWT: &str = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlMTIz";
    let secret_metadata = || {
        json!({
            "private_key": "plain-2", "privateKey": "plain-3", "OPENAI_KEY": "plain-4", "key": "plain-5",
            "bearer": "plain-6", "cookie": "plain-7", "passwd": "plain-8", "pwd": "plain-9", "pat": "plain-10",
            "tokens": { "access": "plain-11" }, "ＡＰＩ＿ＫＥＹ": "plain-12", "Api-Key": "plain-13", "APIKEY": "plain-14",
            "headers": [["Authorization", format!("Bearer {KEY}")], ["X-Api-Key", "plain-15"]],
            "proxy": "https://user:plain-16@proxy.example.com",
            "note": format!("keys {ANT} and {JWT}"),
            "maxTokens": 4096, "max_output_tokens": 1024, "tokenCount": 3, "tokensUsed": 4,
        })
    };
    let secret_meta = |id: &str| -> AgentMeta {
        serde_json::from_value(json!({
            "agentId": id,
            "model": { "provider": "openai", "model": "gpt-4o", "apiKey": "plain-1" },
            "cwd": "/home/user/project",
            "apiKey": "plain-17",
            "metadata": secret_metadata(),
        }))
        .unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let store = std::sync::Arc::new(FileStorage::new(dir.path()));
    let check = |id: &str| {
        let text = std::fs::read_to_string(dir.path().join(id).join("meta.json")).unwrap();
        for s in [KEY, ANT, JWT, "plain-"] {
            assert!(!text.contains(s), "meta.json holds {s}: {text}");
        }
        let disk: serde_json::Value = serde_json::from_str(&text).unwrap();
        let m = &disk["metadata"];
        assert_eq!(
            m["headers"],
            json!([["Authorization", "[redacted]"], ["X-Api-Key", "[redacted]"]])
        );
        assert_eq!(m["proxy"], "https://[redacted]@proxy.example.com");
        assert_eq!(m["note"], "keys [redacted] and [redacted]");
        assert_eq!(
            (m["maxTokens"].as_i64(), m["max_output_tokens"].as_i64()),
            (Some(4096), Some(1024))
        );
        assert_eq!(
            (m["tokenCount"].as_i64(), m["tokensUsed"].as_i64()),
            (Some(3), Some(4))
        );
        assert_eq!(
            disk["model"],
            json!({ "provider": "openai", "model": "gpt-4o" })
        );
        assert_eq!(disk["cwd"], "/home/user/project");
        // What the store hands back is what it wrote: listed, and the meta an
        // agent opened from it holds.
        let listed = block_on(store.list()).unwrap();
        let l = listed.iter().find(|l| l.id == id).unwrap();
        assert_eq!(l.meta.as_ref().unwrap(), text.as_bytes());
        disk
    };
    let rt = block_on(AgentRuntime::create(
        store.clone(),
        secret_meta("a"),
        vec![],
        1,
        1e12,
    ))
    .unwrap();
    check("a");
    let changes = MetaChanges {
        model: Some(
            serde_json::from_value(
                json!({ "provider": "openai", "model": "gpt-4o-mini", "apiKey": "plain-18" }),
            )
            .unwrap(),
        ),
        metadata: Some(serde_json::from_value(json!({ "more": secret_metadata() })).unwrap()),
        ..MetaChanges::default()
    };
    block_on(rt.change_meta(&changes, 1e12 + 1.0)).unwrap();
    let text = std::fs::read_to_string(dir.path().join("a").join("meta.json")).unwrap();
    assert!(
        text.contains("gpt-4o-mini"),
        "the change is on disk: {text}"
    );
    for s in [KEY, ANT, JWT, "plain-"] {
        assert!(
            !text.contains(s),
            "meta.json holds {s} after a change: {text}"
        );
    }
    block_on(rt.close()).unwrap();
    let rt = block_on(AgentRuntime::open(store.clone(), "a", vec![], 2)).unwrap();
    let q =
        block_on(rt.query(&serde_json::from_value(json!({ "kind": "meta" })).unwrap())).unwrap();
    let opened: serde_json::Value = serde_json::from_str(&q).unwrap();
    let disk: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        opened, disk,
        "an agent opened from the store holds what it wrote"
    );
    block_on(rt.close()).unwrap();
    // An id shaped like a key is a directory name already: meta.json keeps it and reopens.
    let id = "AKIAIOSFODNN7EXAMPLE";
    let mut meta = secret_meta(id);
    meta.lineage = vec![id.to_string()];
    let rt = block_on(AgentRuntime::create(store.clone(), meta, vec![], 1, 1e12)).unwrap();
    let disk = check(id);
    assert_eq!(
        (&disk["agentId"], &disk["lineage"]),
        (&json!(id), &json!([id]))
    );
    block_on(rt.close()).unwrap();
    let rt = block_on(AgentRuntime::open(store.clone(), id, vec![], 2)).unwrap();
    block_on(rt.close()).unwrap();
}
