//! `PgStorage` over TLS, on a throwaway cluster that refuses plain TCP
//! connections (one for the whole binary): the core's storage contract with
//! `sslmode=verify-full`, then each `sslmode` against a certificate made out
//! to `localhost` by a test CA, a stranger CA, client certificates, SCRAM with
//! channel binding, `sslrootcert=system`, and settings that cannot be used.
//! The certificates are made here (rcgen), fresh for each run.
//!
//! A plain `main`, as `pg.rs`; `cargo test -p forkpoint-pg --test tls -- WORD`
//! runs the tests whose name contains WORD.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use forkpoint_core::ErrorCode;
use forkpoint_core::storage::AgentStorage;
use forkpoint_core::storage::contract::{self, Backend, Expect, check_stored};
use forkpoint_pg::testing::{ServerTls, TestCluster};
use forkpoint_pg::{PgOptions, PgStorage};
use pollster::block_on;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};

mod runner;

static SCHEMAS: AtomicU32 = AtomicU32::new(0);

fn new_schema(prefix: &str) -> String {
    format!("{prefix}_{}", SCHEMAS.fetch_add(1, Ordering::Relaxed))
}

/// The PEM files the client side reads.
struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// A CA, a server certificate it signed for `localhost` only (not for
/// 127.0.0.1), a client certificate it signed for user `certuser`, and a
/// stranger CA's certificate.
fn make_certificates() -> (ServerTls, Files) {
    let ca = |name: &str| {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        p.distinguished_name.push(DnType::CommonName, name);
        CertifiedIssuer::self_signed(p, KeyPair::generate().unwrap()).unwrap()
    };
    let ours = ca("forkpoint test CA");
    let stranger = ca("a stranger CA");
    let signed = |names: Vec<String>, cn: &str| {
        let mut p = CertificateParams::new(names).unwrap();
        p.distinguished_name.push(DnType::CommonName, cn);
        let key = KeyPair::generate().unwrap();
        let cert = p.signed_by(&key, &ours).unwrap();
        (cert.pem(), key.serialize_pem())
    };
    let (server_cert, server_key) = signed(vec!["localhost".into()], "localhost");
    let (client_cert, client_key) = signed(vec![], "certuser");
    let files = Files {
        dir: tempfile::tempdir().unwrap(),
    };
    for (name, text) in [
        ("ca.pem", ours.pem()),
        ("stranger.pem", stranger.pem()),
        ("client.pem", client_cert),
        ("client.key", client_key),
        ("empty.pem", String::new()),
    ] {
        std::fs::write(files.path(name), text).unwrap();
    }
    // A private key only its owner reads (libpq's rule, which forkpoint keeps);
    // the same key open to others, for the test that refuses it.
    std::fs::copy(files.path("client.key"), files.path("open.key")).unwrap();
    set_mode(&files.path("client.key"), 0o600);
    set_mode(&files.path("open.key"), 0o644);
    // A certificate where a key should be, private as a key must be.
    std::fs::copy(files.path("ca.pem"), files.path("notakey.pem")).unwrap();
    set_mode(&files.path("notakey.pem"), 0o600);
    let server = ServerTls {
        cert_pem: server_cert,
        key_pem: server_key,
        client_ca_pem: ours.pem(),
    };
    (server, files)
}

struct Env<'a> {
    c: &'a TestCluster,
    files: &'a Files,
}

impl Env<'_> {
    /// A connection string to the server by its name (`localhost`, the name
    /// its certificate is made out to) or by its address, with `extra`.
    fn url(&self, by_name: bool, extra: &str) -> String {
        let host = if by_name {
            "host=localhost hostaddr=127.0.0.1"
        } else {
            "host=127.0.0.1"
        };
        let extra = extra
            .replace("CA", &quoted(&self.files.path("ca.pem")))
            .replace("STRANGER", &quoted(&self.files.path("stranger.pem")))
            .replace("CLIENTCERT", &quoted(&self.files.path("client.pem")))
            .replace("CLIENTKEY", &quoted(&self.files.path("client.key")))
            .replace("EMPTY", &quoted(&self.files.path("empty.pem")))
            .replace("NOTAKEY", &quoted(&self.files.path("notakey.pem")));
        format!(
            "{host} port={} dbname=postgres connect_timeout=10 {extra}",
            self.c.port()
        )
    }

    fn connect(&self, url: String) -> forkpoint_core::Result<PgStorage> {
        PgStorage::connect(PgOptions {
            schema: new_schema("tls"),
            keep_leases: false,
            ..PgOptions::new(url)
        })
    }

    /// Whether the connections named `forkpoint` are all encrypted (and
    /// there are some).
    fn all_encrypted(&self) -> bool {
        let row = self
            .c
            .client()
            .unwrap()
            .query_one(
                "SELECT count(*), count(*) FILTER (WHERE s.ssl) FROM pg_stat_activity a
                 JOIN pg_stat_ssl s USING (pid) WHERE a.application_name = 'forkpoint'",
                &[],
            )
            .unwrap();
        let (all, ssl): (i64, i64) = (row.get(0), row.get(1));
        all > 0 && all == ssl
    }
}

/// A path as a quoted connection-string value.
fn quoted(p: &Path) -> String {
    format!(
        "'{}'",
        p.display()
            .to_string()
            .replace('\\', "\\\\")
            .replace('\'', "\\'")
    )
}

fn fails(r: forkpoint_core::Result<PgStorage>) -> (ErrorCode, String) {
    match r {
        Ok(_) => panic!("connected where it must fail"),
        Err(e) => (e.code, e.message),
    }
}

/// The contract's fresh stores, on `verify-full`.
struct OverTls<'a>(&'a Env<'a>);

impl Backend for OverTls<'_> {
    type Store = PgStorage;

    fn fresh(&self) -> PgStorage {
        let url = self
            .0
            .url(true, "user=postgres sslmode=verify-full sslrootcert=CA");
        self.0
            .connect(url)
            .unwrap_or_else(|e| panic!("connect: {e}"))
    }

    fn second(&self, s: &PgStorage) -> Option<PgStorage> {
        let url = self
            .0
            .url(true, "user=postgres sslmode=verify-full sslrootcert=CA");
        Some(
            PgStorage::connect(PgOptions {
                schema: s.schema().into(),
                host: Some("host-b".into()),
                keep_leases: false,
                ..PgOptions::new(url)
            })
            .unwrap(),
        )
    }

    fn append_raw(&self, s: &PgStorage, id: &str, session: &[u8], events: &[u8]) {
        self.0
            .c
            .append_raw(s.schema(), id, session, events)
            .unwrap_or_else(|e| panic!("{e}"));
    }
}

/// Every `sslmode` against a server with TLS on and plain TCP refused.
fn modes(env: &Env) {
    let ok = |by_name: bool, extra: &str| {
        let s = env
            .connect(env.url(by_name, &format!("user=postgres {extra}")))
            .unwrap_or_else(|e| panic!("{extra}: {e}"));
        assert!(env.all_encrypted(), "{extra}: every connection encrypted");
        drop(s);
    };
    let refused = |by_name: bool, extra: &str, says: &str| {
        let (code, msg) = fails(env.connect(env.url(by_name, &format!("user=postgres {extra}"))));
        assert_eq!(code, ErrorCode::StoreUnavailable, "{extra}: {msg}");
        assert!(msg.contains(says), "{extra}: {msg}");
    };
    // No sslmode is prefer: TLS, since the server offers it.
    ok(false, "");
    ok(false, "sslmode=prefer");
    ok(false, "sslmode=allow");
    // require without a root certificate does not check the certificate
    // (unless libpq's default file holds one on this machine).
    let home_root = std::env::home_dir().is_some_and(|h| h.join(".postgresql/root.crt").is_file());
    if !home_root {
        ok(false, "sslmode=require");
    }
    // ... with one, it checks the chain (verify-ca), not the name.
    ok(false, "sslmode=require sslrootcert=CA");
    refused(
        false,
        "sslmode=require sslrootcert=STRANGER",
        "UnknownIssuer",
    );
    ok(false, "sslmode=verify-ca sslrootcert=CA");
    refused(
        false,
        "sslmode=verify-ca sslrootcert=STRANGER",
        "UnknownIssuer",
    );
    // verify-full: the chain and the name.
    ok(true, "sslmode=verify-full sslrootcert=CA");
    refused(
        false,
        "sslmode=verify-full sslrootcert=CA",
        "not valid for name",
    );
    refused(
        true,
        "sslmode=verify-full sslrootcert=STRANGER",
        "UnknownIssuer",
    );
    // A server named only by its address: the address names it for TLS too.
    let s = env
        .connect(format!(
            "hostaddr=127.0.0.1 port={} user=postgres dbname=postgres sslmode=verify-ca sslrootcert={}",
            env.c.port(),
            quoted(&env.files.path("ca.pem"))
        ))
        .unwrap();
    assert!(env.all_encrypted());
    drop(s);
    // disable: the server's pg_hba.conf refuses a plain connection, and the
    // error says what to set.
    refused(false, "sslmode=disable", "only over TLS");
    // A URL's query parameters.
    let url = format!(
        "postgres://postgres@localhost:{}/postgres?hostaddr=127.0.0.1&sslmode=verify-full&sslrootcert={}",
        env.c.port(),
        env.files
            .path("ca.pem")
            .display()
            .to_string()
            .replace('/', "%2F")
    );
    let s = env.connect(url).unwrap();
    assert!(env.all_encrypted());
    drop(s);
}

/// User `certuser` is let in by its certificate alone; without it, or with
/// half of it, not.
fn client_certificates(env: &Env) {
    env.c
        .client()
        .unwrap()
        .batch_execute(
            "DROP ROLE IF EXISTS certuser; CREATE ROLE certuser LOGIN;
             GRANT CREATE ON DATABASE postgres TO certuser",
        )
        .unwrap();
    let s = env
        .connect(env.url(
            true,
            "user=certuser sslmode=verify-full sslrootcert=CA sslcert=CLIENTCERT sslkey=CLIENTKEY",
        ))
        .unwrap();
    let (mut e, init) = Expect::new("by-cert");
    let l = block_on(s.create("by-cert", &init)).unwrap();
    block_on(s.write(&l, &e.step(1, 1, false))).unwrap();
    block_on(check_stored(&s, &e, "written by certuser"));
    drop(s);
    let (code, msg) =
        fails(env.connect(env.url(true, "user=certuser sslmode=verify-full sslrootcert=CA")));
    assert_eq!(code, ErrorCode::StoreUnavailable, "{msg}");
    assert!(msg.contains("certificate"), "{msg}");
    let (code, msg) = fails(env.connect(env.url(true, "user=certuser sslcert=CLIENTCERT")));
    assert_eq!(code, ErrorCode::InvalidInput, "{msg}");
    assert!(msg.contains("sslcert and sslkey go together"), "{msg}");
    // The right key, readable by anyone: refused before anything is sent.
    let open = env.url(
        true,
        "user=certuser sslmode=verify-full sslrootcert=CA sslcert=CLIENTCERT sslkey=CLIENTKEY",
    );
    let open = open.replace("client.key", "open.key");
    let (code, msg) = fails(env.connect(open));
    assert_eq!(code, ErrorCode::InvalidInput, "{msg}");
    assert!(
        msg.contains("group or world access (mode 0644)") && msg.contains("open.key"),
        "{msg}"
    );
    // Owned by root, root's group may read it too (libpq's rule, whoever connects).
    if root_owns(&env.files.path("open.key")) {
        set_mode(&env.files.path("open.key"), 0o640);
        let group = env.url(
            true,
            "user=certuser sslmode=verify-full sslrootcert=CA sslcert=CLIENTCERT sslkey=CLIENTKEY",
        );
        let s = env
            .connect(group.replace("client.key", "open.key"))
            .unwrap();
        // Connected as certuser by its certificate alone (pg_hba: cert), in a
        // schema of its own: a session written and read back.
        let (mut e, init) = Expect::new("by-group-key");
        let l = block_on(s.create("by-group-key", &init)).unwrap();
        block_on(s.write(&l, &e.step(1, 1, false))).unwrap();
        block_on(check_stored(&s, &e, "written with a key root owns at 0640"));
        set_mode(&env.files.path("open.key"), 0o644);
    }
}

#[cfg(unix)]
fn root_owns(path: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).unwrap().uid() == 0
}

#[cfg(not(unix))]
fn root_owns(_path: &std::path::Path) -> bool {
    false
}

#[cfg(unix)]
fn set_mode(path: &std::path::Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[cfg(not(unix))]
fn set_mode(_path: &std::path::Path, _mode: u32) {}

/// A password user over TLS with `channel_binding=require` (SCRAM-SHA-256-PLUS,
/// bound to the server's certificate); a wrong password is still refused.
fn scram_with_channel_binding(env: &Env) {
    env.c
        .client()
        .unwrap()
        .batch_execute(
            "DROP ROLE IF EXISTS app; CREATE ROLE app LOGIN PASSWORD 'app pw';
             GRANT CREATE ON DATABASE postgres TO app",
        )
        .unwrap();
    let good =
        "user=app password='app pw' channel_binding=require sslmode=verify-full sslrootcert=CA";
    let s = env.connect(env.url(true, good)).unwrap();
    assert!(block_on(s.list()).unwrap().is_empty());
    assert!(env.all_encrypted());
    drop(s);
    let (code, msg) = fails(env.connect(env.url(true, &good.replace("app pw", "wrong"))));
    assert_eq!(code, ErrorCode::StoreUnavailable, "{msg}");
}

/// Settings that cannot be used are INVALID_INPUT before anything is sent,
/// naming the setting.
fn unusable_settings(env: &Env) {
    for (extra, says) in [
        ("sslmode=verify", "sslmode must be"),
        ("sslmode=VERIFY-FULL", "sslmode must be"),
        (
            "sslmode=verify-full sslrootcert=/nonexistent/ca.pem",
            "cannot be read",
        ),
        (
            "sslmode=verify-full sslrootcert=EMPTY",
            "holds no certificate",
        ),
        ("sslmode=prefer sslrootcert=EMPTY", "holds no certificate"),
        (
            "sslmode=require sslrootcert=system",
            "needs sslmode=verify-full",
        ),
        ("sslcert=CLIENTCERT sslkey=NOTAKEY", "no private key"),
        ("sslcert=CLIENTCERT sslkey=CA", "group or world access"),
        // Refused before it is read (reading would never end).
        ("sslcert=CLIENTCERT sslkey=/dev/zero", "not a regular file"),
        ("sslkey=CLIENTKEY", "go together"),
    ] {
        let (code, msg) = fails(env.connect(env.url(true, &format!("user=postgres {extra}"))));
        assert_eq!(code, ErrorCode::InvalidInput, "{extra}: {msg}");
        assert!(msg.contains(says), "{extra}: {msg}");
    }
    let (code, msg) = fails(env.connect(format!(
        "postgres://postgres@localhost:{}/postgres?sslrootcert=%2",
        env.c.port()
    )));
    assert_eq!(code, ErrorCode::InvalidInput, "{msg}");
}

/// `sslrootcert=system` means verify-full against the platform's roots: the
/// test CA is not among them, unless `SSL_CERT_FILE` (which the platform's
/// store reading honours, as OpenSSL does) names it. Run in a child process
/// of this binary, for its environment.
fn system_roots(env: &Env) {
    let child = |with_ca: bool| {
        let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
        cmd.arg("--connect-child")
            .arg(env.url(true, "user=postgres sslrootcert=system"));
        cmd.env_remove("SSL_CERT_FILE").env_remove("SSL_CERT_DIR");
        if with_ca {
            cmd.env("SSL_CERT_FILE", env.files.path("ca.pem"));
        }
        let out = cmd.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).to_string(),
        )
    };
    let (status, said) = child(true);
    assert_eq!(status, Some(0), "{said}");
    let (status, said) = child(false);
    assert_eq!(status, Some(3), "{said}");
    // No trusted roots at all, or ours not among them: either way not connected.
    assert!(
        said.contains("INVALID_INPUT") || said.contains("UnknownIssuer"),
        "{said}"
    );
}

/// libpq's default root certificate file, `~/.postgresql/root.crt`: read
/// when no `sslrootcert` is given, so that `require` checks the chain (as
/// `verify-ca`) once it exists. Run in a child process of this binary with
/// its own `HOME`.
fn default_root_file(env: &Env) {
    let home = tempfile::tempdir().unwrap();
    let run = |extra: &str| {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .arg("--connect-child")
            .arg(env.url(false, &format!("user=postgres {extra}")))
            .env("HOME", home.path())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).to_string(),
        )
    };
    // No file: require does not check the certificate; verify-ca has nothing to check with.
    assert_eq!(run("sslmode=require"), (Some(0), String::new()));
    let (status, said) = run("sslmode=verify-ca");
    assert_eq!(status, Some(3), "{said}");
    let dir = home.path().join(".postgresql");
    std::fs::create_dir(&dir).unwrap();
    // A stranger's CA there: require now checks the chain, and refuses it.
    std::fs::copy(env.files.path("stranger.pem"), dir.join("root.crt")).unwrap();
    let (status, said) = run("sslmode=require");
    assert_eq!(status, Some(3), "{said}");
    assert!(said.contains("UnknownIssuer"), "{said}");
    // The right CA: both connect; an sslrootcert given still wins over the file.
    std::fs::copy(env.files.path("ca.pem"), dir.join("root.crt")).unwrap();
    assert_eq!(run("sslmode=require"), (Some(0), String::new()));
    assert_eq!(run("sslmode=verify-ca"), (Some(0), String::new()));
    let (status, said) = run("sslmode=verify-ca sslrootcert=STRANGER");
    assert_eq!(status, Some(3), "{said}");
    assert!(said.contains("UnknownIssuer"), "{said}");
}

type Test = (&'static str, fn(&Env));

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--connect-child") {
        match PgStorage::connect(args[1].as_str()) {
            Ok(_) => std::process::exit(0),
            Err(e) => {
                println!("{:?}: {}", e.code, e.message);
                std::process::exit(3);
            }
        }
    }
    let filter = runner::filter();
    let t0 = Instant::now();
    let (server, files) = make_certificates();
    let cluster = match TestCluster::start_tls(&server) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("forkpoint-pg TLS tests: cannot start a PostgreSQL cluster: {e}");
            std::process::exit(1);
        }
    };
    let env = Env {
        c: &cluster,
        files: &files,
    };
    println!(
        "TLS cluster on port {} started in {:?}",
        cluster.port(),
        t0.elapsed()
    );
    let mut tests: runner::Tests<Env> = Vec::new();
    for name in contract::CHECKS {
        let name = *name;
        tests.push((
            format!("contract_over_verify_full::{name}"),
            Box::new(move |env: &Env| block_on(contract::run(&OverTls(env), name)).unwrap()),
        ));
    }
    let own: &[Test] = &[
        ("modes", modes),
        ("client_certificates", client_certificates),
        ("scram_with_channel_binding", scram_with_channel_binding),
        ("unusable_settings", unusable_settings),
        ("system_roots", system_roots),
        ("default_root_file", default_root_file),
    ];
    for (name, f) in own {
        let f = *f;
        tests.push((name.to_string(), Box::new(f)));
    }
    let (ran, failed) = runner::run(&tests, &env, &filter);
    drop((tests, env));
    drop(cluster);
    runner::report(ran, &failed, t0);
}
