//! Agents on the file system behind the storage seam ([`AgentStorage`]), in the
//! agent store's layout (FORMAT.md §14): `<root>/<id>/{meta.json,
//! session.jsonl, events.jsonl, LOCK}`. A store written by 0.1.0 opens
//! unchanged.
//!
//! **The lease** is the OS lock (`flock`) on the agent's `LOCK` file, taken
//! without blocking; a lock is held by an open file, so two `FileStorage`
//! objects exclude each other as two processes do. **The fencing token** is
//! the lock's generation, kept in `LOCK`'s text (`pid N on HOST gen G`; a text
//! without `gen`, as 0.1.0 wrote it, is generation 0): each acquisition reads
//! the last generation under the lock and writes the next, so tokens grow
//! across processes. The text is not fsynced: it is lost only with the
//! machine, and a machine crash ends every process and so every lease that
//! could carry an older token. Within one `FileStorage` tokens also never go
//! below the last one it handed out, whatever `LOCK` says (0.1.0 rewrites it
//! without a generation).
//!
//! **A write** (one [`WriteBatch`]) appends the session bytes at
//! `session_at` and fdatasyncs, appends the event lines through the agent's
//! [`FileEventLog`] (so live subscribers in this process see them), replaces
//! `meta.json` atomically, then the resume hint (a cache: its failure is
//! ignored). A crash may lose a suffix of that order, never a prefix.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use forkpoint_core::events::EventFilter;
use forkpoint_core::hint::hint_path;
use forkpoint_core::load::{is_blank, is_torn_final_line};
use forkpoint_core::storage::{AgentHead, AgentStorage, Lease, Listed, WriteBatch};
use forkpoint_core::{Durability, Error, ErrorCode, EventLogOptions, LoadOptions, Result};

use crate::events::FileEventLog;
use crate::io::{
    check_regular, complete_last_line, cut_tail, io_error, nonblocking, open_error, open_regular,
    read_at, read_into, read_small, replace_atomic, sync_dir,
};
use crate::place::open_locked;

const META: &str = "meta.json";
const SESSION: &str = "session.jsonl";
const EVENTS: &str = "events.jsonl";
const LOCK: &str = "LOCK";

/// Checks an agent id: `[A-Za-z0-9][A-Za-z0-9._-]{0,127}`, no `..`, not a
/// reserved device name (`INVALID_ID`). Ids become directory names, so nothing
/// else passes.
pub fn validate_id(id: &str) -> Result<()> {
    forkpoint_core::store::validate_id(id, "agent")
}

/// Longest `LOCK` text read.
const LOCK_TEXT_MAX: u64 = 4096;
/// The agent's resume state (FORMAT.md §14.2), a cache.
const STATE: &str = "state.json";

/// Writes `data` to a temporary file renamed over `path`, without syncing.
fn replace_unsynced(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let tmp = crate::place::temp_path(path, "tmp");
    let r = fs::write(&tmp, data).and_then(|()| fs::rename(&tmp, path));
    if r.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    r
}

/// Longest resume hint read.
const HINT_MAX: u64 = 16 << 20;
/// Bytes read per step when looking back for a line's start.
const BACK_CHUNK: u64 = 64 << 10;

/// The agents of a store directory, behind the storage seam (see the module
/// docs). `Send + Sync`: its futures complete synchronously, so a binding can
/// run them on any thread (`pollster::block_on` on the libuv pool).
pub struct FileStorage {
    root: PathBuf,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The agents this object holds the lease of.
    held: HashMap<String, Arc<Held>>,
    /// The last token handed out per agent (tokens never go below it).
    tokens: HashMap<String, u64>,
}

/// An agent whose lease this object holds.
struct Held {
    token: u64,
    dir: PathBuf,
    session_path: PathBuf,
    events: Arc<FileEventLog>,
    files: Mutex<Files>,
}

struct Files {
    /// The `LOCK` file, locked; `None` once released.
    lock: Option<File>,
    /// `session.jsonl`, open for reading and writing (and locked as a session
    /// writer locks it).
    session: File,
    /// A session write that failed: the file's end is unknown until the lease
    /// is taken again.
    failed: Option<Error>,
}

fn poisoned() -> Error {
    Error::internal("file storage state poisoned by a panic")
}

fn not_found(id: &str, root: &Path) -> Error {
    forkpoint_core::storage::agent_not_found(id).with_path(root.display().to_string())
}

fn lease_lost(id: &str) -> Error {
    forkpoint_core::storage::lease_lost(id)
}

fn already_exists(id: &str, dir: &Path) -> Error {
    forkpoint_core::storage::already_exists(id).with_path(dir.display().to_string())
}

fn held_here(id: &str) -> Error {
    Error::new(
        ErrorCode::AgentLocked,
        format!("agent '{id}' is open in this process (another Agent object holds it)"),
    )
}

fn event_opts() -> EventLogOptions {
    EventLogOptions {
        durability: Durability::Group,
        ..EventLogOptions::default()
    }
}

/// The generation a `LOCK` text records (`… gen G`; none: 0).
fn generation_of(text: &str) -> u64 {
    text.rsplit_once(" gen ")
        .map(|(_, g)| {
            let digits: String = g.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().unwrap_or(0)
        })
        .unwrap_or(0)
}

/// Who holds a lock, from its text, for an `AGENT_LOCKED` message.
fn holder_of(text: &str) -> String {
    let first = text.lines().next().unwrap_or("").trim();
    let who = first.rsplit_once(" gen ").map_or(first, |(w, _)| w).trim();
    if who.is_empty() {
        String::new()
    } else {
        format!(" (held by {who})")
    }
}

/// Takes agent `dir`'s lock without blocking (`AGENT_LOCKED` naming the
/// holder when another process or object has it) and records the next
/// generation, at least `floor + 1`; returns the locked file and the token.
fn lock_agent(dir: &Path, id: &str, floor: u64) -> Result<(File, u64)> {
    let path = dir.join(LOCK);
    let f = nonblocking(
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false),
    )
    .open(&path)
    .map_err(|e| open_error(e, &path, "lock file", "cannot open the agent's lock file"))?;
    let len = check_regular(&f, &path, "lock file")?;
    match f.try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => {
            let text = read_small(&path, LOCK_TEXT_MAX).unwrap_or_default();
            return Err(Error::new(
                ErrorCode::AgentLocked,
                format!(
                    "agent '{id}' is open in another process or another Agent object{}",
                    holder_of(&text)
                ),
            )
            .with_path(path.display().to_string()));
        }
        Err(fs::TryLockError::Error(e)) => {
            return Err(io_error(e, &path, "cannot lock the agent"));
        }
    }
    let old = read_at(&f, &path, 0, len.min(LOCK_TEXT_MAX))?;
    let token = generation_of(&String::from_utf8_lossy(&old))
        .max(floor)
        .saturating_add(1);
    let host = fs::read_to_string("/etc/hostname").unwrap_or_default();
    let text = format!("pid {} on {} gen {token}", std::process::id(), host.trim());
    // Written over the old text, then cut to length: no moment holds no
    // generation (a process killed in between leaves the new one).
    f.write_all_at(text.as_bytes(), 0)
        .and_then(|()| f.set_len(text.len() as u64))
        .map_err(|e| io_error(e, &path, "cannot record the lock's generation"))?;
    Ok((f, token))
}

/// The offset of the last newline in `[0, end)` of `file`, looking back at
/// most `max` bytes (`LIMIT_EXCEEDED` beyond); `None` when there is none.
fn last_newline(file: &File, path: &Path, end: u64, max: u64) -> Result<Option<u64>> {
    let mut buf = Vec::new();
    let mut hi = end;
    while hi > 0 {
        if end - hi > max {
            return Err(Error::new(
                ErrorCode::LimitExceeded,
                format!("the session's last line is over {max} bytes"),
            )
            .with_path(path.display().to_string()));
        }
        let lo = hi.saturating_sub(BACK_CHUNK);
        let n = read_into(file, path, lo, hi - lo, &mut buf)?;
        if let Some(i) = memchr::memrchr(b'\n', &buf[..n]) {
            return Ok(Some(lo + i as u64));
        }
        hi = lo;
    }
    Ok(None)
}

/// Makes the session end with a whole line before anything reads it, as a
/// writer's open does (FORMAT.md §7): a last line without its newline that
/// does not parse (a write cut short) is cut, one that parses gets its
/// newline. The last whole line must parse: if not, `CORRUPTED_DATA` and
/// nothing is changed. Returns the session's length.
fn repair_session(file: &File, path: &Path) -> Result<u64> {
    let len = check_regular(file, path, "session file")?;
    if len == 0 {
        return Ok(0);
    }
    let load = LoadOptions::default();
    let depth = load.max_depth as usize;
    if forkpoint_core::gz::is_gzip(&read_at(file, path, 0, len.min(2))?) {
        return Err(Error::new(
            ErrorCode::UnsupportedFormat,
            "an agent's session is plain JSONL, not gzip",
        )
        .with_path(path.display().to_string()));
    }
    let last_nl = last_newline(file, path, len, load.max_line_bytes)?;
    let start = last_nl.map_or(0, |p| p + 1);
    if let Some(nl) = last_nl {
        let from = last_newline(file, path, nl, load.max_line_bytes)?.map_or(0, |p| p + 1);
        let line = read_at(file, path, from, nl - from)?;
        if !is_blank(&line) && is_torn_final_line(&line, depth) {
            return Err(Error::corrupted(
                "the session's last whole line is not JSON (a line that a newline ends is never cut)",
            )
            .at(None, from)
            .with_path(path.display().to_string()));
        }
    }
    if start == len {
        return Ok(len);
    }
    let tail = read_at(file, path, start, len - start)?;
    if is_blank(&tail) || is_torn_final_line(&tail, depth) {
        // A file that is one torn line: only a session header cut short.
        const HEADER: &[u8] = b"{\"type\":\"session\"";
        let header_like = tail.starts_with(HEADER) || HEADER.starts_with(&tail);
        if start == 0 && !is_blank(&tail) && !header_like {
            return Err(Error::new(
                ErrorCode::UnsupportedFormat,
                "the agent's session file is not a session",
            )
            .with_path(path.display().to_string()));
        }
        cut_tail(file, path, start)?;
        Ok(start)
    } else {
        complete_last_line(file, path, len)?;
        Ok(len + 1)
    }
}

/// A file's bytes, `Ok(None)` if it does not exist.
fn read_optional(path: &Path, what: &str) -> Result<Option<Vec<u8>>> {
    match open_regular(path, what) {
        Ok((f, len)) => read_at(&f, path, 0, len).map(Some),
        Err(e) if e.code == ErrorCode::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

impl FileStorage {
    /// A store in directory `root` (created by the first `create`).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        FileStorage {
            root: root.into(),
            state: Mutex::default(),
        }
    }

    /// The store's directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The event log of an agent whose lease this object holds (live
    /// subscribers see each write's events as they become durable).
    pub fn events(&self, id: &str) -> Option<Arc<FileEventLog>> {
        let st = self.state().ok()?;
        st.held.get(id).map(|h| h.events.clone())
    }

    /// The `meta.json` text of agent `id`, read without its lease (the file is
    /// replaced atomically, so it is always whole): `INVALID_ID`,
    /// `AGENT_NOT_FOUND`, `INVALID_INPUT` when it is not a regular file.
    pub fn read_meta(&self, id: &str) -> Result<Vec<u8>> {
        let dir = self.existing(id)?;
        read_optional(&dir.join(META), "meta.json")?.ok_or_else(|| not_found(id, &self.root))
    }

    fn state(&self) -> Result<MutexGuard<'_, State>> {
        self.state.lock().map_err(|_| poisoned())
    }

    /// The directory of agent `id` (`INVALID_ID` first).
    fn dir(&self, id: &str) -> Result<PathBuf> {
        validate_id(id)?;
        Ok(self.root.join(id))
    }

    /// The directory of an existing agent (`INVALID_ID`, `AGENT_NOT_FOUND`).
    fn existing(&self, id: &str) -> Result<PathBuf> {
        let dir = self.dir(id)?;
        if !dir.join(META).exists() {
            return Err(not_found(id, &self.root));
        }
        Ok(dir)
    }

    /// The agent a lease is for, if it is the current one here.
    fn current(&self, lease: &Lease) -> Result<Option<Arc<Held>>> {
        Ok(self
            .state()?
            .held
            .get(&lease.agent_id)
            .filter(|h| h.token == lease.token)
            .cloned())
    }

    /// The held agent for a lease, `LEASE_LOST` when it is not the current one.
    fn held(&self, lease: &Lease) -> Result<Arc<Held>> {
        self.current(lease)?
            .ok_or_else(|| lease_lost(&lease.agent_id))
    }

    fn floor(&self, id: &str) -> Result<u64> {
        Ok(self.state()?.tokens.get(id).copied().unwrap_or(0))
    }

    fn is_held_here(&self, id: &str) -> Result<bool> {
        Ok(self.state()?.held.contains_key(id))
    }

    /// Records a lease taken (its files open) and returns it.
    fn hold(&self, id: &str, held: Held) -> Result<Lease> {
        let token = held.token;
        let mut st = self.state()?;
        let floor = st.tokens.entry(id.to_string()).or_default();
        *floor = (*floor).max(token);
        st.held.insert(id.to_string(), Arc::new(held));
        Ok(Lease {
            agent_id: id.to_string(),
            token,
        })
    }

    /// The event log of agent `id` to read: the held one, else the file
    /// opened read-only (`None`: the agent has no event log yet).
    fn events_to_read(&self, id: &str) -> Result<Option<Arc<FileEventLog>>> {
        if let Some(h) = self.state()?.held.get(id) {
            return Ok(Some(h.events.clone()));
        }
        let dir = self.existing(id)?;
        let path = dir.join(EVENTS);
        let opts = EventLogOptions {
            read_only: true,
            ..event_opts()
        };
        match FileEventLog::open(&path, &opts) {
            Ok((log, _)) => Ok(Some(Arc::new(log))),
            Err(e) if e.code == ErrorCode::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn write_held(&self, held: &Held, files: &mut Files, batch: &WriteBatch) -> Result<()> {
        let path = &held.session_path;
        let len = check_regular(&files.session, path, "session file")?;
        if batch.session_at != len {
            return Err(Error::internal(format!(
                "a batch for byte {} of a session of {len} bytes",
                batch.session_at
            ))
            .with_path(path.display().to_string()));
        }
        // The events must continue the log: checked before anything is written
        // (the log checks again as it queues them).
        if !batch.events.is_empty() {
            held.events.check_lines(&batch.events)?;
        }
        if !batch.session.is_empty() {
            let res = files
                .session
                .write_all_at(&batch.session, len)
                .and_then(|()| files.session.sync_data())
                .map_err(|e| io_error(e, path, "cannot append to the session"));
            if let Err(e) = res {
                // Take back what may have landed; the file's end is unknown
                // until the lease is taken again (which repairs it).
                let _ = files.session.set_len(len);
                let _ = files.session.sync_all();
                files.failed = Some(e.clone());
                return Err(e);
            }
        }
        if !batch.events.is_empty() {
            held.events.append_lines(&batch.events)?;
        }
        if let Some(meta) = &batch.meta {
            replace_atomic(&held.dir.join(META), meta)?;
        }
        if let Some(hint) = &batch.hint {
            // A cache: failing to write it loses nothing.
            let _ = replace_atomic(Path::new(&hint_path(&path.display().to_string())), hint);
        }
        if let Some(state) = &batch.state {
            // A cache checked when read: renamed into place, not synced.
            let _ = replace_unsynced(&held.dir.join(STATE), state);
        }
        Ok(())
    }

    /// Opens a locked agent's files (the session repaired) and holds it.
    fn open_held(&self, id: &str, dir: PathBuf, lock: File, token: u64) -> Result<Lease> {
        let session_path = dir.join(SESSION);
        let session = open_locked(&session_path)?;
        repair_session(&session, &session_path)?;
        let (events, _) = FileEventLog::open(&dir.join(EVENTS), &event_opts())?;
        self.hold(
            id,
            Held {
                token,
                dir,
                session_path,
                events: Arc::new(events),
                files: Mutex::new(Files {
                    lock: Some(lock),
                    session,
                    failed: None,
                }),
            },
        )
    }

    /// Gives up a held agent: waits for its writes, closes its event log and
    /// releases its locks.
    fn close_held(held: &Held) -> Result<()> {
        let mut files = held.files.lock().map_err(|_| poisoned())?;
        let res = held.events.close();
        let _ = files.session.unlock();
        files.lock.take();
        res
    }
}

impl Drop for FileStorage {
    fn drop(&mut self) {
        if let Ok(st) = self.state.get_mut() {
            for held in st.held.values() {
                let _ = Self::close_held(held);
            }
        }
    }
}

impl AgentStorage for FileStorage {
    async fn create(&self, id: &str, init: &WriteBatch) -> Result<Lease> {
        let dir = self.dir(id)?;
        let Some(meta) = &init.meta else {
            return Err(Error::invalid_input("a new agent needs its meta"));
        };
        if dir.join(META).exists() {
            return Err(already_exists(id, &dir));
        }
        if init.session_at != 0 {
            return Err(Error::internal(format!(
                "a new agent's session starts at byte 0, not {}",
                init.session_at
            )));
        }
        fs::create_dir_all(&self.root)
            .map_err(|e| io_error(e, &self.root, "cannot create the store"))?;
        match fs::create_dir(&dir) {
            Ok(()) => sync_dir(&self.root)?,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io_error(e, &dir, "cannot create the agent's directory")),
        }
        let (lock, token) = lock_agent(&dir, id, self.floor(id)?)?;
        // Checked again under the lock: another process may have created it.
        if dir.join(META).exists() {
            return Err(already_exists(id, &dir));
        }
        // Left by a create that died before meta.json: start afresh.
        let session_path = dir.join(SESSION);
        let events_path = dir.join(EVENTS);
        for p in [&session_path, &events_path] {
            let _ = fs::remove_file(p);
            let _ = fs::remove_file(hint_path(&p.display().to_string()));
        }
        let session = open_locked(&session_path)?;
        session
            .write_all_at(&init.session, 0)
            .and_then(|()| session.sync_all())
            .map_err(|e| io_error(e, &session_path, "cannot write the session"))?;
        let (events, _) = FileEventLog::open(&events_path, &event_opts())?;
        events.append_lines(&init.events)?;
        sync_dir(&dir)?;
        // meta.json last: its existence is the agent's.
        replace_atomic(&dir.join(META), meta)?;
        if let Some(hint) = &init.hint {
            let _ = replace_atomic(
                Path::new(&hint_path(&session_path.display().to_string())),
                hint,
            );
        }
        self.hold(
            id,
            Held {
                token,
                dir,
                session_path,
                events: Arc::new(events),
                files: Mutex::new(Files {
                    lock: Some(lock),
                    session,
                    failed: None,
                }),
            },
        )
    }

    async fn acquire(&self, id: &str) -> Result<Lease> {
        validate_id(id)?;
        if self.is_held_here(id)? {
            return Err(held_here(id));
        }
        let dir = self.existing(id)?;
        let (lock, token) = lock_agent(&dir, id, self.floor(id)?)?;
        // Deleted meanwhile (a delete removes meta.json under the lock).
        if !dir.join(META).exists() {
            return Err(not_found(id, &self.root));
        }
        self.open_held(id, dir, lock, token)
    }

    async fn head(&self, lease: &Lease) -> Result<AgentHead> {
        let Some(held) = self.current(lease)? else {
            self.existing(&lease.agent_id)?;
            return Err(lease_lost(&lease.agent_id));
        };
        let files = held.files.lock().map_err(|_| poisoned())?;
        if files.lock.is_none() {
            return Err(lease_lost(&lease.agent_id));
        }
        let meta_path = held.dir.join(META);
        let (f, len) = open_regular(&meta_path, "meta.json")?;
        let meta = read_at(&f, &meta_path, 0, len)?;
        let session_len = check_regular(&files.session, &held.session_path, "session file")?;
        let hint_file = hint_path(&held.session_path.display().to_string());
        Ok(AgentHead {
            meta,
            session_len,
            last_event: held.events.last_bookmark()?,
            hint: read_small(Path::new(&hint_file), HINT_MAX).map(String::into_bytes),
            state: read_small(&held.dir.join(STATE), HINT_MAX).map(String::into_bytes),
        })
    }

    async fn read_session(&self, id: &str, start: u64, end: u64) -> Result<Vec<u8>> {
        let path = self.existing(id)?.join(SESSION);
        let (f, len) = match open_regular(&path, "session file") {
            Ok(x) => x,
            Err(e) if e.code == ErrorCode::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let end = end.min(len);
        let start = start.min(end);
        read_at(&f, &path, start, end - start)
    }

    async fn read_events(
        &self,
        id: &str,
        since: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Arc<str>>> {
        let Some(log) = self.events_to_read(id)? else {
            return Ok(Vec::new());
        };
        if limit == 0 {
            return Ok(Vec::new());
        }
        let filter = EventFilter {
            limit: Some(limit as u64),
            ..EventFilter::default()
        };
        let out = log.read(since, None, &filter)?;
        Ok(out.lines().map(Arc::from).collect())
    }

    async fn tail_events(&self, id: &str, count: usize) -> Result<Vec<Arc<str>>> {
        let Some(log) = self.events_to_read(id)? else {
            return Ok(Vec::new());
        };
        let Some(last) = log.last_bookmark()?.map(|b| b.seq) else {
            return Ok(Vec::new());
        };
        if count == 0 {
            return Ok(Vec::new());
        }
        // Seqs of a log written here are consecutive; a log with gaps needs
        // a longer look back.
        let mut back = count as u64;
        loop {
            let since = last.checked_sub(back);
            let out = log.read(since, Some(last), &EventFilter::default())?;
            if out.len() >= count || since.is_none() {
                let skip = out.len().saturating_sub(count);
                return Ok(out.lines().skip(skip).map(Arc::from).collect());
            }
            back = back.saturating_mul(4);
        }
    }

    async fn write(&self, lease: &Lease, batch: &WriteBatch) -> Result<()> {
        let held = self.held(lease)?;
        let mut files = held.files.lock().map_err(|_| poisoned())?;
        if files.lock.is_none() {
            return Err(lease_lost(&lease.agent_id));
        }
        if let Some(e) = &files.failed {
            return Err(Error::new(
                ErrorCode::Closed,
                format!(
                    "an earlier write failed ({}); release the lease and acquire it again",
                    e.message
                ),
            ));
        }
        self.write_held(&held, &mut files, batch)
    }

    async fn release(&self, lease: &Lease) -> Result<()> {
        let held = {
            let mut st = self.state()?;
            match st.held.get(&lease.agent_id) {
                Some(h) if h.token == lease.token => st.held.remove(&lease.agent_id),
                _ => None,
            }
        };
        match held {
            Some(h) => Self::close_held(&h),
            None => Ok(()),
        }
    }

    async fn list(&self) -> Result<Vec<Listed>> {
        let rd = match fs::read_dir(&self.root) {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_error(e, &self.root, "cannot list the store")),
        };
        let mut out = Vec::new();
        for e in rd {
            let e = e.map_err(|e| io_error(e, &self.root, "cannot list the store"))?;
            let Ok(id) = e.file_name().into_string() else {
                continue;
            };
            // Agents are directories (a file beside them is not one).
            if validate_id(&id).is_err() || !e.path().is_dir() {
                continue;
            }
            let path = e.path().join(META);
            let meta = match read_optional(&path, "meta.json") {
                Ok(Some(m)) => Ok(m),
                Ok(None) => continue,
                Err(err) => Err(err),
            };
            out.push(Listed { id, meta });
        }
        out.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(out)
    }

    async fn exists(&self, id: &str) -> Result<bool> {
        Ok(self.dir(id)?.join(META).exists())
    }

    async fn delete(&self, id: &str) -> Result<()> {
        validate_id(id)?;
        if self.is_held_here(id)? {
            return Err(held_here(id));
        }
        let dir = self.existing(id)?;
        let (lock, _) = lock_agent(&dir, id, self.floor(id)?)?;
        if !dir.join(META).exists() {
            return Err(not_found(id, &self.root));
        }
        // meta.json first: a crash halfway leaves no half-agent that looks whole.
        fs::remove_file(dir.join(META)).map_err(|e| io_error(e, &dir, "cannot delete agent"))?;
        sync_dir(&dir)?;
        drop(lock);
        fs::remove_dir_all(&dir).map_err(|e| io_error(e, &dir, "cannot delete agent"))?;
        sync_dir(&self.root)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generations_read_from_lock_texts() {
        assert_eq!(generation_of(""), 0);
        assert_eq!(generation_of("pid 12 on host"), 0);
        assert_eq!(generation_of("pid 12 on host gen 7"), 7);
        assert_eq!(generation_of("pid 12 on host gen 7\n"), 7);
        // Old text left behind a shorter new one is not read as digits.
        assert_eq!(generation_of("pid 12 on h gen 42"), 42);
        assert_eq!(generation_of("pid 12 on host gen x"), 0);
        assert_eq!(
            holder_of("pid 12 on host gen 7"),
            " (held by pid 12 on host)"
        );
        assert_eq!(holder_of("pid 12 on host"), " (held by pid 12 on host)");
        assert_eq!(holder_of("  "), "");
    }

    #[test]
    fn file_storage_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<FileStorage>();
    }
}
