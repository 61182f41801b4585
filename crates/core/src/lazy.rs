//! Lazy resume: the context from the current leaf without reading the whole file.
//!
//! The loader is a state machine that does no I/O: [`LazyLoader::next_step`] says which
//! byte range it needs, the caller reads it and hands it over with
//! [`LazyLoader::provide`]. It reads the header, then walks the leaf's parent chain
//! backwards from the end of the file, in chunks that double in size, until it has
//! the newest compaction on the path and the compaction's first kept entry (or the
//! root), and the thinking level and model in force. A valid resume hint lets it
//! start with one read of exactly the needed tail. Cost grows with the kept tail,
//! not with the file.
//!
//! Version 1 files (whose ids come from their position) and gzip files are read
//! whole, then served the same way.

// Ids from the file are hashed with foldhash, seeded per process, as the
// converter's maps are: one lookup per line read on a first open.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
type HashSet<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;

use crate::context::{self, PathItem, Window};
use crate::entry::EntryKind;
use crate::error::{Error, ErrorCode, Result};
use crate::gz;
use crate::hint::{self, Hint};
use crate::json;
use crate::load::{EntryRec, Header, Interner, LineOut, LineProcessor, Role};
use crate::session::Session;
use crate::types::{LazyMetadata, LazyOptions, TornTail};

/// What the loader needs next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Read `len` bytes at `offset` and pass them to [`LazyLoader::provide`].
    Read { offset: u64, len: u64 },
    /// Nothing more to read.
    Done,
}

const FIRST_CHUNK: u64 = 256 << 10;
/// First read for the header line (grown if the line is longer).
const HEADER_READ: u64 = 4 << 10;
const MAX_CHUNK: u64 = 16 << 20;
/// Keep the text of off-path entries seen while scanning up to this many bytes (so
/// forward references need no re-read); beyond it only their position is kept.
const SEEN_TEXT_BUDGET: usize = 64 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Header,
    /// Reading the hinted ranges, highest first.
    HintRanges,
    /// Reverse scan: the next chunk ends at `boundary`.
    Scan,
    /// Re-reading one line (an entry seen earlier whose text was not kept).
    Reread,
    /// Gzip or version 1: the whole file is read.
    Full,
    Done,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Leaf {
    Unknown,
    /// The last `leaf` pointer names this target; the last node is the fallback.
    Pending {
        target: Box<str>,
    },
    /// The pointer's target is missing (or a pointer with no target): the leaf is
    /// the file's last node, the first non-pointer entry seen from now on.
    LastNode,
    Known,
    /// The leaf was moved to before the first entry: empty context.
    Null,
}

#[derive(Debug)]
struct Seen {
    rec: EntryRec,
    text: Option<Box<str>>,
}

/// A pending `loadMoreHistory` request.
#[derive(Debug, Clone, Copy)]
enum HistoryReq {
    /// Show `n` more messages of the context cut by `maxMessages` (window was `old`).
    Extend { old: usize, n: usize },
    /// Load `n` more messages from before the context.
    Older { n: usize },
}

/// Lazily loads the context of one session file.
#[derive(Debug)]
pub struct LazyLoader {
    opts: LazyOptions,
    path: Option<String>,
    file_len: u64,
    phase: Phase,
    pending: Option<(u64, u64)>,
    header: Option<Header>,
    proc: Option<LineProcessor>,
    hint_text: Option<String>,
    hint: Option<Hint>,
    hint_rejected: Option<String>,
    /// Ranges still to read in hint mode (the last is read next).
    ranges: Vec<[u64; 2]>,
    /// Offset of the file's last entry that is not a leaf pointer.
    last_node_offset: Option<u64>,
    /// Lines starting at or after `boundary` are processed.
    boundary: u64,
    chunk: u64,
    bytes_read: u64,
    saw_last_line: bool,
    torn: Option<TornTail>,
    seen: HashMap<Box<str>, Seen>,
    seen_text_bytes: usize,
    /// Lines passed over by the quick check while following the path: id → where.
    passed: HashMap<Box<str>, (u64, u32)>,
    /// A passed-over line to read again and parse (its child named it as parent).
    reread_line: Option<(u64, u32)>,
    /// Indexes in `path_rev` of entries behind the context whose text is to be read
    /// again (for history).
    refill: Vec<usize>,
    leaf: Leaf,
    /// The last node of the file (fallback when a leaf pointer's target is missing).
    last_node: Option<(EntryRec, Box<str>)>,
    wanted: Option<Box<str>>,
    reread: Option<EntryRec>,
    /// The path from the leaf backwards.
    path_rev: Vec<(EntryRec, Box<str>)>,
    path_ids: HashSet<Box<str>>,
    root_reached: bool,
    compaction: Option<usize>,
    first_kept: Option<Box<str>>,
    /// `path_rev.len()` once the context region is complete (the first kept entry,
    /// or the compaction when it keeps nothing, is on the path).
    ctx_complete_at: Option<usize>,
    ctx_msgs: usize,
    thinking_found: bool,
    model_found: bool,
    /// A model was set on the path behind the context (the newest such entry is
    /// the hint's `modelEntry`, so older ones need not be read as models).
    model_behind: bool,
    hint_anchor_on_path: bool,
    /// The thinking level and model (JSON) read from the entries the hint points to.
    hint_thinking: Option<Box<str>>,
    hint_model: Option<Box<str>>,
    history_target: usize,
    history_returned: usize,
    history_req: Option<HistoryReq>,
    max_messages: Option<usize>,
    full_counts: Option<(u64, u64)>,
    mode: &'static str,
}

impl LazyLoader {
    /// A loader for a file of `file_len` bytes. `hint` is the content of the
    /// resume hint file, if one exists.
    pub fn new(
        file_len: u64,
        opts: LazyOptions,
        path: Option<String>,
        hint: Option<String>,
    ) -> Self {
        let max_messages = opts.max_messages.map(|n| n as usize);
        LazyLoader {
            hint_text: if opts.use_hint { hint } else { None },
            opts,
            path,
            file_len,
            phase: Phase::Header,
            pending: None,
            header: None,
            proc: None,
            hint: None,
            hint_rejected: None,
            ranges: Vec::new(),
            last_node_offset: None,
            boundary: file_len,
            chunk: HEADER_READ,
            bytes_read: 0,
            saw_last_line: false,
            torn: None,
            seen: HashMap::default(),
            seen_text_bytes: 0,
            passed: HashMap::default(),
            reread_line: None,
            refill: Vec::new(),
            leaf: Leaf::Unknown,
            last_node: None,
            wanted: None,
            reread: None,
            path_rev: Vec::new(),
            path_ids: HashSet::default(),
            root_reached: false,
            compaction: None,
            first_kept: None,
            ctx_complete_at: None,
            ctx_msgs: 0,
            thinking_found: false,
            model_found: false,
            model_behind: false,
            hint_anchor_on_path: false,
            hint_thinking: None,
            hint_model: None,
            history_target: 0,
            history_returned: 0,
            history_req: None,
            max_messages,
            full_counts: None,
            mode: "scan",
        }
    }

    fn with_path(&self, e: Error) -> Error {
        match &self.path {
            Some(p) => e.with_path(p.clone()),
            None => e,
        }
    }

    fn header_end(&self) -> u64 {
        self.header.as_ref().map_or(0, |h| h.end)
    }

    /// The next read the loader needs.
    pub fn next_step(&mut self) -> Result<Step> {
        if let Some((offset, len)) = self.pending {
            return Ok(Step::Read { offset, len });
        }
        let step = match self.phase {
            Phase::Header => {
                if self.file_len == 0 {
                    return Err(
                        self.with_path(Error::unsupported("not a session file: the file is empty"))
                    );
                }
                Step::Read {
                    offset: 0,
                    len: self.file_len.min(self.chunk),
                }
            }
            Phase::Done => Step::Done,
            Phase::Full => Step::Read {
                offset: 0,
                len: self.file_len,
            },
            Phase::HintRanges => match self.ranges.last() {
                // One byte before the range: it must be the previous line's newline.
                Some(r) => Step::Read {
                    offset: r[0] - 1,
                    len: r[1] - (r[0] - 1),
                },
                None => return Err(Error::internal("no hinted range left")),
            },
            Phase::Reread => match (&self.reread, self.reread_line, self.refill.last()) {
                (Some(r), _, _) => Step::Read {
                    offset: r.offset,
                    len: u64::from(r.len),
                },
                (None, Some((offset, len)), _) => Step::Read {
                    offset,
                    len: u64::from(len),
                },
                (None, None, Some(&i)) => {
                    let r = &self.path_rev[i].0;
                    Step::Read {
                        offset: r.offset,
                        len: u64::from(r.len),
                    }
                }
                (None, None, None) => return Err(Error::internal("re-read without an entry")),
            },
            Phase::Scan => {
                let start = self.header_end();
                let from = self.boundary.saturating_sub(self.chunk).max(start);
                Step::Read {
                    offset: from,
                    len: self.boundary.saturating_sub(from),
                }
            }
        };
        if let Step::Read { offset, len } = step {
            self.pending = Some((offset, len));
        }
        Ok(step)
    }

    /// Hands over the bytes of the last [`Step::Read`].
    pub fn provide(&mut self, bytes: Vec<u8>) -> Result<()> {
        let Some((offset, len)) = self.pending.take() else {
            return Err(Error::internal("provide() without a pending read"));
        };
        if bytes.len() as u64 != len {
            return Err(self.with_path(Error::new(
                ErrorCode::Io,
                format!(
                    "short read: wanted {len} bytes at {offset}, got {} (did the file shrink?)",
                    bytes.len()
                ),
            )));
        }
        self.bytes_read += len;
        let r = match self.phase {
            Phase::Header => self.on_header(bytes),
            Phase::Full => self.on_full(bytes),
            Phase::HintRanges => self.on_range(offset, bytes),
            Phase::Scan => {
                let before = (self.boundary, self.chunk);
                let r = self.on_chunk(offset, bytes);
                // Every chunk moves the boundary back or grows the next read (which
                // is bounded by maxLineBytes): the scan always ends.
                if r.is_ok()
                    && self.phase == Phase::Scan
                    && self.boundary >= before.0
                    && self.chunk <= before.1
                {
                    return Err(self.with_path(Error::internal(format!(
                        "the reverse scan made no progress at byte {}",
                        self.boundary
                    ))));
                }
                r
            }
            Phase::Reread => self.on_reread(bytes),
            Phase::Done => Ok(()),
        };
        r.map_err(|e| self.with_path(e))
    }

    fn on_header(&mut self, bytes: Vec<u8>) -> Result<()> {
        if gz::is_gzip(&bytes) {
            self.opts.load_options().check_file_size(self.file_len)?;
            self.phase = Phase::Full;
            self.mode = "full";
            return Ok(());
        }
        let mut proc = LineProcessor::new(self.opts.load_options(), self.path.clone());
        let complete = bytes.len() as u64 == self.file_len;
        let mut start = 0usize;
        while proc.header.is_none() {
            let (end, has_nl) = match memchr::memchr(b'\n', &bytes[start..]) {
                Some(i) => (start + i, true),
                None if complete => (bytes.len(), false),
                None => {
                    // The header line is longer than what was read: read more.
                    if self.chunk >= self.opts.max_line_bytes {
                        return Err(Error::new(
                            ErrorCode::LimitExceeded,
                            "the header line is longer than maxLineBytes",
                        ));
                    }
                    self.chunk *= 4;
                    return Ok(());
                }
            };
            proc.line(&bytes[start..end], start as u64, has_nl)?;
            if !has_nl {
                break;
            }
            start = end + 1;
            if start >= bytes.len() && complete {
                break;
            }
        }
        let Some(header) = proc.header.take() else {
            proc.finish(self.file_len)?;
            return Err(Error::unsupported("not a session file: no header line"));
        };
        if header.version < 2 {
            // Version 1 entries have no ids; ids come from their position, which
            // needs the whole file.
            self.opts.load_options().check_file_size(self.file_len)?;
            self.phase = Phase::Full;
            self.mode = "full";
            return Ok(());
        }
        self.chunk = FIRST_CHUNK;
        self.boundary = self.file_len;
        self.phase = Phase::Scan;
        if let Some(text) = self.hint_text.take() {
            match Hint::parse(&text).and_then(|h| h.check(&header, self.file_len).map(|_| h)) {
                Ok(h) => {
                    self.ranges = h.ranges.clone();
                    if self.file_len > h.file_length {
                        // Appended since the hint was written.
                        self.ranges.push([h.file_length, self.file_len]);
                    }
                    self.hint = Some(h);
                    self.phase = Phase::HintRanges;
                    self.mode = "hint";
                }
                Err(reason) => self.hint_rejected = Some(reason),
            }
        } else if self.opts.use_hint {
            self.hint_rejected = Some("no resume hint".into());
        }
        self.proc = Some(LineProcessor::for_tail(
            self.opts.load_options(),
            self.path.clone(),
            header.clone(),
        ));
        let empty = self.file_len <= header.end;
        self.header = Some(header);
        if empty {
            self.leaf = Leaf::Null;
            self.root_reached = true;
            self.phase = Phase::Done;
        }
        Ok(())
    }

    fn on_full(&mut self, bytes: Vec<u8>) -> Result<()> {
        let s = Session::from_bytes(bytes, &self.opts.load_options(), self.path.clone())?;
        let meta = s.metadata();
        self.full_counts = Some((meta.entry_count, meta.message_count));
        self.torn = meta.torn_tail;
        self.header = Some(s.header().clone());
        for i in s.leaf_path().into_iter().rev() {
            let rec = s.entries()[i as usize].clone();
            let text: Box<str> = s.entry_text(i).into();
            self.track(&rec, &text);
            self.path_ids.insert(rec.id.clone());
            self.path_rev.push((rec, text));
        }
        let mut proc = LineProcessor::for_tail(
            self.opts.load_options(),
            self.path.clone(),
            s.header().clone(),
        );
        proc.interner = s.interner().clone();
        self.proc = Some(proc);
        self.leaf = if self.path_rev.is_empty() {
            Leaf::Null
        } else {
            Leaf::Known
        };
        self.root_reached = true;
        self.phase = Phase::Done;
        Ok(())
    }

    fn on_reread(&mut self, bytes: Vec<u8>) -> Result<()> {
        if self.reread.is_none()
            && self.reread_line.is_none()
            && let Some(i) = self.refill.pop()
        {
            // The text of a path entry behind the context, for history.
            let offset = self.path_rev[i].0.offset;
            match self.parse_whole_line(&bytes, offset)? {
                LineOut::Entry(rec, migrated) if rec.id == self.path_rev[i].0.id => {
                    let text = migrated.unwrap_or_else(|| text_of(&bytes));
                    self.path_rev[i] = (rec, text);
                }
                _ => {
                    return Err(Error::corrupted(
                        "a line read again for history is not the entry read there before",
                    )
                    .at(None, offset));
                }
            }
            if self.refill.is_empty() {
                self.phase = Phase::Done;
                return self.continue_history();
            }
            return Ok(());
        }
        if let Some((offset, _)) = self.reread_line.take() {
            // A line the skim passed over: parse it now, as the path's next entry.
            let out = self.parse_whole_line(&bytes, offset)?;
            self.phase = Phase::Scan;
            match out {
                LineOut::Entry(rec, migrated) => {
                    let text: Box<str> = match migrated {
                        Some(m) => m,
                        None => text_of(&bytes),
                    };
                    self.found(rec, text)?;
                }
                _ => {
                    // Skipped (lenient): it is no entry, so the wanted id may be an
                    // earlier line's. Look on.
                    if let Some(id) = self
                        .passed
                        .iter()
                        .find(|(_, at)| at.0 == offset)
                        .map(|(id, _)| id.clone())
                    {
                        self.passed.remove(&id);
                        self.wanted = Some(id);
                    }
                }
            }
            self.drain()?;
            return self.after_step();
        }
        let rec = self
            .reread
            .take()
            .ok_or_else(|| Error::internal("no re-read pending"))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| Error::corrupted("invalid UTF-8").at(None, rec.offset))?;
        self.phase = Phase::Scan;
        self.found(rec, text.into_boxed_str())?;
        self.drain()?;
        self.after_step()
    }

    /// Parses a line read again (a whole line, not the file's last): a bad one is
    /// an error, or a counted skip when lenient.
    fn parse_whole_line(&mut self, bytes: &[u8], offset: u64) -> Result<LineOut> {
        let proc = self
            .proc
            .as_mut()
            .ok_or_else(|| Error::internal("no line processor"))?;
        let out = proc.line(bytes, offset, true)?;
        proc.flush_pending_bad()?;
        Ok(out)
    }

    /// Processes a chunk that ends at `self.boundary`.
    fn on_chunk(&mut self, offset: u64, bytes: Vec<u8>) -> Result<()> {
        let first_line = if offset <= self.header_end() {
            0
        } else {
            // The chunk may start inside a line: skip to the first full line
            // (the skipped part is read again with the next chunk). The chunk's
            // last byte is the newline that ends the line before `boundary`, so it
            // starts no line: a chunk whose only newline is that one holds no whole
            // line and is read again, larger, whatever the line's length.
            let head = &bytes[..bytes.len().saturating_sub(1)];
            match memchr::memchr(b'\n', head) {
                Some(i) => i + 1,
                None => {
                    // A line and the newline before it: at most maxLineBytes + 2.
                    let need = self.opts.max_line_bytes.saturating_add(2);
                    if self.chunk >= need {
                        return Err(Error::new(
                            ErrorCode::LimitExceeded,
                            format!(
                                "a line is longer than maxLineBytes ({} bytes; raise maxLineBytes to load it)",
                                self.opts.max_line_bytes
                            ),
                        )
                        .at(None, offset));
                    }
                    self.chunk = self.chunk.saturating_mul(2).min(need);
                    self.phase = Phase::Scan;
                    return Ok(());
                }
            }
        };
        let start = offset + first_line as u64;
        if let Some(s) = self.take_lines(start, &bytes[first_line..])? {
            // A re-read is needed, or the load is satisfied: lines before `s` are
            // read again with the next chunk, if there is one.
            self.boundary = s;
            if self.phase == Phase::Reread {
                return Ok(());
            }
            return self.after_step();
        }
        self.boundary = start;
        self.phase = Phase::Scan;
        self.after_step()
    }

    /// Processes one hinted range (read with the byte before it).
    fn on_range(&mut self, offset: u64, bytes: Vec<u8>) -> Result<()> {
        self.ranges.pop();
        if bytes.first() != Some(&b'\n') {
            return self.abandon_hint("a hinted range does not start at a line");
        }
        let end = offset + bytes.len() as u64;
        if end < self.file_len && bytes.last() != Some(&b'\n') {
            return self.abandon_hint("a hinted range ends inside a line");
        }
        if self.take_lines(offset + 1, &bytes[1..])?.is_some() {
            return self.abandon_hint("the hinted ranges need a re-read");
        }
        if self.satisfied() {
            self.phase = Phase::Done;
        } else if self.ranges.is_empty() || self.hint.is_none() {
            return self.abandon_hint("the hinted ranges do not hold the leaf's path");
        }
        Ok(())
    }

    /// Gives up on the hint: forgets what its ranges showed and scans from the end.
    fn abandon_hint(&mut self, why: &str) -> Result<()> {
        let path = self.path.take();
        let hint_text = None;
        let fresh = LazyLoader::new(self.file_len, self.opts.clone(), path, hint_text);
        let header = self.header.take();
        let bytes_read = self.bytes_read;
        let max_messages = self.max_messages;
        *self = fresh;
        self.header = header;
        self.bytes_read = bytes_read;
        self.max_messages = max_messages;
        self.hint_rejected = Some(why.to_string());
        let h = self
            .header
            .clone()
            .ok_or_else(|| Error::internal("no header"))?;
        self.proc = Some(LineProcessor::for_tail(
            self.opts.load_options(),
            self.path.clone(),
            h,
        ));
        self.phase = Phase::Scan;
        Ok(())
    }

    /// Processes the lines of `region` (starting at file offset `start`, made of
    /// whole lines) last first. Returns the start of the line that asked for a
    /// re-read, or after which nothing more was needed, if one did.
    fn take_lines(&mut self, start: u64, region: &[u8]) -> Result<Option<u64>> {
        if region.is_empty() {
            return Ok(None);
        }
        let mut end = region.len();
        let mut has_nl = true;
        if region.last() == Some(&b'\n') {
            end -= 1;
        } else {
            has_nl = false; // only at the end of the file
        }
        loop {
            let s = memchr::memrchr(b'\n', &region[..end]).map_or(0, |i| i + 1);
            self.take_line(&region[s..end], start + s as u64, has_nl)?;
            if self.phase == Phase::Reread {
                return Ok(Some(start + s as u64));
            }
            // Nothing more is needed: the lines before this one are left unread,
            // as if the chunk had ended here (history reads on from there). The
            // check is skipped while history is asked for (it counts the path).
            if self.phase == Phase::Scan && self.history_target == 0 && self.satisfied() {
                return Ok(Some(start + s as u64));
            }
            has_nl = true;
            if s == 0 {
                return Ok(None);
            }
            end = s - 1;
        }
    }

    fn reject_hint(&mut self, why: &str) {
        if self.hint.take().is_some() {
            self.hint_rejected = Some(why.to_string());
            self.mode = "scan";
            self.hint_anchor_on_path = false;
        }
    }

    /// Records the file's last node (the first non-pointer entry seen going back).
    fn note_last_node(&mut self, rec: &EntryRec) {
        if rec.kind != EntryKind::Leaf && self.last_node_offset.is_none() {
            self.last_node_offset = Some(rec.offset);
        }
    }

    fn take_line(&mut self, bytes: &[u8], offset: u64, has_nl: bool) -> Result<()> {
        if crate::load::is_blank(bytes) {
            return Ok(());
        }
        if !self.saw_last_line {
            self.saw_last_line = true;
            // The last line of the file: torn when a write was cut short (no
            // newline after it, and it does not parse), as the full load decides.
            // A whole line that does not parse is corrupt, like any other.
            if !has_nl && crate::load::is_torn_final_line(bytes, self.opts.max_depth as usize) {
                self.torn = Some(TornTail {
                    line: None,
                    offset,
                    bytes: self.file_len - offset,
                });
                return Ok(());
            }
        }
        // Following the path to its next entry (scan mode, leaf known), lines are
        // skimmed first (top-level keys by structure, not validated). A line whose
        // id is plainly another one is not parsed: its place is kept in case a line
        // before it names it as parent (it is parsed then). Most lines behind the
        // context go this way; the path's own lines are always parsed.
        if self.phase == Phase::Scan
            && self.hint.is_none()
            && self.leaf == Leaf::Known
            && let Some(w) = &self.wanted
            && let Some(sk) = json::skim_entry(bytes)
            && let Some(id) = sk.id
            && let Ok(id) = std::str::from_utf8(id)
            && !id.is_empty()
        {
            if id != &**w {
                if !self.seen.contains_key(id) && !self.passed.contains_key(id) {
                    self.passed.insert(id.into(), (offset, bytes.len() as u32));
                }
                return Ok(());
            }
            if let Some(rec) = self.behind_by_skim(&sk, id, offset, bytes.len()) {
                return self.on_entry(rec, Box::from(""));
            }
        }
        let proc = self
            .proc
            .as_mut()
            .ok_or_else(|| Error::internal("no line processor"))?;
        let out = proc.line(bytes, offset, has_nl)?;
        // Going backwards, a bad line is never the last one: settle it now.
        proc.flush_pending_bad()?;
        if let LineOut::Entry(rec, migrated) = out {
            // The path's next entry behind a complete context (only the settings
            // are still looked for): its text is not kept until history asks.
            let behind = self.leaf == Leaf::Known
                && self.hint.is_none()
                && self.ctx_complete_at.is_some()
                && self.history_target == 0
                && self.wanted.as_deref() == Some(&*rec.id)
                && !self.seen.contains_key(&rec.id)
                && !self.passed.contains_key(&rec.id);
            let text: Box<str> = match migrated {
                _ if behind => Box::from(""),
                Some(m) => m,
                None => text_of(bytes),
            };
            self.on_entry(rec, text)?;
        }
        Ok(())
    }

    /// The path's next entry, from its skimmed keys alone, when nothing in it can
    /// matter to this load: the context is complete and only the thinking level
    /// is still looked for (the model is known from a newer entry behind the
    /// context, which is the one a hint names), no history is asked for, the
    /// load is strict, and the line is a `message` entry of a current-version
    /// file (no migration). Its place is all that is kept, as for any entry
    /// behind the context: history reads, parses and checks it first (`refill`),
    /// so a damaged one is found then — as a hinted resume, which never reads
    /// these lines, finds it.
    fn behind_by_skim(
        &self,
        sk: &json::Skim<'_>,
        id: &str,
        offset: u64,
        len: usize,
    ) -> Option<EntryRec> {
        let current = self
            .proc
            .as_ref()
            .and_then(|p| p.header.as_ref())
            .is_some_and(|h| h.version == crate::load::CURRENT_VERSION);
        // Lenient loads parse every path line: a damaged one ends the path there
        // (as the full load drops it), which changes the settings found behind it.
        let behind = current
            && !self.opts.lenient
            && len as u64 <= self.proc.as_ref().map_or(0, |p| p.opts.max_line_bytes)
            && self.ctx_complete_at.is_some()
            && self.history_target == 0
            && self.model_behind
            && !self.thinking_found
            && sk.ty == Some(b"message".as_slice())
            && !self.seen.contains_key(id)
            && !self.passed.contains_key(id);
        if !behind {
            return None;
        }
        let parent_id = match sk.parent {
            Some(Some(p)) => Some(Box::from(std::str::from_utf8(p).ok()?)),
            _ => None,
        };
        Some(EntryRec {
            offset,
            len: u32::try_from(len).ok()?,
            line: 0,
            kind: EntryKind::Message,
            id: id.into(),
            parent_id,
            target: None,
            msg: (0, 0),
            role: Role::None,
            setting: 0,
        })
    }

    fn on_entry(&mut self, rec: EntryRec, text: Box<str>) -> Result<()> {
        if let Some(h) = &self.hint {
            let points = |e: &Option<Option<hint::EntryRef>>| match e {
                Some(Some(r)) if r.offset == rec.offset => Some(*r.id == *rec.id),
                _ => None,
            };
            let thinking = points(&h.thinking_entry);
            let model = points(&h.model_entry);
            let anchor_bad = rec.offset == h.anchor_offset && *rec.id != *h.anchor_id;
            let compaction_bad = Some(rec.offset) == h.compaction_offset
                && Some(&*rec.id) != h.compaction_id.as_deref();
            let model_kind = rec.sets_model();
            // The values come from the entries themselves, never from the hint.
            let value: Box<str> = self.interner().get(rec.setting).into();
            if anchor_bad {
                self.reject_hint("the entry at the hinted offset has another id");
            } else if compaction_bad {
                self.reject_hint("the entry at the hinted compaction offset has another id");
            } else if thinking == Some(false) || model == Some(false) {
                self.reject_hint("the entry at a hinted settings offset has another id");
            } else if thinking == Some(true) && rec.kind != EntryKind::ThinkingLevelChange {
                self.reject_hint("the hinted thinking level entry is not a thinking_level_change");
            } else if model == Some(true) && !model_kind {
                self.reject_hint("the hinted model entry sets no model");
            } else {
                if thinking == Some(true) {
                    self.hint_thinking = Some(value.clone());
                }
                if model == Some(true) {
                    self.hint_model = Some(value);
                }
            }
        }
        self.note_last_node(&rec);
        let first_seen = !self.seen.contains_key(&rec.id) && !self.passed.contains_key(&rec.id);
        if first_seen {
            let keep = !text.is_empty() && self.seen_text_bytes + text.len() <= SEEN_TEXT_BUDGET;
            if keep {
                self.seen_text_bytes += text.len();
            }
            self.seen.insert(
                rec.id.clone(),
                Seen {
                    rec: rec.clone(),
                    text: keep.then(|| text.clone()),
                },
            );
        }
        match &self.leaf {
            Leaf::Unknown => {
                if rec.kind == EntryKind::Leaf {
                    self.leaf = match rec.target.clone() {
                        Some(t) => Leaf::Pending { target: t },
                        None => Leaf::Null,
                    };
                } else {
                    self.leaf = Leaf::Known;
                    self.found(rec, text)?;
                }
            }
            Leaf::Pending { target } => {
                let is_target = first_seen && rec.id == *target;
                if rec.kind != EntryKind::Leaf && self.last_node.is_none() {
                    self.last_node = Some((rec.clone(), text.clone()));
                }
                if is_target && rec.kind == EntryKind::Leaf {
                    // The target is itself a pointer: follow it, as the full load
                    // does (each hop is a line further back, so this ends); one with
                    // no target means the last node.
                    match rec.target.clone() {
                        Some(t) => {
                            if self.seen.contains_key(&t) || self.passed.contains_key(&t) {
                                self.leaf = Leaf::Known;
                                self.wanted = Some(t);
                            } else {
                                self.leaf = Leaf::Pending { target: t };
                            }
                        }
                        _ => match self.last_node.take() {
                            Some((r, t)) => {
                                self.leaf = Leaf::Known;
                                self.found(r, t)?;
                            }
                            None => self.leaf = Leaf::LastNode,
                        },
                    }
                } else if is_target {
                    self.leaf = Leaf::Known;
                    self.found(rec, text)?;
                }
            }
            Leaf::LastNode => {
                if rec.kind != EntryKind::Leaf {
                    self.leaf = Leaf::Known;
                    self.found(rec, text)?;
                }
            }
            Leaf::Known => {
                if first_seen && self.wanted.as_deref() == Some(&*rec.id) {
                    self.wanted = None;
                    self.found(rec, text)?;
                }
            }
            Leaf::Null => {}
        }
        self.drain()
    }

    /// Resolves wanted ids that were already seen (forward references).
    fn drain(&mut self) -> Result<()> {
        for _ in 0..=self.seen.len() + 1 {
            let Some(w) = self.wanted.clone() else {
                return Ok(());
            };
            let Some(seen) = self.seen.get(&w) else {
                if let Some(&at) = self.passed.get(&w) {
                    self.wanted = None;
                    self.reread_line = Some(at);
                    self.phase = Phase::Reread;
                }
                return Ok(());
            };
            let rec = seen.rec.clone();
            self.wanted = None;
            match seen.text.clone() {
                Some(text) => self.found(rec, text)?,
                None => {
                    self.reread = Some(rec);
                    self.phase = Phase::Reread;
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Updates what the path tells about the context as `rec` joins it.
    fn track(&mut self, rec: &EntryRec, text: &str) {
        let producing = self.produces_message(rec, text);
        if rec.sets_model() {
            self.model_found = true;
            if self.ctx_complete_at.is_some() {
                self.model_behind = true;
            }
        }
        match rec.kind {
            EntryKind::Compaction if self.compaction.is_none() => {
                self.compaction = Some(self.path_rev.len());
                self.first_kept = rec.target.clone();
                if self.first_kept.is_none() {
                    self.ctx_complete_at = Some(self.path_rev.len() + 1);
                }
            }
            EntryKind::ThinkingLevelChange => self.thinking_found = true,
            _ => {}
        }
        if self.ctx_complete_at.is_none() {
            let in_kept = self.compaction.is_some_and(|c| c < self.path_rev.len());
            // Messages newer than the compaction are in the context for sure; those
            // before it only once its first kept entry is found on the path (which
            // completes the context region anyway), so they are not counted.
            if producing && self.compaction.is_none() {
                self.ctx_msgs += 1;
            }
            if in_kept && self.first_kept.as_deref() == Some(&*rec.id) {
                self.ctx_complete_at = Some(self.path_rev.len() + 1);
            }
        }
        if let Some(h) = &self.hint
            && rec.offset == h.anchor_offset
            && *rec.id == *h.anchor_id
        {
            self.hint_anchor_on_path = true;
            // The hint's anchor is the compaction itself when its first kept entry is
            // not among its ancestors (known when the hint was made; ancestors never
            // change), so the context needs nothing older.
            if self.ctx_complete_at.is_none()
                && h.compaction_id.as_deref() == Some(&*h.anchor_id)
                && self.compaction == Some(self.path_rev.len())
            {
                self.ctx_complete_at = Some(self.path_rev.len() + 1);
            }
        }
    }

    /// The wanted entry (or the leaf) was found.
    fn found(&mut self, rec: EntryRec, text: Box<str>) -> Result<()> {
        if rec.kind == EntryKind::Leaf {
            // A child named a leaf pointer as parent: follow the pointer.
            match rec.target.clone() {
                Some(t) if !self.path_ids.contains(&t) => self.wanted = Some(t),
                _ => self.root_reached = true,
            }
            return Ok(());
        }
        if self.path_ids.contains(&rec.id) {
            if !self.opts.lenient {
                return Err(Error::corrupted(format!(
                    "entry {:?} is part of a parent cycle (its ancestors lead back to it)",
                    rec.id
                ))
                .at(None, rec.offset));
            }
            self.root_reached = true;
            return Ok(());
        }
        self.track(&rec, &text);
        let parent = rec.parent_id.clone().filter(|p| *p != rec.id);
        self.path_ids.insert(rec.id.clone());
        self.path_rev.push((rec, text));
        match parent {
            Some(p) => self.wanted = Some(p),
            None => self.root_reached = true,
        }
        Ok(())
    }

    fn produces_message(&self, rec: &EntryRec, text: &str) -> bool {
        match rec.kind {
            EntryKind::Message | EntryKind::CustomMessage => true,
            // An entry whose text is not kept (behind the context) may produce one.
            EntryKind::BranchSummary if text.is_empty() => true,
            EntryKind::BranchSummary => {
                crate::entry::parse_envelope(text, self.opts.max_depth as usize)
                    .ok()
                    .and_then(|e| e.summary)
                    .is_some_and(|v| v.truthy(text))
            }
            _ => false,
        }
    }

    /// The scan reached the header: whatever is still wanted does not exist.
    fn reached_start(&mut self) -> Result<()> {
        if matches!(self.leaf, Leaf::Pending { .. } | Leaf::LastNode) {
            // The pointer's target does not exist: fall back to the last node,
            // whose ancestors were all seen already.
            match self.last_node.take() {
                Some((rec, text)) => {
                    self.leaf = Leaf::Known;
                    self.found(rec, text)?;
                    self.drain()?;
                    if self.phase == Phase::Reread {
                        return Ok(());
                    }
                }
                None => self.leaf = Leaf::Null,
            }
        }
        if self.leaf == Leaf::Unknown {
            self.leaf = Leaf::Null;
        }
        self.root_reached = true;
        Ok(())
    }

    fn satisfied(&self) -> bool {
        if self.leaf == Leaf::Null || self.root_reached {
            return true;
        }
        if self.leaf != Leaf::Known || self.phase == Phase::Reread {
            return false;
        }
        let ctx_ok = self.ctx_complete_at.is_some()
            || self.max_messages.is_some_and(|n| {
                self.ctx_msgs >= n && (self.compaction.is_some() || !self.opts.include_summary)
            });
        let set_ok = !self.opts.resolve_settings || self.settings_known();
        let history_ok = self.history_target == 0 || self.history_count() >= self.history_target;
        ctx_ok && set_ok && history_ok
    }

    /// The hint that served this load, if its anchor is on the leaf's path.
    fn serving_hint(&self) -> Option<&Hint> {
        self.hint.as_ref().filter(|_| self.hint_anchor_on_path)
    }

    /// The thinking level (JSON) before the anchor as the hint's entry says:
    /// `Some(None)` when the hint knows there is none.
    fn hinted_thinking(&self) -> Option<Option<&str>> {
        match &self.serving_hint()?.thinking_entry {
            Some(None) => Some(None),
            Some(Some(_)) => self.hint_thinking.as_deref().map(Some),
            None => None,
        }
    }

    /// The model (JSON) before the anchor as the hint's entry says.
    fn hinted_model(&self) -> Option<Option<&str>> {
        match &self.serving_hint()?.model_entry {
            Some(None) => Some(None),
            Some(Some(_)) => self.hint_model.as_deref().map(Some),
            None => None,
        }
    }

    /// Whether the thinking level and model in force at the leaf are known: set
    /// on the loaded path, or before the anchor by entries the hint pointed to.
    fn settings_known(&self) -> bool {
        (self.thinking_found || self.hinted_thinking().is_some())
            && (self.model_found || self.hinted_model().is_some())
    }

    /// Where history starts in `path_rev`: after the context's first entry, or
    /// after the compaction when the path was followed to its root without
    /// finding the first entry it kept (the context starts at the compaction).
    fn history_from(&self) -> Option<usize> {
        self.ctx_complete_at
            .or_else(|| self.compaction.filter(|_| self.root_reached).map(|c| c + 1))
    }

    fn history_count(&self) -> usize {
        match self.history_from() {
            Some(done) => self.path_rev[done.min(self.path_rev.len())..]
                .iter()
                .filter(|(r, t)| self.produces_message(r, t))
                .count(),
            None => 0,
        }
    }

    fn after_step(&mut self) -> Result<()> {
        if self.phase == Phase::Reread {
            return Ok(());
        }
        if !self.satisfied() && self.boundary <= self.header_end() {
            self.reached_start()?;
            if self.phase == Phase::Reread {
                return Ok(());
            }
        }
        if self.satisfied() {
            self.phase = Phase::Done;
        } else {
            self.phase = Phase::Scan;
            self.chunk = (self.chunk * 2).min(MAX_CHUNK).max(self.chunk);
        }
        Ok(())
    }

    /// Whether the loader needs no more reads.
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// Asks for `n` more messages of history: first the newest messages of the
    /// context that `maxMessages` cut, then messages from before the context (the
    /// compacted part of the path). Drive [`next_step`](Self::next_step) to done, then call
    /// [`take_history_json`](Self::take_history_json).
    pub fn request_more_history(&mut self, n: usize) -> Result<()> {
        if self.phase != Phase::Done {
            return Err(Error::internal("loadMoreHistory while loading"));
        }
        let cut = match self.max_messages {
            Some(m) if !self.ctx_region_loaded() || self.context_body_len()? > m => Some(m),
            _ => None,
        };
        self.history_req = Some(match cut {
            Some(old) => {
                self.max_messages = Some(old + n);
                HistoryReq::Extend { old, n }
            }
            None => {
                self.history_target = self.history_returned + n;
                // Path entries behind the context get their text first.
                self.refill = (0..self.path_rev.len())
                    .rev()
                    .filter(|&i| self.path_rev[i].1.is_empty())
                    .collect();
                if !self.refill.is_empty() {
                    self.phase = Phase::Reread;
                    return Ok(());
                }
                HistoryReq::Older { n }
            }
        });
        self.continue_history()
    }

    /// After a history request (and any refill): read on if it is not satisfied yet.
    fn continue_history(&mut self) -> Result<()> {
        if self.history_req.is_none()
            && let Some(n) = self.history_target.checked_sub(self.history_returned)
        {
            self.history_req = Some(HistoryReq::Older { n });
        }
        if !self.satisfied() {
            if self.boundary > self.header_end() {
                self.phase = Phase::Scan;
            } else {
                self.reached_start()?;
            }
        }
        Ok(())
    }

    /// Whether the whole context region (not only the newest `maxMessages`) is loaded.
    fn ctx_region_loaded(&self) -> bool {
        self.ctx_complete_at.is_some() || self.root_reached
    }

    /// Number of context messages other than the compaction summary, as loaded.
    fn context_body_len(&self) -> Result<usize> {
        let ctx = self.build_context(None)?;
        Ok(ctx.total_messages - usize::from(ctx.compaction.is_some()))
    }

    /// The messages a finished [`request_more_history`](Self::request_more_history)
    /// brought, oldest first, as a JSON array.
    pub fn take_history_json(&mut self) -> Result<String> {
        let Some(req) = self.history_req.take() else {
            return Ok("[]".into());
        };
        match req {
            HistoryReq::Extend { old, n } => {
                let ctx = self.build_context(None)?;
                let skip = usize::from(ctx.compaction.is_some());
                let body = &ctx.messages[skip.min(ctx.messages.len())..];
                let hi = body.len().saturating_sub(old);
                let lo = body.len().saturating_sub(old + n);
                Ok(context::join_array(&body[lo..hi]))
            }
            HistoryReq::Older { n } => {
                let Some(done) = self.history_from() else {
                    return Ok("[]".into());
                };
                let mut msgs = Vec::new();
                for (rec, text) in &self.path_rev[done.min(self.path_rev.len())..] {
                    if let Some(m) =
                        context::message_of(&PathItem { rec, text }, self.opts.max_depth as usize)?
                    {
                        msgs.push(m);
                    }
                }
                // `msgs` runs newest first.
                let from = self.history_returned.min(msgs.len());
                let to = (self.history_returned + n).min(msgs.len());
                let mut page = msgs[from..to].to_vec();
                page.reverse();
                self.history_returned = to;
                Ok(context::join_array(&page))
            }
        }
    }

    fn interner(&self) -> &Interner {
        static EMPTY: std::sync::OnceLock<Interner> = std::sync::OnceLock::new();
        self.proc
            .as_ref()
            .map_or_else(|| EMPTY.get_or_init(Interner::default), |p| &p.interner)
    }

    /// The context from what is loaded; `window` overrides `maxMessages`.
    fn build_context(&self, window: Option<Option<usize>>) -> Result<context::Context<'_>> {
        let items: Vec<PathItem> = self
            .path_rev
            .iter()
            .rev()
            .map(|(rec, text)| PathItem { rec, text })
            .collect();
        let window = Window {
            max_messages: window.unwrap_or(self.max_messages),
            include_summary: self.opts.include_summary,
        };
        let mut ctx = context::build(
            &items,
            window,
            self.opts.max_depth as usize,
            self.interner(),
        )?;
        // The path may stop short of the root: settings not on it come from the
        // hint, or are pi's defaults once the root was reached, else unknown (null).
        let set = context::settings(&items, self.interner());
        let complete = self.root_reached || self.leaf == Leaf::Null;
        ctx.thinking_level = match (set.thinking, self.hinted_thinking()) {
            (Some(t), _) => t,
            (None, _) if complete => "\"off\"".into(),
            (None, Some(t)) => t.unwrap_or("\"off\"").to_string(),
            (None, None) => String::new(),
        };
        ctx.model = match (set.model, self.hinted_model()) {
            (Some(m), _) => Some(m),
            (None, Some(m)) if !complete => m.filter(|m| *m != "null").map(str::to_string),
            (None, _) => None,
        };
        Ok(ctx)
    }

    /// The context as JSON (`{"messages","thinkingLevel","model"}`); with `llm`,
    /// converted as pi's `convertToLlm` does.
    pub fn context_json(&self, llm: bool) -> Result<String> {
        let mut ctx = self.build_context(None)?;
        if llm {
            ctx.messages = context::to_llm(&ctx.messages, self.opts.max_depth as usize)?;
        }
        Ok(ctx.to_json())
    }

    fn has_more_history(&self) -> bool {
        if !self.ctx_region_loaded() {
            return true;
        }
        if let (Some(m), Ok(len)) = (self.max_messages, self.context_body_len())
            && len > m
        {
            return true;
        }
        !self.root_reached || self.history_returned < self.history_count()
    }

    /// Facts about the load. `hint_written` is reported as given.
    pub fn metadata(&self, hint_written: bool) -> Result<LazyMetadata> {
        let header = self
            .header
            .as_ref()
            .ok_or_else(|| Error::internal("metadata before the header"))?;
        let ctx = self.build_context(None)?;
        let hint_counts = self
            .hint
            .as_ref()
            .filter(|h| h.file_length == self.file_len && self.hint_anchor_on_path);
        let counts = self
            .full_counts
            .or(hint_counts.and_then(|h| h.entry_count.zip(h.message_count)));
        let settings_resolved =
            self.root_reached || self.leaf == Leaf::Null || self.settings_known();
        Ok(LazyMetadata {
            session_id: header.id.clone(),
            version: header.version,
            cwd: header.cwd.clone(),
            created_at: header.timestamp.clone(),
            parent_session: header.parent_session.clone(),
            leaf_id: self.path_rev.first().map(|(r, _)| r.id.to_string()),
            file_size: self.file_len,
            mode: self.mode.to_string(),
            hint_rejected: if self.hint_anchor_on_path {
                None
            } else {
                self.hint_rejected.clone()
            },
            hint_written,
            bytes_read: self.bytes_read,
            window_start: self
                .path_rev
                .iter()
                .map(|(r, _)| r.offset)
                .min()
                .unwrap_or(self.file_len),
            loaded_entries: self.path_rev.len() as u64,
            context_messages: ctx.messages.len() as u64,
            compaction_id: self.compaction.map(|c| self.path_rev[c].0.id.to_string()),
            settings_resolved,
            has_more_history: self.has_more_history(),
            torn_tail: self.torn.clone(),
            entry_count: counts.map(|c| c.0),
            message_count: counts.map(|c| c.1),
        })
    }

    /// A fresh resume hint, when the existing one was missing, stale or did not
    /// serve this leaf, and this load learned enough to write one.
    pub fn new_hint(&self) -> Option<Hint> {
        if !self.opts.use_hint || self.mode == "full" || self.hint_anchor_on_path {
            return None;
        }
        let header = self.header.as_ref()?;
        let path: Vec<&EntryRec> = self.path_rev.iter().rev().map(|(r, _)| r).collect();
        // Settings before the anchor that this load did not walk to are unknown to
        // the hint; a later load that needs them scans for them.
        let tail_from = self.last_node_offset.unwrap_or(header.end);
        hint::compute(
            header,
            &path,
            self.root_reached,
            self.file_len,
            tail_from,
            None,
        )
    }

    /// The header, once read.
    pub fn header(&self) -> Option<&Header> {
        self.header.as_ref()
    }
}

/// The text of a line the line processor accepted (so it is UTF-8; the lossy
/// conversion, several times slower, only runs if it somehow is not).
fn text_of(bytes: &[u8]) -> Box<str> {
    match std::str::from_utf8(bytes) {
        Ok(t) => t.into(),
        Err(_) => String::from_utf8_lossy(bytes).into(),
    }
}
