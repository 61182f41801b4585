//! The lease keeper: while a [`PgStorage`](crate::PgStorage) holds leases, a
//! thread of its own renews all of them every third of `leaseMs` in one
//! statement, on a connection of its own (so a pool busy with writes cannot
//! delay a renewal). A lease the statement does not find (taken over,
//! released, the agent deleted) is forgotten: the next write with it fails
//! with `LEASE_LOST` in the database anyway. A renewal that cannot reach the
//! server is retried at the next tick; if none succeeds for `leaseMs`, the
//! lease runs out and another host may take the agent — that is the point.
//!
//! The thread ends when the storage is dropped (its channel disconnects).

use std::collections::HashMap;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use postgres::Client;

use crate::tls::Connector;

/// The leases a storage holds: agent id → token.
pub(crate) type Held = Arc<Mutex<HashMap<String, i64>>>;

pub(crate) struct Keeper {
    held: Held,
    /// Dropping it ends the thread; sending wakes it (a lease was added).
    wake: Mutex<Option<Sender<()>>>,
    config: Connector,
    sql: String,
    lease_ms: i64,
    enabled: bool,
}

impl Keeper {
    pub(crate) fn new(config: Connector, schema: &str, lease_ms: i64, enabled: bool) -> Keeper {
        let s = format!("\"{schema}\"");
        Keeper {
            held: Held::default(),
            wake: Mutex::new(None),
            config,
            sql: format!(
                "UPDATE {s}.agents a SET lease_until = clock_timestamp() + $3::bigint * interval '1 millisecond'
                 FROM unnest($1::text[], $2::bigint[]) AS h(id, token)
                 WHERE a.id = h.id AND a.token = h.token AND a.holder IS NOT NULL
                 RETURNING a.id"
            ),
            lease_ms,
            enabled,
        }
    }

    /// Keeps lease `token` of agent `id` alive from now on.
    pub(crate) fn hold(&self, id: &str, token: i64) {
        if !self.enabled {
            return;
        }
        if let Ok(mut h) = self.held.lock() {
            h.insert(id.to_string(), token);
        }
        let Ok(mut wake) = self.wake.lock() else {
            return;
        };
        if wake.is_none() {
            let (tx, rx) = channel();
            let (held, config, sql, lease_ms) = (
                self.held.clone(),
                self.config.clone(),
                self.sql.clone(),
                self.lease_ms,
            );
            let started = std::thread::Builder::new()
                .name("forkpoint-pg-leases".into())
                .spawn(move || run(rx, held, config, sql, lease_ms));
            if started.is_ok() {
                *wake = Some(tx);
            }
        }
    }

    /// Stops renewing agent `id`'s lease `token` (released, or lost).
    pub(crate) fn forget(&self, id: &str, token: i64) {
        if let Ok(mut h) = self.held.lock()
            && h.get(id) == Some(&token)
        {
            h.remove(id);
        }
    }
}

fn run(rx: Receiver<()>, held: Held, config: Connector, sql: String, lease_ms: i64) {
    let every = Duration::from_millis(u64::try_from(lease_ms / 3).unwrap_or(1).max(1));
    let mut client: Option<Client> = None;
    loop {
        match rx.recv_timeout(every) {
            Err(RecvTimeoutError::Disconnected) => return,
            Ok(()) | Err(RecvTimeoutError::Timeout) => {}
        }
        let leases: Vec<(String, i64)> = match held.lock() {
            Ok(h) => h.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            Err(_) => return,
        };
        if leases.is_empty() {
            continue;
        }
        if client.as_ref().is_none_or(Client::is_closed) {
            client = config.connect().ok();
        }
        let Some(c) = client.as_mut() else {
            continue;
        };
        let (ids, tokens): (Vec<String>, Vec<i64>) = leases.iter().cloned().unzip();
        match c.query(&sql, &[&ids, &tokens, &lease_ms]) {
            Ok(rows) => {
                let kept: std::collections::HashSet<String> =
                    rows.iter().map(|r| r.get::<_, String>(0)).collect();
                if let Ok(mut h) = held.lock() {
                    for (id, token) in &leases {
                        if !kept.contains(id) && h.get(id) == Some(token) {
                            h.remove(id);
                        }
                    }
                }
            }
            Err(_) => client = None,
        }
    }
}
