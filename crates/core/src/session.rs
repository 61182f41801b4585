//! A fully loaded session: the file's text, one record per entry, the tree.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::context::{self, Context, PathItem, Window};
use crate::entry::{self, EntryKind};
use crate::error::{Error, ErrorCode, Result};
use crate::gz;
use crate::json::{self, Kind};
use crate::load::{EntryRec, Header, LineOut, LineProcessor};
use crate::tree::{self, IdIndex, NONE, Tree};
use crate::types::{LoadOptions, SessionMetadata, TornTail, TreeNode};

/// A session loaded whole. Entries stay as the text they were written as;
/// only what the tree and the context need is indexed.
#[derive(Debug)]
pub struct Session {
    /// The file's content as text (decompressed for gzip). Invalid UTF-8 can only
    /// sit in skipped or torn lines; it is replaced there by `?`, byte for byte.
    /// The file's own bytes are kept in `original` when they differ from `text`
    /// (gzip, or invalid UTF-8), so export is byte-identical.
    text: std::sync::Arc<String>,
    original: Option<Vec<u8>>,
    header: Header,
    entries: Vec<EntryRec>,
    /// Migrated text of entries of version 1 and 2 files, by entry index.
    migrated: HashMap<u32, Box<str>>,
    idx: IdIndex,
    tree: Tree,
    duplicate_ids: u64,
    max_depth: usize,
    gzip: bool,
    path: Option<String>,
    stats: LoadStats,
    labels: OnceLock<HashMap<Box<str>, String>>,
    interner: crate::load::Interner,
}

#[derive(Debug, Default, Clone)]
struct LoadStats {
    line_count: u64,
    skipped_count: u64,
    skipped: Vec<crate::types::SkippedLine>,
    torn: Option<TornTail>,
    missing_final_newline: bool,
    extra_headers: u64,
    file_size: u64,
}

/// Files smaller than this are scanned on one thread.
const PARALLEL_MIN_BYTES: usize = 4 << 20;

/// About how many bytes of lines one call of [`Scan::lines`] gets on one thread.
const SCAN_BATCH_BYTES: usize = 1 << 20;

/// Entries found in a range of lines.
#[derive(Debug, Default)]
struct ChunkOut {
    entries: Vec<EntryRec>,
    migrated: HashMap<u32, Box<str>>,
}

/// The text being scanned and its invalid-UTF-8 positions.
#[derive(Clone, Copy)]
struct Scan<'a> {
    text: &'a str,
    bad_utf8: &'a [usize],
}

impl Scan<'_> {
    /// Feeds the lines in `[start, end)` (which start and end at line boundaries)
    /// to `proc`, collecting entries into `out`. Never inlined: each batch is a
    /// call of its own (see [`SCAN_BATCH_BYTES`]).
    #[inline(never)]
    fn lines(
        &self,
        start: usize,
        end: usize,
        proc: &mut LineProcessor,
        out: &mut ChunkOut,
    ) -> Result<()> {
        let tb = &self.text.as_bytes()[..end];
        let mut ls = start;
        let mut bad_i = self.bad_utf8.partition_point(|&b| b < start);
        let mut one =
            |ls: usize, le: usize, has_nl: bool, proc: &mut LineProcessor| -> Result<()> {
                while bad_i < self.bad_utf8.len() && self.bad_utf8[bad_i] < ls {
                    bad_i += 1;
                }
                let line: std::result::Result<&str, usize> =
                    if bad_i < self.bad_utf8.len() && self.bad_utf8[bad_i] < le {
                        Err(self.bad_utf8[bad_i] - ls)
                    } else {
                        Ok(self.text.get(ls..le).unwrap_or(""))
                    };
                if let LineOut::Entry(rec, m) = proc.line_str(line, le - ls, ls as u64, has_nl)? {
                    if let Some(m) = m {
                        out.migrated.insert(out.entries.len() as u32, m);
                    }
                    out.entries.push(rec);
                }
                Ok(())
            };
        while let Some(le) = next_newline(tb, ls) {
            one(ls, le, true, proc)?;
            ls = le + 1;
        }
        if ls < end {
            one(ls, end, false, proc)?;
        }
        Ok(())
    }
}

/// The index of the first `\n` at or after `i`.
#[cfg(not(target_arch = "wasm32"))]
#[inline]
fn next_newline(b: &[u8], i: usize) -> Option<usize> {
    memchr::memchr(b'\n', b.get(i..)?).map(|k| i + k)
}

/// The index of the first `\n` at or after `i`, sixteen bytes a step in two
/// 64-bit words (memchr's portable search, what WebAssembly without SIMD
/// gets, steps in `usize`: 32 bits there).
#[cfg(target_arch = "wasm32")]
fn next_newline(b: &[u8], i: usize) -> Option<usize> {
    next_newline_words(b, i)
}

/// [`next_newline`] for WebAssembly (also built for the tests).
#[cfg(any(target_arch = "wasm32", test))]
fn next_newline_words(b: &[u8], mut i: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const NL: u64 = ONES * b'\n' as u64;
    // High bit of each `\n` byte (only the lowest set bit is exact).
    let mask = |w: [u8; 8]| {
        let x = u64::from_le_bytes(w) ^ NL;
        x.wrapping_sub(ONES) & !x & (ONES << 7)
    };
    while let Some(chunk) = b.get(i..i + 16) {
        let (lo, hi) = chunk.split_at(8);
        let (Ok(lo), Ok(hi)) = (<[u8; 8]>::try_from(lo), <[u8; 8]>::try_from(hi)) else {
            break;
        };
        let m = mask(lo);
        if m != 0 {
            return Some(i + (m.trailing_zeros() / 8) as usize);
        }
        let m = mask(hi);
        if m != 0 {
            return Some(i + 8 + (m.trailing_zeros() / 8) as usize);
        }
        i += 16;
    }
    memchr::memchr(b'\n', b.get(i..)?).map(|k| i + k)
}

/// `threads + 1` boundaries splitting `[pos, len)` at line starts.
fn split_at_lines(b: &[u8], pos: usize, threads: usize) -> Vec<usize> {
    let mut bounds = vec![pos];
    let step = (b.len() - pos) / threads.max(1);
    for k in 1..threads {
        let guess = (pos + k * step).max(*bounds.last().unwrap_or(&pos));
        let cut = memchr::memchr(b'\n', &b[guess..]).map_or(b.len(), |i| guess + i + 1);
        if cut < b.len() && cut > *bounds.last().unwrap_or(&pos) {
            bounds.push(cut);
        }
    }
    bounds.push(b.len());
    bounds
}

/// Merges chunk results into the main processor in file order, settling what
/// only the order decides: a bad line at a chunk's end followed by more lines
/// is corruption, line numbers continue, setting ids are re-interned.
fn merge_chunks(
    main: &mut LineProcessor,
    out: &mut ChunkOut,
    chunks: Vec<(LineProcessor, ChunkOut, Result<()>)>,
    opts: &LoadOptions,
) -> Result<()> {
    let n = chunks.len();
    let mut line_base = main.line_count;
    let mut pending: Option<(Error, bool)> = None;
    for (k, (mut p, o, r)) in chunks.into_iter().enumerate() {
        let renumber = |e: &mut Error| {
            if let Some(l) = e.line.as_mut() {
                *l += line_base;
            }
        };
        let has_content = p.line_count > p.blank_lines;
        if let Some((mut bad, nl)) = pending.take() {
            if has_content || r.is_err() {
                // The earlier chunk's last bad line has lines after it.
                if !opts.lenient {
                    return Err(bad);
                }
                let line = bad.line;
                main.record_skip(
                    line,
                    bad.offset.unwrap_or(0),
                    std::mem::take(&mut bad.message),
                );
            } else {
                pending = Some((bad, nl));
            }
        }
        if let Err(mut e) = r {
            renumber(&mut e);
            return Err(e);
        }
        if let Some((mut bad, nl)) = p.take_pending_bad() {
            renumber(&mut bad);
            if k + 1 == n {
                // The file's last line: settled by `finish`.
                main.restore_pending_bad(bad, false, nl);
            } else {
                pending = Some((bad, nl));
            }
        }
        let remap: Vec<u32> = (0..p.interner.len() as u32)
            .map(|i| {
                if i == 0 {
                    0
                } else {
                    main.interner.intern(p.interner.get(i))
                }
            })
            .collect();
        let base = out.entries.len() as u32;
        let mut entries = o.entries;
        for rec in &mut entries {
            rec.line += line_base;
            if rec.setting != 0 {
                rec.setting = remap.get(rec.setting as usize).copied().unwrap_or(0);
            }
        }
        if out.entries.is_empty() {
            // The first chunk's records become the list: not copied, and not
            // held twice while the file's largest allocations are alive.
            out.entries = entries;
        } else {
            out.entries.append(&mut entries);
        }
        for (i, m) in o.migrated {
            out.migrated.insert(base + i, m);
        }
        for mut s in p.skipped.drain(..) {
            if let Some(l) = s.line.as_mut() {
                *l += line_base;
            }
            if main.skipped.len() < 100 {
                main.skipped.push(s);
            }
        }
        main.absorb_counts(&p);
        line_base += p.line_count;
    }
    if let Some((bad, nl)) = pending {
        // Only blank lines followed: the bad line is the last one.
        main.restore_pending_bad(bad, false, nl);
    }
    Ok(())
}

/// Replaces invalid UTF-8 with `?` byte for byte; returns the text and the
/// positions of the first invalid byte of each bad sequence.
fn to_text(bytes: Vec<u8>) -> (String, Option<Vec<u8>>, Vec<usize>) {
    match String::from_utf8(bytes) {
        Ok(s) => (s, None, Vec::new()),
        Err(e) => {
            let original = e.into_bytes();
            let mut fixed = original.clone();
            let mut bad = Vec::new();
            let mut pos = 0;
            while pos < fixed.len() {
                match std::str::from_utf8(&fixed[pos..]) {
                    Ok(_) => break,
                    Err(e) => {
                        let at = pos + e.valid_up_to();
                        let n = e.error_len().unwrap_or(fixed.len() - at);
                        bad.push(at);
                        for b in &mut fixed[at..at + n] {
                            *b = b'?';
                        }
                        pos = at + n;
                    }
                }
            }
            let text = String::from_utf8(fixed).unwrap_or_default();
            (text, Some(original), bad)
        }
    }
}

impl Session {
    /// Loads a session from the bytes of a file (`.jsonl` or `.jsonl.gz`, detected by content).
    pub fn from_bytes(bytes: Vec<u8>, opts: &LoadOptions, path: Option<String>) -> Result<Session> {
        Self::from_bytes_threads(bytes, opts, path, 1)
    }

    /// [`from_bytes`](Self::from_bytes) of a file handed in whole by a caller
    /// (a `Buffer`, a `Blob`, text): `LIMIT_EXCEEDED` first when it is larger
    /// than `maxFileBytes` allows. (The library's own stores load their
    /// sessions with `from_bytes`: an agent's session is never refused for
    /// its size.)
    pub fn from_file_bytes(
        bytes: Vec<u8>,
        opts: &LoadOptions,
        path: Option<String>,
    ) -> Result<Session> {
        opts.check_file_size_at(bytes.len() as u64, path.as_deref())?;
        Self::from_bytes(bytes, opts, path)
    }

    /// As [`from_bytes`](Self::from_bytes), scanning large version-3 files on up
    /// to `threads` threads (results are merged in file order, so errors, line
    /// numbers and counts are the same as with one thread).
    pub fn from_bytes_threads(
        bytes: Vec<u8>,
        opts: &LoadOptions,
        path: Option<String>,
        threads: usize,
    ) -> Result<Session> {
        Self::from_bytes_split(bytes, opts, path, threads, PARALLEL_MIN_BYTES)
    }

    /// As [`from_bytes_threads`](Self::from_bytes_threads) with the size above
    /// which the scan is split (for tests of the split).
    #[doc(hidden)]
    pub fn from_bytes_split(
        bytes: Vec<u8>,
        opts: &LoadOptions,
        path: Option<String>,
        threads: usize,
        parallel_min: usize,
    ) -> Result<Session> {
        let with_path = |e: Error| match &path {
            Some(p) => e.with_path(p.clone()),
            None => e,
        };
        let mut gz_torn = None;
        let gzip = gz::is_gzip(&bytes);
        let mut compressed = None;
        let bytes = if gzip {
            let d =
                gz::decode(&bytes, opts.lenient, &gz::GzLimits::from(opts)).map_err(with_path)?;
            gz_torn = d.torn;
            compressed = Some(bytes);
            d.data
        } else {
            bytes
        };
        let file_size = bytes.len() as u64;
        let (text, original, bad_utf8) = to_text(bytes);
        let original = compressed.or(original);
        let scan = Scan {
            text: &text,
            bad_utf8: &bad_utf8,
        };
        let mut proc = LineProcessor::new(opts.clone(), path.clone());
        let mut out = ChunkOut::default();
        // The header (and any blank lines before it) first, on this thread.
        let mut pos = 0usize;
        while proc.header.is_none() && pos < text.len() {
            let end =
                memchr::memchr(b'\n', &text.as_bytes()[pos..]).map_or(text.len(), |i| pos + i);
            scan.lines(pos, (end + 1).min(text.len()), &mut proc, &mut out)
                .map_err(with_path)?;
            pos = (end + 1).min(text.len());
        }
        let parallel = threads > 1
            && proc.header.as_ref().is_some_and(|h| h.version >= 3)
            && text.len() - pos >= parallel_min;
        if parallel {
            let header = proc
                .header
                .clone()
                .ok_or_else(|| Error::internal("no header"))?;
            let bounds = split_at_lines(text.as_bytes(), pos, threads);
            // The first part here, the others on threads of their own; a part
            // whose thread could not be had or panicked is scanned here after.
            let scan_part = |(a, b): (usize, usize)| {
                let mut p = LineProcessor::for_chunk(opts.clone(), path.clone(), header.clone());
                let mut o = ChunkOut::default();
                let r = scan.lines(a, b, &mut p, &mut o);
                (p, o, r)
            };
            let parts: Vec<(usize, usize)> = bounds.windows(2).map(|w| (w[0], w[1])).collect();
            let (first, later) = crate::threads::on_threads(
                "forkpoint-scan",
                parts[1..].iter().copied(),
                || scan_part(parts[0]),
                scan_part,
            );
            let mut chunks = Vec::with_capacity(parts.len());
            chunks.push(first);
            for (part, done) in parts[1..].iter().zip(later) {
                chunks.push(done.unwrap_or_else(|| scan_part(*part)));
            }
            merge_chunks(&mut proc, &mut out, chunks, opts).map_err(with_path)?;
        } else {
            // In batches of lines: a WebAssembly engine swaps optimized code in
            // only between calls, so one call over the whole file would run its
            // loop in the engine's baseline tier from start to end.
            let tb = text.as_bytes();
            let mut a = pos;
            while a < text.len() {
                let guess = a + SCAN_BATCH_BYTES;
                let b = match tb.get(guess..) {
                    Some(rest) => memchr::memchr(b'\n', rest).map_or(tb.len(), |i| guess + i + 1),
                    None => tb.len(),
                };
                scan.lines(a, b, &mut proc, &mut out).map_err(with_path)?;
                a = b;
            }
        }
        proc.finish(file_size).map_err(with_path)?;
        let ChunkOut { entries, migrated } = out;
        let header = proc
            .header
            .take()
            .ok_or_else(|| Error::internal("no header after a successful load"))?;
        if u32::try_from(entries.len()).is_err() || entries.len() as u64 > opts.max_entries {
            return Err(with_path(Error::new(
                ErrorCode::LimitExceeded,
                format!(
                    "more than {} entries (raise maxEntries to load it)",
                    opts.max_entries.min(u64::from(u32::MAX))
                ),
            )));
        }

        let (idx, duplicate_ids) = IdIndex::build(&entries);
        let tree = Tree::build(&entries, &idx);
        if let Some(&cut) = tree.broken_cycles.first()
            && !opts.lenient
        {
            let e = &entries[cut as usize];
            return Err(with_path(
                Error::corrupted(format!(
                    "entry {:?} is part of a parent cycle (its ancestors lead back to it)",
                    e.id
                ))
                .at(e.line_no(), e.offset),
            ));
        }
        let stats = LoadStats {
            line_count: proc.line_count,
            skipped_count: proc.skipped_count,
            skipped: std::mem::take(&mut proc.skipped),
            torn: gz_torn.or(proc.torn.take()),
            missing_final_newline: proc.missing_final_newline,
            extra_headers: proc.extra_headers,
            file_size,
        };
        Ok(Session {
            text: std::sync::Arc::new(text),
            original,
            header,
            entries,
            migrated,
            idx,
            tree,
            duplicate_ids,
            max_depth: opts.max_depth as usize,
            gzip,
            path,
            stats,
            labels: OnceLock::new(),
            interner: std::mem::take(&mut proc.interner),
        })
    }

    /// The text of entry `i` (migrated for version 1 and 2 files).
    pub fn entry_text(&self, i: u32) -> &str {
        if let Some(m) = self.migrated.get(&i) {
            return m;
        }
        let e = &self.entries[i as usize];
        let s = e.offset as usize;
        self.text.get(s..s + e.len as usize).unwrap_or("")
    }

    /// The whole session in version-3 form (header with `"version":3`, entries
    /// migrated), for rewriting an older file before appending to it. Lines that
    /// were skipped or torn are left out.
    pub fn to_v3_jsonl(&self) -> String {
        let header = self.header_text();
        let mut out = String::with_capacity(self.text.len() + 64 * self.entries.len());
        out.push_str("{\"type\":\"session\",\"version\":3");
        let b = header.as_bytes();
        if let Ok(mut r) = json::ObjectReader::open(b, 0, 1, self.max_depth) {
            while let Ok(Some(k)) = r.next_key() {
                let Ok(v) = r.skip_value() else { break };
                if matches!(k.str(header).as_deref(), Some("type" | "version")) {
                    continue;
                }
                out.push(',');
                out.push_str(k.raw(header));
                out.push(':');
                out.push_str(v.raw(header));
            }
        }
        out.push_str("}\n");
        for i in 0..self.entries.len() {
            out.push_str(self.entry_text(i as u32));
            out.push('\n');
        }
        out
    }

    /// The header line as written.
    pub fn header_text(&self) -> &str {
        let h = &self.header;
        self.text
            .get(h.offset as usize..(h.offset + u64::from(h.len)) as usize)
            .unwrap_or("{}")
    }

    /// The parsed header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Entry records, in file order.
    pub fn entries(&self) -> &[EntryRec] {
        &self.entries
    }

    /// The tree.
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    /// The file's bytes, exactly as read (still compressed for gzip).
    pub fn original_bytes(&self) -> &[u8] {
        self.original.as_deref().unwrap_or(self.text.as_bytes())
    }

    /// The session as JSONL text (decompressed for gzip; invalid UTF-8 in skipped
    /// or torn lines shows as `?`).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The text, shared: parsed trees of its messages point into it.
    pub fn shared_text(&self) -> &std::sync::Arc<String> {
        &self.text
    }

    /// Index of the entry with this id (`leaf` pointers resolve to their target).
    pub fn index_of(&self, id: &str) -> Result<u32> {
        self.idx
            .get(&self.entries, id)
            .ok_or_else(|| Error::not_found(format!("no entry with id {id:?}")))
    }

    fn node_of(&self, id: &str) -> Result<u32> {
        let i = self.index_of(id)?;
        tree::resolve_node(&self.entries, &self.idx, i)
            .ok_or_else(|| Error::not_found(format!("leaf entry {id:?} points at no entry")))
    }

    /// The metadata as JSON (for the bindings).
    pub fn metadata_json(&self) -> Result<String> {
        crate::types::to_json_text(&self.metadata())
    }

    /// Tree nodes as JSON: `which` is `leaves`, `branchPoints`, `roots`, or
    /// `children` (of `id`).
    pub fn nodes_json(&self, which: &str, id: Option<&str>) -> Result<String> {
        let nodes = match (which, id) {
            ("leaves", _) => self.leaves(),
            ("branchPoints", _) => self.branch_points(),
            ("roots", _) => self.roots(),
            ("children", Some(id)) => self.children(id)?,
            _ => {
                return Err(Error::invalid_input(format!("unknown node list {which:?}")));
            }
        };
        crate::types::to_json_text(&nodes)
    }

    /// The tree with linear runs collapsed, as JSON (`TreeRun[]`).
    pub fn tree_json(&self) -> Result<String> {
        crate::types::to_json_text(&self.tree_runs())
    }

    /// Entries `start..end` (file order, header excluded) as a JSON array.
    pub fn entries_json(&self, start: usize, end: usize) -> String {
        let end = end.min(self.entries.len());
        let start = start.min(end);
        let items: Vec<&str> = (start..end).map(|i| self.entry_text(i as u32)).collect();
        context::join_array(&items)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the session has no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// One entry as JSON.
    pub fn entry_json(&self, id: &str) -> Result<String> {
        Ok(self.entry_text(self.index_of(id)?).to_string())
    }

    /// The entries from the root down to `id` (inclusive) as a JSON array.
    pub fn path_json(&self, id: &str) -> Result<String> {
        let path = self.tree.path_to(self.node_of(id)?);
        let items: Vec<&str> = path.iter().map(|&i| self.entry_text(i)).collect();
        Ok(context::join_array(&items))
    }

    /// Ids from the root down to `id`.
    pub fn path_ids(&self, id: &str) -> Result<Vec<String>> {
        let path = self.tree.path_to(self.node_of(id)?);
        Ok(path
            .iter()
            .map(|&i| self.entries[i as usize].id.to_string())
            .collect())
    }

    /// The path items from the root to entry `leaf`.
    fn path_items(&self, leaf: u32) -> Vec<PathItem<'_>> {
        self.tree
            .path_to(leaf)
            .into_iter()
            .map(|i| PathItem {
                rec: &self.entries[i as usize],
                text: self.entry_text(i),
            })
            .collect()
    }

    /// The current leaf's id.
    pub fn leaf_id(&self) -> Option<&str> {
        self.tree.leaf.map(|i| &*self.entries[i as usize].id)
    }

    /// The context from `leaf` (default: the current leaf).
    pub fn context(&self, leaf: Option<&str>) -> Result<Context<'_>> {
        let leaf = match leaf {
            Some(id) => Some(self.node_of(id)?),
            None => self.tree.leaf,
        };
        match leaf {
            Some(l) => context::build(
                &self.path_items(l),
                Window::default(),
                self.max_depth,
                &self.interner,
            ),
            None => Ok(Context {
                thinking_level: "\"off\"".into(),
                ..Context::default()
            }),
        }
    }

    /// The context as JSON: `{"messages","thinkingLevel","model"}`. With `llm`,
    /// messages are converted as pi's `convertToLlm` does.
    pub fn context_json(&self, leaf: Option<&str>, llm: bool) -> Result<String> {
        let mut ctx = self.context(leaf)?;
        if llm {
            ctx.messages = context::to_llm(&ctx.messages, self.max_depth)?;
        }
        Ok(ctx.to_json())
    }

    fn labels(&self) -> &HashMap<Box<str>, String> {
        self.labels.get_or_init(|| {
            let mut map = HashMap::new();
            for (i, e) in self.entries.iter().enumerate() {
                if e.kind != EntryKind::Label {
                    continue;
                }
                let Some(target) = e.target.clone() else {
                    continue;
                };
                let text = self.entry_text(i as u32);
                let label = entry::parse_envelope(text, self.max_depth)
                    .ok()
                    .and_then(|env| env.label)
                    .filter(|v| v.kind == Kind::String)
                    .and_then(|v| v.str(text))
                    .filter(|s| !s.is_empty())
                    .map(|s| s.into_owned());
                match label {
                    Some(l) => {
                        map.insert(target, l);
                    }
                    None => {
                        map.remove(&target);
                    }
                }
            }
            map
        })
    }

    /// The label of an entry.
    pub fn label(&self, id: &str) -> Option<&str> {
        self.labels().get(id).map(String::as_str)
    }

    fn string_field(
        &self,
        i: u32,
        pick: impl Fn(&entry::Envelope) -> Option<json::Value>,
    ) -> Option<String> {
        let text = self.entry_text(i);
        let env = entry::parse_envelope(text, self.max_depth).ok()?;
        pick(&env)
            .filter(|v| v.kind == Kind::String)
            .and_then(|v| v.str(text))
            .map(|s| s.into_owned())
    }

    /// A summary of entry `i` for tree views.
    pub fn node(&self, i: u32) -> TreeNode {
        let e = &self.entries[i as usize];
        let text = self.entry_text(i);
        let env = entry::parse_envelope(text, self.max_depth).unwrap_or_default();
        let s = |v: Option<json::Value>| {
            v.filter(|v| v.kind == Kind::String)
                .and_then(|v| v.str(text))
                .map(|c| c.into_owned())
        };
        let role = if e.kind == EntryKind::Message {
            env.message
                .and_then(|m| entry::parse_message_fields(text, m, self.max_depth).ok())
                .and_then(|f| s(f.role))
        } else {
            None
        };
        let p = self.tree.parent.get(i as usize).copied().unwrap_or(NONE);
        TreeNode {
            id: e.id.to_string(),
            parent_id: (p != NONE).then(|| self.entries[p as usize].id.to_string()),
            kind: s(env.ty).unwrap_or_default(),
            role,
            timestamp: s(env.timestamp),
            label: self.label(&e.id).map(str::to_string),
            children: self.tree.children_of(i).len() as u32,
            line: e.line_no(),
            offset: e.offset,
        }
    }

    fn nodes(&self, pick: impl Fn(u32, &EntryRec) -> bool) -> Vec<TreeNode> {
        self.entries
            .iter()
            .enumerate()
            .filter(|(i, e)| e.kind != EntryKind::Leaf && pick(*i as u32, e))
            .map(|(i, _)| self.node(i as u32))
            .collect()
    }

    /// Entries without children, in file order.
    pub fn leaves(&self) -> Vec<TreeNode> {
        self.nodes(|i, _| self.tree.children_of(i).is_empty())
    }

    /// Entries with two or more children, in file order.
    pub fn branch_points(&self) -> Vec<TreeNode> {
        self.nodes(|i, _| self.tree.children_of(i).len() > 1)
    }

    /// Entries without a parent (orphans included), in file order.
    pub fn roots(&self) -> Vec<TreeNode> {
        self.nodes(|i, _| self.tree.parent[i as usize] == NONE)
    }

    /// Children of an entry, in file order.
    pub fn children(&self, id: &str) -> Result<Vec<TreeNode>> {
        let i = self.node_of(id)?;
        Ok(self
            .tree
            .children_of(i)
            .iter()
            .map(|&c| self.node(c))
            .collect())
    }

    /// The tree with linear runs collapsed, in depth-first order (children in
    /// file order). A run ends at a branch point or a leaf.
    pub fn tree_runs(&self) -> Vec<crate::types::TreeRun> {
        use crate::types::{RunLabel, TreeRun};
        let labels = self.labels();
        let mut runs: Vec<TreeRun> = Vec::new();
        // Stack of (first entry of a run, parent run, depth).
        let mut stack: Vec<(u32, Option<u32>, u32)> = self
            .entries
            .iter()
            .enumerate()
            .filter(|(i, e)| e.kind != EntryKind::Leaf && self.tree.parent[*i] == NONE)
            .map(|(i, _)| (i as u32, None, 0))
            .rev()
            .collect();
        while let Some((first, parent, depth)) = stack.pop() {
            let me = runs.len() as u32;
            let mut run = TreeRun {
                first_id: self.entries[first as usize].id.to_string(),
                last_id: String::new(),
                parent,
                children: Vec::new(),
                entries: 0,
                messages: 0,
                compactions: 0,
                labels: Vec::new(),
                current: false,
                first_line: self.entries[first as usize].line_no(),
                depth,
            };
            let mut i = first;
            loop {
                let e = &self.entries[i as usize];
                run.entries += 1;
                match e.kind {
                    EntryKind::Message => run.messages += 1,
                    EntryKind::Compaction => run.compactions += 1,
                    _ => {}
                }
                if let Some(l) = labels.get(&e.id) {
                    run.labels.push(RunLabel {
                        id: e.id.to_string(),
                        label: l.clone(),
                    });
                }
                run.current |= self.tree.leaf == Some(i);
                match self.tree.children_of(i) {
                    [only] => i = *only,
                    _ => break,
                }
            }
            run.last_id = self.entries[i as usize].id.to_string();
            let kids = self.tree.children_of(i);
            for &c in kids.iter().rev() {
                stack.push((c, Some(me), depth + run.entries));
            }
            if let Some(p) = parent {
                runs[p as usize].children.push(me);
            }
            runs.push(run);
        }
        runs
    }

    /// Facts about the session.
    pub fn metadata(&self) -> SessionMetadata {
        let n = self.entries.len() as u32;
        let ts = |i: u32| self.string_field(i, |e| e.timestamp);
        let name = self
            .entries
            .iter()
            .enumerate()
            .rev()
            .filter(|(_, e)| e.kind == EntryKind::SessionInfo)
            .find_map(|(i, _)| {
                self.string_field(i as u32, |e| e.name)
                    .filter(|s| !s.is_empty())
            });
        let first_timestamp = if n > 0 { ts(0) } else { None };
        let last_timestamp = if n > 0 { ts(n - 1) } else { None };
        SessionMetadata {
            start_time: first_timestamp.clone(),
            last_time: last_timestamp.clone(),
            branches: self.tree.branch_points,
            session_id: self.header.id.clone(),
            version: self.header.version,
            cwd: self.header.cwd.clone(),
            created_at: self.header.timestamp.clone(),
            parent_session: self.header.parent_session.clone(),
            name,
            entry_count: u64::from(n),
            message_count: self
                .entries
                .iter()
                .filter(|e| e.kind == EntryKind::Message)
                .count() as u64,
            first_timestamp,
            last_timestamp,
            branch_points: self.tree.branch_points,
            leaf_count: self.tree.leaf_count,
            leaf_id: self.leaf_id().map(str::to_string),
            compactions: self
                .entries
                .iter()
                .filter(|e| e.kind == EntryKind::Compaction)
                .count() as u64,
            file_size: self.stats.file_size,
            gzip: self.gzip,
            line_count: self.stats.line_count,
            skipped_lines: self.stats.skipped_count,
            skipped: self.stats.skipped.clone(),
            torn_tail: self.stats.torn.clone(),
            missing_final_newline: self.stats.missing_final_newline,
            duplicate_ids: self.duplicate_ids,
            orphans: self.tree.orphans,
            broken_cycles: self.tree.broken_cycles.len() as u64,
            extra_headers: self.stats.extra_headers,
        }
    }

    /// The path given when loading.
    pub fn path(&self) -> Option<&str> {
        self.path.as_deref()
    }

    /// Setting values (thinking levels, models) referenced by entry records.
    pub fn interner(&self) -> &crate::load::Interner {
        &self.interner
    }

    /// Entry indices from the root to the current leaf.
    pub fn leaf_path(&self) -> Vec<u32> {
        self.tree
            .leaf
            .map(|l| self.tree.path_to(l))
            .unwrap_or_default()
    }

    /// The id index (for writers continuing this session).
    pub fn id_index(&self) -> &IdIndex {
        &self.idx
    }

    /// Takes the parts a writer needs.
    pub fn into_parts(self) -> (Header, Vec<EntryRec>, IdIndex, Tree) {
        (self.header, self.entries, self.idx, self.tree)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newline_search_in_words_finds_every_newline() {
        // Newlines at every position of runs up to 40 bytes, among bytes that
        // borrow (0, 0x09, 0x0b) and high bytes, from every start.
        for len in 0..40 {
            for at in 0..=len {
                let mut b: Vec<u8> = (0..len)
                    .map(|k| [b'a', 0, 0x09, 0x0b, 0xff, 0x8a][k % 6])
                    .collect();
                if at < len {
                    b[at] = b'\n';
                    if at + 2 < len {
                        b[at + 2] = b'\n';
                    }
                }
                for start in 0..=len {
                    let want = memchr::memchr(b'\n', &b[start..]).map(|k| start + k);
                    assert_eq!(next_newline_words(&b, start), want, "{len} {at} {start}");
                }
            }
        }
        assert_eq!(next_newline_words(b"abc", 7), None);
    }
}
