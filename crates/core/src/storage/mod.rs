//! The storage seam: one async trait for everything an agent keeps (its session
//! entries, its numbered events, its `meta.json`), and the lease that makes one
//! writer per agent (FORMAT.md §15).
//!
//! The trait is `async` without a `Send` bound, so IndexedDB (whose futures live
//! on the page's thread) can implement it; the file implementation completes
//! synchronously and is driven from the libuv pool. It is shaped for a network
//! store too: a step is one [`WriteBatch`] (one round trip, one transaction), and
//! nothing is read before a write — the writer knows where the logs end.
//!
//! Implementations: files (`forkpoint-fs`), [`MemoryStorage`] (tests),
//! [`FaultStorage`] (fails, tears or loses the Nth operation, for crash-point
//! enumeration), IndexedDB (`forkpoint-wasm`). One contract suite
//! (the `contract` module, cargo feature `contract`; and the JS suite) runs on all.

use std::sync::Arc;

use crate::Result;
use crate::events::{Bookmark, EventMeta};

#[cfg(feature = "contract")]
pub mod contract;
mod fault;
mod log;
mod memory;

pub use fault::{Fault, FaultPlan, FaultStorage};
pub use log::StoredLog;
pub use memory::MemoryStorage;

/// `AGENT_NOT_FOUND` for agent `id`.
pub fn agent_not_found(id: &str) -> crate::Error {
    crate::Error::new(
        crate::ErrorCode::AgentNotFound,
        format!("no agent '{id}' in the store"),
    )
}

/// `LEASE_LOST` for agent `id`.
pub fn lease_lost(id: &str) -> crate::Error {
    crate::Error::new(
        crate::ErrorCode::LeaseLost,
        format!(
            "the lease on agent '{id}' was lost: another writer took it over, or it was released"
        ),
    )
}

/// `ALREADY_EXISTS` for agent `id`.
pub fn already_exists(id: &str) -> crate::Error {
    crate::Error::new(
        crate::ErrorCode::AlreadyExists,
        format!("an agent '{id}' already exists in the store"),
    )
}

/// Proof of holding an agent's lease: the agent and the fencing token every
/// write carries. Tokens of one agent strictly increase with each acquisition;
/// a write whose token is not the current one fails with `LEASE_LOST` and
/// stores nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The agent.
    pub agent_id: String,
    /// The fencing token (files: the lock's generation).
    pub token: u64,
}

/// One event line of a batch, built by the writer (the seq continues the log).
#[derive(Debug, Clone)]
pub struct EventLine {
    /// seq, timestamp, channel and type.
    pub meta: EventMeta,
    /// The whole line, without its newline.
    pub line: Arc<str>,
}

/// What one step writes, durable together when [`AgentStorage::write`] returns.
///
/// Parts are applied in this order: session lines, event lines, meta, hint. A
/// store that cannot make them atomic (files) may lose a suffix of this order
/// in a crash but never a prefix: events never outlive the entries they
/// describe, and `meta` is written last.
#[derive(Debug, Clone, Default)]
pub struct WriteBatch {
    /// Whole session lines (each ends with `\n`) appended at `session_at`.
    pub session: Vec<u8>,
    /// The session's length before this batch (the writer knows it; a store
    /// may check it and refuse a batch that would not land at the end).
    pub session_at: u64,
    /// Event lines appended in order; their seqs continue the log.
    pub events: Vec<EventLine>,
    /// Replaces the agent's `meta.json` (its full text).
    pub meta: Option<Vec<u8>>,
    /// Replaces the session's resume hint (a cache: a store may drop it).
    pub hint: Option<Vec<u8>>,
    /// Replaces the agent's resume state (a cache, checked when read: a store
    /// may write it without syncing, or drop it).
    pub state: Option<Vec<u8>>,
}

impl WriteBatch {
    /// Whether the batch writes nothing.
    pub fn is_empty(&self) -> bool {
        self.session.is_empty()
            && self.events.is_empty()
            && self.meta.is_none()
            && self.hint.is_none()
    }
}

/// What opening an agent reads first: small, independent of the history.
#[derive(Debug, Clone)]
pub struct AgentHead {
    /// The `meta.json` text.
    pub meta: Vec<u8>,
    /// The session's length in bytes (complete lines only: a torn tail was cut
    /// when the lease was taken).
    pub session_len: u64,
    /// The last event, if any.
    pub last_event: Option<Bookmark>,
    /// The session's resume hint, if the store keeps one.
    pub hint: Option<Vec<u8>>,
    /// The agent's resume state, if the store keeps one.
    pub state: Option<Vec<u8>>,
}

/// One agent of a store, as `list` reports it.
#[derive(Debug, Clone)]
pub struct Listed {
    /// The agent's id.
    pub id: String,
    /// Its `meta.json` text, or why it cannot be read.
    pub meta: std::result::Result<Vec<u8>, crate::Error>,
}

/// The agents of a store as both bindings list them: a JSON array of their
/// `meta.json` (one that cannot be read is `{agentId, corrupted: true,
/// error}`), by creation time then id.
pub fn listed_json(listed: Vec<Listed>) -> Result<String> {
    use serde_json::{Value, json};
    let mut out: Vec<Value> = listed
        .into_iter()
        .map(|l| match l.meta {
            Ok(m) => serde_json::from_slice(&m).unwrap_or_else(
                |e| json!({ "agentId": l.id, "corrupted": true, "error": e.to_string() }),
            ),
            Err(e) => json!({ "agentId": l.id, "corrupted": true, "error": e.message }),
        })
        .collect();
    let key = |v: &Value| {
        (
            v["createdAt"].as_str().unwrap_or("").to_string(),
            v["agentId"].as_str().unwrap_or("").to_string(),
        )
    };
    out.sort_by_key(key);
    crate::types::to_json_text(&out)
}

/// The storage of agents. Every method either completes whole or fails without
/// changing anything, except `write` on stores that cannot make a batch atomic
/// (see [`WriteBatch`]). Errors carry stable codes: `AGENT_NOT_FOUND`,
/// `AGENT_LOCKED` (the message names the holder where known), `ALREADY_EXISTS`,
/// `LEASE_LOST`, `STORAGE_FULL`, `IO`, `CORRUPTED_DATA`.
#[allow(async_fn_in_trait)]
pub trait AgentStorage {
    /// Creates agent `id` with `init` (its first session lines — the header
    /// first —, its first events and its meta, which is required) and takes its
    /// lease, all or nothing: `ALREADY_EXISTS` when the id is taken. A fork is
    /// created this way, so it appears whole or not at all.
    async fn create(&self, id: &str, init: &WriteBatch) -> Result<Lease>;

    /// Takes the lease of an existing agent (`AGENT_NOT_FOUND`, `AGENT_LOCKED`).
    /// A log's last line without its newline was never acknowledged: it is cut
    /// here, before anything reads the agent.
    async fn acquire(&self, id: &str) -> Result<Lease>;

    /// Reads what opening needs (meta, the logs' ends, the hint).
    async fn head(&self, lease: &Lease) -> Result<AgentHead>;

    /// Bytes `start..end` of the agent's session (`end` clamped to its length).
    async fn read_session(&self, id: &str, start: u64, end: u64) -> Result<Vec<u8>>;

    /// The event lines with a seq greater than `since` (all with `None`), at
    /// most `limit` of them, oldest first.
    async fn read_events(
        &self,
        id: &str,
        since: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Arc<str>>>;

    /// The last `count` event lines (fewer when the log is shorter), oldest first.
    async fn tail_events(&self, id: &str, count: usize) -> Result<Vec<Arc<str>>>;

    /// Writes a batch under the lease; durable when it returns. A stale token is
    /// `LEASE_LOST` and nothing is stored.
    async fn write(&self, lease: &Lease, batch: &WriteBatch) -> Result<()>;

    /// Gives the lease up (a stale lease is not an error: there is nothing to give up).
    async fn release(&self, lease: &Lease) -> Result<()>;

    /// Every agent, sorted by id.
    async fn list(&self) -> Result<Vec<Listed>>;

    /// Whether agent `id` exists.
    async fn exists(&self, id: &str) -> Result<bool>;

    /// Deletes an agent no one holds (`AGENT_LOCKED` otherwise, `AGENT_NOT_FOUND`).
    async fn delete(&self, id: &str) -> Result<()>;
}

macro_rules! forward {
    ($($ty:ty),*) => {$(
        impl<T: AgentStorage + ?Sized> AgentStorage for $ty {
            async fn create(&self, id: &str, init: &WriteBatch) -> Result<Lease> {
                (**self).create(id, init).await
            }
            async fn acquire(&self, id: &str) -> Result<Lease> {
                (**self).acquire(id).await
            }
            async fn head(&self, lease: &Lease) -> Result<AgentHead> {
                (**self).head(lease).await
            }
            async fn read_session(&self, id: &str, start: u64, end: u64) -> Result<Vec<u8>> {
                (**self).read_session(id, start, end).await
            }
            async fn read_events(&self, id: &str, since: Option<u64>, limit: usize) -> Result<Vec<Arc<str>>> {
                (**self).read_events(id, since, limit).await
            }
            async fn tail_events(&self, id: &str, count: usize) -> Result<Vec<Arc<str>>> {
                (**self).tail_events(id, count).await
            }
            async fn write(&self, lease: &Lease, batch: &WriteBatch) -> Result<()> {
                (**self).write(lease, batch).await
            }
            async fn release(&self, lease: &Lease) -> Result<()> {
                (**self).release(lease).await
            }
            async fn list(&self) -> Result<Vec<Listed>> {
                (**self).list().await
            }
            async fn exists(&self, id: &str) -> Result<bool> {
                (**self).exists(id).await
            }
            async fn delete(&self, id: &str) -> Result<()> {
                (**self).delete(id).await
            }
        }
    )*};
}

forward!(&T, Arc<T>, std::rc::Rc<T>);
