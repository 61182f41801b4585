//! Listing a directory of sessions from their headers and tails.

use std::fs::{self, File};
use std::path::Path;
use std::time::UNIX_EPOCH;

use forkpoint_core::hint::hint_path;
use forkpoint_core::listing::{LIST_READ, summarize};
use forkpoint_core::{Result, SessionInfo, gz};

use crate::io::{io_error, read_all, read_at};

/// Lists the `.jsonl` and `.jsonl.gz` files of `dir` (not recursive), newest
/// first, reading only each file's first and last 64 KiB (gzip files are read
/// whole). Files that are not sessions are listed with `error` set.
pub fn list_sessions(dir: &Path) -> Result<Vec<SessionInfo>> {
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
        out.push(summarize_file(&path));
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
    let p = path.display().to_string();
    let fail = |e: forkpoint_core::Error| {
        let mut i = summarize(&p, b"", b"", 0, 0, None, None);
        i.error = Some(e);
        i
    };
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) => return fail(io_error(e, path, "cannot open")),
    };
    let meta = match file.metadata() {
        Ok(m) => m,
        Err(e) => return fail(io_error(e, path, "cannot stat")),
    };
    let len = meta.len();
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as f64);
    let hint = fs::read_to_string(hint_path(&p)).ok();
    let head = match read_at(&file, path, 0, len.min(LIST_READ)) {
        Ok(h) => h,
        Err(e) => return fail(e),
    };
    if gz::is_gzip(&head) {
        let data = match read_all(path).and_then(|b| gz::decode(&b, true, u64::MAX)) {
            Ok(d) => d.data,
            Err(e) => return fail(e),
        };
        let mut i = summarize(&p, &data, &data, 0, data.len() as u64, None, mtime);
        i.gzip = true;
        i.file_size = len;
        return i;
    }
    let mut head = head;
    if !head.contains(&b'\n') && len > head.len() as u64 {
        // A long header line: read up to 16 MiB for it.
        match read_at(&file, path, 0, len.min(16 << 20)) {
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
