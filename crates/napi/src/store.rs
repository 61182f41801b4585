//! The stores an agent can live in, behind one [`AgentStorage`]: the file
//! store (`JSONStore`) and PostgreSQL (`PostgresStore`). The agent runtime is
//! the same code over either; what differs is the event log an open agent
//! hands to `on`/`subscribe`: the file store keeps one per agent (its own
//! reader and hub), PostgreSQL is read through the seam ([`StoredLog`]), fed
//! by this wrapper with each write's events once they are committed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use forkpoint_core::storage::{
    AgentHead, AgentStorage, EventLine, Lease, Listed, StoredLog, WriteBatch,
};
use forkpoint_core::{Error, ErrorCode, Result};
use forkpoint_fs::FileStorage;
use forkpoint_pg::PgStorage;

/// PostgreSQL, with the event logs of the agents open in this process.
pub struct Pg {
    pub(crate) pg: PgStorage,
    logs: Mutex<HashMap<String, Weak<StoredLog>>>,
}

impl Pg {
    pub(crate) fn new(pg: PgStorage) -> Pg {
        Pg {
            pg,
            logs: Mutex::new(HashMap::new()),
        }
    }

    /// The event log of agent `id`, open here, whose last event is `last`.
    pub(crate) fn log(
        &self,
        id: &str,
        last: Option<forkpoint_core::events::Bookmark>,
    ) -> Arc<StoredLog> {
        let log = Arc::new(StoredLog::new(id, last, false));
        if let Ok(mut logs) = self.logs.lock() {
            logs.retain(|_, l| l.strong_count() > 0);
            logs.insert(id.to_string(), Arc::downgrade(&log));
        }
        log
    }

    fn committed(&self, id: &str, batch: &WriteBatch) {
        if batch.events.is_empty() {
            return;
        }
        let log = self
            .logs
            .lock()
            .ok()
            .and_then(|logs| logs.get(id).and_then(Weak::upgrade));
        if let Some(log) = log {
            log.committed(&batch.events);
        }
    }
}

/// A store of agents (cheap to clone: shared).
#[derive(Clone)]
pub enum Store {
    File(Arc<FileStorage>),
    Pg(Arc<Pg>),
}

macro_rules! each {
    ($self:ident, $s:ident => $e:expr) => {
        match $self {
            Store::File($s) => $e,
            Store::Pg(p) => {
                let $s = &p.pg;
                $e
            }
        }
    };
}

impl AgentStorage for Store {
    async fn create(&self, id: &str, init: &WriteBatch) -> Result<Lease> {
        each!(self, s => s.create(id, init).await)
    }
    async fn acquire(&self, id: &str) -> Result<Lease> {
        each!(self, s => s.acquire(id).await)
    }
    async fn head(&self, lease: &Lease) -> Result<AgentHead> {
        each!(self, s => s.head(lease).await)
    }
    async fn read_session(&self, id: &str, start: u64, end: u64) -> Result<Vec<u8>> {
        each!(self, s => s.read_session(id, start, end).await)
    }
    async fn read_events(
        &self,
        id: &str,
        since: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Arc<str>>> {
        each!(self, s => s.read_events(id, since, limit).await)
    }
    async fn tail_events(&self, id: &str, count: usize) -> Result<Vec<Arc<str>>> {
        each!(self, s => s.tail_events(id, count).await)
    }
    async fn write(&self, lease: &Lease, batch: &WriteBatch) -> Result<()> {
        match self {
            Store::File(s) => s.write(lease, batch).await,
            Store::Pg(p) => {
                p.pg.write(lease, batch).await?;
                p.committed(&lease.agent_id, batch);
                Ok(())
            }
        }
    }
    async fn release(&self, lease: &Lease) -> Result<()> {
        each!(self, s => s.release(lease).await)
    }
    async fn list(&self) -> Result<Vec<Listed>> {
        each!(self, s => s.list().await)
    }
    async fn exists(&self, id: &str) -> Result<bool> {
        each!(self, s => s.exists(id).await)
    }
    async fn delete(&self, id: &str) -> Result<()> {
        each!(self, s => s.delete(id).await)
    }
}

/// Event lines read per round trip by [`Store::export`].
const EXPORT_PAGE: usize = 16_384;

/// How deep an imported event line's JSON may nest.
const EVENT_DEPTH: usize = 512;

/// An agent's three parts, byte for byte as the file store keeps them.
pub struct Exported {
    /// The `meta.json` text.
    pub meta: Vec<u8>,
    /// `session.jsonl`: whole lines.
    pub session: Vec<u8>,
    /// `events.jsonl`: one line per event, each with its newline.
    pub events: Vec<u8>,
}

impl Store {
    /// Agent `id`'s `meta.json` text, read without its lease.
    pub fn read_meta(&self, id: &str) -> Result<Vec<u8>> {
        match self {
            Store::File(f) => f.read_meta(id),
            Store::Pg(p) => p.pg.read_meta(id),
        }
    }

    /// Agent `id` whole, read without its lease. The parts are read meta
    /// first, then events, then the session (each write lands in the reverse
    /// order), so an agent being written exports as a state a crash could
    /// leave; a session's line still being written is left out.
    pub async fn export(&self, id: &str) -> Result<Exported> {
        forkpoint_fs::validate_id(id)?;
        let meta = self.read_meta(id)?;
        let mut events = Vec::new();
        let mut since = None;
        loop {
            let page = self.read_events(id, since, EXPORT_PAGE).await?;
            let Some(last) = page.last() else { break };
            let seq = forkpoint_core::events::parse_event_line(last, EVENT_DEPTH)
                .map_err(|e| {
                    Error::new(
                        ErrorCode::CorruptedData,
                        format!("agent '{id}': an event line that does not parse: {e}"),
                    )
                })?
                .seq;
            if since.is_some_and(|s| seq <= s) {
                return Err(Error::new(
                    ErrorCode::CorruptedData,
                    format!("agent '{id}': event seq {seq} does not follow seq {since:?}"),
                ));
            }
            for line in &page {
                events.extend_from_slice(line.as_bytes());
                events.push(b'\n');
            }
            if page.len() < EXPORT_PAGE {
                break;
            }
            since = Some(seq);
        }
        let mut session = self.read_session(id, 0, u64::MAX).await?;
        let whole = session
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        session.truncate(whole);
        Ok(Exported {
            meta,
            session,
            events,
        })
    }

    /// Creates agent `id` holding exactly `parts` (as [`Store::export`] gives
    /// them) and releases it: `ALREADY_EXISTS` when the id is taken,
    /// `INVALID_INPUT` when the parts cannot be an agent's (a session not made
    /// of whole lines, an event line that does not parse or whose seq does not
    /// grow, a meta that is not a JSON object naming agent `id`).
    pub async fn import(&self, id: &str, parts: Exported) -> Result<()> {
        forkpoint_fs::validate_id(id)?;
        let named = serde_json::from_slice::<serde_json::Value>(&parts.meta)
            .ok()
            .and_then(|v| {
                v.get("agentId")
                    .and_then(|a| a.as_str().map(str::to_string))
            });
        match named {
            Some(n) if n == id => {}
            Some(n) => {
                return Err(Error::invalid_input(format!(
                    "the meta of agent '{id}' names agent '{n}'"
                )));
            }
            None => {
                return Err(Error::invalid_input(format!(
                    "the meta of agent '{id}' is not a JSON object with its agentId"
                )));
            }
        }
        if parts.session.last().is_some_and(|&b| b != b'\n') {
            return Err(Error::invalid_input(format!(
                "the session of agent '{id}' does not end with a whole line"
            )));
        }
        let text = std::str::from_utf8(&parts.events).map_err(|e| {
            Error::invalid_input(format!("the events of agent '{id}' are not UTF-8: {e}"))
        })?;
        let body = match text.strip_suffix('\n') {
            Some(b) => b,
            None if text.is_empty() => "",
            None => {
                return Err(Error::invalid_input(format!(
                    "the events of agent '{id}' do not end with a whole line"
                )));
            }
        };
        let mut events = Vec::new();
        let mut prev: Option<u64> = None;
        if !text.is_empty() {
            for (n, line) in body.split('\n').enumerate() {
                let meta =
                    forkpoint_core::events::parse_event_line(line, EVENT_DEPTH).map_err(|e| {
                        Error::invalid_input(format!("agent '{id}', event line {}: {e}", n + 1))
                    })?;
                if prev.is_some_and(|p| meta.seq <= p) {
                    return Err(Error::invalid_input(format!(
                        "agent '{id}', event line {}: seq {} after seq {}",
                        n + 1,
                        meta.seq,
                        prev.unwrap_or(0)
                    )));
                }
                prev = Some(meta.seq);
                events.push(EventLine {
                    meta,
                    line: Arc::from(line),
                });
            }
        }
        let batch = WriteBatch {
            session: parts.session,
            session_at: 0,
            events,
            meta: Some(parts.meta),
            hint: None,
            state: None,
        };
        let lease = self.create(id, &batch).await?;
        self.release(&lease).await
    }
}
