//! `PgStorage` on a throwaway PostgreSQL cluster this test starts itself (one
//! for the whole binary, stopped at the end, also when a test fails): the
//! core's storage contract, two "hosts" on one database (leases, expiry,
//! takeover, fencing), the schema's version, bytes as the file store writes
//! them, and errors when the server cannot be used.
//!
//! A plain `main` (no libtest harness), so the one cluster is dropped after
//! the last test; `cargo test -p forkpoint-pg -- WORD` runs the tests whose
//! name contains WORD.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use forkpoint_core::ErrorCode;
use forkpoint_core::storage::contract::{self, Backend, Expect, check_stored, entry_line};
use forkpoint_core::storage::{AgentStorage, Lease, WriteBatch};
use forkpoint_pg::testing::TestCluster;
use forkpoint_pg::{PgOptions, PgStorage, SCHEMA_VERSION};
use pollster::block_on;

mod runner;

static SCHEMAS: AtomicU32 = AtomicU32::new(0);

fn new_schema(prefix: &str) -> String {
    format!("{prefix}_{}", SCHEMAS.fetch_add(1, Ordering::Relaxed))
}

fn opts(c: &TestCluster, schema: &str, host: &str, lease_ms: u64) -> PgOptions {
    PgOptions {
        schema: schema.into(),
        host: Some(host.into()),
        lease_ms,
        // Most tests here let leases run out while the store is open.
        keep_leases: false,
        ..PgOptions::new(c.url())
    }
}

fn store(c: &TestCluster, schema: &str, host: &str, lease_ms: u64) -> PgStorage {
    PgStorage::connect(opts(c, schema, host, lease_ms)).unwrap_or_else(|e| panic!("connect: {e}"))
}

fn code<T: std::fmt::Debug>(r: forkpoint_core::Result<T>) -> (ErrorCode, String) {
    match r {
        Ok(v) => panic!("succeeded ({v:?}) where it must fail"),
        Err(e) => (e.code, e.message),
    }
}

/// Each fresh store in a schema of its own; the second handle is another
/// `PgStorage` (another pool, another "host") on that schema.
struct Pg<'a>(&'a TestCluster);

impl Backend for Pg<'_> {
    type Store = PgStorage;

    fn fresh(&self) -> PgStorage {
        store(self.0, &new_schema("contract"), "host-a", 10_000)
    }

    fn second(&self, s: &PgStorage) -> Option<PgStorage> {
        Some(store(self.0, s.schema(), "host-b", 10_000))
    }

    fn append_raw(&self, s: &PgStorage, id: &str, session: &[u8], events: &[u8]) {
        self.0
            .append_raw(s.schema(), id, session, events)
            .unwrap_or_else(|e| panic!("{e}"));
    }
}

// -- two hosts ---------------------------------------------------------------

/// Host A holds the agent; B gets AGENT_LOCKED naming A; after A's lease runs
/// out B takes over, writes, and A's next write is LEASE_LOST and stores
/// nothing (session, events, meta); seqs go on increasing.
fn takeover_after_expiry(c: &TestCluster) {
    let schema = new_schema("hosts");
    let a = store(c, &schema, "host-a", 500);
    let b = store(c, &schema, "host-b", 500);
    let (mut e, init) = Expect::new("agent");
    let la = block_on(a.create("agent", &init)).unwrap();
    block_on(a.write(&la, &e.step(2, 3, true))).unwrap();

    let (kind, msg) = code(block_on(b.acquire("agent")));
    assert_eq!(kind, ErrorCode::AgentLocked);
    assert!(msg.contains(a.holder()), "names the holder: {msg}");
    assert!(msg.contains("on host-a"), "names the host: {msg}");
    assert!(
        msg.contains(&format!("pid {}", std::process::id())),
        "names the pid: {msg}"
    );
    let (kind, _) = code(block_on(b.delete("agent")));
    assert_eq!(
        kind,
        ErrorCode::AgentLocked,
        "delete of a held agent from B"
    );

    std::thread::sleep(Duration::from_millis(550));
    let lb = block_on(b.acquire("agent")).unwrap();
    assert!(
        lb.token > la.token,
        "tokens increase: {} then {}",
        la.token,
        lb.token
    );
    block_on(b.write(&lb, &e.step(1, 2, true))).unwrap();
    check_stored(&b, &e, "after B's write").await_now();

    // A wakes up and writes with its old token: nothing of it is stored.
    let stale = e.peek(1, 1, true);
    let (kind, _) = code(block_on(a.write(&la, &stale)));
    assert_eq!(kind, ErrorCode::LeaseLost);
    let meta_only = WriteBatch {
        session_at: e.session.len() as u64,
        meta: Some(b"{\"from\":\"a\"}".to_vec()),
        state: Some(b"{}".to_vec()),
        ..WriteBatch::default()
    };
    assert_eq!(
        code(block_on(a.write(&la, &meta_only))).0,
        ErrorCode::LeaseLost
    );
    assert_eq!(code(a.renew(&la)).0, ErrorCode::LeaseLost);
    assert_eq!(code(block_on(a.head(&la))).0, ErrorCode::LeaseLost);
    check_stored(&a, &e, "after A's stale writes").await_now();
    check_stored(&b, &e, "after A's stale writes, from B").await_now();
    let h = block_on(b.head(&lb)).unwrap();
    assert_eq!(h.state, None, "A's resume state was not stored");
    // A's release of its stale lease does not free B's.
    block_on(a.release(&la)).unwrap();
    assert_eq!(code(block_on(a.acquire("agent"))).0, ErrorCode::AgentLocked);

    // Seqs continue across the takeover, strictly increasing.
    let events = block_on(a.read_events("agent", None, usize::MAX)).unwrap();
    let seqs: Vec<u64> = events
        .iter()
        .map(|l| {
            forkpoint_core::events::parse_event_line(l, 512)
                .unwrap()
                .seq
        })
        .collect();
    assert_eq!(seqs, (1..=7).collect::<Vec<u64>>());

    // B gives it back; A takes it with a newer token still.
    block_on(b.release(&lb)).unwrap();
    let la2 = block_on(a.acquire("agent")).unwrap();
    assert!(la2.token > lb.token);
    block_on(a.write(&la2, &e.step(1, 1, false))).unwrap();
    check_stored(&b, &e, "after A's new lease").await_now();
}

/// Renewals (explicit and by writes) keep a short lease (500 ms, renewed every
/// 100 ms for 600 ms); without them it runs out.
fn renewals_keep_the_lease(c: &TestCluster) {
    let schema = new_schema("renew");
    let a = store(c, &schema, "host-a", 500);
    let b = store(c, &schema, "host-b", 500);
    let (mut e, init) = Expect::new("r");
    let la = block_on(a.create("r", &init)).unwrap();
    for i in 0..6 {
        std::thread::sleep(Duration::from_millis(100));
        if i % 2 == 0 {
            a.renew(&la).unwrap();
        } else {
            block_on(a.write(&la, &e.step(1, 1, false))).unwrap();
        }
        assert_eq!(
            code(block_on(b.acquire("r"))).0,
            ErrorCode::AgentLocked,
            "renewal {i}"
        );
    }
    std::thread::sleep(Duration::from_millis(550));
    let lb = block_on(b.acquire("r")).unwrap();
    block_on(b.write(&lb, &e.step(1, 1, false))).unwrap();
    check_stored(&a, &e, "after the takeover").await_now();
}

/// A holder whose lease ran out but that nobody took over still holds the
/// current token: its write goes through and renews the lease.
fn expired_but_not_taken_still_writes(c: &TestCluster) {
    let schema = new_schema("expired");
    let a = store(c, &schema, "host-a", 500);
    let b = store(c, &schema, "host-b", 500);
    let (mut e, init) = Expect::new("x");
    let la = block_on(a.create("x", &init)).unwrap();
    std::thread::sleep(Duration::from_millis(550));
    let ran_out: bool = c
        .client()
        .unwrap()
        .query_one(
            &format!(
                "SELECT lease_until < clock_timestamp() FROM \"{schema}\".agents WHERE id = 'x'"
            ),
            &[],
        )
        .unwrap()
        .get(0);
    assert!(ran_out, "the lease ran out before the write");
    block_on(a.write(&la, &e.step(1, 1, true))).unwrap();
    assert_eq!(code(block_on(b.acquire("x"))).0, ErrorCode::AgentLocked);
    check_stored(&b, &e, "after the late write").await_now();
}

/// Two hosts racing for one free agent: exactly one gets it.
fn racing_acquires_one_wins(c: &TestCluster) {
    let schema = new_schema("race");
    let a = store(c, &schema, "host-a", 10_000);
    let (_, init) = Expect::new("race");
    let l = block_on(a.create("race", &init)).unwrap();
    block_on(a.release(&l)).unwrap();
    let stores: Vec<PgStorage> = (0..6)
        .map(|i| store(c, &schema, &format!("host-{i}"), 10_000))
        .collect();
    let wins: Vec<bool> = std::thread::scope(|s| {
        let hs: Vec<_> = stores
            .iter()
            .map(|st| s.spawn(move || block_on(st.acquire("race")).is_ok()))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(wins.iter().filter(|w| **w).count(), 1, "{wins:?}");
}

// -- schema ------------------------------------------------------------------

fn schema_version_is_checked(c: &TestCluster) {
    let schema = new_schema("version");
    let s = store(c, &schema, "h", 10_000);
    let (e, init) = Expect::new("v");
    let l = block_on(s.create("v", &init)).unwrap();
    block_on(s.release(&l)).unwrap();
    let mut pg = c.client().unwrap();
    let v: i32 = pg
        .query_one(
            &format!("SELECT version FROM \"{schema}\".forkpoint_schema"),
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(v, SCHEMA_VERSION);
    // Connecting again keeps the tables and what they hold.
    let again = store(c, &schema, "h", 10_000);
    check_stored(&again, &e, "after a second connect").await_now();

    pg.execute(
        &format!("UPDATE \"{schema}\".forkpoint_schema SET version = 99"),
        &[],
    )
    .unwrap();
    let (kind, msg) = code(PgStorage::connect(opts(c, &schema, "h", 10_000)));
    assert_eq!(kind, ErrorCode::UnsupportedFormat);
    assert!(msg.contains("99"), "{msg}");
}

/// Many stores connecting at once to a new schema: one creates it, all work.
fn concurrent_first_connects(c: &TestCluster) {
    let schema = new_schema("first");
    let ok = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|i| {
                let schema = schema.clone();
                s.spawn(move || {
                    PgStorage::connect(opts(c, &schema, &format!("h{i}"), 1000)).map(|_| ())
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });
    assert!(ok.iter().all(|r| r.is_ok()), "{ok:?}");
}

fn bad_options_are_invalid_input(c: &TestCluster) {
    for schema in ["", "Upper", "a-b", "1x", "pg_x", "x\"; DROP TABLE y; --"] {
        let (kind, _) = code(PgStorage::connect(opts(c, schema, "h", 1000)));
        assert_eq!(kind, ErrorCode::InvalidInput, "schema {schema:?}");
    }
    assert_eq!(
        code(PgStorage::connect(opts(c, "ok", "h", 0))).0,
        ErrorCode::InvalidInput
    );
    let (kind, _) = code(PgStorage::connect("host=127.0.0.1 port=notanumber"));
    assert_eq!(kind, ErrorCode::InvalidInput);
    let s = store(c, &new_schema("ids"), "h", 1000);
    let (_, init) = Expect::new("../x");
    assert_eq!(
        code(block_on(s.create("../x", &init))).0,
        ErrorCode::InvalidId
    );
    assert_eq!(code(block_on(s.acquire("a\0b"))).0, ErrorCode::InvalidId);
    assert!(!block_on(s.exists("a\0b")).unwrap());
    let forged = Lease {
        agent_id: "nobody".into(),
        token: u64::MAX,
    };
    assert_eq!(
        code(block_on(s.write(&forged, &WriteBatch::default()))).0,
        ErrorCode::LeaseLost
    );
}

// -- bytes -------------------------------------------------------------------

/// The same batches on files and on PostgreSQL read back the same bytes, and
/// equal `session.jsonl` and `events.jsonl`; range reads across the chunks of
/// a long session (more than one 256 KiB chunk per write) are exact.
fn bytes_match_the_file_store(c: &TestCluster) {
    let dir = tempfile::tempdir().unwrap();
    let files = forkpoint_fs::FileStorage::new(dir.path());
    let pg = store(c, &new_schema("bytes"), "h", 10_000);
    let (mut e, init) = Expect::new("same");
    let lf = block_on(files.create("same", &init)).unwrap();
    let lp = block_on(pg.create("same", &init)).unwrap();
    for (n, k, m) in [
        (3, 2, true),
        (2_500, 5, false),
        (1, 0, false),
        (4_000, 1, true),
    ] {
        let b = e.step(n, k, m);
        block_on(files.write(&lf, &b)).unwrap();
        block_on(pg.write(&lp, &b)).unwrap();
    }
    let on_disk = std::fs::read(dir.path().join("same/session.jsonl")).unwrap();
    assert!(
        on_disk.len() > 600_000,
        "a session of several chunks: {}",
        on_disk.len()
    );
    let from_pg = block_on(pg.read_session("same", 0, u64::MAX)).unwrap();
    assert!(from_pg == on_disk, "session bytes equal session.jsonl");
    let events_file = std::fs::read(dir.path().join("same/events.jsonl")).unwrap();
    let mut events_pg = Vec::new();
    for l in block_on(pg.read_events("same", None, usize::MAX)).unwrap() {
        events_pg.extend_from_slice(l.as_bytes());
        events_pg.push(b'\n');
    }
    assert!(events_pg == events_file, "event lines equal events.jsonl");
    let len = on_disk.len() as u64;
    for (a, z) in [
        (0, 1),
        (262_100, 262_200),
        (1, len - 1),
        (300_000, 900_000),
        (len - 5, len + 5),
    ] {
        let got = block_on(pg.read_session("same", a, z)).unwrap();
        let z = z.min(len);
        assert!(got == on_disk[a as usize..z as usize], "range {a}..{z}");
    }
    let h = block_on(pg.head(&lp)).unwrap();
    assert_eq!(h.session_len, len);
    // meta.json read without the lease (it is held here), as the file store's.
    let meta_file = std::fs::read(dir.path().join("same/meta.json")).unwrap();
    assert_eq!(pg.read_meta("same").unwrap(), meta_file);
    assert_eq!(files.read_meta("same").unwrap(), meta_file);
    assert_eq!(code(pg.read_meta("nobody")).0, ErrorCode::AgentNotFound);
    assert_eq!(code(pg.read_meta("../x")).0, ErrorCode::InvalidId);
    let mut pgc = c.client().unwrap();
    let chunks: i64 = pgc
        .query_one(
            &format!("SELECT count(*) FROM \"{}\".session_chunks", pg.schema()),
            &[],
        )
        .unwrap()
        .get(0);
    assert!(chunks >= 4, "long writes are cut into chunks: {chunks}");
    // The same entry line never straddles chunks: each chunk ends a line;
    // most are stored deflated (JSON lines shrink).
    let rows = pgc
        .query(
            &format!(
                "SELECT off + len, z, length(bytes) < len FROM \"{}\".session_chunks ORDER BY off",
                pg.schema()
            ),
            &[],
        )
        .unwrap();
    let mut packed = 0;
    for r in &rows {
        let end: i64 = r.get(0);
        assert_eq!(on_disk[end as usize - 1], b'\n', "a chunk ends at {end}");
        let (z, smaller): (bool, bool) = (r.get(1), r.get(2));
        assert_eq!(z, smaller, "deflated rows are smaller");
        packed += usize::from(z);
    }
    assert!(
        packed * 2 > rows.len(),
        "{packed} of {} deflated",
        rows.len()
    );
    let _ = entry_line(1);
}

/// A raw tail of whole lines and half a line (session) and a torn event row:
/// acquire keeps the whole lines and cuts the rest, as the file store does.
fn torn_tail_after_whole_lines(c: &TestCluster) {
    let s = store(c, &new_schema("torn"), "h", 10_000);
    let (mut e, init) = Expect::new("t");
    let l = block_on(s.create("t", &init)).unwrap();
    block_on(s.release(&l)).unwrap();
    let whole = entry_line(50);
    let next = entry_line(51);
    let half = &next.as_bytes()[..30];
    let mut raw = whole.as_bytes().to_vec();
    raw.extend_from_slice(half);
    c.append_raw(s.schema(), "t", &raw, b"{\"seq\":3").unwrap();
    let l = block_on(s.acquire("t")).unwrap();
    e.session.extend_from_slice(whole.as_bytes());
    check_stored(&s, &e, "after the cut").await_now();
    let h = block_on(s.head(&l)).unwrap();
    assert_eq!(h.session_len, e.session.len() as u64);
    assert_eq!(h.last_event.map(|b| b.seq), Some(2));
}

/// A batch whose events do not continue the log is refused whole.
fn event_seqs_must_continue(c: &TestCluster) {
    let s = store(c, &new_schema("seqs"), "h", 10_000);
    let (mut e, init) = Expect::new("q");
    let l = block_on(s.create("q", &init)).unwrap();
    block_on(s.write(&l, &e.step(1, 2, false))).unwrap();
    let mut bad = e.peek(1, 2, true);
    bad.events.swap(0, 1);
    assert_eq!(code(block_on(s.write(&l, &bad))).0, ErrorCode::Internal);
    let mut old = e.peek(1, 1, true);
    old.events[0] = contract::event_line(2);
    assert_eq!(code(block_on(s.write(&l, &old))).0, ErrorCode::Internal);
    check_stored(&s, &e, "after refused event batches").await_now();
}

/// Not a limit, a measure: the time of a step-sized write on the local
/// cluster (printed), and of `head` after them.
fn write_timing(c: &TestCluster) {
    let s = store(c, &new_schema("timing"), "h", 10_000);
    let (mut e, init) = Expect::new("t");
    let l = block_on(s.create("t", &init)).unwrap();
    let n = 200;
    let batches: Vec<WriteBatch> = (0..n).map(|_| e.step(1, 3, false)).collect();
    let t = Instant::now();
    for b in &batches {
        block_on(s.write(&l, b)).unwrap();
    }
    let per_write = t.elapsed() / n;
    let t = Instant::now();
    let h = block_on(s.head(&l)).unwrap();
    let head = t.elapsed();
    assert_eq!(h.session_len, e.session.len() as u64);
    check_stored(&s, &e, "after the timed writes").await_now();
    println!("    {n} writes (1 entry, 3 events each): {per_write:?} per write; head {head:?}");
}

/// One scripted agent (two turns, a close, an open on another handle, a
/// resume, a third turn) through the core's `AgentRuntime`, returning the
/// session bytes and event lines it left.
fn agent_script<S: AgentStorage>(first: S, second: S) -> (Vec<u8>, Vec<Arc<str>>) {
    use forkpoint_core::agent::machine::{Command, Input};
    use forkpoint_core::agent::runtime::AgentRuntime;
    use forkpoint_core::agent_events::ResumeStrategy;
    use serde_json::json;

    fn turn<S: AgentStorage>(rt: &AgentRuntime<S>, text: &str, now: f64) {
        let step = block_on(rt.handle(
            Input::Send {
                content: json!(text),
            },
            now,
        ))
        .unwrap();
        let ticket = step
            .commands
            .iter()
            .find_map(|c| match c {
                Command::CallModel { ticket, .. } => Some(*ticket),
                _ => None,
            })
            .expect("a model call");
        let reply = json!({"role": "assistant", "content": [{"type": "text", "text": format!("re: {text}")}]});
        block_on(rt.handle(Input::ModelReply { ticket, reply }, now + 1.0)).unwrap();
    }

    let meta = serde_json::from_value(json!({
        "agentId": "e2e",
        "model": {"provider": "anthropic", "model": "claude-sonnet-4-5"},
    }))
    .unwrap();
    let rt = block_on(AgentRuntime::create(&first, meta, vec![], 7, 1e12)).unwrap();
    turn(&rt, "one", 1e12 + 10.0);
    turn(&rt, "two", 1e12 + 20.0);
    block_on(rt.close()).unwrap();
    let rt = block_on(AgentRuntime::open(&second, "e2e", vec![], 8)).unwrap();
    block_on(rt.resume(ResumeStrategy::Crash, None, false, 1e12 + 30.0)).unwrap();
    turn(&rt, "three", 1e12 + 40.0);
    let q = serde_json::from_value(json!({"kind": "messages"})).unwrap();
    let messages: serde_json::Value =
        serde_json::from_str(&block_on(rt.query(&q)).unwrap()).unwrap();
    assert_eq!(messages.as_array().map(Vec::len), Some(6), "{messages}");
    block_on(rt.close()).unwrap();
    let session = block_on(first.read_session("e2e", 0, u64::MAX)).unwrap();
    let events = block_on(first.read_events("e2e", None, usize::MAX)).unwrap();
    (session, events)
}

/// The agent runtime over PostgreSQL (two hosts) stores exactly what it
/// stores over files.
fn agent_runtime_writes_what_files_hold(c: &TestCluster) {
    let dir = tempfile::tempdir().unwrap();
    let files = agent_script(
        forkpoint_fs::FileStorage::new(dir.path()),
        forkpoint_fs::FileStorage::new(dir.path()),
    );
    let schema = new_schema("runtime");
    let pg = agent_script(
        store(c, &schema, "host-a", 10_000),
        store(c, &schema, "host-b", 10_000),
    );
    assert!(files.0.len() > 1_000);
    assert_eq!(
        String::from_utf8_lossy(&pg.0),
        String::from_utf8_lossy(&files.0),
        "session"
    );
    assert_eq!(pg.1, files.1, "events");
    let on_disk = std::fs::read(dir.path().join("e2e/session.jsonl")).unwrap();
    assert!(pg.0 == on_disk);
}

// -- unavailable -------------------------------------------------------------

fn closed_port_is_store_unavailable(_: &TestCluster) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let t = Instant::now();
    let (kind, msg) = code(PgStorage::connect(format!(
        "host=127.0.0.1 port={port} user=postgres dbname=postgres"
    )));
    assert_eq!(kind, ErrorCode::StoreUnavailable, "{msg}");
    assert!(t.elapsed() < Duration::from_secs(5));
}

fn wrong_password_is_store_unavailable(c: &TestCluster) {
    let mut pg = c.client().unwrap();
    pg.batch_execute(
        "CREATE ROLE fp_user LOGIN PASSWORD 'right-one';
         GRANT CREATE ON DATABASE postgres TO fp_user;",
    )
    .unwrap();
    let url = |pw: &str| {
        format!(
            "host=127.0.0.1 port={} user=fp_user password={pw} dbname=postgres",
            c.port()
        )
    };
    let (kind, msg) = code(PgStorage::connect(url("wrong")));
    assert_eq!(kind, ErrorCode::StoreUnavailable);
    assert!(msg.contains("password"), "{msg}");
    assert!(
        !msg.contains("wrong"),
        "the password is not in the message: {msg}"
    );
    let s = PgStorage::connect(PgOptions {
        schema: new_schema("pw"),
        ..PgOptions::new(url("right-one"))
    })
    .unwrap();
    assert!(block_on(s.list()).unwrap().is_empty());
    let (kind, _) = code(PgStorage::connect(format!(
        "host=127.0.0.1 port={} user=postgres dbname=no_such_db",
        c.port()
    )));
    assert_eq!(kind, ErrorCode::StoreUnavailable);
}

// -- the runner --------------------------------------------------------------

trait AwaitNow {
    fn await_now(self);
}

impl<F: std::future::Future<Output = ()>> AwaitNow for F {
    fn await_now(self) {
        block_on(self)
    }
}

/// With `keep_leases` (the default), an idle holder keeps its lease: its
/// thread renews it (lease 300 ms, idle for 1.2 s); once the store is gone
/// (its process stopped), the lease runs out and another host takes over.
fn keeper_renews_idle_leases(c: &TestCluster) {
    let schema = new_schema("keeper");
    let a = PgStorage::connect(PgOptions {
        keep_leases: true,
        ..opts(c, &schema, "host-a", 300)
    })
    .unwrap();
    let b = store(c, &schema, "host-b", 300);
    let (mut e, init) = Expect::new("k");
    let la = block_on(a.create("k", &init)).unwrap();
    for i in 0..4 {
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(
            code(block_on(b.acquire("k"))).0,
            ErrorCode::AgentLocked,
            "idle for {} ms",
            (i + 1) * 300
        );
    }
    block_on(a.write(&la, &e.step(1, 1, false))).unwrap();
    drop(a);
    std::thread::sleep(Duration::from_millis(400));
    let lb = block_on(b.acquire("k")).unwrap();
    block_on(b.write(&lb, &e.step(1, 1, false))).unwrap();
    check_stored(&b, &e, "after the takeover").await_now();
}

/// A follower on another host sees every event once and in order: woken by
/// notifications, and when its listening connection is killed (notifications
/// sent meanwhile are lost), by the reconnection and its fallback reads.
fn follower_sees_every_event_once(c: &TestCluster) {
    use forkpoint_core::eventlog::Since;
    use forkpoint_core::events::EventFilter;
    use forkpoint_pg::Follower;
    let schema = new_schema("follow");
    let a = store(c, &schema, "host-a", 10_000);
    let b = store(c, &schema, "host-b", 10_000);
    let (mut e, init) = Expect::new("f");
    let la = block_on(a.create("f", &init)).unwrap();
    let f = Follower::open(&b, "f").unwrap();
    let sub = f
        .log()
        .subscribe(EventFilter::default(), Since::Start)
        .unwrap();
    let mut seen: Vec<u64> = Vec::new();
    let mut drain = |f: &Follower| loop {
        let p: serde_json::Value =
            serde_json::from_str(&f.log().poll_json(sub, 1000).unwrap()).unwrap();
        let evs = match p["kind"].as_str().unwrap() {
            "events" => p["events"].clone(),
            "read" => serde_json::from_str(
                &block_on(f.log().fill_json(&b, sub, p["since"].as_u64(), 1000)).unwrap(),
            )
            .unwrap(),
            _ => break,
        };
        seen.extend(
            evs.as_array()
                .unwrap()
                .iter()
                .map(|e| e["seq"].as_u64().unwrap()),
        );
    };
    // Wait for the listener to be up, so the first write is notified.
    let t0 = Instant::now();
    while b.watch().generation() == 0 && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let wait_for = |f: &Follower, want: u64| {
        let t0 = Instant::now();
        while f.log().durable() < Some(want) && t0.elapsed() < Duration::from_secs(5) {
            f.refresh(&b).unwrap();
            std::thread::sleep(Duration::from_millis(2));
        }
        t0.elapsed()
    };
    for _ in 0..3 {
        block_on(a.write(&la, &e.step(1, 2, false))).unwrap();
    }
    let took = wait_for(&f, 8);
    assert!(took < Follower::FALLBACK, "notified in {took:?}");
    assert!(b.watch().heard() >= 1, "a notification was heard");
    drain(&f);
    // Kill the listening connection, write while it is down.
    let killed: i64 = c
        .client()
        .unwrap()
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query LIKE 'LISTEN%'",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(killed >= 1, "the listener was found");
    for _ in 0..3 {
        block_on(a.write(&la, &e.step(0, 3, false))).unwrap();
    }
    wait_for(&f, 17);
    drain(&f);
    assert_eq!(seen, (1..=17).collect::<Vec<_>>());
    assert!(b.watch().generation() >= 2, "the listener reconnected");
}

/// Connections the server dropped (a restart, a proxy, an operator) between
/// steps: the next write and reads go through on new connections, and what
/// is stored is exactly what was written, once.
fn dropped_connections_are_replaced(c: &TestCluster) {
    let schema = new_schema("dropped");
    let a = store(c, &schema, "host-a", 10_000);
    let (mut e, init) = Expect::new("d");
    let la = block_on(a.create("d", &init)).unwrap();
    let kill = || {
        let n: i64 = c
            .client()
            .unwrap()
            .query_one(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                 WHERE application_name = 'forkpoint' AND pid <> pg_backend_pid()",
                &[],
            )
            .unwrap()
            .get(0);
        assert!(n >= 1, "connections were dropped");
    };
    for i in 0..3 {
        block_on(a.write(&la, &e.step(2, 2, i == 1))).unwrap();
        kill();
    }
    block_on(a.write(&la, &e.step(1, 1, true))).unwrap();
    kill();
    check_stored(&a, &e, "after dropped connections").await_now();
    kill();
    assert_eq!(block_on(a.list()).unwrap().len(), 1);
}

/// A session that holds an agent's row locked and stops (a worker frozen in
/// a transaction): a takeover waits at most a lease's time (at least 1 s),
/// then says AGENT_LOCKED instead of hanging; once the lock is gone it
/// takes the agent.
fn a_stuck_row_lock_does_not_hang_a_takeover(c: &TestCluster) {
    let schema = new_schema("stuck");
    let a = store(c, &schema, "host-a", 300);
    let b = store(c, &schema, "host-b", 300);
    let (_e, init) = Expect::new("s");
    let la = block_on(a.create("s", &init)).unwrap();
    block_on(a.release(&la)).unwrap();
    let mut other = c.client().unwrap();
    let mut tx = other.transaction().unwrap();
    tx.execute(
        &format!("SELECT 1 FROM \"{schema}\".agents WHERE id = 's' FOR UPDATE"),
        &[],
    )
    .unwrap();
    let t0 = Instant::now();
    let (code_, msg) = code(block_on(b.acquire("s")));
    let took = t0.elapsed();
    assert_eq!(code_, ErrorCode::AgentLocked, "{msg}");
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(5),
        "{took:?}"
    );
    tx.rollback().unwrap();
    block_on(b.acquire("s")).unwrap();
}

/// A server without TLS: the default (prefer) connects in the clear;
/// require and the verify modes are STORE_UNAVAILABLE saying the server has
/// no TLS (crates/pg/tests/tls.rs has a server with it).
fn tls_against_a_plain_server(c: &TestCluster) {
    let ok = |extra: &str| {
        PgStorage::connect(PgOptions {
            schema: new_schema("plain"),
            ..PgOptions::new(format!("{} {extra}", c.url()))
        })
    };
    ok("").unwrap();
    ok("sslmode=prefer").unwrap();
    ok("sslmode=disable").unwrap();
    let (kind, msg) = code(ok("sslmode=require"));
    assert_eq!(kind, ErrorCode::StoreUnavailable, "{msg}");
    assert!(msg.contains("does not support TLS"), "{msg}");
    // (A machine with no trusted roots at all refuses system before connecting.)
    let (kind, msg) = code(ok("sslmode=verify-full sslrootcert=system"));
    assert!(
        (kind == ErrorCode::StoreUnavailable && msg.contains("does not support TLS"))
            || (kind == ErrorCode::InvalidInput && msg.contains("no trusted CA")),
        "{kind:?}: {msg}"
    );
    // Strings whose sslmode=require a looser reading would lose: each must
    // still require TLS (or be refused), never connect in the clear.
    let port = c.port();
    for text in [
        format!("postgres://postgres:pa?ss@127.0.0.1:{port}/postgres?sslmode=require"),
        format!("postgres://postgres:p?sslmode=disable@127.0.0.1:{port}/postgres?sslmode=require"),
        format!("host=127.0.0.1\u{a0}port={port} user=postgres sslmode=require"),
        format!("host=127.0.0.1\u{b}port={port}\u{3000}user=postgres sslmode=require"),
        format!("host=127.0.0.1 port={port} user=postgres sslmode=require password=abc\\"),
        format!("hostaddr=127.0.0.1 port={port} user=postgres sslmode=require"),
    ] {
        let r = PgStorage::connect(PgOptions {
            schema: new_schema("plain"),
            ..PgOptions::new(text.clone())
        });
        let (kind, msg) = code(r);
        assert!(
            (kind == ErrorCode::StoreUnavailable && msg.contains("does not support TLS"))
                || kind == ErrorCode::InvalidInput,
            "{text:?}: {kind:?}: {msg}"
        );
    }
    // A server named only by its address still connects (in the clear, as
    // the server has no TLS): the address names it for a handshake.
    PgStorage::connect(PgOptions {
        schema: new_schema("plain"),
        ..PgOptions::new(format!(
            "hostaddr=127.0.0.1 port={port} user=postgres dbname=postgres"
        ))
    })
    .unwrap();
}

type Test = (&'static str, fn(&TestCluster));

fn main() {
    let filter = runner::filter();
    let t0 = Instant::now();
    let mut cluster = match TestCluster::start() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("forkpoint-pg tests: cannot start a PostgreSQL cluster: {e}");
            std::process::exit(1);
        }
    };
    println!(
        "cluster on port {} started in {:?}",
        cluster.port(),
        t0.elapsed()
    );

    let mut tests: runner::Tests<TestCluster> = Vec::new();
    for name in contract::CHECKS {
        let name = *name;
        tests.push((
            format!("contract::{name}"),
            Box::new(move |c: &TestCluster| {
                block_on(contract::run(&Pg(c), name)).unwrap();
            }),
        ));
    }
    let own: &[Test] = &[
        ("takeover_after_expiry", takeover_after_expiry),
        ("renewals_keep_the_lease", renewals_keep_the_lease),
        (
            "expired_but_not_taken_still_writes",
            expired_but_not_taken_still_writes,
        ),
        ("racing_acquires_one_wins", racing_acquires_one_wins),
        ("keeper_renews_idle_leases", keeper_renews_idle_leases),
        (
            "a_stuck_row_lock_does_not_hang_a_takeover",
            a_stuck_row_lock_does_not_hang_a_takeover,
        ),
        (
            "dropped_connections_are_replaced",
            dropped_connections_are_replaced,
        ),
        (
            "follower_sees_every_event_once",
            follower_sees_every_event_once,
        ),
        ("schema_version_is_checked", schema_version_is_checked),
        ("concurrent_first_connects", concurrent_first_connects),
        (
            "bad_options_are_invalid_input",
            bad_options_are_invalid_input,
        ),
        ("bytes_match_the_file_store", bytes_match_the_file_store),
        ("event_seqs_must_continue", event_seqs_must_continue),
        ("torn_tail_after_whole_lines", torn_tail_after_whole_lines),
        ("write_timing", write_timing),
        (
            "agent_runtime_writes_what_files_hold",
            agent_runtime_writes_what_files_hold,
        ),
        (
            "closed_port_is_store_unavailable",
            closed_port_is_store_unavailable,
        ),
        (
            "wrong_password_is_store_unavailable",
            wrong_password_is_store_unavailable,
        ),
        ("tls_against_a_plain_server", tls_against_a_plain_server),
    ];
    for (name, f) in own {
        let f = *f;
        tests.push((name.to_string(), Box::new(f)));
    }

    let (mut ran, mut failed) = runner::run(&tests, &cluster, &filter);

    // Last: the server goes away under a connected store.
    if runner::chosen(&filter, "server_gone_is_store_unavailable") {
        ran += 1;
        let r = catch_unwind(AssertUnwindSafe(|| {
            let s = store(&cluster, &new_schema("gone"), "h", 10_000);
            let (_, init) = Expect::new("g");
            let l = block_on(s.create("g", &init)).unwrap();
            cluster.stop().unwrap();
            let (kind, msg) = code(block_on(s.list()));
            assert_eq!(kind, ErrorCode::StoreUnavailable, "{msg}");
            assert_eq!(code(block_on(s.head(&l))).0, ErrorCode::StoreUnavailable);
            assert_eq!(code(s.renew(&l)).0, ErrorCode::StoreUnavailable);
        }));
        match r {
            Ok(()) => println!("test server_gone_is_store_unavailable ... ok"),
            Err(_) => {
                println!("test server_gone_is_store_unavailable ... FAILED");
                failed.push("server_gone_is_store_unavailable".into());
            }
        }
    }
    drop(cluster);
    runner::report(ran, &failed, t0);
}
