//! Putting a new session file in place (`importSession`, `SessionMigrator.migrate`)
//! without ever replacing one silently, and the session file's OS lock.
//!
//! The lock is the one a [`FileWriter`](crate::FileWriter) takes: an exclusive
//! `flock` (`File::try_lock`) on the session file itself. A lock on a file is a
//! lock on its inode, so a file replaced by a rename leaves its lock behind on the
//! old, unlinked inode. Hence the protocol, kept by every writer and every
//! replacement here:
//!
//! - a writer opens the path, locks the file, then checks that the path still
//!   names the inode it locked (`stat` of the path against `fstat` of the file);
//!   if not, it opens the path again ([`open_locked`]);
//! - a replacement locks the file at the path (the same lock: a writer holding it
//!   makes the replacement fail with `SESSION_LOCKED`), checks the inode the same
//!   way, and renames the new file over it while holding that lock
//!   ([`commit_new_file`]). A writer that opened the old inode just before can
//!   only lock it after the rename, and its check then sends it to the new file.
//! - a target that does not exist is created by a hard link of the complete,
//!   fsynced temporary file (which fails if the target appeared meanwhile), so no
//!   writer can ever see an empty or partial target.
//!
//! Temporary files are named `.{name}.migrating-{pid}-{uuid}` (migrations) and
//! `.{name}.tmp-{pid}-{uuid}` (atomic replaces); a process killed mid-way leaves
//! one behind. [`clean_stale_temps`] removes those whose process is gone.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use forkpoint_core::hint::hint_path;
use forkpoint_core::{Error, ErrorCode, Result};

use crate::io::{io_error, sync_dir};

const SESSION_LOCKED: &str =
    "another writer holds the lock on this session file (one writer per session)";

/// How often a racing replacement is retried before giving up.
const ATTEMPTS: usize = 64;

/// Takes the file's exclusive OS lock, or fails with `locked`'s error.
pub fn lock(file: &File, path: &Path, locked: ErrorCode, what: &str) -> Result<()> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(TryLockError::WouldBlock) => {
            Err(Error::new(locked, what.to_string()).with_path(path.display().to_string()))
        }
        Err(TryLockError::Error(e)) => Err(io_error(e, path, "cannot lock file")),
    }
}

/// Whether `path` names the inode `file` has open (`false` if it names nothing).
pub fn names_inode(file: &File, path: &Path) -> Result<bool> {
    let open = file
        .metadata()
        .map_err(|e| io_error(e, path, "cannot stat session file"))?;
    match fs::metadata(path) {
        Ok(m) => Ok(m.dev() == open.dev() && m.ino() == open.ino()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io_error(e, path, "cannot stat session file")),
    }
}

/// Opens (creating it if missing) the session file at `path` for reading and
/// writing and takes its writer lock: `SESSION_LOCKED` if another writer holds it.
/// The file returned is the one the path names, locked: a file replaced between
/// the open and the lock is opened again.
pub fn open_locked(path: &Path) -> Result<File> {
    for _ in 0..ATTEMPTS {
        // Without blocking (a FIFO must not hang the open), and only a regular file.
        let file = crate::io::nonblocking(
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false),
        )
        .open(path)
        .map_err(|e| {
            crate::io::open_error(
                e,
                path,
                "session file",
                "cannot open session file for writing",
            )
        })?;
        crate::io::check_regular(&file, path, "session file")?;
        lock(&file, path, ErrorCode::SessionLocked, SESSION_LOCKED)?;
        if names_inode(&file, path)? {
            return Ok(file);
        }
        // Replaced (or removed) between our open and our lock: the lock we hold
        // is on a file that is no longer the session. Drop it, go again.
    }
    Err(replaced_too_often(path))
}

fn replaced_too_often(path: &Path) -> Error {
    Error::new(
        ErrorCode::Io,
        "the session file was replaced again and again while opening it",
    )
    .with_path(path.display().to_string())
}

/// The directory `path` is in (`.` for a bare name).
pub fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A fresh temporary path beside `target`: `.{name}.{kind}-{pid}-{uuid}`.
pub fn temp_path(target: &Path, kind: &str) -> PathBuf {
    parent_dir(target).join(format!(
        ".{}.{kind}-{}-{}",
        file_name(target),
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ))
}

fn already_exists(target: &Path) -> Error {
    Error::new(
        ErrorCode::AlreadyExists,
        "the target file exists; pass { overwrite: true } to replace it",
    )
    .with_path(target.display().to_string())
}

/// Opens an existing target to lock it: `None` when there is none. Only a
/// regular file can be a target: a directory, FIFO, socket or device is
/// `INVALID_INPUT` (opened without blocking, so a FIFO cannot hang the open),
/// and so is a symbolic link (a rename would replace the link while a writer
/// locks the file it points to).
fn open_target(target: &Path) -> Result<Option<File>> {
    match fs::symlink_metadata(target) {
        Ok(m) if m.file_type().is_symlink() => {
            return Err(
                Error::invalid_input("the target is a symbolic link, not a session file")
                    .with_path(target.display().to_string()),
            );
        }
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        _ => {}
    }
    let file = match crate::io::nonblocking(OpenOptions::new().read(true)).open(target) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(crate::io::open_error(
                e,
                target,
                "target file",
                "cannot open the target file",
            ));
        }
    };
    crate::io::check_regular(&file, target, "target file")?;
    Ok(Some(file))
}

/// Fails fast, before any expensive work, where [`commit_new_file`] would fail:
/// `SESSION_LOCKED` if a writer holds the target (even with `overwrite`),
/// `ALREADY_EXISTS` if it exists and `overwrite` is false. Decides nothing:
/// the commit checks again under the lock.
pub fn check_target(target: &Path, overwrite: bool) -> Result<()> {
    let Some(file) = open_target(target)? else {
        return Ok(());
    };
    lock(&file, target, ErrorCode::SessionLocked, SESSION_LOCKED)?;
    if !overwrite {
        return Err(already_exists(target));
    }
    Ok(())
}

/// Moves the complete, fsynced file `tmp` to `target` (same directory), under
/// the target's writer lock:
///
/// - a target a writer holds: `SESSION_LOCKED`, whatever `overwrite` says;
/// - a target that exists: `ALREADY_EXISTS` unless `overwrite`; with it, `tmp`
///   is renamed over the target while its lock is held;
/// - a target that does not exist: created by a hard link (fails if it appeared
///   meanwhile; then the rules above apply), or, where the file system has no
///   hard links, by an empty placeholder locked and then replaced.
///
/// The target's resume hint, which describes another file, is removed. The
/// directory is fsynced before the lock is released. On success `tmp` is gone;
/// on failure the caller removes it.
pub fn commit_new_file(target: &Path, tmp: &Path, overwrite: bool) -> Result<()> {
    let dir = parent_dir(target);
    let hint = hint_path(&target.display().to_string());
    for _ in 0..ATTEMPTS {
        if let Some(old) = open_target(target)? {
            lock(&old, target, ErrorCode::SessionLocked, SESSION_LOCKED)?;
            if !names_inode(&old, target)? {
                continue; // replaced or removed meanwhile: look again
            }
            if !overwrite {
                return Err(already_exists(target));
            }
            fs::rename(tmp, target)
                .map_err(|e| io_error(e, target, "cannot move the new file into place"))?;
            let _ = fs::remove_file(&hint);
            sync_dir(dir)?;
            drop(old); // releases the lock, after the rename is durable
            return Ok(());
        }
        // No target: create it with the complete file, atomically. A resume
        // hint left by a file that was there once describes another file.
        let _ = fs::remove_file(&hint);
        match fs::hard_link(tmp, target) {
            Ok(()) => {
                let _ = fs::remove_file(tmp);
                return sync_dir(dir);
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(_) => {}
        }
        // No hard links here: reserve the name with an empty placeholder that
        // we lock before anyone can, then rename over it.
        let placeholder = match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(target)
        {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io_error(e, target, "cannot create the target file")),
        };
        lock(
            &placeholder,
            target,
            ErrorCode::SessionLocked,
            SESSION_LOCKED,
        )?;
        if !names_inode(&placeholder, target)? {
            continue; // removed or replaced meanwhile: look again
        }
        let res = fs::rename(tmp, target)
            .map_err(|e| io_error(e, target, "cannot move the new file into place"));
        if res.is_err() {
            // Take back our placeholder (still ours: we hold its lock).
            let _ = fs::remove_file(target);
        }
        res?;
        return sync_dir(dir);
    }
    Err(replaced_too_often(target))
}

/// Writes `data` as a new file at `target` ([`commit_new_file`]'s rules),
/// through a fsynced temporary file beside it; stale temporary files of the
/// target are removed first.
pub fn write_new_file(target: &Path, data: &[u8], overwrite: bool) -> Result<()> {
    clean_stale_temps(target);
    let tmp = temp_path(target, "tmp");
    let res = (|| {
        drop(crate::io::write_temp(&tmp, data)?);
        commit_new_file(target, &tmp, overwrite)
    })();
    if res.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    res
}

/// Whether process `pid` is alive, as far as this machine can tell: `/proc/{pid}`
/// exists. `None` where there is no `/proc` (not Linux): unknown.
fn process_alive(pid: u32) -> Option<bool> {
    if !Path::new("/proc/self").exists() {
        return None;
    }
    Some(Path::new(&format!("/proc/{pid}")).exists())
}

/// Removes the temporary files a killed process left beside `target` —
/// `.{name}.migrating-{pid}-…` and `.{name}.tmp-{pid}-…`, also those of the
/// target's resume hint — whose process is gone. Best effort: errors are
/// ignored. Kept: files of this process, of any live process, and of a dead
/// process whose pid was since reused (it looks alive); everything where
/// liveness cannot be told (no `/proc`). A process in another pid namespace
/// writing in the same directory looks dead: its in-flight file may be removed,
/// and its migration then fails without touching the target.
pub fn clean_stale_temps(target: &Path) {
    let name = file_name(target);
    if name.is_empty() {
        return;
    }
    let hint = format!("{name}.idx.json");
    let prefixes = [
        format!(".{name}.migrating-"),
        format!(".{name}.tmp-"),
        format!(".{hint}.tmp-"),
    ];
    let Ok(entries) = fs::read_dir(parent_dir(target)) else {
        return;
    };
    let me = std::process::id();
    for entry in entries.flatten() {
        let fname = entry.file_name();
        let Some(fname) = fname.to_str() else {
            continue;
        };
        let Some(rest) = prefixes.iter().find_map(|p| fname.strip_prefix(p.as_str())) else {
            continue;
        };
        let Some((pid, tail)) = rest.split_once('-') else {
            continue;
        };
        if tail.is_empty() || pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        if pid == me || process_alive(pid) != Some(false) {
            continue;
        }
        if entry.file_type().is_ok_and(|t| t.is_file()) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Replaces the session file at `path` — whose lock the caller holds — with
/// `data` atomically, and returns the new file, open for reading and writing
/// and already locked: the lock is never free between the old file and the new
/// (a writer rewriting its own file, e.g. a format migration on open).
pub fn replace_locked(path: &Path, data: &[u8]) -> Result<File> {
    let tmp = temp_path(path, "tmp");
    let res = (|| {
        let f = crate::io::write_temp(&tmp, data)?;
        lock(&f, &tmp, ErrorCode::SessionLocked, SESSION_LOCKED)?;
        fs::rename(&tmp, path)
            .map_err(|e| io_error(e, path, "cannot rename temporary file into place"))?;
        sync_dir(parent_dir(path))?;
        Ok(f)
    })();
    if res.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    res
}
