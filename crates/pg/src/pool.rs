//! A small pool of connections: at most `max` open at once; a call takes an
//! idle one, opens a new one while fewer than `max` are open, or waits for
//! one to be given back (opening a connection costs the server a process:
//! the pool never opens one only to close it). A connection that broke is
//! not given back.
//!
//! A connection is only read while it is used, so one the server dropped
//! while it sat idle (a restart, an idle timeout) looks sound until then. One
//! idle for longer than [`CHECK_AFTER`] is checked (an empty query) before it
//! is handed out, and replaced when it fails.

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use forkpoint_core::{Error, Result};
use postgres::{Client, Statement};

use crate::error::Pg;
use crate::tls::Connector;

/// Idle connections older than this are checked before use.
const CHECK_AFTER: Duration = Duration::from_secs(15);

/// A connection with the statements prepared on it (the server parses and
/// plans a prepared statement once, not at every call).
pub(crate) struct Conn {
    client: Client,
    prepared: HashMap<String, Statement>,
}

impl Conn {
    /// `sql` prepared on this connection (once).
    pub(crate) fn prep(&mut self, sql: &str) -> Result<Statement> {
        if let Some(s) = self.prepared.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql).pg("preparing a statement")?;
        self.prepared.insert(sql.to_string(), s.clone());
        Ok(s)
    }
}

impl Deref for Conn {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.client
    }
}

impl DerefMut for Conn {
    fn deref_mut(&mut self) -> &mut Client {
        &mut self.client
    }
}

struct State {
    idle: Vec<(Conn, Instant)>,
    /// Connections open (idle or in use).
    open: usize,
}

pub(crate) struct Pool {
    config: Connector,
    state: Mutex<State>,
    freed: Condvar,
    max: usize,
}

impl Pool {
    pub(crate) fn new(config: Connector, max: usize) -> Pool {
        Pool {
            config,
            state: Mutex::new(State {
                idle: Vec::new(),
                open: 0,
            }),
            freed: Condvar::new(),
            max: max.max(1),
        }
    }

    fn lock(&self) -> Result<MutexGuard<'_, State>> {
        self.state
            .lock()
            .map_err(|_| Error::internal("connection pool poisoned by a panic"))
    }

    /// A connection was closed (broken, or failed to open): room for another.
    fn closed(&self) {
        if let Ok(mut st) = self.lock() {
            st.open = st.open.saturating_sub(1);
        }
        self.freed.notify_one();
    }

    fn take(&self) -> Result<Conn> {
        let mut st = self.lock()?;
        loop {
            if let Some((mut c, since)) = st.idle.pop() {
                drop(st);
                if !c.is_closed()
                    && (since.elapsed() < CHECK_AFTER || c.is_valid(Duration::from_secs(2)).is_ok())
                {
                    return Ok(c);
                }
                self.closed();
                st = self.lock()?;
                continue;
            }
            if st.open < self.max {
                st.open += 1;
                drop(st);
                return self
                    .config
                    .connect()
                    .pg("connecting to the agent store")
                    .map(|client| Conn {
                        client,
                        prepared: HashMap::new(),
                    })
                    .inspect_err(|_| self.closed());
            }
            st = self
                .freed
                .wait(st)
                .map_err(|_| Error::internal("connection pool poisoned by a panic"))?;
        }
    }

    fn give_back(&self, client: Conn) {
        if client.is_closed() {
            self.closed();
            return;
        }
        if let Ok(mut st) = self.lock() {
            st.idle.push((client, Instant::now()));
        }
        self.freed.notify_one();
    }

    /// Runs `f` (which only reads) on a connection; if the connection turns
    /// out broken (`STORE_UNAVAILABLE`: a restart, a dropped connection), the
    /// idle ones are dropped too and `f` runs once more on a new one.
    pub(crate) fn read<T>(&self, mut f: impl FnMut(&mut Conn) -> Result<T>) -> Result<T> {
        match self.with(&mut f) {
            Err(e) if e.code == forkpoint_core::ErrorCode::StoreUnavailable => self.fresh(f),
            r => r,
        }
    }

    /// Closes the idle connections.
    pub(crate) fn clear_idle(&self) {
        if let Ok(mut st) = self.lock() {
            let n = st.idle.len();
            st.idle.clear();
            st.open = st.open.saturating_sub(n);
        }
        self.freed.notify_all();
    }

    /// Runs `f` on a new connection, dropping the idle ones (after a break,
    /// they are likely broken too).
    pub(crate) fn fresh<T>(&self, f: impl FnOnce(&mut Conn) -> Result<T>) -> Result<T> {
        self.clear_idle();
        self.with(f)
    }

    /// Runs `f` on a connection. A transaction `f` left open is rolled back
    /// when it is dropped (the `postgres` crate does so), before the
    /// connection is reused.
    pub(crate) fn with<T>(&self, f: impl FnOnce(&mut Conn) -> Result<T>) -> Result<T> {
        let mut client = self.take()?;
        let out = f(&mut client);
        self.give_back(client);
        out
    }
}
