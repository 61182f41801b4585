// "Hosts" for multi-host tests: Linux network namespaces, each linked to the
// root namespace by a veth pair.
//
//   if (!hostsSupported().ok) … fall back (SIGSTOP/SIGCONT of a worker as the partition)
//   const { hosts, cleanup } = makeHosts(2, { prefix: 'fp' });
//   hosts[0].ip        // '10.77.K.2', the host's address (inside its namespace)
//   hosts[0].gateway   // '10.77.K.1', the root namespace's end (a server there listens on it)
//   hosts[0].exec(['psql', …], { stdio: 'pipe' })  // a ChildProcess in the namespace
//   hosts[0].partition() / hosts[0].heal()         // the root side of its link down / up
//   cleanup()          // removes namespaces, links and claims; idempotent, also at process exit
//
// Host k of a run gets the subnet 10.77.K.0/24 with a K no one else uses
// (claimed by an atomic mkdir under the temporary directory, so concurrent
// runs do not collide): K.1 on the root side, K.2 inside, `lo` up. A host
// reaches only its gateway's subnet (no default route), so nothing leaves
// for the outside world. Names hold the process id (`<prefix><pid>h<n>`), so
// they are unique per run. `partition()` sets the root-side veth down: the
// host reaches nothing, and TCP connections in flight stall (retransmitting)
// until `heal()` sets it up again.
//
// Needs root (CAP_NET_ADMIN) and iproute2; `hostsSupported()` says why not.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Namespaces and links are the machine's, so their claims are kept where
// every run finds them: /run (cleared at boot, as the namespaces are), not
// the run's own TMPDIR (npm test gives each run one, removed at its end:
// claims there would hide a killed run's leftovers from the next sweep).
const claimsDir = join(existsSync('/run') ? '/run' : tmpdir(), 'forkpoint-netns-claims');

function ip(args, { check = true } = {}) {
  const r = spawnSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.error) throw new Error(`ip ${args.join(' ')}: ${r.error.message}`);
  if (check && r.status !== 0) throw new Error(`ip ${args.join(' ')} failed: ${r.stderr.trim()}`);
  return r;
}

let support;
/**
 * Whether namespaces with veth links can be made here: `{ ok: true }` or
 * `{ ok: false, reason }` (no iproute2, no privileges, no veth).
 */
export function hostsSupported() {
  if (support) return support;
  const ns = `fpprobe${process.pid}`;
  const veth = `fpprobe${process.pid}`.slice(0, 15);
  try {
    const add = ip(['netns', 'add', ns], { check: false });
    if (add.error || add.status !== 0) return (support = { ok: false, reason: `ip netns add failed: ${add.stderr.trim() || add.error?.message}` });
    const link = ip(['link', 'add', veth, 'type', 'veth', 'peer', 'name', 'probe0', 'netns', ns], { check: false });
    if (link.status !== 0) return (support = { ok: false, reason: `cannot make a veth pair: ${link.stderr.trim()}` });
    return (support = { ok: true });
  } catch (e) {
    return (support = { ok: false, reason: e.message });
  } finally {
    ip(['link', 'del', veth], { check: false });
    ip(['netns', 'del', ns], { check: false });
  }
}

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
};

/** Removes a host's namespace (with `kill`, killing what this run still runs in it) and its link. */
function removeHost(h, kill) {
  const pids = kill ? ip(['netns', 'pids', h.name], { check: false }) : null;
  if (pids?.status === 0) {
    for (const p of pids.stdout.split(/\s+/).filter(Boolean)) {
      try {
        process.kill(Number(p), 'SIGKILL');
      } catch {
        // gone already
      }
    }
  }
  ip(['netns', 'del', h.name], { check: false });
  ip(['link', 'del', h.veth], { check: false }); // gone with its peer, normally
  rmSync(join(claimsDir, String(h.octet)), { recursive: true, force: true });
}

/** Claims of runs that died without cleaning up: removes what they left. */
function sweepStale() {
  let entries = [];
  try {
    entries = readdirSync(claimsDir);
  } catch {
    return;
  }
  for (const k of entries) {
    let claim;
    try {
      claim = JSON.parse(readFileSync(join(claimsDir, k, 'claim.json'), 'utf8'));
    } catch {
      // Being written now, or a run died between claiming and writing.
      try {
        if (Date.now() - statSync(join(claimsDir, k)).mtimeMs > 60_000) rmSync(join(claimsDir, k), { recursive: true, force: true });
      } catch {
        // removed meanwhile
      }
      continue;
    }
    if (!alive(claim.pid)) removeHost(claim, false);
  }
}

/** Subnets 10.77.K.0/24 some interface already uses. */
function octetsInUse() {
  const r = ip(['-o', '-4', 'addr', 'show'], { check: false });
  return new Set([...r.stdout.matchAll(/inet 10\.77\.(\d+)\./g)].map((m) => Number(m[1])));
}

/** Claims a free K for host `name` (an atomic mkdir). */
function claimOctet(h) {
  mkdirSync(claimsDir, { recursive: true });
  const used = octetsInUse();
  for (let k = 1; k < 255; k++) {
    if (used.has(k)) continue;
    try {
      mkdirSync(join(claimsDir, String(k)));
    } catch (e) {
      if (e.code === 'EEXIST') continue;
      throw e;
    }
    h.octet = k;
    writeFileSync(join(claimsDir, String(k), 'claim.json'), JSON.stringify({ pid: process.pid, name: h.name, veth: h.veth, octet: k }));
    return k;
  }
  throw new Error('no free subnet 10.77.K.0/24 (K in 1..254)');
}

const made = new Set();
let hooked = false;
let serial = 0;
function hookExit() {
  if (hooked) return;
  hooked = true;
  process.on('exit', () => {
    for (const h of made) removeHost(h, true);
    made.clear();
  });
  for (const [sig, n] of [['SIGINT', 2], ['SIGTERM', 15], ['SIGHUP', 1]]) {
    if (process.listenerCount(sig) === 0) process.once(sig, () => process.exit(128 + n));
  }
}

/**
 * Makes `n` hosts; see the top of this file. Throws (after removing what it
 * made) when a step fails; `hostsSupported()` tells beforehand.
 */
export function makeHosts(n, { prefix = 'fp' } = {}) {
  if (!/^[a-z][a-z0-9]{0,3}$/.test(prefix)) throw new Error('prefix: 1-4 lowercase letters or digits, starting with a letter (interface names are at most 15 characters)');
  hookExit();
  sweepStale();
  const hosts = [];
  const cleanup = () => {
    for (const h of hosts) {
      if (!made.has(h)) continue;
      made.delete(h);
      removeHost(h, true);
    }
  };
  try {
    for (let i = 0; i < n; i++) {
      const tag = `${prefix}${process.pid}h${serial++}`;
      const h = { name: tag, veth: `${tag}r`, octet: 0 };
      if (`${tag}r`.length > 15) throw new Error(`interface name ${tag}r is longer than 15 characters: use a shorter prefix`);
      claimOctet(h);
      made.add(h);
      const k = h.octet;
      h.gateway = `10.77.${k}.1`;
      h.ip = `10.77.${k}.2`;
      ip(['netns', 'add', h.name]);
      ip(['link', 'add', h.veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', h.name]);
      ip(['addr', 'add', `${h.gateway}/24`, 'dev', h.veth]);
      ip(['link', 'set', h.veth, 'up']);
      ip(['-n', h.name, 'link', 'set', 'lo', 'up']);
      ip(['-n', h.name, 'addr', 'add', `${h.ip}/24`, 'dev', 'eth0']);
      ip(['-n', h.name, 'link', 'set', 'eth0', 'up']);
      hosts.push(h);
    }
  } catch (e) {
    for (const h of made) if (!hosts.includes(h)) hosts.push(h);
    cleanup();
    throw e;
  }
  return {
    hosts: hosts.map((h) => ({
      name: h.name,
      ip: h.ip,
      gateway: h.gateway,
      /** The root-side interface of the host's link. */
      link: h.veth,
      /** Spawns `argv` inside the host (`ip netns exec NAME …`); `opts` as for child_process.spawn. */
      exec: (argv, opts = {}) => spawn('ip', ['netns', 'exec', h.name, ...argv], opts),
      /** Cuts the host off: the root side of its link goes down (returns when it is down). */
      partition: () => {
        ip(['link', 'set', h.veth, 'down']);
      },
      /** Links the host again (returns when both ends are up and no failed neighbour entry is left). */
      heal: () => {
        ip(['link', 'set', h.veth, 'up']);
        // The carrier comes back on both ends a moment later, and a
        // neighbour entry that failed during the partition answers "No route
        // to host" until it expires: wait for both ends (at most 5 s), then
        // forget the entries.
        const until = Date.now() + 5000;
        const up = (args) => /state UP/.test(ip(args, { check: false }).stdout);
        while (Date.now() < until && !(up(['-o', 'link', 'show', 'dev', h.veth]) && up(['-n', h.name, '-o', 'link', 'show', 'dev', 'eth0']))) {
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
        }
        ip(['neigh', 'flush', 'dev', h.veth], { check: false });
        ip(['-n', h.name, 'neigh', 'flush', 'dev', 'eth0'], { check: false });
      },
    })),
    cleanup,
  };
}
