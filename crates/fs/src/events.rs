//! Event logs on files: read-write (holding the file's lock, with group commit),
//! read-only (following a log another process writes), or in memory (tests).

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};

use forkpoint_core::eventlog::{
    EventBatch, EventIndex, EventLogCore, EventReader, EventScanner, Hub, MemoryLog, RING_BYTES,
    RING_EVENTS, ReadOut, ReadPos, index_path,
};
use forkpoint_core::events::{Bookmark, Envelope, EventFilter};
use forkpoint_core::storage::EventLine;
use forkpoint_core::{Durability, Error, ErrorCode, EventLogInfo, EventLogOptions, Result};

use crate::commit::{Appender, Queue};
use crate::io::{
    check_regular, complete_last_line, cut_tail, io_error, nonblocking, open_error, open_regular,
    read_at, read_into, read_small, replace_atomic, sync_dir,
};
use crate::writer::lock;

/// Bytes read per step when scanning a log.
const CHUNK: u64 = 1 << 20;
/// Bytes read by the first step of a read of events; each next step reads
/// twice as much, up to `READ_CHUNK` (small reads stay small, long ones take
/// few system calls).
const FIRST_READ: u64 = 64 << 10;
const READ_CHUNK: u64 = 256 << 10;
/// A subscription's read from the log stops after about this many bytes.
const FILL_BYTES: usize = 4 << 20;
/// Rewrite the index sidecar after this many new entries.
const INDEX_PERSIST_EVERY: usize = 64;

/// The read-write log's queue: the core's state machine and the index.
pub struct EventQueue {
    core: EventLogCore,
    index: EventIndex,
    idx_path: String,
    persisted: usize,
}

impl Queue for EventQueue {
    type Batch = EventBatch;

    fn take(&mut self, max_lines: Option<usize>) -> Option<EventBatch> {
        self.core.take_batch(max_lines)
    }

    fn bytes(batch: &EventBatch) -> &[u8] {
        &batch.bytes
    }

    fn committed(&mut self, batch: EventBatch, at: u64) -> Option<(String, Vec<u8>)> {
        let mut off = at;
        for (meta, line) in &batch.items {
            let end = off + line.len() as u64 + 1;
            self.index.note_event(meta.bookmark(), off, end);
            off = end;
        }
        self.core.committed(batch);
        if self.index.entries.len() >= self.persisted + INDEX_PERSIST_EVERY {
            self.persisted = self.index.entries.len();
            return Some((self.idx_path.clone(), self.index.to_json().into_bytes()));
        }
        None
    }

    fn is_durable(&self, ticket: u64) -> bool {
        self.core.hub.durable().is_some_and(|d| d >= ticket)
    }

    fn fail(&mut self, e: Error) {
        self.core.fail(e);
    }

    fn failure(&self) -> Option<&Error> {
        self.core.failure()
    }
}

/// A read-only log: how far the file was scanned, and a hub for followers.
struct ReadState {
    scanner: EventScanner,
    hub: Hub,
}

enum Mode {
    Write(Appender<EventQueue>),
    /// The file (only read with positional reads) and the state.
    Read(File, Mutex<ReadState>),
    Memory(Mutex<MemoryLog>),
}

/// What one read from the file found.
struct Part {
    out: ReadOut,
    /// Where it stopped.
    pos: Option<ReadPos>,
    /// It stopped at its byte budget: more may follow.
    more: bool,
}

/// A read taken in parts ([`FileEventLog::cursor`]).
#[derive(Debug, Clone)]
pub struct ReadCursor {
    since: Option<u64>,
    until: u64,
    filter: EventFilter,
    left: Option<u64>,
    pos: Option<ReadPos>,
    done: bool,
}

/// A read whose parts are read by a thread of its own, ahead of the caller,
/// up to a bound ([`FileEventLog::read_ahead`]): the caller parses one part
/// while the next ones are read, and takes ready parts without waiting.
pub struct ReadAhead {
    rx: mpsc::Receiver<Result<String>>,
    ended: bool,
}

impl ReadAhead {
    /// The next part if one is ready (`[]` once the read is complete), else `None`.
    pub fn try_next(&mut self) -> Option<Result<String>> {
        if self.ended {
            return Some(Ok("[]".into()));
        }
        match self.rx.try_recv() {
            Ok(r) => Some(self.seen(r)),
            Err(mpsc::TryRecvError::Empty) => None,
            Err(mpsc::TryRecvError::Disconnected) => Some(self.gone()),
        }
    }

    /// The next part, waiting for it (`[]` once the read is complete).
    pub fn wait_next(&mut self) -> Result<String> {
        if self.ended {
            return Ok("[]".into());
        }
        match self.rx.recv() {
            Ok(r) => self.seen(r),
            Err(mpsc::RecvError) => self.gone(),
        }
    }

    fn seen(&mut self, r: Result<String>) -> Result<String> {
        self.ended = r.as_ref().map_or(true, |t| t == "[]");
        r
    }

    fn gone(&mut self) -> Result<String> {
        self.ended = true;
        Err(Error::internal(
            "the read-ahead thread ended before the read",
        ))
    }
}

impl ReadCursor {
    /// Whether the read is complete.
    pub fn is_done(&self) -> bool {
        self.done
    }
}

/// An event log (FORMAT.md, "Event log").
pub struct FileEventLog {
    path: PathBuf,
    mode: Mode,
    opts: EventLogOptions,
    /// Where each subscription's last read from the file stopped.
    resume: Mutex<HashMap<u32, ReadPos>>,
}

fn poisoned() -> Error {
    Error::internal("event log state poisoned by a panic")
}

fn line_too_long(max_line: u64, pos: u64, path: &Path) -> Error {
    Error::new(
        ErrorCode::LimitExceeded,
        format!("an event line is over {max_line} bytes"),
    )
    .at(None, pos)
    .with_path(path.display().to_string())
}

thread_local! {
    /// Each thread's read buffer, kept between reads (up to `READ_CHUNK`), so
    /// a read does not zero and fault in fresh memory every time.
    static READ_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Calls `f(line, offset)` for every complete line in `[start, end)`, reading in
/// chunks; stops early when `f` returns false. Returns where the lines given to
/// `f` end: `end`, or the start of an incomplete last line (not ours to read:
/// it may still be being written).
fn for_lines(
    file: &File,
    path: &Path,
    start: u64,
    end: u64,
    max_line: u64,
    f: impl FnMut(&[u8], u64) -> Result<bool>,
) -> Result<u64> {
    let mut buf = READ_BUF.with(|b| b.take());
    let r = for_lines_with(&mut buf, file, path, start, end, max_line, f);
    if buf.len() as u64 <= READ_CHUNK {
        READ_BUF.with(|b| b.replace(buf));
    }
    r
}

fn for_lines_with(
    buf: &mut Vec<u8>,
    file: &File,
    path: &Path,
    start: u64,
    end: u64,
    max_line: u64,
    mut f: impl FnMut(&[u8], u64) -> Result<bool>,
) -> Result<u64> {
    let mut pos = start;
    let mut chunk = FIRST_READ;
    while pos < end {
        let want = (end - pos).min(chunk);
        let n = read_into(file, path, pos, want, buf)?;
        let data = &buf[..n];
        let mut ls = 0usize;
        for nl in memchr::memchr_iter(b'\n', data) {
            if !f(&data[ls..nl], pos + ls as u64)? {
                return Ok(pos + ls as u64);
            }
            ls = nl + 1;
        }
        if ls == 0 {
            if pos + n as u64 >= end || (n as u64) < want {
                break; // an incomplete last line (or the file ended sooner)
            }
            // A line longer than the chunk: read more at once.
            if chunk > max_line {
                return Err(line_too_long(max_line, pos, path));
            }
            chunk *= 2;
            continue;
        }
        pos += ls as u64;
        chunk = (chunk * 2).min(READ_CHUNK.max(chunk));
    }
    Ok(pos.min(end))
}

/// Scans `[from, len)` of a log, continuing `scanner`. A last line without a
/// newline is read only when `take_unterminated` (the writer's open); a reader
/// leaves it, since another process may be halfway through writing it.
fn scan(
    file: &File,
    path: &Path,
    scanner: &mut EventScanner,
    len: u64,
    max_line: u64,
    take_unterminated: bool,
    mut on_event: impl FnMut(Envelope<'_>, &[u8]),
) -> Result<()> {
    let from = scanner.index.covered;
    let end = for_lines(file, path, from, len, max_line, |line, off| {
        if let Some(meta) = scanner.line(line, off, true)? {
            on_event(meta, line);
        }
        Ok(true)
    })?;
    if take_unterminated && end < len {
        if len - end > max_line {
            return Err(line_too_long(max_line, end, path));
        }
        let line = read_at(file, path, end, len - end)?;
        if let Some(meta) = scanner.line(&line, end, false)? {
            on_event(meta, &line);
        }
    }
    Ok(())
}

/// Loads and checks the index sidecar; `None` if missing or not valid for this file.
fn load_index(
    file: &File,
    path: &Path,
    idx_path: &str,
    len: u64,
    max_depth: usize,
) -> Option<EventIndex> {
    let text = read_small(Path::new(idx_path), 64 << 20)?;
    let index = EventIndex::parse(&text).ok()?;
    if index.covered > len {
        return None;
    }
    if index.covered > 0 && read_at(file, path, index.covered - 1, 1).ok()? != b"\n" {
        return None;
    }
    // The last entry must point at the start of a line holding that seq.
    if let Some(&[seq, offset, _]) = index.entries.last() {
        if offset > 0 && read_at(file, path, offset - 1, 1).ok()? != b"\n" {
            return None;
        }
        let head = read_at(file, path, offset, (index.covered - offset).min(CHUNK)).ok()?;
        let line = &head[..memchr::memchr(b'\n', &head)?];
        let meta =
            forkpoint_core::events::parse_event_line(std::str::from_utf8(line).ok()?, max_depth)
                .ok()?;
        if meta.seq != seq {
            return None;
        }
    }
    Some(index)
}

const LOG_LOCKED: &str =
    "another process writes this event log; open it with { readOnly: true } to read and follow it";

impl FileEventLog {
    /// Opens (or, read-write, creates) an event log. A torn last line is cut off
    /// (read-write) or ignored (read-only); corruption in the scanned part is
    /// `CORRUPTED_DATA` with line and offset.
    pub fn open(path: &Path, opts: &EventLogOptions) -> Result<(FileEventLog, EventLogInfo)> {
        let max_depth = opts.max_depth as usize;
        let mut info = EventLogInfo::new(opts);
        if opts.durability == Durability::Memory {
            let mode = Mode::Memory(Mutex::new(MemoryLog::new(max_depth, opts.max_line_bytes)));
            return Ok((
                FileEventLog {
                    path: path.to_path_buf(),
                    mode,
                    opts: opts.clone(),
                    resume: Mutex::default(),
                },
                info,
            ));
        }
        let p = path.display().to_string();
        let file = if opts.read_only {
            open_regular(path, "event log")?.0
        } else {
            info.created = !path.exists();
            let f = nonblocking(
                OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false),
            )
            .open(path)
            .map_err(|e| open_error(e, path, "event log", "cannot open event log for writing"))?;
            check_regular(&f, path, "event log")?;
            lock(&f, path, ErrorCode::LogLocked, LOG_LOCKED)?;
            if info.created
                && let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
            {
                sync_dir(dir)?;
            }
            f
        };
        let len = file
            .metadata()
            .map_err(|e| io_error(e, path, "cannot stat event log"))?
            .len();
        let idx_path = index_path(&p);
        let index = match load_index(&file, path, &idx_path, len, max_depth) {
            Some(i) => i,
            None => {
                info.index_rebuilt = len > 0;
                EventIndex::default()
            }
        };
        let scanned_from = index.covered;
        let mut scanner = EventScanner::new(index, max_depth, opts.max_line_bytes, Some(p.clone()));
        scan(
            &file,
            path,
            &mut scanner,
            len,
            opts.max_line_bytes,
            !opts.read_only,
            |_, _| {},
        )?;
        info.repaired = scanner.finish(len);
        if !opts.read_only {
            if let Some(t) = &info.repaired {
                cut_tail(&file, path, t.offset)?;
            } else if scanner.index.covered == len
                && len > 0
                && read_at(&file, path, len - 1, 1)? != b"\n"
            {
                // A complete last event without its newline: complete the line.
                complete_last_line(&file, path, len)?;
                scanner.index.covered = len + 1;
            }
        }
        let index = scanner.index.clone();
        info.events = index.events;
        info.last_bookmark = index.last;
        let first = index.entries.first().map(|e| e[0]);
        let mode = if opts.read_only {
            let hub = Hub::new(index.last, first, RING_EVENTS, RING_BYTES);
            Mode::Read(file, Mutex::new(ReadState { scanner, hub }))
        } else {
            if index.covered > scanned_from || info.index_rebuilt {
                let _ = replace_atomic(Path::new(&idx_path), index.to_json().as_bytes());
            }
            let core = EventLogCore::new(index.last, first, max_depth, opts.max_line_bytes);
            let phys_len = index.covered;
            let persisted = index.entries.len();
            let q = EventQueue {
                core,
                index,
                idx_path,
                persisted,
            };
            Mode::Write(Appender::new(
                path,
                file,
                false,
                opts.durability,
                q,
                phys_len,
            ))
        };
        Ok((
            FileEventLog {
                path: path.to_path_buf(),
                mode,
                opts: opts.clone(),
                resume: Mutex::default(),
            },
            info,
        ))
    }

    fn read_only_error(&self) -> Error {
        Error::invalid_input("this event log was opened read-only")
            .with_path(self.path.display().to_string())
    }

    /// Appends an event (a JSON object); returns its bookmark. Wait for it with
    /// [`wait`](Self::wait) (the ticket is `bookmark.seq`).
    pub fn append(&self, event_json: &str, now_ms: i64) -> Result<Bookmark> {
        match &self.mode {
            Mode::Write(app) => app.submit(|q| q.core.append(event_json, now_ms)),
            Mode::Memory(m) => m.lock().map_err(|_| poisoned())?.append(event_json, now_ms),
            Mode::Read(..) => Err(self.read_only_error()),
        }
    }

    /// Appends event lines built by the writer (a storage batch's): their seqs
    /// continue the log, all or nothing (see [`EventLogCore::append_lines`]);
    /// returns once they are durable, with the last one's bookmark. Live
    /// subscribers get them as they get [`append`](Self::append)ed events.
    pub fn append_lines(&self, lines: &[EventLine]) -> Result<Option<Bookmark>> {
        match &self.mode {
            Mode::Write(app) => {
                let last = app.submit(|q| q.core.append_lines(lines))?;
                if let Some(b) = last {
                    app.wait(b.seq)?;
                }
                Ok(last)
            }
            Mode::Memory(m) => m.lock().map_err(|_| poisoned())?.append_lines(lines),
            Mode::Read(..) => Err(self.read_only_error()),
        }
    }

    /// Whether [`append_lines`](Self::append_lines) would take these lines
    /// now (see [`EventLogCore::check_lines`]); queues nothing.
    pub fn check_lines(&self, lines: &[EventLine]) -> Result<()> {
        match &self.mode {
            Mode::Write(app) => app.lock()?.q.core.check_lines(lines),
            Mode::Memory(m) => m.lock().map_err(|_| poisoned())?.core.check_lines(lines),
            Mode::Read(..) => Err(self.read_only_error()),
        }
    }

    /// Blocks until the event with this seq is durable.
    pub fn wait(&self, seq: u64) -> Result<()> {
        match &self.mode {
            Mode::Write(app) => app.wait(seq),
            _ => Ok(()),
        }
    }

    /// Runs `f` on the subscription hub.
    pub fn with_hub<T>(&self, f: impl FnOnce(&mut Hub) -> Result<T>) -> Result<T> {
        match &self.mode {
            Mode::Write(app) => f(&mut app.lock()?.q.core.hub),
            Mode::Read(_, r) => f(&mut r.lock().map_err(|_| poisoned())?.hub),
            Mode::Memory(m) => f(&mut m.lock().map_err(|_| poisoned())?.core.hub),
        }
    }

    /// A new subscription (see the core's [`Hub`]).
    pub fn subscribe(
        &self,
        filter: EventFilter,
        since: forkpoint_core::eventlog::Since,
    ) -> Result<u32> {
        self.with_hub(|h| Ok(h.subscribe(filter, since)))
    }

    /// The next step of a subscription, as JSON (see `Poll::to_json`).
    pub fn poll_json(&self, id: u32, max: usize) -> Result<String> {
        self.refresh()?;
        self.with_hub(|h| h.poll(id, max)).map(|p| p.to_json())
    }

    /// Answers a subscription's `read` step: reads up to `limit` of its events
    /// after `since` from the log and returns those to deliver, as a JSON array.
    /// The read continues where the subscription's previous one stopped, and
    /// stops after about 4 MiB.
    pub fn fill_json(&self, id: u32, since: Option<u64>, limit: usize) -> Result<String> {
        let filter = self.with_hub(|h| h.read_filter(id, limit))?;
        let from = self
            .resume
            .lock()
            .map_err(|_| poisoned())?
            .get(&id)
            .copied()
            .filter(|p| Some(p.seq) == since);
        let part = self.read_from(since, None, &filter, from, FILL_BYTES)?;
        if let Some(p) = part.pos {
            self.resume.lock().map_err(|_| poisoned())?.insert(id, p);
        }
        self.with_hub(|h| h.provide(id, part.out))
    }

    /// Ends a subscription.
    pub fn unsubscribe(&self, id: u32) -> Result<()> {
        self.resume.lock().map_err(|_| poisoned())?.remove(&id);
        self.with_hub(|h| {
            h.unsubscribe(id);
            Ok(())
        })
    }

    /// Committed events not yet handed to live handlers, as a JSON array.
    pub fn drain_live_json(&self) -> Result<String> {
        self.refresh()?;
        self.with_hub(|h| Ok(h.drain_live_json()))
    }

    /// Read-only logs: takes in what the writer appended since (complete lines).
    pub fn refresh(&self) -> Result<()> {
        if let Mode::Read(file, r) = &self.mode {
            let mut st = r.lock().map_err(|_| poisoned())?;
            let st: &mut ReadState = &mut st;
            let len = file
                .metadata()
                .map_err(|e| io_error(e, &self.path, "cannot stat event log"))?
                .len();
            if len > st.scanner.index.covered {
                // Scan whole lines only: a partial last line may still be being written.
                let ReadState { scanner, hub } = st;
                // The writer's new events enter the hub as a writer's commits do:
                // subscriptions and live handlers are served from its ring.
                let mut items = Vec::new();
                scan(
                    file,
                    &self.path,
                    scanner,
                    len,
                    self.opts.max_line_bytes,
                    false,
                    |env, line| {
                        items.push((env.into_meta(), Arc::from(String::from_utf8_lossy(line))))
                    },
                )?;
                // An incomplete (or not yet parsable) last line: left for the next refresh.
                let _ = scanner.finish(len);
                hub.committed(items);
            } else if len < st.scanner.index.covered {
                return Err(Error::corrupted("the event log shrank while it was read")
                    .with_path(self.path.display().to_string()));
            }
        }
        Ok(())
    }

    /// The last durable event's bookmark, in O(1).
    pub fn last_bookmark(&self) -> Result<Option<Bookmark>> {
        match &self.mode {
            Mode::Write(app) => Ok(app.lock()?.q.index.last),
            Mode::Read(_, r) => {
                self.refresh()?;
                Ok(r.lock().map_err(|_| poisoned())?.scanner.index.last)
            }
            Mode::Memory(m) => Ok(m.lock().map_err(|_| poisoned())?.last_bookmark()),
        }
    }

    /// The events with `since < seq <= until` that pass `filter` (durable ones only).
    pub fn read(
        &self,
        since: Option<u64>,
        until: Option<u64>,
        filter: &EventFilter,
    ) -> Result<ReadOut> {
        Ok(self.read_from(since, until, filter, None, usize::MAX)?.out)
    }

    /// A read of the events after `since` (up to `until`, or the last durable
    /// event now) to be taken in parts with [`read_part`](Self::read_part).
    pub fn cursor(
        &self,
        since: Option<u64>,
        until: Option<u64>,
        filter: EventFilter,
    ) -> Result<ReadCursor> {
        // Up to the last durable event now (an empty log: nothing to read).
        let last = self.last_bookmark()?.map(|b| b.seq);
        let until = last.map_or(0, |l| until.map_or(l, |u| u.min(l)));
        let done = last.is_none() || since.is_some_and(|s| s >= until);
        Ok(ReadCursor {
            since,
            until,
            left: filter.limit,
            filter,
            pos: None,
            done,
        })
    }

    /// The next part of a cursor's read: about `max_bytes` of events as a JSON
    /// array; `[]` once the read is complete.
    pub fn read_part(&self, c: &mut ReadCursor, max_bytes: usize) -> Result<String> {
        if c.done {
            return Ok("[]".into());
        }
        let mut filter = c.filter.clone();
        filter.limit = c.left;
        let part = self.read_from(c.since, Some(c.until), &filter, c.pos, max_bytes.max(1))?;
        if let Some(l) = &mut c.left {
            *l = l.saturating_sub(part.out.len() as u64);
        }
        c.since = part.out.last_examined.or(c.since);
        c.pos = part.pos;
        c.done = !part.more || c.left == Some(0) || c.since >= Some(c.until);
        Ok(part.out.into_events_json())
    }

    /// Continues `cursor` on a thread of its own in parts growing from
    /// `FIRST_READ` to about `part_bytes` (the first part comes soon), at most `ahead` parts ahead of the caller (memory stays
    /// bounded however slow the caller is). Dropping the [`ReadAhead`] ends
    /// the thread at its next part.
    pub fn read_ahead(
        self: &Arc<Self>,
        mut cursor: ReadCursor,
        part_bytes: usize,
        ahead: usize,
    ) -> Result<ReadAhead> {
        let (tx, rx) = mpsc::sync_channel(ahead.max(1));
        let log = Arc::clone(self);
        std::thread::Builder::new()
            .name("forkpoint-read".into())
            .spawn(move || {
                let mut size = (FIRST_READ as usize).min(part_bytes);
                loop {
                    let r = log.read_part(&mut cursor, size);
                    size = (size * 2).min(part_bytes.max(size));
                    let last = r.as_ref().map_or(true, |t| t == "[]");
                    if tx.send(r).is_err() || last {
                        break;
                    }
                }
            })
            .map_err(|e| io_error(e, &self.path, "cannot start a read thread"))?;
        Ok(ReadAhead { rx, ended: false })
    }

    /// [`read`](Self::read) starting at `from` if given (a position a previous
    /// read stopped at, after `since`), stopping after about `max_bytes`.
    fn read_from(
        &self,
        since: Option<u64>,
        until: Option<u64>,
        filter: &EventFilter,
        from: Option<ReadPos>,
        max_bytes: usize,
    ) -> Result<Part> {
        if let Mode::Memory(m) = &self.mode {
            return Ok(Part {
                out: m.lock().map_err(|_| poisoned())?.read(since, until, filter),
                pos: None,
                more: false,
            });
        }
        self.refresh()?;
        match self.read_file(since, until, filter, from, max_bytes)? {
            Some(out) => Ok(out),
            None => {
                // The index pointed at the wrong place: rebuild it from the log.
                self.rebuild_index()?;
                self.read_file(since, until, filter, None, max_bytes)?
                    .ok_or_else(|| {
                        Error::internal("the rebuilt index still does not match the log")
                    })
            }
        }
    }

    /// Reads from the file; `None` when the index entry used does not match the log.
    fn read_file(
        &self,
        since: Option<u64>,
        until: Option<u64>,
        filter: &EventFilter,
        from: Option<ReadPos>,
        max_bytes: usize,
    ) -> Result<Option<Part>> {
        let depth = self.opts.max_depth as usize;
        let p = Some(self.path.display().to_string());
        let (file, (start, lines_before, expect), end) = match &self.mode {
            Mode::Write(app) => {
                let st = app.lock()?;
                (&app.file, st.q.index.start_for(since), st.phys_len)
            }
            Mode::Read(file, r) => {
                let st = r.lock().map_err(|_| poisoned())?;
                (
                    file,
                    st.scanner.index.start_for(since),
                    st.scanner.index.covered,
                )
            }
            Mode::Memory(_) => return Err(Error::internal("a memory log has no file to read")),
        };
        let (start, lines_before, expect) = match from {
            Some(pos) if pos.offset <= end => (pos.offset, pos.lines, None),
            _ => (start, lines_before, expect),
        };
        let mut reader = EventReader::new(since, until, filter.clone(), lines_before, depth, p)
            .max_bytes(max_bytes)
            .expect_bytes(end.saturating_sub(start));
        let mut first = true;
        let mut mismatch = false;
        for_lines(
            file,
            &self.path,
            start,
            end,
            self.opts.max_line_bytes,
            |line, off| {
                if first && expect.is_some() {
                    first = false;
                    let seq = std::str::from_utf8(line)
                        .ok()
                        .and_then(|t| forkpoint_core::events::parse_event_line(t, depth).ok())
                        .map(|m| m.seq);
                    if seq != expect {
                        mismatch = true;
                        return Ok(false);
                    }
                }
                reader.line(line, off)?;
                Ok(!reader.done)
            },
        )?;
        if mismatch {
            return Ok(None);
        }
        Ok(Some(Part {
            out: reader.out,
            pos: reader.pos,
            more: reader.full,
        }))
    }

    /// Rebuilds the index by scanning the log from its start.
    fn rebuild_index(&self) -> Result<()> {
        let depth = self.opts.max_depth as usize;
        let p = Some(self.path.display().to_string());
        match &self.mode {
            Mode::Write(app) => {
                let mut st = app.lock()?;
                let end = st.phys_len;
                let mut scanner =
                    EventScanner::new(EventIndex::default(), depth, self.opts.max_line_bytes, p);
                scan(
                    &app.file,
                    &self.path,
                    &mut scanner,
                    end,
                    self.opts.max_line_bytes,
                    true,
                    |_, _| {},
                )?;
                st.q.persisted = scanner.index.entries.len();
                st.q.index = scanner.index;
                let _ = replace_atomic(Path::new(&st.q.idx_path), st.q.index.to_json().as_bytes());
            }
            Mode::Read(file, r) => {
                let mut st = r.lock().map_err(|_| poisoned())?;
                let end = st.scanner.index.covered;
                let mut scanner =
                    EventScanner::new(EventIndex::default(), depth, self.opts.max_line_bytes, p);
                scan(
                    file,
                    &self.path,
                    &mut scanner,
                    end,
                    self.opts.max_line_bytes,
                    false,
                    |_, _| {},
                )?;
                st.scanner = scanner;
            }
            Mode::Memory(_) => {}
        }
        Ok(())
    }

    /// Waits for everything appended, writes the index and releases the lock.
    pub fn close(&self) -> Result<()> {
        if let Mode::Write(app) = &self.mode {
            let (last, closed) = {
                let st = app.lock()?;
                (st.q.core.last_assigned().map(|b| b.seq), st.closed)
            };
            if closed {
                return Ok(());
            }
            let res = match last {
                Some(s) => app.wait(s),
                None => Ok(()),
            };
            let (idx_path, json) = {
                let st = app.lock()?;
                (st.q.idx_path.clone(), st.q.index.to_json())
            };
            if res.is_ok() {
                let _ = replace_atomic(Path::new(&idx_path), json.as_bytes());
            }
            app.close()?;
            return res;
        }
        Ok(())
    }
}
