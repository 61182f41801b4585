//! `SessionMigrator.migrate` on files: the source is read as a stream (plain or
//! gzip), each line goes through the core's [`Migration`], and the output is
//! written to a temporary file beside the target that is fsynced and renamed
//! into place only when the whole source has been read — so the target is
//! either the complete migration or untouched. An existing target is replaced
//! only when asked to (`overwrite`), never one a writer holds (see [`crate::place`]).

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use forkpoint_core::normalize::migrate::Migration;
use forkpoint_core::normalize::{CompatibilityReport, Provider};
use forkpoint_core::{Error, Result};

use forkpoint_core::gz::{GzLimits, Meter};

use crate::io::{io_error, open_regular};
use crate::place::{check_target, clean_stale_temps, commit_new_file, temp_path};

/// Counts bytes read through it (the compressed bytes for gzip sources).
struct Counting<R> {
    inner: R,
    read: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

/// Checks what is read through it against the source's limits (a too-long
/// line or a gzip bomb stops the read with `LIMIT_EXCEEDED`).
struct Metered<R> {
    inner: R,
    meter: Meter,
    /// Compressed bytes read so far.
    read: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl<R: Read> Read for Metered<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let compressed = self.read.load(std::sync::atomic::Ordering::Relaxed);
        self.meter
            .feed(&buf[..n], compressed)
            .map_err(std::io::Error::other)?;
        Ok(n)
    }
}

/// A read error: a limit crossed, or the OS's.
fn read_error(e: std::io::Error, path: &Path) -> Error {
    match e.get_ref().and_then(|i| i.downcast_ref::<Error>()) {
        Some(inner) => inner.clone().with_path(path.display().to_string()),
        None => io_error(e, path, "cannot read session file"),
    }
}

/// A migration from one file to another, advanced in steps.
pub struct FileMigration {
    src: PathBuf,
    dst: PathBuf,
    tmp: PathBuf,
    reader: Option<Box<dyn BufRead + Send>>,
    writer: Option<BufWriter<File>>,
    read: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Size of the source file in bytes.
    pub total: u64,
    core: Migration,
    line: Vec<u8>,
    done: bool,
    overwrite: bool,
}

impl FileMigration {
    /// Opens the source and creates the temporary output. Fails at once where
    /// [`finish`](Self::finish) would: `ALREADY_EXISTS` for an existing `dst`
    /// unless `overwrite`, `SESSION_LOCKED` for a `dst` a writer holds. Removes
    /// stale temporary files of `dst` first.
    pub fn open(
        src: &Path,
        dst: &Path,
        from: Provider,
        to: Provider,
        model: Option<String>,
        now_iso: &str,
        overwrite: bool,
    ) -> Result<Self> {
        if src == dst {
            return Err(Error::invalid_input(
                "the target path must differ from the source path",
            ));
        }
        let (mut f, total) = open_regular(src, "session file")?;
        // gzip by its magic bytes, as the loader decides (not by the name).
        let mut magic = [0u8; 2];
        let gz = f
            .read(&mut magic)
            .map(|n| n == 2 && magic == [0x1f, 0x8b])
            .unwrap_or(false);
        {
            use std::io::Seek;
            f.seek(std::io::SeekFrom::Start(0))
                .map_err(|e| io_error(e, src, "cannot read session file"))?;
        }
        let read = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counting = Counting {
            // The file as long as it was when opened.
            inner: f.take(total),
            read: read.clone(),
        };
        // The source's limits: the defaults of LoadOptions (for plain files,
        // only the line length and the number of entries).
        let load = forkpoint_core::LoadOptions::default();
        let mut limits = GzLimits::from(&load);
        let reader: Box<dyn BufRead + Send> = if gz {
            Box::new(BufReader::with_capacity(
                1 << 20,
                Metered {
                    inner: flate2::read::MultiGzDecoder::new(counting),
                    meter: Meter::new(limits),
                    read: read.clone(),
                },
            ))
        } else {
            limits.max_bytes = u64::MAX;
            limits.max_ratio = 0;
            Box::new(BufReader::with_capacity(
                1 << 20,
                Metered {
                    inner: counting,
                    meter: Meter::new(limits),
                    read: read.clone(),
                },
            ))
        };
        clean_stale_temps(dst);
        check_target(dst, overwrite)?;
        let tmp = temp_path(dst, "migrating");
        let out = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| io_error(e, &tmp, "cannot create the migration's temporary file"))?;
        Ok(FileMigration {
            src: src.to_path_buf(),
            dst: dst.to_path_buf(),
            tmp,
            reader: Some(reader),
            writer: Some(BufWriter::with_capacity(1 << 20, out)),
            read,
            total,
            core: Migration::new(from, to, model, now_iso),
            line: Vec::new(),
            done: false,
            overwrite,
        })
    }

    /// Source bytes read so far.
    pub fn bytes_read(&self) -> u64 {
        self.read.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Messages changed so far.
    pub fn changed(&self) -> u64 {
        self.core.changed
    }

    /// Everything the migration did (so far).
    pub fn report(&self) -> &CompatibilityReport {
        &self.core.report
    }

    /// `{report, idMap}` as JSON text.
    pub fn result_json(&self) -> Result<String> {
        self.core.result_json()
    }

    /// The id map (target id → original id).
    pub fn id_map(&self) -> &[(String, String)] {
        self.core.id_map()
    }

    /// Migrates about `budget` more bytes of the source; `true` when the source is done.
    pub fn step(&mut self, budget: u64) -> Result<bool> {
        if self.done {
            return Ok(true);
        }
        let start = self.read.load(std::sync::atomic::Ordering::Relaxed);
        let (Some(reader), Some(writer)) = (self.reader.as_mut(), self.writer.as_mut()) else {
            return Err(Error::new(
                forkpoint_core::ErrorCode::Closed,
                "the migration was finished or aborted",
            ));
        };
        loop {
            self.line.clear();
            let n = reader
                .read_until(b'\n', &mut self.line)
                .map_err(|e| read_error(e, &self.src))?;
            if n == 0 {
                self.done = true;
                return Ok(true);
            }
            let text = std::str::from_utf8(&self.line).map_err(|e| {
                Error::corrupted(format!("line {} is not valid UTF-8", self.core.lines() + 1))
                    .at(Some(self.core.lines() + 1), e.valid_up_to() as u64)
                    .with_path(self.src.display().to_string())
            })?;
            let out = self
                .core
                .line(text)
                .map_err(|e| e.with_path(self.src.display().to_string()))?;
            writer
                .write_all(out.as_bytes())
                .and_then(|_| writer.write_all(b"\n"))
                .map_err(|e| {
                    io_error(e, &self.tmp, "cannot write the migration's temporary file")
                })?;
            if self.read.load(std::sync::atomic::Ordering::Relaxed) - start >= budget {
                return Ok(false);
            }
        }
    }

    /// Makes the output durable and moves it into place (after the last step),
    /// under the target's lock ([`commit_new_file`]).
    pub fn finish(&mut self) -> Result<()> {
        if !self.done {
            return Err(Error::invalid_input(
                "the migration has not read the whole source yet",
            ));
        }
        let writer = self.writer.take().ok_or_else(|| {
            Error::new(
                forkpoint_core::ErrorCode::Closed,
                "the migration was finished or aborted",
            )
        })?;
        self.reader = None;
        let res = (|| {
            let f = writer.into_inner().map_err(|e| {
                io_error(
                    e.into_error(),
                    &self.tmp,
                    "cannot write the migration's temporary file",
                )
            })?;
            f.sync_all().map_err(|e| {
                io_error(e, &self.tmp, "cannot fsync the migration's temporary file")
            })?;
            drop(f);
            commit_new_file(&self.dst, &self.tmp, self.overwrite)
        })();
        if res.is_err() {
            let _ = fs::remove_file(&self.tmp);
        }
        res
    }

    /// Stops and removes the temporary output; the target is untouched.
    pub fn abort(&mut self) {
        self.reader = None;
        if self.writer.take().is_some() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

impl Drop for FileMigration {
    fn drop(&mut self) {
        self.abort();
    }
}

/// Migrates a whole file; `progress(bytes_read, total)` is called after each step.
/// An existing `dst` is replaced only with `overwrite` (see [`FileMigration::open`]).
#[allow(clippy::too_many_arguments)]
pub fn migrate_file(
    src: &Path,
    dst: &Path,
    from: Provider,
    to: Provider,
    model: Option<String>,
    now_iso: &str,
    overwrite: bool,
    mut progress: impl FnMut(u64, u64),
) -> Result<CompatibilityReport> {
    let mut m = FileMigration::open(src, dst, from, to, model, now_iso, overwrite)?;
    while !m.step(8 << 20)? {
        progress(m.bytes_read(), m.total);
    }
    progress(m.bytes_read(), m.total);
    m.finish()?;
    Ok(m.report().clone())
}

/// `importSession` on files: converts a pi, Claude Code or Codex session — read
/// from `src`, or given as `bytes` — into a pi v3 session written to `dst`
/// as a new file ([`commit_new_file`]'s rules: `ALREADY_EXISTS` for an existing
/// `dst` unless `overwrite`, `SESSION_LOCKED` for one a writer holds, checked
/// before the conversion and again under the lock). `limits` bound what a gzip
/// source may decompress to.
#[allow(clippy::too_many_arguments)]
pub fn import_file(
    src: Option<&Path>,
    bytes: Option<Vec<u8>>,
    dst: &Path,
    format: forkpoint_core::normalize::import::ImportFormat,
    session_id: Option<&str>,
    now_iso: &str,
    limits: &forkpoint_core::LimitOptions,
    overwrite: bool,
) -> Result<forkpoint_core::normalize::import::ImportSummary> {
    if bytes.is_none() && src.is_some_and(|p| p == dst) {
        return Err(Error::invalid_input(
            "the target path must differ from the source path",
        ));
    }
    clean_stale_temps(dst);
    check_target(dst, overwrite)?;
    let bytes = match (src, bytes) {
        (_, Some(b)) => b,
        (Some(p), None) => crate::io::read_all(p, &limits.load_options())?,
        (None, None) => return Err(Error::invalid_input("importSession needs a path or bytes")),
    };
    let (text, summary) = forkpoint_core::normalize::import::import_session_with(
        &bytes, format, session_id, now_iso, limits,
    )
    .map_err(|e| match src {
        Some(p) if e.path.is_none() => e.with_path(p.display().to_string()),
        _ => e,
    })?;
    crate::place::write_new_file(dst, text.as_bytes(), overwrite)?;
    Ok(summary)
}
