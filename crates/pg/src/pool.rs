//! A small pool of connections: idle clients in a list; a call takes one (or
//! opens a new one), and gives it back unless its connection broke.
//!
//! A connection is only read while it is used, so one the server dropped
//! while it sat idle (a restart, an idle timeout) looks sound until then. One
//! idle for longer than [`CHECK_AFTER`] is checked (an empty query) before it
//! is handed out, and replaced when it fails.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use forkpoint_core::{Error, Result};
use postgres::{Client, Config, NoTls};

use crate::error::Pg;

/// Idle connections older than this are checked before use.
const CHECK_AFTER: Duration = Duration::from_secs(15);

pub(crate) struct Pool {
    config: Config,
    idle: Mutex<Vec<(Client, Instant)>>,
    max_idle: usize,
}

impl Pool {
    pub(crate) fn new(config: Config, max_idle: usize) -> Pool {
        Pool {
            config,
            idle: Mutex::new(Vec::new()),
            max_idle: max_idle.max(1),
        }
    }

    fn take(&self) -> Result<Client> {
        let idle = {
            let mut list = self
                .idle
                .lock()
                .map_err(|_| Error::internal("connection pool poisoned by a panic"))?;
            std::iter::from_fn(|| list.pop()).find(|(c, _)| !c.is_closed())
        };
        let idle = idle.and_then(|(mut c, since)| {
            (since.elapsed() < CHECK_AFTER || c.is_valid(Duration::from_secs(2)).is_ok())
                .then_some(c)
        });
        match idle {
            Some(c) => Ok(c),
            None => self
                .config
                .connect(NoTls)
                .pg("connecting to the agent store"),
        }
    }

    fn give_back(&self, client: Client) {
        if client.is_closed() {
            return;
        }
        if let Ok(mut list) = self.idle.lock()
            && list.len() < self.max_idle
        {
            list.push((client, Instant::now()));
        }
    }

    /// Runs `f` (which only reads) on a connection; if the connection turns
    /// out broken (`STORE_UNAVAILABLE`: a restart, a dropped connection), the
    /// idle ones are dropped too and `f` runs once more on a new one.
    pub(crate) fn read<T>(&self, mut f: impl FnMut(&mut Client) -> Result<T>) -> Result<T> {
        match self.with(&mut f) {
            Err(e) if e.code == forkpoint_core::ErrorCode::StoreUnavailable => self.fresh(f),
            r => r,
        }
    }

    /// Runs `f` on a new connection, dropping the idle ones (after a break,
    /// they are likely broken too).
    pub(crate) fn fresh<T>(&self, f: impl FnOnce(&mut Client) -> Result<T>) -> Result<T> {
        if let Ok(mut list) = self.idle.lock() {
            list.clear();
        }
        self.with(f)
    }

    /// Runs `f` on a connection. A transaction `f` left open is rolled back
    /// when it is dropped (the `postgres` crate does so), before the
    /// connection is reused.
    pub(crate) fn with<T>(&self, f: impl FnOnce(&mut Client) -> Result<T>) -> Result<T> {
        let mut client = self.take()?;
        let out = f(&mut client);
        self.give_back(client);
        out
    }
}
