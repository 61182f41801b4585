//! The resume hint: a small sidecar file (`<session>.idx.json`) that lets a lazy
//! resume start reading at the right place instead of scanning backwards.
//!
//! It is a cache, never the source of truth: it is validated against the file
//! before use (session id, header length, file length, and the id of the entry at
//! each recorded offset), and any mismatch falls back to the reverse scan. It
//! holds no values of its own: the thinking level and model in force before its
//! anchor are read from the entries it points to, which are checked like the rest.

use crate::entry::EntryKind;
use crate::load::{EntryRec, Header};
use serde::{Deserialize, Serialize};

/// Value of the `format` field.
pub const HINT_FORMAT: &str = "forkpoint.resume-hint";
/// Current hint version. Version 1 (0.1.0) held the thinking level and model as
/// values, taken on trust; it is refused (the loader scans and writes version 2).
pub const HINT_VERSION: u32 = 2;

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
    /// The entry that sets the thinking level in force just before the anchor (the
    /// last `thinking_level_change` before it on the path): `null` when there is
    /// none (pi's default, `"off"`), missing when the hint's writer did not know.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "double_option"
    )]
    pub thinking_entry: Option<Option<EntryRef>>,
    /// The entry that sets the model in force just before the anchor (the last
    /// `model_change` or assistant message before it on the path), the same way.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "double_option"
    )]
    pub model_entry: Option<Option<EntryRef>>,
    /// Counts for the whole file at `file_length`.
    pub entry_count: Option<u64>,
    pub message_count: Option<u64>,
}

/// An entry a hint points to; its id is checked when the line is read.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct EntryRef {
    pub id: String,
    pub offset: u64,
}

/// `Option<Option<T>>` as JSON: missing, `null`, or a value.
mod double_option {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<T: Serialize, S: Serializer>(
        v: &Option<Option<T>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match v {
            Some(inner) => inner.serialize(s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Option<T>>, D::Error> {
        Option::<T>::deserialize(d).map(Some)
    }
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
        if prev != self.file_length {
            return Err("hint ranges do not reach the end of the file".into());
        }
        let covered = |at: u64| self.ranges.iter().any(|r| r[0] <= at && at < r[1]);
        if !covered(self.anchor_offset) {
            return Err("hint ranges do not hold the anchor".into());
        }
        for e in [&self.thinking_entry, &self.model_entry]
            .into_iter()
            .flatten()
            .flatten()
        {
            if e.offset < header.end || e.offset >= self.anchor_offset || !covered(e.offset) {
                return Err(
                    "a hinted settings entry is not before the anchor in the ranges".into(),
                );
            }
        }
        Ok(())
    }

    /// The hint as JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Computes the hint for the context of `path` (root first, ending at the leaf).
/// `complete` says whether `path` reaches the root; if it does not, a setting
/// not found before the anchor inside `path` is unknown to the hint.
/// `tail_from` is the offset of the file's last entry that is not a `leaf`
/// pointer: the ranges always cover the file from there, so that a resume sees
/// which entry is the current leaf.
pub fn compute(
    header: &Header,
    path: &[&EntryRec],
    complete: bool,
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
    let before = &path[..anchor];
    let find = |is: &dyn Fn(&EntryRec) -> bool| -> Option<Option<EntryRef>> {
        match before.iter().rev().find(|e| is(e)) {
            Some(e) => Some(Some(EntryRef {
                id: e.id.to_string(),
                offset: e.offset,
            })),
            None if complete => Some(None),
            None => None,
        }
    };
    let thinking_entry = find(&|e| e.kind == EntryKind::ThinkingLevelChange);
    let model_entry = find(&|e| e.sets_model());
    let span = |e: &EntryRec| [e.offset, (e.offset + u64::from(e.len) + 1).min(file_len)];
    let mut spans: Vec<[u64; 2]> = path[anchor..].iter().map(|e| span(e)).collect();
    for e in before.iter().rev() {
        let r = Some(Some(EntryRef {
            id: e.id.to_string(),
            offset: e.offset,
        }));
        if r == thinking_entry || r == model_entry {
            spans.push(span(e));
        }
    }
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
        thinking_entry,
        model_entry,
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
