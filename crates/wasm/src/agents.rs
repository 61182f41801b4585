//! `IdbAgentStorage`: the core's [`AgentStorage`] over IndexedDB, in the same
//! database as sessions and event logs (FORMAT.md §16.4).
//!
//! An agent is one record in `agents` (its meta, the session's length, the
//! last event, the resume hint, the lease generation), its session bytes in
//! `agentChunks` keyed `[agentId, offset]` and its event lines in
//! `agentEvents` keyed `[agentId, seq]`. The record names what is committed:
//! every `create` and `write` is one `readwrite` transaction (durability
//! `strict`) that checks the lease generation inside it before writing
//! anything. The lease itself is a Web Lock (or a name held in this process,
//! see [`crate::locks`]); its fencing token is the record's generation, bumped
//! by each acquisition in a transaction.

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use forkpoint_core::events::Bookmark;
use forkpoint_core::storage::{AgentHead, AgentStorage, EventLine, Lease, Listed, WriteBatch};
use forkpoint_core::{Error, ErrorCode, Result, store::validate_id, time};
use js_sys::{Array, Reflect, Uint8Array};
use serde::{Deserialize, Serialize};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{IdbCursorDirection, IdbDatabase, IdbKeyRange, IdbObjectStore, IdbTransaction};

use crate::idb::{self, AGENT_CHUNKS, AGENT_EVENTS, AGENTS};
use crate::locks::{self, Held};

/// A write appends to the last chunk while it stays at most this long, then
/// starts a new one (a step rewrites at most this much).
pub const CHUNK_BYTES: u64 = 64 << 10;
/// The version of the agent record layout.
pub const RECORD_VERSION: u32 = 1;
/// Largest number used as the upper end of key ranges (2^53 - 1).
const MAX_KEY: f64 = 9_007_199_254_740_991.0;

/// The record of an agent (JSON text in `agents`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    record_version: u32,
    /// The `meta.json` text.
    meta: String,
    /// The session's committed length in bytes.
    session_len: u64,
    /// Where the last chunk starts.
    tail: u64,
    /// The last committed event.
    last_event: Option<Bookmark>,
    /// The session's resume hint.
    #[serde(default)]
    hint: Option<String>,
    /// The agent's resume state (FORMAT.md §14.2), written in the same
    /// transaction as the batch it describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    state: Option<String>,
    /// The fencing token of the last acquisition.
    generation: u64,
    /// Whether the lease of `generation` is held (cleared by `release`).
    held: bool,
    /// When the current holder took the lease (ISO 8601), for messages.
    #[serde(default)]
    held_since: Option<String>,
}

/// The agents of one IndexedDB database. Two objects on one database are two
/// holders as far as leases go (as two tabs are).
#[derive(Debug)]
pub struct IdbAgentStorage {
    db: IdbDatabase,
    name: String,
    /// The leases this object holds: agent id → (token, lock).
    held: RefCell<HashMap<String, (u64, Held)>>,
}

fn key(id: &str, n: f64) -> JsValue {
    Array::of2(&id.into(), &n.into()).into()
}

/// Keys `[id, lo]` to `[id, hi]`, both included.
fn range(id: &str, lo: f64, hi: f64) -> Result<JsValue> {
    IdbKeyRange::bound(&key(id, lo), &key(id, hi))
        .map(JsValue::from)
        .map_err(|e| idb::idb_error(&e, "bad key range"))
}

fn store_of(tx: &IdbTransaction, name: &str) -> Result<IdbObjectStore> {
    tx.object_store(name)
        .map_err(|e| idb::idb_error(&e, &format!("no {name} store (database schema too old?)")))
}

fn fail(what: &'static str) -> impl Fn(JsValue) -> Error {
    move |e| idb::idb_error(&e, what)
}

fn not_found(id: &str) -> Error {
    Error::new(
        ErrorCode::AgentNotFound,
        format!("no agent '{id}' in the store"),
    )
}

fn lease_lost(id: &str) -> Error {
    Error::new(
        ErrorCode::LeaseLost,
        format!(
            "the lease on agent '{id}' was lost: another tab or Agent object took it over, or it was released"
        ),
    )
}

fn already_exists(id: &str) -> Error {
    Error::new(
        ErrorCode::AlreadyExists,
        format!("an agent '{id}' already exists in the store"),
    )
}

fn now_ms() -> f64 {
    js_sys::Date::now()
}

/// The second member of a `[id, n]` key.
fn key_number(k: &JsValue) -> Option<f64> {
    k.dyn_ref::<Array>().and_then(|a| a.get(1).as_f64())
}

/// The first generation of a new agent: above any token an earlier agent of
/// the same id handed out, in practice (milliseconds × 1024 plus 10 random
/// bits, below 2^53), so a lease of a deleted agent never fits a new one.
fn first_generation() -> u64 {
    let random = (js_sys::Math::random() * 1024.0) as u64 & 1023;
    (now_ms() as u64).saturating_mul(1024) | random
}

/// Runs `body` (which issues requests in `tx`), then waits for the commit; on
/// an error the transaction is aborted, nothing of it stored, and that error
/// is returned.
async fn in_transaction<T>(
    tx: &IdbTransaction,
    body: impl Future<Output = Result<T>>,
) -> Result<T> {
    match body.await {
        Ok(v) => {
            idb::transaction(tx).await?;
            Ok(v)
        }
        Err(e) => {
            let _ = tx.abort();
            let _ = idb::transaction(tx).await;
            Err(e)
        }
    }
}

impl Record {
    fn parse(v: &JsValue, id: &str) -> Result<Record> {
        let text = v
            .as_string()
            .ok_or_else(|| Error::corrupted(format!("the record of agent '{id}' is not text")))?;
        let r: Record = serde_json::from_str(&text).map_err(|e| {
            Error::corrupted(format!("the record of agent '{id}' cannot be read: {e}"))
        })?;
        if r.record_version > RECORD_VERSION {
            return Err(Error::new(
                ErrorCode::UnsupportedFormat,
                format!(
                    "the record of agent '{id}' has version {} (this build reads up to {RECORD_VERSION})",
                    r.record_version
                ),
            ));
        }
        Ok(r)
    }

    fn text(&self) -> Result<JsValue> {
        serde_json::to_string(self)
            .map(|s| JsValue::from_str(&s))
            .map_err(|e| Error::internal(format!("agent record: {e}")))
    }

    fn check(&self, lease: &Lease) -> Result<()> {
        if !self.held || self.generation != lease.token {
            return Err(lease_lost(&lease.agent_id));
        }
        Ok(())
    }

    fn last_seq(&self) -> Option<u64> {
        self.last_event.map(|b| b.seq)
    }
}

fn utf8(bytes: &[u8], what: &str) -> Result<String> {
    String::from_utf8(bytes.to_vec())
        .map_err(|_| Error::invalid_input(format!("{what} is not UTF-8 text")))
}

/// Event lines must continue the log (seqs strictly increasing after `last`).
fn check_events(events: &[EventLine], last: Option<u64>) -> Result<()> {
    let mut prev = last;
    for e in events {
        if prev.is_some_and(|p| e.meta.seq <= p) {
            return Err(Error::internal(format!(
                "event {} does not continue the log (after {})",
                e.meta.seq,
                prev.unwrap_or(0)
            )));
        }
        prev = Some(e.meta.seq);
    }
    Ok(())
}

impl IdbAgentStorage {
    /// The agents of database `name`, opened as `db`.
    pub fn new(db: IdbDatabase, name: &str) -> Self {
        IdbAgentStorage {
            db,
            name: name.to_string(),
            held: RefCell::new(HashMap::new()),
        }
    }

    /// Opens (creating or upgrading) database `name`.
    pub async fn open(name: &str) -> Result<Self> {
        let db = idb::open(name).await?;
        Ok(Self::new(db, name))
    }

    /// The database connection.
    pub fn db(&self) -> &IdbDatabase {
        &self.db
    }

    /// Closes the database connection (later calls fail with `CLOSED`).
    pub fn close(&self) {
        self.db.close();
    }

    /// The lock name of agent `id` (unique per database and agent).
    fn lock_name(&self, id: &str) -> String {
        format!(
            "forkpoint:agent:{}",
            serde_json::Value::from(vec![self.name.as_str(), id])
        )
    }

    fn begin(&self, stores: &[&str], mode: &str) -> Result<IdbTransaction> {
        idb::begin_on(&self.db, stores, mode, mode == "readwrite")
    }

    /// The agent's record in `tx` (`None`: no such agent).
    async fn record_in(&self, tx: &IdbTransaction, id: &str) -> Result<Option<Record>> {
        let req = record_request(tx, id)?;
        record_of(&req, id).await
    }

    async fn record(&self, id: &str) -> Result<Record> {
        let tx = self.begin(&[AGENTS], "readonly")?;
        self.record_in(&tx, id).await?.ok_or_else(|| not_found(id))
    }

    /// Why `id` cannot be taken: the holder's time when the record has it.
    async fn locked(&self, id: &str) -> Error {
        let since = match self.record(id).await {
            Ok(r) if r.held => r.held_since.map(|s| format!(" (since {s})")),
            _ => None,
        };
        Error::new(
            ErrorCode::AgentLocked,
            format!(
                "agent '{id}' is open in another tab or Agent object{}",
                since.unwrap_or_default()
            ),
        )
    }

    /// Puts `bytes` as chunks from byte `at` (at most [`CHUNK_BYTES`] each);
    /// returns where the last one starts.
    fn put_chunks(&self, tx: &IdbTransaction, id: &str, at: u64, bytes: &[u8]) -> Result<u64> {
        let chunks = store_of(tx, AGENT_CHUNKS)?;
        let mut start = at;
        let mut tail = at;
        for part in bytes.chunks(CHUNK_BYTES as usize) {
            chunks
                .put_with_key(&Uint8Array::from(part), &key(id, start as f64))
                .map_err(fail("cannot store session bytes"))?;
            tail = start;
            start += part.len() as u64;
        }
        Ok(tail)
    }

    fn add_events(&self, tx: &IdbTransaction, id: &str, events: &[EventLine]) -> Result<()> {
        if events.is_empty() {
            return Ok(());
        }
        let store = store_of(tx, AGENT_EVENTS)?;
        for e in events {
            // `add`, not `put`: a seq already stored fails the transaction.
            store
                .add_with_key(&JsValue::from_str(&e.line), &key(id, e.meta.seq as f64))
                .map_err(fail("cannot store an event"))?;
        }
        Ok(())
    }

    /// Gives up the lock of agent `id` if this object holds it with `token`
    /// (any token with `None`); returns whether it did.
    async fn let_go(&self, id: &str, token: Option<u64>) -> bool {
        let held = {
            let mut h = self.held.borrow_mut();
            match h.get(id) {
                Some((t, _)) if token.is_none_or(|x| x == *t) => h.remove(id),
                _ => None,
            }
        };
        match held {
            Some((_, lock)) => {
                lock.release().await;
                true
            }
            None => false,
        }
    }

    async fn create_in(
        &self,
        tx: &IdbTransaction,
        id: &str,
        init: &WriteBatch,
        meta: String,
    ) -> Result<u64> {
        if self.record_in(tx, id).await?.is_some() {
            return Err(already_exists(id));
        }
        check_events(&init.events, None)?;
        let tail = self.put_chunks(tx, id, 0, &init.session)?;
        self.add_events(tx, id, &init.events)?;
        let generation = first_generation();
        let rec = Record {
            record_version: RECORD_VERSION,
            meta,
            session_len: init.session.len() as u64,
            tail,
            last_event: init.events.last().map(|e| e.meta.bookmark()),
            hint: init
                .hint
                .as_deref()
                .and_then(|h| String::from_utf8(h.to_vec()).ok()),
            state: None,
            generation,
            held: true,
            held_since: Some(time::ms_to_iso(now_ms() as i64)),
        };
        store_of(tx, AGENTS)?
            .put_with_key(&rec.text()?, &id.into())
            .map_err(fail("cannot store an agent record"))?;
        Ok(generation)
    }

    async fn acquire_in(&self, tx: &IdbTransaction, id: &str) -> Result<u64> {
        let mut rec = self.record_in(tx, id).await?.ok_or_else(|| not_found(id))?;
        // Anything the record does not name was never committed: cut it.
        store_of(tx, AGENT_CHUNKS)?
            .delete(&range(id, rec.session_len as f64, MAX_KEY)?)
            .map_err(fail("cannot cut session bytes"))?;
        let after = rec.last_seq().map_or(0.0, |s| s as f64 + 1.0);
        store_of(tx, AGENT_EVENTS)?
            .delete(&range(id, after, MAX_KEY)?)
            .map_err(fail("cannot cut events"))?;
        rec.generation += 1;
        rec.held = true;
        rec.held_since = Some(time::ms_to_iso(now_ms() as i64));
        store_of(tx, AGENTS)?
            .put_with_key(&rec.text()?, &id.into())
            .map_err(fail("cannot store an agent record"))?;
        Ok(rec.generation)
    }

    /// Whether this object holds `lease` (a lease it gave up, or another
    /// object's, writes nothing even before the record is read).
    fn holds(&self, lease: &Lease) -> bool {
        self.held
            .borrow()
            .get(&lease.agent_id)
            .is_some_and(|(t, _)| *t == lease.token)
    }

    async fn write_in(&self, tx: &IdbTransaction, lease: &Lease, batch: &WriteBatch) -> Result<()> {
        let id = &lease.agent_id;
        let mut rec = self
            .record_in(tx, id)
            .await?
            .ok_or_else(|| lease_lost(id))?;
        rec.check(lease)?;
        if batch.session_at != rec.session_len {
            return Err(Error::internal(format!(
                "a batch for byte {} of a session of {} bytes",
                batch.session_at, rec.session_len
            )));
        }
        check_events(&batch.events, rec.last_seq())?;
        if !batch.session.is_empty() {
            let add = batch.session.len() as u64;
            let tail_len = rec.session_len - rec.tail;
            if tail_len > 0 && tail_len + add <= CHUNK_BYTES {
                // Append to the last chunk (rewritten whole, at most CHUNK_BYTES).
                let chunks = store_of(tx, AGENT_CHUNKS)?;
                let req = chunks
                    .get(&key(id, rec.tail as f64))
                    .map_err(fail("cannot read session bytes"))?;
                let old = idb::request(&req).await?;
                let old: Uint8Array = old.dyn_into().map_err(|_| {
                    Error::corrupted(format!("agent '{id}': its last chunk is missing"))
                })?;
                let mut bytes = old.to_vec();
                if (bytes.len() as u64) < tail_len {
                    return Err(Error::corrupted(format!(
                        "agent '{id}': its last chunk holds {} of its {tail_len} bytes",
                        bytes.len()
                    )));
                }
                bytes.truncate(tail_len as usize);
                bytes.extend_from_slice(&batch.session);
                chunks
                    .put_with_key(
                        &Uint8Array::from(bytes.as_slice()),
                        &key(id, rec.tail as f64),
                    )
                    .map_err(fail("cannot store session bytes"))?;
            } else {
                rec.tail = self.put_chunks(tx, id, rec.session_len, &batch.session)?;
            }
            rec.session_len += add;
        }
        self.add_events(tx, id, &batch.events)?;
        if let Some(e) = batch.events.last() {
            rec.last_event = Some(e.meta.bookmark());
        }
        if let Some(m) = &batch.meta {
            rec.meta = utf8(m, "meta.json")?;
        }
        if let Some(h) = &batch.hint {
            // A cache: a hint that is not text is dropped.
            rec.hint = String::from_utf8(h.clone()).ok();
        }
        if let Some(st) = &batch.state {
            rec.state = String::from_utf8(st.clone()).ok();
        }
        store_of(tx, AGENTS)?
            .put_with_key(&rec.text()?, &id.into())
            .map_err(fail("cannot store an agent record"))?;
        Ok(())
    }

    /// Appends raw bytes past what agent `id`'s record names (a chunk at the
    /// session's end, an event record after the last seq), bypassing the
    /// lease: the closest IndexedDB gets to a writer that died mid-write. The
    /// transaction is started now, so any transaction started after this call
    /// sees it. For the contract suite.
    #[cfg(feature = "contract")]
    pub fn append_raw(&self, id: &str, session: &[u8], events: &[u8]) -> Result<()> {
        let tx = self.begin(&[AGENTS, AGENT_CHUNKS, AGENT_EVENTS], "readwrite")?;
        let req = store_of(&tx, AGENTS)?
            .get(&id.into())
            .map_err(fail("cannot read an agent record"))?;
        let (r, t, id) = (req.clone(), tx.clone(), id.to_string());
        let (session, events) = (
            session.to_vec(),
            String::from_utf8_lossy(events).into_owned(),
        );
        let on_record = Closure::once_into_js(move |_e: JsValue| {
            let Ok(rec) = r
                .result()
                .map_err(|_| ())
                .and_then(|v| Record::parse(&v, &id).map_err(|_| ()))
            else {
                return;
            };
            if !session.is_empty()
                && let Ok(s) = t.object_store(AGENT_CHUNKS)
            {
                let _ = s.put_with_key(
                    &Uint8Array::from(session.as_slice()),
                    &key(&id, rec.session_len as f64),
                );
            }
            if !events.is_empty()
                && let Ok(s) = t.object_store(AGENT_EVENTS)
            {
                let next = rec.last_seq().map_or(1.0, |s| s as f64 + 1.0);
                let _ = s.put_with_key(&JsValue::from_str(&events), &key(&id, next));
            }
        });
        req.set_onsuccess(Some(on_record.unchecked_ref()));
        Ok(())
    }
}

impl AgentStorage for IdbAgentStorage {
    async fn create(&self, id: &str, init: &WriteBatch) -> Result<Lease> {
        validate_id(id, "agent")?;
        let Some(meta) = &init.meta else {
            return Err(Error::invalid_input("a new agent needs its meta"));
        };
        let meta = utf8(meta, "meta.json")?;
        // Someone holds the lease: the agent exists (or is being created).
        let Some(lock) = locks::try_take(&self.lock_name(id)).await? else {
            return Err(already_exists(id));
        };
        let stores = [AGENTS, AGENT_CHUNKS, AGENT_EVENTS];
        let out = match self.begin(&stores, "readwrite") {
            Ok(tx) => in_transaction(&tx, self.create_in(&tx, id, init, meta)).await,
            Err(e) => Err(e),
        };
        match out {
            Ok(token) => {
                self.held.borrow_mut().insert(id.to_string(), (token, lock));
                Ok(Lease {
                    agent_id: id.to_string(),
                    token,
                })
            }
            Err(e) => {
                lock.release().await;
                Err(e)
            }
        }
    }

    async fn acquire(&self, id: &str) -> Result<Lease> {
        validate_id(id, "agent")?;
        let Some(lock) = locks::try_take(&self.lock_name(id)).await? else {
            return Err(self.locked(id).await);
        };
        let stores = [AGENTS, AGENT_CHUNKS, AGENT_EVENTS];
        // Durability relaxed: every write under the new token is strict and
        // stores the record (generation, held) again, so nothing depends on
        // this commit reaching the disk first; what it cuts is cut again by
        // the next acquisition if it does not.
        let out = match idb::begin_on(&self.db, &stores, "readwrite", false) {
            Ok(tx) => in_transaction(&tx, self.acquire_in(&tx, id)).await,
            Err(e) => Err(e),
        };
        match out {
            Ok(token) => {
                self.held.borrow_mut().insert(id.to_string(), (token, lock));
                Ok(Lease {
                    agent_id: id.to_string(),
                    token,
                })
            }
            Err(e) => {
                lock.release().await;
                Err(e)
            }
        }
    }

    async fn head(&self, lease: &Lease) -> Result<AgentHead> {
        if !self.holds(lease) {
            return Err(lease_lost(&lease.agent_id));
        }
        let rec = match self.record(&lease.agent_id).await {
            Err(e) if e.code == ErrorCode::AgentNotFound => {
                return Err(lease_lost(&lease.agent_id));
            }
            r => r?,
        };
        rec.check(lease)?;
        Ok(AgentHead {
            meta: rec.meta.into_bytes(),
            session_len: rec.session_len,
            last_event: rec.last_event,
            hint: rec.hint.map(String::into_bytes),
            state: rec.state.map(String::into_bytes),
        })
    }

    async fn read_session(&self, id: &str, start: u64, end: u64) -> Result<Vec<u8>> {
        validate_id(id, "agent")?;
        let tx = self.begin(&[AGENTS, AGENT_CHUNKS], "readonly")?;
        let rec = record_request(&tx, id)?;
        let chunks = store_of(&tx, AGENT_CHUNKS)?;
        // The chunk that holds byte `start`: the last one starting at or before it.
        let first = if start > 0 {
            let dir = IdbCursorDirection::Prev;
            let r = range(id, 0.0, (start as f64).min(MAX_KEY))?;
            Some(
                chunks
                    .open_cursor_with_range_and_direction(&r, dir)
                    .map_err(fail("cannot read session bytes"))?,
            )
        } else {
            None
        };
        let rec = record_of(&rec, id).await?.ok_or_else(|| not_found(id))?;
        let end = end.min(rec.session_len);
        let start = start.min(end);
        if start == end {
            return Ok(Vec::new());
        }
        let from = match first {
            Some(req) => {
                let cursor = idb::request(&req).await?;
                let k = Reflect::get(&cursor, &"key".into()).unwrap_or(JsValue::UNDEFINED);
                key_number(&k).ok_or_else(|| {
                    Error::corrupted(format!("agent '{id}': no session chunk holds byte {start}"))
                })?
            }
            None => 0.0,
        };
        let req = chunks
            .get_all_with_key(&range(id, from, end as f64 - 1.0)?)
            .map_err(fail("cannot read session bytes"))?;
        let all: Array = idb::request(&req)
            .await?
            .dyn_into()
            .map_err(|_| Error::corrupted("agent chunks: not a list"))?;
        let mut out = Vec::with_capacity((end - start) as usize);
        let mut at = from as u64;
        for c in all.iter() {
            let c: Uint8Array = c.dyn_into().map_err(|_| {
                Error::corrupted(format!("agent '{id}': a session chunk is not bytes"))
            })?;
            let len = u64::from(c.length());
            let lo = start.max(at) - at;
            let hi = end.min(at + len).saturating_sub(at);
            if lo < hi {
                out.extend_from_slice(&c.to_vec()[lo as usize..hi as usize]);
            }
            at += len;
            if at >= end {
                break;
            }
        }
        if (out.len() as u64) != end - start {
            return Err(Error::corrupted(format!(
                "agent '{id}': {} of the session's bytes {start}..{end} are stored",
                out.len()
            )));
        }
        Ok(out)
    }

    async fn read_events(
        &self,
        id: &str,
        since: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Arc<str>>> {
        validate_id(id, "agent")?;
        let tx = self.begin(&[AGENTS, AGENT_EVENTS], "readonly")?;
        let rec = self
            .record_in(&tx, id)
            .await?
            .ok_or_else(|| not_found(id))?;
        let Some(last) = rec.last_seq() else {
            return Ok(Vec::new());
        };
        let lo = since.map_or(0, |s| s.saturating_add(1));
        if limit == 0 || lo > last {
            return Ok(Vec::new());
        }
        let limit = u32::try_from(limit).unwrap_or(u32::MAX);
        let req = store_of(&tx, AGENT_EVENTS)?
            .get_all_with_key_and_limit(&range(id, lo as f64, last as f64)?, limit)
            .map_err(fail("cannot read events"))?;
        lines(idb::request(&req).await?, id)
    }

    async fn tail_events(&self, id: &str, count: usize) -> Result<Vec<Arc<str>>> {
        validate_id(id, "agent")?;
        let tx = self.begin(&[AGENTS, AGENT_EVENTS], "readonly")?;
        let rec = record_request(&tx, id)?;
        let events = store_of(&tx, AGENT_EVENTS)?;
        // The log's first seq (a fork's log starts after its parent's).
        let first = events
            .get_all_keys_with_key_and_limit(&range(id, 0.0, MAX_KEY)?, 1)
            .map_err(fail("cannot read events"))?;
        let rec = record_of(&rec, id).await?.ok_or_else(|| not_found(id))?;
        let first = idb::request(&first).await?;
        let (Some(last), Some(first)) = (
            rec.last_seq(),
            first.dyn_ref::<Array>().and_then(|a| key_number(&a.get(0))),
        ) else {
            return Ok(Vec::new());
        };
        if count == 0 {
            return Ok(Vec::new());
        }
        let first = first as u64;
        // Seqs are consecutive: the last `count` are `last - count + 1 ..= last`.
        let lo = (last + 1).saturating_sub(count as u64).max(first);
        let req = events
            .get_all_with_key(&range(id, lo as f64, last as f64)?)
            .map_err(fail("cannot read events"))?;
        let mut out = lines(idb::request(&req).await?, id)?;
        if out.len() < count && lo > first {
            // A gap in the seqs (never written so; read them all).
            let req = events
                .get_all_with_key(&range(id, first as f64, last as f64)?)
                .map_err(fail("cannot read events"))?;
            out = lines(idb::request(&req).await?, id)?;
            let from = out.len().saturating_sub(count);
            out.drain(..from);
        }
        Ok(out)
    }

    async fn write(&self, lease: &Lease, batch: &WriteBatch) -> Result<()> {
        if !self.holds(lease) {
            return Err(lease_lost(&lease.agent_id));
        }
        let mut stores = vec![AGENTS];
        if !batch.session.is_empty() {
            stores.push(AGENT_CHUNKS);
        }
        if !batch.events.is_empty() {
            stores.push(AGENT_EVENTS);
        }
        let tx = self.begin(&stores, "readwrite")?;
        in_transaction(&tx, self.write_in(&tx, lease, batch)).await
    }

    async fn release(&self, lease: &Lease) -> Result<()> {
        let id = &lease.agent_id;
        if !self.holds(lease) {
            return Ok(()); // stale: nothing to give up
        }
        // Marks the record released (a write with this token is refused
        // there too). Best effort: if it cannot be written (a full disk),
        // the lease is given up all the same — this object no longer writes
        // with the token, and the next acquisition makes it stale.
        let cleared = async {
            let tx = self.begin(&[AGENTS], "readwrite")?;
            in_transaction(&tx, async {
                if let Some(mut rec) = self.record_in(&tx, id).await?
                    && rec.held
                    && rec.generation == lease.token
                {
                    rec.held = false;
                    rec.held_since = None;
                    store_of(&tx, AGENTS)?
                        .put_with_key(&rec.text()?, &id.into())
                        .map_err(fail("cannot store an agent record"))?;
                }
                Ok(())
            })
            .await
        };
        let _ = cleared.await;
        self.let_go(id, Some(lease.token)).await;
        Ok(())
    }

    async fn list(&self) -> Result<Vec<Listed>> {
        let tx = self.begin(&[AGENTS], "readonly")?;
        let store = store_of(&tx, AGENTS)?;
        let keys = store.get_all_keys().map_err(fail("cannot list agents"))?;
        let values = store.get_all().map_err(fail("cannot list agents"))?;
        let keys: Array = idb::request(&keys)
            .await?
            .dyn_into()
            .map_err(|_| Error::corrupted("agents: not a list of keys"))?;
        let values: Array = idb::request(&values)
            .await?
            .dyn_into()
            .map_err(|_| Error::corrupted("agents: not a list of records"))?;
        // Keys sort as strings do (UTF-16 code units; ids are ASCII).
        Ok(keys
            .iter()
            .zip(values.iter())
            .map(|(k, v)| {
                let id = k.as_string().unwrap_or_else(|| format!("{k:?}"));
                let meta = Record::parse(&v, &id).map(|r| r.meta.into_bytes());
                Listed { id, meta }
            })
            .collect())
    }

    async fn exists(&self, id: &str) -> Result<bool> {
        validate_id(id, "agent")?;
        let tx = self.begin(&[AGENTS], "readonly")?;
        let req = store_of(&tx, AGENTS)?
            .count_with_key(&id.into())
            .map_err(fail("cannot read an agent record"))?;
        Ok(idb::request(&req).await?.as_f64().unwrap_or(0.0) > 0.0)
    }

    async fn delete(&self, id: &str) -> Result<()> {
        validate_id(id, "agent")?;
        let Some(lock) = locks::try_take(&self.lock_name(id)).await? else {
            let e = self.locked(id).await;
            return Err(Error::new(
                ErrorCode::AgentLocked,
                format!("{}; close it before deleting it", e.message),
            ));
        };
        let stores = [AGENTS, AGENT_CHUNKS, AGENT_EVENTS];
        let out = match self.begin(&stores, "readwrite") {
            Ok(tx) => {
                in_transaction(&tx, async {
                    let req = store_of(&tx, AGENTS)?
                        .count_with_key(&id.into())
                        .map_err(fail("cannot read an agent record"))?;
                    if idb::request(&req).await?.as_f64().unwrap_or(0.0) == 0.0 {
                        return Err(not_found(id));
                    }
                    let all = range(id, 0.0, MAX_KEY)?;
                    store_of(&tx, AGENTS)?
                        .delete(&id.into())
                        .map_err(fail("cannot delete an agent"))?;
                    store_of(&tx, AGENT_CHUNKS)?
                        .delete(&all)
                        .map_err(fail("cannot delete an agent"))?;
                    store_of(&tx, AGENT_EVENTS)?
                        .delete(&all)
                        .map_err(fail("cannot delete an agent"))?;
                    Ok(())
                })
                .await
            }
            Err(e) => Err(e),
        };
        lock.release().await;
        out
    }
}

/// Asks for agent `id`'s record in `tx`. Requests complete in the order they
/// were made, and a request must be awaited before the ones made after it
/// (its handler is set when it is awaited), so reads that go with the record
/// are asked for after this and awaited after [`record_of`].
fn record_request(tx: &IdbTransaction, id: &str) -> Result<web_sys::IdbRequest> {
    store_of(tx, AGENTS)?
        .get(&id.into())
        .map_err(fail("cannot read an agent record"))
}

/// The record a [`record_request`] read (`None`: no such agent).
async fn record_of(req: &web_sys::IdbRequest, id: &str) -> Result<Option<Record>> {
    let v = idb::request(req).await?;
    if v.is_undefined() {
        return Ok(None);
    }
    Record::parse(&v, id).map(Some)
}

/// Event records as lines.
fn lines(v: JsValue, id: &str) -> Result<Vec<Arc<str>>> {
    let a: Array = v
        .dyn_into()
        .map_err(|_| Error::corrupted("agent events: not a list"))?;
    a.iter()
        .map(|x| {
            x.as_string().map(Arc::from).ok_or_else(|| {
                Error::corrupted(format!(
                    "agent '{id}': an event record is not an event line"
                ))
            })
        })
        .collect()
}
