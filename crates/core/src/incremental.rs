//! Incremental loading: entries in batches of N, each with its byte offset.
//!
//! Sans-IO like the lazy loader: the caller reads bytes starting at
//! [`Incremental::offset`] and passes them to [`Incremental::feed`], which
//! consumes whole lines until the batch is full.

use crate::context;
use crate::error::Result;
use crate::load::{LineOut, LineProcessor};
use crate::types::{BatchInfo, LoadOptions, TornTail};

/// A batch of entries.
#[derive(Debug, Default)]
pub struct Batch {
    /// Entry texts (migrated for old versions).
    pub entries: Vec<String>,
    pub info: BatchInfo,
}

impl Batch {
    /// The entries as a JSON array.
    pub fn entries_json(&self) -> String {
        context::join_array(&self.entries)
    }
}

/// State of an incremental load.
#[derive(Debug)]
pub struct Incremental {
    opts: LoadOptions,
    path: Option<String>,
    proc: LineProcessor,
    offset: u64,
    batch_size: usize,
    /// The file ended (as of the last read) with only a torn line left.
    torn_at_end: Option<(u64, TornTail)>,
}

/// What [`Incremental::feed`] did.
#[derive(Debug, Default)]
pub struct Fed {
    /// The batch is complete (full, or the input ended).
    pub complete: bool,
    /// The bytes held an incomplete line that needs more input to finish.
    pub need_more: bool,
}

impl Incremental {
    /// A loader handing out `batch_size` entries at a time.
    pub fn new(opts: LoadOptions, path: Option<String>, batch_size: usize) -> Self {
        Incremental {
            proc: LineProcessor::new(opts.clone(), path.clone()),
            opts,
            path,
            offset: 0,
            batch_size: batch_size.max(1),
            torn_at_end: None,
        }
    }

    /// Byte offset where the next batch starts.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Back to the start of the file.
    pub fn reset(&mut self) {
        *self = Incremental::new(self.opts.clone(), self.path.clone(), self.batch_size);
    }

    /// Whether entries may remain in a file of `file_len` bytes.
    pub fn has_more(&self, file_len: u64) -> bool {
        match &self.torn_at_end {
            Some((len, _)) if *len == file_len => false,
            _ => self.offset < file_len,
        }
    }

    /// The torn last line found at the end of the file, if any.
    pub fn torn_tail(&self) -> Option<&TornTail> {
        self.torn_at_end.as_ref().map(|(_, t)| t)
    }

    /// Consumes whole lines of `bytes` (which start at [`offset`](Self::offset))
    /// into `batch`. `eof` says `bytes` reach the end of the file of `file_len` bytes.
    pub fn feed(
        &mut self,
        bytes: &[u8],
        eof: bool,
        file_len: u64,
        batch: &mut Batch,
    ) -> Result<Fed> {
        if batch.info.offsets.is_empty() && batch.entries.is_empty() {
            batch.info.start_offset = self.offset;
        }
        let mut pos = 0usize;
        loop {
            if batch.entries.len() >= self.batch_size {
                batch.info.end_offset = self.offset;
                return Ok(Fed {
                    complete: true,
                    need_more: false,
                });
            }
            let rest = &bytes[pos..];
            let (line, has_nl) = match memchr::memchr(b'\n', rest) {
                Some(i) => (&rest[..i], true),
                None if eof && !rest.is_empty() => (rest, false),
                None => {
                    batch.info.end_offset = self.offset;
                    if eof {
                        self.proc.finish(file_len)?;
                        if let Some(t) = self.proc.torn.clone() {
                            self.torn_at_end = Some((file_len, t));
                            // Leave the processor able to continue if the file grows.
                            self.proc.torn = None;
                        }
                        batch.info.done = true;
                        return Ok(Fed {
                            complete: true,
                            need_more: false,
                        });
                    }
                    return Ok(Fed {
                        complete: false,
                        need_more: !rest.is_empty(),
                    });
                }
            };
            let line_offset = self.offset;
            let before_pending = self.proc.has_pending_bad();
            let out = self.proc.line(line, line_offset, has_nl)?;
            if !has_nl && self.proc.has_pending_bad() && !before_pending {
                // A final line without newline that does not parse: a torn tail (or a
                // write in progress). Do not consume it.
                let t = TornTail {
                    line: Some(self.proc.line_count),
                    offset: line_offset,
                    bytes: line.len() as u64,
                };
                self.proc = self.rewind_pending();
                self.torn_at_end = Some((file_len, t));
                batch.info.end_offset = self.offset;
                batch.info.done = true;
                return Ok(Fed {
                    complete: true,
                    need_more: false,
                });
            }
            self.offset += line.len() as u64 + u64::from(has_nl);
            pos += line.len() + usize::from(has_nl);
            if let LineOut::Entry(rec, migrated) = out {
                let text = match migrated {
                    Some(m) => m.into_string(),
                    None => String::from_utf8_lossy(line).into_owned(),
                };
                batch.info.offsets.push(rec.offset);
                batch.info.lines.push(rec.line);
                batch.entries.push(text);
            }
            if !has_nl {
                // The file's last line (no newline after it): settle a bad line
                // before it as the full load does.
                batch.info.end_offset = self.offset;
                self.proc.finish(file_len)?;
                if let Some(t) = self.proc.torn.take() {
                    self.torn_at_end = Some((file_len, t));
                }
                batch.info.done = true;
                return Ok(Fed {
                    complete: true,
                    need_more: false,
                });
            }
        }
    }

    /// Forgets a pending bad final line so that it can be read again once complete.
    fn rewind_pending(&mut self) -> LineProcessor {
        let mut p = std::mem::replace(
            &mut self.proc,
            LineProcessor::new(self.opts.clone(), self.path.clone()),
        );
        p.forget_pending_bad();
        p
    }
}
