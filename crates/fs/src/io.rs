//! File primitives: error mapping, whole and positional reads, atomic replace.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use forkpoint_core::{Error, ErrorCode, LoadOptions, Result, Session};

/// Maps an OS error to a forkpoint error with a stable code.
pub fn io_error(e: std::io::Error, path: &Path, what: &str) -> Error {
    let code = match e.kind() {
        ErrorKind::NotFound => ErrorCode::NotFound,
        ErrorKind::StorageFull | ErrorKind::QuotaExceeded => ErrorCode::StorageFull,
        _ => match e.raw_os_error() {
            Some(28) | Some(122) => ErrorCode::StorageFull, // ENOSPC, EDQUOT
            _ => ErrorCode::Io,
        },
    };
    Error::new(code, format!("{what}: {e}")).with_path(path.display().to_string())
}

/// Opens without blocking: a FIFO opens at once instead of waiting for a
/// writer (regular files are not affected by `O_NONBLOCK`).
pub fn nonblocking(o: &mut OpenOptions) -> &mut OpenOptions {
    o.custom_flags(libc::O_NONBLOCK)
}

/// The length of an opened file, which must be a regular file: a directory,
/// FIFO, socket or device is `INVALID_INPUT` (reading one could block forever
/// or never end).
pub fn check_regular(file: &File, path: &Path, what: &str) -> Result<u64> {
    let meta = file
        .metadata()
        .map_err(|e| io_error(e, path, &format!("cannot stat {what}")))?;
    if meta.is_file() {
        return Ok(meta.len());
    }
    let kind = if meta.is_dir() {
        "a directory"
    } else {
        "not a regular file (a FIFO, socket or device)"
    };
    Err(
        Error::new(ErrorCode::InvalidInput, format!("is {kind}, not a {what}"))
            .with_path(path.display().to_string()),
    )
}

/// An error opening `path`: `INVALID_INPUT` when it is not a regular file
/// (a socket cannot be opened at all), else the OS error with `msg`.
pub fn open_error(e: std::io::Error, path: &Path, what: &str, msg: &str) -> Error {
    if e.kind() != ErrorKind::NotFound
        && let Ok(m) = fs::metadata(path)
        && !m.is_file()
        && !m.is_dir()
    {
        return Error::new(
            ErrorCode::InvalidInput,
            format!("is not a regular file (a FIFO, socket or device), not a {what}"),
        )
        .with_path(path.display().to_string());
    }
    io_error(e, path, msg)
}

/// Opens a regular file for reading (see [`check_regular`]); returns it and
/// its length at the time it was opened.
pub fn open_regular(path: &Path, what: &str) -> Result<(File, u64)> {
    let f = nonblocking(OpenOptions::new().read(true))
        .open(path)
        .map_err(|e| open_error(e, path, what, &format!("cannot open {what}")))?;
    let len = check_regular(&f, path, what)?;
    Ok((f, len))
}

/// Reads a whole regular file: the bytes it had when it was opened (bytes
/// appended while it is read are not read). A file larger than `opts`'
/// `maxFileBytes` is `LIMIT_EXCEEDED`, and is not read.
pub fn read_all(path: &Path, opts: &LoadOptions) -> Result<Vec<u8>> {
    let (f, len) = open_regular(path, "session file")?;
    opts.check_file_size_at(len, Some(&path.display().to_string()))?;
    read_at(&f, path, 0, len)
}

/// A small optional side file (a hint, an index): `None` when it is missing,
/// not a regular file, longer than `max` bytes or not UTF-8.
pub fn read_small(path: &Path, max: u64) -> Option<String> {
    let (f, len) = open_regular(path, "file").ok()?;
    if len > max {
        return None;
    }
    String::from_utf8(read_at(&f, path, 0, len).ok()?).ok()
}

/// Loads a whole session file (`.jsonl` or `.jsonl.gz`). Only regular files
/// are read (`INVALID_INPUT` otherwise); gzip is decompressed within the
/// limits of `opts`.
pub fn read_session(path: &Path, opts: &LoadOptions) -> Result<Session> {
    let bytes = read_all(path, opts)?;
    Session::from_bytes_threads(
        bytes,
        opts,
        Some(path.display().to_string()),
        scan_threads(),
    )
}

/// Threads used to scan large files: [`forkpoint_core::threads::available`].
pub fn scan_threads() -> usize {
    forkpoint_core::threads::available()
}

/// Reads of at least this many bytes are made in parts on several threads.
const PARALLEL_READ_MIN: u64 = 8 << 20;

/// Reads exactly `len` bytes at `offset` (fewer only at the end of the file).
///
/// A long read is made in parts at once (as many as [`scan_threads`], at
/// most one per 4 MiB), each into its own range of the buffer, the first on
/// the calling thread and each other on a thread of its own: most of a long
/// read's time is the kernel faulting in and filling the buffer's fresh
/// pages, which threads do side by side (a 128 MiB file: 80–90 ms on two
/// threads against 150–180 ms on one, `examples/load_timing.rs`). A part that
/// comes back short (the file was cut while it was read) ends the result
/// there, as one read from the start would have.
pub fn read_at(file: &File, path: &Path, offset: u64, len: u64) -> Result<Vec<u8>> {
    // A length no allocation can hold (a sparse file claiming terabytes, say)
    // is an error, not an abort of the process.
    let too_long = || {
        Error::new(
            ErrorCode::LimitExceeded,
            format!("cannot hold {len} bytes in memory (a lazy load reads only what it needs)"),
        )
        .with_path(path.display().to_string())
    };
    let n = usize::try_from(len).map_err(|_| too_long())?;
    Vec::<u8>::new()
        .try_reserve_exact(n)
        .map_err(|_| too_long())?;
    let mut buf = vec![0u8; n];
    let parts = if len < PARALLEL_READ_MIN {
        1
    } else {
        scan_threads().min((len / (PARALLEL_READ_MIN / 2)) as usize)
    };
    if parts < 2 {
        let done = fill(file, path, offset, &mut buf)?;
        buf.truncate(done);
        return Ok(buf);
    }
    let each = buf.len().div_ceil(parts);
    // Each part's bytes read; `None` for a part whose thread could not be
    // had (or panicked): it is read again here, after the others.
    let results: Vec<Option<Result<usize>>> = {
        let (head, rest) = buf.split_at_mut(each);
        let later = rest.chunks_mut(each).enumerate();
        let (first, later) = forkpoint_core::threads::on_threads(
            "forkpoint-read",
            later,
            || fill(file, path, offset, head),
            |(k, slice)| fill(file, path, offset + ((k + 1) * each) as u64, slice),
        );
        std::iter::once(Some(first)).chain(later).collect()
    };
    let mut done = 0usize;
    for (k, r) in results.into_iter().enumerate() {
        let start = k * each;
        let end = (start + each).min(buf.len());
        let got = match r {
            Some(r) => r?,
            None => fill(file, path, offset + start as u64, &mut buf[start..end])?,
        };
        done += got;
        if got < end - start {
            break;
        }
    }
    buf.truncate(done);
    Ok(buf)
}

/// Reads into `buf` from `offset` until it is full or the file ends; returns
/// the bytes read.
fn fill(file: &File, path: &Path, offset: u64, buf: &mut [u8]) -> Result<usize> {
    let mut done = 0usize;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(io_error(e, path, "cannot read session file")),
        }
    }
    Ok(done)
}

/// Cuts the file back to `len` bytes (a torn tail) and fsyncs it.
pub fn cut_tail(file: &File, path: &Path, len: u64) -> Result<()> {
    file.set_len(len)
        .map_err(|e| io_error(e, path, "cannot cut torn tail"))?;
    file.sync_all()
        .map_err(|e| io_error(e, path, "cannot fsync"))
}

/// Writes the missing newline of a complete last line ending at `len`, and fsyncs.
pub fn complete_last_line(file: &File, path: &Path, len: u64) -> Result<()> {
    use std::os::unix::fs::FileExt;
    file.write_all_at(b"\n", len)
        .map_err(|e| io_error(e, path, "cannot complete last line"))?;
    file.sync_all()
        .map_err(|e| io_error(e, path, "cannot fsync"))
}

/// Reads up to `len` bytes at `offset` into the start of `buf` (grown if
/// needed, never shrunk); returns how many were read (fewer at the end).
pub fn read_into(
    file: &File,
    path: &Path,
    offset: u64,
    len: u64,
    buf: &mut Vec<u8>,
) -> Result<usize> {
    let len = len as usize;
    if buf.len() < len {
        buf.resize(len, 0);
    }
    let mut done = 0usize;
    while done < len {
        match file.read_at(&mut buf[done..len], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(io_error(e, path, "cannot read file")),
        }
    }
    Ok(done)
}

/// Replaces `path` with `data` atomically: write a temporary file beside it,
/// fsync it, rename it over `path`, fsync the directory.
pub fn replace_atomic(path: &Path, data: &[u8]) -> Result<()> {
    let dir = crate::place::parent_dir(path);
    let tmp = crate::place::temp_path(path, "tmp");
    let res = (|| {
        write_temp(&tmp, data)?;
        fs::rename(&tmp, path)
            .map_err(|e| io_error(e, path, "cannot rename temporary file into place"))?;
        sync_dir(dir)
    })();
    if res.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    res
}

/// Creates `tmp` (which must not exist), writes `data` and fsyncs it; the file
/// is returned open for reading and writing. The caller removes it on failure.
pub fn write_temp(tmp: &Path, data: &[u8]) -> Result<File> {
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(tmp)
        .map_err(|e| io_error(e, tmp, "cannot create temporary file"))?;
    f.write_all(data)
        .map_err(|e| io_error(e, tmp, "cannot write temporary file"))?;
    f.sync_all()
        .map_err(|e| io_error(e, tmp, "cannot fsync temporary file"))?;
    Ok(f)
}

/// fsyncs a directory, so that a rename or a new file in it is durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_error(e, dir, "cannot fsync directory"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes that differ at every offset of a long file (so a part read into
    /// the wrong place shows).
    fn pattern(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3])
            .collect()
    }

    #[test]
    fn a_long_read_in_parts_is_the_file_at_any_offset_and_length() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("long");
        let len = 3 * PARALLEL_READ_MIN as usize + 12_345;
        let data = pattern(len);
        std::fs::write(&path, &data).unwrap();
        let file = File::open(&path).unwrap();
        for (offset, want) in [
            (0, len),
            (1, len - 1),
            (7_777, PARALLEL_READ_MIN as usize),
            (5, PARALLEL_READ_MIN as usize - 1),
            (len - 10, 10),
        ] {
            let got = read_at(&file, &path, offset as u64, want as u64).unwrap();
            assert!(
                got == data[offset..offset + want],
                "offset {offset}, {want} bytes"
            );
        }
        // Asked for more than the file holds: the bytes up to its end.
        let got = read_at(&file, &path, 100, len as u64).unwrap();
        assert!(got == data[100..], "past the end");
        let got = read_at(&file, &path, len as u64 + 5, PARALLEL_READ_MIN).unwrap();
        assert!(got.is_empty());
        assert!(read_all(&path, &LoadOptions::default()).unwrap() == data);
    }

    #[test]
    fn a_file_longer_than_memory_can_hold_is_an_error_not_an_abort() {
        // Only where the kernel refuses an allocation larger than the
        // machine (heuristic or strict overcommit); with "always" the read
        // would go ahead.
        let mode = std::fs::read_to_string("/proc/sys/vm/overcommit_memory").unwrap_or_default();
        if mode.trim() == "1" {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sparse");
        let file = File::create(&path).unwrap();
        // 8 TiB of nothing: a sparse file (no blocks), where the file system allows it.
        if file.set_len(8 << 40).is_err() {
            return;
        }
        let no_file_limit = LoadOptions {
            max_file_bytes: u64::MAX,
            ..LoadOptions::default()
        };
        let e = read_all(&path, &no_file_limit).unwrap_err();
        assert_eq!(e.code, ErrorCode::LimitExceeded, "{e}");
        assert!(e.message.contains("cannot hold"), "{e}");
        assert_eq!(e.path.as_deref(), Some(path.display().to_string().as_str()));
    }

    #[test]
    fn a_file_past_max_file_bytes_is_refused_before_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.jsonl");
        let header = b"{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/\"}\n";
        std::fs::write(&path, header).unwrap();
        let n = header.len() as u64;
        let limit = |max_file_bytes| LoadOptions {
            max_file_bytes,
            ..LoadOptions::default()
        };
        assert!(read_session(&path, &limit(n)).is_ok());
        let e = read_session(&path, &limit(n - 1)).unwrap_err();
        assert_eq!(e.code, ErrorCode::LimitExceeded, "{e}");
        assert!(e.message.contains("maxFileBytes"), "{e}");
        assert_eq!(e.path.as_deref(), Some(path.display().to_string().as_str()));
        // 5 GiB of nothing (sparse): past the default 4 GiB, refused at once.
        if File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(5 << 30)
            .is_ok()
        {
            let e = read_session(&path, &LoadOptions::default()).unwrap_err();
            assert_eq!(e.code, ErrorCode::LimitExceeded, "{e}");
            assert!(e.message.contains("5368709120 bytes"), "{e}");
        }
    }
}
