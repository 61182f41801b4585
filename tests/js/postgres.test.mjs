// PostgresStore (issue 16) on a throwaway cluster started here: opening and
// its errors, one writer per agent across "hosts" (stores naming different
// hosts, worker processes), fencing of a worker whose lease was taken over
// (SIGSTOP as the partition: its later write is LEASE_LOST, stores nothing,
// and its Agent closes), and following an agent written by another process
// with subscribe({since}), also when the listening connection is killed.
// The agent suite itself runs on PostgresStore too (agent.test.mjs with
// FORKPOINT_AGENT_STORE=postgres).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { napi } from './helpers.mjs';
import { startCluster } from '../support/pg-cluster.mjs';

const { Agent, PostgresStore, EventBus, ToolRegistry, ScriptedProvider, ForkpointError } = napi;
const child = fileURLToPath(new URL('./pg-child.mjs', import.meta.url));
let pg;
let n = 0;
before(async () => {
  pg = await startCluster();
});
after(() => pg?.stop());
const schema = () => `pgt_${process.pid}_${++n}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function rejectsCode(p, code) {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof ForkpointError, `a ForkpointError, got ${e}`);
    assert.equal(e.code, code, e.message);
    return e;
  }
  assert.fail(`expected ${code}`);
}

/** A worker process; `lines` collects its `WHAT {json}` lines, `wait(what)` resolves at the first. */
function worker(args) {
  const p = spawn(process.execPath, [child, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = [];
  const waiting = [];
  let out = '';
  p.stdout.on('data', (d) => {
    out += d;
    let i;
    while ((i = out.indexOf('\n')) >= 0) {
      const line = out.slice(0, i);
      out = out.slice(i + 1);
      const sp = line.indexOf(' ');
      const item = { what: line.slice(0, sp), data: JSON.parse(line.slice(sp + 1)) };
      lines.push(item);
      for (const w of waiting.filter((w) => w.what === item.what)) w.resolve(item.data);
    }
  });
  const exited = new Promise((resolve) => p.on('exit', (code, signal) => resolve({ code, signal })));
  return {
    p,
    lines,
    exited,
    wait: (what, ms = 20_000) =>
      new Promise((resolve, reject) => {
        const seen = lines.find((l) => l.what === what);
        if (seen) return resolve(seen.data);
        const t = setTimeout(() => reject(new Error(`worker: no ${what} in ${ms} ms: ${JSON.stringify(lines)}`)), ms);
        waiting.push({ what, resolve: (d) => (clearTimeout(t), resolve(d)) });
      }),
  };
}

const tools = () => new ToolRegistry().register({ name: 'echo', description: 'echoes', inputSchema: { type: 'object' }, run: (x) => x });

test('open: coded errors for a bad connection string, options, an unreachable server and tables newer than this build', async () => {
  await rejectsCode(PostgresStore.open('not a url ://'), 'INVALID_INPUT');
  await rejectsCode(PostgresStore.open({}), 'INVALID_INPUT');
  await rejectsCode(PostgresStore.open(pg.url, { leaseMs: 0 }), 'INVALID_INPUT');
  await rejectsCode(PostgresStore.open(pg.url, { schema: 'Bad-Name' }), 'INVALID_INPUT');
  await rejectsCode(PostgresStore.open(pg.url, { poolSize: 1.5 }), 'INVALID_INPUT');
  // A port nobody listens on.
  const port = await new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
  const e = await rejectsCode(PostgresStore.open(`postgres://postgres@127.0.0.1:${port}/postgres`, { connectTimeoutMs: 2000 }), 'STORE_UNAVAILABLE');
  assert.match(e.message, /cannot reach the PostgreSQL server/);
  // Tables made by a newer forkpoint.
  const s = schema();
  const store = await PostgresStore.open(pg.url, { schema: s });
  await store.close();
  await pg.psql(`UPDATE "${s}".forkpoint_schema SET version = version + 1`);
  await rejectsCode(PostgresStore.open(pg.url, { schema: s }), 'UNSUPPORTED_FORMAT');
  // A closed store refuses calls.
  const closed = await PostgresStore.open(pg.url, { schema: schema() });
  await closed.close();
  await rejectsCode(closed.list(), 'CLOSED');
});

test('TLS: sslmode=verify-full against a server that refuses plain connections; the wrong CA, no TLS and a bad sslmode are coded errors', async () => {
  const tpg = await startCluster({ tls: true });
  try {
    const at = (host, query) => `postgres://postgres@${host}:${tpg.port}/postgres?${query}`;
    const ca = encodeURIComponent(tpg.caFile);
    const store = await PostgresStore.open(at('localhost', `hostaddr=127.0.0.1&sslmode=verify-full&sslrootcert=${ca}`), { schema: schema() });
    const agent = await Agent.create({ agentId: 'tls', model: new ScriptedProvider([{ text: 'over TLS' }]), tools: [] }, { store, toolRegistry: tools() });
    await agent.chat('hello');
    assert.equal(
      (await tpg.psql("SELECT bool_and(s.ssl) FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) WHERE a.application_name = 'forkpoint'")).trim(),
      't',
      'every connection of the store is encrypted',
    );
    await agent.close();
    assert.deepEqual((await store.list()).map((m) => m.agentId), ['tls']);
    await store.close();
    // Its certificate is made out to localhost, not to 127.0.0.1.
    let e = await rejectsCode(PostgresStore.open(at('127.0.0.1', `sslmode=verify-full&sslrootcert=${ca}`), { schema: schema() }), 'STORE_UNAVAILABLE');
    assert.match(e.message, /TLS handshake .* failed: .*not valid for name/);
    e = await rejectsCode(PostgresStore.open(at('127.0.0.1', 'sslmode=disable'), { schema: schema() }), 'STORE_UNAVAILABLE');
    assert.match(e.message, /only over TLS/);
    e = await rejectsCode(PostgresStore.open(at('localhost', 'sslmode=verify_full'), { schema: schema() }), 'INVALID_INPUT');
    assert.match(e.message, /sslmode must be/);
    // The plain cluster has no TLS to give.
    e = await rejectsCode(PostgresStore.open(`${pg.url}?sslmode=require`, { schema: schema() }), 'STORE_UNAVAILABLE');
    assert.match(e.message, /does not support TLS/);
  } finally {
    await tpg.stop();
  }
});

test('one writer per agent across hosts: AGENT_LOCKED names the holder; an idle open agent keeps its lease; close frees it at once', async () => {
  const s = schema();
  const a = await PostgresStore.open(pg.url, { schema: s, host: 'host-a', leaseMs: 400 });
  const b = await PostgresStore.open(pg.url, { schema: s, host: 'host-b', leaseMs: 400 });
  const toolRegistry = tools();
  const agent = await Agent.create({ agentId: 'solo', model: new ScriptedProvider([{ text: 'hi' }]), tools: [] }, { store: a, toolRegistry });
  await agent.chat('hello');
  // Idle for three lease times: renewed in the background.
  await sleep(1200);
  const e = await rejectsCode(Agent.resume('solo', { model: new ScriptedProvider([]) }, { store: b, toolRegistry }), 'AGENT_LOCKED');
  assert.match(e.message, new RegExp(`pid ${process.pid} on host-a`));
  await rejectsCode(b.delete('solo'), 'AGENT_LOCKED');
  await agent.close();
  const again = await Agent.resume('solo', { model: new ScriptedProvider([]) }, { store: b, toolRegistry });
  assert.deepEqual((await again.messages()).map((m) => m.role), ['user', 'assistant']);
  await again.close();
  assert.deepEqual((await a.list()).map((m) => m.agentId), ['solo']);
  assert.equal(await b.exists('solo'), true);
  await b.delete('solo');
  assert.equal(await a.exists('solo'), false);
});

test('fencing: a worker stopped mid tool call loses its lease; another takes over, seals and goes on; the old worker\'s next write is LEASE_LOST, stores nothing, and its Agent closes', async () => {
  const s = schema();
  const leaseMs = 500;
  const w = worker([pg.url, s, String(leaseMs), 'fenced', 'fence']);
  try {
    await w.wait('TOOL_RUNNING');
    w.p.kill('SIGSTOP'); // the partition: no renewal, no write
    await sleep(leaseMs + 200);
    const store = await PostgresStore.open(pg.url, { schema: s, host: 'host-b', leaseMs });
    const agent = await Agent.resume('fenced', { model: new ScriptedProvider([{ text: 'taken over' }]) }, { store, toolRegistry: tools() }, { strategy: 'crash' });
    const [call] = await agent.toolCalls();
    assert.equal(call.state, 'SEALED');
    assert.equal((await agent.chat('go on')).text, 'taken over');
    await agent.close();
    const snapshot = () =>
      pg.psql(
        `SELECT (SELECT count(*) FROM "${s}".events) || ' ' || (SELECT coalesce(sum(length(bytes)), 0) FROM "${s}".session_chunks) || ' ' || (SELECT md5(meta::text) FROM "${s}".agents)`,
      );
    const before = await snapshot();
    w.p.kill('SIGCONT'); // healed: its tool finishes and it tries to write
    const ended = await w.wait('ENDED');
    assert.deepEqual(ended, { code: 'LEASE_LOST', after: 'CLOSED' });
    assert.equal(await snapshot(), before, 'nothing of the fenced worker is stored');
    const again = await Agent.resume('fenced', { model: new ScriptedProvider([]) }, { store, toolRegistry: tools() });
    const results = (await again.messages()).filter((m) => m.role === 'toolResult');
    assert.equal(results.length, 1);
    assert.equal(results[0].isError, true, 'the sealed result, not the late one');
    await again.close();
    await store.close();
  } finally {
    w.p.kill('SIGKILL');
  }
});

test('setModel by a worker whose lease was taken over: LEASE_LOST, and its Agent closes', async () => {
  const s = schema();
  const store = await PostgresStore.open(pg.url, { schema: s, host: 'host-a' });
  const agent = await Agent.create({ agentId: 'moved', model: new ScriptedProvider([{ text: 'hi' }]), tools: [] }, { store, toolRegistry: tools() });
  await agent.chat('hello');
  // Another worker acquired it meanwhile: the token moved on.
  await pg.psql(`UPDATE "${s}".agents SET token = token + 1`);
  await rejectsCode(agent.setModel({ provider: 'openai', model: 'gpt-4.1' }), 'LEASE_LOST');
  await rejectsCode(agent.chat('again'), 'CLOSED');
  await store.close();
});

test('subscribe({since}) on another host: replays, then follows live, each event once and in order, also after its listening connection is killed', async () => {
  const s = schema();
  const steps = 40;
  const w = worker([pg.url, s, '2000', 'busy', 'steps', String(steps)]);
  try {
    await w.wait('OPEN');
    const store = await PostgresStore.open(pg.url, { schema: s, host: 'host-b' });
    const log = await store.events('busy');
    const bus = new EventBus(log);
    const seqs = [];
    let killed = false;
    const t0 = Date.now();
    for await (const { bookmark } of bus.subscribe({ since: null })) {
      seqs.push(bookmark.seq);
      if (!killed && seqs.length >= 20) {
        killed = true;
        const out = await pg.psql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query LIKE 'LISTEN%'");
        assert.ok(Number(out.trim()) >= 1, 'a listening connection was killed');
      }
      const acks = w.lines.filter((l) => l.what === 'ACK');
      if (acks.length === steps && bookmark.seq >= acks.at(-1).data.seq) break;
      assert.ok(Date.now() - t0 < 30_000, 'followed within 30 s');
    }
    assert.deepEqual(seqs, Array.from({ length: seqs.length }, (_, i) => i + 1), 'every event once, in order');
    await w.wait('CLOSED');
    await log.close();
    await store.close();
  } finally {
    w.p.kill('SIGKILL');
  }
});
