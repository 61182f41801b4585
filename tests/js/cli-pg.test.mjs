// The CLI on PostgreSQL (throwaway cluster started here): `--store
// postgres://…` for `list`/`export`, `export` byte for byte from either store,
// and `migrate-store` between a directory and PostgreSQL both ways — identical
// files after a round trip, a second run that skips everything, a run cut
// short (a real SIGKILL, and an agent already copied) that finishes without
// duplicates, a conflicting agent refused with ALREADY_EXISTS, and a server
// that cannot be reached as STORE_UNAVAILABLE. Every command spawns the real CLI.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { napi } from './helpers.mjs';
import { startCluster } from '../support/pg-cluster.mjs';

const { Agent, JSONStore, PostgresStore, ScriptedProvider, SessionLoader, ToolRegistry } = napi;
const bin = fileURLToPath(new URL('../../npm/forkpoint/bin/forkpoint.mjs', import.meta.url));
const FILES = ['meta.json', 'session.jsonl', 'events.jsonl'];

let pg;
let n = 0;
before(async () => {
  pg = await startCluster();
});
after(() => pg?.stop());

const tmp = () => mkdtempSync(join(tmpdir(), 'fp-cli-pg-'));
const schema = () => `clipg_${process.pid}_${++n}`;
/** The CLI, its stdout as bytes. */
const run = (...args) => {
  const r = spawnSync(process.execPath, [bin, ...args], { cwd: tmpdir(), maxBuffer: 1 << 28 });
  return { code: r.status, out: r.stdout, err: r.stderr.toString() };
};
const ok = (r) => (assert.equal(r.code, 0, r.err), r);
const json = (r) => JSON.parse(ok(r).out.toString());

const tools = () => new ToolRegistry().register({ name: 'echo', description: 'echoes', inputSchema: { type: 'object' }, run: (x) => x });

/** Runs a scripted agent `id` in `store`: a tool call, two chats. */
async function scripted(store, id) {
  const model = new ScriptedProvider([{ text: 'calling', toolCalls: [{ name: 'echo', arguments: { id } }] }, { text: `done ${id}` }, { text: `again ${id} ✓` }]);
  const agent = await Agent.create({ agentId: id, model, tools: ['echo'] }, { store, toolRegistry: tools() });
  await agent.chat(`run ${id}`);
  await agent.chat('once more');
  await agent.close();
}

/** A store directory with `count` scripted agents. */
async function dirWith(count, prefix = 'agent') {
  const dir = tmp();
  const store = new JSONStore(dir);
  for (let i = 0; i < count; i++) await scripted(store, `${prefix}-${i}`);
  return dir;
}

/** Each agent's three files in `dir`, by id. */
const filesOf = (dir) =>
  Object.fromEntries(
    readdirSync(dir)
      .sort()
      .map((id) => [id, Object.fromEntries(FILES.map((f) => [f, readFileSync(join(dir, id, f))]))]),
  );

/** Row counts of a schema's tables (duplicates would show here). */
const rows = async (s) => (await pg.psql(`SELECT (SELECT count(*) FROM "${s}".agents) || ' ' || (SELECT coalesce(sum(seq - first_seq + 1), 0) FROM "${s}".events) || ' ' || (SELECT coalesce(sum(len), 0) FROM "${s}".session_chunks)`)).trim();
/** What those counts must be for the agents of a directory. */
const expectedRows = (dir) => {
  const f = Object.values(filesOf(dir));
  const events = f.reduce((k, a) => k + a['events.jsonl'].toString().split('\n').length - 1, 0);
  const bytes = f.reduce((k, a) => k + a['session.jsonl'].length, 0);
  return `${f.length} ${events} ${bytes}`;
};

const freePort = () =>
  new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });

test('export: a run in PostgreSQL and its copy in a directory give the same bytes (session, events, meta), which load as a session', async () => {
  const s = schema();
  const store = await PostgresStore.open(pg.url, { schema: s });
  await scripted(store, 'pg-run');
  await store.close();
  const fromPg = ok(run('--store', pg.url, '--schema', s, 'export', 'pg-run')).out;
  assert.ok(fromPg.length > 0 && fromPg.at(-1) === 0x0a, 'whole lines');
  const dir = tmp();
  ok(run('migrate-store', '--from', pg.url, '--from-schema', s, '--to', dir));
  const fromDir = ok(run('--store', dir, 'export', 'pg-run')).out;
  assert.ok(fromDir.equals(fromPg), 'the same session from either store');
  assert.ok(fromDir.equals(readFileSync(join(dir, 'pg-run', 'session.jsonl'))), 'export from a directory is the file');
  for (const [part, file] of [['events', 'events.jsonl'], ['meta', 'meta.json']]) {
    const p = ok(run('--store', pg.url, '--schema', s, 'export', 'pg-run', '--part', part)).out;
    assert.ok(p.equals(ok(run('--store', dir, 'export', 'pg-run', '--part', part)).out), part);
    assert.ok(p.equals(readFileSync(join(dir, 'pg-run', file))), file);
  }
  // The exported session loads, and holds the run.
  const file = join(tmp(), 'pg-run.jsonl');
  writeFileSync(file, fromPg);
  const loaded = await SessionLoader.open(file);
  assert.deepEqual(
    loaded.getContext().map((m) => m.role),
    ['user', 'assistant', 'toolResult', 'assistant', 'user', 'assistant'],
  );
  assert.equal(SessionLoader.fromJsonl(fromPg).getMetadata().sessionId, loaded.getMetadata().sessionId);
  // show and checkpoint (list) answer the same on PostgreSQL as on the directory copy.
  for (const cmd of [['show', 'pg-run', '--json'], ['checkpoint', 'pg-run', '--json']]) {
    const a = JSON.parse(ok(run('--store', pg.url, '--schema', s, ...cmd)).out.toString());
    const b = JSON.parse(ok(run('--store', dir, ...cmd)).out.toString());
    assert.deepEqual(a, b, cmd[0]);
  }
  // The copy runs on: resumed from the directory.
  const again = await Agent.resume('pg-run', { model: new ScriptedProvider([]) }, { store: new JSONStore(dir), toolRegistry: tools() });
  assert.equal((await again.messages()).at(-1).content.at(-1).text, 'again pg-run ✓');
  await again.close();
  // `list` on PostgreSQL; a missing agent.
  assert.deepEqual(json(run('--store', pg.url, '--schema', s, 'list', '--json')).map((m) => m.agentId), ['pg-run']);
  const missing = run('--store', pg.url, '--schema', s, 'export', 'nobody');
  assert.equal(missing.code, 1);
  assert.match(missing.err, /^forkpoint: AGENT_NOT_FOUND: /);
});

test('migrate-store: directory → PostgreSQL → directory gives identical files; a second run copies nothing and verifies everything', async () => {
  const src = await dirWith(4);
  const s = schema();
  const first = json(run('migrate-store', '--from', src, '--to', pg.url, '--to-schema', s, '--json'));
  assert.deepEqual({ ...first, bytes: undefined }, { agents: 4, copied: 4, skipped: 0, bytes: undefined, verified: 4 });
  const total = Object.values(filesOf(src)).reduce((k, a) => k + FILES.reduce((m, f) => m + a[f].length, 0), 0);
  assert.equal(first.bytes, total);
  assert.equal(await rows(s), expectedRows(src));
  const back = tmp();
  const text = ok(run('migrate-store', '--from', pg.url, '--from-schema', s, '--to', back)).out.toString();
  assert.match(text, /^Copied 4 agent\(s\) .* 0 already there with the same bytes skipped\n {2}verified {4}4 agent\(s\)/);
  assert.deepEqual(filesOf(back), filesOf(src));
  // Again, both ways: nothing copied, nothing duplicated.
  const second = json(run('migrate-store', '--from', src, '--to', pg.url, '--to-schema', s, '--json'));
  assert.deepEqual(second, { agents: 4, copied: 0, skipped: 4, bytes: 0, verified: 4 });
  assert.equal(await rows(s), expectedRows(src));
  assert.deepEqual(json(run('migrate-store', '--from', pg.url, '--from-schema', s, '--to', back, '--json')).skipped, 4);
  // PostgreSQL → PostgreSQL (--schema is the default for both sides).
  const s2 = schema();
  assert.equal(json(run('--schema', s, 'migrate-store', '--from', pg.url, '--to', pg.url, '--to-schema', s2, '--json')).copied, 4);
  assert.equal(await rows(s2), expectedRows(src));
});

test('migrate-store cut short: killed mid-copy, or with an agent already copied, a re-run finishes without duplicates', async () => {
  const src = await dirWith(20, 'many');
  const s = schema();
  // A real interruption: SIGKILL once the first agent is in PostgreSQL.
  const watch = await PostgresStore.open(pg.url, { schema: s });
  const p = spawn(process.execPath, [bin, 'migrate-store', '--from', src, '--to', pg.url, '--to-schema', s], { stdio: 'ignore' });
  const exited = new Promise((resolve) => p.on('exit', (code, signal) => resolve({ code, signal })));
  let gone = null;
  exited.then((x) => (gone = x));
  const t0 = Date.now();
  while ((await watch.list()).length === 0 && !gone && Date.now() - t0 < 10_000) await new Promise((r) => setImmediate(r));
  p.kill('SIGKILL');
  await watch.close();
  const how = await exited;
  const before = Number((await rows(s)).split(' ')[0]);
  // (When the copy won the race it exited 0 first; the re-run then skips all.)
  assert.ok(how.signal === 'SIGKILL' || how.code === 0, JSON.stringify(how));
  const r = json(run('migrate-store', '--from', src, '--to', pg.url, '--to-schema', s, '--json'));
  assert.equal(r.copied + r.skipped, 20);
  assert.equal(r.skipped, before, 'the agents copied before the kill are skipped');
  assert.equal(r.verified, 20);
  assert.equal(await rows(s), expectedRows(src));
  // An agent already at the target (as a cut-short run leaves it): a directory target.
  const dst = tmp();
  const one = await new JSONStore(src).exportAgent('many-3');
  await new JSONStore(dst).importAgent('many-3', one);
  const d = json(run('migrate-store', '--from', pg.url, '--from-schema', s, '--to', dst, '--json'));
  assert.deepEqual(d, { ...d, agents: 20, copied: 19, skipped: 1, verified: 20 });
  assert.deepEqual(filesOf(dst), filesOf(src));
});

test('migrate-store refuses an agent present with other bytes (exit 1, ALREADY_EXISTS, nothing copied); a server that cannot be reached is STORE_UNAVAILABLE', async () => {
  const src = await dirWith(3);
  const s = schema();
  // agent-1 exists at the target as another run.
  const store = await PostgresStore.open(pg.url, { schema: s });
  await scripted(store, 'agent-1');
  await store.close();
  const r = run('migrate-store', '--from', src, '--to', pg.url, '--to-schema', s);
  assert.equal(r.code, 1, r.err);
  assert.match(r.err, /^forkpoint: ALREADY_EXISTS: the target store holds 1 agent\(s\) that differ from the source's: agent-1; nothing was copied\n$/);
  assert.equal((await rows(s)).split(' ')[0], '1', 'nothing copied');
  // Unreachable: nobody listens on the port.
  const bad = `postgres://postgres@127.0.0.1:${await freePort()}/postgres`;
  for (const args of [['--store', bad, 'list'], ['--store', bad, 'export', 'agent-1'], ['migrate-store', '--from', src, '--to', bad], ['migrate-store', '--from', bad, '--to', tmp()]]) {
    const e = run(...args);
    assert.equal(e.code, 1, `${args.join(' ')}: ${e.err}`);
    assert.match(e.err, /^forkpoint: STORE_UNAVAILABLE: .*cannot reach the PostgreSQL server/, args.join(' '));
  }
  // --schema belongs to a PostgreSQL store; a missing source directory is NOT_FOUND.
  const e = run('--store', src, '--schema', 'x', 'list');
  assert.equal(e.code, 1);
  assert.match(e.err, /^forkpoint: INVALID_INPUT: --schema is for a PostgreSQL store/);
  const nf = run('migrate-store', '--from', join(src, 'nope'), '--to', tmp());
  assert.equal(nf.code, 1);
  assert.match(nf.err, /^forkpoint: NOT_FOUND: no store directory/);
  assert.ok(!existsSync(join(src, 'nope')));
});

test('exportAgent/importAgent: read while the agent runs elsewhere (no lease taken); coded errors for what cannot be an agent', async () => {
  const s = schema();
  const a = await PostgresStore.open(pg.url, { schema: s, host: 'host-a' });
  const b = await PostgresStore.open(pg.url, { schema: s, host: 'host-b' });
  const agent = await Agent.create({ agentId: 'live', model: new ScriptedProvider([{ text: 'hi' }]), tools: [] }, { store: a, toolRegistry: tools() });
  await agent.chat('hello');
  // Open on host-a; host-b reads it whole, and the CLI too.
  const x = await b.exportAgent('live');
  assert.ok(ok(run('--store', pg.url, '--schema', s, 'export', 'live')).out.equals(x.session));
  assert.deepEqual(JSON.parse(x.meta).agentId, 'live');
  await agent.close();
  const dir = tmp();
  const files = new JSONStore(dir);
  await files.importAgent('live', x);
  assert.ok(readFileSync(join(dir, 'live', 'events.jsonl')).equals(x.events));
  const code = async (p, c) => assert.equal((await p.then(() => null, (e) => e)).code, c);
  await code(files.importAgent('live', x), 'ALREADY_EXISTS');
  await code(b.importAgent('live', x), 'ALREADY_EXISTS');
  await code(files.importAgent('other', x), 'INVALID_INPUT'); // the meta names 'live'
  const meta = Buffer.from(JSON.stringify({ ...JSON.parse(x.meta), agentId: 'other' }));
  await code(files.importAgent('other', { ...x, meta, session: x.session.subarray(0, x.session.length - 1) }), 'INVALID_INPUT');
  await code(b.importAgent('other', { ...x, meta, events: Buffer.from('{"seq":1}\nnot json\n') }), 'INVALID_INPUT');
  const [first, second] = x.events.toString().split('\n');
  await code(files.importAgent('other', { ...x, meta, events: Buffer.from(`${second}\n${first}\n`) }), 'INVALID_INPUT'); // seqs must grow
  assert.equal(files.exists('other'), false);
  assert.equal(await b.exists('other'), false);
  await code(b.exportAgent('nobody'), 'AGENT_NOT_FOUND');
  await code(files.exportAgent('nobody'), 'AGENT_NOT_FOUND');
  await a.close();
  await b.close();
});
