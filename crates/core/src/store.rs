//! Sessions kept in a key-value storage: IndexedDB in browsers (crates/wasm),
//! memory in tests. The storage is the [`Storage`] trait; everything else —
//! import, chunking, the resume hint, appends through the writer's state
//! machine, forks, exports, checkpoints — is here, once, so every backend
//! behaves the same (FORMAT.md §16). A checkpoint is an entry of its session,
//! the record an agent writes ([`crate::checkpoint`]).
//!
//! A stored session is its pi v3 JSONL text cut into chunks of whole lines
//! (about [`CHUNK_BYTES`] each), plus one record with its facts, the chunks'
//! offsets and its resume hint. Reading a byte range reads the chunks that
//! cover it, so the lazy loader of [`crate::lazy`] runs unchanged over a
//! stored session. Every change is one atomic [`Commit`] guarded by the
//! record's revision: two handles (two tabs) never interleave their writes.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::checkpoint::{self, CheckpointInfo, Found};
use crate::error::{Error, ErrorCode, Result};
use crate::lazy::{LazyLoader, Step};
use crate::load::CURRENT_VERSION;
use crate::normalize::import::{
    ImportFormat, ImportSummary, detect_with, import_session_with, summary_of,
};
use crate::session::Session;
use crate::time;
use crate::types::{Checkpoint, LazyOptions, LoadOptions, StoredSessionInfo};
use crate::writer::WriterCore;

/// Target size of a chunk of lines. A line longer than this is a chunk alone.
pub const CHUNK_BYTES: usize = 1 << 20;
/// Appends rewrite the last chunk while it stays under this size, then start a
/// new one: an append writes at most this much again.
pub const APPEND_CHUNK: usize = 64 << 10;
/// The version of the session record layout (FORMAT.md §16).
pub const RECORD_VERSION: u32 = 1;
/// Prefix of a stored session's event log names (`session:<id>:<incarnation>`).
pub const EVENTS_PREFIX: &str = "session:";

/// Which bytes of a session a chunk holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Part {
    /// The session's pi v3 JSONL.
    Lines,
    /// The imported file as it came (kept only when it differs from `Lines`:
    /// Claude Code, Codex, gzip, pi v1/v2, a torn or unterminated last line).
    Source,
}

impl Part {
    /// The name used in storage keys.
    pub fn name(self) -> &'static str {
        match self {
            Part::Lines => "lines",
            Part::Source => "source",
        }
    }
}

/// One change inside a [`Commit`].
#[derive(Debug, Clone)]
pub enum Op {
    /// Writes a session record (JSON).
    PutSession { id: String, record: String },
    /// Removes a session record.
    DeleteSession { id: String },
    /// Writes chunk `n` of a part.
    PutChunk {
        id: String,
        part: Part,
        n: u32,
        bytes: Vec<u8>,
    },
    /// Removes the chunks of a part numbered `from` and above.
    DeleteChunks { id: String, part: Part, from: u32 },
    /// Removes the checkpoint records forkpoint-web 0.1.0 kept beside a
    /// session (checkpoints are entries of the session now).
    DeleteCheckpoints { id: String },
    /// Removes the session's event logs (every log named
    /// `session:<id>:…`), where the backend keeps them.
    DeleteEvents { id: String },
}

/// What a commit expects of a session's record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// No record (`ALREADY_EXISTS` otherwise).
    Absent,
    /// Any record (`NOT_FOUND` otherwise).
    Present,
    /// This very record: the same incarnation (not deleted and imported again
    /// since) at the same revision (`CONFLICT` otherwise).
    Version { incarnation: u64, revision: u64 },
}

/// Changes applied all together or not at all.
#[derive(Debug, Clone, Default)]
pub struct Commit {
    /// The commit applies only if the session's record is as expected.
    pub guard: Option<(String, Expect)>,
    pub ops: Vec<Op>,
}

/// A record with the whole of one part, as [`Storage::snapshot`] reads them.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The record (JSON).
    pub record: String,
    /// How many chunks there were.
    pub chunks: usize,
    /// The chunks' bytes, concatenated.
    pub bytes: Vec<u8>,
}

/// Where sessions are kept. `async` without a `Send` bound: IndexedDB's
/// futures live on the browser's one thread.
#[allow(async_fn_in_trait)]
pub trait Storage {
    /// Every session record as `(id, JSON)`, in any order.
    async fn session_records(&self) -> Result<Vec<(String, String)>>;
    /// One session record, if it exists.
    async fn session_record(&self, id: &str) -> Result<Option<String>>;
    /// A session's record and every chunk of one part, in order, read at one
    /// moment (`None`: no such session).
    async fn snapshot(&self, id: &str, part: Part) -> Result<Option<Snapshot>>;
    /// The session's record and chunks `from..to` of a part, in order, read at
    /// one moment (`None`: no such session; a missing chunk is `CORRUPTED_DATA`).
    async fn chunks(
        &self,
        id: &str,
        part: Part,
        from: u32,
        to: u32,
    ) -> Result<Option<(String, Vec<Vec<u8>>)>>;
    /// The checkpoint records forkpoint-web 0.1.0 kept beside its sessions
    /// (`(sessionId, JSON)`), of one session or of all; new ones are never
    /// written (FORMAT.md §16.1).
    async fn legacy_checkpoints(&self, id: Option<&str>) -> Result<Vec<(String, String)>>;
    /// Applies a commit atomically.
    async fn commit(&self, commit: Commit) -> Result<()>;
    /// Waits before try `attempt + 1` of a change that lost a conflict (a
    /// random while that grows with `attempt`). Memory storage: no wait.
    async fn backoff(&self, attempt: u32) {
        let _ = attempt;
    }
}

/// Checks an id used as a key or a directory name:
/// `[A-Za-z0-9][A-Za-z0-9._-]{0,127}`, no `..`, not a reserved device name
/// (`INVALID_ID` otherwise). `what` names the id in the message.
pub fn validate_id(id: &str, what: &str) -> Result<()> {
    const RESERVED: [&str; 22] = [
        "CON", "PRN", "AUX", "NUL", "COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7", "COM8",
        "COM9", "LPT1", "LPT2", "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9",
    ];
    let bad = |why: &str| {
        Err(Error::new(
            ErrorCode::InvalidId,
            format!("invalid {what} id {id:?}: {why}"),
        ))
    };
    let b = id.as_bytes();
    if b.is_empty() || b.len() > 128 {
        return bad("an id is 1 to 128 characters");
    }
    if !b[0].is_ascii_alphanumeric() {
        return bad("an id starts with a letter or a digit");
    }
    if !b
        .iter()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
    {
        return bad("an id has only letters, digits, '.', '_' and '-'");
    }
    if id.contains("..") {
        return bad("an id has no '..'");
    }
    let stem = id.split('.').next().unwrap_or("").to_ascii_uppercase();
    if RESERVED.contains(&stem.as_str()) {
        return bad("a reserved device name");
    }
    Ok(())
}

/// The stored record of a session (FORMAT.md §16).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord {
    /// [`RECORD_VERSION`].
    pub record_version: u32,
    pub info: StoredSessionInfo,
    /// Byte offset where each `Lines` chunk starts (the first is 0).
    pub chunks: Vec<u64>,
    /// Number of `Source` chunks (0: the source is the `Lines` text itself).
    pub source_chunks: u32,
    /// The resume hint for lazy loading (FORMAT.md, "Resume hint").
    pub hint: Option<String>,
    /// Incremented by every change.
    pub revision: u64,
    /// Drawn at random when the session is created: a session deleted and
    /// imported again under the same id is another incarnation.
    #[serde(default)]
    pub incarnation: u64,
}

impl SessionRecord {
    fn parse(text: &str, id: &str) -> Result<SessionRecord> {
        let newer = |v: u64| {
            Error::unsupported(format!(
                "session {id:?} was stored by a newer forkpoint (record version {v})"
            ))
        };
        match serde_json::from_str::<SessionRecord>(text) {
            Ok(r) if r.record_version > RECORD_VERSION => Err(newer(r.record_version.into())),
            Ok(mut r) => {
                if r.info.log_name.is_empty() {
                    r.info.log_name = format!("{EVENTS_PREFIX}{}:{}", r.info.id, r.incarnation);
                }
                Ok(r)
            }
            Err(e) => {
                // A newer layout may not parse as this one: say so rather than "damaged".
                let v = serde_json::from_str::<serde_json::Value>(text)
                    .ok()
                    .and_then(|v| v.get("recordVersion").and_then(|n| n.as_u64()));
                match v {
                    Some(v) if v > u64::from(RECORD_VERSION) => Err(newer(v)),
                    _ => Err(Error::corrupted(format!(
                        "the stored record of session {id:?} is damaged: {e}"
                    ))),
                }
            }
        }
    }

    fn json(&self) -> Result<String> {
        crate::types::to_json_text(self)
    }

    /// The guard of a change computed from this record.
    fn expect(&self) -> Expect {
        Expect::Version {
            incarnation: self.incarnation,
            revision: self.revision,
        }
    }

    /// The chunks covering bytes `offset..offset + len`: `(first, last + 1)`.
    fn cover(&self, offset: u64, len: u64) -> (u32, u32) {
        let end = offset + len.max(1);
        let first = self
            .chunks
            .partition_point(|&s| s <= offset)
            .saturating_sub(1);
        let last = self.chunks.partition_point(|&s| s < end);
        (first as u32, last.max(first + 1) as u32)
    }
}

/// What to import.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// The key to store it under (default: the pi header's id, or for Claude
    /// Code / Codex the id derived from the source,
    /// [`imported_session_id`](crate::normalize::import::imported_session_id)),
    /// so importing the same source twice is `ALREADY_EXISTS` the second time.
    pub id: Option<String>,
    /// Store it under `new_id` (a copy of a session already imported) when no
    /// `id` is given.
    pub copy: bool,
    /// A fresh id (drawn at random by the caller), used when `copy`.
    pub new_id: String,
    pub format: Option<ImportFormat>,
    /// The file name it came from.
    pub source: Option<String>,
    /// A display name (default: the session's own name, else `source`).
    pub name: Option<String>,
    pub now_ms: i64,
    /// Limits for reading the file (gzip is decompressed within them).
    pub limits: crate::LimitOptions,
}

/// Splits JSONL text into chunks of whole lines of about [`CHUNK_BYTES`];
/// returns the chunks and their start offsets.
pub fn split_chunks(text: &[u8]) -> (Vec<Vec<u8>>, Vec<u64>) {
    let mut chunks = Vec::new();
    let mut starts = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + CHUNK_BYTES).min(text.len());
        if end < text.len() {
            // Extend to the end of the line the target falls in.
            end = match memchr::memchr(b'\n', &text[end - 1..]) {
                Some(i) => end + i,
                None => text.len(),
            };
        }
        starts.push(start as u64);
        chunks.push(text[start..end].to_vec());
        start = end;
    }
    if chunks.is_empty() {
        starts.push(0);
        chunks.push(Vec::new());
    }
    (chunks, starts)
}

/// A stored session opened lazily.
#[derive(Debug)]
pub struct StoredLazy {
    pub loader: LazyLoader,
    id: String,
    record: SessionRecord,
    cache: BTreeMap<u32, Vec<u8>>,
    cached_bytes: usize,
    /// Whether a fresh resume hint was stored by this load.
    pub hint_written: bool,
}

/// How many times a change is computed again after another handle's change
/// got in first, before it fails with `CONFLICT`.
const CHANGE_TRIES: u32 = 8;

/// Chunks kept in memory by a lazy session between reads.
const LAZY_CACHE: usize = 32 << 20;

/// An open session's writer, kept between changes while the record's revision
/// is the one it was built from.
struct Open {
    record: SessionRecord,
    writer: WriterCore,
    /// The bytes of the last `Lines` chunk (appends extend it until it is full).
    last_chunk: Vec<u8>,
}

/// Sessions in a [`Storage`].
pub struct Store<S: Storage> {
    storage: S,
    open: RefCell<HashMap<String, Open>>,
    seed: std::cell::Cell<u64>,
}

impl<S: Storage> Store<S> {
    /// A store over `storage`; `seed` seeds the entry-id generator.
    pub fn new(storage: S, seed: u64) -> Self {
        Store {
            storage,
            open: RefCell::new(HashMap::new()),
            seed: std::cell::Cell::new(seed),
        }
    }

    /// The storage underneath.
    pub fn storage(&self) -> &S {
        &self.storage
    }

    fn next_seed(&self) -> u64 {
        let s = self
            .seed
            .get()
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.seed.set(s);
        s
    }

    async fn record(&self, id: &str) -> Result<SessionRecord> {
        match self.storage.session_record(id).await? {
            Some(t) => SessionRecord::parse(&t, id),
            None => Err(no_session(id)),
        }
    }

    /// Every session's facts, most recently changed first. Reads the records only.
    pub async fn list(&self) -> Result<Vec<StoredSessionInfo>> {
        let mut out = Vec::new();
        for (id, t) in self.storage.session_records().await? {
            // A record that cannot be read is listed with its error, so it
            // can be seen and deleted; the others are listed as usual.
            out.push(match SessionRecord::parse(&t, &id) {
                Ok(r) => r.info,
                Err(e) => StoredSessionInfo {
                    id,
                    error: Some(e),
                    ..Default::default()
                },
            });
        }
        out.sort_by(|a, b| b.modified_at.cmp(&a.modified_at).then(a.id.cmp(&b.id)));
        Ok(out)
    }

    /// One session's facts (`NOT_FOUND` if absent).
    pub async fn info(&self, id: &str) -> Result<StoredSessionInfo> {
        Ok(self.record(id).await?.info)
    }

    /// Imports a session file (pi, Claude Code or Codex; gzip or not) as one
    /// commit. The file is checked whole before anything is written:
    /// `CORRUPTED_DATA` / `UNSUPPORTED_FORMAT` leave the store as it was.
    pub async fn import(
        &self,
        bytes: Vec<u8>,
        opts: &ImportOptions,
    ) -> Result<(StoredSessionInfo, ImportSummary)> {
        let load = opts.limits.load_options();
        load.check_file_size_at(bytes.len() as u64, opts.source.as_deref())?;
        let format = match opts.format {
            None | Some(ImportFormat::Auto) => detect_with(&bytes, &opts.limits)?,
            Some(f) => f,
        };
        let asked = opts
            .id
            .clone()
            .or_else(|| opts.copy.then(|| opts.new_id.clone()));
        // A plain pi v3 file with a clean end is stored as it is; anything
        // else is stored as the importer's pi v3 text, the source kept beside it.
        let convert = |src: Vec<u8>,
                       version: u32|
         -> Result<(Session, Option<Vec<u8>>, ImportSummary, u32)> {
            let (text, summary) = import_session_with(
                &src,
                format,
                asked.as_deref(),
                &time::ms_to_iso(opts.now_ms),
                &opts.limits,
            )
            .map_err(|e| match &opts.source {
                Some(p) if e.path.is_none() => e.with_path(p.clone()),
                _ => e,
            })?;
            let s = Session::from_bytes(text.into_bytes(), &load, None)?;
            Ok((s, Some(src), summary, version))
        };
        let (session, source, mut summary, version) =
            if format == ImportFormat::Pi && !crate::gz::is_gzip(&bytes) {
                let s = Session::from_bytes(bytes, &load, opts.source.clone())?;
                let m = s.metadata();
                let v = s.header().version;
                if v == CURRENT_VERSION && m.torn_tail.is_none() && !m.missing_final_newline {
                    let summary = summary_of(&s, format);
                    (s, None, summary, v)
                } else {
                    convert(s.original_bytes().to_vec(), v)?
                }
            } else {
                // Gzip: the version is read from the decompressed source below.
                convert(bytes, 0)?
            };
        // The header's id: a pi file's own, or the one derived from the source.
        let id = asked.unwrap_or_else(|| session.header().id.to_string());
        validate_id(&id, "session")?;
        summary.session_id = id.clone();
        let meta = session.metadata();
        let now = time::ms_to_iso(opts.now_ms);
        let incarnation = self.next_seed() >> 11;
        let info = StoredSessionInfo {
            id: id.clone(),
            name: opts
                .name
                .clone()
                .or_else(|| meta.name.clone())
                .or_else(|| opts.source.clone()),
            source: opts.source.clone(),
            format: format.name().to_string(),
            version: match (format, version) {
                (ImportFormat::Pi, 0) => source_version(&session, source.as_deref(), &load),
                (_, v) => v,
            },
            cwd: meta.cwd.clone(),
            created_at: meta.created_at.clone(),
            modified_at: now.clone(),
            imported_at: now,
            parent_session: meta.parent_session.clone(),
            leaf_id: meta.leaf_id.clone(),
            entry_count: meta.entry_count,
            message_count: meta.message_count,
            bytes: session.original_bytes().len() as u64,
            source_bytes: source.as_ref().map_or(0, |s| s.len() as u64),
            gzip: source.as_deref().is_some_and(crate::gz::is_gzip),
            changed: false,
            log_name: format!("{EVENTS_PREFIX}{id}:{incarnation}"),
            error: None,
        };
        let (chunks, starts) = split_chunks(session.original_bytes());
        let mut ops: Vec<Op> = Vec::with_capacity(chunks.len() + 4);
        let mut source_chunks = 0;
        if let Some(src) = source {
            for (n, c) in src.chunks(CHUNK_BYTES).enumerate() {
                ops.push(Op::PutChunk {
                    id: id.clone(),
                    part: Part::Source,
                    n: n as u32,
                    bytes: c.to_vec(),
                });
                source_chunks += 1;
            }
        }
        for (n, c) in chunks.into_iter().enumerate() {
            ops.push(Op::PutChunk {
                id: id.clone(),
                part: Part::Lines,
                n: n as u32,
                bytes: c,
            });
        }
        let len = session.original_bytes().len() as u64;
        let hint = WriterCore::from_session(session, len, 0, &load)
            .ok()
            .and_then(|mut w| w.take_hint(true))
            .map(|h| h.to_json());
        let record = SessionRecord {
            record_version: RECORD_VERSION,
            info: info.clone(),
            chunks: starts,
            source_chunks,
            hint,
            revision: 1,
            incarnation,
        };
        ops.push(Op::PutSession {
            id: id.clone(),
            record: record.json()?,
        });
        self.storage
            .commit(Commit {
                guard: Some((id, Expect::Absent)),
                ops,
            })
            .await?;
        Ok((info, summary))
    }

    /// The session's pi v3 JSONL, whole.
    pub async fn text(&self, id: &str) -> Result<Vec<u8>> {
        Ok(self.read_all(id, Part::Lines).await?.1)
    }

    /// The record and the whole of one part, read together (one consistent
    /// view even while another handle appends).
    async fn read_all(&self, id: &str, part: Part) -> Result<(SessionRecord, Vec<u8>)> {
        let Some(Snapshot {
            record: text,
            chunks,
            bytes: out,
        }) = self.storage.snapshot(id, part).await?
        else {
            return Err(no_session(id));
        };
        let r = SessionRecord::parse(&text, id)?;
        let (n, want) = match part {
            Part::Lines => (r.chunks.len(), Some(r.info.bytes)),
            Part::Source => (r.source_chunks as usize, None),
        };
        let total = out.len();
        if chunks != n || want.is_some_and(|w| w != total as u64) {
            return Err(Error::corrupted(format!(
                "session {id:?} holds {chunks} {} chunks ({total} bytes) in storage; its record says {n} ({})",
                part.name(),
                want.map_or("?".to_string(), |w| w.to_string())
            )));
        }
        Ok((r, out))
    }

    /// Loads a stored session whole.
    pub async fn load(&self, id: &str, opts: &LoadOptions) -> Result<Session> {
        let bytes = self.text(id).await?;
        Session::from_bytes(bytes, opts, Some(id.to_string()))
    }

    /// Loads the context from the current leaf, reading only the chunks the
    /// lazy loader asks for (with the stored resume hint: about the kept tail).
    /// A missing or stale hint is replaced.
    pub async fn load_lazy(&self, id: &str, opts: LazyOptions) -> Result<StoredLazy> {
        let record = self.record(id).await?;
        let loader = LazyLoader::new(
            record.info.bytes,
            opts,
            Some(id.to_string()),
            record.hint.clone(),
        );
        let lazy = RefCell::new(StoredLazy {
            loader,
            id: id.to_string(),
            record,
            cache: BTreeMap::new(),
            cached_bytes: 0,
            hint_written: false,
        });
        self.drive(&lazy).await?;
        let mut lazy = lazy.into_inner();
        if let Some(h) = lazy.loader.new_hint() {
            let old = lazy.record.expect();
            let mut r = lazy.record.clone();
            r.hint = Some(h.to_json());
            r.revision += 1;
            // Best effort: another handle may have changed the session meanwhile.
            if self
                .storage
                .commit(Commit {
                    guard: Some((id.to_string(), old)),
                    ops: vec![Op::PutSession {
                        id: id.to_string(),
                        record: r.json()?,
                    }],
                })
                .await
                .is_ok()
            {
                lazy.hint_written = true;
                // A writer cached from the same revision stays valid.
                if let Some(o) = self.open.borrow_mut().get_mut(id)
                    && o.record.expect() == old
                {
                    o.record.revision = r.revision;
                    o.record.hint = r.hint.clone();
                }
                lazy.record = r;
            }
        }
        Ok(lazy)
    }

    /// Runs the lazy loader until it needs no more reads. The state is borrowed
    /// only between reads, so the session can be looked at while one runs.
    async fn drive(&self, lazy: &RefCell<StoredLazy>) -> Result<()> {
        loop {
            let step = lazy.borrow_mut().loader.next_step()?;
            match step {
                Step::Done => return Ok(()),
                Step::Read { offset, len } => {
                    let bytes = self.read_range(lazy, offset, len).await?;
                    lazy.borrow_mut().loader.provide(bytes)?;
                }
            }
        }
    }

    async fn read_range(
        &self,
        cell: &RefCell<StoredLazy>,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>> {
        let (id, first, end, missing, want) = {
            let lazy = cell.borrow();
            let (first, end) = lazy.record.cover(offset, len);
            let missing: Vec<u32> = (first..end)
                .filter(|n| !lazy.cache.contains_key(n))
                .collect();
            (
                lazy.id.clone(),
                first,
                end,
                missing,
                lazy.record.incarnation,
            )
        };
        if let (Some(&lo), Some(&hi)) = (missing.first(), missing.last()) {
            // The record comes with the chunks: a session deleted or imported
            // again since it was opened is noticed, not misread.
            let Some((record, got)) = self.storage.chunks(&id, Part::Lines, lo, hi + 1).await?
            else {
                return Err(Error::new(
                    ErrorCode::NotFound,
                    format!("session {id:?} was deleted after it was opened"),
                ));
            };
            if version_of(&record).map(|v| v.0) != Some(want) {
                return Err(Error::new(
                    ErrorCode::Conflict,
                    format!(
                        "session {id:?} was deleted and imported again after it was opened; open it again"
                    ),
                ));
            }
            let mut lazy = cell.borrow_mut();
            for (k, c) in (lo..=hi).zip(got) {
                lazy.cached_bytes += c.len();
                lazy.cache.insert(k, c);
            }
        }
        let mut lazy = cell.borrow_mut();
        let base = lazy.record.chunks[first as usize];
        let mut out = Vec::with_capacity(len as usize);
        for n in first..end {
            out.extend_from_slice(&lazy.cache[&n]);
        }
        let from = (offset - base) as usize;
        let to = (from + len as usize).min(out.len());
        if from > out.len() {
            return Err(Error::corrupted(format!(
                "session {id:?}: byte {offset} is past its stored chunks"
            )));
        }
        let bytes = out[from..to].to_vec();
        // Keep the cache bounded: drop the chunks farthest from this read
        // (never one of the chunks just read).
        while lazy.cached_bytes > LAZY_CACHE {
            let lo = lazy.cache.keys().copied().find(|k| *k < first);
            let hi = lazy.cache.keys().rev().copied().find(|k| *k >= end);
            let drop = match (lo, hi) {
                (Some(l), Some(h)) if first - l > h - end => l,
                (Some(_), Some(h)) | (None, Some(h)) => h,
                (Some(l), None) => l,
                (None, None) => break,
            };
            if let Some(c) = lazy.cache.remove(&drop) {
                lazy.cached_bytes -= c.len();
            }
        }
        Ok(bytes)
    }

    /// Loads up to `n` older messages of a lazily opened session (JSON array).
    /// Calls on one session must not overlap (the bindings queue them).
    ///
    /// A call that failed part-way (a read error, the session deleted) is
    /// resumed by the next one, whose messages then come before the failed
    /// call's (oldest first): nothing is skipped.
    pub async fn more_history(&self, lazy: &RefCell<StoredLazy>, n: usize) -> Result<String> {
        let mut earlier = None;
        if !lazy.borrow().loader.is_done() {
            self.drive(lazy).await?;
            earlier = Some(lazy.borrow_mut().loader.take_history_json()?);
        }
        lazy.borrow_mut().loader.request_more_history(n)?;
        self.drive(lazy).await?;
        let now = lazy.borrow_mut().loader.take_history_json()?;
        Ok(match earlier {
            None => now,
            Some(e) => join_arrays(&now, &e),
        })
    }

    /// The writer of a session, from the cache when its revision is current.
    async fn open(&self, id: &str) -> Result<Open> {
        let record = self.record(id).await?;
        if let Some(o) = self.open.borrow_mut().remove(id)
            && o.record.expect() == record.expect()
        {
            return Ok(o);
        }
        let (record, bytes) = self.read_all(id, Part::Lines).await?;
        Ok(self.writer_of(id, record, bytes, |_| ())?.0)
    }

    /// A writer over a session's record and lines read together; `inspect`
    /// looks at the loaded session first.
    fn writer_of<R>(
        &self,
        id: &str,
        record: SessionRecord,
        bytes: Vec<u8>,
        inspect: impl FnOnce(&Session) -> R,
    ) -> Result<(Open, R)> {
        let last_start = record.chunks.last().copied().unwrap_or(0) as usize;
        let last_chunk = bytes.get(last_start..).unwrap_or_default().to_vec();
        let len = bytes.len() as u64;
        let load = LoadOptions::default();
        let session = Session::from_bytes(bytes, &load, Some(id.to_string()))?;
        let seen = inspect(&session);
        let writer = WriterCore::from_session(session, len, self.next_seed(), &load)?;
        Ok((
            Open {
                record,
                writer,
                last_chunk,
            },
            seen,
        ))
    }

    /// Runs `f` on the session's writer and commits the lines it queued as
    /// one change. A conflict with another handle reloads and retries.
    async fn change<T>(
        &self,
        id: &str,
        now_ms: i64,
        f: impl Fn(&mut WriterCore) -> Result<T>,
    ) -> Result<(T, StoredSessionInfo)> {
        let mut tries = 0;
        loop {
            tries += 1;
            let o = self.open(id).await?;
            match self.commit_change(id, o, now_ms, &f, Vec::new()).await? {
                Ok(done) => return Ok(done),
                // Another handle got in first: wait a random while, growing
                // with each try, so the handles do not keep colliding.
                Err(_) if tries < CHANGE_TRIES => self.storage.backoff(tries).await,
                Err(e) => return Err(e),
            }
        }
    }

    /// Runs `f` on an open writer and commits the lines it queued, with
    /// `extra` ops, as one change guarded by the writer's revision (nothing
    /// is committed when `f` queued no line). `Ok(Err(CONFLICT))`: another
    /// handle changed the session first; nothing was stored.
    async fn commit_change<T>(
        &self,
        id: &str,
        mut o: Open,
        now_ms: i64,
        f: &impl Fn(&mut WriterCore) -> Result<T>,
        extra: Vec<Op>,
    ) -> Result<std::result::Result<(T, StoredSessionInfo), Error>> {
        let out = f(&mut o.writer)?;
        let Some(batch) = o.writer.take_batch(None) else {
            let info = o.record.info.clone();
            self.open.borrow_mut().insert(id.to_string(), o);
            return Ok(Ok((out, info)));
        };
        let mut r = o.record.clone();
        let mut ops = Vec::new();
        let mut n = r.chunks.len() as u32 - 1;
        if !o.last_chunk.is_empty() && o.last_chunk.len() + batch.bytes.len() > APPEND_CHUNK {
            n += 1;
            r.chunks.push(r.info.bytes);
            o.last_chunk.clear();
        }
        o.last_chunk.extend_from_slice(&batch.bytes);
        ops.push(Op::PutChunk {
            id: id.to_string(),
            part: Part::Lines,
            n,
            bytes: o.last_chunk.clone(),
        });
        r.info.bytes += batch.bytes.len() as u64;
        r.info.entry_count = o.writer.entry_count();
        r.info.message_count = o.writer.message_count();
        r.info.leaf_id = o.writer.leaf_id().map(str::to_string);
        r.info.modified_at = time::ms_to_iso(now_ms);
        r.info.changed = true;
        if let Some(h) = o.writer.take_hint(false) {
            r.hint = Some(h.to_json());
        }
        r.revision += 1;
        ops.push(Op::PutSession {
            id: id.to_string(),
            record: r.json()?,
        });
        ops.extend(extra);
        let res = self
            .storage
            .commit(Commit {
                guard: Some((id.to_string(), o.record.expect())),
                ops,
            })
            .await;
        match res {
            Ok(()) => {
                o.writer.committed(&batch);
                let info = r.info.clone();
                o.record = r;
                self.open.borrow_mut().insert(id.to_string(), o);
                Ok(Ok((out, info)))
            }
            // The writer is dropped: it holds the lines that were not stored.
            Err(e) if e.code == ErrorCode::Conflict => Ok(Err(e)),
            Err(e) => Err(e),
        }
    }

    /// Appends an entry (JSON object; `type` required, `id`, `parentId` and
    /// `timestamp` filled when absent). Returns its id once stored.
    pub async fn append(&self, id: &str, entry_json: &str, now_ms: i64) -> Result<String> {
        let (entry, _) = self
            .change(id, now_ms, |w| w.append(entry_json, now_ms).map(|(i, _)| i))
            .await?;
        Ok(entry)
    }

    /// Moves the current leaf to `target` (`None`: before the first entry);
    /// returns the session's facts after the move.
    pub async fn move_leaf(
        &self,
        id: &str,
        target: Option<&str>,
        now_ms: i64,
    ) -> Result<StoredSessionInfo> {
        let ((), info) = self
            .change(id, now_ms, |w| w.move_leaf(target, now_ms).map(|_| ()))
            .await?;
        Ok(info)
    }

    /// Sets (or with `None` clears) an entry's label.
    pub async fn set_label(
        &self,
        id: &str,
        target: &str,
        label: Option<&str>,
        now_ms: i64,
    ) -> Result<StoredSessionInfo> {
        let ((), info) = self
            .change(id, now_ms, |w| {
                w.append_label(target, label, now_ms).map(|_| ())
            })
            .await?;
        Ok(info)
    }

    /// A new session `new_id` holding the path from the root to `entry_id`,
    /// with `parentSession` = `id`.
    pub async fn fork(
        &self,
        id: &str,
        entry_id: &str,
        new_id: &str,
        now_ms: i64,
    ) -> Result<StoredSessionInfo> {
        validate_id(new_id, "session")?;
        let parent = self.load(id, &LoadOptions::default()).await?;
        let entries = parent.entries();
        // A `leaf` entry stands for the entry it points at (FORMAT.md §4).
        let at = crate::tree::resolve_node(entries, parent.id_index(), parent.index_of(entry_id)?)
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::NotFound,
                    format!("entry {entry_id:?} points at no entry"),
                )
            })?;
        let mut text = WriterCore::new_header_line(
            new_id,
            now_ms,
            parent.header().cwd.as_deref().unwrap_or(""),
            Some(id),
        );
        // The path's lines as written; a line whose `parentId` names an entry
        // not copied (a `leaf` entry) gets its effective parent instead.
        let mut prev: Option<&str> = None;
        for i in parent.tree().path_to(at) {
            let e = &entries[i as usize];
            let line = parent.entry_text(i);
            if e.parent_id.as_deref() == prev {
                text.push_str(line);
            } else {
                text.push_str(&with_parent(line, prev));
            }
            text.push('\n');
            prev = Some(&e.id);
        }
        let name = self.info(id).await?.name.map(|n| format!("{n} (fork)"));
        let (info, _) = self
            .import(
                text.into_bytes(),
                &ImportOptions {
                    id: Some(new_id.to_string()),
                    copy: false,
                    new_id: new_id.to_string(),
                    format: Some(ImportFormat::Pi),
                    source: None,
                    name,
                    now_ms,
                    // A branch of a stored session is never refused for its size.
                    limits: crate::LimitOptions {
                        max_file_bytes: u64::MAX,
                        ..Default::default()
                    },
                },
            )
            .await?;
        Ok(info)
    }

    /// The session as a file: the imported bytes while the session is unchanged
    /// (`original`), else its pi v3 JSONL.
    pub async fn export(&self, id: &str, original: bool) -> Result<Vec<u8>> {
        if original {
            let (r, source) = self.read_all(id, Part::Source).await?;
            if !r.info.changed && r.source_chunks > 0 {
                return Ok(source);
            }
        }
        self.text(id).await
    }

    /// Removes a session with its chunks, checkpoints and event log (also one
    /// whose record is damaged).
    /// The commit's guard asks only that a record be there (`NOT_FOUND`).
    pub async fn delete(&self, id: &str) -> Result<()> {
        self.open.borrow_mut().remove(id);
        let id = id.to_string();
        self.storage
            .commit(Commit {
                guard: Some((id.clone(), Expect::Present)),
                ops: vec![
                    Op::DeleteChunks {
                        id: id.clone(),
                        part: Part::Lines,
                        from: 0,
                    },
                    Op::DeleteChunks {
                        id: id.clone(),
                        part: Part::Source,
                        from: 0,
                    },
                    Op::DeleteCheckpoints { id: id.clone() },
                    Op::DeleteEvents { id: id.clone() },
                    Op::DeleteSession { id },
                ],
            })
            .await
    }

    /// Saves a checkpoint of a session: a `forkpoint.checkpoint` entry (the
    /// agent's record, FORMAT.md §14) at the current leaf naming the leaf (or
    /// `opts.entry_id`), with the entry count and the event seq given.
    /// `ALREADY_EXISTS` when the session has a checkpoint of that id.
    /// `new_id` is its id when `opts` names none (and no execution).
    pub async fn save_checkpoint(
        &self,
        id: &str,
        new_id: &str,
        opts: &CheckpointOptions,
        now_ms: i64,
    ) -> Result<Checkpoint> {
        if let Some(c) = &opts.id {
            validate_id(c, "checkpoint")?;
        }
        if opts.execution_id.as_deref() == Some("") {
            return Err(Error::invalid_input(
                "checkpoint: executionId is a non-empty string",
            ));
        }
        let step_index = opts.step_index.unwrap_or(0);
        let cp_id = match (&opts.id, &opts.execution_id) {
            (Some(c), _) => c.clone(),
            (None, Some(e)) => format!("ckpt-{e}-{step_index}"),
            (None, None) => new_id.to_string(),
        };
        let (cp, _) = self
            .checkpoint_change(id, now_ms, |at| {
                if at.found.iter().any(|f| f.info.id == cp_id) {
                    return Err(checkpoint_exists(id, &cp_id));
                }
                let entry_id = match &opts.entry_id {
                    Some(e) => {
                        at.session.index_of(e)?;
                        e.clone()
                    }
                    None => at.leaf.clone().unwrap_or_default(),
                };
                let info = CheckpointInfo {
                    id: cp_id.clone(),
                    execution_id: opts.execution_id.clone().unwrap_or_else(|| cp_id.clone()),
                    step_name: opts
                        .step_name
                        .clone()
                        .or_else(|| opts.label.clone())
                        .unwrap_or_default(),
                    step_index,
                    status: opts.status.clone().unwrap_or_else(|| "success".into()),
                    state: opts.state.clone(),
                    context: opts.context.clone(),
                    variables: opts.variables.clone(),
                    entry_id,
                    created_at: now_ms as f64,
                    label: opts.label.clone(),
                    entry_count: Some(at.entries),
                    event_seq: opts.event_seq,
                };
                let entry = checkpoint::entry(&info);
                let found = Found {
                    index: at.entries as u32,
                    info,
                };
                Ok((view(id, &found), vec![Edit::Append(entry)]))
            })
            .await?;
        Ok(cp)
    }

    /// A session's checkpoints, oldest first: its `forkpoint.checkpoint`
    /// entries (those an agent made too). Checkpoints kept by forkpoint-web
    /// 0.1.0 beside the session are moved into it first (`now_ms`).
    pub async fn checkpoints(&self, id: &str, now_ms: i64) -> Result<Vec<Checkpoint>> {
        if !self.legacy_checkpoints(id).await?.is_empty() {
            let (found, _) = self
                .checkpoint_change(id, now_ms, |at| Ok((at.found.to_vec(), Vec::new())))
                .await?;
            return Ok(found.iter().map(|f| view(id, f)).collect());
        }
        let s = self.load(id, &LoadOptions::default()).await?;
        Ok(checkpoint::scan(&s).iter().map(|f| view(id, f)).collect())
    }

    /// Moves the session's leaf to a checkpoint's entry with a `leaf` entry
    /// (as an agent's restore does); `NOT_FOUND` if there is no such checkpoint.
    pub async fn restore_checkpoint(
        &self,
        id: &str,
        checkpoint_id: &str,
        now_ms: i64,
    ) -> Result<Checkpoint> {
        let (cp, _) = self
            .checkpoint_change(id, now_ms, |at| {
                let f = find(at.found, id, checkpoint_id)?;
                let target = (!f.info.entry_id.is_empty()).then(|| f.info.entry_id.clone());
                Ok((view(id, f), vec![Edit::MoveLeaf(target)]))
            })
            .await?;
        Ok(cp)
    }

    /// Deletes a checkpoint with an entry that says so (`NOT_FOUND` if absent).
    pub async fn delete_checkpoint(
        &self,
        id: &str,
        checkpoint_id: &str,
        now_ms: i64,
    ) -> Result<()> {
        self.checkpoint_change(id, now_ms, |at| {
            find(at.found, id, checkpoint_id)?;
            let e = checkpoint::deletion(checkpoint_id, now_ms as f64);
            Ok(((), vec![Edit::Append(e)]))
        })
        .await?;
        Ok(())
    }

    /// Moves the checkpoints forkpoint-web 0.1.0 kept beside their sessions
    /// into the sessions, as entries (FORMAT.md §16.1). Returns how many
    /// sessions were done; a session that cannot be done now (damaged, or
    /// storage full) keeps them, and its checkpoint calls try again.
    pub async fn migrate_checkpoints(&self, now_ms: i64) -> Result<usize> {
        let mut ids: Vec<String> = self
            .storage
            .legacy_checkpoints(None)
            .await?
            .into_iter()
            .map(|(s, _)| s)
            .collect();
        ids.sort();
        ids.dedup();
        let mut done = 0;
        for id in ids {
            let step = self
                .checkpoint_change(&id, now_ms, |_| Ok(((), Vec::new())))
                .await;
            done += usize::from(step.is_ok());
        }
        Ok(done)
    }

    /// The 0.1.0 checkpoints of one session, oldest first.
    async fn legacy_checkpoints(&self, id: &str) -> Result<Vec<CheckpointInfo>> {
        let mut out = Vec::new();
        for (_, text) in self.storage.legacy_checkpoints(Some(id)).await? {
            out.push(legacy_checkpoint(&text).ok_or_else(|| {
                Error::corrupted(format!(
                    "a checkpoint of session {id:?} kept by forkpoint-web 0.1.0 is damaged"
                ))
            })?);
        }
        out.sort_by(|a, b| a.created_at.total_cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(out)
    }

    /// A checkpoint operation: `decide` looks at the checkpoints one snapshot
    /// of the session shows (0.1.0's included, which the change then writes
    /// as entries) and says what to append; the change is guarded by that
    /// snapshot's revision, and computed again if another handle got in first.
    async fn checkpoint_change<T>(
        &self,
        id: &str,
        now_ms: i64,
        decide: impl Fn(&At<'_>) -> Result<(T, Vec<Edit>)>,
    ) -> Result<(T, StoredSessionInfo)> {
        let mut tries = 0;
        loop {
            tries += 1;
            // 0.1.0's records are read before and after the session: the same
            // both times, none was moved meanwhile (a move deletes them in its
            // commit, and nothing adds them any more), so the session as read
            // holds them (none left) or does not (some left) — not half.
            let before = self.legacy_checkpoints(id).await?;
            let (record, bytes) = self.read_all(id, Part::Lines).await?;
            let legacy = self.legacy_checkpoints(id).await?;
            if legacy != before {
                if tries < CHANGE_TRIES {
                    continue;
                }
                return Err(Error::new(
                    ErrorCode::Conflict,
                    format!("session {id:?} kept changing while its checkpoints were read"),
                ));
            }
            let moving = !legacy.is_empty();
            let leaf = record.info.leaf_id.clone();
            let (o, decided) = self.writer_of(id, record, bytes, |s| {
                let mut found = checkpoint::scan(s);
                let mut lines = Vec::new();
                for c in legacy {
                    lines.push(checkpoint::entry(&c));
                    found.retain(|f| f.info.id != c.id);
                    found.push(Found {
                        index: (s.entries().len() + lines.len() - 1) as u32,
                        info: c,
                    });
                }
                let at = At {
                    session: s,
                    found: &found,
                    leaf,
                    entries: (s.entries().len() + lines.len()) as u64,
                };
                decide(&at).map(|(t, edits)| (t, lines, edits))
            })?;
            let (out, lines, edits) = decided?;
            let write = |w: &mut WriterCore| {
                for l in &lines {
                    w.append(l, now_ms)?;
                }
                for e in &edits {
                    match e {
                        Edit::Append(l) => w.append(l, now_ms)?,
                        Edit::MoveLeaf(t) => w.move_leaf(t.as_deref(), now_ms)?,
                    };
                }
                Ok(())
            };
            let extra = if moving {
                vec![Op::DeleteCheckpoints { id: id.to_string() }]
            } else {
                Vec::new()
            };
            match self.commit_change(id, o, now_ms, &write, extra).await? {
                Ok(((), info)) => return Ok((out, info)),
                Err(_) if tries < CHANGE_TRIES => self.storage.backoff(tries).await,
                Err(e) => return Err(e),
            }
        }
    }
}

/// What a checkpoint operation sees of a session (one snapshot).
struct At<'a> {
    session: &'a Session,
    /// Its checkpoints, oldest first.
    found: &'a [Found],
    /// Its current leaf.
    leaf: Option<String>,
    /// Its number of entries (before the operation's own).
    entries: u64,
}

/// What a checkpoint operation appends.
enum Edit {
    /// An entry (JSON).
    Append(String),
    /// A `leaf` entry moving the leaf to this entry (`None`: before the first).
    MoveLeaf(Option<String>),
}

/// What a new checkpoint records besides the session's leaf; all optional.
/// With `executionId`, it is the checkpoint an agent's `checkpoints.create`
/// makes (`ckpt-{executionId}-{stepIndex}`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CheckpointOptions {
    /// Its id (`[A-Za-z0-9][A-Za-z0-9._-]{0,127}`).
    pub id: Option<String>,
    pub label: Option<String>,
    /// The entry it points at (default: the current leaf).
    pub entry_id: Option<String>,
    pub event_seq: Option<u64>,
    pub execution_id: Option<String>,
    pub step_name: Option<String>,
    pub step_index: Option<u64>,
    pub status: Option<String>,
    pub state: Option<serde_json::Value>,
    pub context: Option<serde_json::Value>,
    pub variables: Option<serde_json::Value>,
}

/// A checkpoint as the store answers it.
fn view(session_id: &str, f: &Found) -> Checkpoint {
    let c = &f.info;
    Checkpoint {
        id: c.id.clone(),
        session_id: session_id.to_string(),
        label: c.label.clone(),
        entry_id: (!c.entry_id.is_empty()).then(|| c.entry_id.clone()),
        entry_count: c.entry_count.unwrap_or(u64::from(f.index)),
        event_seq: c.event_seq,
        created_at: time::ms_to_iso(c.created_at as i64),
        execution_id: c.execution_id.clone(),
        step_name: c.step_name.clone(),
        step_index: c.step_index,
        status: c.status.clone(),
        state: c.state.clone(),
        context: c.context.clone(),
        variables: c.variables.clone(),
    }
}

/// One checkpoint of a list (`NOT_FOUND`).
fn find<'a>(found: &'a [Found], id: &str, checkpoint_id: &str) -> Result<&'a Found> {
    found
        .iter()
        .rfind(|f| f.info.id == checkpoint_id)
        .ok_or_else(|| {
            Error::new(
                ErrorCode::NotFound,
                format!("session {id:?} has no checkpoint {checkpoint_id:?}"),
            )
        })
}

/// A checkpoint as forkpoint-web 0.1.0 kept it (`{id, sessionId, label,
/// entryId, entryCount, eventSeq, createdAt}`), as the record of §14.
fn legacy_checkpoint(text: &str) -> Option<CheckpointInfo> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Old {
        id: String,
        label: Option<String>,
        entry_id: Option<String>,
        entry_count: u64,
        event_seq: Option<u64>,
        created_at: String,
    }
    let o: Old = serde_json::from_str(text).ok()?;
    Some(CheckpointInfo {
        execution_id: o.id.clone(),
        step_name: o.label.clone().unwrap_or_default(),
        step_index: 0,
        status: "success".into(),
        state: None,
        context: None,
        variables: None,
        entry_id: o.entry_id.unwrap_or_default(),
        created_at: time::iso_to_ms(&o.created_at)? as f64,
        label: o.label,
        entry_count: Some(o.entry_count),
        event_seq: o.event_seq,
        id: o.id,
    })
}

impl StoredLazy {
    /// The session's stored facts.
    pub fn info(&self) -> &StoredSessionInfo {
        &self.record.info
    }
}

/// The header version of an imported gzip pi file.
fn source_version(s: &Session, source: Option<&[u8]>, load: &LoadOptions) -> u32 {
    match source {
        None => s.header().version,
        Some(src) => Session::from_bytes(src.to_vec(), load, None)
            .map_or(s.header().version, |o| o.header().version),
    }
}

/// Sessions in memory (tests, and a reference for other backends).
#[derive(Debug, Default)]
pub struct MemoryStorage {
    state: RefCell<MemState>,
    /// Fail the next commit with this error (fault injection for tests).
    pub fail_next_commit: RefCell<Option<Error>>,
}

#[derive(Debug, Default, Clone)]
struct MemState {
    sessions: BTreeMap<String, String>,
    chunks: BTreeMap<(String, Part, u32), Vec<u8>>,
    checkpoints: BTreeMap<(String, String), String>,
}

impl MemoryStorage {
    /// An empty storage.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of chunks stored (all sessions).
    pub fn chunk_count(&self) -> usize {
        self.state.borrow().chunks.len()
    }

    /// Keeps a checkpoint record beside session `id` as forkpoint-web 0.1.0
    /// did (tests of the move into the session).
    pub fn put_legacy_checkpoint(&self, id: &str, checkpoint: &str, record: &str) {
        self.state
            .borrow_mut()
            .checkpoints
            .insert((id.into(), checkpoint.into()), record.into());
    }
}

/// An entry line with its `parentId` set to `parent` (members kept in order).
fn with_parent(line: &str, parent: Option<&str>) -> String {
    let lit = parent.map_or_else(|| "null".to_string(), crate::json::id_literal);
    let b = line.as_bytes();
    let mut out = String::with_capacity(line.len() + 16);
    out.push('{');
    let mut replaced = false;
    if let Ok(mut r) = crate::json::ObjectReader::open(b, 0, 1, crate::json::DEFAULT_MAX_DEPTH) {
        while let Ok(Some(k)) = r.next_key() {
            let Ok(v) = r.skip_value() else { break };
            if out.len() > 1 {
                out.push(',');
            }
            out.push_str(k.raw(line));
            out.push(':');
            if k.str(line).as_deref() == Some("parentId") {
                out.push_str(&lit);
                replaced = true;
            } else {
                out.push_str(v.raw(line));
            }
        }
    }
    if !replaced {
        if out.len() > 1 {
            out.push(',');
        }
        out.push_str("\"parentId\":");
        out.push_str(&lit);
    }
    out.push('}');
    out
}

/// Two JSON arrays (as text) as one.
fn join_arrays(a: &str, b: &str) -> String {
    let (a, b) = (a.trim(), b.trim());
    let inner = |s: &str| s[1..s.len() - 1].trim().to_string();
    match (inner(a), inner(b)) {
        (x, y) if x.is_empty() => format!("[{y}]"),
        (x, y) if y.is_empty() => format!("[{x}]"),
        (x, y) => format!("[{x},{y}]"),
    }
}

/// The error of a session id that is not in the store.
fn no_session(id: &str) -> Error {
    Error::new(
        ErrorCode::NotFound,
        format!("no session {id:?} in the store"),
    )
}

/// The error of a checkpoint id in use (shared by backends).
pub fn checkpoint_exists(id: &str, checkpoint: &str) -> Error {
    Error::new(
        ErrorCode::AlreadyExists,
        format!("session {id:?} already has a checkpoint {checkpoint:?}"),
    )
}

fn version_of(record: &str) -> Option<(u64, u64)> {
    let v = serde_json::from_str::<serde_json::Value>(record).ok()?;
    Some((
        v.get("incarnation").and_then(|r| r.as_u64()).unwrap_or(0),
        v.get("revision")?.as_u64()?,
    ))
}

/// Checks a commit's guard against the current record (shared by backends).
pub fn check_guard(guard: &Option<(String, Expect)>, current: Option<&str>) -> Result<()> {
    let Some((id, want)) = guard else {
        return Ok(());
    };
    let conflict = |why: &str| {
        Err(Error::new(
            ErrorCode::Conflict,
            format!("session {id:?} {why}"),
        ))
    };
    let recreated = "was deleted and created again by another handle; open it again";
    let (want_incarnation, want_revision) = match (want, current) {
        (Expect::Absent, None) | (Expect::Present, Some(_)) => return Ok(()),
        (Expect::Absent, Some(_)) => {
            return Err(Error::new(
                ErrorCode::AlreadyExists,
                format!("a session with id {id:?} is already in the store"),
            ));
        }
        (_, None) => return Err(no_session(id)),
        (
            Expect::Version {
                incarnation,
                revision,
            },
            Some(_),
        ) => (*incarnation, *revision),
    };
    match current.and_then(version_of) {
        Some((i, _)) if i != want_incarnation => conflict(recreated),
        Some((_, r)) if r == want_revision => Ok(()),
        Some(_) => conflict("was changed by another handle; reload it and retry"),
        None => conflict(recreated),
    }
}

impl Storage for MemoryStorage {
    async fn session_records(&self) -> Result<Vec<(String, String)>> {
        Ok(self
            .state
            .borrow()
            .sessions
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect())
    }

    async fn session_record(&self, id: &str) -> Result<Option<String>> {
        Ok(self.state.borrow().sessions.get(id).cloned())
    }

    async fn snapshot(&self, id: &str, part: Part) -> Result<Option<Snapshot>> {
        let st = self.state.borrow();
        Ok(st.sessions.get(id).map(|r| {
            let mut s = Snapshot {
                record: r.clone(),
                chunks: 0,
                bytes: Vec::new(),
            };
            for (_, c) in st
                .chunks
                .range((id.to_string(), part, 0)..=(id.to_string(), part, u32::MAX))
            {
                s.chunks += 1;
                s.bytes.extend_from_slice(c);
            }
            s
        }))
    }

    async fn chunks(
        &self,
        id: &str,
        part: Part,
        from: u32,
        to: u32,
    ) -> Result<Option<(String, Vec<Vec<u8>>)>> {
        let st = self.state.borrow();
        let Some(record) = st.sessions.get(id) else {
            return Ok(None);
        };
        let chunks = (from..to)
            .map(|n| {
                st.chunks
                    .get(&(id.to_string(), part, n))
                    .cloned()
                    .ok_or_else(|| {
                        Error::corrupted(format!(
                            "session {id:?}: {} chunk {n} is missing",
                            part.name()
                        ))
                    })
            })
            .collect::<Result<_>>()?;
        Ok(Some((record.clone(), chunks)))
    }

    async fn legacy_checkpoints(&self, id: Option<&str>) -> Result<Vec<(String, String)>> {
        Ok(self
            .state
            .borrow()
            .checkpoints
            .iter()
            .filter(|((s, _), _)| id.is_none_or(|id| s == id))
            .map(|((s, _), v)| (s.clone(), v.clone()))
            .collect())
    }

    async fn commit(&self, commit: Commit) -> Result<()> {
        if let Some(e) = self.fail_next_commit.borrow_mut().take() {
            return Err(e);
        }
        let mut st = self.state.borrow_mut();
        let current = commit
            .guard
            .as_ref()
            .and_then(|(id, _)| st.sessions.get(id).cloned());
        check_guard(&commit.guard, current.as_deref())?;
        // Apply to a copy, swap at the end: all or nothing.
        let mut next = st.clone();
        for op in commit.ops {
            match op {
                Op::PutSession { id, record } => {
                    next.sessions.insert(id, record);
                }
                Op::DeleteSession { id } => {
                    next.sessions.remove(&id);
                }
                Op::PutChunk { id, part, n, bytes } => {
                    next.chunks.insert((id, part, n), bytes);
                }
                Op::DeleteChunks { id, part, from } => {
                    next.chunks
                        .retain(|(s, p, n), _| !(s == &id && *p == part && *n >= from));
                }
                Op::DeleteCheckpoints { id } => {
                    next.checkpoints.retain(|(s, _), _| s != &id);
                }
                Op::DeleteEvents { .. } => {}
            }
        }
        *st = next;
        Ok(())
    }
}

/// A storage shared by several stores (several handles on one database).
impl<T: Storage> Storage for std::rc::Rc<T> {
    async fn session_records(&self) -> Result<Vec<(String, String)>> {
        (**self).session_records().await
    }
    async fn session_record(&self, id: &str) -> Result<Option<String>> {
        (**self).session_record(id).await
    }
    async fn snapshot(&self, id: &str, part: Part) -> Result<Option<Snapshot>> {
        (**self).snapshot(id, part).await
    }
    async fn chunks(
        &self,
        id: &str,
        part: Part,
        from: u32,
        to: u32,
    ) -> Result<Option<(String, Vec<Vec<u8>>)>> {
        (**self).chunks(id, part, from, to).await
    }
    async fn legacy_checkpoints(&self, id: Option<&str>) -> Result<Vec<(String, String)>> {
        (**self).legacy_checkpoints(id).await
    }
    async fn commit(&self, commit: Commit) -> Result<()> {
        (**self).commit(commit).await
    }
    async fn backoff(&self, attempt: u32) {
        (**self).backoff(attempt).await
    }
}
