//! The session writer's state machine: it turns appends into lines (filling
//! `id`, `parentId` and `timestamp`), tracks the current leaf and the ids in use,
//! queues lines for the storage layer, and computes the resume hint. It does no
//! I/O: the storage layer takes batches of queued lines, writes and syncs them,
//! and reports back.

use std::collections::VecDeque;

use crate::entry::EntryKind;
use crate::error::{Error, ErrorCode, Result};
use crate::hint::{self, Hint};
use crate::json::{self, Kind};
use crate::load::{CURRENT_VERSION, EntryRec, Header, LineOut, LineProcessor};
use crate::session::Session;
use crate::time;
use crate::tree::{self, IdIndex, NONE};
use crate::types::LoadOptions;

/// A small, fast, seedable generator (SplitMix64) for entry ids.
#[derive(Debug, Clone)]
pub struct IdRng(u64);

impl IdRng {
    /// A generator from a seed (the bindings seed it from the OS).
    pub fn new(seed: u64) -> Self {
        IdRng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Lines handed to the storage layer in one write.
#[derive(Debug, Clone, Default)]
pub struct Batch {
    /// The bytes to append (whole lines).
    pub bytes: Vec<u8>,
    /// The last ticket the batch makes durable.
    pub last_ticket: u64,
    /// Number of lines.
    pub lines: usize,
}

/// The writer's state for one session file.
#[derive(Debug)]
pub struct WriterCore {
    header: Header,
    entries: Vec<EntryRec>,
    idx: IdIndex,
    proc: LineProcessor,
    /// The current leaf (`None`: before the first entry; the next append is a root).
    leaf: Option<u32>,
    /// Logical length of the content (decompressed for gzip) including queued lines.
    logical_len: u64,
    queue: VecDeque<(u64, Vec<u8>)>,
    next_ticket: u64,
    durable_ticket: u64,
    rng: IdRng,
    failed: Option<Error>,
    hint_dirty: bool,
    /// Whether this writer holds the whole session (false: only its tail, read
    /// for an agent's resume; then it writes no hints and mints long ids, since
    /// it cannot see every id in use).
    whole: bool,
    message_count: u64,
    max_line_bytes: u64,
    max_depth: usize,
}

impl WriterCore {
    /// A writer continuing a loaded session (a version-3 file whose torn tail, if
    /// any, was cut off by the caller). `content_len` is the content's length.
    pub fn from_session(
        session: Session,
        content_len: u64,
        seed: u64,
        opts: &LoadOptions,
    ) -> Result<WriterCore> {
        if session.header().version < CURRENT_VERSION {
            return Err(Error::new(
                ErrorCode::MigrationRequired,
                format!(
                    "the file is session format version {}; open it with {{ migrate: true }} to rewrite it as version {CURRENT_VERSION} before appending",
                    session.header().version
                ),
            ));
        }
        let message_count = session
            .entries()
            .iter()
            .filter(|e| e.kind == EntryKind::Message)
            .count() as u64;
        let interner = session.interner().clone();
        let (header, entries, idx, tree) = session.into_parts();
        let mut proc = LineProcessor::for_tail(opts.clone(), None, header.clone());
        proc.interner = interner;
        Ok(WriterCore {
            leaf: tree.leaf,
            header,
            entries,
            idx,
            proc,
            logical_len: content_len,
            queue: VecDeque::new(),
            next_ticket: 1,
            durable_ticket: 0,
            rng: IdRng::new(seed),
            failed: None,
            hint_dirty: true,
            whole: true,
            message_count,
            max_line_bytes: opts.max_line_bytes,
            max_depth: opts.max_depth as usize,
        })
    }

    /// The header line for a new session (with its newline).
    pub fn new_header_line(
        id: &str,
        now_ms: i64,
        cwd: &str,
        parent_session: Option<&str>,
    ) -> String {
        let mut out = String::from("{\"type\":\"session\",\"version\":3,\"id\":");
        json::push_str_literal(&mut out, id);
        out.push_str(",\"timestamp\":");
        json::push_str_literal(&mut out, &time::ms_to_iso(now_ms));
        out.push_str(",\"cwd\":");
        json::push_str_literal(&mut out, cwd);
        if let Some(p) = parent_session {
            out.push_str(",\"parentSession\":");
            json::push_str_literal(&mut out, p);
        }
        out.push_str("}\n");
        out
    }

    fn check_ok(&self) -> Result<()> {
        match &self.failed {
            Some(e) => Err(Error::new(
                ErrorCode::Closed,
                format!(
                    "an earlier write failed ({}); reopen the writer to continue",
                    e.message
                ),
            )),
            None => Ok(()),
        }
    }

    /// Marks the writer failed: every later call errors until it is reopened.
    pub fn fail(&mut self, e: Error) {
        self.failed = Some(e);
    }

    /// The error that made the writer fail, if any.
    pub fn failure(&self) -> Option<&Error> {
        self.failed.as_ref()
    }

    fn new_id(&mut self) -> String {
        if !self.whole {
            // 128 random bits: unique without seeing the ids before the tail.
            return format!("{:016x}{:016x}", self.rng.next_u64(), self.rng.next_u64());
        }
        for _ in 0..100 {
            let id = format!("{:08x}", self.rng.next_u64() as u32);
            if self.idx.get(&self.entries, &id).is_none() {
                return id;
            }
        }
        // As pi: fall back to a longer id.
        loop {
            let id = format!("{:016x}{:016x}", self.rng.next_u64(), self.rng.next_u64());
            if self.idx.get(&self.entries, &id).is_none() {
                return id;
            }
        }
    }

    fn node(&self, id: &str) -> Result<u32> {
        let i = self
            .idx
            .get(&self.entries, id)
            .ok_or_else(|| Error::new(ErrorCode::NotFound, format!("no entry with id {id:?}")))?;
        tree::resolve_node(&self.entries, &self.idx, i).ok_or_else(|| {
            Error::new(
                ErrorCode::NotFound,
                format!("leaf entry {id:?} points at no entry"),
            )
        })
    }

    /// An entry id given as a JSON string in an appended entry: its key, or — when
    /// it is a handle passed back (NUL and the escaped form, as ids holding lone
    /// surrogates are handed out) that names an entry — that handle.
    fn given_id(&self, v: json::Value, src: &str) -> Option<String> {
        let key = v.id_str(src)?.into_owned();
        if self.idx.get(&self.entries, &key).is_none()
            && let Some(d) = v.str(src)
            && d.starts_with('\0')
            && self.idx.get(&self.entries, &d).is_some()
        {
            return Some(d.into_owned());
        }
        Some(key)
    }

    /// The current leaf's id.
    pub fn leaf_id(&self) -> Option<&str> {
        self.leaf.map(|i| &*self.entries[i as usize].id)
    }

    /// Number of entries (queued ones included).
    pub fn entry_count(&self) -> u64 {
        self.entries.len() as u64
    }

    /// Number of `message` entries (queued ones included).
    pub fn message_count(&self) -> u64 {
        self.message_count
    }

    /// Appends an entry given as a JSON object. `type` is required; `id`,
    /// `parentId` and `timestamp` are filled when absent (`parentId` = the current
    /// leaf). Returns the id and the ticket to wait for.
    pub fn append(&mut self, entry_json: &str, now_ms: i64) -> Result<(String, u64)> {
        self.check_ok()?;
        let src = entry_json.trim();
        let b = src.as_bytes();
        let mut r = json::ObjectReader::open(b, 0, 1, self.max_depth).map_err(|e| {
            Error::invalid_input(format!("entry is not a JSON object: {}", e.describe()))
        })?;
        let mut ty = None;
        let mut id = None;
        let mut parent = None;
        let mut ts = None;
        let mut rest: Vec<(json::Value, json::Value)> = Vec::new();
        while let Some(k) = r
            .next_key()
            .map_err(|e| Error::invalid_input(e.describe()))?
        {
            let v = r
                .skip_value()
                .map_err(|e| Error::invalid_input(e.describe()))?;
            match k.str(src).as_deref() {
                Some("type") => ty = Some(v),
                Some("id") => id = Some(v),
                Some("parentId") => parent = Some(v),
                Some("timestamp") => ts = Some(v),
                _ => {
                    rest.retain(|(rk, _)| rk.str(src) != k.str(src));
                    rest.push((k, v));
                }
            }
        }
        if json::skip_ws(b, r.end()) != b.len() {
            return Err(Error::invalid_input(
                "entry has trailing characters after the JSON object",
            ));
        }
        let ty = ty
            .filter(|v| v.kind == Kind::String)
            .and_then(|v| v.str(src))
            .ok_or_else(|| Error::invalid_input("entry needs a string \"type\""))?;
        if ty == "session" {
            return Err(Error::invalid_input(
                "\"session\" is the header's type, not an entry type",
            ));
        }
        let id = match id {
            None => self.new_id(),
            Some(v) if v.kind == Kind::Null => self.new_id(),
            Some(v) => {
                let id = v.id_str(src).filter(|s| !s.is_empty()).ok_or_else(|| {
                    Error::new(
                        ErrorCode::InvalidId,
                        "entry \"id\" must be a non-empty string",
                    )
                })?;
                if self.idx.get(&self.entries, &id).is_some() {
                    return Err(Error::new(
                        ErrorCode::InvalidId,
                        format!("id {id:?} is already used in this session"),
                    ));
                }
                id.into_owned()
            }
        };
        let parent_id: Option<String> = match parent {
            None => self.leaf_id().map(str::to_string),
            Some(v) if v.kind == Kind::Null => None,
            Some(v) => {
                let p = self
                    .given_id(v, src)
                    .ok_or_else(|| Error::invalid_input("\"parentId\" must be a string or null"))?;
                self.node(&p)?;
                Some(p)
            }
        };
        let mut line = String::with_capacity(src.len() + 96);
        line.push_str("{\"type\":");
        json::push_str_literal(&mut line, &ty);
        line.push_str(",\"id\":");
        json::push_id_literal(&mut line, &id);
        line.push_str(",\"parentId\":");
        match &parent_id {
            Some(p) => json::push_id_literal(&mut line, p),
            None => line.push_str("null"),
        }
        line.push_str(",\"timestamp\":");
        match ts {
            Some(v) if v.kind != Kind::Null => line.push_str(v.raw(src)),
            _ => json::push_str_literal(&mut line, &time::ms_to_iso(now_ms)),
        }
        json::push_members(&mut line, &rest, src);
        line.push('}');
        // Kind-specific checks before anything changes.
        match EntryKind::from_type(&ty) {
            EntryKind::Leaf => {
                let target = rest
                    .iter()
                    .find(|(k, _)| k.str(src).as_deref() == Some("targetId"))
                    .map(|(_, v)| *v);
                match target {
                    Some(v) if v.kind == Kind::Null => {}
                    Some(v) => {
                        self.node(&self.given_id(v, src).unwrap_or_default())?;
                    }
                    None => return Err(Error::invalid_input("a leaf entry needs \"targetId\"")),
                }
            }
            EntryKind::Label => {
                let target = rest
                    .iter()
                    .find(|(k, _)| k.str(src).as_deref() == Some("targetId"))
                    .and_then(|(_, v)| self.given_id(*v, src))
                    .ok_or_else(|| {
                        Error::invalid_input("a label entry needs a string \"targetId\"")
                    })?;
                self.node(&target)?;
            }
            _ => {}
        }
        self.push_line(line, parent_id.as_deref())
    }

    fn push_line(&mut self, line: String, parent: Option<&str>) -> Result<(String, u64)> {
        if line.len() as u64 > self.max_line_bytes {
            return Err(Error::new(
                ErrorCode::LimitExceeded,
                format!(
                    "entry is {} bytes, over the limit of {}",
                    line.len(),
                    self.max_line_bytes
                ),
            ));
        }
        let offset = self.logical_len;
        let rec = match self.proc.line(line.as_bytes(), offset, true)? {
            LineOut::Entry(rec, _) => rec,
            _ => {
                return Err(Error::internal(
                    "built entry line was not read back as an entry",
                ));
            }
        };
        let kind = rec.kind;
        let id = rec.id.to_string();
        let target = rec.target.clone();
        let moved = parent != self.leaf_id();
        self.entries.push(rec);
        let i = (self.entries.len() - 1) as u32;
        self.idx.insert(&self.entries, i);
        match kind {
            EntryKind::Leaf => {
                self.leaf = match target {
                    Some(t) => Some(self.node(&t)?),
                    None => None,
                };
                self.hint_dirty = true;
            }
            _ => {
                self.leaf = Some(i);
                if moved || kind == EntryKind::Compaction {
                    self.hint_dirty = true;
                }
            }
        }
        if kind == EntryKind::Message {
            self.message_count += 1;
        }
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        self.logical_len += bytes.len() as u64;
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        self.queue.push_back((ticket, bytes));
        Ok((id, ticket))
    }

    /// Moves the current leaf to `target` (`None`: before the first entry) with a
    /// `leaf` entry. Its `parentId` is the target, so readers that do not know
    /// `leaf` entries resume on the target's branch too.
    pub fn move_leaf(&mut self, target: Option<&str>, now_ms: i64) -> Result<(String, u64)> {
        self.check_ok()?;
        let t = match target {
            Some(t) => Some(self.entries[self.node(t)? as usize].id.to_string()),
            None => None,
        };
        let mut e = String::from("{\"type\":\"leaf\",\"parentId\":");
        let lit = t
            .as_deref()
            .map_or_else(|| "null".to_string(), json::id_literal);
        e.push_str(&lit);
        e.push_str(",\"targetId\":");
        e.push_str(&lit);
        e.push('}');
        self.append(&e, now_ms)
    }

    /// Sets (or, with `None` or `""`, clears) the label of an entry.
    pub fn append_label(
        &mut self,
        target: &str,
        label: Option<&str>,
        now_ms: i64,
    ) -> Result<(String, u64)> {
        self.check_ok()?;
        self.node(target)?;
        let mut e = String::from("{\"type\":\"label\",\"targetId\":");
        json::push_id_literal(&mut e, target);
        if let Some(l) = label {
            e.push_str(",\"label\":");
            json::push_str_literal(&mut e, l);
        }
        e.push('}');
        self.append(&e, now_ms)
    }

    /// Moves the leaf to `from` (`None`: before the first entry) and appends a
    /// `branch_summary` there, as pi's `branchWithSummary` does.
    pub fn branch_with_summary(
        &mut self,
        from: Option<&str>,
        summary: &str,
        details_json: Option<&str>,
        from_hook: Option<bool>,
        now_ms: i64,
    ) -> Result<(String, u64)> {
        self.check_ok()?;
        let from_id = match from {
            Some(f) => Some(self.entries[self.node(f)? as usize].id.to_string()),
            None => None,
        };
        let mut e = String::from("{\"type\":\"branch_summary\",\"parentId\":");
        e.push_str(
            &from_id
                .as_deref()
                .map_or_else(|| "null".to_string(), json::id_literal),
        );
        e.push_str(",\"fromId\":");
        json::push_id_literal(&mut e, from_id.as_deref().unwrap_or("root"));
        e.push_str(",\"summary\":");
        json::push_str_literal(&mut e, summary);
        if let Some(d) = details_json {
            json::validate(d.as_bytes(), self.max_depth)
                .map_err(|err| Error::invalid_input(format!("details: {}", err.describe())))?;
            e.push_str(",\"details\":");
            e.push_str(d.trim());
        }
        if let Some(h) = from_hook {
            e.push_str(if h {
                ",\"fromHook\":true"
            } else {
                ",\"fromHook\":false"
            });
        }
        e.push('}');
        self.append(&e, now_ms)
    }

    /// Takes queued lines for one write: all of them, or at most `max_lines`.
    pub fn take_batch(&mut self, max_lines: Option<usize>) -> Option<Batch> {
        let n = max_lines.unwrap_or(usize::MAX).min(self.queue.len());
        if n == 0 {
            return None;
        }
        let mut b = Batch::default();
        for (ticket, line) in self.queue.drain(..n) {
            b.bytes.extend_from_slice(&line);
            b.last_ticket = ticket;
            b.lines += 1;
        }
        Some(b)
    }

    /// The storage layer wrote and synced `batch`.
    pub fn committed(&mut self, batch: &Batch) {
        self.durable_ticket = self.durable_ticket.max(batch.last_ticket);
    }

    /// Marks this writer as holding only the session's tail (see `whole`).
    pub fn set_tail_only(&mut self) {
        self.whole = false;
    }

    /// The content's length, queued lines included.
    pub fn logical_len(&self) -> u64 {
        self.logical_len
    }

    /// The last ticket that is durable.
    pub fn durable_ticket(&self) -> u64 {
        self.durable_ticket
    }

    /// The last ticket handed out.
    pub fn last_ticket(&self) -> u64 {
        self.next_ticket - 1
    }

    /// Whether lines are waiting to be written.
    pub fn has_queued(&self) -> bool {
        !self.queue.is_empty()
    }

    /// A resume hint for the current leaf, if the leaf moved or a compaction was
    /// appended since the last one (`force`: regardless). `file_len` is the length
    /// the hint describes (all queued lines written).
    pub fn take_hint(&mut self, force: bool) -> Option<Hint> {
        if !self.whole || (!force && !self.hint_dirty) {
            return None;
        }
        self.hint_dirty = false;
        let mut path = Vec::new();
        let mut j = self.leaf.unwrap_or(NONE);
        let tree_parent = |i: u32| -> u32 {
            let e = &self.entries[i as usize];
            match e.parent_id.as_deref() {
                Some(p) if p != &*e.id => self
                    .idx
                    .get(&self.entries, p)
                    .and_then(|k| tree::resolve_node(&self.entries, &self.idx, k))
                    .unwrap_or(NONE),
                _ => NONE,
            }
        };
        while j != NONE && path.len() <= self.entries.len() {
            path.push(&self.entries[j as usize]);
            j = tree_parent(j);
        }
        path.reverse();
        let tail_from = self
            .entries
            .iter()
            .rev()
            .find(|e| e.kind != EntryKind::Leaf)
            .map_or(self.header.end, |e| e.offset);
        hint::compute(
            &self.header,
            &path,
            true,
            self.logical_len,
            tail_from,
            Some((self.entries.len() as u64, self.message_count)),
        )
    }

    /// The session header.
    pub fn header(&self) -> &Header {
        &self.header
    }
}
