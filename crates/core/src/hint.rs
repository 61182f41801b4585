//! The resume hint: a small sidecar file (`<session>.idx.json`) that lets a lazy
//! resume start reading at the right place instead of scanning backwards.
//!
//! It is a cache, never the source of truth: it is validated against the file
//! before use (session id, header length, file length, and the id of the entry at
//! each recorded offset), and any mismatch falls back to the reverse scan.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::context::{self, PathItem};
use crate::entry::EntryKind;
use crate::load::{EntryRec, Header, Interner};

/// Value of the `format` field.
pub const HINT_FORMAT: &str = "forkpoint.resume-hint";
/// Current hint version.
pub const HINT_VERSION: u32 = 1;

/// The sidecar path for a session file.
pub fn hint_path(session_path: &str) -> String {
    format!("{session_path}.idx.json")
}

/// The resume hint (see FORMAT.md, "Resume hint").
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hint {
    pub format: String,
    pub version: u32,
    pub session_id: String,
    /// File length when the hint was written; the file may have grown since.
    pub file_length: u64,
    /// Byte offset just after the header line.
    pub header_end: u64,
    /// The leaf the hint was computed for.
    pub leaf_id: Option<String>,
    /// The oldest entry the context from that leaf needs (the compaction's first
    /// kept entry, else the compaction, else the root of the path) and its offset.
    pub anchor_id: String,
    pub anchor_offset: u64,
    /// Byte ranges `[start, end)` (ascending, whole lines) holding every entry of
    /// the path from the anchor to the leaf: a resume reads only these.
    pub ranges: Vec<[u64; 2]>,
    /// The newest compaction on the leaf's path.
    pub compaction_id: Option<String>,
    pub compaction_offset: Option<u64>,
    /// Thinking level (JSON) and model (JSON) in force just before the anchor.
    pub thinking_level: Box<RawValue>,
    pub model: Box<RawValue>,
    /// Counts for the whole file at `file_length`.
    pub entry_count: Option<u64>,
    pub message_count: Option<u64>,
}

impl Hint {
    /// Parses a hint; `None` for anything that is not a hint of this version.
    pub fn parse(text: &str) -> Result<Hint, String> {
        let h: Hint = serde_json::from_str(text).map_err(|e| format!("unreadable hint: {e}"))?;
        if h.format != HINT_FORMAT || h.version != HINT_VERSION {
            return Err(format!(
                "hint format {:?} version {} is not {HINT_FORMAT} {HINT_VERSION}",
                h.format, h.version
            ));
        }
        Ok(h)
    }

    /// Checks what can be checked without reading entries.
    pub fn check(&self, header: &Header, file_len: u64) -> Result<(), String> {
        if self.session_id != header.id {
            return Err("hint is for another session id".into());
        }
        if self.header_end != header.end {
            return Err("header length differs from the hint's".into());
        }
        if self.file_length > file_len {
            return Err("file is shorter than when the hint was written".into());
        }
        if self.anchor_offset < header.end || self.anchor_offset >= file_len {
            return Err("hint anchor offset is outside the file".into());
        }
        let mut prev = header.end;
        for r in &self.ranges {
            if r[0] < prev || r[1] <= r[0] || r[1] > self.file_length {
                return Err("hint ranges are not ascending ranges of the file".into());
            }
            prev = r[1];
        }
        if self
            .ranges
            .first()
            .is_none_or(|r| r[0] != self.anchor_offset)
        {
            return Err("hint ranges do not start at the anchor".into());
        }
        Ok(())
    }

    /// The hint as JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

fn raw(s: &str) -> Box<RawValue> {
    RawValue::from_string(s.to_string())
        .unwrap_or_else(|_| RawValue::from_string("null".into()).unwrap_or_default())
}

/// Computes the hint for the context of `path` (root first, ending at the leaf).
/// `complete` says whether `path` reaches the root; if it does not, the settings
/// before the anchor must be found inside `path` or no hint can be made.
/// `tail_from` is the offset of the file's last entry that is not a `leaf`
/// pointer: the ranges always cover the file from there, so that a resume sees
/// which entry is the current leaf.
pub fn compute(
    header: &Header,
    path: &[&EntryRec],
    complete: bool,
    interner: &Interner,
    file_len: u64,
    tail_from: u64,
    counts: Option<(u64, u64)>,
) -> Option<Hint> {
    let leaf = path.last()?;
    let c = path.iter().rposition(|e| e.kind == EntryKind::Compaction);
    let anchor = match c {
        Some(c) => path[c]
            .target
            .as_deref()
            .and_then(|fk| path[..c].iter().position(|e| &*e.id == fk))
            .unwrap_or(c),
        None => 0,
    };
    if c.is_some() && anchor == c.unwrap_or(0) && path[c.unwrap_or(0)].target.is_some() && !complete
    {
        // The first kept entry was not found in a partial path: unknown territory.
        return None;
    }
    if c.is_none() && !complete {
        return None;
    }
    let items: Vec<PathItem> = path[..anchor]
        .iter()
        .map(|rec| PathItem { rec, text: "" })
        .collect();
    let set = context::settings(&items, interner);
    if !complete && (set.thinking.is_none() || set.model.is_none()) {
        return None;
    }
    let mut spans: Vec<[u64; 2]> = path[anchor..]
        .iter()
        .map(|e| [e.offset, (e.offset + u64::from(e.len) + 1).min(file_len)])
        .collect();
    spans.push([tail_from.min(file_len), file_len]);
    let ranges = coalesce(spans);
    Some(Hint {
        format: HINT_FORMAT.into(),
        version: HINT_VERSION,
        session_id: header.id.clone(),
        file_length: file_len,
        header_end: header.end,
        leaf_id: Some(leaf.id.to_string()),
        anchor_id: path[anchor].id.to_string(),
        anchor_offset: path[anchor].offset,
        ranges,
        compaction_id: c.map(|c| path[c].id.to_string()),
        compaction_offset: c.map(|c| path[c].offset),
        thinking_level: raw(set.thinking.as_deref().unwrap_or("\"off\"")),
        model: raw(set.model.as_deref().unwrap_or("null")),
        entry_count: counts.map(|c| c.0),
        message_count: counts.map(|c| c.1),
    })
}

/// Gaps up to this many bytes between path entries are read through rather than
/// split into two reads.
const RANGE_GAP: u64 = 64 << 10;
/// At most this many ranges; beyond it, gaps are merged more eagerly.
const MAX_RANGES: usize = 256;

/// Ascending, merged byte ranges covering `spans`.
fn coalesce(mut spans: Vec<[u64; 2]>) -> Vec<[u64; 2]> {
    spans.retain(|s| s[1] > s[0]);
    spans.sort_unstable();
    let mut gap = RANGE_GAP;
    loop {
        let mut out: Vec<[u64; 2]> = Vec::new();
        for s in &spans {
            match out.last_mut() {
                Some(last) if s[0] <= last[1] + gap => last[1] = last[1].max(s[1]),
                _ => out.push(*s),
            }
        }
        if out.len() <= MAX_RANGES {
            return out;
        }
        gap *= 4;
    }
}
