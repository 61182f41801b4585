//! Agents in memory, for tests: the reference implementation of the contract.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use super::{AgentHead, AgentStorage, Lease, Listed, WriteBatch};
use crate::events::parse_event_line;
use crate::{Error, ErrorCode, Result};

#[derive(Debug, Default, Clone)]
struct Agent {
    meta: Vec<u8>,
    session: Vec<u8>,
    /// Event lines, each with its newline (a torn last line has none).
    events: Vec<u8>,
    hint: Option<Vec<u8>>,
    state: Option<Vec<u8>>,
    /// The last token handed out.
    generation: u64,
    /// The token of the current holder.
    held: Option<u64>,
}

/// Agents in memory. Cloning shares the data (two handles are two "processes"
/// on one store); [`crash`](Self::crash) drops every lease, as the death of the
/// processes holding them would.
#[derive(Debug, Default, Clone)]
pub struct MemoryStorage {
    agents: Arc<Mutex<BTreeMap<String, Agent>>>,
}

use super::{already_exists, lease_lost};

fn not_found(id: &str) -> Error {
    super::agent_not_found(id)
}

/// Cuts a last line without its newline.
fn cut_torn(bytes: &mut Vec<u8>) {
    let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    bytes.truncate(keep);
}

fn event_lines(events: &[u8]) -> impl Iterator<Item = &str> {
    events
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .filter_map(|l| std::str::from_utf8(l).ok())
}

fn seq_of(line: &str) -> Result<u64> {
    parse_event_line(line, 512)
        .map(|m| m.seq)
        .map_err(|e| Error::corrupted(format!("event line: {e}")))
}

impl MemoryStorage {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> Result<MutexGuard<'_, BTreeMap<String, Agent>>> {
        self.agents
            .lock()
            .map_err(|_| Error::internal("memory storage poisoned by a panic"))
    }

    /// Drops every lease (the holders died); the data stays.
    pub fn crash(&self) {
        if let Ok(mut s) = self.state() {
            for a in s.values_mut() {
                a.held = None;
            }
        }
    }

    /// The raw parts of an agent (session, events, meta), for tests.
    pub fn raw(&self, id: &str) -> Option<(Vec<u8>, Vec<u8>, Vec<u8>)> {
        let s = self.state().ok()?;
        s.get(id)
            .map(|a| (a.session.clone(), a.events.clone(), a.meta.clone()))
    }

    /// Appends raw bytes to an agent's session (no lease), as a torn write would leave them; for tests.
    pub fn append_raw(&self, id: &str, session: &[u8], events: &[u8]) {
        if let Ok(mut s) = self.state()
            && let Some(a) = s.get_mut(id)
        {
            a.session.extend_from_slice(session);
            a.events.extend_from_slice(events);
        }
    }

    fn apply(a: &mut Agent, batch: &WriteBatch) {
        a.session.extend_from_slice(&batch.session);
        for e in &batch.events {
            a.events.extend_from_slice(e.line.as_bytes());
            a.events.push(b'\n');
        }
        if let Some(m) = &batch.meta {
            a.meta = m.clone();
        }
        if let Some(h) = &batch.hint {
            a.hint = Some(h.clone());
        }
        if let Some(st) = &batch.state {
            a.state = Some(st.clone());
        }
    }

    fn check(a: &Agent, lease: &Lease) -> Result<()> {
        if a.held != Some(lease.token) {
            return Err(lease_lost(&lease.agent_id));
        }
        Ok(())
    }
}

impl AgentStorage for MemoryStorage {
    async fn create(&self, id: &str, init: &WriteBatch) -> Result<Lease> {
        let Some(meta) = &init.meta else {
            return Err(Error::invalid_input("a new agent needs its meta"));
        };
        let mut s = self.state()?;
        if s.contains_key(id) {
            return Err(already_exists(id));
        }
        let mut a = Agent {
            meta: meta.clone(),
            generation: 1,
            held: Some(1),
            ..Agent::default()
        };
        Self::apply(&mut a, init);
        s.insert(id.to_string(), a);
        Ok(Lease {
            agent_id: id.to_string(),
            token: 1,
        })
    }

    async fn acquire(&self, id: &str) -> Result<Lease> {
        let mut s = self.state()?;
        let a = s.get_mut(id).ok_or_else(|| not_found(id))?;
        if a.held.is_some() {
            return Err(Error::new(
                ErrorCode::AgentLocked,
                format!("agent '{id}' is open in another Agent object"),
            ));
        }
        cut_torn(&mut a.session);
        cut_torn(&mut a.events);
        a.generation += 1;
        a.held = Some(a.generation);
        Ok(Lease {
            agent_id: id.to_string(),
            token: a.generation,
        })
    }

    async fn head(&self, lease: &Lease) -> Result<AgentHead> {
        let s = self.state()?;
        let a = s
            .get(&lease.agent_id)
            .ok_or_else(|| not_found(&lease.agent_id))?;
        Self::check(a, lease)?;
        let last_event = match event_lines(&a.events).last() {
            Some(l) => Some(
                parse_event_line(l, 512)
                    .map_err(|e| Error::corrupted(format!("event line: {e}")))?
                    .bookmark(),
            ),
            None => None,
        };
        Ok(AgentHead {
            meta: a.meta.clone(),
            session_len: a.session.len() as u64,
            last_event,
            hint: a.hint.clone(),
            state: a.state.clone(),
        })
    }

    async fn read_session(&self, id: &str, start: u64, end: u64) -> Result<Vec<u8>> {
        let s = self.state()?;
        let a = s.get(id).ok_or_else(|| not_found(id))?;
        let end = (end as usize).min(a.session.len());
        let start = (start as usize).min(end);
        Ok(a.session[start..end].to_vec())
    }

    async fn read_events(
        &self,
        id: &str,
        since: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Arc<str>>> {
        let s = self.state()?;
        let a = s.get(id).ok_or_else(|| not_found(id))?;
        let mut out = Vec::new();
        for l in event_lines(&a.events) {
            if out.len() >= limit {
                break;
            }
            if since.is_none_or(|n| seq_of(l).is_ok_and(|q| q > n)) {
                out.push(Arc::from(l));
            }
        }
        Ok(out)
    }

    async fn tail_events(&self, id: &str, count: usize) -> Result<Vec<Arc<str>>> {
        let s = self.state()?;
        let a = s.get(id).ok_or_else(|| not_found(id))?;
        let all: Vec<&str> = event_lines(&a.events).collect();
        let from = all.len().saturating_sub(count);
        Ok(all[from..].iter().map(|l| Arc::from(*l)).collect())
    }

    async fn write(&self, lease: &Lease, batch: &WriteBatch) -> Result<()> {
        let mut s = self.state()?;
        let a = s
            .get_mut(&lease.agent_id)
            .ok_or_else(|| lease_lost(&lease.agent_id))?;
        Self::check(a, lease)?;
        if batch.session_at != a.session.len() as u64 {
            return Err(Error::internal(format!(
                "a batch for byte {} of a session of {} bytes",
                batch.session_at,
                a.session.len()
            )));
        }
        Self::apply(a, batch);
        Ok(())
    }

    async fn release(&self, lease: &Lease) -> Result<()> {
        let mut s = self.state()?;
        if let Some(a) = s.get_mut(&lease.agent_id)
            && a.held == Some(lease.token)
        {
            a.held = None;
        }
        Ok(())
    }

    async fn list(&self) -> Result<Vec<Listed>> {
        let s = self.state()?;
        Ok(s.iter()
            .map(|(id, a)| Listed {
                id: id.clone(),
                meta: Ok(a.meta.clone()),
            })
            .collect())
    }

    async fn exists(&self, id: &str) -> Result<bool> {
        Ok(self.state()?.contains_key(id))
    }

    async fn delete(&self, id: &str) -> Result<()> {
        let mut s = self.state()?;
        let a = s.get(id).ok_or_else(|| not_found(id))?;
        if a.held.is_some() {
            return Err(Error::new(
                ErrorCode::AgentLocked,
                format!("agent '{id}' is open; close it before deleting it"),
            ));
        }
        s.remove(id);
        Ok(())
    }
}
