//! A storage that fails on purpose: it wraps another and, at the Nth operation
//! that changes something, fails it before it applies, tears it (a prefix of
//! the batch lands: part of the session bytes — possibly mid-line —, some
//! events, never the meta) or applies it and then reports a failure (the
//! acknowledgement is lost). From then on every call fails, as a process that
//! died would; open the inner store again to "restart". This is how redb and
//! okaywal test recovery: enumerate N over every operation of a run.

use std::cell::Cell;
use std::sync::Arc;

use super::{AgentHead, AgentStorage, Lease, Listed, WriteBatch};
use crate::{Error, ErrorCode, Result};

/// What happens at the chosen operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The operation fails and changes nothing.
    Fail,
    /// A prefix of the write lands, then it fails.
    Tear,
    /// The operation lands whole, then fails (the caller never learns it landed).
    LoseAck,
}

/// Which operation fails, and how (operations count from 1; `None`: never).
#[derive(Debug, Clone, Copy)]
pub struct FaultPlan {
    /// The 1-based index of the failing operation among those that change something.
    pub at: Option<u64>,
    /// How it fails.
    pub fault: Fault,
}

/// A storage that fails at a planned operation (see the module docs).
#[derive(Debug)]
pub struct FaultStorage<S> {
    inner: S,
    plan: FaultPlan,
    ops: Cell<u64>,
    dead: Cell<bool>,
}

fn injected(n: u64) -> Error {
    Error::new(
        ErrorCode::Io,
        format!("injected fault at storage operation {n}"),
    )
}

fn dead() -> Error {
    Error::new(ErrorCode::Io, "the storage failed earlier (injected crash)")
}

/// The first half of a batch, cut inside a session line when there is one.
fn torn(batch: &WriteBatch) -> WriteBatch {
    WriteBatch {
        session: batch.session[..batch.session.len() / 2].to_vec(),
        session_at: batch.session_at,
        events: batch.events[..batch.events.len() / 2].to_vec(),
        meta: None,
        hint: None,
        state: None,
    }
}

impl<S> FaultStorage<S> {
    /// Wraps `inner`, failing as `plan` says.
    pub fn new(inner: S, plan: FaultPlan) -> Self {
        FaultStorage {
            inner,
            plan,
            ops: Cell::new(0),
            dead: Cell::new(false),
        }
    }

    /// A wrapper that never fails and counts operations.
    pub fn counting(inner: S) -> Self {
        Self::new(
            inner,
            FaultPlan {
                at: None,
                fault: Fault::Fail,
            },
        )
    }

    /// The operations that changed something so far (including a failed one).
    pub fn ops(&self) -> u64 {
        self.ops.get()
    }

    /// Whether the planned fault fired.
    pub fn fired(&self) -> bool {
        self.dead.get()
    }

    /// The wrapped storage.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    fn alive(&self) -> Result<()> {
        if self.dead.get() { Err(dead()) } else { Ok(()) }
    }

    /// Counts an operation; `Some(fault)` when this one fails.
    fn next(&self) -> Result<Option<Fault>> {
        self.alive()?;
        let n = self.ops.get() + 1;
        self.ops.set(n);
        if self.plan.at == Some(n) {
            self.dead.set(true);
            return Ok(Some(self.plan.fault));
        }
        Ok(None)
    }
}

impl<S: AgentStorage> AgentStorage for FaultStorage<S> {
    async fn create(&self, id: &str, init: &WriteBatch) -> Result<Lease> {
        match self.next()? {
            None => self.inner.create(id, init).await,
            Some(Fault::Fail | Fault::Tear) => Err(injected(self.ops())),
            Some(Fault::LoseAck) => {
                self.inner.create(id, init).await?;
                Err(injected(self.ops()))
            }
        }
    }

    async fn acquire(&self, id: &str) -> Result<Lease> {
        match self.next()? {
            None => self.inner.acquire(id).await,
            Some(Fault::Fail | Fault::Tear) => Err(injected(self.ops())),
            Some(Fault::LoseAck) => {
                self.inner.acquire(id).await?;
                Err(injected(self.ops()))
            }
        }
    }

    async fn head(&self, lease: &Lease) -> Result<AgentHead> {
        self.alive()?;
        self.inner.head(lease).await
    }

    async fn read_session(&self, id: &str, start: u64, end: u64) -> Result<Vec<u8>> {
        self.alive()?;
        self.inner.read_session(id, start, end).await
    }

    async fn read_events(
        &self,
        id: &str,
        since: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Arc<str>>> {
        self.alive()?;
        self.inner.read_events(id, since, limit).await
    }

    async fn tail_events(&self, id: &str, count: usize) -> Result<Vec<Arc<str>>> {
        self.alive()?;
        self.inner.tail_events(id, count).await
    }

    async fn write(&self, lease: &Lease, batch: &WriteBatch) -> Result<()> {
        match self.next()? {
            None => self.inner.write(lease, batch).await,
            Some(Fault::Fail) => Err(injected(self.ops())),
            Some(Fault::Tear) => {
                self.inner.write(lease, &torn(batch)).await?;
                Err(injected(self.ops()))
            }
            Some(Fault::LoseAck) => {
                self.inner.write(lease, batch).await?;
                Err(injected(self.ops()))
            }
        }
    }

    async fn release(&self, lease: &Lease) -> Result<()> {
        match self.next()? {
            None => self.inner.release(lease).await,
            Some(Fault::Fail | Fault::Tear) => Err(injected(self.ops())),
            Some(Fault::LoseAck) => {
                self.inner.release(lease).await?;
                Err(injected(self.ops()))
            }
        }
    }

    async fn list(&self) -> Result<Vec<Listed>> {
        self.alive()?;
        self.inner.list().await
    }

    async fn exists(&self, id: &str) -> Result<bool> {
        self.alive()?;
        self.inner.exists(id).await
    }

    async fn delete(&self, id: &str) -> Result<()> {
        match self.next()? {
            None => self.inner.delete(id).await,
            Some(Fault::Fail | Fault::Tear) => Err(injected(self.ops())),
            Some(Fault::LoseAck) => {
                self.inner.delete(id).await?;
                Err(injected(self.ops()))
            }
        }
    }
}
