//! The contract every [`AgentStorage`] keeps, as checks any backend's tests run
//! (cargo feature `contract`). Each check takes a [`Backend`]: a way to make a
//! fresh, empty store, a second handle on the same store (another process, as
//! far as the backend can tell) and a way to leave torn bytes behind as a
//! writer that died mid-write would. A check panics, naming what broke, when
//! the store does not keep the contract.
//!
//! Everything is read back through the trait itself (`read_session`,
//! `read_events`, `list`, `head`), so "stores nothing" is checked on the bytes
//! a later reader gets.

use std::sync::Arc;

use super::{AgentStorage, EventLine, Lease, WriteBatch};
use crate::events::build_event_line;
use crate::{ErrorCode, Result};

/// A backend under test.
pub trait Backend {
    /// The store type.
    type Store: AgentStorage;

    /// A fresh, empty store.
    fn fresh(&self) -> Self::Store;

    /// A second handle on the same store (memory: a clone; files: another
    /// `FileStorage` on the same root), or `None` if the backend has none.
    fn second(&self, store: &Self::Store) -> Option<Self::Store>;

    /// Appends raw bytes to agent `id`'s session and event log, bypassing the
    /// lease, as a writer that died in the middle of a write leaves them.
    fn append_raw(&self, store: &Self::Store, id: &str, session: &[u8], events: &[u8]);
}

/// The names of the checks, in the order [`run_all`] runs them.
pub const CHECKS: &[&str] = &[
    "create_then_already_exists",
    "acquire_missing_agent",
    "acquire_while_held",
    "release_then_acquire_grows_token",
    "stale_lease_is_lost",
    "writes_are_ordered_and_durable",
    "torn_tails_are_cut_on_acquire",
    "read_session_clamps",
    "list_is_sorted_with_meta",
    "exists_and_delete",
    "batch_at_wrong_offset_is_refused",
    "second_handle_sees_writes",
];

/// Runs every check on fresh stores.
pub async fn run_all<B: Backend>(b: &B) {
    for name in CHECKS {
        if let Err(e) = run(b, name).await {
            panic!("{name}: {e}");
        }
    }
}

/// Runs check `name` (one of [`CHECKS`]) on fresh stores, for runners that
/// pick checks by name (the bindings' test builds); `INVALID_INPUT` when no
/// check has that name. A broken contract panics, as in every check.
pub async fn run<B: Backend>(b: &B, name: &str) -> Result<()> {
    match name {
        "create_then_already_exists" => create_then_already_exists(b).await,
        "acquire_missing_agent" => acquire_missing_agent(b).await,
        "acquire_while_held" => acquire_while_held(b).await,
        "release_then_acquire_grows_token" => release_then_acquire_grows_token(b).await,
        "stale_lease_is_lost" => stale_lease_is_lost(b).await,
        "writes_are_ordered_and_durable" => writes_are_ordered_and_durable(b).await,
        "torn_tails_are_cut_on_acquire" => torn_tails_are_cut_on_acquire(b).await,
        "read_session_clamps" => read_session_clamps(b).await,
        "list_is_sorted_with_meta" => list_is_sorted_with_meta(b).await,
        "exists_and_delete" => exists_and_delete(b).await,
        "batch_at_wrong_offset_is_refused" => batch_at_wrong_offset_is_refused(b).await,
        "second_handle_sees_writes" => second_handle_sees_writes(b).await,
        other => {
            return Err(crate::Error::invalid_input(format!(
                "no contract check '{other}'"
            )));
        }
    }
    Ok(())
}

// -- building batches --------------------------------------------------------

/// A session header line (pi v3), with its newline.
pub fn header_line(session_id: &str) -> String {
    format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"{session_id}\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/work\"}}\n"
    )
}

/// A message entry line numbered `n` (its parent is `n - 1`), with its newline.
pub fn entry_line(n: u64) -> String {
    let parent = match n {
        0 | 1 => "null".to_string(),
        p => format!("\"e{}\"", p - 1),
    };
    format!(
        "{{\"type\":\"message\",\"id\":\"e{n}\",\"parentId\":{parent},\"timestamp\":\"2026-01-01T00:00:{:02}.000Z\",\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"text\",\"text\":\"message {n}\"}}],\"timestamp\":{n}}}}}\n",
        n % 60
    )
}

/// The event line with this seq (a `monitor` event of type `note`).
pub fn event_line(seq: u64) -> EventLine {
    let payload = format!("{{\"type\":\"note\",\"channel\":\"monitor\",\"n\":{seq}}}");
    match build_event_line(&payload, seq, 1_000 + seq as i64, 512) {
        Ok((line, meta)) => EventLine {
            meta,
            line: line.into(),
        },
        Err(e) => panic!("building event {seq}: {e}"),
    }
}

/// A `meta.json` text for agent `id`, version `v`.
pub fn meta_text(id: &str, v: u64) -> Vec<u8> {
    format!("{{\n  \"agentId\": \"{id}\",\n  \"v\": {v}\n}}").into_bytes()
}

/// What an agent should hold, kept beside the store to build the next batch
/// and compare what is read back.
#[derive(Debug, Clone)]
pub struct Expect {
    /// The agent.
    pub id: String,
    /// Its session bytes.
    pub session: Vec<u8>,
    /// Its event lines.
    pub events: Vec<Arc<str>>,
    /// Its `meta.json` text.
    pub meta: Vec<u8>,
    next_entry: u64,
    next_seq: u64,
    meta_version: u64,
}

impl Expect {
    /// A new agent: its expected state and its `create` batch (header and one
    /// entry, two events, meta).
    pub fn new(id: &str) -> (Expect, WriteBatch) {
        let mut e = Expect {
            id: id.to_string(),
            session: Vec::new(),
            events: Vec::new(),
            meta: Vec::new(),
            next_entry: 1,
            next_seq: 1,
            meta_version: 0,
        };
        let mut batch = e.step(1, 2, true);
        let mut session = header_line(&format!("session-{id}")).into_bytes();
        session.extend_from_slice(&batch.session);
        batch.session = session.clone();
        e.session = session;
        (e, batch)
    }

    /// The next batch (`entries` entries, `events` events, a new meta or not),
    /// taken into the expected state.
    pub fn step(&mut self, entries: u64, events: u64, meta: bool) -> WriteBatch {
        let mut b = WriteBatch {
            session_at: self.session.len() as u64,
            ..WriteBatch::default()
        };
        for _ in 0..entries {
            b.session
                .extend_from_slice(entry_line(self.next_entry).as_bytes());
            self.next_entry += 1;
        }
        for _ in 0..events {
            b.events.push(event_line(self.next_seq));
            self.next_seq += 1;
        }
        if meta {
            self.meta_version += 1;
            b.meta = Some(meta_text(&self.id, self.meta_version));
        }
        self.apply(&b);
        b
    }

    /// A batch as [`step`](Self::step) makes it, without taking it in (it
    /// must not be stored).
    pub fn peek(&self, entries: u64, events: u64, meta: bool) -> WriteBatch {
        self.clone().step(entries, events, meta)
    }

    fn apply(&mut self, b: &WriteBatch) {
        self.session.extend_from_slice(&b.session);
        self.events.extend(b.events.iter().map(|e| e.line.clone()));
        if let Some(m) = &b.meta {
            self.meta = m.clone();
        }
    }

    /// The last event's seq.
    pub fn last_seq(&self) -> Option<u64> {
        (self.next_seq > 1).then(|| self.next_seq - 1)
    }
}

// -- reading back ------------------------------------------------------------

fn code<T: std::fmt::Debug>(r: Result<T>, what: &str) -> ErrorCode {
    match r {
        Ok(v) => panic!("{what}: succeeded ({v:?}) where it must fail"),
        Err(e) => e.code,
    }
}

fn ok<T>(r: Result<T>, what: &str) -> T {
    r.unwrap_or_else(|e| panic!("{what}: {} ({})", e.code.as_str(), e.message))
}

fn expect_code<T: std::fmt::Debug>(r: Result<T>, want: ErrorCode, what: &str) {
    let got = code(r, what);
    assert_eq!(got, want, "{what}: wrong error code");
}

/// The meta `list` reports for `id` (`None`: not listed).
async fn listed_meta<S: AgentStorage>(s: &S, id: &str) -> Option<Vec<u8>> {
    ok(s.list().await, "list")
        .into_iter()
        .find(|l| l.id == id)
        .map(|l| ok(l.meta, "listed meta"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Checks that the store holds exactly what `e` says (session, events, meta).
pub async fn check_stored<S: AgentStorage>(s: &S, e: &Expect, when: &str) {
    let session = ok(s.read_session(&e.id, 0, u64::MAX).await, "read_session");
    assert_eq!(
        text(&session),
        text(&e.session),
        "{when}: session bytes of '{}'",
        e.id
    );
    let events = ok(s.read_events(&e.id, None, usize::MAX).await, "read_events");
    assert_eq!(events, e.events, "{when}: events of '{}'", e.id);
    let meta = listed_meta(s, &e.id).await;
    assert_eq!(
        meta.as_deref().map(text),
        Some(text(&e.meta)),
        "{when}: meta of '{}'",
        e.id
    );
}

/// Checks `head` against `e`.
pub async fn check_head<S: AgentStorage>(s: &S, lease: &Lease, e: &Expect, when: &str) {
    let h = ok(s.head(lease).await, "head");
    assert_eq!(text(&h.meta), text(&e.meta), "{when}: head meta");
    assert_eq!(
        h.session_len,
        e.session.len() as u64,
        "{when}: head session_len"
    );
    let want = e.events.last().map(|l| {
        let m = ok(
            crate::events::parse_event_line(l, 512).map_err(crate::Error::corrupted),
            "parse expected event",
        );
        m.bookmark()
    });
    assert_eq!(h.last_event, want, "{when}: head last_event");
}

// -- the checks --------------------------------------------------------------

/// `create` stores the init batch and holds the lease; a second `create` of
/// the id is `ALREADY_EXISTS` and changes nothing; `create` needs a meta.
pub async fn create_then_already_exists<B: Backend>(b: &B) {
    let s = b.fresh();
    assert!(!ok(s.exists("a").await, "exists"), "a fresh store is empty");
    let (e, init) = Expect::new("a");
    let lease = ok(s.create("a", &init).await, "create");
    assert_eq!(lease.agent_id, "a");
    assert!(ok(s.exists("a").await, "exists"), "created agent exists");
    check_stored(&s, &e, "after create").await;
    check_head(&s, &lease, &e, "after create").await;

    let (_, mut other) = Expect::new("a");
    other.session = header_line("another").into_bytes();
    other.meta = Some(meta_text("a", 99));
    expect_code(
        s.create("a", &other).await,
        ErrorCode::AlreadyExists,
        "create of a taken id",
    );
    check_stored(&s, &e, "after a refused create").await;
    if let Some(s2) = b.second(&s) {
        expect_code(
            s2.create("a", &other).await,
            ErrorCode::AlreadyExists,
            "create of a taken id from a second handle",
        );
        check_stored(&s2, &e, "after a refused create (second handle)").await;
    }
    // The first holder still holds its lease.
    check_head(&s, &lease, &e, "after refused creates").await;

    let (_, mut no_meta) = Expect::new("b");
    no_meta.meta = None;
    assert!(
        s.create("b", &no_meta).await.is_err(),
        "create without meta must fail"
    );
    assert!(
        !ok(s.exists("b").await, "exists"),
        "a refused create leaves no agent"
    );
}

/// `acquire` of an agent that is not there is `AGENT_NOT_FOUND`.
pub async fn acquire_missing_agent<B: Backend>(b: &B) {
    let s = b.fresh();
    expect_code(
        s.acquire("ghost").await,
        ErrorCode::AgentNotFound,
        "acquire in an empty store",
    );
    let (_, init) = Expect::new("real");
    let l = ok(s.create("real", &init).await, "create");
    ok(s.release(&l).await, "release");
    expect_code(
        s.acquire("ghost").await,
        ErrorCode::AgentNotFound,
        "acquire of a missing agent",
    );
    assert!(!ok(s.exists("ghost").await, "exists"));
}

/// A held agent cannot be acquired again, from this handle or another one;
/// the holder keeps writing.
pub async fn acquire_while_held<B: Backend>(b: &B) {
    let s = b.fresh();
    let (mut e, init) = Expect::new("a");
    let lease = ok(s.create("a", &init).await, "create");
    expect_code(
        s.acquire("a").await,
        ErrorCode::AgentLocked,
        "acquire of an agent held since create",
    );
    if let Some(s2) = b.second(&s) {
        expect_code(
            s2.acquire("a").await,
            ErrorCode::AgentLocked,
            "acquire from a second handle",
        );
    }
    ok(s.release(&lease).await, "release");
    let lease = ok(s.acquire("a").await, "acquire");
    expect_code(
        s.acquire("a").await,
        ErrorCode::AgentLocked,
        "acquire of an acquired agent",
    );
    if let Some(s2) = b.second(&s) {
        expect_code(
            s2.acquire("a").await,
            ErrorCode::AgentLocked,
            "acquire of an acquired agent from a second handle",
        );
    }
    let batch = e.step(1, 1, true);
    ok(s.write(&lease, &batch).await, "the holder writes");
    check_stored(&s, &e, "after the holder's write").await;
}

/// Each acquisition's token is strictly larger than the one before, across
/// handles; releasing a stale lease is not an error and does not release the
/// current holder.
pub async fn release_then_acquire_grows_token<B: Backend>(b: &B) {
    let s = b.fresh();
    let (mut e, init) = Expect::new("a");
    let l1 = ok(s.create("a", &init).await, "create");
    ok(s.release(&l1).await, "release");
    ok(s.release(&l1).await, "release twice");
    let l2 = ok(s.acquire("a").await, "acquire");
    assert!(l2.token > l1.token, "token {} after {}", l2.token, l1.token);
    // A stale release changes nothing.
    ok(s.release(&l1).await, "release of a stale lease");
    expect_code(
        s.acquire("a").await,
        ErrorCode::AgentLocked,
        "acquire after a stale release",
    );
    let batch = e.step(1, 1, false);
    ok(
        s.write(&l2, &batch).await,
        "write after someone released a stale lease",
    );
    ok(s.release(&l2).await, "release");
    let mut last = l2.token;
    if let Some(s2) = b.second(&s) {
        let l3 = ok(s2.acquire("a").await, "acquire from a second handle");
        assert!(l3.token > last, "token {} after {}", l3.token, last);
        ok(s2.release(&l3).await, "release");
        last = l3.token;
    }
    let l4 = ok(s.acquire("a").await, "acquire again");
    assert!(l4.token > last, "token {} after {}", l4.token, last);
    assert_eq!(l4.agent_id, "a");
    check_stored(&s, &e, "after the acquisitions").await;
}

/// A write or head with a lease that was released (or taken over) is
/// `LEASE_LOST` and stores nothing.
pub async fn stale_lease_is_lost<B: Backend>(b: &B) {
    let s = b.fresh();
    let (mut e, init) = Expect::new("a");
    let l1 = ok(s.create("a", &init).await, "create");
    let batch = e.step(2, 2, true);
    ok(s.write(&l1, &batch).await, "write");
    ok(s.release(&l1).await, "release");

    let stale = e.peek(1, 1, true);
    expect_code(
        s.write(&l1, &stale).await,
        ErrorCode::LeaseLost,
        "write after release",
    );
    expect_code(
        s.head(&l1).await,
        ErrorCode::LeaseLost,
        "head after release",
    );
    check_stored(&s, &e, "after a write with a released lease").await;

    let l2 = ok(s.acquire("a").await, "acquire");
    expect_code(
        s.write(&l1, &stale).await,
        ErrorCode::LeaseLost,
        "write with the old token after reacquire",
    );
    expect_code(
        s.head(&l1).await,
        ErrorCode::LeaseLost,
        "head with the old token",
    );
    check_stored(&s, &e, "after a write with an old token").await;
    let forged = Lease {
        agent_id: "a".into(),
        token: l2.token + 1,
    };
    expect_code(
        s.write(&forged, &stale).await,
        ErrorCode::LeaseLost,
        "write with a token never handed out",
    );
    check_stored(&s, &e, "after a write with a forged token").await;

    let batch = e.step(1, 1, true);
    ok(s.write(&l2, &batch).await, "write with the current lease");
    check_stored(&s, &e, "after the current holder's write").await;

    if let Some(s2) = b.second(&s) {
        ok(s.release(&l2).await, "release");
        let l3 = ok(s2.acquire("a").await, "acquire from a second handle");
        let stale = e.peek(1, 1, true);
        expect_code(
            s.write(&l2, &stale).await,
            ErrorCode::LeaseLost,
            "write after another handle took the lease",
        );
        check_stored(&s2, &e, "after a write with a lease taken over").await;
        let batch = e.step(1, 0, false);
        ok(s2.write(&l3, &batch).await, "the new holder writes");
        check_stored(&s, &e, "after the new holder's write").await;
    }
}

/// Writes land in order and whole: session bytes, events (read with
/// since/limit and from the tail), meta, `head`; they stay after a release
/// and a new acquisition.
pub async fn writes_are_ordered_and_durable<B: Backend>(b: &B) {
    let s = b.fresh();
    let (mut e, init) = Expect::new("a");
    let lease = ok(s.create("a", &init).await, "create");
    let plan: [(u64, u64, bool); 6] = [
        (1, 0, false),
        (0, 3, false),
        (0, 0, true),
        (3, 4, true),
        (0, 0, false),
        (2, 1, false),
    ];
    for (i, (n, k, m)) in plan.into_iter().enumerate() {
        let batch = e.step(n, k, m);
        ok(s.write(&lease, &batch).await, "write");
        let when = format!("after write {i}");
        check_stored(&s, &e, &when).await;
        check_head(&s, &lease, &e, &when).await;
    }
    // The hint is a cache: kept as written, or not at all.
    let batch = WriteBatch {
        session_at: e.session.len() as u64,
        hint: Some(b"{\"hint\":1}".to_vec()),
        ..WriteBatch::default()
    };
    ok(s.write(&lease, &batch).await, "write of a hint");
    let h = ok(s.head(&lease).await, "head");
    assert!(
        h.hint.as_deref().is_none_or(|x| x == b"{\"hint\":1}"),
        "the hint reads back as written (or not at all)"
    );

    let all = e.events.clone();
    let n = all.len();
    assert_eq!(n, 10, "the plan wrote 10 events");
    let got = ok(s.read_events("a", Some(3), usize::MAX).await, "read_events");
    assert_eq!(got, all[3..], "events after seq 3");
    let got = ok(s.read_events("a", Some(3), 2).await, "read_events");
    assert_eq!(got, all[3..5], "two events after seq 3");
    let got = ok(s.read_events("a", None, 4).await, "read_events");
    assert_eq!(got, all[..4], "the first four events");
    let got = ok(s.read_events("a", Some(3), 0).await, "read_events");
    assert!(got.is_empty(), "limit 0 reads nothing");
    let got = ok(s.read_events("a", Some(10), 5).await, "read_events");
    assert!(got.is_empty(), "nothing after the last event");
    let got = ok(s.read_events("a", Some(1_000), 5).await, "read_events");
    assert!(got.is_empty(), "nothing after a seq beyond the log");
    let got = ok(s.tail_events("a", 3).await, "tail_events");
    assert_eq!(got, all[n - 3..], "the last three events");
    let got = ok(s.tail_events("a", 0).await, "tail_events");
    assert!(got.is_empty(), "tail of 0");
    let got = ok(s.tail_events("a", 1_000).await, "tail_events");
    assert_eq!(got, all, "a tail longer than the log");
    expect_code(
        s.read_events("ghost", None, 10).await,
        ErrorCode::AgentNotFound,
        "read_events of a missing agent",
    );
    expect_code(
        s.tail_events("ghost", 10).await,
        ErrorCode::AgentNotFound,
        "tail_events of a missing agent",
    );

    ok(s.release(&lease).await, "release");
    let other = b.second(&s);
    let s2 = other.as_ref().unwrap_or(&s);
    let lease = ok(s2.acquire("a").await, "acquire");
    check_stored(s2, &e, "after release and acquire").await;
    check_head(s2, &lease, &e, "after release and acquire").await;
    let batch = e.step(1, 1, true);
    ok(s2.write(&lease, &batch).await, "write after reacquire");
    check_stored(&s, &e, "after a write by the new holder").await;
}

/// A session tail or an event line cut short (no final newline) is cut when
/// the lease is next taken; writing continues at the cut.
pub async fn torn_tails_are_cut_on_acquire<B: Backend>(b: &B) {
    let s = b.fresh();
    let (mut e, init) = Expect::new("a");
    let lease = ok(s.create("a", &init).await, "create");
    let batch = e.step(2, 2, true);
    ok(s.write(&lease, &batch).await, "write");
    ok(s.release(&lease).await, "release");

    let entry = entry_line(1_000);
    let event = event_line(e.last_seq().unwrap_or(0) + 1);
    let half_entry = &entry.as_bytes()[..entry.len() / 2];
    let half_event = &event.line.as_bytes()[..event.line.len() / 2];
    // Both logs torn.
    b.append_raw(&s, "a", half_entry, half_event);
    let lease = ok(s.acquire("a").await, "acquire after torn writes");
    check_stored(&s, &e, "after cutting both torn tails").await;
    check_head(&s, &lease, &e, "after cutting both torn tails").await;
    let batch = e.step(1, 2, false);
    ok(s.write(&lease, &batch).await, "write after the cut");
    check_stored(&s, &e, "after a write at the cut").await;
    ok(s.release(&lease).await, "release");

    // Only the session torn (the entry's events never written).
    b.append_raw(&s, "a", half_entry, b"");
    let lease = ok(s.acquire("a").await, "acquire after a torn session");
    check_head(&s, &lease, &e, "after cutting a torn session").await;
    let batch = e.step(2, 1, false);
    ok(s.write(&lease, &batch).await, "write after the cut");
    check_stored(&s, &e, "after cutting a torn session").await;
    ok(s.release(&lease).await, "release");

    // Only the event log torn.
    let event = event_line(e.last_seq().unwrap_or(0) + 1);
    let half_event = &event.line.as_bytes()[..event.line.len() / 2];
    b.append_raw(&s, "a", b"", half_event);
    let lease = ok(s.acquire("a").await, "acquire after a torn event");
    check_head(&s, &lease, &e, "after cutting a torn event").await;
    let batch = e.step(0, 2, false);
    ok(s.write(&lease, &batch).await, "write after the cut");
    check_stored(&s, &e, "after cutting a torn event").await;
}

/// `read_session` clamps its range to the session.
pub async fn read_session_clamps<B: Backend>(b: &B) {
    let s = b.fresh();
    let (mut e, init) = Expect::new("a");
    let lease = ok(s.create("a", &init).await, "create");
    let batch = e.step(3, 0, false);
    ok(s.write(&lease, &batch).await, "write");
    let all = &e.session;
    let len = all.len() as u64;
    let read = |a: u64, z: u64| s.read_session("a", a, z);
    assert_eq!(ok(read(0, u64::MAX).await, "read"), *all, "0..MAX");
    assert_eq!(ok(read(0, len).await, "read"), *all, "0..len");
    assert_eq!(ok(read(5, 40).await, "read"), all[5..40], "5..40");
    assert_eq!(
        ok(read(len - 3, len + 100).await, "read"),
        all[all.len() - 3..],
        "end clamped"
    );
    assert!(
        ok(read(len, len + 10).await, "read").is_empty(),
        "at the end"
    );
    assert!(
        ok(read(len + 5, len + 10).await, "read").is_empty(),
        "past the end"
    );
    assert!(ok(read(40, 5).await, "read").is_empty(), "start after end");
    assert!(ok(read(7, 7).await, "read").is_empty(), "empty range");
    expect_code(
        s.read_session("ghost", 0, 10).await,
        ErrorCode::AgentNotFound,
        "read_session of a missing agent",
    );
}

/// `list` gives every agent, sorted by id, with its current meta.
pub async fn list_is_sorted_with_meta<B: Backend>(b: &B) {
    let s = b.fresh();
    assert!(ok(s.list().await, "list").is_empty(), "an empty store");
    let mut leases = Vec::new();
    let mut expects = Vec::new();
    for id in ["b", "a.2", "c-1", "a", "B"] {
        let (e, init) = Expect::new(id);
        leases.push(ok(s.create(id, &init).await, "create"));
        expects.push(e);
    }
    // One released, one rewritten.
    ok(s.release(&leases[0]).await, "release");
    let batch = expects[1].step(0, 0, true);
    ok(s.write(&leases[1], &batch).await, "write");
    let listed = ok(s.list().await, "list");
    let ids: Vec<&str> = listed.iter().map(|l| l.id.as_str()).collect();
    assert_eq!(ids, ["B", "a", "a.2", "b", "c-1"], "sorted by id");
    for l in listed {
        let e = expects.iter().find(|e| e.id == l.id);
        let want = e.map(|e| text(&e.meta));
        assert_eq!(
            Some(text(&ok(l.meta, "listed meta"))),
            want,
            "meta of '{}'",
            l.id
        );
    }
}

/// `exists`, and `delete`: of a held agent `AGENT_LOCKED`, of a released one
/// done, of a missing one `AGENT_NOT_FOUND`; the id can be created again.
pub async fn exists_and_delete<B: Backend>(b: &B) {
    let s = b.fresh();
    expect_code(
        s.delete("a").await,
        ErrorCode::AgentNotFound,
        "delete in an empty store",
    );
    let (e, init) = Expect::new("a");
    let lease = ok(s.create("a", &init).await, "create");
    let (keep, init_k) = Expect::new("keep");
    let lk = ok(s.create("keep", &init_k).await, "create");
    ok(s.release(&lk).await, "release");
    expect_code(
        s.delete("a").await,
        ErrorCode::AgentLocked,
        "delete of a held agent",
    );
    if let Some(s2) = b.second(&s) {
        expect_code(
            s2.delete("a").await,
            ErrorCode::AgentLocked,
            "delete of an agent another handle holds",
        );
    }
    assert!(
        ok(s.exists("a").await, "exists"),
        "a refused delete keeps it"
    );
    check_stored(&s, &e, "after a refused delete").await;

    ok(s.release(&lease).await, "release");
    ok(s.delete("a").await, "delete of a released agent");
    assert!(!ok(s.exists("a").await, "exists"), "deleted");
    expect_code(
        s.acquire("a").await,
        ErrorCode::AgentNotFound,
        "acquire of a deleted agent",
    );
    expect_code(
        s.delete("a").await,
        ErrorCode::AgentNotFound,
        "delete twice",
    );
    expect_code(
        s.read_session("a", 0, 10).await,
        ErrorCode::AgentNotFound,
        "read_session of a deleted agent",
    );
    let ids: Vec<String> = ok(s.list().await, "list")
        .into_iter()
        .map(|l| l.id)
        .collect();
    assert_eq!(ids, ["keep"], "only the other agent is left");
    check_stored(&s, &keep, "the other agent after a delete").await;

    // The id is free again: a new agent, nothing of the old one.
    let (mut e2, mut init2) = Expect::new("a");
    let fresh_meta = meta_text("a", 77);
    init2.meta = Some(fresh_meta.clone());
    e2.meta = fresh_meta;
    let lease2 = ok(s.create("a", &init2).await, "create after delete");
    check_stored(&s, &e2, "re-created agent").await;
    check_head(&s, &lease2, &e2, "re-created agent").await;
    let old = Lease {
        agent_id: "a".into(),
        token: lease.token,
    };
    if old.token != lease2.token {
        expect_code(
            s.write(&old, &e2.peek(1, 0, false)).await,
            ErrorCode::LeaseLost,
            "a lease of the deleted agent",
        );
    }
    let batch = e2.step(1, 1, false);
    ok(
        s.write(&lease2, &batch).await,
        "write to the re-created agent",
    );
    check_stored(&s, &e2, "re-created agent after a write").await;
}

/// A batch whose `session_at` is not the session's length is refused and
/// stores nothing (neither its session bytes, nor its events, nor its meta);
/// the holder writes on afterwards.
pub async fn batch_at_wrong_offset_is_refused<B: Backend>(b: &B) {
    let s = b.fresh();
    let (mut e, init) = Expect::new("a");
    let lease = ok(s.create("a", &init).await, "create");
    let len = e.session.len() as u64;
    for at in [len + 1, len - 1, 0, u64::MAX] {
        let mut bad = e.peek(1, 1, true);
        bad.session_at = at;
        expect_code(
            s.write(&lease, &bad).await,
            ErrorCode::Internal,
            &format!("a batch at byte {at} of {len}"),
        );
        check_stored(&s, &e, &format!("after a batch at byte {at}")).await;
        let mut bad = e.peek(0, 1, true);
        bad.session_at = at;
        expect_code(
            s.write(&lease, &bad).await,
            ErrorCode::Internal,
            &format!("a batch without session bytes at byte {at} of {len}"),
        );
        check_stored(&s, &e, &format!("after an event batch at byte {at}")).await;
    }
    check_head(&s, &lease, &e, "after refused batches").await;
    let batch = e.step(1, 1, true);
    ok(s.write(&lease, &batch).await, "a batch at the end");
    check_stored(&s, &e, "after a batch at the end").await;
}

/// What one handle writes, another handle reads at once.
pub async fn second_handle_sees_writes<B: Backend>(b: &B) {
    let s = b.fresh();
    let Some(s2) = b.second(&s) else {
        return;
    };
    let (mut e, init) = Expect::new("a");
    let lease = ok(s.create("a", &init).await, "create");
    assert!(
        ok(s2.exists("a").await, "exists"),
        "seen by a second handle"
    );
    check_stored(&s2, &e, "second handle, after create").await;
    for i in 0..3 {
        let batch = e.step(1, 2, i == 1);
        ok(s.write(&lease, &batch).await, "write");
        check_stored(&s2, &e, &format!("second handle, after write {i}")).await;
        let tail = ok(s2.tail_events("a", 2).await, "tail_events");
        assert_eq!(
            tail,
            e.events[e.events.len() - 2..],
            "tail from a second handle"
        );
    }
}
