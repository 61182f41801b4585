//! Checkpoints: one model for the agent and for stored sessions (FORMAT.md
//! §14 and §16.3).
//!
//! A checkpoint is a `forkpoint.checkpoint` custom entry of the session it
//! belongs to; its `data` is a [`CheckpointInfo`] naming the entry to go back
//! to. The agent writes them with `checkpoints.create`, `IndexedDbStore` with
//! `saveCheckpoint`; both list them from the entries (every branch, in file
//! order, a later entry of the same id replacing the earlier one) and restore
//! one by moving the leaf to its entry with a `leaf` entry. Deleting one is an
//! entry too, whose data is `{"id": …, "deleted": true, "createdAt": …}`.

use serde::Deserialize;
use serde_json::json;

pub use crate::agent::{CHECKPOINT, CheckpointInfo};
use crate::agent::{custom_parts, parse_checked};
use crate::entry::EntryKind;
use crate::session::Session;

/// What a checkpoint entry does.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// Makes (or makes again) a checkpoint.
    Made(Box<CheckpointInfo>),
    /// Deletes the checkpoint of this id.
    Deleted(String),
}

/// Reads the `data` of a checkpoint entry (its depth checked by the session's
/// loader or the writer). `None`: data this build cannot read, skipped.
pub fn parse(data: &str) -> Option<Change> {
    #[derive(Deserialize)]
    struct Marker {
        id: String,
        #[serde(default)]
        deleted: bool,
    }
    let m: Marker = parse_checked(data, "checkpoint").ok()?;
    if m.deleted {
        return Some(Change::Deleted(m.id));
    }
    parse_checked::<CheckpointInfo>(data, "checkpoint")
        .ok()
        .map(|c| Change::Made(Box::new(c)))
}

/// Applies a checkpoint entry's `data` to a list of checkpoints, oldest first:
/// a checkpoint made again moves to the end, a deleted one leaves the list.
pub fn apply<T>(
    list: &mut Vec<T>,
    data: &str,
    id_of: impl Fn(&T) -> &str,
    made: impl FnOnce(CheckpointInfo) -> T,
) {
    match parse(data) {
        Some(Change::Made(c)) => {
            list.retain(|o| id_of(o) != c.id);
            list.push(made(*c));
        }
        Some(Change::Deleted(id)) => list.retain(|o| id_of(o) != id),
        None => {}
    }
}

/// A checkpoint found in a session.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The index of the entry that made it: the number of entries before it.
    pub index: u32,
    pub info: CheckpointInfo,
}

/// Every checkpoint of a session (all branches), oldest first.
pub fn scan(s: &Session) -> Vec<Found> {
    let finder = memchr::memmem::Finder::new(b"\"forkpoint.checkpoint\"");
    let mut out: Vec<Found> = Vec::new();
    for (i, e) in s.entries().iter().enumerate() {
        if e.kind != EntryKind::Custom {
            continue;
        }
        let text = s.entry_text(i as u32);
        if finder.find(text.as_bytes()).is_none() {
            continue;
        }
        if let Some((ty, data)) = custom_parts(text)
            && ty == CHECKPOINT
        {
            apply(
                &mut out,
                data,
                |f| &f.info.id,
                |info| Found {
                    index: i as u32,
                    info,
                },
            );
        }
    }
    out
}

/// The entry (JSON, without id, parent and timestamp) that records `c`.
pub fn entry(c: &CheckpointInfo) -> String {
    json!({ "type": "custom", "customType": CHECKPOINT, "data": c }).to_string()
}

/// The entry (JSON, without id, parent and timestamp) that deletes checkpoint `id`.
pub fn deletion(id: &str, now_ms: f64) -> String {
    json!({ "type": "custom", "customType": CHECKPOINT, "data": { "id": id, "deleted": true, "createdAt": now_ms } })
        .to_string()
}
