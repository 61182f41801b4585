// A throwaway PostgreSQL cluster for JS tests and harnesses, started the way
// crates/pg/src/testing.rs does it in Rust:
//
//   const pg = await startCluster({ listen: ['127.0.0.1', '10.77.1.1'], hba: ['host all postgres 10.77.0.0/16 trust'] });
//   pg.url  // 'postgres://postgres@127.0.0.1:PORT/postgres'
//   await pg.psql('select 1')  // psql's unaligned, tuples-only output
//   await pg.stop()            // idempotent; also runs when the process exits
//
// `initdb` runs into a fresh temporary directory and `pg_ctl start` on a free
// port (the socket in that directory too). Run as root, both run as the
// `postgres` user through `runuser` (the server refuses to run as root) and
// the directory is given to that user. The binaries are looked for in
// FORKPOINT_PG_BIN, then /usr/lib/postgresql/{17,16,15}/bin, then
// `pg_config --bindir`; when none are found and we are root with apt-get,
// `apt-get install -y postgresql` is tried once.
//
// Authentication: user `postgres` is trusted on 127.0.0.1 and on the socket,
// every other user gives a password (SCRAM); `hba` lines come after those.
// fsync is off unless `durable: true` (benchmarks): a test cluster's
// durability is not under test.
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const has = (d) => existsSync(join(d, 'initdb')) && existsSync(join(d, 'pg_ctl'));

function lookForBin() {
  const env = process.env.FORKPOINT_PG_BIN;
  if (env) {
    if (has(env)) return env;
    throw new Error(`FORKPOINT_PG_BIN=${env} holds no initdb and pg_ctl`);
  }
  for (const v of ['17', '16', '15']) {
    const d = `/usr/lib/postgresql/${v}/bin`;
    if (has(d)) return d;
  }
  const r = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  if (r.status === 0 && has(r.stdout.trim())) return r.stdout.trim();
  return null;
}

let bin;
/** The directory of initdb and pg_ctl (installing PostgreSQL once if we may). */
export function findBin() {
  if (bin) return bin;
  bin = lookForBin();
  if (bin) return bin;
  const isRoot = process.getuid?.() === 0;
  if (isRoot && spawnSync('apt-get', ['--version'], { stdio: 'ignore' }).status === 0) {
    const r = spawnSync('apt-get', ['install', '-y', 'postgresql'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    if (r.status !== 0) throw new Error(`PostgreSQL was not found and apt-get install -y postgresql failed:\n${r.stderr}`);
    bin = lookForBin();
    if (bin) return bin;
  }
  throw new Error(
    'PostgreSQL\'s initdb and pg_ctl were not found (looked in FORKPOINT_PG_BIN, /usr/lib/postgresql/{17,16,15}/bin and pg_config --bindir): install PostgreSQL (e.g. apt-get install postgresql) or set FORKPOINT_PG_BIN',
  );
}

const asPostgres = () => process.getuid?.() === 0;

/** argv running `name` from the PostgreSQL binaries, as user postgres when we are root. */
function command(name, args) {
  const exe = join(findBin(), name);
  return asPostgres() ? ['runuser', ['-u', 'postgres', '--', exe, ...args]] : [exe, args];
}

function run(name, args, what) {
  const [file, argv] = command(name, args);
  const r = spawnSync(file, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.error) throw new Error(`${what}: cannot run ${file}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${what} failed (${r.status ?? r.signal}):\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

/**
 * A test CA and a server certificate it signed for `localhost` only (P-256,
 * two days), made with the openssl command (Debian's `openssl`, which
 * PostgreSQL's packages depend on; installed once if missing and we may).
 * Files in `dir`: ca.pem, server.crt, server.key.
 */
function makeCertificates(dir) {
  if (spawnSync('openssl', ['version'], { stdio: 'ignore' }).status !== 0 && process.getuid?.() === 0) {
    spawnSync('apt-get', ['install', '-y', 'openssl'], { stdio: 'ignore', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  }
  const ssl = (...args) => {
    const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    if (r.error || r.status !== 0) throw new Error(`openssl ${args[0]} failed: ${r.error?.message ?? r.stderr}`);
  };
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  ssl('req', '-x509', ...key, '-keyout', 'ca.key', '-out', 'ca.pem', '-subj', '/CN=forkpoint test CA', '-days', '2');
  ssl('req', ...key, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost');
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n');
  ssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '2', '-extfile', 'server.ext');
}

const portsGiven = new Set();
/** A port free on 127.0.0.1 now, never one given before in this process. */
async function freePort() {
  for (let i = 0; i < 20; i++) {
    const port = await new Promise((resolve, reject) => {
      const s = createServer();
      s.once('error', reject);
      s.listen(0, '127.0.0.1', () => {
        const { port } = s.address();
        s.close(() => resolve(port));
      });
    });
    if (!portsGiven.has(port)) {
      portsGiven.add(port);
      return port;
    }
  }
  throw new Error('no free port on 127.0.0.1');
}

/** Clusters running in this process, stopped at exit. */
const live = new Set();
let hooked = false;
function hookExit() {
  if (hooked) return;
  hooked = true;
  process.on('exit', () => {
    for (const c of live) c.stopSync();
  });
  // A signal ends the process without 'exit': turn it into an exit.
  for (const [sig, n] of [['SIGINT', 2], ['SIGTERM', 15], ['SIGHUP', 1]]) {
    if (process.listenerCount(sig) === 0) process.once(sig, () => process.exit(128 + n));
  }
}

/**
 * Starts a throwaway cluster. `listen`: the addresses it listens on (default
 * 127.0.0.1 only; every one must exist on this host); `hba`: extra
 * pg_hba.conf lines; `tls`: TLS on with a certificate for `localhost` signed
 * by a test CA (`caFile`), and plain TCP connections refused. Resolves to `{ url, port, dir, host, urlFor(host),
 * psql(sql), stop(), stopSync() }`.
 */
export async function startCluster(opts = {}) {
  const listen = opts.listen ?? ['127.0.0.1'];
  findBin();
  const dir = mkdtempSync(join(tmpdir(), 'forkpoint-pg-'));
  const cluster = { dir, host: '127.0.0.1', port: 0, running: false };
  try {
    if (asPostgres()) {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
      chownSync(dir, uid, gid);
    }
    const data = join(dir, 'data');
    run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C'], 'initdb');
    const hba = ['local all all trust', ...(opts.tls ? ['hostnossl all all 0.0.0.0/0 reject'] : []), 'host all postgres 127.0.0.1/32 trust', 'host all all 127.0.0.1/32 scram-sha-256', ...(opts.hba ?? [])];
    writeFileSync(join(data, 'pg_hba.conf'), hba.join('\n') + '\n');
    let ssl = '';
    if (opts.tls) {
      makeCertificates(dir);
      // The server refuses a key others may read: 0600, and its own.
      for (const f of ['server.crt', 'server.key']) {
        writeFileSync(join(data, f), readFileSync(join(dir, f)), { mode: 0o600 });
        chmodSync(join(data, f), 0o600);
        if (asPostgres()) chownSync(join(data, f), ...['-u', '-g'].map((o) => Number(execFileSync('id', [o, 'postgres'], { encoding: 'utf8' }).trim())));
      }
      ssl = ' -c ssl=on -c ssl_cert_file=server.crt -c ssl_key_file=server.key';
    }
    // A port found free may be taken before the server binds it: retry.
    let last = '';
    for (let attempt = 0; attempt < 3 && !cluster.running; attempt++) {
      cluster.port = await freePort();
      const o = `-p ${cluster.port} -k ${dir} -c listen_addresses=${listen.join(',')} ${opts.durable ? '' : '-c fsync=off -c full_page_writes=off '}-c max_connections=100${ssl}`;
      try {
        run('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-w', '-t', '30', '-o', o, 'start'], 'pg_ctl start');
        cluster.running = true;
      } catch (e) {
        let log = '';
        try {
          log = readFileSync(join(dir, 'server.log'), 'utf8');
        } catch {
          // no log yet
        }
        last = `${e.message}\nserver log:\n${log}`;
      }
    }
    if (!cluster.running) throw new Error(last);
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  const psqlBin = existsSync(join(findBin(), 'psql')) ? join(findBin(), 'psql') : 'psql';
  const c = {
    dir,
    host: '127.0.0.1',
    port: cluster.port,
    url: `postgres://postgres@127.0.0.1:${cluster.port}/postgres`,
    /** With `tls`: the CA certificate that signed the server's (made out to `localhost`). */
    caFile: opts.tls ? join(dir, 'ca.pem') : undefined,
    /** The URL of the same cluster at another of its listen addresses. */
    urlFor: (host) => `postgres://postgres@${host}:${cluster.port}/postgres`,
    /** Runs `sql` (one or more statements) as postgres; resolves to psql's unaligned tuples-only output. */
    psql: (sql) =>
      new Promise((resolve, reject) => {
        execFile(
          psqlBin,
          ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-h', '127.0.0.1', '-p', String(cluster.port), '-U', 'postgres', '-d', 'postgres', '-c', sql],
          { encoding: 'utf8', maxBuffer: 1 << 30 },
          (err, stdout, stderr) => (err ? reject(new Error(`psql failed: ${stderr || err.message}`)) : resolve(stdout)),
        );
      }),
    /** Stops the server (`-m immediate`) and removes its directory; idempotent. */
    stopSync() {
      if (!live.has(c)) return;
      live.delete(c);
      try {
        run('pg_ctl', ['-D', join(dir, 'data'), '-m', 'immediate', '-w', '-t', '20', 'stop'], 'pg_ctl stop');
      } catch (e) {
        process.stderr.write(`stopping the test cluster: ${e.message}\n`);
      }
      rmSync(dir, { recursive: true, force: true });
    },
    async stop() {
      c.stopSync();
    },
  };
  live.add(c);
  hookExit();
  return c;
}
