// Network namespaces as hosts (netns.mjs): two hosts reach a cluster that
// listens on their gateways, a partitioned host reaches nothing until it is
// healed (and the other host is not affected), cleanup removes everything,
// also when the process exits without calling it. Skipped where namespaces
// cannot be made (no privileges).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { hostsSupported, makeHosts } from './netns.mjs';
import { findBin, startCluster } from './pg-cluster.mjs';

const support = hostsSupported();
const skip = support.ok ? false : `no network namespaces here: ${support.reason}`;
const psqlBin = existsSync(join(findBin(), 'psql')) ? join(findBin(), 'psql') : 'psql';

/** Runs psql inside `host` against the cluster at its gateway; resolves to { code, stdout, stderr }. */
function psqlFrom(host, port, sql, timeout = 1) {
  const conn = `host=${host.gateway} port=${port} user=postgres dbname=postgres connect_timeout=${timeout}`;
  const p = host.exec([psqlBin, '-X', '-A', '-t', '-d', conn, '-c', sql], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  p.stdout.on('data', (d) => (stdout += d));
  p.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve) => p.on('close', (code) => resolve({ code, stdout, stderr })));
}

const names = () => spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout;
const links = () => spawnSync('ip', ['-o', 'link'], { encoding: 'utf8' }).stdout;

test('two hosts reach a cluster on their gateways; a partition cuts one off until it heals', { skip }, async () => {
  const { hosts, cleanup } = makeHosts(2, { prefix: 'fpt' });
  let pg;
  try {
    assert.equal(hosts.length, 2);
    assert.notEqual(hosts[0].name, hosts[1].name);
    assert.ok(hosts[0].name.includes(String(process.pid)));
    assert.notEqual(hosts[0].gateway, hosts[1].gateway);
    pg = await startCluster({
      listen: ['127.0.0.1', ...hosts.map((h) => h.gateway)],
      hba: hosts.map((h) => `host all postgres ${h.ip}/32 trust`),
    });
    for (const h of hosts) {
      const r = await psqlFrom(h, pg.port, 'select host(inet_client_addr())');
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout.trim(), h.ip, 'the server sees the host by its own address');
    }
    // A host reaches only its own link: not the other host's gateway.
    const other = await psqlFrom({ ...hosts[0], gateway: hosts[1].gateway }, pg.port, 'select 1');
    assert.notEqual(other.code, 0);

    hosts[0].partition();
    const t0 = Date.now();
    const cut = await psqlFrom(hosts[0], pg.port, 'select 1');
    assert.notEqual(cut.code, 0, 'a partitioned host reaches nothing');
    assert.ok(Date.now() - t0 < 5000);
    const still = await psqlFrom(hosts[1], pg.port, 'select 1');
    assert.equal(still.code, 0, `the other host is not affected: ${still.stderr}`);
    hosts[0].heal();
    const back = await psqlFrom(hosts[0], pg.port, 'select 1', 5);
    assert.equal(back.code, 0, back.stderr);
    assert.equal(back.stdout.trim(), '1');
  } finally {
    await pg?.stop();
    cleanup();
  }
  for (const h of hosts) {
    assert.equal(names().includes(h.name), false, `namespace ${h.name} removed`);
    assert.equal(links().includes(h.link), false, `link ${h.link} removed`);
  }
  cleanup(); // idempotent
});

test('a TCP connection in flight stalls during a partition and goes on after heal', { skip }, async () => {
  const { hosts, cleanup } = makeHosts(1, { prefix: 'fpt' });
  const [h] = hosts;
  const { createServer } = await import('node:net');
  const server = createServer((s) => s.on('data', (d) => s.write(d)));
  await new Promise((r) => server.listen(0, h.gateway, r));
  const { port } = server.address();
  // A client in the host sends a line every 100 ms and prints each echo with its time.
  const client = `const s = require('net').connect(${port}, '${h.gateway}');
let n = 0; s.on('data', (d) => process.stdout.write(Date.now() + ' ' + d));
setInterval(() => s.write((n++) + '\\n'), 100);`;
  const p = h.exec([process.execPath, '-e', client], { stdio: ['ignore', 'pipe', 'inherit'] });
  const echoes = [];
  p.stdout.on('data', (d) => echoes.push(...String(d).trim().split('\n').map((l) => Number(l.split(' ')[0]))));
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  try {
    while (echoes.length < 3) await sleep(50);
    h.partition();
    const cutAt = Date.now();
    await sleep(1500);
    const during = echoes.filter((t) => t > cutAt + 50).length;
    assert.equal(during, 0, 'no echo arrives while partitioned');
    h.heal();
    const healedAt = Date.now();
    while (!echoes.some((t) => t > healedAt) && Date.now() - healedAt < 8000) await sleep(50);
    assert.ok(echoes.some((t) => t > healedAt), 'the same connection works again after heal');
  } finally {
    p.kill('SIGKILL');
    server.close();
    cleanup();
  }
});

test('hosts left behind are removed when the process exits', { skip }, () => {
  const script = `import { makeHosts } from ${JSON.stringify(new URL('./netns.mjs', import.meta.url).href)};
const { hosts } = makeHosts(2, { prefix: 'fpt' });
process.stdout.write(JSON.stringify({ pid: process.pid, made: hosts.map((h) => [h.name, h.link]) }));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const { pid, made } = JSON.parse(r.stdout);
  assert.equal(made.length, 2);
  for (const [name, link] of made) {
    assert.equal(names().includes(name), false, `namespace ${name} removed`);
    assert.equal(links().includes(link), false, `link ${link} removed`);
  }
  const claims = join(tmpdir(), 'forkpoint-netns-claims');
  const left = existsSync(claims) ? readdirSync(claims) : [];
  for (const k of left) {
    let claim = null;
    try {
      claim = JSON.parse(readFileSync(join(claims, k, 'claim.json'), 'utf8'));
    } catch {
      // another run's claim being made
    }
    assert.notEqual(claim?.pid, pid, `subnet claim ${k} of the exited process removed`);
  }
});

test('hostsSupported says why when namespaces cannot be made (run as user nobody)', { skip: process.getuid?.() === 0 ? false : 'needs root to run a process as nobody' }, () => {
  // A copy nobody can read (the checkout may sit in a directory only root can enter).
  const dir = mkdtempSync(join(tmpdir(), 'fp-netns-nobody-'));
  chmodSync(dir, 0o755);
  const copy = join(dir, 'netns.mjs');
  copyFileSync(new URL('./netns.mjs', import.meta.url), copy);
  chmodSync(copy, 0o644);
  const script = `import { hostsSupported } from ${JSON.stringify(pathToFileURL(copy).href)};
process.stdout.write(JSON.stringify(hostsSupported()));`;
  const r = spawnSync('runuser', ['-u', 'nobody', '--', process.execPath, '--input-type=module', '-e', script], { encoding: 'utf8', cwd: dir });
  rmSync(dir, { recursive: true, force: true });
  assert.equal(r.status, 0, r.stderr);
  const s = JSON.parse(r.stdout);
  assert.equal(s.ok, false);
  assert.match(s.reason, /ip netns add failed: .*(not permitted|denied)/i);
});
