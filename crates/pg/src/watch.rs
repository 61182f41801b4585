//! Following agents written on other hosts: after every write with events a
//! notification (`pg_notify`, sent by [`Notifier`]) names the schema, the
//! agent and its last seq; a [`Watch`] listens for them on a connection of
//! its own and remembers the highest seq per agent. A notification is only a
//! wake-up: followers read the events by seq from the tables, so one that
//! was lost (the listening connection dropped, the server restarted) loses
//! nothing — the connection is opened again, and every follower reads once
//! after it was lost ([`Watch::generation`] changes), and at least every
//! [`Follower::FALLBACK`] anyway.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use forkpoint_core::Result;
use forkpoint_core::storage::StoredLog;
use postgres::Client;
use postgres::fallible_iterator::FallibleIterator;

use crate::PgStorage;
use crate::tls::Connector;

/// The channel of the notifications.
pub(crate) const CHANNEL: &str = "forkpoint_events";

/// The payload of a notification: `schema id seq` (neither holds a space).
pub(crate) fn payload(schema: &str, id: &str, seq: u64) -> String {
    format!("{schema} {id} {seq}")
}

/// The notifications of one schema, as they arrive.
pub struct Watch {
    seen: Mutex<HashMap<String, u64>>,
    /// Bumped each time the listening connection is (re)opened: what was
    /// sent while it was down was not heard.
    generation: AtomicU64,
    /// Notifications heard (for tests and figures).
    heard: AtomicU64,
    stop: AtomicBool,
}

impl Watch {
    pub(crate) fn start(config: Connector, schema: String) -> Arc<Watch> {
        let watch = Arc::new(Watch {
            seen: Mutex::new(HashMap::new()),
            generation: AtomicU64::new(0),
            heard: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let weak = Arc::downgrade(&watch);
        let _ = std::thread::Builder::new()
            .name("forkpoint-pg-listen".into())
            .spawn(move || listen(&weak, &config, &schema));
        watch
    }

    /// The highest seq notified for agent `id` so far.
    pub fn seen(&self, id: &str) -> Option<u64> {
        self.seen.lock().ok()?.get(id).copied()
    }

    /// How many times the listening connection was opened.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// How many notifications of this schema were heard.
    pub fn heard(&self) -> u64 {
        self.heard.load(Ordering::Relaxed)
    }

    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Release);
    }
}

fn listen(watch: &std::sync::Weak<Watch>, config: &Connector, schema: &str) {
    let mut backoff = Duration::from_millis(50);
    loop {
        let Some(w) = watch.upgrade() else { return };
        if w.stop.load(Ordering::Acquire) {
            return;
        }
        drop(w);
        let client = config.connect().and_then(|mut c| {
            c.batch_execute(&format!("LISTEN {CHANNEL}"))?;
            Ok(c)
        });
        let mut client: Client = match client {
            Ok(c) => c,
            Err(_) => {
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(2));
                continue;
            }
        };
        backoff = Duration::from_millis(50);
        if let Some(w) = watch.upgrade() {
            w.generation.fetch_add(1, Ordering::AcqRel);
        }
        loop {
            let Some(w) = watch.upgrade() else { return };
            if w.stop.load(Ordering::Acquire) {
                return;
            }
            let mut notes = client.notifications();
            let mut it = notes.timeout_iter(Duration::from_millis(200));
            let mut broken = false;
            loop {
                match it.next() {
                    Ok(Some(n)) => {
                        let mut parts = n.payload().split(' ');
                        let (Some(s), Some(id), Some(seq)) =
                            (parts.next(), parts.next(), parts.next())
                        else {
                            continue;
                        };
                        if s != schema {
                            continue;
                        }
                        let Ok(seq) = seq.parse::<u64>() else {
                            continue;
                        };
                        w.heard.fetch_add(1, Ordering::Relaxed);
                        if let Ok(mut seen) = w.seen.lock() {
                            let e = seen.entry(id.to_string()).or_insert(0);
                            *e = (*e).max(seq);
                        }
                    }
                    Err(_) => {
                        broken = true;
                        break;
                    }
                    Ok(None) => break,
                }
            }
            drop(it);
            drop(notes);
            if broken || client.is_closed() {
                break;
            }
        }
    }
}

/// An agent's event log followed from another host: the events its writer
/// stores, taken in as they are notified (see the module's documentation).
pub struct Follower {
    log: StoredLog,
    watch: Arc<Watch>,
    state: Mutex<(u64, Instant)>,
}

impl Follower {
    /// A follower reads the tables at least this often, notified or not.
    pub const FALLBACK: Duration = Duration::from_millis(1000);

    /// Follows agent `id` of `store` from its last event now
    /// (`AGENT_NOT_FOUND` when there is none).
    pub fn open(store: &PgStorage, id: &str) -> Result<Follower> {
        forkpoint_core::store::validate_id(id, "agent")?;
        let watch = store.watch();
        let generation = watch.generation();
        let tail = store.tail_events_sync(id, 1)?;
        let last = match tail.last() {
            Some(l) => Some(
                forkpoint_core::events::parse_event_line(l, 512)
                    .map_err(|e| {
                        forkpoint_core::Error::corrupted(format!(
                            "the last event of agent '{id}': {e}"
                        ))
                    })?
                    .bookmark(),
            ),
            None => None,
        };
        Ok(Follower {
            log: StoredLog::new(id, last, true),
            watch,
            state: Mutex::new((generation, Instant::now())),
        })
    }

    /// The log (subscriptions, reads, live events).
    pub fn log(&self) -> &StoredLog {
        &self.log
    }

    /// Takes in what the writer stored since, when a notification says there
    /// is some, the listening connection was reopened, or [`Self::FALLBACK`]
    /// passed; returns how many events came.
    pub fn refresh(&self, store: &PgStorage) -> Result<usize> {
        let generation = self.watch.generation();
        let due = {
            let Ok(s) = self.state.lock() else {
                return Ok(0);
            };
            let notified = self
                .watch
                .seen(self.log.agent_id())
                .is_some_and(|seq| self.log.durable().is_none_or(|d| seq > d));
            notified || s.0 != generation || s.1.elapsed() >= Self::FALLBACK
        };
        if !due {
            return Ok(0);
        }
        let n = pollster::block_on(self.log.catch_up(store))?;
        if let Ok(mut s) = self.state.lock() {
            *s = (generation, Instant::now());
        }
        Ok(n)
    }
}

/// Sends the notifications of this store's writes, after their commits, from
/// a thread and a connection of its own: what queued while one statement ran
/// goes in the next, one notification per agent. (A transaction that
/// notifies takes a database-wide lock at its commit, so notifying inside
/// each write would make every write of every host commit one at a time.)
pub(crate) struct Notifier {
    queue: Mutex<Option<std::sync::mpsc::Sender<(String, u64)>>>,
    config: Connector,
    schema: String,
}

impl Notifier {
    pub(crate) fn new(config: Connector, schema: &str) -> Notifier {
        Notifier {
            queue: Mutex::new(None),
            config,
            schema: schema.to_string(),
        }
    }

    /// Agent `id`'s events up to `seq` were committed.
    pub(crate) fn committed(&self, id: &str, seq: u64) {
        let Ok(mut q) = self.queue.lock() else { return };
        if q.is_none() {
            let (tx, rx) = std::sync::mpsc::channel();
            let (config, schema) = (self.config.clone(), self.schema.clone());
            let started = std::thread::Builder::new()
                .name("forkpoint-pg-notify".into())
                .spawn(move || notify(&rx, &config, &schema));
            if started.is_err() {
                return;
            }
            *q = Some(tx);
        }
        if let Some(tx) = q.as_ref() {
            let _ = tx.send((id.to_string(), seq));
        }
    }
}

/// How long the notifier gathers writes after the first before it notifies.
const GATHER: Duration = Duration::from_millis(2);

fn notify(rx: &std::sync::mpsc::Receiver<(String, u64)>, config: &Connector, schema: &str) {
    let sql = format!("SELECT pg_notify('{CHANNEL}', p) FROM unnest($1::text[]) AS u(p)");
    let mut client: Option<Client> = None;
    // Ends when the store is dropped (the sender with it).
    while let Ok(first) = rx.recv() {
        let mut latest: HashMap<String, u64> = HashMap::new();
        latest.insert(first.0, first.1);
        // What the next GATHER brings goes in the same statement.
        let until = Instant::now() + GATHER;
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            match rx.recv_timeout(left) {
                Ok((id, seq)) => {
                    let e = latest.entry(id).or_insert(0);
                    *e = (*e).max(seq);
                }
                Err(_) => break,
            }
        }
        let payloads: Vec<String> = latest
            .iter()
            .map(|(id, seq)| payload(schema, id, *seq))
            .collect();
        if client.as_ref().is_none_or(Client::is_closed) {
            client = config.connect().ok();
        }
        // A notification that cannot be sent is dropped: followers read at
        // least every second anyway.
        if let Some(c) = client.as_mut()
            && c.query(&sql, &[&payloads]).is_err()
        {
            client = None;
        }
    }
}
