//! Turning lines into entry records: header detection, version migration,
//! torn-tail and corruption handling. Shared by full, incremental and lazy loading.

use crate::entry::{self, EntryKind, Envelope};
use crate::error::{Error, ErrorCode, Result};
use crate::json::{self, JsonError, Kind};
use crate::types::{LoadOptions, SkippedLine, TornTail};

/// The newest session format version this library reads and writes.
pub const CURRENT_VERSION: u32 = 3;

/// Whether a line holds nothing but spaces, tabs and carriage returns (a
/// blank line, which JSONL readers skip).
pub fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(|&c| matches!(c, b' ' | b'\t' | b'\r'))
}

/// Most skipped lines listed individually in the metadata.
const MAX_LISTED_SKIPS: usize = 100;

/// The session header line.
#[derive(Debug, Clone)]
pub struct Header {
    pub id: String,
    /// Version as written (1 when absent).
    pub version: u32,
    pub timestamp: Option<String>,
    pub cwd: Option<String>,
    pub parent_session: Option<String>,
    /// Byte offset and length of the header line.
    pub offset: u64,
    pub len: u32,
    /// Byte offset just after the header line (its newline included).
    pub end: u64,
}

/// Where an entry parses its parent from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryRec {
    /// Byte offset of the line.
    pub offset: u64,
    /// Length of the line in bytes, without the newline.
    pub len: u32,
    /// 1-based line number; 0 when unknown (lazy loads).
    pub line: u64,
    pub kind: EntryKind,
    pub id: Box<str>,
    /// The `parentId` as written (`None` for null or absent).
    pub parent_id: Option<Box<str>>,
    /// `targetId` of `leaf` and `label` entries, `firstKeptEntryId` of compactions
    /// (`None` for null or absent).
    pub target: Option<Box<str>>,
    /// Span of the `message` value within the line (message entries), else (0, 0).
    pub msg: (u32, u32),
    /// Role of a message entry.
    pub role: Role,
    /// For thinking-level changes: the interned level (JSON text); for model changes
    /// and assistant messages: the interned model (`{"provider":…,"modelId":…}`); else 0.
    pub setting: u32,
}

/// The role of a message entry, as far as forkpoint cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Role {
    #[default]
    None,
    User,
    Assistant,
    ToolResult,
    BashExecution,
    Custom,
    Other,
}

impl Role {
    fn from_str(s: &str) -> Role {
        match s {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "toolResult" => Role::ToolResult,
            "bashExecution" => Role::BashExecution,
            "custom" => Role::Custom,
            _ => Role::Other,
        }
    }
}

/// Distinct setting values (thinking levels, models) of a session, as JSON text.
/// Index 0 is reserved for "none".
#[derive(Debug, Clone)]
pub struct Interner {
    map: std::collections::HashMap<Box<str>, u32>,
    vals: Vec<Box<str>>,
}

impl Default for Interner {
    fn default() -> Self {
        Interner {
            map: Default::default(),
            vals: vec!["".into()],
        }
    }
}

impl Interner {
    /// The index of `s`, adding it if new.
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.map.get(s) {
            return i;
        }
        let i = self.vals.len() as u32;
        self.vals.push(s.into());
        self.map.insert(s.into(), i);
        i
    }

    /// Number of values (index 0 included).
    pub fn len(&self) -> usize {
        self.vals.len()
    }

    /// Whether only the reserved index 0 exists.
    pub fn is_empty(&self) -> bool {
        self.vals.len() <= 1
    }

    /// The value at index `i` (empty for 0 or unknown).
    pub fn get(&self, i: u32) -> &str {
        self.vals.get(i as usize).map_or("", |v| v)
    }
}

/// `{"provider":…,"modelId":…}` from raw JSON values (absent members left out,
/// as `JSON.stringify` drops `undefined`).
pub fn model_json(provider: Option<json::Value>, model: Option<json::Value>, src: &str) -> String {
    let mut out = String::from("{");
    for (k, v) in [("provider", provider), ("modelId", model)] {
        if let Some(v) = v {
            if out.len() > 1 {
                out.push(',');
            }
            out.push('"');
            out.push_str(k);
            out.push_str("\":");
            out.push_str(v.raw(src));
        }
    }
    out.push('}');
    out
}

impl EntryRec {
    /// Line number as an option (None when unknown).
    pub fn line_no(&self) -> Option<u64> {
        (self.line > 0).then_some(self.line)
    }

    /// Whether the entry sets the model in force: a model change, or an
    /// assistant message (its provider and model).
    pub fn sets_model(&self) -> bool {
        self.kind == EntryKind::ModelChange
            || (self.kind == EntryKind::Message && self.role == Role::Assistant)
    }
}

/// What a line turned out to be.
#[derive(Debug)]
pub enum LineOut {
    /// Blank line, extra header, or a skipped malformed line.
    Nothing,
    /// The header (first non-blank line).
    Header,
    /// An entry, with its migrated text when the file is an older version.
    Entry(EntryRec, Option<Box<str>>),
}

#[derive(Debug)]
struct PendingBad {
    err: Error,
    line: Option<u64>,
    offset: u64,
    len: u64,
    is_header: bool,
    /// Whether a newline ended the line: only a line without one can be torn.
    has_newline: bool,
}

/// Processes the lines of one session file in order.
#[derive(Debug)]
pub struct LineProcessor {
    pub opts: LoadOptions,
    pub path: Option<String>,
    pub header: Option<Header>,
    /// Index of the next parsed line in pi's array of file entries (header = 0):
    /// the numbering version-1 migration uses.
    parsed_count: u64,
    prev_v1_id: Option<Box<str>>,
    pending_bad: Option<PendingBad>,
    pub skipped_count: u64,
    pub skipped: Vec<SkippedLine>,
    pub blank_lines: u64,
    pub extra_headers: u64,
    pub line_count: u64,
    pub entry_count: u64,
    pub torn: Option<TornTail>,
    pub missing_final_newline: bool,
    /// Lines are not numbered (lazy loads read from the middle of files).
    unnumbered: bool,
    /// Setting values seen so far (replace it only before the first line:
    /// `last_model` holds an index into it).
    pub interner: Interner,
    /// The provider and model (raw JSON) of the last assistant message, and
    /// their interned index.
    last_model: Option<LastModel>,
}

/// The raw JSON provider and model of an assistant message, and their
/// interned index.
type LastModel = (Option<Box<str>>, Option<Box<str>>, u32);

impl LineProcessor {
    /// A processor for a file read from its start.
    pub fn new(opts: LoadOptions, path: Option<String>) -> Self {
        LineProcessor {
            opts,
            path,
            header: None,
            parsed_count: 0,
            prev_v1_id: None,
            pending_bad: None,
            skipped_count: 0,
            skipped: Vec::new(),
            blank_lines: 0,
            extra_headers: 0,
            line_count: 0,
            entry_count: 0,
            torn: None,
            missing_final_newline: false,
            unnumbered: false,
            interner: Interner::default(),
            last_model: None,
        }
    }

    /// A processor for lines read from the middle of a file whose header is known
    /// (lazy loads). Lines are not numbered and must be version 2 or 3.
    pub fn for_tail(opts: LoadOptions, path: Option<String>, header: Header) -> Self {
        let mut p = Self::new(opts, path);
        p.header = Some(header);
        p.unnumbered = true;
        p
    }

    /// A processor for a chunk of a file after its header, numbering lines from 1
    /// within the chunk (the caller renumbers when merging chunks).
    pub fn for_chunk(opts: LoadOptions, path: Option<String>, header: Header) -> Self {
        let mut p = Self::new(opts, path);
        p.header = Some(header);
        p
    }

    /// The pending bad line's error and whether a newline ended it, if any (for
    /// merging chunks).
    pub fn take_pending_bad(&mut self) -> Option<(Error, bool)> {
        self.pending_bad.take().map(|b| (b.err, b.has_newline))
    }

    /// Puts back a bad line whose place in the file is now known to be last
    /// (for merging chunks; `finish` settles it: torn when no newline ended it).
    pub fn restore_pending_bad(&mut self, err: Error, is_header: bool, has_newline: bool) {
        let offset = err.offset.unwrap_or(0);
        let line = err.line;
        self.pending_bad = Some(PendingBad {
            err,
            line,
            offset,
            len: 0,
            is_header,
            has_newline,
        });
    }

    /// Adds another chunk's counters to this processor's (for merging chunks).
    pub fn absorb_counts(&mut self, other: &LineProcessor) {
        self.line_count += other.line_count;
        self.blank_lines += other.blank_lines;
        self.extra_headers += other.extra_headers;
        self.entry_count += other.entry_count;
        self.skipped_count += other.skipped_count;
        self.missing_final_newline |= other.missing_final_newline;
    }

    /// Records a skipped line (for merging chunks).
    pub fn record_skip(&mut self, line: Option<u64>, offset: u64, reason: String) {
        self.skip(line, offset, reason);
    }

    fn err(&self, code: ErrorCode, msg: String, line: Option<u64>, offset: u64) -> Error {
        let e = Error::new(code, msg).at(line, offset);
        match &self.path {
            Some(p) => e.with_path(p.clone()),
            None => e,
        }
    }

    fn skip(&mut self, line: Option<u64>, offset: u64, reason: String) {
        self.skipped_count += 1;
        if self.skipped.len() < MAX_LISTED_SKIPS {
            self.skipped.push(SkippedLine {
                line,
                offset,
                reason,
            });
        }
    }

    /// A malformed entry line in the middle: an error, or a counted skip when lenient.
    fn bad_entry(&mut self, err: Error) -> Result<LineOut> {
        if self.opts.lenient {
            let reason = err.message.clone();
            self.skip(err.line, err.offset.unwrap_or(0), reason);
            Ok(LineOut::Nothing)
        } else {
            Err(err)
        }
    }

    /// Handles one line (without its newline). `has_newline` is false only for a
    /// final line with no newline after it.
    pub fn line(&mut self, bytes: &[u8], offset: u64, has_newline: bool) -> Result<LineOut> {
        let text = std::str::from_utf8(bytes).map_err(|e| e.valid_up_to());
        self.line_str(text, bytes.len(), offset, has_newline)
    }

    /// As [`line`](Self::line) for text already checked as UTF-8: `Err(i)` says the
    /// line (of `len` bytes) has invalid UTF-8 at byte `i`.
    pub fn line_str(
        &mut self,
        text: Result<&str, usize>,
        len: usize,
        offset: u64,
        has_newline: bool,
    ) -> Result<LineOut> {
        self.line_count += 1;
        let line_no = if self.unnumbered {
            None
        } else {
            Some(self.line_count)
        };
        if let Ok(t) = text
            && is_blank(t.as_bytes())
        {
            self.blank_lines += 1;
            return Ok(LineOut::Nothing);
        }
        if let Some(bad) = self.pending_bad.take() {
            // A non-blank line follows the bad one, so the bad one is not a torn tail.
            if bad.is_header {
                return Err(Error {
                    code: ErrorCode::UnsupportedFormat,
                    ..bad.err
                });
            }
            self.bad_entry(bad.err)?;
        }
        if len as u64 > self.opts.max_line_bytes {
            return Err(self.err(
                ErrorCode::LimitExceeded,
                format!(
                    "line is {} bytes, over the limit of {} (raise maxLineBytes to load it)",
                    len, self.opts.max_line_bytes
                ),
                line_no,
                offset,
            ));
        }
        let text = match text {
            Ok(t) => t,
            Err(at) => {
                if self.header.is_none() {
                    return Err(self.err(
                        ErrorCode::UnsupportedFormat,
                        "not a session file: the first line is not UTF-8 text (binary file?)"
                            .into(),
                        line_no,
                        offset,
                    ));
                }
                let err = self.err(
                    ErrorCode::CorruptedData,
                    format!("invalid UTF-8 at byte {at} of the line"),
                    line_no,
                    offset,
                );
                return self.defer(err, line_no, offset, len, false, has_newline);
            }
        };
        if self.header.is_none() {
            return self.header_line(text, offset, line_no, has_newline);
        }
        let env = match entry::parse_envelope(text, self.opts.max_depth as usize) {
            Ok(env) => env,
            Err(e) => {
                let (code, what) = match e {
                    JsonError::Depth { .. } => (ErrorCode::LimitExceeded, e.describe()),
                    JsonError::Syntax { .. } => (ErrorCode::CorruptedData, e.describe()),
                };
                let err = self.err(code, what, line_no, offset);
                // A final line cut short by a crash is torn whatever it held; one
                // that is whole (a newline ends it, or its brackets close) and too
                // deep is over the limit.
                let whole = has_newline || json_complete(text.as_bytes());
                if code == ErrorCode::LimitExceeded && whole && !self.opts.lenient {
                    return Err(err);
                }
                // A whole line that is too deep is settled like one a newline ends.
                let ended = if code == ErrorCode::LimitExceeded {
                    whole
                } else {
                    has_newline
                };
                return self.defer(err, line_no, offset, len, false, ended);
            }
        };
        if !has_newline {
            self.missing_final_newline = true;
        }
        self.entry_line(text, env, offset, line_no)
    }

    /// Remembers a line that failed to parse: if nothing but blank lines follow,
    /// it is a torn tail (cut off and reported), otherwise it is corruption.
    fn defer(
        &mut self,
        err: Error,
        line: Option<u64>,
        offset: u64,
        len: usize,
        is_header: bool,
        has_newline: bool,
    ) -> Result<LineOut> {
        self.pending_bad = Some(PendingBad {
            err,
            line,
            offset,
            len: len as u64,
            is_header,
            has_newline,
        });
        Ok(LineOut::Nothing)
    }

    fn header_line(
        &mut self,
        text: &str,
        offset: u64,
        line_no: Option<u64>,
        has_newline: bool,
    ) -> Result<LineOut> {
        if text.contains('\0') {
            return Err(self.err(
                ErrorCode::UnsupportedFormat,
                "not a session file: the first line holds NUL bytes (binary file?)".into(),
                line_no,
                offset,
            ));
        }
        let max_depth = self.opts.max_depth as usize;
        if let Err(e) = json::validate(text.as_bytes(), max_depth) {
            let err = self.err(
                ErrorCode::UnsupportedFormat,
                format!(
                    "not a pi session: the first line is not JSON ({})",
                    e.describe()
                ),
                line_no,
                offset,
            );
            return self.defer(err, line_no, offset, text.len(), true, has_newline);
        }
        let env = entry::parse_envelope(text, max_depth).map_err(|_| {
            self.err(
                ErrorCode::UnsupportedFormat,
                "not a pi session: the first line is not a JSON object".into(),
                line_no,
                offset,
            )
        })?;
        let header = parse_header(text, &env, offset, has_newline)
            .map_err(|msg| self.err(ErrorCode::UnsupportedFormat, msg, line_no, offset))?;
        if !has_newline {
            self.missing_final_newline = true;
        }
        if header.version < 2 {
            self.parsed_count = 1;
        }
        self.header = Some(header);
        Ok(LineOut::Header)
    }

    fn entry_line(
        &mut self,
        text: &str,
        env: Envelope,
        offset: u64,
        line_no: Option<u64>,
    ) -> Result<LineOut> {
        let version = self.header.as_ref().map_or(CURRENT_VERSION, |h| h.version);
        let Some(ty) = env
            .ty
            .filter(|v| v.kind == Kind::String)
            .and_then(|v| v.str(text))
        else {
            let e = self.err(
                ErrorCode::CorruptedData,
                "entry has no string \"type\"".into(),
                line_no,
                offset,
            );
            return self.bad_entry(e);
        };
        if ty == "session" {
            self.extra_headers += 1;
            self.parsed_count += 1;
            return Ok(LineOut::Nothing);
        }
        if self.entry_count >= self.opts.max_entries {
            return Err(self.err(
                ErrorCode::LimitExceeded,
                format!(
                    "more than {} entries (raise maxEntries to load it)",
                    self.opts.max_entries
                ),
                line_no,
                offset,
            ));
        }
        let kind = EntryKind::from_type(&ty);
        let index = self.parsed_count;
        self.parsed_count += 1;

        let (id, parent_id, migrated) = if version < 2 {
            let id: Box<str> = v1_id(index).into();
            let parent = self.prev_v1_id.replace(id.clone());
            let migrated = migrate_v1_line(
                text,
                &env,
                &id,
                parent.as_deref(),
                index,
                self.opts.max_depth as usize,
            );
            (id, parent, Some(migrated))
        } else {
            let id = match env
                .id
                .filter(|v| v.kind == Kind::String)
                .and_then(|v| v.id_str(text))
            {
                Some(id) => Box::<str>::from(id.as_ref()),
                None => {
                    let e = self.err(
                        ErrorCode::CorruptedData,
                        "entry has no string \"id\"".into(),
                        line_no,
                        offset,
                    );
                    return self.bad_entry(e);
                }
            };
            let parent = match env.parent_id {
                None => None,
                Some(v) if v.kind == Kind::Null => None,
                Some(v) if v.kind == Kind::String => {
                    v.id_str(text).map(|s| Box::<str>::from(s.as_ref()))
                }
                Some(_) => {
                    let e = self.err(
                        ErrorCode::CorruptedData,
                        "entry's \"parentId\" is neither a string nor null".into(),
                        line_no,
                        offset,
                    );
                    return self.bad_entry(e);
                }
            };
            let migrated = if version < 3 && kind == EntryKind::Message {
                migrate_v2_message(text, &env, self.opts.max_depth as usize)
            } else {
                None
            };
            (id, parent, migrated)
        };

        // Fields read from the (migrated) text.
        let (target, msg, role, setting) = {
            let migrated_env;
            let (src, env) = match &migrated {
                Some(m) => {
                    migrated_env =
                        entry::parse_envelope(m, self.opts.max_depth as usize).map_err(|e| {
                            Error::internal(format!(
                                "migrated line does not parse: {}",
                                e.describe()
                            ))
                        })?;
                    (m.as_ref(), &migrated_env)
                }
                None => (text, &env),
            };
            let target = match kind {
                EntryKind::Compaction => env
                    .first_kept_entry_id
                    .filter(|v| v.kind == Kind::String)
                    .and_then(|v| v.id_str(src))
                    .map(|s| Box::<str>::from(s.as_ref())),
                EntryKind::Leaf | EntryKind::Label => match env.target_id {
                    Some(v) if v.kind == Kind::String => {
                        v.id_str(src).map(|s| Box::<str>::from(s.as_ref()))
                    }
                    Some(v) if v.kind == Kind::Null && kind == EntryKind::Leaf => None,
                    _ => {
                        let e = self.err(
                            ErrorCode::CorruptedData,
                            format!(
                                "{} entry has no \"targetId\"",
                                if kind == EntryKind::Leaf {
                                    "leaf"
                                } else {
                                    "label"
                                }
                            ),
                            line_no,
                            offset,
                        );
                        return self.bad_entry(e);
                    }
                },
                _ => None,
            };
            let msg = match env.message {
                Some(v) if kind == EntryKind::Message => (v.start as u32, v.end as u32),
                _ => (0, 0),
            };
            let role = match env.msg.role {
                Some(r) if kind == EntryKind::Message => {
                    r.str(src).map_or(Role::Other, |r| Role::from_str(&r))
                }
                _ => Role::None,
            };
            let setting = match kind {
                EntryKind::ThinkingLevelChange => self
                    .interner
                    .intern(env.thinking_level.map_or("null", |v| v.raw(src))),
                EntryKind::ModelChange => {
                    self.interner
                        .intern(&model_json(env.provider, env.model_id, src))
                }
                EntryKind::Message if role == Role::Assistant => {
                    let (p, m) = (env.msg.provider, env.msg.model);
                    let raw = |v: Option<json::Value>| v.map(|v| v.raw(src));
                    match &self.last_model {
                        // Most assistant messages name the model the one before did.
                        Some((lp, lm, i)) if lp.as_deref() == raw(p) && lm.as_deref() == raw(m) => {
                            *i
                        }
                        _ => {
                            let i = self.interner.intern(&model_json(p, m, src));
                            self.last_model =
                                Some((raw(p).map(Into::into), raw(m).map(Into::into), i));
                            i
                        }
                    }
                }
                _ => 0,
            };
            (target, msg, role, setting)
        };
        self.entry_count += 1;
        let rec = EntryRec {
            offset,
            len: u32::try_from(text.len()).unwrap_or(u32::MAX),
            line: line_no.unwrap_or(0),
            kind,
            id,
            parent_id,
            target,
            msg,
            role,
            setting,
        };
        Ok(LineOut::Entry(rec, migrated.map(String::into_boxed_str)))
    }

    /// Call after the last line. A last line that failed to parse, with no newline
    /// after it (only blank space may follow), is a torn tail: a write cut short,
    /// cut off and reported, not an error. One that a newline ended is complete and
    /// corrupt: `CORRUPTED_DATA` (a counted skip when lenient), never cut.
    pub fn finish(&mut self, file_len: u64) -> Result<()> {
        if let Some(bad) = self.pending_bad.take() {
            if bad.has_newline {
                if bad.is_header {
                    return Err(bad.err);
                }
                self.bad_entry(bad.err)?;
                return self.finish(file_len);
            }
            if bad.is_header {
                return Err(self.err(
                    ErrorCode::UnsupportedFormat,
                    "not a complete session: the file holds no complete header line (torn first line)".into(),
                    bad.line,
                    bad.offset,
                ));
            }
            self.torn = Some(TornTail {
                line: bad.line,
                offset: bad.offset,
                bytes: file_len.saturating_sub(bad.offset),
            });
            // A torn line has no newline after it by definition of being cut; the
            // flag only describes complete lines.
            self.missing_final_newline = false;
        }
        if self.header.is_none() {
            let mut e = Error::unsupported(if self.line_count == 0 {
                "not a session file: the file is empty"
            } else {
                "not a session file: it holds only blank lines"
            });
            e.path = self.path.clone();
            return Err(e);
        }
        Ok(())
    }

    /// Settles a line that failed to parse as corruption in the middle of the file
    /// (an error, or a counted skip when lenient). Used by readers that go
    /// backwards and know the line is not the last one.
    pub fn flush_pending_bad(&mut self) -> Result<()> {
        if let Some(bad) = self.pending_bad.take() {
            self.bad_entry(bad.err)?;
        }
        Ok(())
    }

    /// Drops a line that failed to parse without classifying it (it will be read
    /// again, e.g. once a write in progress completes).
    pub fn forget_pending_bad(&mut self) {
        if self.pending_bad.take().is_some() {
            self.line_count = self.line_count.saturating_sub(1);
        }
    }

    /// Whether a line that failed to parse is waiting to be classified.
    pub fn has_pending_bad(&self) -> bool {
        self.pending_bad.is_some()
    }

    /// Length of the pending bad line, if any.
    pub fn pending_bad_len(&self) -> Option<u64> {
        self.pending_bad.as_ref().map(|b| b.len)
    }
}

/// Deterministic id for entry `index` of a version-1 file (pi assigns random ids;
/// ours are the entry's index in the file, so every load agrees).
pub fn v1_id(index: u64) -> String {
    format!("{index:08x}")
}

/// Parses the header line; the error is a message for `UNSUPPORTED_FORMAT`.
pub fn parse_header(
    text: &str,
    env: &Envelope,
    offset: u64,
    has_newline: bool,
) -> Result<Header, String> {
    let ty = env.ty.and_then(|v| v.str(text));
    if ty.as_deref() != Some("session") {
        return Err(describe_foreign(text, env));
    }
    let Some(id) = env
        .id
        .filter(|v| v.kind == Kind::String)
        .and_then(|v| v.str(text))
    else {
        return Err("not a pi session: the header has no string \"id\"".into());
    };
    let version = match env.version {
        None => 1,
        Some(v) if v.kind == Kind::Null => 1,
        Some(v) if v.kind == Kind::Number => match v.raw(text).parse::<f64>() {
            Ok(n) if n.fract() == 0.0 && (1.0..=f64::from(CURRENT_VERSION)).contains(&n) => {
                n as u32
            }
            Ok(n) if n.fract() == 0.0 && n > f64::from(CURRENT_VERSION) => {
                return Err(format!(
                    "session format version {n} is newer than this library reads (up to {CURRENT_VERSION}); upgrade forkpoint"
                ));
            }
            _ => {
                return Err(format!(
                    "unsupported session format version {}",
                    v.raw(text)
                ));
            }
        },
        Some(v) => {
            return Err(format!(
                "unsupported session format version {}",
                v.raw(text)
            ));
        }
    };
    let s = |v: Option<json::Value>| {
        v.filter(|v| v.kind == Kind::String)
            .and_then(|v| v.str(text))
            .map(|c| c.into_owned())
    };
    Ok(Header {
        id: id.into_owned(),
        version,
        timestamp: s(env.timestamp),
        cwd: s(env.cwd),
        parent_session: s(env.parent_session),
        offset,
        len: text.len() as u32,
        end: offset + text.len() as u64 + u64::from(has_newline),
    })
}

/// An explanation for a first line that is JSON but not a pi session header.
fn describe_foreign(text: &str, env: &Envelope) -> String {
    let ty = env
        .ty
        .and_then(|v| v.str(text))
        .map(|c| c.into_owned())
        .unwrap_or_default();
    let has = |k: &str| text.contains(&format!("\"{k}\""));
    if matches!(
        ty.as_str(),
        "session_meta" | "response_item" | "event_msg" | "turn_context" | "compacted"
    ) && has("payload")
    {
        return "not a pi session: this looks like an OpenAI Codex rollout (import it with `forkpoint import <file>` or importSession)".into();
    }
    if has("parentUuid")
        || has("sessionId") && has("uuid")
        || matches!(
            ty.as_str(),
            "user"
                | "assistant"
                | "system"
                | "summary"
                | "file-history-snapshot"
                | "progress"
                | "queue-operation"
        )
    {
        return "not a pi session: this looks like a Claude Code transcript (import it with `forkpoint import <file>` or importSession)".into();
    }
    if ty.is_empty() {
        "not a pi session: the first line has no \"type\":\"session\" header".into()
    } else {
        format!("not a pi session: the first line is a {ty:?} record, not a \"session\" header")
    }
}

/// Rewrites a version-1 entry in version-3 form: `type`, `id`, `parentId` first,
/// then the original members, `firstKeptEntryIndex` replaced by `firstKeptEntryId`
/// (as pi's migration does), and `hookMessage` roles renamed to `custom`.
fn migrate_v1_line(
    text: &str,
    env: &Envelope,
    id: &str,
    parent: Option<&str>,
    index: u64,
    max_depth: usize,
) -> String {
    let mut out = String::with_capacity(text.len() + 48);
    out.push_str("{\"type\":");
    out.push_str(env.ty.map_or("null", |v| v.raw(text)));
    out.push_str(",\"id\":");
    json::push_str_literal(&mut out, id);
    out.push_str(",\"parentId\":");
    match parent {
        Some(p) => json::push_str_literal(&mut out, p),
        None => out.push_str("null"),
    }
    let mut first_kept: Option<String> = None;
    let b = text.as_bytes();
    if let Ok(mut r) = json::ObjectReader::open(b, 0, 1, max_depth) {
        while let Ok(Some(key)) = r.next_key() {
            let Ok(v) = r.skip_value() else { break };
            let name = key.str(text).unwrap_or_default();
            match name.as_ref() {
                "type" | "id" | "parentId" => continue,
                "firstKeptEntryIndex" if v.kind == Kind::Number => {
                    // pi: entries[k].id, where ids are assigned in file order, so only
                    // an earlier, non-header entry has one yet.
                    if let Ok(k) = v.raw(text).parse::<f64>()
                        && k.fract() == 0.0
                        && k >= 1.0
                        && k <= index as f64
                    {
                        first_kept = Some(v1_id(k as u64));
                    }
                    continue;
                }
                _ => {}
            }
            out.push(',');
            out.push_str(key.raw(text));
            out.push(':');
            if name == "message" && v.kind == Kind::Object {
                push_message_v3(&mut out, text, v, max_depth);
            } else {
                out.push_str(v.raw(text));
            }
        }
    }
    if let Some(fk) = first_kept {
        out.push_str(",\"firstKeptEntryId\":");
        json::push_str_literal(&mut out, &fk);
    }
    out.push('}');
    out
}

/// Appends a message object with a `hookMessage` role renamed to `custom`.
fn push_message_v3(out: &mut String, text: &str, msg: json::Value, max_depth: usize) {
    match entry::parse_message_fields(text, msg, max_depth) {
        Ok(f) => match f.role {
            Some(role) if role.str(text).as_deref() == Some("hookMessage") => {
                out.push_str(&text[msg.start..role.start]);
                out.push_str("\"custom\"");
                out.push_str(&text[role.end..msg.end]);
            }
            _ => out.push_str(msg.raw(text)),
        },
        Err(_) => out.push_str(msg.raw(text)),
    }
}

/// Version 2 → 3: a message with role `hookMessage` gets role `custom`.
fn migrate_v2_message(text: &str, env: &Envelope, max_depth: usize) -> Option<String> {
    let msg = env.message?;
    let f = entry::parse_message_fields(text, msg, max_depth).ok()?;
    let role = f.role?;
    if role.str(text).as_deref() != Some("hookMessage") {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..role.start]);
    out.push_str("\"custom\"");
    out.push_str(&text[role.end..]);
    Some(out)
}

/// Whether `bytes` hold one whole JSON object or array as far as its brackets
/// tell (strings and escapes respected, no recursion): a line cut short by a
/// crash leaves brackets open.
pub fn json_complete(bytes: &[u8]) -> bool {
    let mut depth: u64 = 0;
    let mut in_str = false;
    let mut esc = false;
    let mut opened = false;
    for &b in bytes {
        if in_str {
            match (esc, b) {
                (true, _) => esc = false,
                (false, b'\\') => esc = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'{' | b'[' => {
                depth += 1;
                opened = true;
            }
            b'}' | b']' => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            _ => {}
        }
    }
    opened && depth == 0 && !in_str
}

/// Whether a final line with no newline after it is torn (a write cut short):
/// it is not UTF-8, does not parse, or is too deep with its brackets left open.
/// A line that parses, or is whole and only too deep, is not torn.
pub fn is_torn_final_line(bytes: &[u8], max_depth: usize) -> bool {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return true;
    };
    match entry::parse_envelope(text, max_depth) {
        Ok(_) => false,
        Err(JsonError::Syntax { .. }) => true,
        Err(JsonError::Depth { .. }) => !json_complete(bytes),
    }
}
