//! Incremental loading from a file: batches of entries with their byte offsets.

use std::fs::File;
use std::path::{Path, PathBuf};

use forkpoint_core::incremental::{Batch, Incremental};
use forkpoint_core::{Error, ErrorCode, LoadOptions, Result, gz};

use crate::io::{open_regular, read_at};

/// Reads a session file batch by batch. Each call opens the file, so a file that
/// grows between calls is followed.
pub struct IncrementalFile {
    inc: Incremental,
    path: PathBuf,
}

const CHUNK: u64 = 1 << 20;

impl IncrementalFile {
    /// A loader returning `batch_size` entries per batch.
    pub fn new(path: &Path, batch_size: usize, opts: LoadOptions) -> Self {
        IncrementalFile {
            inc: Incremental::new(opts, Some(path.display().to_string()), batch_size),
            path: path.to_path_buf(),
        }
    }

    fn open(&self) -> Result<(File, u64)> {
        open_regular(&self.path, "session file")
    }

    /// The next batch (empty and `done` at the end).
    pub fn load_next(&mut self) -> Result<Batch> {
        let (file, len) = self.open()?;
        let mut batch = Batch::default();
        let mut chunk = CHUNK;
        loop {
            let off = self.inc.offset();
            if off == 0 {
                let head = read_at(&file, &self.path, 0, len.min(2))?;
                if gz::is_gzip(&head) {
                    return Err(Error::new(
                        ErrorCode::UnsupportedFormat,
                        "incremental loading reads plain .jsonl files; load .jsonl.gz files with SessionLoader",
                    )
                    .with_path(self.path.display().to_string()));
                }
            }
            let n = len.saturating_sub(off).min(chunk);
            let bytes = read_at(&file, &self.path, off, n)?;
            let eof = off + bytes.len() as u64 >= len;
            let fed = self.inc.feed(&bytes, eof, len, &mut batch)?;
            if fed.complete {
                return Ok(batch);
            }
            if fed.need_more {
                chunk = chunk.saturating_mul(2);
            }
        }
    }

    /// Whether more entries may follow (checks the file's current length).
    pub fn has_more(&self) -> Result<bool> {
        let (_, len) = self.open()?;
        Ok(self.inc.has_more(len))
    }

    /// Back to the start.
    pub fn reset(&mut self) {
        self.inc.reset();
    }

    /// Byte offset of the next batch.
    pub fn offset(&self) -> u64 {
        self.inc.offset()
    }
}
