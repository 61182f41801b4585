// A PostgresStore liveness bug the reliability harness found
// (scripts/reliability-pg.mjs, partitions), now fixed: a worker that stalled
// in the middle of a write — frozen (SIGSTOP, a VM pause), or cut off by a
// partition — kept its agent's row locked (the write was a transaction of
// several statements, and its server backend sat "idle in transaction"), so
// after the lease ran out another worker's takeover waited on that lock for
// ever. A write is now one statement (the server finishes it without the
// client), and connections set idle_in_transaction_session_timeout and
// lock_timeout to a lease's time.
//
// Deterministic here: a psql session locks session_chunks so A's write
// stops right after it took the row lock; A is SIGSTOPped; the table lock is
// released; the lease runs out; B's resume must settle (take the agent over)
// within a few leases.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { findBin, startCluster } from './pg-cluster.mjs';

const require = createRequire(import.meta.url);
const { Agent, PostgresStore, ToolRegistry, ScriptedProvider } = require('forkpoint');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const leaseMs = 1000;

/** A long-lived psql session fed through stdin; `run(sql, tag)` resolves when `tag` is printed. */
function session(pg) {
  const psqlBin = existsSync(join(findBin(), 'psql')) ? join(findBin(), 'psql') : 'psql';
  const p = spawn(psqlBin, ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-h', '127.0.0.1', '-p', String(pg.port), '-U', 'postgres', '-d', 'postgres'], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  p.stdout.on('data', (d) => (out += d));
  return {
    p,
    async run(sql, tag) {
      p.stdin.write(`${sql}\nSELECT '${tag}';\n`);
      while (!out.includes(tag)) await sleep(10);
    },
  };
}

async function until(what, f, ms = 10000) {
  const end = Date.now() + ms;
  for (;;) {
    if (await f()) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

test(
  'a takeover is not held up by a worker frozen in the middle of a write',
  async () => {
    const pg = await startCluster();
    const schema = 'stalled';
    const s = `"${schema}"`;
    // Worker A: creates the agent, then sends a message when told to.
    const script = `const { Agent, PostgresStore, ScriptedProvider, ToolRegistry } = require('forkpoint');
(async () => {
  const store = await PostgresStore.open(${JSON.stringify(pg.url)}, { schema: '${schema}', leaseMs: ${leaseMs}, host: 'host-a' });
  const agent = await Agent.create({ agentId: 'x', model: new ScriptedProvider([{ text: 'a' }]) }, { store, toolRegistry: new ToolRegistry() });
  console.log('OPEN');
  process.stdin.once('data', () => agent.send('hello').then(() => console.log('SENT'), (e) => console.log('ERR ' + e.code)));
})();`;
    const a = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'], cwd: new URL('../..', import.meta.url).pathname });
    let aOut = '';
    a.stdout.on('data', (d) => (aOut += d));
    const locker = session(pg);
    let store;
    try {
      await until('A to create the agent', () => aOut.includes('OPEN'));
      await locker.run(`BEGIN; LOCK TABLE ${s}.session_chunks IN EXCLUSIVE MODE;`, 'locked');
      a.stdin.write('SEND\n');
      // A's write took the agent's row (UPDATE … WHERE token) and waits for the table.
      await until('A\'s write to wait for the table lock', async () => (await pg.psql(`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%session_chunks%'`)).trim() !== '0');
      a.kill('SIGSTOP');
      await locker.run('COMMIT;', 'unlocked');
      await until('A\'s write to stop waiting', async () => (await pg.psql(`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%session_chunks%'`)).trim() === '0');
      await until('the lease to run out', async () => (await pg.psql(`SELECT lease_until < clock_timestamp() FROM ${s}.agents WHERE id = 'x'`)).trim() === 't');

      store = await PostgresStore.open(pg.url, { schema, leaseMs, host: 'host-b' });
      const t0 = Date.now();
      const resumed = Agent.resume('x', { model: new ScriptedProvider([]) }, { store, toolRegistry: new ToolRegistry() }, { strategy: 'crash' }).then(
        (agent) => ({ agent }),
        (e) => ({ code: e.code }),
      );
      const bound = leaseMs * 3 + 2000;
      const outcome = await Promise.race([resumed, sleep(bound).then(() => null)]);
      const blocked = await pg.psql(
        `SELECT string_agg(w.state || ' (pid ' || w.pid || ') blocked by ' || b.state || ' (pid ' || b.pid || ')', '; ')
         FROM pg_stat_activity w JOIN pg_stat_activity b ON b.pid = ANY (pg_blocking_pids(w.pid))`,
      );
      a.kill('SIGCONT'); // lets everything finish
      const late = await resumed;
      assert.ok(late.agent, `B took the agent over (${late.code})`);
      await late.agent?.close();
      assert.ok(
        outcome !== null,
        `B's resume did not settle within ${bound} ms although A's lease had run out (it settled ${Date.now() - t0} ms after it started, once A was woken); the server then showed: ${blocked.trim() || 'nothing blocked'}`,
      );
    } finally {
      a.kill('SIGCONT');
      a.kill('SIGKILL');
      locker.p.kill('SIGKILL');
      await store?.close();
      await pg.stop();
    }
  },
);
