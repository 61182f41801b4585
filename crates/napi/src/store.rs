//! The stores an agent can live in, behind one [`AgentStorage`]: the file
//! store (`JSONStore`) and PostgreSQL (`PostgresStore`). The agent runtime is
//! the same code over either; what differs is the event log an open agent
//! hands to `on`/`subscribe`: the file store keeps one per agent (its own
//! reader and hub), PostgreSQL is read through the seam ([`StoredLog`]), fed
//! by this wrapper with each write's events once they are committed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use forkpoint_core::Result;
use forkpoint_core::storage::{AgentHead, AgentStorage, Lease, Listed, StoredLog, WriteBatch};
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
