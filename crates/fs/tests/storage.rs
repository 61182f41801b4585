//! `FileStorage`: the storage contract on real files, stores written by 0.1.0,
//! and what only files have (OS locks, the lock's generation, repairs).

use std::cell::Cell;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use forkpoint_core::ErrorCode;
use forkpoint_core::eventlog::Since;
use forkpoint_core::events::{EventFilter, parse_event_line};
use forkpoint_core::storage::contract::{self, Backend, Expect, entry_line, event_line};
use forkpoint_core::storage::{AgentStorage, Lease, WriteBatch};
use forkpoint_fs::FileStorage;
use pollster::block_on;
use serde_json::{Value, json};

/// Stores in subdirectories of one temporary directory.
struct Files {
    dir: tempfile::TempDir,
    n: Cell<u32>,
}

impl Files {
    fn new() -> Files {
        Files {
            dir: tempfile::tempdir().unwrap(),
            n: Cell::new(0),
        }
    }
}

fn append_to(path: &Path, bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    let mut f = fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(bytes).unwrap();
}

impl Backend for Files {
    type Store = FileStorage;

    fn fresh(&self) -> FileStorage {
        self.n.set(self.n.get() + 1);
        FileStorage::new(self.dir.path().join(format!("store-{}", self.n.get())))
    }

    fn second(&self, store: &FileStorage) -> Option<FileStorage> {
        Some(FileStorage::new(store.root()))
    }

    fn append_raw(&self, store: &FileStorage, id: &str, session: &[u8], events: &[u8]) {
        let dir = store.root().join(id);
        append_to(&dir.join("session.jsonl"), session);
        append_to(&dir.join("events.jsonl"), events);
    }
}

macro_rules! contract_tests {
    ($($check:ident),* $(,)?) => {
        mod contract_on_files {
            use super::*;
            $(
                #[test]
                fn $check() {
                    block_on(contract::$check(&Files::new()));
                }
            )*
            #[test]
            fn every_check_is_run() {
                let here = [$(stringify!($check)),*];
                assert_eq!(here.as_slice(), contract::CHECKS);
            }
        }
    };
}

contract_tests!(
    create_then_already_exists,
    acquire_missing_agent,
    acquire_while_held,
    release_then_acquire_grows_token,
    stale_lease_is_lost,
    writes_are_ordered_and_durable,
    torn_tails_are_cut_on_acquire,
    read_session_clamps,
    list_is_sorted_with_meta,
    exists_and_delete,
    batch_at_wrong_offset_is_refused,
    second_handle_sees_writes,
);

// -- helpers -----------------------------------------------------------------

/// Every file under `dir` (relative path → bytes), sorted.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    fn walk(base: &Path, d: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
        for e in fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(base, &p, out);
            } else {
                let rel = p.strip_prefix(base).unwrap().to_path_buf();
                out.push((rel, fs::read(&p).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// `tree` without the `LOCK` files (rewritten by every acquisition).
fn data_tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    tree(dir)
        .into_iter()
        .filter(|(p, _)| p.file_name().is_none_or(|n| n != "LOCK"))
        .collect()
}

fn lock_text(root: &Path, id: &str) -> String {
    fs::read_to_string(root.join(id).join("LOCK")).unwrap()
}

fn create(s: &FileStorage, id: &str) -> (Expect, Lease) {
    let (e, init) = Expect::new(id);
    let lease = block_on(s.create(id, &init)).unwrap();
    (e, lease)
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            fs::copy(&p, &dest).unwrap();
        }
    }
}

// -- locks and tokens ----------------------------------------------------------

#[test]
fn two_objects_on_one_root_exclude_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let a = FileStorage::new(dir.path());
    let b = FileStorage::new(dir.path());
    let (mut e, lease) = create(&a, "agent");
    let err = block_on(b.acquire("agent")).unwrap_err();
    assert_eq!(err.code, ErrorCode::AgentLocked);
    assert!(
        err.message
            .contains(&format!("held by pid {}", std::process::id())),
        "names the holder: {}",
        err.message
    );
    assert!(!err.message.contains(" gen "), "{}", err.message);
    assert_eq!(
        block_on(b.delete("agent")).unwrap_err().code,
        ErrorCode::AgentLocked
    );
    // b cannot write with a's lease: it does not hold it.
    let batch = e.peek(1, 1, true);
    assert_eq!(
        block_on(b.write(&lease, &batch)).unwrap_err().code,
        ErrorCode::LeaseLost
    );
    assert!(b.events("agent").is_none());
    block_on(a.release(&lease)).unwrap();
    let lb = block_on(b.acquire("agent")).unwrap();
    assert!(lb.token > lease.token);
    assert_eq!(
        block_on(a.acquire("agent")).unwrap_err().code,
        ErrorCode::AgentLocked
    );
    let batch = e.step(1, 1, false);
    block_on(b.write(&lb, &batch)).unwrap();
    block_on(contract::check_stored(&a, &e, "written by b, read by a"));
}

#[test]
fn the_token_is_the_lock_generation_and_survives_the_object() {
    let dir = tempfile::tempdir().unwrap();
    let mut last = {
        let s = FileStorage::new(dir.path());
        let (_, lease) = create(&s, "a");
        assert_eq!(
            lock_text(dir.path(), "a"),
            format!(
                "pid {} on {} gen {}",
                std::process::id(),
                fs::read_to_string("/etc/hostname")
                    .unwrap_or_default()
                    .trim(),
                lease.token
            )
        );
        block_on(s.release(&lease)).unwrap();
        lease.token
    };
    for _ in 0..3 {
        // A new object (a new process, as far as the store can tell).
        let s = FileStorage::new(dir.path());
        let lease = block_on(s.acquire("a")).unwrap();
        assert!(lease.token > last, "{} after {last}", lease.token);
        assert!(lock_text(dir.path(), "a").ends_with(&format!(" gen {}", lease.token)));
        last = lease.token;
        // Dropped without release: the OS lock goes with the files.
    }
    // A lock text as 0.1.0 writes it (no generation) in a fresh process: 1.
    fs::write(dir.path().join("a/LOCK"), "pid 1 on old-host").unwrap();
    let s = FileStorage::new(dir.path());
    let l = block_on(s.acquire("a")).unwrap();
    assert_eq!(l.token, 1);
    block_on(s.release(&l)).unwrap();
    // The same object never goes back, whatever LOCK says.
    let l2 = block_on(s.acquire("a")).unwrap();
    assert_eq!(l2.token, 2);
    block_on(s.release(&l2)).unwrap();
    fs::write(dir.path().join("a/LOCK"), "pid 1 on old-host").unwrap();
    let l3 = block_on(s.acquire("a")).unwrap();
    assert_eq!(l3.token, 3, "above the last token this object handed out");
    // A longer old text cut to the new one's length.
    block_on(s.release(&l3)).unwrap();
    fs::write(
        dir.path().join("a/LOCK"),
        format!(
            "pid 1 on a-very-long-host-name-indeed gen 40{}",
            " ".repeat(100)
        ),
    )
    .unwrap();
    let l4 = block_on(s.acquire("a")).unwrap();
    assert_eq!(l4.token, 41);
    assert!(lock_text(dir.path(), "a").ends_with(" gen 41"));
}

#[test]
fn a_stale_write_leaves_every_file_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let s = FileStorage::new(dir.path());
    let (mut e, l1) = create(&s, "a");
    let batch = e.step(2, 2, true);
    block_on(s.write(&l1, &batch)).unwrap();
    block_on(s.release(&l1)).unwrap();
    let l2 = block_on(s.acquire("a")).unwrap();
    let before = tree(dir.path());
    let mut stale = e.peek(1, 1, true);
    stale.hint = Some(b"{}".to_vec());
    assert_eq!(
        block_on(s.write(&l1, &stale)).unwrap_err().code,
        ErrorCode::LeaseLost
    );
    assert_eq!(tree(dir.path()), before, "nothing on disk changed");
    // A refused batch (wrong offset, or events that do not continue the log) too.
    let mut bad = e.peek(1, 1, true);
    bad.session_at += 1;
    assert_eq!(
        block_on(s.write(&l2, &bad)).unwrap_err().code,
        ErrorCode::Internal
    );
    let mut gap = e.peek(1, 2, true);
    gap.events.remove(0);
    assert_eq!(
        block_on(s.write(&l2, &gap)).unwrap_err().code,
        ErrorCode::Internal
    );
    let mut back = e.peek(1, 1, true);
    back.events = vec![event_line(1)];
    assert_eq!(
        block_on(s.write(&l2, &back)).unwrap_err().code,
        ErrorCode::Internal
    );
    let mut lying = e.peek(1, 1, true);
    lying.events[0].line = event_line(e.last_seq().unwrap() + 2).line;
    assert_eq!(
        block_on(s.write(&l2, &lying)).unwrap_err().code,
        ErrorCode::Internal,
        "a line whose seq is not its meta's"
    );
    assert_eq!(
        tree(dir.path()),
        before,
        "nothing of a refused batch landed"
    );
    // The holder goes on.
    let batch = e.step(1, 1, true);
    block_on(s.write(&l2, &batch)).unwrap();
    block_on(contract::check_stored(&s, &e, "after refused batches"));
}

// -- layout and repairs --------------------------------------------------------

#[test]
fn files_are_where_0_1_0_keeps_them() {
    let dir = tempfile::tempdir().unwrap();
    let s = FileStorage::new(dir.path());
    let (mut e, lease) = create(&s, "a");
    let mut batch = e.step(1, 2, true);
    batch.hint = Some(b"{\"format\":\"x\"}".to_vec());
    block_on(s.write(&lease, &batch)).unwrap();
    let a = dir.path().join("a");
    assert_eq!(fs::read(a.join("session.jsonl")).unwrap(), e.session);
    let events: Vec<u8> = e
        .events
        .iter()
        .flat_map(|l| format!("{l}\n").into_bytes())
        .collect();
    assert_eq!(fs::read(a.join("events.jsonl")).unwrap(), events);
    assert_eq!(fs::read(a.join("meta.json")).unwrap(), e.meta);
    assert_eq!(
        fs::read(a.join("session.jsonl.idx.json")).unwrap(),
        b"{\"format\":\"x\"}"
    );
    let h = block_on(s.head(&lease)).unwrap();
    assert_eq!(h.hint.as_deref(), Some(&b"{\"format\":\"x\"}"[..]));
    // No temporary file left behind by the atomic replaces.
    for (p, _) in tree(dir.path()) {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        assert!(!name.starts_with('.'), "left behind: {}", p.display());
    }
    block_on(s.release(&lease)).unwrap();
    // The session file is a pi session the current reader loads.
    let session =
        forkpoint_fs::read_session(&a.join("session.jsonl"), &Default::default()).unwrap();
    assert_eq!(session.leaf_id(), Some("e2"));
}

#[test]
fn a_whole_last_line_without_its_newline_gets_it() {
    let dir = tempfile::tempdir().unwrap();
    let s = FileStorage::new(dir.path());
    let (mut e, lease) = create(&s, "a");
    block_on(s.release(&lease)).unwrap();
    // A complete entry whose newline never came: kept (FORMAT.md §7).
    let line = entry_line(2);
    let whole = line.trim_end().as_bytes();
    Files::new().append_raw(&s, "a", whole, b"");
    let lease = block_on(s.acquire("a")).unwrap();
    e.session.extend_from_slice(line.as_bytes());
    assert_eq!(
        block_on(s.read_session("a", 0, u64::MAX)).unwrap(),
        e.session
    );
    assert_eq!(
        block_on(s.head(&lease)).unwrap().session_len,
        e.session.len() as u64
    );
}

#[test]
fn a_corrupt_whole_last_line_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let s = FileStorage::new(dir.path());
    let (_, lease) = create(&s, "a");
    block_on(s.release(&lease)).unwrap();
    Files::new().append_raw(&s, "a", b"{\"type\":\"message\",\"id\":\n", b"");
    let before = data_tree(dir.path());
    for _ in 0..2 {
        let err = block_on(s.acquire("a")).unwrap_err();
        assert_eq!(err.code, ErrorCode::CorruptedData, "{}", err.message);
        assert_eq!(data_tree(dir.path()), before, "nothing changed");
    }
    // Not held after the failure: a second object gets the same answer.
    let other = FileStorage::new(dir.path());
    assert_eq!(
        block_on(other.acquire("a")).unwrap_err().code,
        ErrorCode::CorruptedData
    );
    // A torn first line that is not a session header is not cut either.
    let dir2 = tempfile::tempdir().unwrap();
    let s2 = FileStorage::new(dir2.path());
    let (_, lease) = create(&s2, "b");
    block_on(s2.release(&lease)).unwrap();
    fs::write(dir2.path().join("b/session.jsonl"), b"not a session").unwrap();
    assert_eq!(
        block_on(s2.acquire("b")).unwrap_err().code,
        ErrorCode::UnsupportedFormat
    );
    assert_eq!(
        fs::read(dir2.path().join("b/session.jsonl")).unwrap(),
        b"not a session"
    );
    // A header cut short is: the session starts afresh.
    fs::write(dir2.path().join("b/session.jsonl"), b"{\"type\":\"sess").unwrap();
    let lease = block_on(s2.acquire("b")).unwrap();
    assert_eq!(block_on(s2.head(&lease)).unwrap().session_len, 0);
}

#[test]
fn ids_are_checked_before_the_file_system() {
    let dir = tempfile::tempdir().unwrap();
    let s = FileStorage::new(dir.path().join("store"));
    let (_, init) = Expect::new("x");
    for bad in ["", "..", "a/b", "../x", ".hidden", "CON", "a\0b"] {
        assert_eq!(
            block_on(s.create(bad, &init)).unwrap_err().code,
            ErrorCode::InvalidId,
            "{bad:?}"
        );
        assert_eq!(
            block_on(s.acquire(bad)).unwrap_err().code,
            ErrorCode::InvalidId
        );
        assert_eq!(
            block_on(s.exists(bad)).unwrap_err().code,
            ErrorCode::InvalidId
        );
        assert_eq!(
            block_on(s.delete(bad)).unwrap_err().code,
            ErrorCode::InvalidId
        );
        assert_eq!(
            block_on(s.read_session(bad, 0, 1)).unwrap_err().code,
            ErrorCode::InvalidId
        );
    }
    assert!(!dir.path().join("store").exists(), "nothing was created");
}

#[test]
fn list_skips_what_is_not_an_agent() {
    let dir = tempfile::tempdir().unwrap();
    let s = FileStorage::new(dir.path());
    let (e, lease) = create(&s, "a");
    block_on(s.release(&lease)).unwrap();
    fs::write(dir.path().join("README.md"), "not an agent").unwrap();
    fs::create_dir(dir.path().join("half")).unwrap(); // a create that died before meta.json
    fs::create_dir(dir.path().join(".hidden")).unwrap();
    fs::create_dir_all(dir.path().join("broken")).unwrap();
    fs::create_dir(dir.path().join("broken/meta.json")).unwrap(); // unreadable meta
    let listed = block_on(s.list()).unwrap();
    let ids: Vec<&str> = listed.iter().map(|l| l.id.as_str()).collect();
    assert_eq!(ids, ["a", "broken"]);
    assert_eq!(listed[0].meta.as_ref().unwrap(), &e.meta);
    assert_eq!(
        listed[1].meta.as_ref().unwrap_err().code,
        ErrorCode::InvalidInput
    );
    assert!(!block_on(s.exists("half")).unwrap());
    assert_eq!(
        block_on(s.acquire("half")).unwrap_err().code,
        ErrorCode::AgentNotFound
    );
    // A create over what a dead create left behind.
    fs::write(dir.path().join("half/session.jsonl"), "garbage").unwrap();
    fs::write(dir.path().join("half/events.jsonl"), "garbage").unwrap();
    let (e, init) = Expect::new("half");
    block_on(s.create("half", &init)).unwrap();
    block_on(contract::check_stored(&s, &e, "created over leftovers"));
}

// -- live events ---------------------------------------------------------------

#[test]
fn subscribers_see_each_write_s_events() {
    let dir = tempfile::tempdir().unwrap();
    let s = FileStorage::new(dir.path());
    let (mut e, lease) = create(&s, "a");
    let log = s.events("a").expect("a held agent's event log");
    let sub = log.subscribe(EventFilter::default(), Since::Live).unwrap();
    assert_eq!(log.poll_json(sub, 100).unwrap(), "{\"kind\":\"pending\"}");
    let batch = e.step(1, 3, false);
    block_on(s.write(&lease, &batch)).unwrap();
    let poll: Value = serde_json::from_str(&log.poll_json(sub, 100).unwrap()).unwrap();
    let seqs: Vec<u64> = poll["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, [3, 4, 5]);
    // Live handlers get every event committed since the log was opened: the
    // create's two, then the write's three.
    let live: Value = serde_json::from_str(&log.drain_live_json().unwrap()).unwrap();
    let seqs: Vec<u64> = live
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5]);
    assert_eq!(log.drain_live_json().unwrap(), "[]");
    block_on(s.release(&lease)).unwrap();
    assert!(s.events("a").is_none(), "released");
    // The log handed out stays readable after the release.
    assert_eq!(
        log.last_bookmark().unwrap().map(|b| b.seq),
        Some(5),
        "still readable"
    );
}

// -- stores written by 0.1.0 ---------------------------------------------------

const FIXTURE_ID: &str = "agt-fixture";

fn fixture_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/agent-store-0.1.0")
}

/// What 0.1.0's agent code read when it opened agent `id` (its session
/// through a session writer, which repairs a torn tail, its event log, its
/// `meta.json`, which had to be an object naming the agent): the meta, whether
/// the writer repaired the session, the last event's seq and the context.
fn open_as_0_1_0(root: &Path, id: &str) -> (Value, bool, Option<u64>, Value) {
    use forkpoint_core::{Durability, EventLogOptions, WriterOptions};
    let dir = root.join(id);
    let meta: Value = serde_json::from_slice(&fs::read(dir.join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["agentId"], id, "meta.json names the agent");
    let opts = WriterOptions {
        durability: Durability::Group,
        ..WriterOptions::default()
    };
    let (writer, report) =
        forkpoint_fs::FileWriter::open(&dir.join("session.jsonl"), &opts, 1, 1).unwrap();
    writer.close().unwrap();
    let session =
        forkpoint_fs::read_session(&dir.join("session.jsonl"), &Default::default()).unwrap();
    forkpoint_core::agent::AgentCore::from_session(&session).unwrap();
    let ctx: Value = serde_json::from_str(&session.context_json(None, false).unwrap()).unwrap();
    let eopts = EventLogOptions {
        durability: Durability::Group,
        ..EventLogOptions::default()
    };
    let (events, _) =
        forkpoint_fs::events::FileEventLog::open(&dir.join("events.jsonl"), &eopts).unwrap();
    let last = events.last_bookmark().unwrap().map(|b| b.seq);
    events.close().unwrap();
    (meta, report.repaired.is_some(), last, ctx)
}

/// Opens agent `id` of a store 0.1.0 wrote in `root` and checks head, reads
/// and a write that continues it; then what 0.1.0's code read of an agent
/// reads what FileStorage wrote.
fn check_0_1_0_store(root: &Path, id: &str) {
    let dir = root.join(id);
    let session = fs::read(dir.join("session.jsonl")).unwrap();
    let events = fs::read_to_string(dir.join("events.jsonl")).unwrap();
    let meta = fs::read(dir.join("meta.json")).unwrap();
    let last = parse_event_line(events.lines().last().unwrap(), 512).unwrap();

    let s = FileStorage::new(root);
    let listed = block_on(s.list()).unwrap();
    let l = listed.iter().find(|l| l.id == id).expect("listed");
    assert_eq!(l.meta.as_ref().unwrap(), &meta);
    let lease = block_on(s.acquire(id)).unwrap();
    let h = block_on(s.head(&lease)).unwrap();
    assert_eq!(h.meta, meta);
    assert_eq!(h.session_len, session.len() as u64);
    assert_eq!(h.last_event, Some(last.bookmark()));
    assert_eq!(h.hint, fs::read(dir.join("session.jsonl.idx.json")).ok());
    assert_eq!(
        block_on(s.read_session(id, 0, u64::MAX)).unwrap(),
        session,
        "the session unchanged"
    );
    let lines: Vec<String> = block_on(s.read_events(id, None, usize::MAX))
        .unwrap()
        .iter()
        .map(|l| l.to_string())
        .collect();
    assert_eq!(lines, events.lines().collect::<Vec<_>>());

    // Writing continues both logs.
    let parsed =
        forkpoint_fs::read_session(&dir.join("session.jsonl"), &Default::default()).unwrap();
    let leaf = parsed.leaf_id().unwrap().to_string();
    let entry = json!({
        "type": "message", "id": "f0000001", "parentId": leaf,
        "timestamp": "2026-03-01T10:01:00.000Z",
        "message": { "role": "user", "content": [{ "type": "text", "text": "Again?" }], "timestamp": 1 },
    });
    let (line, meta_ev) = forkpoint_core::events::build_event_line(
        r#"{"type":"agent_resumed","strategy":"manual"}"#,
        last.seq + 1,
        1_772_359_300_000,
        512,
    )
    .unwrap();
    let mut new_meta: Value = serde_json::from_slice(&meta).unwrap();
    new_meta["updatedAt"] = json!("2026-03-01T10:01:00.000Z");
    let new_meta = serde_json::to_vec_pretty(&new_meta).unwrap();
    let batch = WriteBatch {
        session: format!("{entry}\n").into_bytes(),
        session_at: h.session_len,
        events: vec![forkpoint_core::storage::EventLine {
            meta: meta_ev,
            line: line.clone().into(),
        }],
        meta: Some(new_meta.clone()),
        hint: None,
        state: None,
    };
    block_on(s.write(&lease, &batch)).unwrap();
    let h2 = block_on(s.head(&lease)).unwrap();
    assert_eq!(h2.last_event.unwrap().seq, last.seq + 1);
    assert_eq!(
        h2.session_len,
        session.len() as u64 + batch.session.len() as u64
    );
    assert_eq!(h2.meta, new_meta);
    assert_eq!(
        block_on(s.tail_events(id, 1)).unwrap(),
        vec![std::sync::Arc::<str>::from(line)]
    );
    block_on(s.release(&lease)).unwrap();

    // What 0.1.0's code read of an agent reads what FileStorage wrote.
    let (meta, repaired, last_seq, ctx) = open_as_0_1_0(root, id);
    assert!(!repaired);
    assert_eq!(meta["updatedAt"], "2026-03-01T10:01:00.000Z");
    assert_eq!(last_seq, Some(last.seq + 1));
    let msgs = ctx["messages"].as_array().unwrap();
    assert_eq!(msgs.last().unwrap()["content"][0]["text"], "Again?");
    // And FileStorage after it (0.1.0 wrote its lock text without a generation).
    let lease2 = block_on(s.acquire(id)).unwrap();
    assert!(lease2.token > lease.token);
}

#[test]
fn the_committed_0_1_0_store_opens_unchanged() {
    let src = fixture_root();
    assert!(
        src.join(FIXTURE_ID).join("meta.json").exists(),
        "the fixture is committed"
    );
    assert!(
        src.join(FIXTURE_ID).join("session.jsonl.idx.json").exists(),
        "0.1.0 left a resume hint"
    );
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&src.join(FIXTURE_ID), &dir.path().join(FIXTURE_ID));
    check_0_1_0_store(dir.path(), FIXTURE_ID);
}

fn node_fixture_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/agent-store-0.1.0-node/store")
}

/// The store the 0.1.0 Node `Agent` wrote (three agents: one waiting for a
/// decision, its fork, one killed while its tool ran) opens the same way.
#[test]
fn the_committed_0_1_0_node_store_opens_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&node_fixture_root(), dir.path());
    let mut ids: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    ids.sort();
    assert_eq!(ids.len(), 3);
    let listed: Vec<String> = block_on(FileStorage::new(dir.path()).list())
        .unwrap()
        .into_iter()
        .map(|l| l.id)
        .collect();
    assert_eq!(listed, ids);
    for id in &ids {
        check_0_1_0_store(dir.path(), id);
    }
}

// -- inspect (forkpoint show) --------------------------------------------------

/// `inspect` of the stores 0.1.0 wrote: where each agent stood, its open
/// calls, snapshots and checkpoints, read without taking a lease.
#[test]
fn inspect_reads_the_0_1_0_stores() {
    use forkpoint_fs::inspect::inspect;
    let files = |root: &Path| -> Vec<(PathBuf, Vec<u8>)> {
        let mut v: Vec<_> = fs::read_dir(root)
            .unwrap()
            .map(|e| {
                let p = e.unwrap().path();
                let b = fs::read(&p).unwrap();
                (p, b)
            })
            .collect();
        v.sort();
        v
    };
    let before = files(&fixture_root().join(FIXTURE_ID));
    let s = FileStorage::new(fixture_root());
    let i = block_on(inspect(&s, FIXTURE_ID)).unwrap();
    assert_eq!(
        files(&fixture_root().join(FIXTURE_ID)),
        before,
        "inspect writes nothing"
    );
    assert_eq!(i["meta"]["agentId"], FIXTURE_ID);
    assert_eq!(i["meta"]["systemPrompt"], "You are terse.");
    assert_eq!(i["breakpoint"], "READY");
    assert_eq!(i["lastBookmark"]["seq"], 5);
    assert_eq!(i["messageCount"], 2);
    assert_eq!(i["lastSfpIndex"], 1);
    assert_eq!(i["openCalls"], json!([]));
    assert_eq!(i["toolCalls"], json!([]));
    assert_eq!(i["snapshots"][0]["id"], "greeted");
    assert_eq!(i["checkpoints"], json!([]));
    assert!(i["leafId"].is_string());

    let node = FileStorage::new(node_fixture_root());
    let i = block_on(inspect(&node, "fixture-bot")).unwrap();
    assert_eq!(i["breakpoint"], "AWAITING_APPROVAL");
    assert_eq!(
        i["openCalls"],
        json!([{ "id": "call_danger_1", "name": "danger", "arguments": { "target": "prod" }, "state": "APPROVAL_REQUIRED" }])
    );
    let calls: Vec<(&str, &str)> = i["toolCalls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["id"].as_str().unwrap(), c["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        calls,
        [
            ("call_echo_1", "COMPLETED"),
            ("call_danger_1", "APPROVAL_REQUIRED")
        ]
    );
    assert_eq!(i["checkpoints"][0]["checkpoints"][0]["id"], "ckpt-run-1-1");
    assert!(
        i["snapshots"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["id"] == "after-echo")
    );
    let i = block_on(inspect(&node, "crashed-bot")).unwrap();
    assert_eq!(i["breakpoint"], "TOOL_EXECUTING");
    assert_eq!(
        i["openCalls"],
        json!([{ "id": "call_slow_1", "name": "slow", "arguments": { "n": 1 }, "state": "EXECUTING" }])
    );
    let fork = fs::read_dir(node_fixture_root())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .find(|n| n.starts_with("fixture-bot-fork-"))
        .unwrap();
    let i = block_on(inspect(&node, &fork)).unwrap();
    assert_eq!(i["meta"]["lineage"], json!(["fixture-bot"]));
    assert_eq!(i["openCalls"], json!([]));
}

/// `inspect` answers while another object holds the agent's lease and sees
/// what the holder wrote; its errors carry their codes and paths.
#[test]
fn inspect_reads_without_the_lease_and_reports_errors() {
    use forkpoint_fs::inspect::inspect;
    let dir = tempfile::tempdir().unwrap();
    let holder = FileStorage::new(dir.path());
    let (mut e, init) = Expect::new("a");
    let lease = block_on(holder.create("a", &init)).unwrap();
    let reader = FileStorage::new(dir.path());
    let i = block_on(inspect(&reader, "a")).unwrap();
    assert_eq!(i["lastBookmark"]["seq"], e.last_seq().unwrap());
    assert_eq!(i["messageCount"], 1);
    // A breakpoint event written by the holder is seen by the reader.
    let (line, meta) = forkpoint_core::events::build_event_line(
        r#"{"type":"breakpoint_changed","channel":"monitor","previous":"READY","current":"PRE_MODEL"}"#,
        e.last_seq().unwrap() + 1,
        5_000,
        512,
    )
    .unwrap();
    let mut batch = e.step(2, 0, false);
    batch.events.push(forkpoint_core::storage::EventLine {
        meta,
        line: line.into(),
    });
    block_on(holder.write(&lease, &batch)).unwrap();
    let i = block_on(inspect(&reader, "a")).unwrap();
    assert_eq!(i["breakpoint"], "PRE_MODEL");
    assert_eq!(i["messageCount"], 3);
    assert_eq!(i["lastBookmark"]["seq"], e.last_seq().unwrap() + 1);
    assert_eq!(
        block_on(holder.acquire("a")).unwrap_err().code,
        ErrorCode::AgentLocked,
        "the holder keeps its lease"
    );

    let code = |id: &str| block_on(inspect(&reader, id)).unwrap_err();
    assert_eq!(code("../etc").code, ErrorCode::InvalidId);
    assert_eq!(code("missing").code, ErrorCode::AgentNotFound);
    fs::create_dir(dir.path().join("b")).unwrap();
    let meta = dir.path().join("b").join("meta.json");
    fs::write(&meta, r#"{"agentId":"not-b"}"#).unwrap();
    let err = code("b");
    assert_eq!(err.code, ErrorCode::CorruptedData);
    assert_eq!(err.path.as_deref(), Some(meta.to_str().unwrap()));
    fs::write(&meta, "not json").unwrap();
    assert_eq!(code("b").code, ErrorCode::CorruptedData);
    // A session that is not one: the error names the file and the line.
    fs::write(&meta, r#"{"agentId":"b"}"#).unwrap();
    let session = dir.path().join("b").join("session.jsonl");
    fs::write(
        &session,
        format!("{}{{oops\n{}", contract::header_line("s"), entry_line(1)),
    )
    .unwrap();
    let err = code("b");
    assert_eq!(err.code, ErrorCode::CorruptedData, "{err}");
    assert_eq!(err.path.as_deref(), Some(session.to_str().unwrap()));
    assert_eq!(err.line, Some(2));
}

// -- crash points ----------------------------------------------------------------

/// For every operation N of a scripted run and every fault, the files left
/// behind open again: whole lines only, a session the loader reads, events
/// whose last is `head`'s.
#[test]
fn every_crash_point_leaves_files_that_open() {
    use forkpoint_core::storage::{Fault, FaultPlan, FaultStorage};
    fn run(f: &FaultStorage<FileStorage>) -> forkpoint_core::Result<()> {
        let (mut e, init) = Expect::new("a");
        let lease = block_on(f.create("a", &init))?;
        for i in 0..3 {
            block_on(f.write(&lease, &e.step(3, 2, i == 2)))?;
        }
        block_on(f.release(&lease))?;
        let lease = block_on(f.acquire("a"))?;
        block_on(f.write(&lease, &e.step(2, 3, true)))?;
        block_on(f.release(&lease))?;
        block_on(f.delete("a"))
    }
    let dir = tempfile::tempdir().unwrap();
    let total = {
        let f = FaultStorage::counting(FileStorage::new(dir.path().join("count")));
        run(&f).unwrap();
        f.ops()
    };
    assert_eq!(total, 9);
    for fault in [Fault::Fail, Fault::Tear, Fault::LoseAck] {
        for n in 1..=total {
            let root = dir.path().join(format!("{fault:?}-{n}"));
            let plan = FaultPlan { at: Some(n), fault };
            let f = FaultStorage::new(FileStorage::new(&root), plan);
            assert!(run(&f).is_err(), "{fault:?} at {n} must surface");
            drop(f); // the process ends
            let s = FileStorage::new(&root);
            if !block_on(s.exists("a")).unwrap() {
                continue;
            }
            let lease = block_on(s.acquire("a")).unwrap();
            let h = block_on(s.head(&lease)).unwrap();
            let session = block_on(s.read_session("a", 0, u64::MAX)).unwrap();
            assert_eq!(h.session_len, session.len() as u64);
            assert!(session.ends_with(b"\n"), "{fault:?} at {n}: whole lines");
            forkpoint_fs::read_session(&root.join("a/session.jsonl"), &Default::default())
                .unwrap_or_else(|e| panic!("{fault:?} at {n}: {}", e.message));
            let events = block_on(s.read_events("a", None, usize::MAX)).unwrap();
            let last = events
                .last()
                .map(|l| parse_event_line(l, 512).unwrap().bookmark());
            assert_eq!(h.last_event, last, "{fault:?} at {n}");
            let raw = fs::read(root.join("a/events.jsonl")).unwrap();
            assert!(raw.is_empty() || raw.ends_with(b"\n"), "{fault:?} at {n}");
        }
    }
}
