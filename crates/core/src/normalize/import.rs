//! Importing foreign agent sessions as pi version-3 sessions (FORMAT.md §15.7):
//! Claude Code transcripts (`~/.claude/projects/…/<sessionId>.jsonl`), OpenAI
//! Codex CLI rollouts (`~/.codex/sessions/…/rollout-….jsonl`), and pi files of
//! any version (returned as version 3).
//!
//! Every non-blank line of the input becomes exactly one entry (a Claude Code
//! assistant response written as several lines becomes one message entry):
//! conversation lines become `message` entries, compactions `compaction`
//! entries, and everything else a `custom` entry holding the whole original
//! line, so nothing is dropped. The result is checked by loading it with the
//! core's own loader before it is returned.

use std::collections::{HashMap, HashSet};

use super::canon::role;
use super::decode::{AnthropicDecoder, ResponsesDecoder};
use super::jv::{J, Key};
use crate::time::iso_to_ms;
use crate::{Error, LimitOptions, Result, Session};

/// The format of a session to import.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportFormat {
    /// Decide from the content ([`detect`]).
    Auto,
    /// A pi session, version 1, 2 or 3.
    Pi,
    /// A Claude Code transcript.
    ClaudeCode,
    /// An OpenAI Codex CLI rollout.
    Codex,
}

impl ImportFormat {
    /// Parses `"auto"`, `"pi"`, `"claude-code"` or `"codex"` (`INVALID_INPUT` otherwise).
    pub fn parse(s: &str) -> Result<Self> {
        Ok(match s {
            "auto" => ImportFormat::Auto,
            "pi" => ImportFormat::Pi,
            "claude-code" => ImportFormat::ClaudeCode,
            "codex" => ImportFormat::Codex,
            other => {
                return Err(Error::invalid_input(format!(
                    "unknown import format {other:?}: expected \"auto\", \"pi\", \"claude-code\" or \"codex\""
                )));
            }
        })
    }

    /// The name [`parse`](Self::parse) accepts.
    pub fn name(self) -> &'static str {
        match self {
            ImportFormat::Auto => "auto",
            ImportFormat::Pi => "pi",
            ImportFormat::ClaudeCode => "claude-code",
            ImportFormat::Codex => "codex",
        }
    }
}

/// What an import produced.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ImportSummary {
    /// The format read: `"pi"`, `"claude-code"` or `"codex"`.
    pub format: String,
    /// The imported session's id: the one asked for, else a pi file's own id,
    /// else the id derived from the source's own session id (FORMAT.md §15.7).
    pub session_id: String,
    /// Entries written (header excluded).
    pub entries: u64,
    /// `message` entries written.
    pub messages: u64,
    /// `custom` entries written (metadata lines kept whole).
    pub custom_entries: u64,
    /// 0, except 1 for a pi file whose last line is torn (a write cut short),
    /// which is left out as pi's loader leaves it out; every other line is imported.
    pub skipped_lines: u64,
    /// The current leaf of the result (the last entry).
    pub leaf_id: Option<String>,
    /// Entries whose parent is not in the file (kept as roots, as pi does).
    pub orphans: u64,
    /// Parent cycles in the input, each cut at its earliest entry (which becomes a root).
    pub broken_cycles: u64,
    /// Claude Code: tool results of parallel calls moved from sibling branches
    /// into one chain under their assistant message (see [`import_session`]).
    pub rechained_results: u64,
    /// Claude Code: lines repeating an earlier line's `uuid`, kept as `custom`
    /// entries under a derived id.
    pub duplicate_ids: u64,
}

/// Which format `bytes` hold, from their first non-blank lines (gzip is
/// decompressed first). Anything else is `UNSUPPORTED_FORMAT`.
pub fn detect(bytes: &[u8]) -> Result<ImportFormat> {
    detect_with(bytes, &LimitOptions::default())
}

/// As [`detect`], decompressing gzip within `limits`.
pub fn detect_with(bytes: &[u8], limits: &LimitOptions) -> Result<ImportFormat> {
    let data = gunzip(bytes, true, limits)?;
    let mut seen = 0;
    for (line, _, raw) in split_lines(&data) {
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        seen += 1;
        if seen > 20 {
            break;
        }
        let parsed = std::str::from_utf8(raw).ok().and_then(|s| J::parse(s).ok());
        let Some(v) = parsed else {
            if seen == 1 {
                return Err(Error::unsupported(format!(
                    "not a session log: line {line} is not JSON"
                )));
            }
            break;
        };
        if seen == 1 && v.is("type", "session") {
            return Ok(ImportFormat::Pi);
        }
        if looks_codex(&v) {
            return Ok(ImportFormat::Codex);
        }
        if looks_claude_code(&v) {
            return Ok(ImportFormat::ClaudeCode);
        }
    }
    Err(Error::unsupported(if seen == 0 {
        "not a session log: the input is empty".to_string()
    } else {
        "not a pi session, Claude Code transcript or Codex rollout".to_string()
    }))
}

fn looks_codex(v: &J) -> bool {
    v.get("payload").is_some()
        && matches!(
            v.str_of("type").as_deref(),
            Some("session_meta" | "response_item" | "event_msg" | "turn_context" | "compacted")
        )
}

fn looks_claude_code(v: &J) -> bool {
    if v.get("parentUuid").is_some() || (v.get("uuid").is_some() && v.get("sessionId").is_some()) {
        return true;
    }
    match v.str_of("type").as_deref() {
        Some("user" | "assistant") => v.get("message").is_some(),
        Some("summary") => v.get("summary").is_some() || v.get("leafUuid").is_some(),
        Some("queue-operation") => v.get("operation").is_some(),
        Some("file-history-snapshot") => true,
        _ => false,
    }
}

/// Imports a session as pi version-3 JSONL (one entry per line, ending with a
/// newline).
///
/// - **pi**: a version-3 file comes back byte for byte (a torn last line cut
///   off, a final newline added if missing); versions 1 and 2 are migrated as
///   the loader migrates them. `session_id` and `now_iso` are not used.
/// - **Claude Code** and **Codex**: a new header with id `session_id` (`None`:
///   the id derived from the source, [`imported_session_id`]) and an
///   `importedFrom` member `{format, sessionId}`; entries as described in
///   FORMAT.md §15.7. `now_iso` is the header's timestamp when no line has one.
///
/// A line that is not JSON (or not UTF-8) is `CORRUPTED_DATA` with its line
/// number and byte offset; nothing is skipped.
pub fn import_session(
    bytes: &[u8],
    format: ImportFormat,
    session_id: Option<&str>,
    now_iso: &str,
) -> Result<(String, ImportSummary)> {
    import_session_with(bytes, format, session_id, now_iso, &LimitOptions::default())
}

/// As [`import_session`], within `limits` (a gzip input is decompressed as a
/// stream that stops with `LIMIT_EXCEEDED` as soon as a limit is crossed;
/// the input and the result are loaded with these limits).
pub fn import_session_with(
    bytes: &[u8],
    format: ImportFormat,
    session_id: Option<&str>,
    now_iso: &str,
    limits: &LimitOptions,
) -> Result<(String, ImportSummary)> {
    limits.load_options().check_file_size(bytes.len() as u64)?;
    let format = match format {
        ImportFormat::Auto => detect_with(bytes, limits)?,
        // A format given that the content plainly contradicts is refused
        // rather than converted into nonsense.
        f => match detect_with(bytes, limits) {
            Err(e) if e.code == crate::ErrorCode::LimitExceeded => return Err(e),
            Ok(found) if found != f => {
                return Err(Error::unsupported(format!(
                    "this is a {} session, not {}",
                    found.name(),
                    f.name()
                )));
            }
            _ => f,
        },
    };
    if format == ImportFormat::Pi {
        return import_pi(bytes, limits);
    }
    if session_id == Some("") {
        return Err(Error::invalid_input("the session id must not be empty"));
    }
    let data = gunzip(bytes, true, limits)?;
    let lines = read_lines(&data)?;
    let source_id = source_session_id(&lines, format);
    let id = match session_id {
        Some(id) => id.to_string(),
        None => imported_session_id(
            format,
            source_key(&lines, source_id.as_deref()).as_deref(),
            &data,
        ),
    };
    drop(data);
    let (text, stats) = match format {
        ImportFormat::Codex => codex(&lines, &id, source_id, now_iso),
        _ => claude_code(&lines, &id, source_id, now_iso),
    };
    let summary = summarize(&text, format, stats, limits)?;
    Ok((text, summary))
}

/// The id an import gives a Claude Code or Codex session when none is asked
/// for, so that importing the same source twice gives the same id (FORMAT.md
/// §15.7): the source's own session id (`source_id`: Claude Code's
/// `sessionId`, `{sessionId}-agent-{agentId}` for a subagent transcript;
/// Codex's `session_meta.payload.id`) when it is a valid session id (letters, digits, `.`, `_`, `-`; 1 to 128 characters); otherwise
/// `{format}-{h}`, `h` the 64-bit FNV-1a hash (16 hex digits) of that id, or of
/// the decompressed source `data` when it has no id at all.
pub fn imported_session_id(format: ImportFormat, source_id: Option<&str>, data: &[u8]) -> String {
    match source_id {
        Some(id) if crate::store::validate_id(id, "session").is_ok() => id.to_string(),
        Some(id) => format!("{}-{:016x}", format.name(), fnv1a64(id.as_bytes())),
        None => format!("{}-{:016x}", format.name(), fnv1a64(data)),
    }
}

/// FNV-1a, 64 bits (a fixed, published function: the same in every build, unlike
/// `std`'s hashers, which may change between Rust versions).
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// What names the source among its tool's sessions: its session id, and for a
/// Claude Code subagent transcript (lines with `isSidechain: true` and an
/// `agentId`, which carry the parent's `sessionId`) `{sessionId}-agent-{agentId}`.
fn source_key(lines: &[Line], source_id: Option<&str>) -> Option<String> {
    let sid = source_id?;
    let first = lines.iter().find(|l| l.v.str_of("sessionId").is_some());
    let agent = first
        .filter(|l| l.v.get("isSidechain").and_then(J::as_bool) == Some(true))
        .and_then(|l| l.v.str_of("agentId"));
    Some(match agent {
        Some(a) => format!("{sid}-agent-{a}"),
        None => sid.to_string(),
    })
}

/// The source's own session id, as the header's `importedFrom.sessionId`:
/// Claude Code's first `sessionId`, Codex's `session_meta.payload.id`.
fn source_session_id(lines: &[Line], format: ImportFormat) -> Option<String> {
    match format {
        ImportFormat::Codex => lines
            .iter()
            .find(|l| l.v.is("type", "session_meta"))
            .and_then(|l| l.v.get("payload"))
            .and_then(|m| m.str_of("id"))
            .map(|s| s.into_owned()),
        _ => lines
            .iter()
            .find_map(|l| l.v.str_of("sessionId"))
            .map(|s| s.into_owned()),
    }
}

// ---------------------------------------------------------------- shared

#[derive(Debug, Default, Clone, Copy)]
struct Stats {
    orphans: u64,
    broken_cycles: u64,
    rechained_results: u64,
    duplicate_ids: u64,
}

/// Loads the result with the core's loader and counts what it holds.
fn summarize(
    text: &str,
    format: ImportFormat,
    stats: Stats,
    limits: &LimitOptions,
) -> Result<ImportSummary> {
    let s = Session::from_bytes(text.as_bytes().to_vec(), &limits.load_options(), None).map_err(
        |e| match e.code {
            crate::ErrorCode::LimitExceeded => e,
            _ => Error::internal(format!(
                "the imported {} session does not load: {}",
                format.name(),
                e
            )),
        },
    )?;
    let mut summary = summary_of(&s, format);
    summary.skipped_lines = 0;
    summary.orphans = stats.orphans;
    summary.broken_cycles = stats.broken_cycles;
    summary.rechained_results = stats.rechained_results;
    summary.duplicate_ids = stats.duplicate_ids;
    Ok(summary)
}

/// What a loaded session holds, as an import summary (no repairs counted).
pub(crate) fn summary_of(s: &Session, format: ImportFormat) -> ImportSummary {
    let meta = s.metadata();
    ImportSummary {
        format: format.name().to_string(),
        session_id: s.header().id.to_string(),
        entries: meta.entry_count,
        messages: meta.message_count,
        custom_entries: s
            .entries()
            .iter()
            .filter(|e| e.kind == crate::entry::EntryKind::Custom)
            .count() as u64,
        skipped_lines: meta.skipped_lines,
        leaf_id: meta.leaf_id,
        orphans: 0,
        broken_cycles: 0,
        rechained_results: 0,
        duplicate_ids: 0,
    }
}

fn import_pi(bytes: &[u8], limits: &LimitOptions) -> Result<(String, ImportSummary)> {
    let s = Session::from_bytes(bytes.to_vec(), &limits.load_options(), None)?;
    let meta = s.metadata();
    let mut text = if s.header().version == 3 && !meta.gzip {
        let t = s.text();
        match &meta.torn_tail {
            Some(torn) => t.get(..torn.offset as usize).unwrap_or(t).to_string(),
            None => t.to_string(),
        }
    } else {
        s.to_v3_jsonl()
    };
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    drop(s);
    let mut summary = summarize(&text, ImportFormat::Pi, Stats::default(), limits)?;
    // A torn last line (a write cut short) is left out, as pi's loader does: say so.
    if meta.torn_tail.is_some() {
        summary.skipped_lines = 1;
    }
    Ok((text, summary))
}

/// The bytes, decompressed if they are gzip. A stream cut short is
/// `CORRUPTED_DATA` when `whole` (an import drops nothing).
fn gunzip<'a>(
    bytes: &'a [u8],
    whole: bool,
    limits: &LimitOptions,
) -> Result<std::borrow::Cow<'a, [u8]>> {
    if crate::gz::is_gzip(bytes) {
        let d = crate::gz::decode(bytes, false, &crate::gz::GzLimits::from(limits))?;
        if whole && let Some(t) = d.torn {
            return Err(Error::corrupted(format!(
                "the gzip stream is cut short ({} bytes at the end do not decompress)",
                t.bytes
            ))
            .at(None, t.offset));
        }
        Ok(std::borrow::Cow::Owned(d.data))
    } else {
        Ok(std::borrow::Cow::Borrowed(bytes))
    }
}

/// `(1-based line number, byte offset, bytes without the newline and a final `\r`)`.
fn split_lines(data: &[u8]) -> impl Iterator<Item = (u64, u64, &[u8])> {
    let mut pos = 0usize;
    let mut no = 0u64;
    std::iter::from_fn(move || {
        if pos >= data.len() {
            return None;
        }
        let end = memchr::memchr(b'\n', &data[pos..]).map_or(data.len(), |i| pos + i);
        let mut raw = &data[pos..end];
        if let Some(r) = raw.strip_suffix(b"\r") {
            raw = r;
        }
        no += 1;
        let item = (no, pos as u64, raw);
        pos = end + 1;
        Some(item)
    })
}

/// One non-blank input line, parsed.
struct Line {
    no: u64,
    v: J,
}

fn read_lines(data: &[u8]) -> Result<Vec<Line>> {
    let mut out = Vec::new();
    for (no, offset, raw) in split_lines(data) {
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let text = std::str::from_utf8(raw).map_err(|e| {
            Error::corrupted(format!("line {no} is not valid UTF-8"))
                .at(Some(no), offset + e.valid_up_to() as u64)
        })?;
        let v = J::parse(text).map_err(|e| {
            Error::corrupted(format!("line {no} is not valid JSON: {}", e.message))
                .at(Some(no), offset)
        })?;
        out.push(Line { no, v });
    }
    Ok(out)
}

/// A valid ISO timestamp member of a line.
fn line_ts(v: &J) -> Option<String> {
    let s = v.str_of("timestamp")?;
    iso_to_ms(&s).map(|_| s.into_owned())
}

fn str_member(v: &J, key: &str) -> Option<J> {
    v.get(key).filter(|x| matches!(x, J::Str(_))).cloned()
}

fn header(session_id: &str, ts: &str, cwd: Option<J>, from: J) -> J {
    let mut h = J::obj([
        ("type", J::s("session")),
        ("version", J::Num("3".into())),
        ("id", J::s(session_id)),
        ("timestamp", J::s(ts)),
    ]);
    if let Some(c) = cwd {
        h.set("cwd", c);
    }
    h.set("importedFrom", from);
    h
}

fn num_u64(v: Option<&J>) -> u64 {
    match v {
        Some(J::Num(s)) => s.parse::<u64>().ok().unwrap_or_else(|| {
            s.parse::<f64>()
                .ok()
                .filter(|f| f.is_finite() && *f >= 0.0)
                .map_or(0, |f| f as u64)
        }),
        _ => 0,
    }
}

fn num(n: u64) -> J {
    J::Num(n.to_string().into())
}

/// A pi `Usage` (costs are unknown: zeros).
fn usage(input: u64, output: u64, cache_read: u64, cache_write: u64, total: Option<u64>) -> J {
    let zero = || J::Num("0".into());
    J::obj([
        ("input", num(input)),
        ("output", num(output)),
        ("cacheRead", num(cache_read)),
        ("cacheWrite", num(cache_write)),
        (
            "totalTokens",
            num(total.unwrap_or_else(|| {
                input
                    .saturating_add(output)
                    .saturating_add(cache_read)
                    .saturating_add(cache_write)
            })),
        ),
        (
            "cost",
            J::obj([
                ("input", zero()),
                ("output", zero()),
                ("cacheRead", zero()),
                ("cacheWrite", zero()),
                ("total", zero()),
            ]),
        ),
    ])
}

fn has_tool_call(msg: &J) -> bool {
    msg.get("content")
        .and_then(J::as_arr)
        .is_some_and(|a| a.iter().any(|b| b.is("type", "toolCall")))
}

fn tool_call_ids(msg: &J) -> HashSet<String> {
    msg.get("content")
        .and_then(J::as_arr)
        .map(|a| {
            a.iter()
                .filter(|b| b.is("type", "toolCall"))
                .filter_map(|b| b.str_of("id").map(|s| s.into_owned()))
                .collect()
        })
        .unwrap_or_default()
}

/// Sets `timestamp` (ms) on a decoded message.
fn stamp(msg: &mut J, ts: &str) {
    if let Some(ms) = iso_to_ms(ts) {
        msg.set("timestamp", J::Num(ms.to_string().into()));
    }
}

/// Ids unique within the output.
#[derive(Default)]
struct Ids {
    used: HashSet<String>,
}

impl Ids {
    /// `base`, or `base:1`, `base:2`, … if taken; the result is marked used.
    fn fresh(&mut self, base: &str) -> String {
        if self.used.insert(base.to_string()) {
            return base.to_string();
        }
        (1u64..)
            .map(|n| format!("{base}:{n}"))
            .find(|c| self.used.insert(c.clone()))
            .unwrap_or_default()
    }
}

/// The parent of an output entry.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Par {
    Root,
    /// Another output entry, by index.
    Idx(usize),
    /// An id that is not in the output (an orphan; pi and forkpoint treat it as a root).
    Dangling(String),
}

/// An output entry before it is written.
struct Ent {
    ty: &'static str,
    id: String,
    ts: String,
    /// Members after `type`, `id`, `parentId`, `timestamp`.
    body: Vec<(Key, J)>,
    /// A Claude Code line without a `uuid` (spliced into the chain).
    no_uuid: bool,
    /// A `message` entry.
    is_msg: bool,
}

impl Ent {
    fn custom(id: String, ts: String, custom_type: &str, line: &J) -> Ent {
        Ent {
            ty: "custom",
            id,
            ts,
            body: vec![
                ("customType".into(), J::s(custom_type)),
                ("data".into(), line.clone()),
            ],
            no_uuid: false,
            is_msg: false,
        }
    }

    fn message(id: String, ts: String, msg: J) -> Ent {
        Ent {
            ty: "message",
            id,
            ts,
            body: vec![("message".into(), msg)],
            no_uuid: false,
            is_msg: true,
        }
    }

    fn compaction(id: String, ts: String, summary: J, tokens_before: u64, line: &J) -> Ent {
        // Keeps nothing from before the compaction: pi emits the entries before
        // it from `firstKeptEntryId` on, and no entry before it has this id.
        let first_kept = J::s(&id);
        Ent {
            ty: "compaction",
            id,
            ts,
            body: vec![
                ("summary".into(), summary),
                ("firstKeptEntryId".into(), first_kept),
                ("tokensBefore".into(), num(tokens_before)),
                ("data".into(), line.clone()),
            ],
            no_uuid: false,
            is_msg: false,
        }
    }

    fn message_mut(&mut self) -> Option<&mut J> {
        self.body
            .iter_mut()
            .find(|(k, _)| &**k == "message")
            .map(|(_, v)| v)
    }
}

fn write_out(head: &J, ents: &[Ent], par: &[Par]) -> String {
    let mut out = String::new();
    head.write(&mut out);
    out.push('\n');
    for (e, p) in ents.iter().zip(par) {
        let parent = match p {
            Par::Root => J::Null,
            Par::Idx(j) => J::s(&ents[*j].id),
            Par::Dangling(s) => J::s(s),
        };
        let mut members = Vec::with_capacity(4 + e.body.len());
        members.push(("type".into(), J::s(e.ty)));
        members.push(("id".into(), J::s(&e.id)));
        members.push(("parentId".into(), parent));
        members.push(("timestamp".into(), J::s(&e.ts)));
        members.extend(e.body.iter().cloned());
        J::Obj(members).write(&mut out);
        out.push('\n');
    }
    out
}

/// Cuts parent cycles, each at its earliest entry; returns how many.
fn break_cycles(par: &mut [Par]) -> u64 {
    let n = par.len();
    let mut state = vec![0u8; n]; // 0 new, 1 on the current walk, 2 done
    let mut walk = Vec::new();
    let mut broken = 0;
    for i in 0..n {
        if state[i] != 0 {
            continue;
        }
        walk.clear();
        let mut j = Some(i);
        while let Some(k) = j {
            if state[k] != 0 {
                break;
            }
            state[k] = 1;
            walk.push(k);
            j = match par[k] {
                Par::Idx(p) => Some(p),
                _ => None,
            };
        }
        if let Some(k) = j
            && state[k] == 1
        {
            let pos = walk.iter().position(|&w| w == k).unwrap_or(0);
            if let Some(&cut) = walk[pos..].iter().min() {
                par[cut] = Par::Root;
                broken += 1;
            }
        }
        for &w in &walk {
            state[w] = 2;
        }
    }
    broken
}

/// Children of each entry, in index order.
fn children(par: &[Par]) -> Vec<Vec<usize>> {
    let mut ch = vec![Vec::new(); par.len()];
    for (i, p) in par.iter().enumerate() {
        if let Par::Idx(j) = p {
            ch[*j].push(i);
        }
    }
    ch
}

// ---------------------------------------------------------------- Claude Code

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cc {
    User,
    Assistant,
    Boundary,
    Custom,
}

/// A parent not yet resolved to an output index.
enum PRef {
    Root,
    Uuid(String),
    Entry(usize),
    /// The entry before (a line without uuid).
    Prev,
}

/// The user line of tool results only, decoded to entries `head..=tail`.
struct Unit {
    head: usize,
    tail: usize,
    calls: Vec<String>,
}

fn cc_message_ok(v: &J) -> bool {
    v.get("message")
        .and_then(|m| m.get("content"))
        .is_some_and(|c| matches!(c, J::Str(_) | J::Arr(_)))
}

/// Whether the file is itself a subagent transcript: every user and assistant
/// line has `isSidechain: true` (and there is one). Its lines are then the
/// conversation, not side branches of another.
fn cc_sidechain_file(lines: &[Line]) -> bool {
    let mut any = false;
    for l in lines {
        if matches!(l.v.str_of("type").as_deref(), Some("user" | "assistant")) {
            if l.v.get("isSidechain").and_then(J::as_bool) != Some(true) {
                return false;
            }
            any = true;
        }
    }
    any
}

fn cc_kind(v: &J, sidechain_file: bool) -> Cc {
    if !sidechain_file && v.get("isSidechain").and_then(J::as_bool) == Some(true) {
        return Cc::Custom;
    }
    match v.str_of("type").as_deref() {
        Some("user") if cc_message_ok(v) => Cc::User,
        Some("assistant") if cc_message_ok(v) => Cc::Assistant,
        Some("system") if v.is("subtype", "compact_boundary") => Cc::Boundary,
        _ => Cc::Custom,
    }
}

fn cc_custom_type(v: &J) -> String {
    format!(
        "claude-code.{}",
        v.str_of("type").as_deref().unwrap_or("unknown")
    )
}

/// The text of a Claude Code message's content (string, or text blocks joined by newlines).
fn content_text(content: Option<&J>) -> Option<String> {
    match content? {
        c @ J::Str(_) => c.as_str().map(|s| s.into_owned()),
        J::Arr(blocks) => {
            let parts: Vec<String> = blocks
                .iter()
                .filter(|b| b.is("type", "text"))
                .filter_map(|b| b.str_of("text").map(|s| s.into_owned()))
                .collect();
            (!parts.is_empty()).then(|| parts.join("\n"))
        }
        _ => None,
    }
}

fn cc_stop_reason(stop: Option<&str>, has_calls: bool) -> &'static str {
    match stop {
        Some("tool_use") => "toolUse",
        Some("max_tokens") => "length",
        Some(_) => "stop",
        None if has_calls => "toolUse",
        None => "stop",
    }
}

fn cc_usage(u: Option<&J>) -> J {
    let u = u.unwrap_or(&J::Null);
    usage(
        num_u64(u.get("input_tokens")),
        num_u64(u.get("output_tokens")),
        num_u64(u.get("cache_read_input_tokens")),
        num_u64(u.get("cache_creation_input_tokens")),
        None,
    )
}

/// The assistant message of a group of lines sharing `message.id` (file order).
fn cc_assistant(dec: &mut AnthropicDecoder, lines: &[&J], ts: &str) -> Result<J> {
    let mut blocks = Vec::new();
    for v in lines {
        match v.pointer("/message/content") {
            Some(J::Arr(a)) => blocks.extend(a.iter().cloned()),
            Some(s @ J::Str(_)) => {
                blocks.push(J::obj([("type", J::s("text")), ("text", s.clone())]))
            }
            _ => {}
        }
    }
    let first = lines[0].get("message").cloned().unwrap_or(J::Null);
    let last_with = |key: &str| {
        lines
            .iter()
            .rev()
            .filter_map(|v| v.get("message").and_then(|m| m.get(key)))
            .find(|x| !matches!(x, J::Null))
            .cloned()
    };
    dec.set_model(str_member(&first, "model"));
    let mut msgs = dec.message(&J::obj([
        ("role", J::s("assistant")),
        ("content", J::Arr(blocks)),
    ]))?;
    if msgs.len() != 1 {
        return Err(Error::invalid_input(
            "an assistant message decoded to several messages",
        ));
    }
    let mut msg = msgs.remove(0);
    if let Some(id) = str_member(&first, "id") {
        msg.set("responseId", id);
    }
    msg.set("usage", cc_usage(last_with("usage").as_ref()));
    let is_error = lines
        .iter()
        .any(|v| v.get("isApiErrorMessage").and_then(J::as_bool) == Some(true));
    let stop = last_with("stop_reason");
    let reason = if is_error {
        "error"
    } else {
        cc_stop_reason(
            stop.as_ref().and_then(J::as_str).as_deref(),
            has_tool_call(&msg),
        )
    };
    msg.set("stopReason", J::s(reason));
    if is_error {
        let text = lines
            .iter()
            .filter_map(|v| content_text(v.pointer("/message/content")))
            .collect::<Vec<_>>()
            .join("\n");
        msg.set("errorMessage", J::s(&text));
    }
    stamp(&mut msg, ts);
    Ok(msg)
}

fn claude_code(
    lines: &[Line],
    session_id: &str,
    source_id: Option<String>,
    now_iso: &str,
) -> (String, Stats) {
    let mut stats = Stats::default();
    let header_ts = lines
        .iter()
        .find_map(|l| line_ts(&l.v))
        .unwrap_or_else(|| now_iso.to_string());
    let cwd = lines.iter().find_map(|l| str_member(&l.v, "cwd"));
    let mut from = J::obj([("format", J::s("claude-code"))]);
    if let Some(sid) = source_id {
        from.set("sessionId", J::s(&sid));
    }
    let head = header(session_id, &header_ts, cwd, from);

    // Classify the lines.
    let n = lines.len();
    let uuid: Vec<Option<String>> = lines
        .iter()
        .map(|l| {
            l.v.str_of("uuid")
                .filter(|u| !u.is_empty())
                .map(|u| u.into_owned())
        })
        .collect();
    let sidechain_file = cc_sidechain_file(lines);
    let mut kind: Vec<Cc> = lines
        .iter()
        .map(|l| cc_kind(&l.v, sidechain_file))
        .collect();
    let mut ids = Ids::default();
    let mut dup = vec![false; n];
    {
        let mut seen = HashSet::new();
        for (i, u) in uuid.iter().enumerate() {
            if let Some(u) = u
                && !seen.insert(u.clone())
            {
                dup[i] = true;
                kind[i] = Cc::Custom;
                stats.duplicate_ids += 1;
            }
        }
        ids.used = seen;
    }

    // Assistant lines of one API response share `message.id`.
    let mut group_of_key: HashMap<String, usize> = HashMap::new();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut group: Vec<Option<usize>> = vec![None; n];
    for i in 0..n {
        if kind[i] != Cc::Assistant {
            continue;
        }
        let g = match lines[i].v.pointer("/message/id").and_then(J::as_str) {
            Some(key) => *group_of_key.entry(key.into_owned()).or_insert_with(|| {
                groups.push(Vec::new());
                groups.len() - 1
            }),
            None => {
                groups.push(Vec::new());
                groups.len() - 1
            }
        };
        groups[g].push(i);
        group[i] = Some(g);
    }

    // The summary line of each compact boundary: its child with
    // `isCompactSummary`, else the next such line before the next boundary.
    let mut summary_of: HashMap<usize, usize> = HashMap::new();
    {
        let boundary_by_uuid: HashMap<&str, usize> = (0..n)
            .filter(|&i| kind[i] == Cc::Boundary)
            .filter_map(|i| uuid[i].as_deref().map(|u| (u, i)))
            .collect();
        let is_summary = |i: usize| {
            kind[i] == Cc::User
                && lines[i].v.get("isCompactSummary").and_then(J::as_bool) == Some(true)
        };
        let mut taken = HashSet::new();
        for i in (0..n).filter(|&i| is_summary(i)) {
            if let Some(&b) = lines[i]
                .v
                .str_of("parentUuid")
                .and_then(|p| boundary_by_uuid.get(p.as_ref()))
                && !summary_of.contains_key(&b)
            {
                summary_of.insert(b, i);
                taken.insert(i);
            }
        }
        for b in (0..n).filter(|&i| kind[i] == Cc::Boundary) {
            if summary_of.contains_key(&b) {
                continue;
            }
            let next = (b + 1..n)
                .take_while(|&i| kind[i] != Cc::Boundary)
                .find(|&i| is_summary(i) && !taken.contains(&i));
            if let Some(s) = next {
                summary_of.insert(b, s);
                taken.insert(s);
            }
        }
        for &s in summary_of.values() {
            kind[s] = Cc::Custom;
        }
    }

    // Entries in file order.
    let mut dec = AnthropicDecoder::new(None);
    let mut ents: Vec<Ent> = Vec::with_capacity(n);
    let mut prefs: Vec<PRef> = Vec::with_capacity(n);
    let mut id_of: HashMap<String, usize> = HashMap::new();
    let mut group_entry: HashMap<usize, usize> = HashMap::new();
    let mut group_failed: HashSet<usize> = HashSet::new();
    let mut units: Vec<Unit> = Vec::new();
    let mut calls_of: HashMap<usize, HashSet<String>> = HashMap::new();
    let mut last_ts = header_ts.clone();
    for i in 0..n {
        let v = &lines[i].v;
        let ts = line_ts(v).unwrap_or_else(|| last_ts.clone());
        last_ts = ts.clone();
        let own = uuid[i].clone().filter(|_| !dup[i]);
        let head_ref = || match (&uuid[i], v.str_of("parentUuid")) {
            (None, _) => PRef::Prev,
            (Some(_), Some(p)) => PRef::Uuid(p.into_owned()),
            (Some(_), None) => PRef::Root,
        };
        let new_id = |ids: &mut Ids| match (&uuid[i], dup[i]) {
            (Some(u), false) => u.clone(),
            (Some(u), true) => ids.fresh(&format!("{u}:dup")),
            (None, _) => ids.fresh(&format!("{:08x}", lines[i].no)),
        };
        let mut k = kind[i];

        if k == Cc::Assistant
            && let Some(g) = group[i]
        {
            if let Some(&e) = group_entry.get(&g) {
                if let Some(u) = &own {
                    id_of.insert(u.clone(), e);
                }
                continue;
            }
            if !group_failed.contains(&g) {
                let members: Vec<&J> = groups[g].iter().map(|&j| &lines[j].v).collect();
                match cc_assistant(&mut dec, &members, &ts) {
                    Ok(msg) => {
                        let idx = ents.len();
                        calls_of.insert(idx, tool_call_ids(&msg));
                        let mut ent = Ent::message(new_id(&mut ids), ts, msg);
                        ent.no_uuid = uuid[i].is_none();
                        ents.push(ent);
                        prefs.push(head_ref());
                        group_entry.insert(g, idx);
                        if let Some(u) = &own {
                            id_of.insert(u.clone(), idx);
                        }
                        continue;
                    }
                    Err(_) => {
                        group_failed.insert(g);
                    }
                }
            }
            k = Cc::Custom;
        }

        if k == Cc::User {
            let m = v.get("message").cloned().unwrap_or(J::Null);
            let plain = J::obj([
                ("role", J::s("user")),
                ("content", m.get("content").cloned().unwrap_or(J::Null)),
            ]);
            match dec.message(&plain) {
                Ok(msgs) if !msgs.is_empty() => {
                    let results_only = msgs.iter().all(|m| role(m) == "toolResult");
                    let calls: Vec<String> = msgs
                        .iter()
                        .filter_map(|m| m.str_of("toolCallId").map(|s| s.into_owned()))
                        .collect();
                    let head = ents.len();
                    let first_id = new_id(&mut ids);
                    for (j, mut msg) in msgs.into_iter().enumerate() {
                        stamp(&mut msg, &ts);
                        let id = if j == 0 {
                            first_id.clone()
                        } else {
                            ids.fresh(&format!("{first_id}:{j}"))
                        };
                        let mut ent = Ent::message(id, ts.clone(), msg);
                        if j == 0 {
                            ent.no_uuid = uuid[i].is_none();
                            prefs.push(head_ref());
                        } else {
                            prefs.push(PRef::Entry(ents.len() - 1));
                        }
                        ents.push(ent);
                    }
                    let tail = ents.len() - 1;
                    if let Some(u) = &own {
                        id_of.insert(u.clone(), tail);
                    }
                    if results_only && uuid[i].is_some() {
                        units.push(Unit { head, tail, calls });
                    }
                    continue;
                }
                _ => k = Cc::Custom,
            }
        }

        let idx = ents.len();
        let id = new_id(&mut ids);
        let mut ent = if k == Cc::Boundary {
            let summary = summary_of
                .get(&i)
                .and_then(|&s| content_text(lines[s].v.pointer("/message/content")))
                .or_else(|| v.str_of("content").map(|s| s.into_owned()))
                .unwrap_or_default();
            let tokens = num_u64(v.pointer("/compactMetadata/preTokens"));
            Ent::compaction(id, ts, J::s(&summary), tokens, v)
        } else {
            Ent::custom(id, ts, &cc_custom_type(v), v)
        };
        ent.no_uuid = uuid[i].is_none();
        ents.push(ent);
        let pref = if k == Cc::Boundary && uuid[i].is_some() && v.str_of("parentUuid").is_none() {
            match v.str_of("logicalParentUuid") {
                Some(p) => PRef::Uuid(p.into_owned()),
                None => PRef::Root,
            }
        } else {
            head_ref()
        };
        prefs.push(pref);
        if let Some(u) = &own {
            id_of.insert(u.clone(), idx);
        }
    }

    // Resolve parents.
    let mut par: Vec<Par> = prefs
        .iter()
        .enumerate()
        .map(|(i, p)| match p {
            PRef::Root => Par::Root,
            PRef::Entry(j) => Par::Idx(*j),
            PRef::Prev if i == 0 => Par::Root,
            PRef::Prev => Par::Idx(i - 1),
            PRef::Uuid(u) => match id_of.get(u) {
                Some(&j) => Par::Idx(j),
                None => Par::Dangling(u.clone()),
            },
        })
        .collect();
    stats.broken_cycles = break_cycles(&mut par);
    stats.rechained_results = rechain_results(&ents, &mut par, &units, &calls_of);
    splice_metadata(&ents, &mut par);
    stats.orphans = par.iter().filter(|p| matches!(p, Par::Dangling(_))).count() as u64;
    (write_out(&head, &ents, &par), stats)
}

/// Claude Code writes the results of parallel tool calls as sibling branches
/// (each under the line of its own `tool_use` block) and continues the
/// conversation under one of them only, so the path from the leaf would miss
/// the others (and Claude Code's own resume loses them). Results of one
/// assistant message whose branches hold no further messages are moved into
/// one chain, in file order, ending with the result the conversation
/// continues from. Returns how many were moved.
fn rechain_results(
    ents: &[Ent],
    par: &mut [Par],
    units: &[Unit],
    calls_of: &HashMap<usize, HashSet<String>>,
) -> u64 {
    if units.len() < 2 {
        return 0;
    }
    let ch = children(par);
    // Whether an entry's subtree (itself excluded) holds a message: children
    // are visited before parents in reverse depth-first preorder.
    let n = ents.len();
    let mut order = Vec::with_capacity(n);
    let mut stack: Vec<usize> = (0..n).filter(|&i| !matches!(par[i], Par::Idx(_))).collect();
    while let Some(i) = stack.pop() {
        order.push(i);
        stack.extend(ch[i].iter().copied());
    }
    let mut below = vec![false; n];
    for &i in order.iter().rev() {
        below[i] = ch[i].iter().any(|&c| ents[c].is_msg || below[c]);
    }
    let unit_at: HashMap<usize, &Unit> = units.iter().map(|u| (u.head, u)).collect();
    let mut moved = 0;
    let mut owners: Vec<&usize> = calls_of.keys().collect();
    owners.sort_unstable();
    for &m in owners {
        let calls = &calls_of[&m];
        if calls.len() < 2 {
            continue;
        }
        let results: Vec<&Unit> = ch[m]
            .iter()
            .filter_map(|c| unit_at.get(c).copied())
            .filter(|u| !u.calls.is_empty() && u.calls.iter().all(|c| calls.contains(c)))
            .collect();
        if results.len() < 2 {
            continue;
        }
        let main = results
            .iter()
            .rposition(|u| below[u.tail])
            .unwrap_or(results.len() - 1);
        let mut chain: Vec<&Unit> = results
            .iter()
            .enumerate()
            .filter(|&(k, u)| k != main && !below[u.tail])
            .map(|(_, u)| *u)
            .collect();
        if chain.is_empty() {
            continue;
        }
        chain.push(results[main]);
        for w in chain.windows(2) {
            par[w[1].head] = Par::Idx(w[0].tail);
            moved += 1;
        }
    }
    moved
}

/// Lines without a `uuid` (file-history snapshots, queue operations, titles…)
/// hang under the entry before them; the next entry that had that same parent
/// moves under them, so they sit inside the chain instead of adding leaves.
fn splice_metadata(ents: &[Ent], par: &mut [Par]) {
    let n = ents.len();
    let forward = par
        .iter()
        .enumerate()
        .any(|(i, p)| matches!(p, Par::Idx(j) if *j > i));
    let ch = children(par);
    let roots: Vec<usize> = (0..n).filter(|&i| par[i] == Par::Root).collect();
    let mut i = 0;
    while i < n {
        if !ents[i].no_uuid {
            i += 1;
            continue;
        }
        let start = i;
        while i + 1 < n && ents[i + 1].no_uuid {
            i += 1;
        }
        let end = i;
        i += 1;
        let siblings = if start == 0 { &roots } else { &ch[start - 1] };
        let at = siblings.partition_point(|&j| j <= end);
        let Some(&j) = siblings[at..].iter().find(|&&j| !ents[j].no_uuid) else {
            continue;
        };
        if forward && is_ancestor(par, j, end) {
            continue;
        }
        par[j] = Par::Idx(end);
    }
}

/// Whether `a` is `b` or one of its ancestors.
fn is_ancestor(par: &[Par], a: usize, mut b: usize) -> bool {
    for _ in 0..=par.len() {
        if a == b {
            return true;
        }
        match par[b] {
            Par::Idx(p) => b = p,
            _ => return false,
        }
    }
    false
}

// ---------------------------------------------------------------- Codex

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cx {
    /// Model output: assistant messages, reasoning, tool calls.
    Assistant,
    User,
    /// A tool's output.
    Output,
    /// Developer/system messages and items without a message form.
    Other,
}

fn codex_kind(item: &J) -> Cx {
    match item.str_of("type").as_deref() {
        Some("message") | None => match item.str_of("role").as_deref() {
            Some("assistant") => Cx::Assistant,
            Some("user") => Cx::User,
            _ => Cx::Other,
        },
        Some("function_call_output" | "custom_tool_call_output") => Cx::Output,
        Some("reasoning") => Cx::Assistant,
        Some(t) if t.ends_with("_call") => Cx::Assistant,
        _ => Cx::Other,
    }
}

/// Usage from a Codex `token_count` event's `info.last_token_usage`.
fn codex_usage(u: &J) -> J {
    let input = num_u64(u.get("input_tokens"));
    let cached = num_u64(u.get("cached_input_tokens"));
    let output = num_u64(u.get("output_tokens"));
    let total = u.get("total_tokens").map(|t| num_u64(Some(t)));
    usage(input.saturating_sub(cached), output, cached, 0, total)
}

/// The text of Responses message items (`input_text` / `output_text` parts).
fn items_text(items: &[J]) -> String {
    let mut parts = Vec::new();
    for it in items {
        match it.get("content") {
            Some(s @ J::Str(_)) => parts.extend(s.as_str().map(|s| s.into_owned())),
            Some(J::Arr(a)) => parts.extend(
                a.iter()
                    .filter_map(|p| p.str_of("text").map(|s| s.into_owned())),
            ),
            _ => {}
        }
    }
    parts.join("\n\n")
}

/// The `event_msg` `user_message` lines whose text a `response_item` user
/// message of the same turn also carries (between the model output or tool
/// output before the event and the next one): those stay `custom` entries.
fn codex_carried_user_events(lines: &[Line]) -> HashSet<usize> {
    let item = |k: usize| {
        lines[k]
            .v
            .is("type", "response_item")
            .then(|| lines[k].v.get("payload").filter(|p| p.is_obj()))
            .flatten()
    };
    let output =
        |k: usize| item(k).is_some_and(|p| matches!(codex_kind(p), Cx::Assistant | Cx::Output));
    let mut carried = HashSet::new();
    for k in 0..lines.len() {
        let v = &lines[k].v;
        let Some(p) = v.get("payload").filter(|_| v.is("type", "event_msg")) else {
            continue;
        };
        if !p.is("type", "user_message") {
            continue;
        }
        let text = p.str_of("message").unwrap_or_default();
        let from = (0..k).rev().find(|&j| output(j)).map_or(0, |j| j + 1);
        let to = (k + 1..lines.len())
            .find(|&j| output(j))
            .unwrap_or(lines.len());
        let same = (from..to).any(|j| {
            item(j).is_some_and(|it| {
                codex_kind(it) == Cx::User
                    && items_text(std::slice::from_ref(it)).trim() == text.trim()
            })
        });
        if same {
            carried.insert(k);
        }
    }
    carried
}

/// A Responses user message for an `event_msg` `user_message` (its text and
/// images), or `None` when it has neither.
fn codex_user_item(p: &J) -> Option<J> {
    let mut parts = Vec::new();
    if let Some(t) = p
        .get("message")
        .filter(|t| t.as_str().is_some_and(|t| !t.is_empty()))
    {
        parts.push(J::obj([("type", J::s("input_text")), ("text", t.clone())]));
    }
    for img in p.get("images").and_then(J::as_arr).into_iter().flatten() {
        if matches!(img, J::Str(_)) {
            parts.push(J::obj([
                ("type", J::s("input_image")),
                ("image_url", img.clone()),
            ]));
        }
    }
    (!parts.is_empty()).then(|| {
        J::obj([
            ("type", J::s("message")),
            ("role", J::s("user")),
            ("content", J::Arr(parts)),
        ])
    })
}

struct CodexState {
    dec: ResponsesDecoder,
    ids: Ids,
    /// Output in slots (a slot may hold several entries, or be reserved for a group).
    slots: Vec<Vec<Ent>>,
    /// The open group of assistant-side items: slot, line indices, usage seen meanwhile.
    group: Option<(usize, Vec<usize>, Option<J>)>,
    /// The last assistant message (slot) and whether it has usage from an event.
    last_assistant: Option<(usize, bool)>,
    /// `total_tokens` of the newest `token_count` event.
    last_total: u64,
    /// Names of custom tool calls by call id.
    custom_names: HashMap<String, String>,
}

impl CodexState {
    fn close(&mut self, lines: &[Line], ts_of: &[String]) {
        let Some((slot, items, usage_seen)) = self.group.take() else {
            return;
        };
        let payloads: Vec<J> = items
            .iter()
            .filter_map(|&k| lines[k].v.get("payload").cloned())
            .collect();
        let first = items[0];
        let ts = ts_of[first].clone();
        match self.dec.items(&payloads) {
            Ok(mut msgs) if msgs.len() == 1 && role(&msgs[0]) == "assistant" => {
                let mut msg = msgs.remove(0);
                let has_usage = usage_seen.is_some();
                msg.set(
                    "usage",
                    usage_seen.unwrap_or_else(|| usage(0, 0, 0, 0, None)),
                );
                let reason = if has_tool_call(&msg) {
                    "toolUse"
                } else {
                    "stop"
                };
                msg.set("stopReason", J::s(reason));
                stamp(&mut msg, &ts);
                let id = self.ids.fresh(&format!("{:08x}", lines[first].no));
                self.slots[slot] = vec![Ent::message(id, ts, msg)];
                self.last_assistant = Some((slot, has_usage));
            }
            _ => {
                self.slots[slot] = items
                    .iter()
                    .map(|&k| {
                        let id = self.ids.fresh(&format!("{:08x}", lines[k].no));
                        Ent::custom(id, ts_of[k].clone(), "codex.response_item", &lines[k].v)
                    })
                    .collect();
            }
        }
    }

    /// A user message or tool output as message entries (custom if it does not decode).
    fn single(&mut self, line: &Line, ts: &str, item: &J) -> Vec<Ent> {
        let mut it = item.clone();
        let custom_output = item.is("type", "custom_tool_call_output");
        if custom_output {
            it.set("type", J::s("function_call_output"));
        }
        if let Some(out) = it.get("output")
            && !matches!(out, J::Str(_) | J::Arr(_))
        {
            let text = out.text();
            it.set("output", J::s(&text));
        }
        let base = format!("{:08x}", line.no);
        match self.dec.items(std::slice::from_ref(&it)) {
            Ok(msgs)
                if !msgs.is_empty()
                    && msgs
                        .iter()
                        .all(|m| matches!(role(m).as_ref(), "user" | "toolResult")) =>
            {
                let first = self.ids.fresh(&base);
                msgs.into_iter()
                    .enumerate()
                    .map(|(j, mut msg)| {
                        if role(&msg) == "toolResult"
                            && msg.str_of("toolName").is_some_and(|n| n.is_empty())
                        {
                            let name = msg
                                .str_of("toolCallId")
                                .and_then(|c| self.custom_names.get(c.as_ref()).cloned());
                            if let Some(name) = name {
                                msg.set("toolName", J::s(&name));
                            }
                        }
                        stamp(&mut msg, ts);
                        let id = if j == 0 {
                            first.clone()
                        } else {
                            self.ids.fresh(&format!("{first}:{j}"))
                        };
                        Ent::message(id, ts.to_string(), msg)
                    })
                    .collect()
            }
            _ => vec![Ent::custom(
                self.ids.fresh(&base),
                ts.to_string(),
                "codex.response_item",
                &line.v,
            )],
        }
    }
}

fn codex(
    lines: &[Line],
    session_id: &str,
    source_id: Option<String>,
    now_iso: &str,
) -> (String, Stats) {
    let meta = lines
        .iter()
        .find(|l| l.v.is("type", "session_meta"))
        .and_then(|l| l.v.get("payload"));
    let header_ts = meta
        .and_then(line_ts)
        .or_else(|| lines.iter().find_map(|l| line_ts(&l.v)))
        .unwrap_or_else(|| now_iso.to_string());
    let cwd = meta.and_then(|m| str_member(m, "cwd"));
    let mut from = J::obj([("format", J::s("codex"))]);
    if let Some(id) = source_id {
        from.set("sessionId", J::s(&id));
    }
    let head = header(session_id, &header_ts, cwd, from);

    let mut ts_of = Vec::with_capacity(lines.len());
    let mut last = header_ts.clone();
    for l in lines {
        if let Some(t) = line_ts(&l.v) {
            last = t;
        }
        ts_of.push(last.clone());
    }

    let carried = codex_carried_user_events(lines);
    let mut st = CodexState {
        dec: ResponsesDecoder::new(None),
        ids: Ids::default(),
        slots: Vec::new(),
        group: None,
        last_assistant: None,
        last_total: 0,
        custom_names: HashMap::new(),
    };
    for (k, line) in lines.iter().enumerate() {
        let v = &line.v;
        let ts = ts_of[k].clone();
        let ty = v.str_of("type").map(|t| t.into_owned());
        let payload = v.get("payload").filter(|p| p.is_obj());
        let custom_type = format!("codex.{}", ty.as_deref().unwrap_or("unknown"));
        match (ty.as_deref(), payload) {
            (Some("response_item"), Some(item)) => match codex_kind(item) {
                Cx::Assistant => {
                    if item.is("type", "custom_tool_call")
                        && let (Some(c), Some(nm)) = (item.str_of("call_id"), item.str_of("name"))
                    {
                        st.custom_names.insert(c.into_owned(), nm.into_owned());
                    }
                    match &mut st.group {
                        Some((_, items, _)) => items.push(k),
                        None => {
                            st.slots.push(Vec::new());
                            st.group = Some((st.slots.len() - 1, vec![k], None));
                        }
                    }
                }
                Cx::User | Cx::Output => {
                    st.close(lines, &ts_of);
                    let ents = st.single(line, &ts, item);
                    st.slots.push(ents);
                }
                Cx::Other => {
                    st.close(lines, &ts_of);
                    let id = st.ids.fresh(&format!("{:08x}", line.no));
                    st.slots.push(vec![Ent::custom(id, ts, &custom_type, v)]);
                }
            },
            (Some("event_msg"), Some(p))
                if p.is("type", "user_message")
                    && !carried.contains(&k)
                    && let Some(item) = codex_user_item(p) =>
            {
                // A user turn written only as an event: the message it stands for.
                st.close(lines, &ts_of);
                let ents = st.single(line, &ts, &item);
                st.slots.push(ents);
            }
            (Some("event_msg"), _) => {
                if let Some(p) = payload
                    && p.is("type", "token_count")
                    && let Some(u) = p.pointer("/info/last_token_usage")
                {
                    let us = codex_usage(u);
                    st.last_total = num_u64(us.get("totalTokens"));
                    if let Some((_, _, seen)) = &mut st.group {
                        *seen = Some(us);
                    } else if let Some((slot, false)) = st.last_assistant {
                        if let Some(m) = st.slots[slot].first_mut().and_then(Ent::message_mut) {
                            m.set("usage", us);
                        }
                        st.last_assistant = Some((slot, true));
                    }
                }
                let id = st.ids.fresh(&format!("{:08x}", line.no));
                st.slots.push(vec![Ent::custom(id, ts, &custom_type, v)]);
            }
            (Some("compacted"), _) => {
                st.close(lines, &ts_of);
                let p = payload.unwrap_or(&J::Null);
                let summary = p
                    .str_of("message")
                    .filter(|m| !m.trim().is_empty())
                    .map(|m| m.into_owned())
                    .unwrap_or_else(|| {
                        p.get("replacement_history")
                            .and_then(J::as_arr)
                            .map(|a| items_text(a))
                            .unwrap_or_default()
                    });
                let id = st.ids.fresh(&format!("{:08x}", line.no));
                st.slots.push(vec![Ent::compaction(
                    id,
                    ts,
                    J::s(&summary),
                    st.last_total,
                    v,
                )]);
            }
            _ => {
                st.close(lines, &ts_of);
                if ty.as_deref() == Some("turn_context")
                    && let Some(m) = payload.and_then(|p| str_member(p, "model"))
                {
                    st.dec.set_model(Some(m));
                }
                let id = st.ids.fresh(&format!("{:08x}", line.no));
                st.slots.push(vec![Ent::custom(id, ts, &custom_type, v)]);
            }
        }
    }
    st.close(lines, &ts_of);
    let ents: Vec<Ent> = st.slots.into_iter().flatten().collect();
    let par: Vec<Par> = (0..ents.len())
        .map(|i| if i == 0 { Par::Root } else { Par::Idx(i - 1) })
        .collect();
    (write_out(&head, &ents, &par), Stats::default())
}
