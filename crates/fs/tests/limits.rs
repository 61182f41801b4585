//! Limits on what reading a file may cost: gzip bombs stop early with
//! `LIMIT_EXCEEDED` (each limit, configurable per call), and files that are not
//! regular files (a FIFO, `/dev/zero`, `/dev/urandom`) are refused with
//! `INVALID_INPUT` at every entry point instead of blocking or reading forever.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use forkpoint_core::hint::hint_path;
use forkpoint_core::{
    Durability, ErrorCode, EventLogOptions, LazyOptions, LimitOptions, LoadOptions, WriterOptions,
};
use forkpoint_fs::events::FileEventLog;
use forkpoint_fs::incremental::IncrementalFile;
use forkpoint_fs::migrate::FileMigration;
use forkpoint_fs::{FileWriter, list_sessions, list_sessions_with, load_lazy, read_session};

const HEADER: &str = r#"{"type":"session","version":3,"id":"bomb-1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#;

/// Runs `f` on a thread; fails the test if it does not return within a
/// minute (the old code blocked forever on a FIFO).
fn promptly<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{what} did not return (blocked on a special file?)"))
}

/// A gzip file: the header, then `n` copies of one entry line (about 1000:1).
fn bomb(path: &Path, n: usize) {
    let line = format!(
        "{{\"type\":\"custom\",\"customType\":\"x\",\"id\":\"e1\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"data\":\"{}\"}}\n",
        "x".repeat(400)
    );
    let f = std::fs::File::create(path).unwrap();
    let mut enc = flate2::write::GzEncoder::new(f, flate2::Compression::best());
    enc.write_all(HEADER.as_bytes()).unwrap();
    enc.write_all(b"\n").unwrap();
    for _ in 0..n {
        enc.write_all(line.as_bytes()).unwrap();
    }
    enc.finish().unwrap();
}

/// A valid session of `n` distinct entries, gzip-compressed.
fn session_gz(path: &Path, n: usize) -> usize {
    let mut text = format!("{HEADER}\n");
    let mut parent = "null".to_string();
    for i in 0..n {
        let id = format!("e{i:07}");
        text.push_str(&format!(
            "{{\"type\":\"custom\",\"customType\":\"x\",\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"data\":{{\"n\":{i}}}}}\n"
        ));
        parent = format!("\"{id}\"");
    }
    std::fs::write(path, forkpoint_core::gz::encode_member(text.as_bytes())).unwrap();
    text.len()
}

fn limit_err(r: forkpoint_core::Result<impl Sized>) -> forkpoint_core::Error {
    match r {
        Ok(_) => panic!("loaded"),
        Err(e) => {
            assert_eq!(e.code, ErrorCode::LimitExceeded, "{e}");
            e
        }
    }
}

#[test]
fn a_gzip_bomb_stops_at_each_limit() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bomb.jsonl.gz");
    // 40 000 lines of ~520 bytes: ~20 MB of text in ~25 KB.
    bomb(&p, 40_000);
    let no_ratio = LoadOptions {
        max_compression_ratio: 0,
        ..LoadOptions::default()
    };
    let cases = [
        (LoadOptions::default(), "maxCompressionRatio"),
        (
            LoadOptions {
                max_decompressed_bytes: 1 << 20,
                ..no_ratio.clone()
            },
            "maxDecompressedBytes",
        ),
        (
            LoadOptions {
                max_entries: 1000,
                ..no_ratio.clone()
            },
            "maxEntries",
        ),
        (
            LoadOptions {
                max_line_bytes: 300,
                ..no_ratio.clone()
            },
            "maxLineBytes",
        ),
    ];
    for (opts, name) in cases {
        let e = limit_err(read_session(&p, &opts));
        assert!(e.message.contains(name), "{name}: {e}");
        assert_eq!(e.path.as_deref(), Some(p.to_str().unwrap()));
        let lazy = LazyOptions {
            max_line_bytes: opts.max_line_bytes,
            max_entries: opts.max_entries,
            max_decompressed_bytes: opts.max_decompressed_bytes,
            max_compression_ratio: opts.max_compression_ratio,
            ..LazyOptions::default()
        };
        let e = limit_err(load_lazy(&p, lazy));
        assert!(e.message.contains(name), "lazy {name}: {e}");
        let list = list_sessions_with(dir.path(), &LimitOptions::from(&opts)).unwrap();
        let e = list[0].error.as_ref().expect("listed with an error");
        assert_eq!(e.code, ErrorCode::LimitExceeded, "list {name}: {e}");
        assert!(e.message.contains(name), "list {name}: {e}");
        assert!(list[0].gzip);
    }
    // Past every limit the file is read (and found to hold duplicate ids).
    let all = LoadOptions {
        max_compression_ratio: 0,
        lenient: true,
        ..LoadOptions::default()
    };
    let s = read_session(&p, &all).unwrap();
    assert_eq!(s.metadata().entry_count, 40_000);
    let list = list_sessions_with(dir.path(), &LimitOptions::from(&all)).unwrap();
    assert!(list[0].error.is_none(), "{:?}", list[0].error);
    assert_eq!(list[0].id.as_deref(), Some("bomb-1"));
    // The writer refuses to take it over (its limits are the defaults).
    let w = FileWriter::open(&p, &WriterOptions::default(), 0, 1);
    assert_eq!(w.err().unwrap().code, ErrorCode::LimitExceeded);
}

#[test]
fn raised_limits_let_a_legit_file_load() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl.gz");
    let len = session_gz(&p, 5000) as u64;
    let small = LoadOptions {
        max_decompressed_bytes: len - 1,
        ..LoadOptions::default()
    };
    limit_err(read_session(&p, &small));
    let exact = LoadOptions {
        max_decompressed_bytes: len,
        max_entries: 5000,
        ..LoadOptions::default()
    };
    let s = read_session(&p, &exact).unwrap();
    assert_eq!(s.metadata().entry_count, 5000);
    let fewer = LoadOptions {
        max_entries: 4999,
        ..LoadOptions::default()
    };
    let e = limit_err(read_session(&p, &fewer));
    assert!(e.message.contains("maxEntries"), "{e}");
}

#[test]
fn listing_a_gzip_file_keeps_only_its_ends_and_matches_the_plain_file() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("a.jsonl");
    let packed = dir.path().join("b.jsonl.gz");
    // Over 64 KiB of text, a name at the end, written in members as the writer does.
    let w = FileWriter::open(
        &plain,
        &WriterOptions {
            cwd: Some("/w".into()),
            session_id: Some("s1".into()),
            ..Default::default()
        },
        1_770_000_000_000,
        7,
    )
    .unwrap()
    .0;
    let wz = FileWriter::open(
        &packed,
        &WriterOptions {
            cwd: Some("/w".into()),
            session_id: Some("s1".into()),
            ..Default::default()
        },
        1_770_000_000_000,
        7,
    )
    .unwrap()
    .0;
    for i in 0..400 {
        let json = format!(
            r#"{{"type":"custom","customType":"x","data":"{i} {}"}}"#,
            "y".repeat(300)
        );
        for w in [&w, &wz] {
            let (_, t) = w.submit(|c| c.append(&json, 1_770_000_000_000)).unwrap();
            w.wait(t).unwrap();
        }
    }
    for w in [&w, &wz] {
        let (_, t) = w
            .submit(|c| {
                c.append(
                    r#"{"type":"session_info","name":"Named"}"#,
                    1_770_000_000_001,
                )
            })
            .unwrap();
        w.wait(t).unwrap();
    }
    w.close().unwrap();
    wz.close().unwrap();
    // A torn last member is left out, as a load leaves it out.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&packed)
        .unwrap();
    f.write_all(&forkpoint_core::gz::encode_member(b"{\"type\":\"custom\"}\n")[..12])
        .unwrap();
    drop(f);
    let list = list_sessions(dir.path()).unwrap();
    let a = list.iter().find(|i| i.path.ends_with("a.jsonl")).unwrap();
    let b = list
        .iter()
        .find(|i| i.path.ends_with("b.jsonl.gz"))
        .unwrap();
    assert!(b.error.is_none(), "{:?}", b.error);
    assert!(b.gzip);
    assert_eq!(b.file_size, std::fs::metadata(&packed).unwrap().len());
    assert_eq!(a.name.as_deref(), Some("Named"));
    assert_eq!(
        (
            &a.id,
            &a.name,
            &a.leaf_id,
            &a.created_at,
            &a.modified_at,
            a.version
        ),
        (
            &b.id,
            &b.name,
            &b.leaf_id,
            &b.created_at,
            &b.modified_at,
            b.version
        )
    );
    let loaded = read_session(&packed, &LoadOptions::default()).unwrap();
    assert_eq!(b.leaf_id, loaded.metadata().leaf_id);
}

fn mkfifo(p: &Path) {
    let st = std::process::Command::new("mkfifo")
        .arg(p)
        .status()
        .unwrap();
    assert!(st.success());
}

fn invalid(what: &str, r: forkpoint_core::Result<impl Sized>) {
    match r {
        Ok(_) => panic!("{what}: a special file was read"),
        Err(e) => assert_eq!(e.code, ErrorCode::InvalidInput, "{what}: {e}"),
    }
}

/// Every way of opening a file by path, on `p`.
fn every_entry_point(p: &Path) {
    let q = p.to_path_buf();
    let r = promptly("read_session", move || {
        read_session(&q, &LoadOptions::default()).map(|_| ())
    });
    invalid("read_session", r);
    let q = p.to_path_buf();
    let r = promptly("load_lazy", move || {
        load_lazy(&q, LazyOptions::default()).map(|_| ())
    });
    invalid("load_lazy", r);
    let q = p.to_path_buf();
    let r = promptly("incremental", move || {
        IncrementalFile::new(&q, 10, LoadOptions::default())
            .load_next()
            .map(|_| ())
    });
    invalid("incremental", r);
    let q = p.to_path_buf();
    let r = promptly("writer", move || {
        FileWriter::open(&q, &WriterOptions::default(), 0, 1).map(|_| ())
    });
    invalid("writer", r);
    let q = p.to_path_buf();
    let r = promptly("migrate", move || {
        let dst = std::env::temp_dir().join(format!("fp-migrate-{}.jsonl", std::process::id()));
        FileMigration::open(
            &q,
            &dst,
            forkpoint_core::normalize::Provider::Anthropic,
            forkpoint_core::normalize::Provider::OpenAi,
            None,
            "2026-01-01T00:00:00.000Z",
            false,
        )
        .map(|_| ())
    });
    invalid("migrate", r);
    let q = p.to_path_buf();
    let r = promptly("import", move || {
        forkpoint_fs::io::read_all(&q, &Default::default()).map(|_| ())
    });
    invalid("importSession's read", r);
    for read_only in [true, false] {
        let q = p.to_path_buf();
        let r = promptly("event log", move || {
            let opts = EventLogOptions {
                read_only,
                durability: Durability::Fsync,
                ..Default::default()
            };
            FileEventLog::open(&q, &opts).map(|_| ())
        });
        invalid("event log", r);
    }
}

#[test]
fn a_fifo_is_refused_everywhere_and_listed_with_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.jsonl");
    mkfifo(&fifo);
    every_entry_point(&fifo);
    // Listing: the FIFO is listed with INVALID_INPUT, the other sessions as usual.
    std::fs::write(
        dir.path().join("ok.jsonl"),
        format!("{HEADER}\n{{\"type\":\"custom\",\"customType\":\"x\",\"id\":\"a1\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:01.000Z\"}}\n"),
    )
    .unwrap();
    mkfifo(&dir.path().join("pipe.jsonl.gz"));
    // A socket cannot even be opened: the same error.
    let sock = dir.path().join("sock.jsonl");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    every_entry_point(&sock);
    // A FIFO where a resume hint would be.
    mkfifo(Path::new(&hint_path(
        dir.path().join("ok.jsonl").to_str().unwrap(),
    )));
    let d = dir.path().to_path_buf();
    let list = promptly("list_sessions", move || list_sessions(&d)).unwrap();
    assert_eq!(list.len(), 4);
    for i in &list {
        if i.path.ends_with("ok.jsonl") {
            assert!(i.error.is_none(), "{:?}", i.error);
            assert_eq!(i.leaf_id.as_deref(), Some("a1"));
        } else {
            let e = i.error.as_ref().unwrap();
            assert_eq!(e.code, ErrorCode::InvalidInput, "{e}");
            assert_eq!(e.path.as_deref(), Some(i.path.as_str()));
        }
    }
    // The hint FIFO is ignored by a lazy load (which replaces it with a hint).
    let ok: PathBuf = dir.path().join("ok.jsonl");
    let lf = promptly("load_lazy with a FIFO hint", move || {
        load_lazy(&ok, LazyOptions::default()).and_then(|l| l.loader.metadata(false))
    })
    .unwrap();
    assert_eq!(lf.leaf_id.as_deref(), Some("a1"));
}

#[test]
fn devices_are_refused() {
    for dev in ["/dev/zero", "/dev/urandom"] {
        if Path::new(dev).exists() {
            every_entry_point(Path::new(dev));
        }
    }
}

#[test]
fn a_special_meta_json_or_lock_does_not_block_the_agent_store() {
    use forkpoint_core::storage::contract::Expect;
    use forkpoint_core::storage::{AgentStorage, listed_json};
    use forkpoint_fs::FileStorage;
    use pollster::block_on;

    let root = tempfile::tempdir().unwrap();
    let agent = root.path().join("a1");
    std::fs::create_dir(&agent).unwrap();
    mkfifo(&agent.join("meta.json"));
    let r = root.path().to_path_buf();
    let e = promptly("inspect", move || {
        block_on(forkpoint_fs::inspect::inspect(&FileStorage::new(r), "a1"))
    })
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidInput, "{e}");
    let r = root.path().to_path_buf();
    let e = promptly("read_meta", move || FileStorage::new(r).read_meta("a1")).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidInput, "{e}");
    let r = root.path().to_path_buf();
    let list = promptly("agent list", move || {
        listed_json(block_on(FileStorage::new(r).list()).unwrap())
    })
    .unwrap();
    let list: Vec<serde_json::Value> = serde_json::from_str(&list).unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["agentId"], "a1");
    assert_eq!(list[0]["corrupted"], true);
    // A FIFO as the lock file.
    let s = FileStorage::new(root.path());
    let (_, init) = Expect::new("a2");
    let lease = block_on(s.create("a2", &init)).unwrap();
    block_on(s.release(&lease)).unwrap();
    drop(s);
    let lock = root.path().join("a2").join("LOCK");
    std::fs::remove_file(&lock).unwrap();
    mkfifo(&lock);
    let r = root.path().to_path_buf();
    let e = promptly("agent acquire", move || {
        block_on(FileStorage::new(r).acquire("a2")).map(|_| ())
    })
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidInput, "{e}");
}

#[test]
fn migrating_a_gzip_bomb_stops_at_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bomb.jsonl.gz");
    bomb(&p, 40_000);
    let dst = dir.path().join("out.jsonl");
    let e = forkpoint_fs::migrate::migrate_file(
        &p,
        &dst,
        forkpoint_core::normalize::Provider::Anthropic,
        forkpoint_core::normalize::Provider::OpenAi,
        None,
        "2026-01-01T00:00:00.000Z",
        false,
        |_, _| {},
    )
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::LimitExceeded, "{e}");
    assert!(e.message.contains("maxCompressionRatio"), "{e}");
    assert!(!dst.exists());
}
