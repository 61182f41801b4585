//! Summaries of session files from their first and last bytes only.

use crate::entry::{self, EntryKind};
use crate::error::Error;
use crate::gz;
use crate::hint::Hint;
use crate::json::Kind;
use crate::load::LineProcessor;
use crate::types::{LimitOptions, LoadOptions, SessionInfo};

/// Bytes read from each end of a file when listing.
pub const LIST_READ: u64 = 64 << 10;

/// Longest header line listed (a longer one is listed with an error).
pub const LIST_HEADER_MAX: u64 = 16 << 20;

/// Keeps the first and the last bytes of a decompressed stream (never the
/// whole of it): the head holds at least [`LIST_READ`] bytes and, up to
/// [`LIST_HEADER_MAX`], the whole first line; the tail the last [`LIST_READ`].
#[derive(Debug, Default)]
struct HeadTail {
    head: Vec<u8>,
    head_nl: bool,
    head_done: bool,
    head_committed: (usize, bool, bool),
    /// The last bytes of the complete members.
    tail: Vec<u8>,
    /// The last bytes of the current member (at most twice the window).
    cur: Vec<u8>,
}

impl HeadTail {
    const WINDOW: usize = LIST_READ as usize;
}

impl gz::Sink for HeadTail {
    fn write(&mut self, data: &[u8]) -> crate::Result<()> {
        let mut used = 0;
        while !self.head_done && used < data.len() {
            let limit = if self.head_nl {
                Self::WINDOW
            } else {
                LIST_HEADER_MAX as usize
            };
            if self.head.len() >= limit {
                self.head_done = true;
                break;
            }
            let take = (limit - self.head.len()).min(data.len() - used);
            let piece = &data[used..used + take];
            if !self.head_nl && memchr::memchr(b'\n', piece).is_some() {
                self.head_nl = true;
            }
            self.head.extend_from_slice(piece);
            used += take;
        }
        if data.len() >= Self::WINDOW {
            self.cur.clear();
            self.cur
                .extend_from_slice(&data[data.len() - Self::WINDOW..]);
        } else {
            if self.cur.len() + data.len() > 2 * Self::WINDOW {
                let cut = self.cur.len() + data.len() - Self::WINDOW;
                self.cur.drain(..cut);
            }
            self.cur.extend_from_slice(data);
        }
        Ok(())
    }
    fn commit(&mut self) {
        self.head_committed = (self.head.len(), self.head_nl, self.head_done);
        let keep = Self::WINDOW.min(self.cur.len());
        let from = self.tail.len().saturating_sub(Self::WINDOW - keep);
        self.tail.drain(..from);
        self.tail
            .extend_from_slice(&self.cur[self.cur.len() - keep..]);
        self.cur.clear();
    }
    fn rollback(&mut self) {
        let (len, nl, done) = self.head_committed;
        self.head.truncate(len);
        self.head_nl = nl;
        self.head_done = done;
        self.cur.clear();
    }
}

/// Summarizes a `.jsonl.gz` file read from `input` (`compressed_len` bytes)
/// as [`summarize`] does a plain file, keeping only the decompressed head and
/// tail. Decompression is checked against `limits` (a gzip bomb is listed with
/// `LIMIT_EXCEEDED`); a torn or broken last member is left out.
pub fn summarize_gzip<R: std::io::BufRead>(
    path: &str,
    input: R,
    compressed_len: u64,
    limits: &LimitOptions,
    mtime_ms: Option<f64>,
) -> SessionInfo {
    let mut sink = HeadTail::default();
    let mut info = match gz::decode_stream(
        input,
        compressed_len,
        true,
        &gz::GzLimits::from(limits),
        &mut sink,
    ) {
        Ok(o) => {
            let tail_offset = o.len - sink.tail.len() as u64;
            summarize(
                path,
                &sink.head,
                &sink.tail,
                tail_offset,
                o.len,
                None,
                mtime_ms,
            )
        }
        Err(e) => {
            let mut i = summarize(path, b"", b"", 0, 0, None, mtime_ms);
            i.error = Some(e.with_path(path));
            i
        }
    };
    info.gzip = true;
    info.file_size = compressed_len;
    info
}

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
