//! Plain data types exchanged with JavaScript. `ts-types/` is generated from these
//! (see `examples/gen_types.rs`), so their doc comments are written for the JS reader.

use serde::{Deserialize, Serialize};

use crate::json::DEFAULT_MAX_DEPTH;

/// Option types a binding may pass as JSON.
pub trait OptionsJson: serde::de::DeserializeOwned + Default {}
impl<T: serde::de::DeserializeOwned + Default> OptionsJson for T {}

/// Parses an options object given as JSON by a binding (absent, `null` or
/// `undefined` → the defaults). Unknown fields are ignored; wrong types are
/// `INVALID_INPUT`.
pub fn options_from_json<T: OptionsJson>(json: Option<&str>) -> crate::Result<T> {
    match json.map(str::trim) {
        None | Some("") | Some("null") | Some("undefined") => Ok(T::default()),
        Some(j) => serde_json::from_str(j)
            .map_err(|e| crate::Error::invalid_input(format!("bad options: {e}"))),
    }
}

/// A value as JSON text for a binding (the counterpart of [`options_from_json`]).
pub fn to_json_text<T: Serialize + ?Sized>(v: &T) -> crate::Result<String> {
    serde_json::to_string(v).map_err(|e| crate::Error::internal(e.to_string()))
}

/// Options for loading a session file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct LoadOptions {
    /// Skip malformed lines in the middle of the file (counted in the metadata)
    /// instead of failing with `CORRUPTED_DATA`. Default `false`.
    #[cfg_attr(feature = "ts", ts(as = "Option<bool>", optional))]
    pub lenient: bool,
    /// Longest line accepted, in bytes; longer lines fail with `LIMIT_EXCEEDED`.
    /// Default 256 MiB.
    #[cfg_attr(feature = "ts", ts(as = "Option<u64>", optional))]
    pub max_line_bytes: u64,
    /// Deepest JSON nesting accepted; deeper lines fail with `LIMIT_EXCEEDED`. Default 512.
    #[cfg_attr(feature = "ts", ts(as = "Option<u32>", optional))]
    pub max_depth: u32,
    /// Most entries accepted; more fail with `LIMIT_EXCEEDED`. Default 50 million.
    /// A `.jsonl.gz` file is refused while it is decompressed as soon as it has
    /// more non-blank lines than this plus its header.
    #[cfg_attr(feature = "ts", ts(as = "Option<u64>", optional))]
    pub max_entries: u64,
    /// `.jsonl.gz`: most bytes a file may decompress to; decompression stops with
    /// `LIMIT_EXCEEDED` as soon as it produces more. Default 4 GiB.
    #[cfg_attr(feature = "ts", ts(as = "Option<u64>", optional))]
    pub max_decompressed_bytes: u64,
    /// `.jsonl.gz`: largest ratio of decompressed to compressed bytes accepted
    /// once more than 16 MiB have been decompressed (a gzip bomb decompresses
    /// about 1000:1; session text about 5–30:1); more stops decompression with
    /// `LIMIT_EXCEEDED`. `0` turns the check off. Default 200.
    #[cfg_attr(feature = "ts", ts(as = "Option<u32>", optional))]
    pub max_compression_ratio: u32,
    /// Largest file accepted, in bytes (as stored: a `.jsonl.gz` file's
    /// compressed size); a larger one fails with `LIMIT_EXCEEDED` before it
    /// is read. Default 4 GiB, as `maxDecompressedBytes`.
    #[cfg_attr(feature = "ts", ts(as = "Option<u64>", optional))]
    pub max_file_bytes: u64,
}

/// Default of `maxDecompressedBytes`: 4 GiB.
pub const DEFAULT_MAX_DECOMPRESSED_BYTES: u64 = 4 << 30;
/// Default of `maxCompressionRatio`.
pub const DEFAULT_MAX_COMPRESSION_RATIO: u32 = 200;
/// Default of `maxFileBytes`: 4 GiB.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 4 << 30;

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            lenient: false,
            max_line_bytes: 256 << 20,
            max_depth: DEFAULT_MAX_DEPTH as u32,
            max_entries: 50_000_000,
            max_decompressed_bytes: DEFAULT_MAX_DECOMPRESSED_BYTES,
            max_compression_ratio: DEFAULT_MAX_COMPRESSION_RATIO,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
        }
    }
}

impl LoadOptions {
    /// `LIMIT_EXCEEDED` when a file of `len` bytes is larger than
    /// `maxFileBytes` allows (checked before a file is read, where its size
    /// is known, and again on the bytes given to a load).
    pub fn check_file_size(&self, len: u64) -> crate::Result<()> {
        if len > self.max_file_bytes {
            return Err(crate::Error::new(
                crate::ErrorCode::LimitExceeded,
                format!(
                    "the session file is {len} bytes, more than maxFileBytes allows ({}); raise maxFileBytes to load it",
                    self.max_file_bytes
                ),
            ));
        }
        Ok(())
    }

    /// [`LoadOptions::check_file_size`], its error naming `path` when known.
    pub fn check_file_size_at(&self, len: u64, path: Option<&str>) -> crate::Result<()> {
        self.check_file_size(len).map_err(|e| match path {
            Some(p) => e.with_path(p),
            None => e,
        })
    }
}

/// Limits for `listSessions` and `importSession` (as in [`LoadOptions`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct LimitOptions {
    /// As in [`LoadOptions`]. Default 256 MiB.
    #[cfg_attr(feature = "ts", ts(as = "Option<u64>", optional))]
    pub max_line_bytes: u64,
    /// As in [`LoadOptions`]. Default 50 million.
    #[cfg_attr(feature = "ts", ts(as = "Option<u64>", optional))]
    pub max_entries: u64,
    /// As in [`LoadOptions`]. Default 4 GiB.
    #[cfg_attr(feature = "ts", ts(as = "Option<u64>", optional))]
    pub max_decompressed_bytes: u64,
    /// As in [`LoadOptions`]. Default 200.
    #[cfg_attr(feature = "ts", ts(as = "Option<u32>", optional))]
    pub max_compression_ratio: u32,
    /// As in [`LoadOptions`]. Default 4 GiB.
    #[cfg_attr(feature = "ts", ts(as = "Option<u64>", optional))]
    pub max_file_bytes: u64,
}

impl Default for LimitOptions {
    fn default() -> Self {
        LimitOptions::from(&LoadOptions::default())
    }
}

impl From<&LoadOptions> for LimitOptions {
    fn from(o: &LoadOptions) -> Self {
        LimitOptions {
            max_line_bytes: o.max_line_bytes,
            max_entries: o.max_entries,
            max_decompressed_bytes: o.max_decompressed_bytes,
            max_compression_ratio: o.max_compression_ratio,
            max_file_bytes: o.max_file_bytes,
        }
    }
}

impl LimitOptions {
    /// Default load options with these limits.
    pub fn load_options(&self) -> LoadOptions {
        LoadOptions {
            max_line_bytes: self.max_line_bytes,
            max_entries: self.max_entries,
            max_decompressed_bytes: self.max_decompressed_bytes,
            max_compression_ratio: self.max_compression_ratio,
            max_file_bytes: self.max_file_bytes,
            ..LoadOptions::default()
        }
    }

    /// [`LoadOptions::check_file_size`] of a size a binding was told (a JS
    /// number: a file's `stat` size, a Blob's `size`, which a negative or
    /// non-finite value never exceeds the limit by), naming `path` when known.
    pub fn check_claimed_file_size(&self, size: f64, path: Option<String>) -> crate::Result<()> {
        let size = if size.is_finite() && size > 0.0 {
            size as u64
        } else {
            0
        };
        self.load_options()
            .check_file_size_at(size, path.as_deref())
    }
}

/// Options for a lazy resume.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct LazyOptions {
    /// Keep at most this many messages (the newest) in `getContext()`; older ones
    /// come back page by page from `loadMoreHistory()`. Default: no limit, so the
    /// context equals the one a full load builds.
    #[cfg_attr(feature = "ts", ts(optional))]
    pub max_messages: Option<u32>,
    /// Put the compaction summary first in the context even when `maxMessages`
    /// cuts messages. Default `true`.
    #[cfg_attr(feature = "ts", ts(as = "Option<bool>", optional))]
    pub include_summary: bool,
    /// Walk back far enough to find the thinking level and model in force at the
    /// leaf even when no resume hint has them. Default `true`.
    #[cfg_attr(feature = "ts", ts(as = "Option<bool>", optional))]
    pub resolve_settings: bool,
    /// Use and refresh the resume hint next to the session file. Default `true`.
    #[cfg_attr(feature = "ts", ts(as = "Option<bool>", optional))]
    pub use_hint: bool,
    /// As in [`LoadOptions`].
    #[cfg_attr(feature = "ts", ts(as = "Option<bool>", optional))]
    pub lenient: bool,
    /// As in [`LoadOptions`].
    #[cfg_attr(feature = "ts", ts(as = "Option<u64>", optional))]
    pub max_line_bytes: u64,
    /// As in [`LoadOptions`].
    #[cfg_attr(feature = "ts", ts(as = "Option<u32>", optional))]
    pub max_depth: u32,
    /// As in [`LoadOptions`].
    #[cfg_attr(feature = "ts", ts(as = "Option<u64>", optional))]
    pub max_entries: u64,
    /// As in [`LoadOptions`].
    #[cfg_attr(feature = "ts", ts(as = "Option<u64>", optional))]
    pub max_decompressed_bytes: u64,
    /// As in [`LoadOptions`].
    #[cfg_attr(feature = "ts", ts(as = "Option<u32>", optional))]
    pub max_compression_ratio: u32,
    /// As in [`LoadOptions`]: a lazy resume reads only the tail of a file, so
    /// this bounds only the files it reads whole (`.jsonl.gz`, version 1).
    #[cfg_attr(feature = "ts", ts(as = "Option<u64>", optional))]
    pub max_file_bytes: u64,
}

impl Default for LazyOptions {
    fn default() -> Self {
        let l = LoadOptions::default();
        LazyOptions {
            max_messages: None,
            include_summary: true,
            resolve_settings: true,
            use_hint: true,
            lenient: false,
            max_line_bytes: l.max_line_bytes,
            max_depth: l.max_depth,
            max_entries: l.max_entries,
            max_decompressed_bytes: l.max_decompressed_bytes,
            max_compression_ratio: l.max_compression_ratio,
            max_file_bytes: l.max_file_bytes,
        }
    }
}

impl LazyOptions {
    /// The load options these lazy options imply.
    pub fn load_options(&self) -> LoadOptions {
        LoadOptions {
            lenient: self.lenient,
            max_line_bytes: self.max_line_bytes,
            max_depth: self.max_depth,
            max_entries: self.max_entries,
            max_decompressed_bytes: self.max_decompressed_bytes,
            max_compression_ratio: self.max_compression_ratio,
            max_file_bytes: self.max_file_bytes,
        }
    }
}

/// A line that lenient loading skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SkippedLine {
    /// 1-based line number (`null` when unknown, as in lazy loads).
    pub line: Option<u64>,
    /// Byte offset of the line's first byte.
    pub offset: u64,
    /// Why the line was skipped.
    pub reason: String,
}

/// An incomplete last line that loading cut off (a write torn by a crash).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct TornTail {
    /// 1-based line number of the torn line (`null` when unknown).
    pub line: Option<u64>,
    /// Byte offset where the torn line starts: the file's valid length.
    pub offset: u64,
    /// Number of bytes cut off.
    pub bytes: u64,
}

/// The provider and model in force at a point of the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ModelRef {
    pub provider: Option<String>,
    pub model_id: Option<String>,
}

/// Facts about a loaded session.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SessionMetadata {
    /// The session id from the header line.
    pub session_id: String,
    /// Format version of the file as written (1, 2 or 3). Older versions are
    /// migrated in memory; the file is never rewritten by loading.
    pub version: u32,
    /// Working directory from the header.
    pub cwd: Option<String>,
    /// The header's timestamp (when the session was created).
    pub created_at: Option<String>,
    /// Path of the session this one was forked from, if any.
    pub parent_session: Option<String>,
    /// Display name from the newest `session_info` entry with a name.
    pub name: Option<String>,
    /// Number of entries after the header (`leaf` pointer entries included).
    pub entry_count: u64,
    /// Number of `message` entries.
    pub message_count: u64,
    /// Timestamp of the first entry (file order).
    pub first_timestamp: Option<String>,
    /// Timestamp of the last entry (file order).
    pub last_timestamp: Option<String>,
    /// Number of entries with two or more children.
    pub branch_points: u64,
    /// Number of entries without children.
    pub leaf_count: u64,
    /// The current leaf: the target of the last `leaf` entry if it is newer than
    /// every other entry, else the last entry. `null` for an empty session or after
    /// a move to before the first entry.
    pub leaf_id: Option<String>,
    /// Number of `compaction` entries.
    pub compactions: u64,
    /// Size of the file in bytes (decompressed size for `.jsonl.gz`).
    pub file_size: u64,
    /// The file was gzip-compressed.
    pub gzip: bool,
    /// Number of lines, blank ones included.
    pub line_count: u64,
    /// Number of malformed lines skipped by a lenient load.
    pub skipped_lines: u64,
    /// The first skipped lines (at most 100), with reasons.
    pub skipped: Vec<SkippedLine>,
    /// The incomplete last line that was cut off, if any.
    pub torn_tail: Option<TornTail>,
    /// The last line is complete JSON but has no newline after it.
    pub missing_final_newline: bool,
    /// Entries whose id was already used by an earlier entry (the later one wins
    /// when the id is looked up, as in pi).
    pub duplicate_ids: u64,
    /// Entries whose parent does not exist; they are treated as roots.
    pub orphans: u64,
    /// Parent cycles broken by a lenient load (the earliest entry of each cycle
    /// becomes a root). A strict load fails with `CORRUPTED_DATA` instead.
    pub broken_cycles: u64,
    /// Additional `session` header lines after the first (ignored, kept in the file).
    pub extra_headers: u64,
    /// The design notes' name for `firstTimestamp`.
    pub start_time: Option<String>,
    /// The design notes' name for `lastTimestamp`.
    pub last_time: Option<String>,
    /// The design notes' name for `branchPoints`.
    pub branches: u64,
}

/// One entry of the session tree, summarized (no payload).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct TreeNode {
    pub id: String,
    /// The parent in the tree (`null` for roots, orphans included).
    pub parent_id: Option<String>,
    /// Entry type (`message`, `compaction`, ...).
    #[serde(rename = "type")]
    #[cfg_attr(feature = "ts", ts(rename = "type"))]
    pub kind: String,
    /// For messages: the role (`user`, `assistant`, `toolResult`, ...).
    pub role: Option<String>,
    pub timestamp: Option<String>,
    /// The entry's label, if one is set.
    pub label: Option<String>,
    /// Number of children.
    pub children: u32,
    /// 1-based line number in the file (`null` when unknown).
    pub line: Option<u64>,
    /// Byte offset of the entry's line.
    pub offset: u64,
}

/// A linear run of the tree: entries that each have exactly one child, collapsed
/// into one node (what tree views draw).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct TreeRun {
    /// First and last entry of the run.
    pub first_id: String,
    pub last_id: String,
    /// Index of the parent run in the returned array (`null` for roots).
    pub parent: Option<u32>,
    /// Indices of the child runs (two or more: `lastId` is a branch point).
    pub children: Vec<u32>,
    /// Entries in the run.
    pub entries: u32,
    /// `message` entries in the run.
    pub messages: u32,
    /// Compactions in the run.
    pub compactions: u32,
    /// Labels set on entries of the run (`{id, label}`).
    pub labels: Vec<RunLabel>,
    /// The current leaf is in this run.
    pub current: bool,
    /// 1-based line of the run's first entry.
    pub first_line: Option<u64>,
    /// Depth in entries from the root to the run's first entry.
    pub depth: u32,
}

/// A label inside a [`TreeRun`].
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RunLabel {
    pub id: String,
    pub label: String,
}

/// Where a session file stands, read from its header and tail only.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SessionInfo {
    /// Path of the file.
    pub path: String,
    /// Session id from the header (`null` when the file is not a session; see `error`).
    pub id: Option<String>,
    pub version: Option<u32>,
    pub cwd: Option<String>,
    pub created_at: Option<String>,
    /// Timestamp of the last entry.
    pub modified_at: Option<String>,
    pub parent_session: Option<String>,
    /// Display name, when the resume hint or the tail holds one.
    pub name: Option<String>,
    /// The current leaf as the tail shows it.
    pub leaf_id: Option<String>,
    /// File size in bytes.
    pub file_size: u64,
    /// File modification time (ms since the epoch).
    pub mtime_ms: Option<f64>,
    pub gzip: bool,
    /// Entry and message counts, when a resume hint for this exact file length has them.
    pub entry_count: Option<u64>,
    pub message_count: Option<u64>,
    /// Set when the file could not be read as a session.
    pub error: Option<crate::Error>,
}

/// A batch from an incremental load.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct BatchInfo {
    /// Byte offset where the batch starts.
    pub start_offset: u64,
    /// Byte offset after the batch's last line: where the next batch starts.
    pub end_offset: u64,
    /// Byte offset of each entry in the batch.
    pub offsets: Vec<u64>,
    /// 1-based line number of each entry.
    pub lines: Vec<u64>,
    /// No more entries follow.
    pub done: bool,
}

/// Facts about a lazy resume.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct LazyMetadata {
    pub session_id: String,
    pub version: u32,
    pub cwd: Option<String>,
    pub created_at: Option<String>,
    pub parent_session: Option<String>,
    /// The current leaf (see `SessionMetadata.leafId`).
    pub leaf_id: Option<String>,
    /// File size in bytes.
    pub file_size: u64,
    /// How the tail was found: `"hint"` (the resume hint was valid), `"scan"`
    /// (reverse scan from the end), or `"full"` (the file had to be read whole:
    /// gzip or version 1).
    pub mode: String,
    /// Why the resume hint was not used, when it was not.
    pub hint_rejected: Option<String>,
    /// Whether a fresh resume hint was written after this load.
    pub hint_written: bool,
    /// Bytes read from the file.
    pub bytes_read: u64,
    /// Byte offset of the oldest entry loaded so far.
    pub window_start: u64,
    /// Number of entries on the leaf's path loaded so far.
    pub loaded_entries: u64,
    /// Number of messages in the current context window.
    pub context_messages: u64,
    /// Entry id of the newest compaction on the leaf's path, if any.
    pub compaction_id: Option<String>,
    /// Whether the thinking level and model are known exactly (false only when
    /// `resolveSettings` was off and no hint had them).
    pub settings_resolved: bool,
    /// Whether older history can still be paged in with `loadMoreHistory()`.
    pub has_more_history: bool,
    /// The incomplete last line that was cut off, if any.
    pub torn_tail: Option<TornTail>,
    /// Entry and message counts, when the resume hint had them for this file length.
    pub entry_count: Option<u64>,
    pub message_count: Option<u64>,
}

/// Durability of a writer's appends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum Durability {
    /// Every append is written and fsynced on its own before its promise resolves.
    #[default]
    Fsync,
    /// Group commit: appends waiting together share one write and one fsync; every
    /// promise resolves after that fsync.
    Group,
    /// Event logs only, for tests: events are kept in memory and nothing is written.
    Memory,
}

/// Options for opening an event log.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct EventLogOptions {
    /// `'fsync'` (default): every append is on disk before its promise resolves;
    /// `'group'`: group commit; `'memory'`: nothing is written (tests).
    #[cfg_attr(feature = "ts", ts(as = "Option<Durability>", optional))]
    pub durability: Durability,
    /// Open a log another process writes: no lock is taken, appends fail, and
    /// reads and subscriptions follow the file as it grows.
    #[cfg_attr(feature = "ts", ts(as = "Option<bool>", optional))]
    pub read_only: bool,
    /// Longest event line accepted, in bytes. Default 64 MiB.
    #[cfg_attr(feature = "ts", ts(as = "Option<u64>", optional))]
    pub max_line_bytes: u64,
    /// Deepest JSON nesting accepted. Default 512.
    #[cfg_attr(feature = "ts", ts(as = "Option<u32>", optional))]
    pub max_depth: u32,
}

impl Default for EventLogOptions {
    fn default() -> Self {
        EventLogOptions {
            durability: Durability::Fsync,
            read_only: false,
            max_line_bytes: 64 << 20,
            max_depth: DEFAULT_MAX_DEPTH as u32,
        }
    }
}

/// What opening an event log found.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct EventLogInfo {
    /// The file did not exist and was created.
    pub created: bool,
    /// A torn last line was cut off (read-write) or is being ignored (read-only).
    pub repaired: Option<TornTail>,
    /// The sparse index was missing or stale and was rebuilt by scanning the log.
    pub index_rebuilt: bool,
    /// Number of events in the log.
    pub events: u64,
    /// The last event's bookmark.
    pub last_bookmark: Option<crate::events::Bookmark>,
    pub read_only: bool,
    pub durability: Durability,
}

impl EventLogInfo {
    /// Nothing found yet, for a log opened with `opts`.
    pub fn new(opts: &EventLogOptions) -> Self {
        EventLogInfo {
            created: false,
            repaired: None,
            index_rebuilt: false,
            events: 0,
            last_bookmark: None,
            read_only: opts.read_only,
            durability: opts.durability,
        }
    }
}

/// Options for opening a session writer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct WriterOptions {
    /// `'fsync'` (default) or `'group'`.
    #[cfg_attr(feature = "ts", ts(as = "Option<Durability>", optional))]
    pub durability: Durability,
    /// For a new file: the working directory written to the header. Default: the
    /// process's current directory.
    #[cfg_attr(feature = "ts", ts(optional))]
    pub cwd: Option<String>,
    /// For a new file: the session id. Default: a random UUID.
    #[cfg_attr(feature = "ts", ts(optional))]
    pub session_id: Option<String>,
    /// For a new file: the session this one was forked from.
    #[cfg_attr(feature = "ts", ts(optional))]
    pub parent_session: Option<String>,
    /// Rewrite a version 1 or 2 file as version 3 (atomically) before appending.
    /// Without it such files are refused with `MIGRATION_REQUIRED`.
    #[cfg_attr(feature = "ts", ts(as = "Option<bool>", optional))]
    pub migrate: bool,
    /// Keep `<file>.idx.json` (the lazy-resume hint) current. Default `true`.
    #[cfg_attr(feature = "ts", ts(as = "Option<bool>", optional))]
    pub hint: bool,
    /// Write gzip members (the default for paths ending in `.gz`).
    #[cfg_attr(feature = "ts", ts(optional))]
    pub gzip: Option<bool>,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            durability: Durability::Fsync,
            cwd: None,
            session_id: None,
            parent_session: None,
            migrate: false,
            hint: true,
            gzip: None,
        }
    }
}

/// What opening a writer found and repaired.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct WriterOpenReport {
    /// The file did not exist (or was empty) and a header was written.
    pub created: bool,
    /// A torn last line was cut off.
    pub repaired: Option<TornTail>,
    /// A missing final newline was added.
    pub newline_added: bool,
    /// The file was migrated from this version to version 3.
    pub migrated_from: Option<u32>,
    /// The current leaf after opening.
    pub leaf_id: Option<String>,
    /// Number of entries in the file.
    pub entry_count: u64,
}

/// A session kept in a store (IndexedDB in browsers): what `listSessions()`
/// returns, read from the session's record only.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct StoredSessionInfo {
    /// The key in the store (a pi header's id by default).
    pub id: String,
    /// Display name: the one given at import, else the session's own, else the file name.
    pub name: Option<String>,
    /// The imported file's name, if known.
    pub source: Option<String>,
    /// What was imported: `pi`, `claude-code` or `codex`.
    pub format: String,
    /// The imported pi file's format version (1–3; 0 for other formats). Stored
    /// sessions are always version 3.
    pub version: u32,
    pub cwd: Option<String>,
    /// The session header's timestamp.
    pub created_at: Option<String>,
    /// When the store last changed it.
    pub modified_at: String,
    pub imported_at: String,
    /// The session it was forked from, if any.
    pub parent_session: Option<String>,
    /// The current leaf.
    pub leaf_id: Option<String>,
    pub entry_count: u64,
    pub message_count: u64,
    /// Size of the stored pi v3 JSONL.
    pub bytes: u64,
    /// Size of the imported file kept beside it (0: the JSONL is the imported file).
    pub source_bytes: u64,
    /// The imported file was gzip.
    pub gzip: bool,
    /// Changed since the import (entries appended, leaf moved): exporting gives
    /// the pi JSONL, no longer the imported bytes.
    pub changed: bool,
    /// The name of the session's event log in the same database
    /// (`session:<id>:<n>`; a session deleted and imported again gets a new one).
    #[serde(default)]
    pub log_name: String,
    /// Set by `listSessions` when the record could not be read (damaged, or
    /// written by a newer forkpoint); the other fields are then empty.
    /// `deleteSession(id)` removes such a session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub error: Option<crate::Error>,
}

/// A checkpoint of a stored session, as `IndexedDbStore` answers it: the
/// session's `forkpoint.checkpoint` entry (the record an agent's
/// `checkpoints.create` writes, `CheckpointInfo`) with the session's id, and
/// `createdAt` as ISO text.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Checkpoint {
    pub id: String,
    pub session_id: String,
    pub label: Option<String>,
    /// The entry the checkpoint points at (the leaf when it was saved, unless
    /// given); `null`: before the first entry.
    pub entry_id: Option<String>,
    /// Entries in the session when it was saved.
    pub entry_count: u64,
    /// The last event seq of the session's event log when it was saved.
    pub event_seq: Option<u64>,
    pub created_at: String,
    /// The workflow execution it belongs to (the checkpoint's id unless given).
    pub execution_id: String,
    /// The step's name (the label, or `''`, unless given).
    pub step_name: String,
    /// The step's index (0 unless given).
    pub step_index: u64,
    /// `'success'` unless given.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional, type = "unknown"))]
    pub state: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional, type = "unknown"))]
    pub context: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional, type = "Record<string, unknown>"))]
    pub variables: Option<serde_json::Value>,
}
