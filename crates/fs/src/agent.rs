//! The agent store on the file system (FORMAT.md §14): one flat directory per
//! agent under the store's root, holding `meta.json` (replaced atomically),
//! `session.jsonl` and `events.jsonl` (append-only) and `LOCK` (an OS lock held
//! by the one process that runs the agent).

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use forkpoint_core::agent::{AgentCore, Breakpoint, SealedCall};
use forkpoint_core::events::{Bookmark, EventFilter, build_event_line};
use forkpoint_core::writer::WriterCore;
use forkpoint_core::{
    Durability, Error, ErrorCode, EventLogInfo, EventLogOptions, LoadOptions, Result, WriterOptions,
};
use serde_json::{Value, json};

use crate::events::FileEventLog;
use crate::io::{
    check_regular, io_error, nonblocking, open_error, open_regular, read_at, read_session,
    read_small, replace_atomic, sync_dir,
};
use crate::writer::FileWriter;

const META: &str = "meta.json";
const SESSION: &str = "session.jsonl";
const EVENTS: &str = "events.jsonl";
const LOCK: &str = "LOCK";

/// Checks an agent id: `[A-Za-z0-9][A-Za-z0-9._-]{0,127}`, no `..`, not a
/// reserved device name. Ids become directory names, so nothing else passes.
pub fn validate_id(id: &str) -> Result<()> {
    forkpoint_core::store::validate_id(id, "agent")
}

/// What opening an agent found.
#[derive(Debug)]
pub struct Opened {
    /// `meta.json`.
    pub meta: Value,
    /// The session context at the current leaf (`SessionContext` JSON).
    pub context_json: String,
    /// Where the agent was when it last wrote (from its last `breakpoint_changed` event).
    pub breakpoint: Breakpoint,
    /// Whether opening cut a torn tail off the session.
    pub repaired: bool,
}

/// An open agent: its lock, session writer, event log and state.
pub struct AgentFiles {
    id: String,
    dir: PathBuf,
    /// Held until `close` (an OS lock: released by the OS if the process dies).
    lock: Mutex<Option<File>>,
    session: FileWriter,
    events: Arc<FileEventLog>,
    events_info: EventLogInfo,
    core: Mutex<AgentCore>,
    meta: Mutex<Value>,
}

fn poisoned() -> Error {
    Error::internal("agent state poisoned by a panic")
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Takes the agent's lock (`AGENT_LOCKED` with the holder's pid when known).
fn take_lock(dir: &Path, id: &str) -> Result<File> {
    let path = dir.join(LOCK);
    let mut f = nonblocking(
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false),
    )
    .open(&path)
    .map_err(|e| open_error(e, &path, "lock file", "cannot open the agent's lock file"))?;
    check_regular(&f, &path, "lock file")?;
    match f.try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => {
            let holder = read_small(&path, 4096).unwrap_or_default();
            let holder = holder.trim();
            let who = if holder.is_empty() {
                String::new()
            } else {
                format!(" (held by {holder})")
            };
            return Err(Error::new(
                ErrorCode::AgentLocked,
                format!("agent '{id}' is open in another process or another Agent object{who}"),
            )
            .with_path(path.display().to_string()));
        }
        Err(fs::TryLockError::Error(e)) => {
            return Err(io_error(e, &path, "cannot lock the agent"));
        }
    }
    // Who holds it, for the next opener's error (advisory; the OS lock decides).
    let host = fs::read_to_string("/etc/hostname").unwrap_or_default();
    let _ = f.set_len(0);
    let _ = write!(f, "pid {} on {}", std::process::id(), host.trim());
    Ok(f)
}

fn read_meta(dir: &Path, id: &str) -> Result<Value> {
    let path = dir.join(META);
    let text = match open_regular(&path, "meta.json") {
        Ok((f, len)) => read_at(&f, &path, 0, len)?,
        Err(e) if e.code == ErrorCode::NotFound => {
            return Err(Error::new(
                ErrorCode::AgentNotFound,
                format!("no agent '{id}' in the store"),
            )
            .with_path(dir.display().to_string()));
        }
        Err(e) => return Err(e),
    };
    let v: Value = serde_json::from_slice(&text).map_err(|e| {
        Error::corrupted(format!("meta.json is not valid JSON: {e}"))
            .with_path(path.display().to_string())
    })?;
    if !v.is_object() || v.get("agentId").and_then(Value::as_str) != Some(id) {
        return Err(
            Error::corrupted(format!("meta.json does not describe agent '{id}'"))
                .with_path(path.display().to_string()),
        );
    }
    Ok(v)
}

fn write_meta(dir: &Path, id: &str, meta: &mut Value) -> Result<()> {
    let Value::Object(o) = meta else {
        return Err(Error::invalid_input("agent metadata is a JSON object"));
    };
    o.insert("agentId".into(), Value::String(id.to_string()));
    forkpoint_core::secrets::scrub_meta(meta);
    let text = serde_json::to_string_pretty(meta)
        .map_err(|e| Error::internal(format!("meta.json: {e}")))?;
    replace_atomic(&dir.join(META), text.as_bytes())
}

/// The agents in a store: each directory with a `meta.json`, as `{agentId,
/// …meta}` (a `meta.json` that does not parse: `{agentId, corrupted: true}`).
pub fn list(root: &Path) -> Result<Vec<Value>> {
    let rd = match fs::read_dir(root) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error(e, root, "cannot list the store")),
    };
    let mut out = Vec::new();
    for e in rd {
        let e = e.map_err(|e| io_error(e, root, "cannot list the store"))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if validate_id(&name).is_err() || !e.path().join(META).exists() {
            continue;
        }
        out.push(match read_meta(&e.path(), &name) {
            Ok(m) => m,
            Err(err) => json!({ "agentId": name, "corrupted": true, "error": err.message }),
        });
    }
    out.sort_by(|a, b| {
        let k = |v: &Value| {
            (
                v.get("createdAt")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                v["agentId"].as_str().unwrap_or("").to_string(),
            )
        };
        k(a).cmp(&k(b))
    });
    Ok(out)
}

/// Whether the store holds the agent (its `meta.json` exists).
pub fn exists(root: &Path, id: &str) -> Result<bool> {
    validate_id(id)?;
    Ok(root.join(id).join(META).exists())
}

/// The directory of an existing agent (`INVALID_ID`, `AGENT_NOT_FOUND`).
fn existing_dir(root: &Path, id: &str) -> Result<PathBuf> {
    validate_id(id)?;
    let dir = root.join(id);
    if !dir.join(META).exists() {
        return Err(Error::new(
            ErrorCode::AgentNotFound,
            format!("no agent '{id}' in the store"),
        )
        .with_path(root.display().to_string()));
    }
    Ok(dir)
}

/// Deletes an agent that no one runs (`AGENT_LOCKED` otherwise). Its forks stay.
pub fn delete(root: &Path, id: &str) -> Result<()> {
    let dir = existing_dir(root, id)?;
    let lock = take_lock(&dir, id)?;
    // meta.json first: a crash halfway leaves no half-agent that looks whole.
    fs::remove_file(dir.join(META)).map_err(|e| io_error(e, &dir, "cannot delete agent"))?;
    sync_dir(&dir)?;
    drop(lock);
    fs::remove_dir_all(&dir).map_err(|e| io_error(e, &dir, "cannot delete agent"))?;
    sync_dir(root)
}

/// What the store knows of an agent, read without taking its lock (for
/// `forkpoint show`): `{meta, breakpoint, lastBookmark, messageCount,
/// lastSfpIndex, openCalls, toolCalls, snapshots, checkpoints}`.
pub fn inspect(root: &Path, id: &str) -> Result<Value> {
    validate_id(id)?;
    let dir = root.join(id);
    let meta = read_meta(&dir, id)?;
    let s = read_session(&dir.join(SESSION), &LoadOptions::default())?;
    let mut core = AgentCore::from_session(&s)?;
    let ro = EventLogOptions {
        read_only: true,
        ..EventLogOptions::default()
    };
    let (bp, last) = if dir.join(EVENTS).exists() {
        let (events, _) = FileEventLog::open(&dir.join(EVENTS), &ro)?;
        (last_breakpoint(&events)?, events.last_bookmark()?)
    } else {
        (Breakpoint::Ready, None)
    };
    let open = open_calls_json(&mut core)?;
    let checkpoints = checkpoint_groups_json(&core);
    Ok(json!({
        "meta": meta,
        "breakpoint": bp,
        "lastBookmark": last,
        "messageCount": core.message_count(),
        "lastSfpIndex": core.last_sfp().map_or(-1, |(i, _)| i as i64),
        "leafId": s.leaf_id(),
        "openCalls": open,
        "toolCalls": core.records()?,
        "snapshots": core.snapshots(),
        "checkpoints": checkpoints,
    }))
}

/// The directory of a new agent, created (or left by a create that crashed
/// before its `meta.json`) and locked; `INVALID_ID` if the id is taken.
fn new_agent_dir(root: &Path, id: &str) -> Result<(PathBuf, File)> {
    validate_id(id)?;
    let dir = root.join(id);
    let taken = || {
        Err(Error::new(
            ErrorCode::InvalidId,
            format!("an agent '{id}' already exists in the store"),
        ))
    };
    if dir.join(META).exists() {
        return taken();
    }
    match fs::create_dir(&dir) {
        Ok(()) => sync_dir(root)?,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io_error(e, &dir, "cannot create the agent's directory")),
    }
    let lock = take_lock(&dir, id)?;
    // Checked again under the lock: another process may have created it meanwhile.
    if dir.join(META).exists() {
        return taken();
    }
    Ok((dir, lock))
}

/// The open calls of an agent as JSON: `[{id, name, arguments, state}]`
/// (`state` null when only the transcript has the call).
pub fn open_calls_json(core: &mut AgentCore) -> Result<Value> {
    Ok(Value::Array(
        core.open_calls()?
            .into_iter()
            .map(|(id, name, args, rec)| {
                json!({ "id": id, "name": name, "arguments": args, "state": rec.map(|r| r.state) })
            })
            .collect(),
    ))
}

/// Checkpoints grouped by execution as JSON: `[{executionId, checkpoints}]`.
pub fn checkpoint_groups_json(core: &AgentCore) -> Value {
    Value::Array(
        core.checkpoints_by_execution()
            .into_iter()
            .map(|(e, c)| json!({ "executionId": e, "checkpoints": c }))
            .collect(),
    )
}

fn writer_opts() -> WriterOptions {
    WriterOptions {
        durability: Durability::Group,
        ..WriterOptions::default()
    }
}

fn event_opts() -> EventLogOptions {
    EventLogOptions {
        durability: Durability::Group,
        ..EventLogOptions::default()
    }
}

/// The last `breakpoint_changed` event's `current` (`READY` if none).
fn last_breakpoint(events: &FileEventLog) -> Result<Breakpoint> {
    let Some(last) = events.last_bookmark()?.map(|b| b.seq) else {
        return Ok(Breakpoint::Ready);
    };
    let filter = EventFilter {
        kinds: Some(vec!["breakpoint_changed".into()]),
        ..EventFilter::default()
    };
    let mut back = 64u64;
    loop {
        let since = last.checked_sub(back);
        let out = events.read(since, None, &filter)?;
        if !out.is_empty() {
            let arr: Vec<Value> = serde_json::from_str(&out.into_events_json())
                .map_err(|e| Error::internal(format!("event read: {e}")))?;
            let cur = arr.last().and_then(|e| e.get("current")).cloned();
            return Ok(cur
                .and_then(|c| serde_json::from_value(c).ok())
                .unwrap_or_default());
        }
        if since.is_none() {
            return Ok(Breakpoint::Ready);
        }
        back = back.saturating_mul(8);
    }
}

impl AgentFiles {
    /// Creates an agent: its directory, lock, session, event log and `meta.json`
    /// (written last: an agent without it does not exist). `INVALID_ID` if the id
    /// is taken.
    pub fn create(root: &Path, id: &str, mut meta: Value) -> Result<(AgentFiles, Opened)> {
        fs::create_dir_all(root).map_err(|e| io_error(e, root, "cannot create the store"))?;
        let (dir, lock) = new_agent_dir(root, id)?;
        // Left by a create that crashed before meta.json: start afresh.
        for f in [SESSION, EVENTS] {
            let _ = fs::remove_file(dir.join(f));
        }
        write_meta(&dir, id, &mut meta)?;
        Self::finish_open(root, id, lock, meta)
    }

    /// Opens an agent (`AGENT_NOT_FOUND`, `AGENT_LOCKED`, `CORRUPTED_DATA`).
    pub fn open(root: &Path, id: &str) -> Result<(AgentFiles, Opened)> {
        let dir = existing_dir(root, id)?;
        let lock = take_lock(&dir, id)?;
        let meta = read_meta(&dir, id)?;
        Self::finish_open(root, id, lock, meta)
    }

    fn finish_open(root: &Path, id: &str, lock: File, meta: Value) -> Result<(AgentFiles, Opened)> {
        let dir = root.join(id);
        let (events, events_info) = FileEventLog::open(&dir.join(EVENTS), &event_opts())?;
        let breakpoint = last_breakpoint(&events)?;
        let mut core = None;
        let mut context_json = String::new();
        let opts = WriterOptions {
            session_id: Some(uuid::Uuid::new_v4().to_string()),
            ..writer_opts()
        };
        let (session, report) =
            FileWriter::open_with(&dir.join(SESSION), &opts, now(), seed(), |s| {
                // The two walks of the session run side by side.
                let (c, ctx) = std::thread::scope(|sc| {
                    let ctx = sc.spawn(|| s.context_json(None, false));
                    (AgentCore::from_session(s), ctx.join())
                });
                core = Some(c?);
                context_json = ctx.map_err(|_| Error::internal("context thread panicked"))??;
                Ok(())
            })?;
        let core = core.ok_or_else(|| Error::internal("session not inspected"))?;
        Ok((
            AgentFiles {
                id: id.to_string(),
                dir,
                lock: Mutex::new(Some(lock)),
                session,
                events: Arc::new(events),
                events_info,
                core: Mutex::new(core),
                meta: Mutex::new(meta.clone()),
            },
            Opened {
                meta,
                context_json,
                breakpoint,
                repaired: report.repaired.is_some(),
            },
        ))
    }

    /// The agent's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The agent's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The agent's event log.
    pub fn events(&self) -> &Arc<FileEventLog> {
        &self.events
    }

    /// What opening the event log found.
    pub fn events_info(&self) -> &EventLogInfo {
        &self.events_info
    }

    /// The agent's state (records, snapshots, checkpoints).
    pub fn core(&self) -> Result<MutexGuard<'_, AgentCore>> {
        self.core.lock().map_err(|_| poisoned())
    }

    /// `meta.json` as last written.
    pub fn meta(&self) -> Result<Value> {
        Ok(self.meta.lock().map_err(|_| poisoned())?.clone())
    }

    /// Replaces `meta.json` (atomically; credentials are never written).
    pub fn set_meta(&self, mut meta: Value) -> Result<()> {
        write_meta(&self.dir, &self.id, &mut meta)?;
        *self.meta.lock().map_err(|_| poisoned())? = meta;
        Ok(())
    }

    /// Appends entries to the session in order and returns once all are
    /// durable; returns their ids.
    pub fn append(&self, entries: &[String]) -> Result<Vec<String>> {
        let (ids, ticket) = self.submit(entries)?;
        self.wait(ticket)?;
        Ok(ids)
    }

    /// Queues entries in order, as one batch no other append can come between,
    /// and takes them into the state; returns their ids and the ticket that makes
    /// them durable ([`wait`](Self::wait)). Cheap: callers run it on the calling
    /// thread so that the file's order is the order of the calls.
    pub fn submit(&self, entries: &[String]) -> Result<(Vec<String>, u64)> {
        let mut core = self.core()?;
        self.submit_locked(&mut core, entries)
    }

    fn submit_locked(
        &self,
        core: &mut AgentCore,
        entries: &[String],
    ) -> Result<(Vec<String>, u64)> {
        // Checked whole before anything is queued: the state takes in all of a
        // batch or none of it is written.
        for e in entries {
            AgentCore::check(e)?;
        }
        let now = now();
        let appended = self.session.submit(|w| {
            let mut out = Vec::with_capacity(entries.len());
            for e in entries {
                out.push(w.append(e, now)?);
            }
            Ok(out)
        })?;
        let mut ids = Vec::with_capacity(appended.len());
        let mut ticket = 0;
        for (e, (id, t)) in entries.iter().zip(appended) {
            core.observe(e, &id)?;
            ids.push(id);
            ticket = t;
        }
        Ok((ids, ticket))
    }

    /// Blocks until the entries of `ticket` (and all before) are durable.
    pub fn wait(&self, ticket: u64) -> Result<()> {
        if ticket > 0 {
            self.session.wait(ticket)?;
        }
        Ok(())
    }

    /// Seals the open calls of the current path — all, or only `only` — (see
    /// [`AgentCore::seal`]) under one lock, so two seals never close a call
    /// twice; durable when it returns.
    pub fn seal(&self, note: Option<&str>, only: Option<&str>) -> Result<Vec<SealedCall>> {
        let ticket = {
            let mut core = self.core()?;
            let (entries, sealed) = core.seal(now() as f64, note, only)?;
            let (_, ticket) = self.submit_locked(&mut core, &entries)?;
            (ticket, sealed)
        };
        self.wait(ticket.0)?;
        Ok(ticket.1)
    }

    /// Names the last safe-fork-point; returns the snapshot id.
    pub fn snapshot(&self, label: Option<&str>) -> Result<String> {
        let (entry, id) = self.core()?.snapshot_entry(label, now() as f64)?;
        self.append(&[entry])?;
        Ok(id)
    }

    /// Moves the leaf to `entry_id` (a `leaf` entry; history kept) and rebuilds
    /// the state; returns the context there (`SessionContext` JSON).
    pub fn move_leaf(&self, entry_id: &str) -> Result<String> {
        let mut core = self.core()?;
        let (_, t) = self
            .session
            .submit(|w| w.move_leaf(Some(entry_id), now()))?;
        self.session.wait(t)?;
        let s = read_session(self.session.path(), &LoadOptions::default())?;
        *core = AgentCore::from_session(&s)?;
        s.context_json(None, false)
    }

    /// Creates agent `new_id` from snapshot `snapshot_id`: a sibling directory
    /// whose session is the path up to the snapshot's safe-fork-point (a fork
    /// never holds a call without its result) and whose event log continues
    /// this one's sequence. `meta` is the fork's `meta.json`.
    pub fn fork(
        &self,
        root: &Path,
        new_id: &str,
        snapshot_id: &str,
        mut meta: Value,
    ) -> Result<(AgentFiles, Opened)> {
        validate_id(new_id)?;
        let snap = self.core()?.snapshot(snapshot_id)?;
        let parent = read_session(self.session.path(), &LoadOptions::default())?;
        let at = parent.index_of(&snap.entry_id)?;
        let (dir, lock) = new_agent_dir(root, new_id)?;
        let t = now();
        let mut text = WriterCore::new_header_line(
            &uuid::Uuid::new_v4().to_string(),
            t,
            parent.header().cwd.as_deref().unwrap_or(""),
            Some(&self.session.path().display().to_string()),
        );
        for i in parent.tree().path_to(at) {
            text.push_str(parent.entry_text(i));
            text.push('\n');
        }
        replace_atomic(&dir.join(SESSION), text.as_bytes())?;
        let next = self
            .events
            .last_bookmark()?
            .map_or(1, |b: Bookmark| b.seq + 1);
        let first = json!({
            "type": "agent_forked",
            "channel": "monitor",
            "from": self.id,
            "snapshot": snap.id,
            "entryId": snap.entry_id,
        });
        let (line, _) = build_event_line(&first.to_string(), next, t, 512)?;
        replace_atomic(&dir.join(EVENTS), format!("{line}\n").as_bytes())?;
        if let Value::Object(o) = &mut meta {
            o.insert(
                "forkedFrom".into(),
                json!({ "agentId": self.id, "snapshot": snap.id, "entryId": snap.entry_id }),
            );
        }
        write_meta(&dir, new_id, &mut meta)?;
        Self::finish_open(root, new_id, lock, meta)
    }

    /// Waits for pending writes and releases the agent (and its lock).
    pub fn close(&self) -> Result<()> {
        let a = self.session.close();
        let b = self.events.close();
        self.lock.lock().map_err(|_| poisoned())?.take();
        a.and(b)
    }
}

fn seed() -> u64 {
    getrandom::u64().unwrap_or_else(|_| now() as u64 ^ (u64::from(std::process::id()) << 32))
}
