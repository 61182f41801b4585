//! The agent machine over a storage: opens and creates agents, carries out the
//! machine's `Persist` commands (awaiting the store) and hands every other
//! command to the driver. Generic over [`AgentStorage`], so files, memory,
//! IndexedDB and the fault-injecting store run the same code.

use std::cell::RefCell;
use std::future::Future;
use std::sync::Arc;
use std::task::Poll;

use serde_json::{Value, json};

use super::machine::{
    AgentMachine, Command, Input, Opened, PriorLines, Query, Reply, ResumeState, ResumeStrategy,
    ToolSpec,
};
use super::meta::{AgentMeta, MetaChanges};
use super::{AgentCore, Breakpoint, CheckpointInfo};
use crate::events::{Bookmark, build_event_line, parse_envelope};
use crate::storage::{AgentStorage, EventLine, Lease, WriteBatch};
use crate::writer::WriterCore;
use crate::{Error, ErrorCode, LoadOptions, Result, Session, time};

/// What a step of the runtime gives the driver.
#[derive(Debug, Default)]
pub struct Step {
    /// Commands for the driver (never `Persist`: those are done), in order.
    pub commands: Vec<Command>,
    /// The input's answer.
    pub reply: Reply,
    /// The event lines made durable by this step, oldest first (for live listeners).
    pub events: Vec<Arc<str>>,
}

/// An open agent: its lease, its machine and its store.
///
/// Its async methods take `&self` and borrow the machine only between awaits,
/// so a single-threaded binding (wasm) can answer queries
/// ([`with_machine`](Self::with_machine)) while a step waits for its store.
/// Callers run one async method at a time (both bindings queue them).
#[derive(Debug)]
pub struct AgentRuntime<S> {
    store: S,
    lease: Lease,
    machine: RefCell<AgentMachine>,
    /// A write failed: the machine is ahead of the store; only `close` works.
    broken: RefCell<Option<Error>>,
}

/// The session header of a new agent.
fn header(now: f64, parent: Option<&str>, seed: u64) -> String {
    let mut rng = crate::writer::IdRng::new(seed ^ 0xA5A5_5A5A_0F0F_F0F0);
    let (a, b) = (rng.next_u64(), rng.next_u64());
    // A version-4 UUID from 128 random bits.
    let id = format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0x0fff,
        (b >> 48) & 0x3fff | 0x8000,
        b & 0xffff_ffff_ffff
    );
    let mut line = WriterCore::new_header_line(&id, now as i64, "", parent);
    if !line.ends_with('\n') {
        line.push('\n');
    }
    line
}

fn load(bytes: Vec<u8>) -> Result<Session> {
    Session::from_bytes_threads(
        bytes,
        &LoadOptions::default(),
        None,
        crate::threads::available(),
    )
}

/// Runs two futures at once; both outputs when both are done.
async fn both<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let (mut a, mut b) = (std::pin::pin!(a), std::pin::pin!(b));
    let (mut ra, mut rb) = (None, None);
    std::future::poll_fn(|cx| {
        if ra.is_none()
            && let Poll::Ready(v) = a.as_mut().poll(cx)
        {
            ra = Some(v);
        }
        if rb.is_none()
            && let Poll::Ready(v) = b.as_mut().poll(cx)
        {
            rb = Some(v);
        }
        match (ra.take(), rb.take()) {
            (Some(x), Some(y)) => Poll::Ready((x, y)),
            (x, y) => {
                (ra, rb) = (x, y);
                Poll::Pending
            }
        }
    })
    .await
}

/// What a resume from the tail reads: the session's first bytes (its header
/// line), the tail from the last safe-fork-point, and the lines before it
/// that the marks point to (todos, queued, checkpoints, in that order).
struct TailRead {
    first: Vec<u8>,
    tail: Vec<u8>,
    lines: Option<Vec<String>>,
}

/// Reads what a resume from the tail needs, all at once (`None` when the
/// state cannot hold for a session `len` bytes long).
async fn read_tail<S: AgentStorage>(
    store: &S,
    id: &str,
    state: &ResumeState,
    len: u64,
) -> Result<Option<TailRead>> {
    let from = state.marks.sfp_offset;
    if state.v != ResumeState::VERSION
        || state.session_len > len
        || from >= state.session_len
        || from == 0
    {
        return Ok(None);
    }
    let m = &state.marks;
    let mut spans: Vec<(u64, u64)> = m.todos.filter(|t| t.0 < from).into_iter().collect();
    spans.extend(m.queued.iter().filter(|q| q.1 < from).map(|q| (q.1, q.2)));
    spans.extend(m.checkpoints.iter().filter(|c| c.0 < from).copied());
    // The header line: a resume reads at most 64 KiB of it.
    let ((first, tail), lines) = both(
        both(
            store.read_session(id, 0, from.min(64 << 10)),
            store.read_session(id, from, len),
        ),
        read_lines(store, id, &spans, from),
    )
    .await;
    Ok(Some(TailRead {
        first: first?,
        tail: tail?,
        lines: lines?,
    }))
}

/// Lines `spans` (offset, length without the newline) of agent `id`'s
/// session, all before `limit`, read with one store read per group of lines
/// less than 16 KiB apart (a resume state may point to many checkpoints).
/// `None` if a span reaches `limit` or a line is not UTF-8.
async fn read_lines<S: AgentStorage>(
    store: &S,
    id: &str,
    spans: &[(u64, u64)],
    limit: u64,
) -> Result<Option<Vec<String>>> {
    const GAP: u64 = 16 << 10;
    if spans
        .iter()
        .any(|&(off, n)| off.checked_add(n).is_none_or(|end| end > limit))
    {
        return Ok(None);
    }
    let mut order: Vec<usize> = (0..spans.len()).collect();
    order.sort_by_key(|&i| spans[i].0);
    let mut out: Vec<Option<String>> = vec![None; spans.len()];
    let mut k = 0;
    while k < order.len() {
        let start = spans[order[k]].0;
        let mut end = start + spans[order[k]].1;
        let mut j = k + 1;
        while j < order.len() && spans[order[j]].0 <= end.saturating_add(GAP) {
            end = end.max(spans[order[j]].0 + spans[order[j]].1);
            j += 1;
        }
        let bytes = store.read_session(id, start, end).await?;
        for &i in &order[k..j] {
            let (off, n) = spans[i];
            let a = (off - start) as usize;
            out[i] = bytes
                .get(a..a + n as usize)
                .and_then(|b| String::from_utf8(b.to_vec()).ok());
        }
        k = j;
    }
    Ok(out.into_iter().collect())
}

/// The breakpoint the last `breakpoint_changed` event of agent `id` names
/// (`READY` when there is none), read from the log's tail (growing the window
/// until one is found or the log is read whole); `last` is the log's last event.
pub async fn last_breakpoint<S: AgentStorage>(
    store: &S,
    id: &str,
    last: Option<Bookmark>,
) -> Result<Breakpoint> {
    Ok(breakpoint_and_partial(store, id, last).await?.0)
}

/// [`last_breakpoint`], and, when it is `STREAMING_MODEL`, what had streamed
/// since (the pieces of a model call the process died in, as answer blocks).
async fn breakpoint_and_partial<S: AgentStorage>(
    store: &S,
    id: &str,
    last: Option<Bookmark>,
) -> Result<(Breakpoint, Option<Value>)> {
    let Some(last) = last else {
        return Ok((Breakpoint::Ready, None));
    };
    let mut count = 64usize;
    loop {
        let lines = store.tail_events(id, count).await?;
        for (i, l) in lines.iter().enumerate().rev() {
            let Ok(env) = parse_envelope(l, 512) else {
                continue;
            };
            if env.kind == "breakpoint_changed" {
                let v: Value = serde_json::from_str(l).unwrap_or(Value::Null);
                let bp: Breakpoint =
                    serde_json::from_value(v["current"].clone()).unwrap_or_default();
                let partial = if bp == Breakpoint::StreamingModel {
                    AgentMachine::partial_from_events(&lines[i + 1..])
                } else {
                    None
                };
                return Ok((bp, partial));
            }
        }
        if lines.len() < count || count as u64 >= last.seq {
            return Ok((Breakpoint::Ready, None));
        }
        count = count.saturating_mul(8);
    }
}

impl<S: AgentStorage> AgentRuntime<S> {
    /// Creates agent `meta.agent_id` (`ALREADY_EXISTS` when taken): its session
    /// header, `agent_created` and its meta in one write.
    pub async fn create(
        store: S,
        mut meta: AgentMeta,
        tools: Vec<ToolSpec>,
        seed: u64,
        now: f64,
    ) -> Result<Self> {
        if meta.agent_id.is_empty() {
            // `agt-` + the time in base 36 + 48 random bits (as 0.1.0 named them).
            let r = crate::writer::IdRng::new(seed ^ 0xA6E7_1D5E_ED00_0001).next_u64();
            meta.agent_id = format!(
                "agt-{}{:012x}",
                super::machine::base36(now as u64),
                r & 0xffff_ffff_ffff
            );
        }
        let id = meta.agent_id.clone();
        let head = header(now, None, seed);
        let session = load(head.clone().into_bytes())?;
        let mut machine = AgentMachine::new(
            meta.clone(),
            session,
            head.len() as u64,
            None,
            Breakpoint::Ready,
            tools,
            seed,
        )?;
        machine.created(now)?;
        let mut init = WriteBatch {
            session: head.into_bytes(),
            meta: Some(meta.to_text()?),
            ..WriteBatch::default()
        };
        for c in machine.take_commands() {
            if let Command::Persist(b) = c {
                init.session.extend_from_slice(&b.session);
                init.events.extend(b.events);
            }
        }
        let lease = store.create(&id, &init).await?;
        Ok(AgentRuntime::new(store, lease, machine))
    }

    /// Opens agent `id`: takes its lease and reads its meta and session.
    /// Nothing is written until [`resume`](Self::resume).
    pub async fn open(store: S, id: &str, tools: Vec<ToolSpec>, seed: u64) -> Result<Self> {
        let lease = store.acquire(id).await?;
        match Self::open_leased(&store, &lease, tools, seed).await {
            Ok(machine) => Ok(AgentRuntime::new(store, lease, machine)),
            Err(e) => {
                let _ = store.release(&lease).await;
                Err(e)
            }
        }
    }

    /// Resumes an opened agent: applies `changes`, then seals (`crash`) or
    /// reports open calls, then `agent_resumed`; with `auto_run` goes on.
    pub async fn resume(
        &self,
        strategy: ResumeStrategy,
        changes: Option<&MetaChanges>,
        auto_run: bool,
        now: f64,
    ) -> Result<(Step, Opened)> {
        self.check()?;
        if auto_run {
            self.ensure_whole().await?;
        }
        let opened = self.machine_mut()?.resume(strategy, changes, auto_run, now);
        let step = self.run(Reply::default()).await?;
        Ok((step, opened?))
    }

    async fn open_leased(
        store: &S,
        lease: &Lease,
        tools: Vec<ToolSpec>,
        seed: u64,
    ) -> Result<AgentMachine> {
        let id = &lease.agent_id;
        let head = store.head(lease).await?;
        let meta = AgentMeta::parse(&head.meta, id)?;
        let state = head
            .state
            .as_deref()
            .and_then(|t| serde_json::from_slice::<ResumeState>(t).ok());
        // The log's end and the session's tail are read at once (a store may
        // serve the reads concurrently: IndexedDB does).
        let (bp, tail) = both(breakpoint_and_partial(store, id, head.last_event), async {
            match &state {
                Some(st) => read_tail(store, id, st, head.session_len).await,
                None => Ok(None),
            }
        })
        .await;
        let (bp, partial) = bp?;
        if let (Some(state), Some(tail)) = (&state, tail?)
            && let Some(mut m) = Self::from_tail(tail, state, &head, &meta, bp, &tools, seed)?
        {
            m.set_crashed_partial(partial);
            return Ok(m);
        }
        let bytes = store.read_session(id, 0, head.session_len).await?;
        let len = bytes.len() as u64;
        let session = load(bytes)?;
        let mut m = AgentMachine::new(meta, session, len, head.last_event, bp, tools, seed)?;
        m.set_crashed_partial(partial);
        m.forget_stored_state();
        Ok(m)
    }

    /// The machine from the session's tail as read, if the resume state holds
    /// for the session as it is (`None`: load it whole).
    #[allow(clippy::too_many_arguments)]
    fn from_tail(
        read: TailRead,
        state: &ResumeState,
        head: &crate::storage::AgentHead,
        meta: &AgentMeta,
        bp: Breakpoint,
        tools: &[ToolSpec],
        seed: u64,
    ) -> Result<Option<AgentMachine>> {
        let from = state.marks.sfp_offset;
        let Some(nl) = read.first.iter().position(|&b| b == b'\n') else {
            return Ok(None);
        };
        let mut bytes = read.first;
        bytes.truncate(nl + 1);
        let header_len = bytes.len() as u64;
        bytes.extend(read.tail);
        let Ok(tail) = load(bytes) else {
            return Ok(None);
        };
        // The tail must start with the marked entry and be one branch without
        // leaf moves (a restore since: load it whole).
        let entries = tail.entries();
        let starts_right = entries
            .first()
            .is_some_and(|e| *e.id == *state.marks.sfp_id && e.offset == header_len);
        let one_branch = tail.leaf_path().len() == entries.len()
            && !entries.iter().any(|e| {
                matches!(
                    e.kind,
                    crate::entry::EntryKind::Leaf | crate::entry::EntryKind::Label
                )
            });
        if !starts_right || !one_branch {
            return Ok(None);
        }
        // The pointed lines (before the tail, in the order `pointed` lists
        // them); one that is not what it should be: load it whole.
        let Some(lines) = read.lines else {
            return Ok(None);
        };
        let mut lines = lines.into_iter();
        let mut parsed = |ty: &str| {
            lines
                .next()
                .and_then(|t| super::parse_json::<Value>(&t, "entry").ok().map(|v| (t, v)))
                .filter(|(_, v)| v["customType"] == ty)
        };
        let m = &state.marks;
        let mut prior = PriorLines::default();
        if m.todos.is_some_and(|t| t.0 < from) {
            let Some((text, _)) = parsed(super::TODOS) else {
                return Ok(None);
            };
            prior.todos = Some(text);
        }
        for (q, _, _) in m.queued.iter().filter(|q| q.1 < from) {
            match parsed(super::QUEUED) {
                Some((_, v)) if v["data"]["queueId"].as_str() == Some(q.as_str()) => {
                    prior.queued.push((q.clone(), v["data"].clone()));
                }
                _ => return Ok(None),
            }
        }
        for _ in m.checkpoints.iter().filter(|c| c.0 < from) {
            let Some((text, _)) = parsed(super::CHECKPOINT) else {
                return Ok(None);
            };
            prior.checkpoints.push(text);
        }
        AgentMachine::from_tail(
            meta.clone(),
            tail,
            header_len,
            state,
            head.session_len,
            head.last_event,
            bp,
            tools.to_vec(),
            seed,
            prior,
        )
        .map(Some)
    }

    /// Loads the whole session into a machine resumed from the tail (the first
    /// input that needs more than the tail does it).
    pub async fn ensure_whole(&self) -> Result<()> {
        if self.machine_mut()?.is_whole() {
            return Ok(());
        }
        self.check()?;
        let len = self.machine_mut()?.session_len();
        let session = load(
            self.store
                .read_session(&self.lease.agent_id, 0, len)
                .await?,
        )?;
        self.machine_mut()?.load_whole(session)
    }

    /// Answers a query, loading the whole session first if it needs it.
    pub async fn query(&self, q: &Query) -> Result<String> {
        if q.needs_whole() {
            self.ensure_whole().await?;
        }
        let out = self.machine_mut()?.query(q)?;
        if matches!(q, Query::Usage) && out == "null" {
            // Not in the resume state: the history says.
            self.ensure_whole().await?;
            return self.machine_mut()?.query(q);
        }
        Ok(out)
    }

    fn new(store: S, lease: Lease, machine: AgentMachine) -> Self {
        AgentRuntime {
            store,
            lease,
            machine: RefCell::new(machine),
            broken: RefCell::new(None),
        }
    }

    /// The machine (for queries).
    pub fn machine(&mut self) -> &mut AgentMachine {
        self.machine.get_mut()
    }

    /// Runs `f` on the machine through a shared reference (for queries while
    /// a step waits for its store). `INTERNAL` if called from inside another
    /// borrow of the machine, which the runtime never holds across an await.
    pub fn with_machine<T>(&self, f: impl FnOnce(&mut AgentMachine) -> T) -> Result<T> {
        Ok(f(&mut *self.machine_mut()?))
    }

    fn machine_mut(&self) -> Result<std::cell::RefMut<'_, AgentMachine>> {
        self.machine
            .try_borrow_mut()
            .map_err(|_| Error::internal("the agent machine is in use"))
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The lease this runtime writes under.
    pub fn lease(&self) -> &Lease {
        &self.lease
    }

    fn check(&self) -> Result<()> {
        match &*self.broken.borrow() {
            Some(e) => Err(Error::new(
                if e.code == ErrorCode::LeaseLost {
                    ErrorCode::LeaseLost
                } else {
                    ErrorCode::Closed
                },
                format!(
                    "the agent was closed after a failed write ({}); open it again",
                    e.message
                ),
            )),
            None => Ok(()),
        }
    }

    /// Carries out the machine's queued `Persist` commands; returns the rest.
    async fn run(&self, reply: Reply) -> Result<Step> {
        let mut step = Step {
            reply,
            ..Step::default()
        };
        let commands = self.machine_mut()?.take_commands();
        for c in commands {
            match c {
                Command::Persist(batch) => {
                    if let Err(e) = self.store.write(&self.lease, &batch).await {
                        if let Ok(mut m) = self.machine_mut() {
                            m.close();
                        }
                        *self.broken.borrow_mut() = Some(e.clone());
                        return Err(e);
                    }
                    step.events.extend(batch.events.into_iter().map(|e| e.line));
                }
                c => step.commands.push(c),
            }
        }
        Ok(step)
    }

    /// Feeds an input at time `now`; durable what it wrote when it returns.
    pub async fn handle(&self, input: Input, now: f64) -> Result<Step> {
        self.check()?;
        self.ensure_whole().await?;
        let r = self.machine_mut()?.handle(input, now);
        let step = self.run(Reply::default()).await?;
        Ok(Step { reply: r?, ..step })
    }

    /// Feeds bytes of model call `ticket`'s streamed body (see
    /// [`AgentMachine::stream_bytes`]); durable what they completed when it returns.
    pub async fn stream_bytes(&self, ticket: u64, bytes: &[u8], now: f64) -> Result<Step> {
        self.check()?;
        let r = self.machine_mut()?.stream_bytes(ticket, bytes, now);
        let step = self.run(Reply::default()).await?;
        Ok(Step { reply: r?, ..step })
    }

    /// Applies configuration changes (durable on return).
    pub async fn change_meta(&self, changes: &MetaChanges, now: f64) -> Result<Step> {
        self.check()?;
        self.machine_mut()?.change_meta(changes, now);
        self.run(Reply::default()).await
    }

    /// Restores checkpoint `id`: moves the leaf to its entry, rebuilds the state there.
    pub async fn restore(&self, id: &str, now: f64) -> Result<(CheckpointInfo, Step)> {
        self.check()?;
        self.ensure_whole().await?;
        let cp = self.machine_mut()?.begin_restore(id, now)?;
        let mut step = self.run(Reply::default()).await?;
        // The leaf moved in the store: a machine that could not take in the
        // restored path would go on with the old one, so it closes.
        let more = match self.finish_restore(&cp, now).await {
            Ok(more) => more,
            Err(e) => {
                if self.broken.borrow().is_none() {
                    if let Ok(mut m) = self.machine_mut() {
                        m.close();
                    }
                    *self.broken.borrow_mut() = Some(e.clone());
                }
                return Err(e);
            }
        };
        step.events.extend(more.events);
        step.commands.extend(more.commands);
        Ok((cp, step))
    }

    async fn finish_restore(&self, cp: &CheckpointInfo, now: f64) -> Result<Step> {
        let len = self.machine_mut()?.session_len();
        let bytes = self
            .store
            .read_session(&self.lease.agent_id, 0, len)
            .await?;
        let session = load(bytes)?;
        self.machine_mut()?.finish_restore(&session, cp, now)?;
        self.run(Reply::default()).await
    }

    /// Creates a fork from snapshot `snapshot` (default: a new snapshot of the
    /// last safe-fork-point): a new agent whose session is the path up to the
    /// snapshot (never a call without its result), with this one's
    /// configuration, lineage + this id, this one's todo list as it is now, and
    /// an event log continuing this one's seq — written in one `create`. Returns
    /// the fork's runtime on `store`.
    pub async fn fork<T: AgentStorage>(
        &self,
        store: T,
        snapshot: Option<&str>,
        tools: Vec<ToolSpec>,
        seed: u64,
        now: f64,
    ) -> Result<(AgentRuntime<T>, Step)> {
        self.check()?;
        self.ensure_whole().await?;
        let mut step = Step::default();
        let sel = match snapshot {
            Some(s) => s.to_string(),
            None => {
                let s = self.handle(Input::Snapshot { label: None }, now).await?;
                step.events.extend(s.events);
                let v = s.reply.value.unwrap_or_default();
                serde_json::from_str::<String>(&v).map_err(|e| Error::internal(e.to_string()))?
            }
        };
        let (snap, len) = {
            let mut m = self.machine_mut()?;
            (m.core().snapshot(&sel)?, m.session_len())
        };
        let parent_id = self.lease.agent_id.clone();
        let parent = load(self.store.read_session(&parent_id, 0, len).await?)?;
        let at = parent.index_of(&snap.entry_id)?;
        let (new_id, meta, todos_now, mut seq) = {
            let mut m = self.machine_mut()?;
            let new_id = m.fork_id(now);
            let meta = m.fork_meta(&new_id, &snap, now);
            // The todo list comes along as it is now (not as it was at the snapshot).
            let todos = m.core().todos().map(|t| t.get().to_string());
            (new_id, meta, todos, m.next_seq())
        };
        let mut text = header(now, Some(&format!("../{parent_id}/session.jsonl")), seed);
        for i in parent.tree().path_to(at) {
            text.push_str(parent.entry_text(i));
            text.push('\n');
        }
        let child = load(text.clone().into_bytes())?;
        let child_core = AgentCore::from_session(&child)?;
        let mut events = Vec::new();
        let mut event = |v: Value, seq: &mut u64| -> Result<()> {
            let (line, meta) = build_event_line(&v.to_string(), *seq, now as i64, 512)?;
            *seq += 1;
            events.push(EventLine {
                meta,
                line: Arc::from(line),
            });
            Ok(())
        };
        event(
            json!({ "type": "agent_forked", "channel": "monitor", "from": parent_id, "snapshot": snap.id, "entryId": snap.entry_id }),
            &mut seq,
        )?;
        let child_todos = child_core.todos().map(|t| t.get().to_string());
        if let Some(t) = todos_now.filter(|t| Some(t) != child_todos.as_ref()) {
            let list: Value = super::parse_json(&t, "todos")?;
            let (entry, current, previous) =
                child_core.todos_entry(&list["todos"].to_string(), now)?;
            let mut w =
                WriterCore::from_session(child, text.len() as u64, seed, &LoadOptions::default())?;
            w.append(&entry, now as i64)?;
            if let Some(b) = w.take_batch(None) {
                text.push_str(&String::from_utf8_lossy(&b.bytes));
            }
            event(
                json!({ "type": "todo_changed", "current": current, "previous": previous }),
                &mut seq,
            )?;
        }
        let init = WriteBatch {
            session: text.into_bytes(),
            events,
            meta: Some(meta.to_text()?),
            ..WriteBatch::default()
        };
        let lease = store.create(&new_id, &init).await?;
        let machine = match AgentRuntime::open_leased(&store, &lease, tools, seed ^ 0x9E37).await {
            Ok(m) => m,
            Err(e) => {
                let _ = store.release(&lease).await;
                return Err(e);
            }
        };
        Ok((AgentRuntime::new(store, lease, machine), step))
    }

    /// Releases the lease; later inputs are `CLOSED`.
    pub async fn close(&self) -> Result<()> {
        self.machine_mut()?.close();
        self.broken
            .borrow_mut()
            .get_or_insert_with(|| Error::new(ErrorCode::Closed, "closed"));
        self.store.release(&self.lease).await
    }
}

/// Milliseconds since the epoch as ISO 8601 (for meta times).
pub fn iso(now: f64) -> String {
    time::ms_to_iso(now as i64)
}

impl Step {
    /// The step as JSON for a binding: `{commands, value, bookmark, events?}`.
    /// A model request names how many messages of the context it sees
    /// (`messageCount`; a driver reads them with `Query::Messages` only if its
    /// provider does) and carries its tools as JSON text.
    /// `events` (the durable lines, as objects) only with `with_events`.
    pub fn to_json(&self, with_events: bool) -> String {
        let mut cmds = Vec::with_capacity(self.commands.len());
        for c in &self.commands {
            cmds.push(match c {
                Command::CallModel { ticket, request } => json!({
                    "kind": "callModel", "ticket": ticket, "system": request.system,
                    "messageCount": request.message_count, "tools": request.tools,
                }),
                Command::RunTool { ticket, call_id, name, input } => json!({
                    "kind": "runTool", "ticket": ticket, "callId": call_id, "name": name, "input": input,
                }),
                Command::Abort => json!({ "kind": "abort" }),
                Command::Persist(_) => json!({ "kind": "persisted" }),
            });
        }
        let mut out = String::from("{\"commands\":");
        out.push_str(&Value::Array(cmds).to_string());
        out.push_str(",\"value\":");
        out.push_str(self.reply.value.as_deref().unwrap_or("null"));
        out.push_str(",\"bookmark\":");
        match self.reply.bookmark {
            Some(b) => out.push_str(&json!(b).to_string()),
            None => out.push_str("null"),
        }
        if with_events {
            out.push_str(",\"events\":[");
            for (i, e) in self.events.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(e);
            }
            out.push(']');
        }
        out.push('}');
        out
    }
}

/// `resume`'s options as a binding passes them (JSON `{strategy, changes, autoRun}`).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeOptions {
    #[serde(default)]
    pub strategy: ResumeStrategy,
    #[serde(default)]
    pub changes: Option<MetaChanges>,
    #[serde(default)]
    pub auto_run: bool,
}

impl<S: AgentStorage> AgentRuntime<S> {
    /// [`resume`](Self::resume) with its options as JSON; answers
    /// `{opened, step}` (JSON), as both bindings return it.
    pub async fn resume_json(&self, opts_json: &str, now: f64) -> Result<(Step, String)> {
        let o: ResumeOptions = serde_json::from_str(opts_json)
            .map_err(|e| Error::invalid_input(format!("resume options: {e}")))?;
        let (step, opened) = self
            .resume(o.strategy, o.changes.as_ref(), o.auto_run, now)
            .await?;
        let json = format!(
            "{{\"opened\":{},\"step\":{}}}",
            crate::types::to_json_text(&opened)?,
            step.to_json(false)
        );
        Ok((step, json))
    }
}

impl ToolSpec {
    /// The tools a driver can run, from their JSON (`ToolSpec[]`).
    pub fn list_from_json(json: &str) -> Result<Vec<ToolSpec>> {
        serde_json::from_str(json).map_err(|e| Error::invalid_input(format!("tools: {e}")))
    }
}
