//! Durable appends shared by session files and event logs: callers queue lines
//! under a lock (so order = call order), and whoever waits first while no write
//! is in flight becomes the leader: it writes what is queued at the end of the
//! file, fsyncs, and wakes everyone whose lines that made durable (group commit).
//! In `fsync` mode the leader writes one line per fsync.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard};

use forkpoint_core::{Durability, Error, ErrorCode, Result, gz};

use crate::io::{io_error, replace_atomic};

/// A queue of lines with tickets, as the core's writer state machines keep them.
pub trait Queue: Send {
    type Batch;
    /// Takes queued lines for one write (at most `max_lines`).
    fn take(&mut self, max_lines: Option<usize>) -> Option<Self::Batch>;
    /// The bytes of a batch.
    fn bytes(batch: &Self::Batch) -> &[u8];
    /// The batch is durable, written at physical offset `at`. May return a
    /// sidecar file (path, content) to replace atomically, outside the lock.
    fn committed(&mut self, batch: Self::Batch, at: u64) -> Option<(String, Vec<u8>)>;
    /// Whether the append with this ticket is durable.
    fn is_durable(&self, ticket: u64) -> bool;
    /// A write failed: later appends must fail too.
    fn fail(&mut self, e: Error);
    /// The failure, if one happened.
    fn failure(&self) -> Option<&Error>;
}

/// The state behind the appender's lock.
pub struct Inner<Q> {
    pub q: Q,
    flushing: bool,
    /// Physical length of the durable file.
    pub phys_len: u64,
    pub closed: bool,
}

/// An append-only file with group commit.
pub struct Appender<Q: Queue> {
    pub path: PathBuf,
    pub file: File,
    gzip: bool,
    durability: Durability,
    state: Mutex<Inner<Q>>,
    cond: Condvar,
}

impl<Q: Queue> Appender<Q> {
    /// An appender over an open, locked file whose durable length is `phys_len`.
    pub fn new(
        path: &Path,
        file: File,
        gzip: bool,
        durability: Durability,
        q: Q,
        phys_len: u64,
    ) -> Self {
        Appender {
            path: path.to_path_buf(),
            file,
            gzip,
            durability,
            state: Mutex::new(Inner {
                q,
                flushing: false,
                phys_len,
                closed: false,
            }),
            cond: Condvar::new(),
        }
    }

    /// The locked state.
    pub fn lock(&self) -> Result<MutexGuard<'_, Inner<Q>>> {
        self.state
            .lock()
            .map_err(|_| Error::internal("appender state poisoned by a panic"))
    }

    /// Runs `f` on the queue (assigning tickets in call order).
    pub fn submit<T>(&self, f: impl FnOnce(&mut Q) -> Result<T>) -> Result<T> {
        let mut st = self.lock()?;
        if st.closed {
            return Err(
                Error::new(ErrorCode::Closed, "closed").with_path(self.path.display().to_string())
            );
        }
        f(&mut st.q)
    }

    /// Blocks until `ticket` is durable, leading the write when nobody else is.
    pub fn wait(&self, ticket: u64) -> Result<()> {
        let mut st = self.lock()?;
        loop {
            if let Some(e) = st.q.failure() {
                return Err(e.clone());
            }
            if st.q.is_durable(ticket) {
                return Ok(());
            }
            if st.flushing {
                st = self
                    .cond
                    .wait(st)
                    .map_err(|_| Error::internal("appender state poisoned by a panic"))?;
                continue;
            }
            let max = match self.durability {
                Durability::Fsync => Some(1),
                _ => None,
            };
            let Some(batch) = st.q.take(max) else {
                return Err(Error::internal("ticket not durable but nothing queued"));
            };
            st.flushing = true;
            let at = st.phys_len;
            drop(st);
            let res = self.write(Q::bytes(&batch), at);
            st = self.lock()?;
            st.flushing = false;
            match res {
                Ok(n) => {
                    st.phys_len = at + n;
                    let sidecar = st.q.committed(batch, at);
                    self.cond.notify_all();
                    if let Some((path, data)) = sidecar {
                        drop(st);
                        // Sidecars are caches: failing to write one loses nothing.
                        let _ = replace_atomic(Path::new(&path), &data);
                        st = self.lock()?;
                    }
                }
                Err(e) => {
                    // Cut back whatever part of the batch reached the file.
                    let _ = self.file.set_len(at);
                    let _ = self.file.sync_all();
                    st.q.fail(e.clone());
                    self.cond.notify_all();
                    return Err(e);
                }
            }
        }
    }

    fn write(&self, bytes: &[u8], at: u64) -> Result<u64> {
        let member;
        let data: &[u8] = if self.gzip {
            member = gz::encode_member(bytes);
            &member
        } else {
            bytes
        };
        self.file
            .write_all_at(data, at)
            .map_err(|e| io_error(e, &self.path, "cannot append"))?;
        self.file
            .sync_data()
            .map_err(|e| io_error(e, &self.path, "cannot fsync"))?;
        Ok(data.len() as u64)
    }

    /// Marks the appender closed and releases the file lock.
    pub fn close(&self) -> Result<()> {
        let mut st = self.lock()?;
        st.closed = true;
        let _ = self.file.unlock();
        Ok(())
    }
}
