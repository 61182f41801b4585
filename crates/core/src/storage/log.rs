//! [`StoredLog`]: an agent's event log read through the storage seam, for the
//! stores whose events are rows (IndexedDB, PostgreSQL) rather than a file
//! with its own reader. History is read from the store by seq; live events
//! come from the agent's own writes ([`StoredLog::committed`]) or, for a
//! reader on another host, from the store itself ([`StoredLog::catch_up`]).
//! Subscriptions go through the same [`Hub`] as the file log, so each event
//! is delivered exactly once and in seq order.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::eventlog::{Hub, RING_BYTES, RING_EVENTS, ReadOut, Since};
use crate::events::{self, Bookmark, EventFilter, EventMeta};
use crate::storage::{AgentStorage, EventLine};
use crate::{Error, EventLogInfo, EventLogOptions, Result};

/// Events read from the store per request.
const PAGE: usize = 512;
/// JSON depth up to which event lines are read.
const MAX_DEPTH: usize = 512;

/// An agent's event log over an [`AgentStorage`] (see the module's documentation).
#[derive(Debug)]
pub struct StoredLog {
    id: String,
    hub: Mutex<Hub>,
    last: Mutex<Option<Bookmark>>,
    info: String,
}

fn corrupted(id: &str, why: impl std::fmt::Display) -> Error {
    Error::corrupted(format!("an event of agent '{id}' cannot be read: {why}"))
}

impl StoredLog {
    /// The log of agent `id`, whose last durable event is `last`.
    pub fn new(id: &str, last: Option<Bookmark>, read_only: bool) -> StoredLog {
        let mut info = EventLogInfo::new(&EventLogOptions::default());
        info.last_bookmark = last;
        info.read_only = read_only;
        StoredLog {
            id: id.to_string(),
            // The log's first seq is not looked up: 0 (below every seq) when
            // it has events, so a subscription from the start reads the store
            // instead of taking the ring for the whole log.
            hub: Mutex::new(Hub::new(last, last.map(|_| 0), RING_EVENTS, RING_BYTES)),
            last: Mutex::new(last),
            info: crate::types::to_json_text(&info).unwrap_or_else(|_| "{}".into()),
        }
    }

    /// The agent's id.
    pub fn agent_id(&self) -> &str {
        &self.id
    }

    /// What opening found (`EventLogInfo` as JSON).
    pub fn info_json(&self) -> &str {
        &self.info
    }

    fn hub(&self) -> Result<MutexGuard<'_, Hub>> {
        self.hub
            .lock()
            .map_err(|_| Error::internal("event log poisoned by a panic"))
    }

    /// The last durable event's bookmark.
    pub fn last_bookmark(&self) -> Option<Bookmark> {
        self.last.lock().ok().and_then(|l| *l)
    }

    /// The last durable seq.
    pub fn durable(&self) -> Option<u64> {
        self.hub().ok().and_then(|h| h.durable())
    }

    fn commit_items(&self, items: Vec<(EventMeta, Arc<str>)>) {
        if let Some((m, _)) = items.last()
            && let Ok(mut last) = self.last.lock()
            && last.is_none_or(|b| m.seq > b.seq)
        {
            *last = Some(m.bookmark());
        }
        if let Ok(mut hub) = self.hub() {
            hub.committed(items);
        }
    }

    /// A write's events became durable (as the writer built them).
    pub fn committed(&self, lines: &[EventLine]) {
        self.commit_items(
            lines
                .iter()
                .map(|l| (l.meta.clone(), l.line.clone()))
                .collect(),
        );
    }

    /// Event lines became durable (a step's, as text: they parse, the
    /// runtime wrote them; one that does not is left out).
    pub fn committed_lines(&self, lines: &[Arc<str>]) {
        self.commit_items(
            lines
                .iter()
                .filter_map(|l| Some((events::parse_event_line(l, MAX_DEPTH).ok()?, l.clone())))
                .collect(),
        );
    }

    /// A reader on another host: takes in the events the store holds after
    /// the last one this log knows (all of them, page by page); returns how
    /// many came.
    pub async fn catch_up<S: AgentStorage>(&self, store: &S) -> Result<usize> {
        let mut n = 0;
        loop {
            let after = self.durable();
            let lines = store.read_events(&self.id, after, PAGE).await?;
            let mut items = Vec::with_capacity(lines.len());
            for l in &lines {
                let meta =
                    events::parse_event_line(l, MAX_DEPTH).map_err(|e| corrupted(&self.id, e))?;
                items.push((meta, l.clone()));
            }
            n += items.len();
            let full = lines.len() >= PAGE;
            self.commit_items(items);
            if !full {
                return Ok(n);
            }
        }
    }

    /// The events with `since < seq <= until` passing `filter`, read from
    /// the store (no further than this log knows to be durable).
    pub async fn read<S: AgentStorage>(
        &self,
        store: &S,
        since: Option<u64>,
        until: Option<u64>,
        filter: &EventFilter,
    ) -> Result<ReadOut> {
        let mut out = ReadOut::new(since);
        let Some(durable) = self.durable() else {
            return Ok(out);
        };
        let hi = until.map_or(durable, |u| u.min(durable));
        let mut after = since;
        loop {
            let lines = store.read_events(&self.id, after, PAGE).await?;
            for l in &lines {
                let env =
                    events::parse_envelope(l, MAX_DEPTH).map_err(|e| corrupted(&self.id, e))?;
                if env.seq > hi {
                    return Ok(out);
                }
                after = Some(env.seq);
                if out.offer(env.seq, env.channel, &env.kind, l, filter) {
                    return Ok(out);
                }
            }
            if lines.len() < PAGE {
                return Ok(out);
            }
        }
    }

    /// A new subscription: `since` is `live`, `start` or `after` (with `seq`).
    pub fn subscribe(&self, filter: EventFilter, since: Since) -> Result<u32> {
        Ok(self.hub()?.subscribe(filter, since))
    }

    /// The next step of a subscription (JSON).
    pub fn poll_json(&self, id: u32, max: usize) -> Result<String> {
        Ok(self.hub()?.poll(id, max)?.to_json())
    }

    /// Reads a subscription's events from the store (after a `read` step);
    /// the events to deliver, as a JSON array.
    pub async fn fill_json<S: AgentStorage>(
        &self,
        store: &S,
        id: u32,
        since: Option<u64>,
        limit: usize,
    ) -> Result<String> {
        let filter = self.hub()?.read_filter(id, limit)?;
        let out = self.read(store, since, None, &filter).await?;
        self.hub()?.provide(id, out)
    }

    /// Ends a subscription.
    pub fn unsubscribe(&self, id: u32) {
        if let Ok(mut hub) = self.hub() {
            hub.unsubscribe(id);
        }
    }

    /// Committed events not yet handed to live handlers (JSON array).
    pub fn drain_live_json(&self) -> Result<String> {
        Ok(self.hub()?.drain_live_json())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{MemoryStorage, WriteBatch};

    fn line(seq: u64) -> EventLine {
        let text = format!(
            "{{\"seq\":{seq},\"timestamp\":{},\"channel\":\"monitor\",\"type\":\"x\",\"n\":{seq}}}",
            1000 + seq
        );
        EventLine {
            meta: events::parse_event_line(&text, 8).unwrap(),
            line: Arc::from(text),
        }
    }

    fn batch(seqs: std::ops::RangeInclusive<u64>) -> WriteBatch {
        WriteBatch {
            events: seqs.map(line).collect(),
            ..WriteBatch::default()
        }
    }

    #[test]
    fn a_reader_elsewhere_catches_up_page_by_page_and_delivers_once() {
        pollster::block_on(async {
            let store = MemoryStorage::default();
            let mut init = batch(1..=3);
            init.meta = Some(b"{}".to_vec());
            init.session = b"{\"type\":\"session\"}\n".to_vec();
            let lease = store.create("a", &init).await.unwrap();
            // A follower that knows seq 2: subscribes from seq 1.
            let log = StoredLog::new(
                "a",
                Some(Bookmark {
                    seq: 2,
                    timestamp: 1002,
                }),
                true,
            );
            let sub = log
                .subscribe(EventFilter::default(), Since::After(1))
                .unwrap();
            let mut b = batch(4..=(PAGE as u64 + 10));
            b.session_at = init.session.len() as u64;
            store.write(&lease, &b).await.unwrap();
            assert_eq!(log.catch_up(&store).await.unwrap(), PAGE + 8);
            assert_eq!(log.last_bookmark().unwrap().seq, PAGE as u64 + 10);
            // Everything after seq 1 exactly once, in order, whether from the
            // store or from the ring.
            let mut seen = Vec::new();
            for _ in 0..100 {
                let p: serde_json::Value =
                    serde_json::from_str(&log.poll_json(sub, 100).unwrap()).unwrap();
                match p["kind"].as_str().unwrap() {
                    "events" => seen.extend(
                        p["events"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|e| e["seq"].as_u64().unwrap()),
                    ),
                    "read" => {
                        let text = log
                            .fill_json(&store, sub, p["since"].as_u64(), 100)
                            .await
                            .unwrap();
                        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
                        seen.extend(
                            v.as_array()
                                .unwrap()
                                .iter()
                                .map(|e| e["seq"].as_u64().unwrap()),
                        );
                    }
                    _ => break,
                }
            }
            assert_eq!(seen, (2..=PAGE as u64 + 10).collect::<Vec<_>>());
            // Nothing new: nothing taken in.
            assert_eq!(log.catch_up(&store).await.unwrap(), 0);
        });
    }
}
