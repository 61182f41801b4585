//! The session store over the in-memory storage (the IndexedDB backend runs the
//! JS contract suite: tests/js/store.test.mjs, tests/browser/).

use std::future::Future;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use forkpoint_core::normalize::import::ImportFormat;
use forkpoint_core::store::{
    CHUNK_BYTES, CheckpointOptions, Commit, Expect, ImportOptions, MemoryStorage, Op, Storage,
    Store, split_chunks,
};
use forkpoint_core::{Error, ErrorCode, LazyOptions, LoadOptions, Session};

use crate::common::{bytes, fixture, load};

/// Runs a future of the memory storage (it never waits).
fn run<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

fn real(name: &str) -> Vec<u8> {
    std::fs::read(fixture(&format!("../../../shared/fixtures/real/{name}"))).unwrap()
}

fn opts(source: &str) -> ImportOptions {
    ImportOptions {
        new_id: "new-session-1".into(),
        source: Some(source.into()),
        now_ms: 1_780_000_000_000,
        ..Default::default()
    }
}

fn store() -> Store<Rc<MemoryStorage>> {
    Store::new(Rc::new(MemoryStorage::new()), 7)
}

/// A pi v3 session of `n` user/assistant turns of about `size` bytes each.
fn big_session(n: usize, size: usize) -> Vec<u8> {
    let mut s = String::from(
        "{\"type\":\"session\",\"version\":3,\"id\":\"big-1\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n",
    );
    let pad = "x".repeat(size);
    let mut parent = "null".to_string();
    for i in 0..n {
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        let id = format!("{i:08x}");
        s.push_str(&format!(
            "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":\"2026-01-01T00:00:01.000Z\",\"message\":{{\"role\":\"{role}\",\"content\":[{{\"type\":\"text\",\"text\":\"{i} {pad}\"}}],\"timestamp\":1}}}}\n"
        ));
        parent = format!("\"{id}\"");
    }
    s.into_bytes()
}

#[test]
fn chunks_hold_whole_lines() {
    let b = big_session(3000, 1500);
    let (chunks, starts) = split_chunks(&b);
    assert!(chunks.len() >= 4, "{} chunks", chunks.len());
    assert_eq!(chunks.concat(), b);
    for (c, s) in chunks.iter().zip(&starts) {
        assert!(c.ends_with(b"\n"));
        assert!(c.len() <= CHUNK_BYTES + 2000);
        assert!(*s == 0 || b[*s as usize - 1] == b'\n');
    }
}

#[test]
fn import_list_load_export_pi_files() {
    let st = store();
    for name in ["branches.jsonl", "compactions.jsonl", "leaf-moves.jsonl"] {
        let b = bytes(name);
        let (info, summary) = run(st.import(b.clone(), &opts(name))).unwrap();
        let s = load(&b).unwrap();
        let m = s.metadata();
        assert_eq!(info.id, m.session_id, "{name}: the header id is the key");
        assert_eq!(
            (info.entry_count, info.message_count),
            (m.entry_count, m.message_count)
        );
        assert_eq!(info.leaf_id, m.leaf_id);
        assert_eq!(
            (info.source_bytes, info.changed, info.version),
            (0, false, 3)
        );
        assert_eq!(summary.entries, m.entry_count);
        assert_eq!(run(st.export(&info.id, true)).unwrap(), b, "{name}");
        let back = run(st.load(&info.id, &LoadOptions::default())).unwrap();
        assert_eq!(
            back.context_json(None, false).unwrap(),
            s.context_json(None, false).unwrap()
        );
        let lazy = run(st.load_lazy(&info.id, LazyOptions::default())).unwrap();
        assert_eq!(
            lazy.loader.context_json(false).unwrap(),
            s.context_json(None, false).unwrap()
        );
    }
    let list = run(st.list()).unwrap();
    assert_eq!(list.len(), 3);
    // The same file again: its id is taken.
    let e = run(st.import(bytes("branches.jsonl"), &opts("b"))).unwrap_err();
    assert_eq!(e.code, ErrorCode::AlreadyExists, "{e}");
    assert_eq!(run(st.list()).unwrap().len(), 3);
}

#[test]
fn other_formats_keep_their_bytes_until_changed() {
    let st = store();
    // pi v1 (migrated), Claude Code (converted), gzip (decompressed).
    let v1 = real("badlogic-pi-mono_large-session.jsonl");
    let cc = real("marot-spotter_subagent.jsonl");
    let gz = bytes("branches.jsonl.gz");
    let cases = [(v1, "pi", 1), (cc, "claude-code", 0), (gz, "pi", 3)];
    for (i, (b, fmt, version)) in cases.into_iter().enumerate() {
        let mut o = opts("x");
        o.id = Some(format!("s{i}"));
        let (info, _) = run(st.import(b.clone(), &o)).unwrap();
        assert_eq!((info.format.as_str(), info.version), (fmt, version));
        assert_eq!(info.source_bytes, b.len() as u64);
        assert_eq!(
            run(st.export(&info.id, true)).unwrap(),
            b,
            "original bytes back"
        );
        let pi = run(st.export(&info.id, false)).unwrap();
        let s = load(&pi).unwrap();
        assert_eq!(s.header().version, 3);
        assert_eq!(s.metadata().entry_count, info.entry_count);
        // A change: the export is the pi file from then on.
        run(st.append(
            &info.id,
            r#"{"type":"custom","customType":"note","data":1}"#,
            1,
        ))
        .unwrap();
        let after = run(st.export(&info.id, true)).unwrap();
        assert_eq!(&after[..pi.len()], &pi[..]);
        assert!(run(st.info(&info.id)).unwrap().changed);
    }
}

#[test]
fn bad_input_stores_nothing() {
    let st = store();
    let e = run(st.import(bytes("corrupt-middle.jsonl"), &opts("c.jsonl"))).unwrap_err();
    assert_eq!(e.code, ErrorCode::CorruptedData);
    assert!(e.line.is_some(), "{e:?}");
    let e = run(st.import(bytes("not-sessions/binary.jsonl"), &opts("b"))).unwrap_err();
    assert_eq!(e.code, ErrorCode::UnsupportedFormat);
    let mut o = opts("x");
    o.id = Some("../etc".into());
    let e = run(st.import(bytes("branches.jsonl"), &o)).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidId);
    assert!(run(st.list()).unwrap().is_empty());
    assert_eq!(st.storage().chunk_count(), 0);
    // A failing commit (quota) leaves nothing either, and keeps what was there.
    run(st.import(bytes("compactions.jsonl"), &opts("c"))).unwrap();
    *st.storage().fail_next_commit.borrow_mut() = Some(Error::new(ErrorCode::StorageFull, "quota"));
    let e = run(st.import(bytes("branches.jsonl"), &opts("b"))).unwrap_err();
    assert_eq!(e.code, ErrorCode::StorageFull);
    let list = run(st.list()).unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(
        run(st.export(&list[0].id, true)).unwrap(),
        bytes("compactions.jsonl")
    );
    assert_eq!(
        run(st.load("nope", &LoadOptions::default()))
            .err()
            .unwrap()
            .code,
        ErrorCode::NotFound
    );
}

#[test]
fn appends_across_chunks_and_lazy_agrees() {
    let st = store();
    let b = big_session(2000, 1500);
    let (info, _) = run(st.import(b.clone(), &opts("big"))).unwrap();
    let n0 = info.entry_count;
    let mut ids = vec![info.leaf_id.clone().unwrap()];
    // Enough appends to fill the last chunk and start new ones.
    let pad = "y".repeat(40_000);
    for i in 0..60 {
        let e = format!(
            r#"{{"type":"message","message":{{"role":"user","content":[{{"type":"text","text":"more {i} {pad}"}}],"timestamp":2}}}}"#
        );
        ids.push(run(st.append("big-1", &e, 1_780_000_000_000 + i)).unwrap());
    }
    let s = run(st.load("big-1", &LoadOptions::default())).unwrap();
    for w in ids.windows(2) {
        let parent = &s.entries()[s.index_of(&w[1]).unwrap() as usize].parent_id;
        assert_eq!(parent.as_deref(), Some(&*w[0]));
    }
    let last = ids.last().unwrap().clone();
    let info = run(st.info("big-1")).unwrap();
    assert_eq!(info.entry_count, n0 + 60);
    assert_eq!(info.leaf_id.as_deref(), Some(&*last));
    let full = run(st.load("big-1", &LoadOptions::default())).unwrap();
    let text = run(st.export("big-1", true)).unwrap();
    assert_eq!(&text[..b.len()], &b[..]);
    assert_eq!(text.len() as u64, info.bytes);
    let lazy = run(st.load_lazy("big-1", LazyOptions::default())).unwrap();
    assert_eq!(
        lazy.loader.context_json(false).unwrap(),
        full.context_json(None, false).unwrap()
    );
    // With maxMessages, older history comes page by page from the chunks.
    let lazy = std::cell::RefCell::new(
        run(st.load_lazy(
            "big-1",
            LazyOptions {
                max_messages: Some(10),
                ..Default::default()
            },
        ))
        .unwrap(),
    );
    let more = run(st.more_history(&lazy, 25)).unwrap();
    let v: serde_json::Value = serde_json::from_str(&more).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 25);
}

#[test]
fn move_leaf_fork_label_checkpoints_delete() {
    let st = store();
    let (info, _) = run(st.import(bytes("branches.jsonl"), &opts("branches.jsonl"))).unwrap();
    let id = info.id.clone();
    let s = load(&bytes("branches.jsonl")).unwrap();
    let leaves = s.leaves();
    let other = leaves
        .iter()
        .find(|l| Some(&l.id) != info.leaf_id.as_ref())
        .unwrap();
    let moved_info = run(st.move_leaf(&id, Some(&other.id), 5)).unwrap();
    assert_eq!(moved_info.leaf_id.as_deref(), Some(&*other.id));
    assert!(moved_info.changed);
    let moved = run(st.load(&id, &LoadOptions::default())).unwrap();
    assert_eq!(
        moved.context_json(None, false).unwrap(),
        s.context_json(Some(&other.id), false).unwrap()
    );
    assert_eq!(run(st.info(&id)).unwrap().leaf_id, Some(other.id.clone()));
    let e = run(st.move_leaf(&id, Some("nope"), 5)).unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound);
    run(st.set_label(&id, &other.id, Some("here"), 6)).unwrap();
    assert_eq!(
        run(st.load(&id, &LoadOptions::default()))
            .unwrap()
            .label(&other.id),
        Some("here")
    );

    // Fork: the path to the entry, parentSession set, context the same.
    let f = run(st.fork(&id, &other.id, "fork-1", 7)).unwrap();
    assert_eq!(f.parent_session.as_deref(), Some(&*id));
    let fs = run(st.load("fork-1", &LoadOptions::default())).unwrap();
    assert_eq!(
        fs.metadata().entry_count as usize,
        s.path_ids(&other.id).unwrap().len()
    );
    assert_eq!(
        fs.context_json(None, false).unwrap(),
        s.context_json(Some(&other.id), false).unwrap()
    );
    assert_eq!(
        run(st.fork(&id, "nope", "fork-2", 7)).unwrap_err().code,
        ErrorCode::NotFound
    );

    // Checkpoints.
    // (The label entry is the leaf now, as in pi.)
    let leaf = run(st.info(&id)).unwrap().leaf_id;
    let o = CheckpointOptions {
        id: Some("cp1".into()),
        label: Some("before".into()),
        event_seq: Some(41),
        ..Default::default()
    };
    let cp = run(st.save_checkpoint(&id, "unused", &o, 8)).unwrap();
    assert_eq!(cp.entry_id, leaf);
    run(st.move_leaf(&id, info.leaf_id.as_deref(), 9)).unwrap();
    let back = run(st.restore_checkpoint(&id, "cp1", 10)).unwrap();
    assert_eq!(back.event_seq, Some(41));
    assert_eq!(run(st.info(&id)).unwrap().leaf_id, leaf);
    assert_eq!(run(st.checkpoints(&id, 10)).unwrap().len(), 1);
    run(st.delete_checkpoint(&id, "cp1", 10)).unwrap();
    assert!(run(st.checkpoints(&id, 10)).unwrap().is_empty());

    run(st.save_checkpoint(&id, "cp2", &CheckpointOptions::default(), 11)).unwrap();
    run(st.delete(&id)).unwrap();
    assert_eq!(run(st.info(&id)).unwrap_err().code, ErrorCode::NotFound);
    assert_eq!(run(st.list()).unwrap().len(), 1, "the fork stays");
    let fork_chunks = st.storage().chunk_count();
    assert!(fork_chunks >= 1);
    run(st.delete("fork-1")).unwrap();
    assert_eq!(st.storage().chunk_count(), 0);
}

#[test]
fn two_handles_never_interleave() {
    let shared = Rc::new(MemoryStorage::new());
    let a = Store::new(shared.clone(), 1);
    let b = Store::new(shared.clone(), 2);
    run(a.import(bytes("compactions.jsonl"), &opts("c"))).unwrap();
    let id = run(a.list()).unwrap()[0].id.clone();
    let e = |t: &str| format!(r#"{{"type":"custom","customType":"{t}"}}"#);
    let x = run(a.append(&id, &e("a1"), 1)).unwrap();
    let y = run(b.append(&id, &e("b1"), 2)).unwrap();
    // `a` cached its writer; it sees `b`'s change and chains after it.
    let z = run(a.append(&id, &e("a2"), 3)).unwrap();
    let s = run(b.load(&id, &LoadOptions::default())).unwrap();
    let parent = |i: &str| {
        s.entries()[s.index_of(i).unwrap() as usize]
            .parent_id
            .clone()
            .unwrap()
    };
    assert_eq!(parent(&y).as_ref(), x.as_str());
    assert_eq!(parent(&z).as_ref(), y.as_str());
    // A commit guarded by a stale revision is refused whole.
    let before = run(a.export(&id, false)).unwrap();
    let e = run(shared.commit(Commit {
        guard: Some((
            id.clone(),
            Expect::Version {
                incarnation: 0,
                revision: 1,
            },
        )),
        ops: vec![Op::DeleteSession { id: id.clone() }],
    }))
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::Conflict);
    assert_eq!(run(a.export(&id, false)).unwrap(), before);
}

#[test]
fn explicit_formats_and_ids() {
    let st = store();
    let cc = real("marot-spotter_tool_heavy.jsonl");
    let mut o = opts("t.jsonl");
    o.format = Some(ImportFormat::Pi);
    assert_eq!(
        run(st.import(cc.clone(), &o)).unwrap_err().code,
        ErrorCode::UnsupportedFormat
    );
    o.format = Some(ImportFormat::ClaudeCode);
    o.id = Some("mine".into());
    let (info, summary) = run(st.import(cc, &o)).unwrap();
    assert_eq!(
        (info.id.as_str(), summary.session_id.as_str()),
        ("mine", "mine")
    );
    assert_eq!(summary.format, "claude-code");
    let s: Session = run(st.load(&info.id, &LoadOptions::default())).unwrap();
    assert_eq!(s.header().id, "mine");
}

#[test]
fn importing_the_same_claude_code_file_twice_is_already_exists_unless_a_copy() {
    let st = store();
    let cc = real("marot-spotter_tool_heavy.jsonl");
    let sid = "d6e0bada-1959-4eec-a9d2-0bfade768d8f";
    let (info, summary) = run(st.import(cc.clone(), &opts("t.jsonl"))).unwrap();
    assert_eq!((info.id.as_str(), summary.session_id.as_str()), (sid, sid));
    assert_eq!(
        run(st.load(sid, &LoadOptions::default()))
            .unwrap()
            .header()
            .id,
        sid
    );
    let e = run(st.import(cc.clone(), &opts("t.jsonl"))).unwrap_err();
    assert_eq!(e.code, ErrorCode::AlreadyExists, "{e}");
    assert!(e.message.contains(sid), "{e}");
    // A copy: under `new_id`, its header too.
    let mut o = opts("t.jsonl");
    o.copy = true;
    let (copy, summary) = run(st.import(cc.clone(), &o)).unwrap();
    assert_eq!(
        (copy.id.as_str(), summary.session_id.as_str()),
        ("new-session-1", "new-session-1")
    );
    assert_eq!(
        run(st.load("new-session-1", &LoadOptions::default()))
            .unwrap()
            .header()
            .id,
        "new-session-1"
    );
    // A session stored by 0.1.0 under a random id still opens; it does not
    // block the stable id (deleted and imported again, the id is the same).
    let mut old = opts("t.jsonl");
    old.id = Some("f6634f6b-bead-4574-8809-f2e735e4a199".into());
    run(st.import(cc.clone(), &old)).unwrap();
    let s = run(st.load(
        "f6634f6b-bead-4574-8809-f2e735e4a199",
        &LoadOptions::default(),
    ))
    .unwrap();
    assert_eq!(s.metadata().entry_count, info.entry_count);
    run(st.delete(sid)).unwrap();
    assert_eq!(run(st.import(cc, &opts("t.jsonl"))).unwrap().0.id, sid);
    assert_eq!(run(st.list()).unwrap().len(), 3);
}

#[test]
fn a_session_deleted_and_imported_again_is_another_session() {
    // Handle `a` caches its writer; `b` deletes the session and imports another
    // file under the same id, then changes it to the same revision number.
    let shared = Rc::new(MemoryStorage::new());
    let a = Store::new(shared.clone(), 1);
    let b = Store::new(shared.clone(), 2);
    let mut o = opts("x");
    o.id = Some("sess".into());
    run(a.import(big_session(2400, 1500), &o)).unwrap();
    let note = |t: &str| format!(r#"{{"type":"custom","customType":"{t}"}}"#);
    run(a.append("sess", &note("a1"), 1)).unwrap();
    run(b.delete("sess")).unwrap();
    run(b.import(bytes("compactions.jsonl"), &o)).unwrap();
    let kept = run(b.append("sess", &note("b1"), 2)).unwrap();
    run(a.append("sess", &note("a2"), 3)).unwrap();
    let text = run(a.export("sess", false)).unwrap();
    let c = bytes("compactions.jsonl");
    assert_eq!(
        &text[..c.len()],
        &c[..],
        "b's session is kept, a's append goes after it"
    );
    let s = load(&text).unwrap();
    assert!(s.index_of(&kept).is_ok());
}

#[test]
fn fork_through_leaf_entries() {
    let st = store();
    for (name, at) in [
        ("leaf-moves.jsonl", None),
        ("leaf-moves-then-append.jsonl", Some("j0000005")),
        ("leaf-moves-then-append.jsonl", Some("j0000004")),
    ] {
        let b = bytes(name);
        let s = load(&b).unwrap();
        let id = s.header().id.to_string();
        if run(st.info(&id)).is_err() {
            run(st.import(b.clone(), &opts(name))).unwrap();
        }
        // Every entry of the file, or the one given.
        let ids: Vec<String> = match at {
            Some(x) => vec![x.to_string()],
            None => s.entries().iter().map(|e| e.id.to_string()).collect(),
        };
        for (n, eid) in ids.iter().enumerate() {
            let new_id = format!("f-{n}-{eid}");
            match s.context_json(Some(eid), false) {
                Ok(want) => {
                    run(st.fork(&id, eid, &new_id, 1)).unwrap();
                    let f = run(st.load(&new_id, &LoadOptions::default())).unwrap();
                    assert_eq!(
                        f.context_json(None, false).unwrap(),
                        want,
                        "{name}: fork at {eid}"
                    );
                    run(st.delete(&new_id)).unwrap();
                }
                Err(e) => {
                    let got = run(st.fork(&id, eid, &new_id, 1)).unwrap_err();
                    assert_eq!(got.code, e.code, "{name}: fork at {eid}");
                }
            }
        }
    }
}

#[test]
fn damaged_records_are_listed_with_their_error_and_can_be_deleted() {
    let shared = Rc::new(MemoryStorage::new());
    let st = Store::new(shared.clone(), 1);
    run(st.import(bytes("branches.jsonl"), &opts("b"))).unwrap();
    for (id, record) in [("bad", "{not json"), ("newer", r#"{"recordVersion":99}"#)] {
        run(shared.commit(Commit {
            guard: None,
            ops: vec![Op::PutSession {
                id: id.into(),
                record: record.into(),
            }],
        }))
        .unwrap();
    }
    let list = run(st.list()).unwrap();
    assert_eq!(list.len(), 3);
    let code = |id: &str| {
        list.iter()
            .find(|i| i.id == id)
            .unwrap()
            .error
            .as_ref()
            .map(|e| e.code)
    };
    assert_eq!(code("bad"), Some(ErrorCode::CorruptedData));
    assert_eq!(code("newer"), Some(ErrorCode::UnsupportedFormat));
    assert_eq!(list.iter().filter(|i| i.error.is_none()).count(), 1);
    run(st.delete("bad")).unwrap();
    run(st.delete("newer")).unwrap();
    assert_eq!(run(st.list()).unwrap().len(), 1);
}

#[test]
fn checkpoint_ids_and_format_mismatches_are_refused() {
    let st = store();
    let (info, _) = run(st.import(bytes("branches.jsonl"), &opts("b"))).unwrap();
    let o = CheckpointOptions::default();
    run(st.save_checkpoint(&info.id, "cp", &o, 1)).unwrap();
    let e = run(st.save_checkpoint(&info.id, "cp", &o, 2)).unwrap_err();
    assert_eq!(e.code, ErrorCode::AlreadyExists);
    let mut o = opts("c");
    o.format = Some(ImportFormat::ClaudeCode);
    let e = run(st.import(bytes("compactions.jsonl"), &o)).unwrap_err();
    assert_eq!(e.code, ErrorCode::UnsupportedFormat);
    assert!(e.message.contains("pi session"), "{e}");
}

/// A gzip file: a pi header, then `n` copies of one line (about 1000:1).
fn gzip_bomb(n: usize) -> Vec<u8> {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(b"{\"type\":\"session\",\"version\":3,\"id\":\"bomb-1\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n").unwrap();
    let line = format!(
        "{{\"type\":\"custom\",\"customType\":\"x\",\"id\":\"e1\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"data\":\"{}\"}}\n",
        "x".repeat(400)
    );
    for _ in 0..n {
        enc.write_all(line.as_bytes()).unwrap();
    }
    enc.finish().unwrap()
}

#[test]
fn importing_a_gzip_bomb_stops_at_the_limits() {
    let bomb = gzip_bomb(40_000);
    let st = store();
    let e = run(st.import(bomb.clone(), &opts("bomb.jsonl.gz"))).unwrap_err();
    assert_eq!(e.code, ErrorCode::LimitExceeded, "{e}");
    assert!(e.message.contains("maxCompressionRatio"), "{e}");
    for (limits, name) in [
        (
            forkpoint_core::LimitOptions {
                max_compression_ratio: 0,
                max_decompressed_bytes: 1 << 20,
                ..Default::default()
            },
            "maxDecompressedBytes",
        ),
        (
            forkpoint_core::LimitOptions {
                max_compression_ratio: 0,
                max_entries: 100,
                ..Default::default()
            },
            "maxEntries",
        ),
        (
            forkpoint_core::LimitOptions {
                max_compression_ratio: 0,
                max_line_bytes: 100,
                ..Default::default()
            },
            "maxLineBytes",
        ),
        (
            forkpoint_core::LimitOptions {
                max_file_bytes: bomb.len() as u64 - 1,
                ..Default::default()
            },
            "maxFileBytes",
        ),
    ] {
        let o = ImportOptions {
            limits: limits.clone(),
            ..opts("bomb.jsonl.gz")
        };
        let e = run(st.import(bomb.clone(), &o)).unwrap_err();
        assert_eq!(e.code, ErrorCode::LimitExceeded, "{name}: {e}");
        assert!(e.message.contains(name), "{name}: {e}");
        let e = forkpoint_core::normalize::import::import_session_with(
            &bomb,
            ImportFormat::Auto,
            Some("x"),
            "2026-01-01T00:00:00.000Z",
            &limits,
        )
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::LimitExceeded, "{name}: {e}");
    }
    assert!(run(st.list()).unwrap().is_empty(), "nothing was stored");
    // Past the ratio limit the file is read (a normal gzip import).
    let o = ImportOptions {
        limits: forkpoint_core::LimitOptions {
            max_compression_ratio: 0,
            ..Default::default()
        },
        ..opts("bomb.jsonl.gz")
    };
    let (info, _) = run(st.import(gzip_bomb(100), &o)).unwrap();
    assert_eq!(info.entry_count, 100);
    assert!(info.gzip);
}
