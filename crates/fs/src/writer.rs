//! Appending to a session file: an OS lock against a second writer, repair of a
//! torn tail on open, and durable appends (`fsync` per append, or group commit).

use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::commit::{Appender, Queue};

use forkpoint_core::hint::hint_path;
use forkpoint_core::writer::{Batch, WriterCore};
use forkpoint_core::{
    Error, ErrorCode, LoadOptions, Result, Session, WriterOpenReport, WriterOptions, gz,
};

pub use crate::place::lock;
use crate::place::{clean_stale_temps, open_locked, replace_locked};

use crate::io::{
    check_regular, complete_last_line, cut_tail, io_error, read_at, replace_atomic, scan_threads,
    sync_dir,
};

/// The session writer's queue: the core's state machine plus the hint path.
pub struct SessionQueue {
    core: WriterCore,
    hint: Option<String>,
}

impl Queue for SessionQueue {
    type Batch = Batch;

    fn take(&mut self, max_lines: Option<usize>) -> Option<Batch> {
        self.core.take_batch(max_lines)
    }

    fn bytes(batch: &Batch) -> &[u8] {
        &batch.bytes
    }

    fn committed(&mut self, batch: Batch, _at: u64) -> Option<(String, Vec<u8>)> {
        self.core.committed(&batch);
        // The hint describes a file with nothing queued.
        let path = self.hint.clone().filter(|_| !self.core.has_queued())?;
        self.core
            .take_hint(false)
            .map(|h| (path, h.to_json().into_bytes()))
    }

    fn is_durable(&self, ticket: u64) -> bool {
        self.core.durable_ticket() >= ticket
    }

    fn fail(&mut self, e: Error) {
        self.core.fail(e);
    }

    fn failure(&self) -> Option<&Error> {
        self.core.failure()
    }
}

/// A session file open for appending. Methods take `&self`; it can be shared
/// between threads (the napi binding waits for durability on the libuv pool).
pub struct FileWriter {
    app: Appender<SessionQueue>,
}

impl FileWriter {
    /// Opens (or creates) a session file for appending. The file is validated
    /// before anything in it is changed: a file that is not a session, or is
    /// corrupt in the middle, is refused untouched.
    pub fn open(
        path: &Path,
        opts: &WriterOptions,
        now_ms: i64,
        seed: u64,
    ) -> Result<(FileWriter, WriterOpenReport)> {
        let p = path.display().to_string();
        if opts.durability == forkpoint_core::Durability::Memory {
            return Err(Error::invalid_input(
                "session writers write to disk: durability is 'fsync' or 'group'",
            )
            .with_path(p));
        }
        // Temporary files a killed import, migration or rewrite left behind.
        clean_stale_temps(path);
        // Locked, and the file the path names (see `place`).
        let mut file = open_locked(path)?;
        let load = LoadOptions::default();
        let mut report = WriterOpenReport {
            created: false,
            repaired: None,
            newline_added: false,
            migrated_from: None,
            leaf_id: None,
            entry_count: 0,
        };
        // The file as long as it is now that it is locked.
        let len = check_regular(&file, path, "session file")?;
        let raw = read_at(&file, path, 0, len)?;
        let mut gzip = !raw.is_empty() && gz::is_gzip(&raw);
        let (content, gz_valid_len, gz_torn) = if gzip {
            let d = gz::decode(&raw, false, &gz::GzLimits::from(&load))
                .map_err(|e| e.with_path(p.clone()))?;
            (d.data, d.valid_len, d.torn)
        } else {
            (raw, 0, None)
        };

        // Validate first; repair only a file known to be a session.
        let mut session = None;
        let content_len = content.len();
        if !content.is_empty() {
            // Only a first line that was cut short (it does not parse) is torn: a
            // whole header this version cannot read (a newer version) is refused.
            let torn_header = !content.contains(&b'\n')
                && content.starts_with(b"{\"type\":\"session\"")
                && forkpoint_core::load::is_torn_final_line(&content, load.max_depth as usize);
            match Session::from_bytes_threads(content, &load, Some(p.clone()), scan_threads()) {
                Ok(s) => session = Some(s),
                // A crash while the very first line was written: nothing was ever
                // durable, so the file is started afresh.
                Err(e) if e.code == ErrorCode::UnsupportedFormat && torn_header => {
                    report.repaired = Some(forkpoint_core::TornTail {
                        line: Some(1),
                        offset: 0,
                        bytes: content_len as u64,
                    });
                    file.set_len(0)
                        .map_err(|e| io_error(e, path, "cannot cut torn header"))?;
                }
                Err(e) => return Err(e),
            }
        }
        let mut phys_len;
        let mut session = match session {
            Some(s) => {
                phys_len = if gzip {
                    gz_valid_len
                } else {
                    content_len as u64
                };
                if let Some(t) = gz_torn {
                    // Drop a torn last gzip member.
                    cut_tail(&file, path, gz_valid_len)?;
                    report.repaired = Some(t);
                }
                s
            }
            None => {
                gzip = opts.gzip.unwrap_or_else(|| p.ends_with(".gz"));
                let id = opts
                    .session_id
                    .clone()
                    .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
                let cwd = match &opts.cwd {
                    Some(c) => c.clone(),
                    None => std::env::current_dir()
                        .map(|d| d.display().to_string())
                        .unwrap_or_default(),
                };
                let header =
                    WriterCore::new_header_line(&id, now_ms, &cwd, opts.parent_session.as_deref());
                let data = if gzip {
                    gz::encode_member(header.as_bytes())
                } else {
                    header.clone().into_bytes()
                };
                file.write_all_at(&data, 0)
                    .map_err(|e| io_error(e, path, "cannot write header"))?;
                file.sync_all()
                    .map_err(|e| io_error(e, path, "cannot fsync"))?;
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    sync_dir(dir)?;
                }
                phys_len = data.len() as u64;
                report.created = true;
                Session::from_bytes(header.into_bytes(), &load, Some(p.clone()))?
            }
        };
        if session.header().version < 3 {
            if !opts.migrate {
                return Err(Error::new(
                    ErrorCode::MigrationRequired,
                    format!(
                        "the file is session format version {}; open it with {{ migrate: true }} to rewrite it (atomically) as version 3 before appending",
                        session.header().version
                    ),
                )
                .with_path(p));
            }
            report.migrated_from = Some(session.header().version);
            let text = session.to_v3_jsonl();
            let data = if gzip {
                gz::encode_member(text.as_bytes())
            } else {
                text.clone().into_bytes()
            };
            // The new file is locked before the rename: the lock is never free.
            file = replace_locked(path, &data)?;
            phys_len = data.len() as u64;
            session = Session::from_bytes(text.into_bytes(), &load, Some(p.clone()))?;
        }
        let meta = session.metadata();
        let mut content_len = meta.file_size;
        if !gzip {
            if let Some(t) = meta.torn_tail.clone() {
                cut_tail(&file, path, t.offset)?;
                content_len = t.offset;
                phys_len = t.offset;
                report.repaired = Some(t);
            }
            if meta.missing_final_newline {
                complete_last_line(&file, path, phys_len)?;
                phys_len += 1;
                content_len += 1;
                report.newline_added = true;
            }
        } else if meta.torn_tail.is_some() || meta.missing_final_newline {
            // A gzip member ending inside a line: not written by forkpoint; refuse to
            // guess where the next line starts.
            return Err(Error::corrupted("the gzip session ends inside a line").with_path(p));
        }
        let core = WriterCore::from_session(session, content_len, seed, &load)?;
        report.leaf_id = core.leaf_id().map(str::to_string);
        report.entry_count = core.entry_count();
        let hint = (opts.hint && !gzip).then(|| hint_path(&p));
        let q = SessionQueue { core, hint };
        let w = FileWriter {
            app: Appender::new(path, file, gzip, opts.durability, q, phys_len),
        };
        w.write_hint(true)?;
        Ok((w, report))
    }

    /// Runs `f` on the writer's state (assigning ids in call order); returns its
    /// result, typically `(id, ticket)`.
    pub fn submit<T>(&self, f: impl FnOnce(&mut WriterCore) -> Result<T>) -> Result<T> {
        self.app.submit(|q| f(&mut q.core))
    }

    /// Blocks until `ticket` is durable (see [`Appender::wait`]).
    pub fn wait(&self, ticket: u64) -> Result<()> {
        self.app.wait(ticket)
    }

    fn write_hint(&self, force: bool) -> Result<()> {
        let mut st = self.app.lock()?;
        let Some(path) = st.q.hint.clone() else {
            return Ok(());
        };
        let hint = st.q.core.take_hint(force);
        drop(st);
        if let Some(h) = hint {
            let json = h.to_json();
            // Unchanged (a reopen without appends): no rewrite, no fsync.
            if crate::io::read_small(Path::new(&path), 16 << 20).is_some_and(|old| old == json) {
                return Ok(());
            }
            // The hint is a cache: failing to write it loses nothing.
            let _ = replace_atomic(Path::new(&path), json.as_bytes());
        }
        Ok(())
    }

    /// Waits for everything queued, writes the resume hint and releases the lock.
    /// Later calls fail with `CLOSED`.
    pub fn close(&self) -> Result<()> {
        let last = {
            let st = self.app.lock()?;
            if st.closed {
                return Ok(());
            }
            st.q.core.last_ticket()
        };
        let res = self.app.wait(last);
        if res.is_ok() {
            self.write_hint(true)?;
        }
        self.app.close()?;
        res
    }

    /// The current leaf.
    pub fn leaf_id(&self) -> Result<Option<String>> {
        Ok(self.app.lock()?.q.core.leaf_id().map(str::to_string))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.app.path
    }
}
