//! Summaries of session files from their first and last bytes only.

use crate::entry::{self, EntryKind};
use crate::error::Error;
use crate::hint::Hint;
use crate::json::Kind;
use crate::load::LineProcessor;
use crate::types::{LoadOptions, SessionInfo};

/// Bytes read from each end of a file when listing.
pub const LIST_READ: u64 = 64 << 10;

/// Summarizes a session file from `head` (its first bytes) and `tail` (its last
/// bytes, starting at file offset `tail_offset`). `hint` is the resume hint's
/// content, used for counts when it describes exactly this file length.
pub fn summarize(
    path: &str,
    head: &[u8],
    tail: &[u8],
    tail_offset: u64,
    file_len: u64,
    hint: Option<&str>,
    mtime_ms: Option<f64>,
) -> SessionInfo {
    let mut info = SessionInfo {
        path: path.to_string(),
        id: None,
        version: None,
        cwd: None,
        created_at: None,
        modified_at: None,
        parent_session: None,
        name: None,
        leaf_id: None,
        file_size: file_len,
        mtime_ms,
        gzip: false,
        entry_count: None,
        message_count: None,
        error: None,
    };
    let opts = LoadOptions::default();
    let mut proc = LineProcessor::new(opts.clone(), Some(path.to_string()));
    let complete = head.len() as u64 == file_len;
    let mut start = 0;
    while proc.header.is_none() && start < head.len() {
        let (end, nl) = match memchr::memchr(b'\n', &head[start..]) {
            Some(i) => (start + i, true),
            None if complete => (head.len(), false),
            None => {
                info.error =
                    Some(Error::unsupported("the header line is too long to list").with_path(path));
                return info;
            }
        };
        if let Err(e) = proc.line(&head[start..end], start as u64, nl) {
            info.error = Some(e);
            return info;
        }
        start = end + 1;
    }
    let Some(header) = proc.header.take() else {
        let e = proc
            .finish(file_len)
            .err()
            .unwrap_or_else(|| Error::unsupported("no session header").with_path(path));
        info.error = Some(e);
        return info;
    };
    info.id = Some(header.id.clone());
    info.version = Some(header.version);
    info.cwd = header.cwd.clone();
    info.created_at = header.timestamp.clone();
    info.parent_session = header.parent_session.clone();

    // The tail: whole lines only, newest first.
    let skip_partial = tail_offset > header.end;
    let body = match (skip_partial, memchr::memchr(b'\n', tail)) {
        (true, Some(i)) => &tail[i + 1..],
        (true, None) => &tail[..0],
        (false, _) => {
            let from = header.end.saturating_sub(tail_offset) as usize;
            tail.get(from..).unwrap_or(&tail[..0])
        }
    };
    let mut leaf_ptr: Option<Option<String>> = None;
    let mut last_node: Option<String> = None;
    for line in body.rsplit(|&c| c == b'\n') {
        let Ok(text) = std::str::from_utf8(line) else {
            continue;
        };
        let text = text.trim_end_matches('\r');
        if text.trim().is_empty() {
            continue;
        }
        let Ok(env) = entry::parse_envelope(text, opts.max_depth as usize) else {
            continue;
        };
        let s = |v: Option<crate::json::Value>| {
            v.filter(|v| v.kind == Kind::String)
                .and_then(|v| v.str(text))
                .map(|c| c.into_owned())
        };
        let ty = s(env.ty).unwrap_or_default();
        if info.modified_at.is_none() {
            info.modified_at = s(env.timestamp);
        }
        let kind = EntryKind::from_type(&ty);
        let id = |v: Option<crate::json::Value>| {
            v.filter(|v| v.kind == Kind::String)
                .and_then(|v| v.id_str(text))
                .map(|c| c.into_owned())
        };
        if kind == EntryKind::Leaf {
            if leaf_ptr.is_none() && last_node.is_none() {
                leaf_ptr = Some(id(env.target_id));
            }
        } else if last_node.is_none() && ty != "session" {
            last_node = id(env.id);
        }
        if kind == EntryKind::SessionInfo && info.name.is_none() {
            info.name = s(env.name).filter(|n| !n.is_empty());
        }
        if last_node.is_some() && info.name.is_some() {
            break;
        }
    }
    info.leaf_id = match leaf_ptr {
        Some(Some(t)) => Some(t),
        Some(None) => None,
        None => last_node,
    };
    if let Some(h) = hint.and_then(|t| Hint::parse(t).ok())
        && h.session_id == header.id
        && h.file_length == file_len
    {
        info.entry_count = h.entry_count;
        info.message_count = h.message_count;
    }
    info
}
