//! Appending to a session file: an OS lock against a second writer, repair of a
//! torn tail on open, and durable appends (`fsync` per append, or group commit).

use std::fs::{File, OpenOptions, TryLockError};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard};

use forkpoint_core::hint::hint_path;
use forkpoint_core::writer::{Batch, WriterCore};
use forkpoint_core::{
    Durability, Error, ErrorCode, LoadOptions, Result, Session, WriterOpenReport, WriterOptions, gz,
};

use crate::io::{io_error, read_all, replace_atomic, sync_dir};

struct State {
    core: WriterCore,
    /// A write is in flight (its leader writes without holding the lock).
    flushing: bool,
    /// Physical length of the file that is durable.
    phys_len: u64,
    closed: bool,
}

/// A session file open for appending. Methods take `&self`; it can be shared
/// between threads (the napi binding waits for durability on the libuv pool).
pub struct FileWriter {
    path: PathBuf,
    file: File,
    gzip: bool,
    durability: Durability,
    hint: bool,
    state: Mutex<State>,
    cond: Condvar,
}

fn lock(file: &File, path: &Path) -> Result<()> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(TryLockError::WouldBlock) => Err(Error::new(
            ErrorCode::SessionLocked,
            "another writer holds the lock on this session file (one writer per session)",
        )
        .with_path(path.display().to_string())),
        Err(TryLockError::Error(e)) => Err(io_error(e, path, "cannot lock session file")),
    }
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
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| io_error(e, path, "cannot open session file for writing"))?;
        lock(&file, path)?;
        let load = LoadOptions::default();
        let mut report = WriterOpenReport {
            created: false,
            repaired: None,
            newline_added: false,
            migrated_from: None,
            leaf_id: None,
            entry_count: 0,
        };
        let raw = read_all(path)?;
        let mut gzip = !raw.is_empty() && gz::is_gzip(&raw);
        let (content, gz_valid_len, gz_torn) = if gzip {
            let d = gz::decode(&raw, false, u64::MAX)?;
            (d.data, d.valid_len, d.torn)
        } else {
            (raw, 0, None)
        };

        // Validate first; repair only a file known to be a session.
        let mut session = None;
        if !content.is_empty() {
            match Session::from_bytes(content.clone(), &load, Some(p.clone())) {
                Ok(s) => session = Some(s),
                // A crash while the very first line was written: nothing was ever
                // durable, so the file is started afresh.
                Err(e)
                    if e.code == ErrorCode::UnsupportedFormat
                        && !content.contains(&b'\n')
                        && content.starts_with(b"{\"type\":\"session\"") =>
                {
                    report.repaired = Some(forkpoint_core::TornTail {
                        line: Some(1),
                        offset: 0,
                        bytes: content.len() as u64,
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
                    content.len() as u64
                };
                if let Some(t) = gz_torn {
                    // Drop a torn last gzip member.
                    file.set_len(gz_valid_len)
                        .map_err(|e| io_error(e, path, "cannot cut torn tail"))?;
                    file.sync_all()
                        .map_err(|e| io_error(e, path, "cannot fsync"))?;
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
            replace_atomic(path, &data)?;
            // The rename replaced the file: lock the new one.
            drop(file);
            file = OpenOptions::new()
                .read(true)
                .write(true)
                .open(path)
                .map_err(|e| io_error(e, path, "cannot reopen migrated session file"))?;
            lock(&file, path)?;
            phys_len = data.len() as u64;
            session = Session::from_bytes(text.into_bytes(), &load, Some(p.clone()))?;
        }
        let meta = session.metadata();
        let mut content_len = meta.file_size;
        if !gzip {
            if let Some(t) = meta.torn_tail.clone() {
                file.set_len(t.offset)
                    .map_err(|e| io_error(e, path, "cannot cut torn tail"))?;
                file.sync_all()
                    .map_err(|e| io_error(e, path, "cannot fsync"))?;
                content_len = t.offset;
                phys_len = t.offset;
                report.repaired = Some(t);
            }
            if meta.missing_final_newline {
                file.write_all_at(b"\n", phys_len)
                    .map_err(|e| io_error(e, path, "cannot complete last line"))?;
                file.sync_all()
                    .map_err(|e| io_error(e, path, "cannot fsync"))?;
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
        let w = FileWriter {
            path: path.to_path_buf(),
            file,
            gzip,
            durability: opts.durability,
            hint: opts.hint && !gzip,
            state: Mutex::new(State {
                core,
                flushing: false,
                phys_len,
                closed: false,
            }),
            cond: Condvar::new(),
        };
        w.write_hint(true)?;
        Ok((w, report))
    }

    fn state(&self) -> Result<MutexGuard<'_, State>> {
        self.state
            .lock()
            .map_err(|_| Error::internal("writer state poisoned by a panic"))
    }

    /// Runs `f` on the writer's state (assigning ids in call order); returns its
    /// result, typically `(id, ticket)`.
    pub fn submit<T>(&self, f: impl FnOnce(&mut WriterCore) -> Result<T>) -> Result<T> {
        let mut st = self.state()?;
        if st.closed {
            return Err(Error::new(ErrorCode::Closed, "the writer is closed")
                .with_path(self.path.display().to_string()));
        }
        f(&mut st.core)
    }

    /// Blocks until `ticket` is durable, writing queued lines itself when no other
    /// thread is (group commit: one write and one fsync for everything queued).
    pub fn wait(&self, ticket: u64) -> Result<()> {
        let mut st = self.state()?;
        loop {
            if let Some(e) = st.core.failure() {
                return Err(e.clone());
            }
            if st.core.durable_ticket() >= ticket {
                return Ok(());
            }
            if st.flushing {
                st = self
                    .cond
                    .wait(st)
                    .map_err(|_| Error::internal("writer state poisoned by a panic"))?;
                continue;
            }
            let max = match self.durability {
                Durability::Fsync => Some(1),
                Durability::Group => None,
            };
            let Some(batch) = st.core.take_batch(max) else {
                return Err(Error::internal("ticket not durable but nothing queued"));
            };
            st.flushing = true;
            let at = st.phys_len;
            drop(st);
            let res = self.write_batch(&batch, at);
            st = self.state()?;
            st.flushing = false;
            match res {
                Ok(n) => {
                    st.phys_len = at + n;
                    st.core.committed(&batch);
                    let hint = if self.hint && !st.core.has_queued() {
                        st.core.take_hint(false)
                    } else {
                        None
                    };
                    self.cond.notify_all();
                    if let Some(h) = hint {
                        drop(st);
                        // The hint is a cache: failing to write it loses nothing.
                        let _ = replace_atomic(
                            Path::new(&hint_path(&self.path.display().to_string())),
                            h.to_json().as_bytes(),
                        );
                        st = self.state()?;
                    }
                }
                Err(e) => {
                    // Cut back whatever part of the batch reached the file.
                    let _ = self.file.set_len(at);
                    let _ = self.file.sync_all();
                    st.core.fail(e.clone());
                    self.cond.notify_all();
                    return Err(e);
                }
            }
        }
    }

    fn write_batch(&self, batch: &Batch, at: u64) -> Result<u64> {
        let member;
        let data: &[u8] = if self.gzip {
            member = gz::encode_member(&batch.bytes);
            &member
        } else {
            &batch.bytes
        };
        self.file
            .write_all_at(data, at)
            .map_err(|e| io_error(e, &self.path, "cannot append"))?;
        self.file
            .sync_data()
            .map_err(|e| io_error(e, &self.path, "cannot fsync"))?;
        Ok(data.len() as u64)
    }

    fn write_hint(&self, force: bool) -> Result<()> {
        if !self.hint {
            return Ok(());
        }
        let hint = self.state()?.core.take_hint(force);
        if let Some(h) = hint {
            let _ = replace_atomic(
                Path::new(&hint_path(&self.path.display().to_string())),
                h.to_json().as_bytes(),
            );
        }
        Ok(())
    }

    /// Waits for everything queued, writes the resume hint and releases the lock.
    /// Later calls fail with `CLOSED`.
    pub fn close(&self) -> Result<()> {
        let last = {
            let st = self.state()?;
            if st.closed {
                return Ok(());
            }
            st.core.last_ticket()
        };
        let res = self.wait(last);
        if res.is_ok() {
            self.write_hint(true)?;
        }
        let mut st = self.state()?;
        st.closed = true;
        let _ = self.file.unlock();
        res
    }

    /// The current leaf.
    pub fn leaf_id(&self) -> Result<Option<String>> {
        Ok(self.state()?.core.leaf_id().map(str::to_string))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}
