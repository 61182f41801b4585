//! Drives the core's lazy loader with positional reads, and keeps the resume hint.

use std::fs::File;
use std::path::Path;

use forkpoint_core::hint::hint_path;
use forkpoint_core::lazy::{LazyLoader, Step};
use forkpoint_core::{LazyOptions, Result};

use crate::io::{open_regular, read_at, read_small, replace_atomic};

/// A lazily loaded session and the open file it reads more history from.
pub struct LazyFile {
    pub loader: LazyLoader,
    file: File,
    path: std::path::PathBuf,
    /// Whether a resume hint was written by this load.
    pub hint_written: bool,
    /// Why writing the hint failed, if it did.
    pub hint_error: Option<String>,
}

impl LazyFile {
    /// Runs the loader until it needs no more reads.
    pub fn drive(&mut self) -> Result<()> {
        loop {
            match self.loader.next_step()? {
                Step::Done => return Ok(()),
                Step::Read { offset, len } => {
                    let bytes = read_at(&self.file, &self.path, offset, len)?;
                    self.loader.provide(bytes)?;
                }
            }
        }
    }

    /// Loads `n` more messages of history; returns them as a JSON array.
    pub fn more_history(&mut self, n: usize) -> Result<String> {
        self.loader.request_more_history(n)?;
        self.drive()?;
        self.loader.take_history_json()
    }
}

/// Opens `path` lazily (see the core's `lazy` module). Reads the resume hint
/// beside it and, unless `useHint` is off, writes a fresh one when it was
/// missing or stale (failure to write it is reported, not fatal).
pub fn load_lazy(path: &Path, opts: LazyOptions) -> Result<LazyFile> {
    let (file, len) = open_regular(path, "session file")?;
    let path_str = path.display().to_string();
    let hint_file = hint_path(&path_str);
    let hint = if opts.use_hint {
        read_small(Path::new(&hint_file), 16 << 20)
    } else {
        None
    };
    let loader = LazyLoader::new(len, opts, Some(path_str), hint);
    let mut lf = LazyFile {
        loader,
        file,
        path: path.to_path_buf(),
        hint_written: false,
        hint_error: None,
    };
    lf.drive()?;
    if let Some(h) = lf.loader.new_hint() {
        match replace_atomic(Path::new(&hint_file), h.to_json().as_bytes()) {
            Ok(()) => lf.hint_written = true,
            Err(e) => lf.hint_error = Some(e.message),
        }
    }
    Ok(lf)
}
