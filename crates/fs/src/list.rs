//! Listing a directory of sessions from their headers and tails.

use std::fs;
use std::io::{BufReader, Read};
use std::path::Path;
use std::time::UNIX_EPOCH;

use forkpoint_core::hint::hint_path;
use forkpoint_core::listing::{LIST_HEADER_MAX, LIST_READ, summarize, summarize_gzip};
use forkpoint_core::{LimitOptions, Result, SessionInfo, gz};

use crate::io::{io_error, open_regular, read_at, read_small};

/// Longest resume hint read.
const HINT_MAX: u64 = 16 << 20;

/// Lists the `.jsonl` and `.jsonl.gz` files of `dir` (not recursive), newest
/// first, reading only each file's first and last 64 KiB (gzip files are
/// decompressed as a stream within `limits`, keeping only the first and last
/// 64 KiB of the text). Files that are not sessions, and entries that are not
/// regular files (a FIFO, a device), are listed with `error` set.
pub fn list_sessions(dir: &Path) -> Result<Vec<SessionInfo>> {
    list_sessions_with(dir, &LimitOptions::default())
}

/// [`list_sessions`] with limits for gzip files.
pub fn list_sessions_with(dir: &Path, limits: &LimitOptions) -> Result<Vec<SessionInfo>> {
    let rd = fs::read_dir(dir).map_err(|e| io_error(e, dir, "cannot list directory"))?;
    let mut out = Vec::new();
    for ent in rd {
        let ent = ent.map_err(|e| io_error(e, dir, "cannot list directory"))?;
        let name = ent.file_name().to_string_lossy().into_owned();
        if !(name.ends_with(".jsonl") || name.ends_with(".jsonl.gz")) {
            continue;
        }
        let path = ent.path();
        if path.is_dir() {
            continue;
        }
        out.push(summarize_file_with(&path, limits));
    }
    out.sort_by(|a, b| {
        let key = |i: &SessionInfo| {
            i.modified_at
                .clone()
                .or(i.created_at.clone())
                .unwrap_or_default()
        };
        key(b).cmp(&key(a)).then_with(|| a.path.cmp(&b.path))
    });
    Ok(out)
}

/// One file's summary (errors are reported in `error`).
pub fn summarize_file(path: &Path) -> SessionInfo {
    summarize_file_with(path, &LimitOptions::default())
}

/// [`summarize_file`] with limits for gzip files.
pub fn summarize_file_with(path: &Path, limits: &LimitOptions) -> SessionInfo {
    let p = path.display().to_string();
    let fail = |e: forkpoint_core::Error| {
        let mut i = summarize(&p, b"", b"", 0, 0, None, None);
        i.error = Some(e);
        i
    };
    let (file, len) = match open_regular(path, "session file") {
        Ok(f) => f,
        Err(e) => return fail(e),
    };
    let mtime = file
        .metadata()
        .ok()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as f64);
    let head = match read_at(&file, path, 0, len.min(LIST_READ)) {
        Ok(h) => h,
        Err(e) => return fail(e),
    };
    if gz::is_gzip(&head) {
        // The file as long as it was when opened, decompressed as a stream.
        let input = BufReader::with_capacity(64 << 10, (&file).take(len));
        return summarize_gzip(&p, input, len, limits, mtime);
    }
    let hint = read_small(Path::new(&hint_path(&p)), HINT_MAX);
    let mut head = head;
    if !head.contains(&b'\n') && len > head.len() as u64 {
        // A long header line: read up to 16 MiB for it.
        match read_at(&file, path, 0, len.min(LIST_HEADER_MAX)) {
            Ok(h) => head = h,
            Err(e) => return fail(e),
        }
    }
    let tail_off = len.saturating_sub(LIST_READ);
    let tail = match read_at(&file, path, tail_off, len - tail_off) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    summarize(&p, &head, &tail, tail_off, len, hint.as_deref(), mtime)
}
