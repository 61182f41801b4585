//! New files put in place by `importSession` and `SessionMigrator.migrate`:
//! never a silent replace, never over a file a writer holds, the rename under
//! the writer's lock, and temporary files of killed processes cleaned up.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use forkpoint_core::normalize::Provider;
use forkpoint_core::normalize::import::ImportFormat;
use forkpoint_core::{ErrorCode, LoadOptions, WriterOptions};
use forkpoint_fs::migrate::{FileMigration, import_file, migrate_file};
use forkpoint_fs::place::{commit_new_file, lock, names_inode, open_locked, temp_path};
use forkpoint_fs::{FileWriter, read_session};

const NOW: &str = "2026-03-01T10:00:00.000Z";

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

fn opts() -> WriterOptions {
    WriterOptions {
        cwd: Some("/w".into()),
        ..Default::default()
    }
}

fn open(p: &Path) -> FileWriter {
    FileWriter::open(p, &opts(), 1_770_000_000_000, 7)
        .unwrap()
        .0
}

fn append(w: &FileWriter, text: &str) -> String {
    let json = format!(
        r#"{{"type":"message","message":{{"role":"user","content":"{text}","timestamp":1}}}}"#
    );
    let (id, t) = w.submit(|c| c.append(&json, 1_770_000_000_000)).unwrap();
    w.wait(t).unwrap();
    id
}

/// Whether the session at `p` (read from the path) has an entry with `id`.
fn has_entry(p: &Path, id: &str) -> bool {
    let s = read_session(p, &LoadOptions::default()).unwrap();
    s.index_of(id).is_ok()
}

fn import(dst: &Path, overwrite: bool) -> forkpoint_core::Result<()> {
    import_file(
        Some(&fixture("v3-basic.jsonl")),
        None,
        dst,
        ImportFormat::Auto,
        Some("imported-1"),
        NOW,
        &Default::default(),
        overwrite,
    )
    .map(|_| ())
}

fn migrate(dst: &Path, overwrite: bool) -> forkpoint_core::Result<()> {
    migrate_file(
        &fixture("v3-basic.jsonl"),
        dst,
        Provider::parse("anthropic").unwrap(),
        Provider::parse("openai").unwrap(),
        None,
        NOW,
        overwrite,
        |_, _| {},
    )
    .map(|_| ())
}

type Put = fn(&Path, bool) -> forkpoint_core::Result<()>;
const PUTS: [(&str, Put); 2] = [("import", import), ("migrate", migrate)];

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn an_existing_target_is_already_exists_unless_overwrite() {
    for (what, put) in PUTS {
        let dir = tempfile::tempdir().unwrap();
        let dst = dir.path().join("out.jsonl");
        fs::write(&dst, "OLD\n").unwrap();
        let e = put(&dst, false).unwrap_err();
        assert_eq!(e.code, ErrorCode::AlreadyExists, "{what}: {e}");
        assert_eq!(e.path.as_deref(), Some(dst.to_str().unwrap()));
        assert_eq!(fs::read(&dst).unwrap(), b"OLD\n", "{what}");
        assert_eq!(
            names(dir.path()),
            ["out.jsonl"],
            "{what}: no temporary left"
        );
        put(&dst, true).unwrap();
        assert!(
            read_session(&dst, &LoadOptions::default()).is_ok(),
            "{what}"
        );
        assert_eq!(names(dir.path()), ["out.jsonl"], "{what}");
        // A new target is created; a resume hint left from another file goes.
        let new = dir.path().join("new.jsonl");
        fs::write(dir.path().join("new.jsonl.idx.json"), "{}").unwrap();
        put(&new, false).unwrap();
        assert!(
            read_session(&new, &LoadOptions::default()).is_ok(),
            "{what}"
        );
        assert_eq!(names(dir.path()), ["new.jsonl", "out.jsonl"], "{what}");
    }
}

#[test]
fn the_same_source_imported_twice_keeps_what_was_appended_after_the_first() {
    for (what, put) in PUTS {
        let dir = tempfile::tempdir().unwrap();
        let dst = dir.path().join("s.forkpoint.jsonl");
        put(&dst, false).unwrap();
        let w = open(&dst);
        let a = append(&w, "after the first import");
        w.close().unwrap();
        let before = fs::read(&dst).unwrap();
        let e = put(&dst, false).unwrap_err();
        assert_eq!(e.code, ErrorCode::AlreadyExists, "{what}: {e}");
        assert_eq!(fs::read(&dst).unwrap(), before, "{what}");
        assert!(has_entry(&dst, &a), "{what}");
    }
}

#[test]
fn a_target_a_writer_holds_is_session_locked_even_with_overwrite() {
    for (what, put) in PUTS {
        let dir = tempfile::tempdir().unwrap();
        let dst = dir.path().join("live.jsonl");
        let w = open(&dst);
        let a = append(&w, "before");
        for overwrite in [false, true] {
            let e = put(&dst, overwrite).unwrap_err();
            assert_eq!(e.code, ErrorCode::SessionLocked, "{what} {overwrite}: {e}");
        }
        let b = append(&w, "after");
        w.close().unwrap();
        // Both appends are in the file the path names.
        assert!(has_entry(&dst, &a) && has_entry(&dst, &b), "{what}");
        assert_eq!(names(dir.path()), ["live.jsonl", "live.jsonl.idx.json"]);
    }
}

#[test]
fn a_writer_that_opens_during_a_migration_stops_the_rename() {
    // The check at the start passes; a writer takes the target meanwhile; the
    // rename at the end is refused under the lock, and the writer's appends
    // before and after stay in the file at the path.
    let dir = tempfile::tempdir().unwrap();
    let dst = dir.path().join("t.jsonl");
    let mut m = FileMigration::open(
        &fixture("v3-basic.jsonl"),
        &dst,
        Provider::parse("anthropic").unwrap(),
        Provider::parse("openai").unwrap(),
        None,
        NOW,
        true,
    )
    .unwrap();
    while !m.step(64).unwrap() {}
    let w = open(&dst);
    let a = append(&w, "before the end");
    let e = m.finish().unwrap_err();
    assert_eq!(e.code, ErrorCode::SessionLocked, "{e}");
    let b = append(&w, "after the end");
    w.close().unwrap();
    assert!(has_entry(&dst, &a) && has_entry(&dst, &b));
    assert_eq!(names(dir.path()), ["t.jsonl", "t.jsonl.idx.json"]);

    // The same at the lowest level, with an import's temporary file.
    let w = open(&dst);
    let tmp = temp_path(&dst, "tmp");
    fs::write(&tmp, "NEW\n").unwrap();
    for overwrite in [false, true] {
        let e = commit_new_file(&dst, &tmp, overwrite).unwrap_err();
        assert_eq!(e.code, ErrorCode::SessionLocked, "{e}");
    }
    let c = append(&w, "still here");
    w.close().unwrap();
    assert!(has_entry(&dst, &a) && has_entry(&dst, &b) && has_entry(&dst, &c));
    // Without the writer: replaced, and the old resume hint removed with it.
    commit_new_file(&dst, &tmp, true).unwrap();
    assert_eq!(fs::read(&dst).unwrap(), b"NEW\n");
    assert!(!tmp.exists());
    assert_eq!(names(dir.path()), ["t.jsonl"]);
}

#[test]
fn a_writer_that_locks_a_replaced_file_sees_it_and_goes_to_the_new_one() {
    // The classic race, step by step: a writer opens the session, a replacement
    // renames a new file over it (under the lock of the old one), then the
    // writer takes its lock — on the old, unlinked file. Its check sees that the
    // path names another file; `open_locked` then opens the path again.
    let dir = tempfile::tempdir().unwrap();
    let dst = dir.path().join("s.jsonl");
    import(&dst, false).unwrap();
    let writers_open = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&dst)
        .unwrap();
    let tmp = temp_path(&dst, "tmp");
    fs::write(&tmp, fs::read(&dst).unwrap()).unwrap();
    commit_new_file(&dst, &tmp, true).unwrap();
    // Other tests of this binary spawn processes: a child forked while
    // `commit_new_file` held the old file's lock holds it until its exec, so
    // the lock may take a moment to be free.
    let mut tries = 0;
    while let Err(e) = lock(&writers_open, &dst, ErrorCode::SessionLocked, "locked") {
        tries += 1;
        assert!(tries < 200, "{e}");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(!names_inode(&writers_open, &dst).unwrap());
    drop(writers_open);
    // The new file's lock too may be held a moment by such a child.
    let mut tries = 0;
    let f = loop {
        match open_locked(&dst) {
            Ok(f) => break f,
            Err(e) if e.code == ErrorCode::SessionLocked && tries < 200 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(e) => panic!("{e}"),
        }
    };
    assert!(names_inode(&f, &dst).unwrap());
    // The lock is the writer's: a writer and a replacement both see it.
    let e = FileWriter::open(&dst, &opts(), 0, 1).err().unwrap();
    assert_eq!(e.code, ErrorCode::SessionLocked);
    let tmp = temp_path(&dst, "tmp");
    fs::write(&tmp, "NEW\n").unwrap();
    let e = commit_new_file(&dst, &tmp, true).unwrap_err();
    assert_eq!(e.code, ErrorCode::SessionLocked);
    drop(f);
    commit_new_file(&dst, &tmp, true).unwrap();
    assert_eq!(fs::read(&dst).unwrap(), b"NEW\n");
}

#[test]
fn a_failed_commit_leaves_no_target_behind() {
    // A temporary file that is gone: the hard link fails, so does the rename
    // over the placeholder (the path without hard links); the placeholder is
    // taken back, and nothing is at the target.
    let dir = tempfile::tempdir().unwrap();
    let dst = dir.path().join("n.jsonl");
    let e = commit_new_file(&dst, &dir.path().join(".n.jsonl.tmp-1-gone"), false).unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound, "{e}");
    assert!(names(dir.path()).is_empty());
}

#[test]
fn writers_and_replacements_racing_never_lose_an_acknowledged_append() {
    // A replacement renames new files over the session while a writer opens it,
    // appends and checks: every append the writer acknowledged is in the file
    // the path names while that writer still holds it (a writer that locked the
    // old, replaced file would append into a file no one can see), and the only
    // failures are SESSION_LOCKED. The window between a writer's open and its
    // lock is too short to be hit reliably; the test above takes it step by step.
    let dir = tempfile::tempdir().unwrap();
    let dst = dir.path().join("race.jsonl");
    import(&dst, false).unwrap();
    let fresh = fs::read(&dst).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let replacer = {
        let (dst, stop) = (dst.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut replaced = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let tmp = temp_path(&dst, "tmp");
                fs::write(&tmp, &fresh).unwrap();
                match commit_new_file(&dst, &tmp, true) {
                    Ok(()) => replaced += 1,
                    Err(e) => {
                        assert_eq!(e.code, ErrorCode::SessionLocked, "{e}");
                        fs::remove_file(&tmp).unwrap();
                    }
                }
            }
            replaced
        })
    };
    let mut appended = 0;
    for i in 0..200 {
        let w = match FileWriter::open(&dst, &opts(), 1_770_000_000_000, i) {
            Ok((w, _)) => w,
            Err(e) if e.code == ErrorCode::SessionLocked => continue,
            Err(e) => panic!("{e}"),
        };
        let id = append(&w, "raced");
        assert!(has_entry(&dst, &id), "append {i} went to a replaced file");
        appended += 1;
        w.close().unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let replaced = replacer.join().unwrap();
    assert!(appended > 0 && replaced > 0, "{appended} {replaced}");
}

/// A pid that is not running: a child that has exited and been reaped.
fn dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

#[test]
fn stale_temporary_files_of_dead_processes_are_removed() {
    let dead = dead_pid();
    let me = std::process::id();
    type Run = fn(&Path);
    let runs: [(&str, Run); 3] = [
        ("import", |p| import(p, true).unwrap()),
        ("migrate", |p| migrate(p, true).unwrap()),
        ("open", |p| open(p).close().unwrap()),
    ];
    for (what, run) in runs {
        let dir = tempfile::tempdir().unwrap();
        let dst = dir.path().join("X.jsonl");
        let stale = [
            format!(".X.jsonl.migrating-{dead}-abc"),
            format!(".X.jsonl.tmp-{dead}-abc"),
            format!(".X.jsonl.idx.json.tmp-{dead}-abc"),
        ];
        let kept = [
            format!(".X.jsonl.migrating-{me}-abc"), // ours: in flight
            format!(".X.jsonl.tmp-{me}-abc"),
            format!(".Y.jsonl.tmp-{dead}-abc"), // another target's
            format!(".X.jsonl.tmp-{dead}"),     // not our naming
            format!(".X.jsonl.tmp-x{dead}-abc"),
            "other.jsonl".to_string(),
        ];
        for n in stale.iter().chain(&kept) {
            fs::write(dir.path().join(n), "partial").unwrap();
        }
        run(&dst);
        let left = names(dir.path());
        for n in &stale {
            assert!(!left.contains(n), "{what}: {n} left");
        }
        for n in &kept {
            assert!(left.contains(n), "{what}: {n} removed");
        }
    }
}

/// Generates a pi v3 session of about `mb` MiB.
fn big_session(path: &Path, mb: usize) {
    let mut f = std::io::BufWriter::new(fs::File::create(path).unwrap());
    writeln!(
        f,
        r#"{{"type":"session","version":3,"id":"0b6f3c1e-0000-4000-8000-00000000beef","timestamp":"2026-03-01T10:00:01.000Z","cwd":"/w"}}"#
    )
    .unwrap();
    let pad = "x".repeat(900);
    let mut parent = "null".to_string();
    let mut i = 0u64;
    let mut written = 0usize;
    while written < mb << 20 {
        let id = format!("{i:08x}");
        let line = format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-03-01T10:00:02.000Z","message":{{"role":"user","content":[{{"type":"text","text":"{pad}"}}],"timestamp":1772359203000}}}}"#
        );
        writeln!(f, "{line}").unwrap();
        written += line.len() + 1;
        parent = format!("\"{id}\"");
        i += 1;
    }
    f.flush().unwrap();
}

/// The child of the SIGKILL test: migrates `FP_KILL_SRC` to `FP_KILL_DST` in
/// small steps, says so after the first, then waits to be killed.
#[test]
fn sigkill_child() {
    let (Ok(src), Ok(dst)) = (std::env::var("FP_KILL_SRC"), std::env::var("FP_KILL_DST")) else {
        return; // not the child
    };
    let mut m = FileMigration::open(
        Path::new(&src),
        Path::new(&dst),
        Provider::parse("anthropic").unwrap(),
        Provider::parse("openai").unwrap(),
        None,
        NOW,
        false,
    )
    .unwrap();
    assert!(!m.step(2 << 20).unwrap()); // more than the output buffer: bytes on disk
    println!("MIGRATING");
    std::io::stdout().flush().unwrap();
    loop {
        std::thread::park();
    }
}

#[test]
fn a_migration_killed_mid_way_leaves_a_temporary_file_the_next_one_removes() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("big.jsonl");
    big_session(&src, 4);
    let dst = dir.path().join("out.jsonl");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "sigkill_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("FP_KILL_SRC", &src)
        .env("FP_KILL_DST", &dst)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("MIGRATING") {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "the child ended early"
        );
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let temps: Vec<String> = names(dir.path())
        .into_iter()
        .filter(|n| n.starts_with(".out.jsonl.migrating-"))
        .collect();
    assert_eq!(temps.len(), 1, "{temps:?}");
    assert!(fs::metadata(dir.path().join(&temps[0])).unwrap().len() > 0);
    assert!(!dst.exists());
    // The next migration of that target removes it (and succeeds).
    migrate_file(
        &src,
        &dst,
        Provider::parse("anthropic").unwrap(),
        Provider::parse("openai").unwrap(),
        None,
        NOW,
        false,
        |_, _| {},
    )
    .unwrap();
    assert_eq!(names(dir.path()), ["big.jsonl", "out.jsonl"]);
}

/// Runs `f` on a thread; a call that has not returned after 30 s fails the test
/// (a FIFO opened with blocking would hang forever).
fn promptly<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(30))
        .expect("the call hung")
}

/// Found by trying it as an attacker: with `overwrite`, import and migrate renamed
/// their file over whatever the target was — a device like `/dev/null` became a
/// regular file — and a FIFO target hung the call. Only a regular file (not a
/// link to one) can be replaced; anything else is `INVALID_INPUT` at once.
#[test]
fn only_a_regular_file_is_ever_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.jsonl");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let sub = dir.path().join("dir.jsonl");
    fs::create_dir(&sub).unwrap();
    let real = dir.path().join("real.jsonl");
    fs::write(&real, b"keep me\n").unwrap();
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    for target in [fifo.clone(), sub.clone(), link.clone()] {
        for overwrite in [false, true] {
            let t = target.clone();
            let e = promptly(move || import(&t, overwrite)).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidInput, "{target:?} {e:?}");
            let t = target.clone();
            let e = promptly(move || migrate(&t, overwrite)).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidInput, "{target:?} {e:?}");
        }
    }
    let m = fs::symlink_metadata(&fifo).unwrap();
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&m.file_type()));
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(fs::read(&real).unwrap(), b"keep me\n");
    // Nothing left behind beside them.
    let left: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn migrating_a_claude_code_transcript_is_unsupported_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("cc.jsonl");
    fs::write(
        &src,
        "\n{\"parentUuid\":null,\"sessionId\":\"s\",\"uuid\":\"u1\",\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n",
    )
    .unwrap();
    let dst = dir.path().join("out.jsonl");
    let e = migrate_file(
        &src,
        &dst,
        Provider::parse("anthropic").unwrap(),
        Provider::parse("openai").unwrap(),
        None,
        NOW,
        false,
        |_, _| {},
    )
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::UnsupportedFormat, "{e}");
    assert!(e.message.contains("Claude Code"), "{e}");
    assert_eq!((e.line, e.path.as_deref()), (Some(2), src.to_str()));
    assert_eq!(names(dir.path()), ["cc.jsonl"]);
}
