//! A throwaway PostgreSQL cluster for tests (cargo feature `testing`).
//!
//! [`TestCluster::start`] runs `initdb` into a fresh temporary directory and
//! `pg_ctl start` on a free port of 127.0.0.1 (the socket in that directory
//! too); dropping it stops the server (`-m immediate`) and removes the
//! directory. Run as root, both run as the `postgres` user through `runuser`
//! (the server refuses to run as root) and the directory is given to that
//! user. The binaries are looked for in `FORKPOINT_PG_BIN`, then
//! `/usr/lib/postgresql/{17,16,15}/bin`, then `pg_config --bindir`.
//!
//! Authentication: the user `postgres` is trusted on 127.0.0.1 and on the
//! socket; every other user must give its password (SCRAM), so tests can
//! check what a wrong password does.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use postgres::{Client, NoTls};

/// A running throwaway cluster; stopped when dropped.
pub struct TestCluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
    as_postgres: bool,
    running: bool,
}

fn run(mut cmd: Command, what: &str) -> Result<Output, String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{what}: cannot run {:?}: {e}", cmd.get_program()))?;
    if out.status.success() {
        Ok(out)
    } else {
        Err(format!(
            "{what} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn find_bin() -> Result<PathBuf, String> {
    let has = |d: &Path| d.join("initdb").is_file() && d.join("pg_ctl").is_file();
    if let Some(d) = std::env::var_os("FORKPOINT_PG_BIN") {
        let d = PathBuf::from(d);
        return if has(&d) {
            Ok(d)
        } else {
            Err(format!(
                "FORKPOINT_PG_BIN={} holds no initdb and pg_ctl",
                d.display()
            ))
        };
    }
    for v in ["17", "16", "15"] {
        let d = PathBuf::from(format!("/usr/lib/postgresql/{v}/bin"));
        if has(&d) {
            return Ok(d);
        }
    }
    if let Ok(out) = Command::new("pg_config")
        .arg("--bindir")
        .stdin(Stdio::null())
        .output()
        && out.status.success()
    {
        let d = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if has(&d) {
            return Ok(d);
        }
    }
    Err("PostgreSQL's initdb and pg_ctl were not found (looked in FORKPOINT_PG_BIN, /usr/lib/postgresql/{17,16,15}/bin and pg_config --bindir): install PostgreSQL (e.g. apt-get install postgresql-15) or set FORKPOINT_PG_BIN".into())
}

fn id_of(args: &[&str]) -> Result<u32, String> {
    let out = run(
        {
            let mut c = Command::new("id");
            c.args(args);
            c
        },
        "id",
    )?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|e| format!("id {args:?}: {e}"))
}

fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port on 127.0.0.1: {e}"))
}

/// What a cluster started with [`TestCluster::start_tls`] presents: PEM
/// texts of its certificate and key, and of the CA whose client certificates
/// it accepts.
pub struct ServerTls {
    pub cert_pem: String,
    pub key_pem: String,
    pub client_ca_pem: String,
}

impl TestCluster {
    /// Creates and starts a cluster; an error says what is missing or failed.
    pub fn start() -> Result<TestCluster, String> {
        TestCluster::start_with(None)
    }

    /// [`TestCluster::start`] with TLS on, and refused without it on TCP:
    /// `postgres` is trusted, user `certuser` must show a client certificate
    /// made out to it (signed by `client_ca_pem`), other users give their
    /// password. The socket is still trusted ([`TestCluster::client`]).
    pub fn start_tls(tls: &ServerTls) -> Result<TestCluster, String> {
        TestCluster::start_with(Some(tls))
    }

    fn start_with(tls: Option<&ServerTls>) -> Result<TestCluster, String> {
        let bin = find_bin()?;
        let as_postgres = id_of(&["-u"])? == 0;
        let mut owner = None;
        let dir = tempfile::Builder::new()
            .prefix("forkpoint-pg-")
            .tempdir()
            .map_err(|e| format!("cannot make a temporary directory: {e}"))?;
        if as_postgres {
            if !Path::new("/usr/sbin/runuser").exists() && !Path::new("/sbin/runuser").exists() {
                let found = Command::new("runuser")
                    .arg("--help")
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok();
                if !found {
                    return Err("running as root, the cluster is run as user 'postgres' through runuser, which is missing".into());
                }
            }
            let uid = id_of(&["-u", "postgres"]).map_err(|e| {
                format!("running as root needs a 'postgres' user to run the server: {e}")
            })?;
            let gid = id_of(&["-g", "postgres"])?;
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))
                .map_err(|e| format!("cannot give {} to postgres: {e}", dir.path().display()))?;
            owner = Some((uid, gid));
        }
        let mut c = TestCluster {
            dir,
            bin,
            port: 0,
            as_postgres,
            running: false,
        };
        let data = c.data();
        let mut init = c.command("initdb");
        init.arg("-D").arg(&data).args([
            "-U",
            "postgres",
            "--auth=trust",
            "--no-sync",
            "-E",
            "UTF8",
            "--locale=C",
        ]);
        run(init, "initdb")?;
        let hba = match tls {
            None => {
                "local all all trust\n\
                     host all postgres 127.0.0.1/32 trust\n\
                     host all all 127.0.0.1/32 scram-sha-256\n"
            }
            Some(_) => {
                "local all all trust\n\
                        hostnossl all all 127.0.0.1/32 reject\n\
                        hostssl all postgres 127.0.0.1/32 trust\n\
                        hostssl all certuser 127.0.0.1/32 cert\n\
                        hostssl all all 127.0.0.1/32 scram-sha-256\n"
            }
        };
        let write_hba = std::fs::write(data.join("pg_hba.conf"), hba)
            .map_err(|e| format!("cannot write pg_hba.conf: {e}"));
        write_hba?;
        let mut ssl = String::new();
        if let Some(t) = tls {
            // The server refuses a key others may read: 0600, its owner's.
            for (name, text) in [
                ("server.crt", &t.cert_pem),
                ("server.key", &t.key_pem),
                ("client-ca.crt", &t.client_ca_pem),
            ] {
                let path = data.join(name);
                std::fs::write(&path, text).map_err(|e| format!("cannot write {name}: {e}"))?;
                std::fs::set_permissions(
                    &path,
                    std::os::unix::fs::PermissionsExt::from_mode(0o600),
                )
                .map_err(|e| format!("cannot set the mode of {name}: {e}"))?;
                if let Some((uid, gid)) = owner {
                    std::os::unix::fs::chown(&path, Some(uid), Some(gid))
                        .map_err(|e| format!("cannot give {name} to postgres: {e}"))?;
                }
            }
            ssl = " -c ssl=on -c ssl_cert_file=server.crt -c ssl_key_file=server.key -c ssl_ca_file=client-ca.crt".into();
        }
        // A port found free may be taken before the server binds it: retry.
        let mut last = String::new();
        for _ in 0..3 {
            c.port = free_port()?;
            let mut start = c.command("pg_ctl");
            start
                .arg("-D")
                .arg(&data)
                .arg("-l")
                .arg(c.dir.path().join("server.log"))
                .args(["-w", "-t", "30", "-o"])
                .arg(format!(
                    "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=60{ssl}",
                    c.port,
                    c.dir.path().display()
                ))
                .arg("start");
            match run(start, "pg_ctl start") {
                Ok(_) => {
                    c.running = true;
                    return Ok(c);
                }
                Err(e) => {
                    let log = std::fs::read_to_string(c.dir.path().join("server.log"))
                        .unwrap_or_default();
                    last = format!("{e}\nserver log:\n{log}");
                }
            }
        }
        Err(last)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn command(&self, name: &str) -> Command {
        let exe = self.bin.join(name);
        if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(exe);
            c
        } else {
            Command::new(exe)
        }
    }

    /// The TCP port the server listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A connection string for user `postgres` (trusted) on database `postgres`.
    pub fn url(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres connect_timeout=10",
            self.port
        )
    }

    /// A new connection as `postgres` on the server's socket, for setting
    /// things up and looking at tables.
    pub fn client(&self) -> Result<Client, String> {
        let mut config = postgres::Config::new();
        config
            .host_path(self.dir.path())
            .port(self.port)
            .user("postgres")
            .dbname("postgres")
            .connect_timeout(std::time::Duration::from_secs(10));
        config
            .connect(NoTls)
            .map_err(|e| format!("connecting to the test cluster: {e}"))
    }

    /// Appends raw bytes to agent `id`'s session and event log in `schema`,
    /// bypassing the lease, as a writer that stored half a line would leave
    /// them (a chunk at the session's end; an events row after the last).
    pub fn append_raw(
        &self,
        schema: &str,
        id: &str,
        session: &[u8],
        events: &[u8],
    ) -> Result<(), String> {
        let mut c = self.client()?;
        let s = format!("\"{schema}\"");
        if !session.is_empty() {
            c.execute(
                &format!(
                    "INSERT INTO {s}.session_chunks (agent_id, off, len, z, bytes) VALUES ($1,
                     coalesce((SELECT off + len FROM {s}.session_chunks
                               WHERE agent_id = $1 ORDER BY off DESC LIMIT 1), 0),
                     length($2::bytea), false, $2::bytea)"
                ),
                &[&id, &session],
            )
            .map_err(|e| format!("append_raw session: {e}"))?;
        }
        if !events.is_empty() {
            c.execute(
                &format!(
                    "INSERT INTO {s}.events (agent_id, seq, first_seq, len, z, lines)
                     SELECT $1, n, n, length($2::bytea), false, $2::bytea FROM (SELECT coalesce((SELECT max(seq) FROM {s}.events
                                                              WHERE agent_id = $1), 0) + 1 AS n) AS q"
                ),
                &[&id, &events],
            )
            .map_err(|e| format!("append_raw events: {e}"))?;
        }
        Ok(())
    }

    /// Stops the server now (dropping does it too); later connections fail.
    pub fn stop(&mut self) -> Result<(), String> {
        if !self.running {
            return Ok(());
        }
        self.running = false;
        let mut stop = self.command("pg_ctl");
        stop.arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "-w", "-t", "20", "stop"]);
        run(stop, "pg_ctl stop").map(|_| ())
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            eprintln!("stopping the test cluster: {e}");
        }
    }
}
