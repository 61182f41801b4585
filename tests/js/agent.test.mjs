// The durable Agent (Node): the semantics of the issue, each with a test.
// On JSONStore, or with FORKPOINT_AGENT_STORE=postgres on PostgresStore (a
// throwaway cluster started here, a schema per store): every test that does
// not read the store's files runs on both.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { napi } from './helpers.mjs';
import { startCluster } from '../support/pg-cluster.mjs';

const { Agent, JSONStore, PostgresStore, ToolRegistry, TemplateRegistry, ScriptedProvider, ForkpointError, SessionWriter, SessionLoader, EventLog } = napi;
const PG = process.env.FORKPOINT_AGENT_STORE === 'postgres';
/** Tests that read or write the store's files directly. */
const FILES = { skip: PG && 'reads the store files (JSONStore only)' };
/** A short lease: a killed child's agent is free again soon. */
const LEASE_MS = 600;
const cluster = PG ? await startCluster() : null;
if (cluster) after(() => cluster.stop());
let schemas = 0;
const child = fileURLToPath(new URL('./agent-child.mjs', import.meta.url));

const zeroUsage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
/** An assistant answer with `content` (tool calls), as a session entry. */
const answerEntry = (content, timestamp) => ({
  type: 'message',
  message: { role: 'assistant', content, api: 'scripted', provider: 'scripted', model: 'scripted-1', usage: zeroUsage, stopReason: 'toolUse', timestamp },
});

/** A new empty store: a directory, or a schema of its own. */
const freshStore = async (opts = {}) =>
  PG
    ? PostgresStore.open(cluster.url, { schema: `agent_${process.pid}_${++schemas}`, leaseMs: LEASE_MS, ...opts })
    : new JSONStore(mkdtempSync(join(tmpdir(), 'fp-agent-')), opts);
/** How a child process opens `store`: its directory, or `url#schema`. */
const where = (store) => (PG ? `${cluster.url}#${store.schema}#${LEASE_MS}` : store.dir);
/** Agent `id`'s event log, read-only. */
const openLog = (store, id) => (PG ? store.events(id) : EventLog.open(join(store.dir, id, 'events.jsonl'), { readOnly: true }));

function tools() {
  return new ToolRegistry()
    .register({ name: 'add', description: 'adds two numbers', inputSchema: { type: 'object' }, run: ({ a, b }) => ({ sum: a + b }) })
    .register({ name: 'echo', description: 'echoes', inputSchema: { type: 'object' }, run: (x) => x })
    .register({
      name: 'wait',
      description: 'waits until aborted',
      inputSchema: { type: 'object' },
      run: (_x, ctx) => new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('aborted')))),
    });
}

/** A model that calls `add` once, then says the sum. */
const adder = () =>
  new ScriptedProvider([
    { text: 'adding', toolCalls: [{ name: 'add', arguments: { a: 2, b: 3 } }] },
    (req) => ({ text: `sum=${JSON.parse(req.messages.at(-1).content[0].text).sum}` }),
  ]);

async function rejectsCode(p, code) {
  await assert.rejects(p, (e) => {
    assert.ok(e instanceof ForkpointError, `a ForkpointError, got ${e}`);
    assert.equal(e.code, code, e.message);
    return true;
  });
}

async function events(agent, since = 0, channels) {
  const out = [];
  const last = (await agent.status()).lastBookmark.seq;
  if (last <= since) return out;
  for await (const { bookmark, event } of agent.subscribe(channels, { since })) {
    out.push(event);
    if (bookmark.seq >= last) break;
  }
  return out;
}

/** Runs the child until it prints `what`, then kills it with SIGKILL. */
async function runAndKill(store, id, mode, what) {
  const data = await new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [child, where(store), id, mode], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    let data;
    p.stdout.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith(what + ' '));
      if (line && data === undefined) {
        data = JSON.parse(line.slice(what.length + 1));
        p.kill('SIGKILL');
      }
    });
    p.on('exit', (code, signal) => (signal === 'SIGKILL' ? resolve(data) : reject(new Error(`child exited ${code} ${signal}: ${out}`))));
  });
  // The killed holder's lease runs out (files: the OS freed the lock at once).
  if (PG) await new Promise((r) => setTimeout(r, LEASE_MS + 100));
  return data;
}

test('chat runs the loop: a tool call with records and audit, events on the three channels, durable state', async () => {
  const store = await freshStore();
  const toolRegistry = tools();
  const agent = await Agent.create({ agentId: 'calc', model: adder(), tools: ['add'] }, { store, toolRegistry });
  const r = await agent.chat('what is 2+3?');
  assert.equal(r.status, 'ok');
  assert.equal(r.text, 'sum=5');
  assert.deepEqual(r.permissionIds, []);
  assert.deepEqual((await agent.messages()).map((m) => m.role), ['user', 'assistant', 'toolResult', 'assistant']);
  const [call] = await agent.toolCalls();
  assert.equal(call.state, 'COMPLETED');
  assert.deepEqual(call.input, { a: 2, b: 3 });
  assert.deepEqual(call.result, { sum: 5 });
  assert.deepEqual(call.audit.map((a) => a.state), ['PENDING', 'EXECUTING', 'COMPLETED']);
  const st = await agent.status();
  assert.equal(st.state, 'READY');
  assert.equal(st.breakpoint, 'READY');
  assert.equal(st.lastSfpIndex, 3);
  const evs = await events(agent);
  const types = evs.map((e) => e.type);
  for (const t of ['tool:start', 'tool:end', 'tool_executed', 'text_chunk', 'done', 'step_complete', 'breakpoint_changed', 'state_changed']) {
    assert.ok(types.includes(t), `${t} in ${types}`);
  }
  assert.ok(types.indexOf('tool:start') < types.indexOf('tool:end'));
  const bps = evs.filter((e) => e.type === 'breakpoint_changed').map((e) => e.current);
  assert.deepEqual(bps.slice(0, 7), ['PRE_MODEL', 'STREAMING_MODEL', 'TOOL_PENDING', 'PRE_TOOL', 'TOOL_EXECUTING', 'POST_TOOL', 'PRE_MODEL']);
  assert.ok(evs.every((e, i) => i === 0 || e.seq > evs[i - 1].seq));
  assert.equal(r.last.seq, evs.find((e) => e.type === 'done').seq);
  await agent.close();
  // Everything is in the store, in pi format.
  if (!PG) {
    const s = await SessionLoader.open(join(store.dir, 'calc', 'session.jsonl'));
    assert.equal(s.getContext().length, 4);
  }
  const again = await Agent.resume('calc', { model: adder() }, { store, toolRegistry });
  assert.deepEqual((await again.messages()).map((m) => m.role), ['user', 'assistant', 'toolResult', 'assistant']);
  assert.equal((await again.toolCalls())[0].state, 'COMPLETED');
  await again.close();
});

test('crash resume seals a call killed while EXECUTING (SIGKILL), from its records: note, recommendations, events replayable', async () => {
  const store = await freshStore();
  await runAndKill(store, 'crashy', 'run', 'TOOL_RUNNING');
  const toolRegistry = tools();
  const before = await openLog(store, 'crashy');
  const lastBefore = await before.lastBookmark();
  await before.close();
  const agent = await Agent.resume('crashy', { model: new ScriptedProvider([{ text: 'recovered' }]) }, { store, toolRegistry }, { strategy: 'crash' });
  const [call] = await agent.toolCalls();
  assert.equal(call.state, 'SEALED');
  assert.deepEqual(call.audit.map((a) => a.state), ['PENDING', 'EXECUTING', 'SEALED']);
  const msgs = await agent.messages();
  const result = msgs.at(-1);
  assert.equal(result.role, 'toolResult');
  assert.equal(result.toolCallId, 'call_slow_1');
  assert.equal(result.isError, true);
  assert.match(result.content[0].text, /^\{"ok":false,"error":"[^"]+","data":\{/, "Kode's member order");
  const payload = JSON.parse(result.content[0].text);
  assert.match(payload.error, /interrupted during execution/);
  assert.deepEqual(payload.recommendations, ['Check for possible side effects of the tool', 'Confirm external system state before retrying']);
  assert.equal(payload.data.status, 'EXECUTING');
  // Events after the crash point, read from storage by a subscription started after resume.
  const evs = await events(agent, lastBefore.seq);
  const resumed = evs.find((e) => e.type === 'agent_resumed');
  assert.equal(resumed.strategy, 'crash');
  assert.equal(resumed.breakpoint, 'TOOL_EXECUTING', 'the persisted breakpoint is where the agent was');
  assert.equal(resumed.sealed.length, 1);
  assert.equal(resumed.sealed[0].id, 'call_slow_1');
  assert.equal(resumed.sealed[0].priorState, 'EXECUTING');
  const ends = evs.filter((e) => e.type === 'tool:end');
  assert.equal(ends.length, 1);
  assert.equal(ends[0].call.state, 'SEALED');
  assert.ok(evs[0].seq > lastBefore.seq);
  // The conversation goes on from a valid transcript.
  const r = await agent.chat('go on');
  assert.equal(r.text, 'recovered');
  await agent.close();
});

test('crash resume seals calls in PENDING, APPROVAL_REQUIRED and APPROVED, and calls only the transcript knows', FILES, async () => {
  const store = await freshStore();
  const toolRegistry = tools();
  const agent = await Agent.create({ agentId: 'states', model: new ScriptedProvider([{ text: 'hi' }]), tools: ['echo'] }, { store, toolRegistry });
  await agent.chat('hello');
  await agent.close();
  // The session as a crash leaves it: one answer asking for four calls, records in each open state.
  const w = await SessionWriter.open(join(store.dir, 'states', 'session.jsonl'));
  const calls = ['c_pending', 'c_approval', 'c_approved', 'c_transcript'];
  await w.append(answerEntry(calls.map((id) => ({ type: 'toolCall', id, name: 'echo', arguments: { id } })), Date.now()));
  const rec = (id, state) => w.append({ type: 'custom', customType: 'forkpoint.toolcall', data: { id, name: 'echo', state, at: Date.now() } });
  for (const id of calls.slice(0, 3)) await rec(id, 'PENDING');
  await rec('c_approval', 'APPROVAL_REQUIRED');
  await rec('c_approved', 'APPROVAL_REQUIRED');
  await rec('c_approved', 'APPROVED');
  await w.close();

  const manual = await Agent.resume('states', { model: new ScriptedProvider([]) }, { store, toolRegistry }, { strategy: 'manual' });
  assert.equal((await manual.messages()).at(-1).role, 'assistant', 'manual seals nothing');
  assert.deepEqual((await manual.status()).state, 'PAUSED');
  await manual.close();

  const agent2 = await Agent.resume('states', { model: new ScriptedProvider([{ text: 'after' }]) }, { store, toolRegistry }, { strategy: 'crash' });
  const msgs = await agent2.messages();
  const results = msgs.slice(-4);
  assert.deepEqual(results.map((m) => m.toolCallId), calls, 'one error result per call, in order, right after the answer');
  const byId = Object.fromEntries(results.map((m) => [m.toolCallId, JSON.parse(m.content[0].text)]));
  assert.match(byId.c_pending.error, /just before execution/);
  assert.deepEqual(byId.c_pending.recommendations, ['Confirm tool parameters are correct', 'Re-trigger the tool to continue']);
  assert.match(byId.c_approval.error, /awaiting approval/);
  assert.deepEqual(byId.c_approval.recommendations, ['Confirm if approval is still required', 'Re-trigger the tool and complete approval to continue']);
  assert.match(byId.c_approved.error, /approved but not yet executed/);
  assert.deepEqual(byId.c_approved.recommendations, ['Confirm the tool input is still valid', 'Re-trigger the tool to execute']);
  assert.match(byId.c_transcript.error, /without a result or a record/);
  assert.equal(byId.c_transcript.data.recorded, false);
  const states = Object.fromEntries((await agent2.toolCalls()).map((c) => [c.id, c.state]));
  assert.deepEqual(states, { c_pending: 'SEALED', c_approval: 'SEALED', c_approved: 'SEALED', c_transcript: 'SEALED' });
  const evs = await events(agent2);
  const resumed = evs.filter((e) => e.type === 'agent_resumed');
  assert.equal(resumed.at(-1).sealed.length, 4);
  assert.equal(evs.filter((e) => e.type === 'tool:end' && e.sealed).length, 4);
  assert.equal((await agent2.chat('continue')).text, 'after');
  await agent2.close();
});

test('bookmarks strictly increase across crashes and resumes; lastBookmark survives resume', async () => {
  const store = await freshStore();
  const toolRegistry = tools();
  const seen = [];
  let last = 0;
  for (let round = 0; round < 3; round++) {
    if (round === 0) await runAndKill(store, 'multi', 'run', 'TOOL_RUNNING');
    const a = await Agent.resume('multi', { model: new ScriptedProvider([{ text: `r${round}`, toolCalls: [{ name: 'echo', arguments: { round } }] }, { text: 'ok' }]) }, { store, toolRegistry }, { strategy: 'crash' });
    const info = await a.info();
    assert.ok(info.lastBookmark.seq > last, 'lastBookmark survives and grows');
    await a.chat(`round ${round}`);
    const evs = await events(a, last);
    for (const e of evs) seen.push(e.seq);
    last = (await a.info()).lastBookmark.seq;
    await a.close();
  }
  assert.ok(seen.every((s, i) => i === 0 || s > seen[i - 1]), 'no seq repeats');
  const log = await openLog(store, 'multi');
  const all = (await log.readSince(null)).map((e) => e.seq);
  assert.equal(new Set(all).size, all.length);
  assert.ok(all.every((s, i) => i === 0 || s === all[i - 1] + 1));
  await log.close();
});

test('approvals: pause, decide allow/deny, PERMISSION_NOT_PENDING; resumeFromStore applies overrides for real', async () => {
  const store = await freshStore();
  const toolRegistry = tools();
  const script = () =>
    new ScriptedProvider([
      { toolCalls: [{ id: 'p1', name: 'add', arguments: { a: 1, b: 1 } }] },
      { text: 'done one' },
      { toolCalls: [{ id: 'p2', name: 'add', arguments: { a: 2, b: 2 } }] },
      { text: 'done two' },
    ]);
  const agent = await Agent.create({ agentId: 'ask', model: script(), tools: ['add'], permission: { mode: 'approval' } }, { store, toolRegistry });
  const required = [];
  agent.on('permission_required', (e) => required.push(e.call.id));
  const r = await agent.chat('add');
  assert.equal(r.status, 'paused');
  assert.deepEqual(r.permissionIds, ['p1']);
  assert.equal((await agent.status()).breakpoint, 'AWAITING_APPROVAL');
  await rejectsCode(agent.decide('nope', 'allow'), 'PERMISSION_NOT_PENDING');
  await agent.decide('p1', 'allow', 'fine');
  await agent.idle();
  assert.equal((await agent.messages()).at(-1).content[0].text, 'done one');
  assert.deepEqual(required, ['p1']);
  const c1 = (await agent.toolCalls()).find((c) => c.id === 'p1');
  assert.deepEqual(c1.audit.map((a) => a.state), ['PENDING', 'APPROVAL_REQUIRED', 'APPROVED', 'EXECUTING', 'COMPLETED']);
  await rejectsCode(agent.decide('p1', 'allow'), 'PERMISSION_NOT_PENDING');
  const r2 = await agent.chat('again');
  assert.deepEqual(r2.permissionIds, ['p2']);
  await agent.decide('p2', 'deny', 'not now');
  await agent.idle();
  const c2 = (await agent.toolCalls()).find((c) => c.id === 'p2');
  assert.equal(c2.state, 'DENIED');
  assert.equal((await agent.messages()).at(-1).content[0].text, 'done two');
  await agent.close();

  // Overrides: permission auto, a new model, a smaller tool list — used, and kept.
  const newModel = new ScriptedProvider([{ toolCalls: [{ id: 'p3', name: 'add', arguments: { a: 5, b: 5 } }] }, { text: 'auto now' }], { provider: 'other', model: 'm-2' });
  const resumed = await Agent.resumeFromStore('ask', { store, toolRegistry }, { overrides: { model: newModel, permission: { mode: 'auto' }, tools: ['add', 'echo'] } });
  const r3 = await resumed.chat('add without asking');
  assert.equal(r3.status, 'ok');
  assert.equal(r3.text, 'auto now');
  assert.equal(newModel.requests[0].tools.length, 2);
  await resumed.close();
  const meta = (await store.list()).find((m) => m.agentId === 'ask');
  assert.deepEqual(meta.permission, { mode: 'auto' });
  assert.deepEqual(meta.model, { provider: 'other', model: 'm-2', api: 'scripted' });
  assert.deepEqual(meta.tools, ['add', 'echo']);
  // Without a provider the factory builds one from what the store kept.
  const made = [];
  const factory = (ref) => {
    made.push(ref);
    return new ScriptedProvider([{ text: 'from factory' }], ref);
  };
  const again = await Agent.resumeFromStore('ask', { store, toolRegistry, modelFactory: factory });
  assert.equal((await again.chat('hi')).text, 'from factory');
  assert.deepEqual(made, [{ provider: 'other', model: 'm-2', api: 'scripted' }]);
  await again.close();
});

test('snapshot and fork: no dangling tool call, flat siblings with lineage, forks of forks, parent deletion keeps forks', async () => {
  const store = await freshStore();
  const toolRegistry = tools();
  const model = new ScriptedProvider([{ text: 'first' }, { toolCalls: [{ id: 'open1', name: 'add', arguments: { a: 1, b: 2 } }] }]);
  const agent = await Agent.create({ agentId: 'root', model, tools: ['add'], permission: { mode: 'approval' } }, { store, toolRegistry });
  await agent.chat('one');
  assert.equal(await agent.snapshot('after-one'), 'after-one');
  const paused = await agent.chat('two');
  assert.equal(paused.status, 'paused');
  // The latest safe-fork-point is the user message before the open call.
  const sfp = await agent.snapshot();
  assert.equal(sfp, 'sfp:2');
  const fork = await agent.fork(sfp);
  const fm = await fork.messages();
  assert.deepEqual(fm.map((m) => m.role), ['user', 'assistant', 'user']);
  assert.equal((await fork.toolCalls()).length, 0);
  const fi = await fork.info();
  assert.deepEqual(fi.lineage, ['root']);
  assert.notEqual(fi.agentId, 'root');
  assert.ok(fi.lastBookmark.seq > (await agent.info()).lastBookmark.seq - 1000);
  // The fork goes its own way.
  const forkModel = new ScriptedProvider([{ text: 'fork answer' }]);
  const fork2 = await fork.fork('sfp-2');
  assert.deepEqual((await fork2.info()).lineage, ['root', fi.agentId]);
  await rejectsCode(agent.fork('no-such-snapshot'), 'SNAPSHOT_NOT_FOUND');
  const byLabel = await agent.fork('after-one');
  assert.deepEqual((await byLabel.messages()).map((m) => m.role), ['user', 'assistant']);
  for (const a of [fork, fork2, byLabel, agent]) await a.close();
  const ids = (await store.list()).map((m) => m.agentId);
  assert.equal(ids.length, 4);
  if (!PG) assert.ok(readdirSync(store.dir).every((d) => !d.includes('/')));
  await store.delete('root');
  assert.equal(await store.exists('root'), false);
  assert.equal((await store.list()).length, 3, 'forks stay');
  const reopened = await Agent.resume(fi.agentId, { model: forkModel }, { store, toolRegistry });
  assert.equal((await reopened.chat('go')).text, 'fork answer');
  await reopened.close();
});

test('checkpoints: create, list by execution (exact), lastSuccessful, restore moves the leaf and keeps history', async () => {
  const store = await freshStore();
  const toolRegistry = tools();
  const model = new ScriptedProvider([{ text: 'a1' }, { text: 'a2' }, { text: 'a3' }, (req) => ({ text: `after restore: ${req.messages.length} messages` })]);
  const agent = await Agent.create({ agentId: 'ck', model, tools: [] }, { store, toolRegistry });
  await agent.chat('q1');
  const id1 = await agent.checkpoints.create({ executionId: 'exec-1', stepName: 'first', stepIndex: 0, variables: { x: 1 }, state: { phase: 'one' } });
  assert.equal(id1, 'ckpt-exec-1-0');
  await agent.chat('q2');
  await agent.checkpoints.create({ executionId: 'exec-1', stepName: 'second', stepIndex: 1, variables: { x: 2 }, status: 'failed' });
  await agent.checkpoints.create({ executionId: 'exec-12', stepName: 'other', stepIndex: 0 });
  await agent.chat('q3');
  const groups = agent.checkpoints.list();
  assert.deepEqual(groups.map((g) => [g.executionId, g.checkpoints.map((c) => c.stepIndex)]), [['exec-1', [0, 1]], ['exec-12', [0]]]);
  assert.equal(agent.checkpoints.lastSuccessful('exec-1').id, 'ckpt-exec-1-0');
  assert.equal(agent.checkpoints.lastSuccessful('exec-1', 0), null);
  const cp = await agent.checkpoints.restore('ckpt-exec-1-0');
  assert.deepEqual(cp.variables, { x: 1 });
  assert.deepEqual(agent.restoredCheckpoint, { variables: { x: 1 }, state: { phase: 'one' } });
  const restored = await agent.messages();
  assert.deepEqual(restored.map((m) => m.role), ['user', 'assistant']);
  assert.equal(restored[1].content[0].text, 'a1');
  const r = await agent.chat('q4');
  assert.equal(r.text, 'after restore: 3 messages');
  await rejectsCode(agent.checkpoints.restore('ckpt-none-0'), 'NOT_FOUND');
  await agent.close();
  // History is kept: the abandoned branch is still in the file, and the leaf survives a restart.
  if (!PG) {
    const text = readFileSync(join(store.dir, 'ck', 'session.jsonl'), 'utf8');
    assert.ok(text.includes('"q3"') && text.includes('"type":"leaf"'), 'abandoned branch kept, leaf moved by an entry');
    const s = await SessionLoader.open(join(store.dir, 'ck', 'session.jsonl'));
    assert.equal(s.getContext().length, 4);
  }
  const again = await Agent.resume('ck', { model: new ScriptedProvider([]) }, { store, toolRegistry });
  assert.deepEqual((await again.messages()).map((m) => m.role), ['user', 'assistant', 'user', 'assistant']);
  await again.close();
});

test('one process per agent: AGENT_LOCKED while held (also in this process), free after close or SIGKILL', async () => {
  const store = await freshStore();
  const toolRegistry = tools();
  const a = await Agent.create({ agentId: 'solo', model: new ScriptedProvider([]), tools: [] }, { store, toolRegistry });
  await rejectsCode(Agent.resume('solo', { model: new ScriptedProvider([]) }, { store, toolRegistry }), 'AGENT_LOCKED');
  await a.close();
  const b = await Agent.resume('solo', { model: new ScriptedProvider([]) }, { store, toolRegistry });
  await b.close();
  // Another process holds it; killed, the OS frees the lock.
  const held = new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [child, where(store), 'other', 'hold'], { stdio: ['ignore', 'pipe', 'inherit'] });
    p.stdout.on('data', async (d) => {
      if (!String(d).includes('OPEN')) return;
      try {
        await rejectsCode(Agent.resume('other', { model: new ScriptedProvider([]) }, { store, toolRegistry }), 'AGENT_LOCKED');
        p.kill('SIGKILL');
      } catch (e) {
        p.kill('SIGKILL');
        reject(e);
      }
    });
    p.on('exit', resolve);
  });
  await held;
  if (PG) await new Promise((r) => setTimeout(r, LEASE_MS + 100));
  const c = await Agent.resume('other', { model: new ScriptedProvider([]) }, { store, toolRegistry });
  await c.close();
});

test('ids are validated (INVALID_ID) and nothing outside the store is touched; no credentials reach the disk', FILES, async () => {
  const parent = mkdtempSync(join(tmpdir(), 'fp-ids-'));
  const store = new JSONStore(join(parent, 'store'));
  const toolRegistry = tools();
  for (const id of ['../x', 'a/b', 'a\0b', '', 'x'.repeat(129), '..', '.hidden', 'a..b', 'CON', 'nul.txt']) {
    await rejectsCode(Agent.create({ agentId: id, model: new ScriptedProvider([]) }, { store, toolRegistry }), 'INVALID_ID');
    await rejectsCode(Agent.resume(id, { model: new ScriptedProvider([]) }, { store, toolRegistry }), 'INVALID_ID');
  }
  assert.deepEqual(readdirSync(parent).filter((n) => n !== 'store'), []);
  await rejectsCode(Agent.resume('missing', { model: new ScriptedProvider([]) }, { store, toolRegistry }), 'AGENT_NOT_FOUND');
  // A provider carrying a key, and metadata trying to store one.
  const secret = 'sk-test-DO-NOT-PERSIST-1234567890';
  const model = Object.assign(new ScriptedProvider([{ text: 'ok' }]), { apiKey: secret, headers: { authorization: `Bearer ${secret}` } });
  const agent = await Agent.create(
    { agentId: 'keys', model, tools: [], metadata: { apiKey: secret, openaiApiKey: secret, bearerToken: secret, nested: { Authorization: secret, client_secret: secret }, note: 'kept', maxTokens: 100 } },
    { store, toolRegistry },
  );
  await agent.chat('hello');
  await agent.close();
  const walk = (d) => readdirSync(d).flatMap((n) => (statSync(join(d, n)).isDirectory() ? walk(join(d, n)) : [join(d, n)]));
  for (const f of walk(store.dir)) assert.ok(!readFileSync(f, 'utf8').includes(secret), `${f} holds the key`);
  const kept = JSON.parse(readFileSync(join(store.dir, 'keys', 'meta.json'), 'utf8')).metadata;
  assert.equal(kept.note, 'kept');
  assert.equal(kept.maxTokens, 100);
  // Templates are looked up again on resume.
  const templateRegistry = new TemplateRegistry().register({ id: 'tpl', systemPrompt: 'be brief', tools: ['echo'] });
  const t = await Agent.create({ agentId: 'templated', templateId: 'tpl', model: new ScriptedProvider([]) }, { store, toolRegistry, templateRegistry });
  await t.close();
  await rejectsCode(Agent.resume('templated', { model: new ScriptedProvider([]) }, { store, toolRegistry }), 'TEMPLATE_NOT_FOUND');
  await rejectsCode(Agent.resume('templated', { model: new ScriptedProvider([]) }, { store, toolRegistry, templateRegistry: new TemplateRegistry() }), 'TEMPLATE_NOT_FOUND');
  const ok = await Agent.resume('templated', { model: new ScriptedProvider([]) }, { store, toolRegistry, templateRegistry });
  await ok.close();
  assert.ok(existsSync(join(store.dir, 'templated', 'LOCK')));
  // An id that is taken (0.1.0 said INVALID_ID).
  await rejectsCode(Agent.create({ agentId: 'templated', model: new ScriptedProvider([]) }, { store, toolRegistry }), 'ALREADY_EXISTS');
});

test('interrupt aborts a running tool and seals it with the note; resumeOrCreate creates then resumes', async () => {
  const store = await freshStore();
  const toolRegistry = tools();
  const model = new ScriptedProvider([{ toolCalls: [{ id: 'w1', name: 'wait', arguments: {} }] }, { text: 'after interrupt' }]);
  const agent = await Agent.resumeOrCreate('intr', { model, tools: ['wait'] }, { store, toolRegistry });
  const started = new Promise((resolve) => agent.on('tool:start', resolve));
  const chat = agent.chat('wait for it');
  await started;
  await agent.interrupt({ note: 'user pressed stop' });
  await chat;
  const [c] = await agent.toolCalls();
  assert.equal(c.state, 'SEALED');
  const last = (await agent.messages()).at(-1);
  assert.equal(last.role, 'toolResult');
  assert.equal(JSON.parse(last.content[0].text).error, 'user pressed stop');
  assert.equal((await agent.status()).state, 'READY');
  assert.equal((await agent.chat('next')).text, 'after interrupt');
  await agent.close();
  const again = await Agent.resumeOrCreate('intr', { model: new ScriptedProvider([]), tools: ['wait'] }, { store, toolRegistry });
  assert.equal((await again.messages()).length, 5);
  await again.close();
});

test('per-step persistence cost does not grow with the session (bytes written per step, first 20 vs last 20 of 200)', FILES, async () => {
  const store = await freshStore();
  const toolRegistry = tools();
  const turns = [];
  for (let i = 0; i < 200; i++) turns.push({ toolCalls: [{ name: 'echo', arguments: { i, pad: 'x'.repeat(200) } }] }, { text: `step ${i} done` });
  const agent = await Agent.create({ agentId: 'long', model: new ScriptedProvider(turns), tools: ['echo'] }, { store, toolRegistry });
  const written = () => Number(/wchar:\s+(\d+)/.exec(readFileSync('/proc/self/io', 'utf8'))[1]);
  const perStep = [];
  for (let i = 0; i < 200; i++) {
    const before = written();
    await agent.chat(`step ${i}`);
    perStep.push(written() - before);
  }
  await agent.close();
  const sum = (xs) => xs.reduce((a, b) => a + b, 0);
  const first = sum(perStep.slice(0, 20));
  const last = sum(perStep.slice(-20));
  assert.ok(last <= first * 1.2, `bytes per step grew: first 20 steps ${first} B, last 20 ${last} B`);
  const files = readdirSync(join(store.dir, 'long')).map((f) => statSync(join(store.dir, 'long', f)).size);
  assert.ok(sum(perStep) <= 2 * sum(files) + 200 * 4096, `written ${sum(perStep)} B for a store of ${sum(files)} B`);
});

test('a crash during a model call: the breakpoint says so, and autoRun redoes the call', async () => {
  const store = await freshStore();
  await runAndKill(store, 'mid-model', 'model-hang', 'MODEL_CALL');
  const toolRegistry = tools();
  const model = new ScriptedProvider([{ text: 'answered after the crash' }]);
  const agent = await Agent.resume('mid-model', { model }, { store, toolRegistry }, { strategy: 'crash', autoRun: true });
  await agent.idle();
  const msgs = await agent.messages();
  assert.deepEqual(msgs.map((m) => m.role), ['user', 'assistant']);
  assert.equal(msgs[1].content[0].text, 'answered after the crash');
  assert.equal(model.requests.length, 1);
  const resumed = (await events(agent)).find((e) => e.type === 'agent_resumed');
  assert.equal(resumed.breakpoint, 'STREAMING_MODEL');
  assert.equal(resumed.sealed.length, 0);
  await agent.close();
});

test('tools emit their own events (tool_custom_event) through ctx.emit', async () => {
  const store = await freshStore();
  const toolRegistry = new ToolRegistry().register({
    name: 'progressy',
    description: 'reports progress',
    inputSchema: { type: 'object' },
    run: async (_x, ctx) => {
      await ctx.emit('progress', { percent: 50 });
      return 'ok';
    },
  });
  const model = new ScriptedProvider([{ toolCalls: [{ name: 'progressy', arguments: {} }] }, { text: 'done' }]);
  const agent = await Agent.create({ agentId: 'emitter', model, tools: ['progressy'] }, { store, toolRegistry });
  await agent.chat('go');
  const custom = (await events(agent)).filter((e) => e.type === 'tool_custom_event');
  assert.equal(custom.length, 1);
  assert.equal(custom[0].channel, 'monitor');
  assert.equal(custom[0].toolName, 'progressy');
  assert.equal(custom[0].eventType, 'progress');
  assert.deepEqual(custom[0].data, { percent: 50 });
  await agent.close();
});

test('todos: at most one in progress, persisted, restored on resume, copied on fork', async () => {
  const store = await freshStore();
  const toolRegistry = tools();
  const agent = await Agent.create({ agentId: 'todo', model: new ScriptedProvider([{ text: 'a' }]), tools: [] }, { store, toolRegistry });
  await agent.chat('plan');
  await agent.setTodos([
    { id: 't1', title: 'write', status: 'in_progress' },
    { id: 't2', title: 'test', status: 'pending' },
  ]);
  await assert.rejects(agent.setTodos([{ id: 'a', title: 'x', status: 'in_progress' }, { id: 'b', title: 'y', status: 'in_progress' }]), (e) => e.code === 'INVALID_INPUT');
  await agent.updateTodo({ id: 't1', status: 'completed' });
  await agent.deleteTodo('t2');
  await rejectsCode(agent.deleteTodo('t9'), 'NOT_FOUND');
  assert.deepEqual(agent.getTodos().map((t) => [t.id, t.status]), [['t1', 'completed']]);
  const changed = (await events(agent)).filter((e) => e.type === 'todo_changed');
  assert.equal(changed.length, 3);
  const fork = await agent.fork();
  assert.deepEqual(fork.getTodos().map((t) => [t.id, t.status]), [['t1', 'completed']]);
  await fork.close();
  await agent.close();
  const again = await Agent.resume('todo', { model: new ScriptedProvider([]) }, { store, toolRegistry });
  assert.deepEqual(again.getTodos().map((t) => [t.id, t.status]), [['t1', 'completed']]);
  await again.close();
});

test('a terminal record whose result message never reached the file: resume writes the message from the record; forks stay clean', FILES, async () => {
  const store = await freshStore();
  const toolRegistry = tools();
  const agent = await Agent.create({ agentId: 'torn', model: new ScriptedProvider([{ text: 'hi' }]), tools: ['echo'] }, { store, toolRegistry });
  await agent.chat('hello');
  await agent.close();
  const w = await SessionWriter.open(join(store.dir, 'torn', 'session.jsonl'));
  await w.append(answerEntry([{ type: 'toolCall', id: 'c1', name: 'echo', arguments: { v: 1 } }], Date.now()));
  for (const state of ['PENDING', 'EXECUTING']) await w.append({ type: 'custom', customType: 'forkpoint.toolcall', data: { id: 'c1', name: 'echo', state, at: 1 } });
  await w.append({ type: 'custom', customType: 'forkpoint.toolcall', data: { id: 'c1', name: 'echo', state: 'COMPLETED', at: 2, result: { v: 1 }, isError: false } });
  await w.close();
  const a = await Agent.resume('torn', { model: new ScriptedProvider([{ text: 'next' }]) }, { store, toolRegistry }, { strategy: 'crash' });
  const last = (await a.messages()).at(-1);
  assert.equal(last.role, 'toolResult');
  assert.equal(last.toolCallId, 'c1');
  assert.equal(last.content[0].text, '{"v":1}');
  assert.equal(last.isError, false);
  assert.equal((await a.toolCalls())[0].state, 'COMPLETED');
  const fork = await a.fork();
  const fm = await fork.messages();
  const results = new Set(fm.filter((m) => m.role === 'toolResult').map((m) => m.toolCallId));
  for (const m of fm) for (const b of m.role === 'assistant' ? m.content : []) if (b.type === 'toolCall') assert.ok(results.has(b.id));
  await fork.close();
  assert.equal((await a.chat('go on')).text, 'next');
  await a.close();
});

test('races: a message sent while the loop finishes is answered; two interrupts seal once; decide twice; a result that is not JSON fails once', async () => {
  const store = await freshStore();
  let runs = 0;
  const toolRegistry = tools()
    .register({ name: 'cyclic', description: 'returns a cycle', inputSchema: { type: 'object' }, run: () => { runs++; const o = {}; o.self = o; return o; } });
  const echoAll = { provider: 'p', model: 'm', complete: async (req) => ({ content: [{ type: 'text', text: `re: ${req.messages.at(-1).content[0].text ?? ''}` }] }) };
  const agent = await Agent.create({ agentId: 'race', model: echoAll, tools: ['wait', 'cyclic'] }, { store, toolRegistry });
  for (let i = 0; i < 30; i++) {
    const p = agent.chat(`a${i}`);
    for (let k = 0; k < i % 5; k++) await new Promise((r) => setImmediate(r));
    await agent.send(`b${i}`);
    await p;
    await agent.idle();
    const msgs = await agent.messages();
    assert.equal(msgs.at(-1).role, 'assistant', `round ${i}: the last message is answered`);
  }
  const users = (await agent.messages()).filter((m) => m.role === 'user').length;
  assert.equal(users, 60);
  // Sent exactly while the loop finishes (from the handler of its last event).
  let sent = 0;
  const acks = [];
  const off = agent.on('state_changed', (e) => {
    if (e.state === 'READY' && sent < 5) acks.push(agent.send(`late ${sent++}`));
  });
  await agent.chat('start');
  for (let k = 0; k < 200 && acks.length < 5; k++) {
    await Promise.all(acks);
    await agent.idle();
    await new Promise((r) => setTimeout(r, 2));
  }
  await Promise.all(acks);
  await agent.idle();
  off();
  const late = await agent.messages();
  assert.equal(late.filter((m) => m.role === 'user' && /^late /.test(m.content[0].text)).length, 5);
  assert.equal(late.at(-1).role, 'assistant', 'the message sent while the loop finished was answered');
  await agent.close();

  const model = new ScriptedProvider([{ toolCalls: [{ id: 'w1', name: 'wait', arguments: {} }] }, { toolCalls: [{ id: 'cy', name: 'cyclic', arguments: {} }] }, { text: 'after' }]);
  const b = await Agent.resume('race', { model }, { store, toolRegistry });
  const started = new Promise((r) => b.on('tool:start', r));
  const chat = b.chat('wait');
  await started;
  await Promise.all([b.interrupt({ note: 'one' }), b.interrupt({ note: 'two' })]);
  await chat;
  assert.equal((await b.messages()).filter((m) => m.role === 'toolResult' && m.toolCallId === 'w1').length, 1);
  const r = await b.chat('cycle');
  assert.equal(r.text, 'after');
  assert.equal(runs, 1);
  const cy = (await b.toolCalls()).find((c) => c.id === 'cy');
  assert.equal(cy.state, 'FAILED');
  await b.chat('again');
  assert.equal(runs, 1, 'never run twice');
  await b.close();
});

test('a manual resume never runs a call that was executing at the crash: it is sealed when the loop reaches it', async () => {
  const store = await freshStore();
  await runAndKill(store, 'manual', 'run', 'TOOL_RUNNING');
  let runs = 0;
  const toolRegistry = tools().register({ name: 'slow', description: 'counts', inputSchema: { type: 'object' }, run: () => ++runs });
  const a = await Agent.resume('manual', { model: new ScriptedProvider([{ text: 'ok then' }, { text: 'ok then' }]) }, { store, toolRegistry }, { strategy: 'manual' });
  assert.equal((await a.status()).breakpoint, 'TOOL_EXECUTING');
  const r = await a.chat('continue');
  assert.equal(runs, 0);
  assert.equal(r.text, 'ok then');
  const res = (await a.messages()).find((m) => m.role === 'toolResult' && m.toolCallId === 'call_slow_1');
  assert.match(JSON.parse(res.content[0].text).error, /during execution/);
  await a.close();
});

test('deep JSON: arguments and results as deep as the writer takes are kept; deeper results fail the call, the agent reopens', async () => {
  const store = await freshStore();
  const deep = (n) => {
    let v = { leaf: true };
    for (let i = 0; i < n; i++) v = { d: v };
    return v;
  };
  const toolRegistry = new ToolRegistry()
    .register({ name: 'echo', description: 'echoes', inputSchema: { type: 'object' }, run: (x) => x })
    .register({ name: 'deeper', description: 'too deep', inputSchema: { type: 'object' }, run: () => deep(600) });
  const model = new ScriptedProvider([
    { toolCalls: [{ id: 'd1', name: 'echo', arguments: deep(200) }] },
    { toolCalls: [{ id: 'd2', name: 'deeper', arguments: {} }] },
    { text: 'done' },
  ]);
  const agent = await Agent.create({ agentId: 'deep', model, tools: ['echo', 'deeper'] }, { store, toolRegistry });
  assert.equal((await agent.chat('go')).text, 'done');
  const calls = await agent.toolCalls();
  assert.equal(calls[0].state, 'COMPLETED');
  assert.deepEqual(calls[0].result, deep(200));
  assert.equal(calls[1].state, 'FAILED');
  assert.match((await agent.messages()).find((m) => m.toolCallId === 'd2').content[0].text, /cannot be stored/);
  await agent.close();
  const again = await Agent.resume('deep', { model: new ScriptedProvider([]) }, { store, toolRegistry }, { strategy: 'crash' });
  assert.equal((await again.toolCalls()).length, 2);
  await again.close();
});

test('a call id reused by a later answer starts afresh: a crash before its record seals it, never hands it the old result', FILES, async () => {
  const store = await freshStore();
  const toolRegistry = tools();
  const model = new ScriptedProvider([{ toolCalls: [{ id: 'call_0', name: 'add', arguments: { a: 1, b: 2 } }] }, { text: 'three' }]);
  const agent = await Agent.create({ agentId: 'reuse', model, tools: ['add'] }, { store, toolRegistry });
  await agent.chat('one plus two');
  await agent.close();
  // The next answer reuses call_0; the crash came before its PENDING record.
  const w = await SessionWriter.open(join(store.dir, 'reuse', 'session.jsonl'));
  await w.append({ type: 'message', message: { role: 'user', content: [{ type: 'text', text: 'ten plus twenty' }], timestamp: 1 } });
  await w.append(answerEntry([{ type: 'toolCall', id: 'call_0', name: 'add', arguments: { a: 10, b: 20 } }], 2));
  await w.close();
  const a = await Agent.resume('reuse', { model: new ScriptedProvider([]) }, { store, toolRegistry }, { strategy: 'crash' });
  const last = (await a.messages()).at(-1);
  assert.equal(last.role, 'toolResult');
  assert.equal(last.isError, true);
  assert.match(JSON.parse(last.content[0].text).error, /without a result or a record/);
  const calls = await a.toolCalls();
  assert.deepEqual(calls.map((c) => [c.id, c.state]), [['call_0', 'COMPLETED'], ['call_0', 'SEALED']]);
  await a.close();
});

test('decide works for a call waiting for approval after a checkpoint restore', async () => {
  const store = await freshStore();
  const toolRegistry = tools();
  const model = new ScriptedProvider([{ toolCalls: [{ id: 'c1', name: 'add', arguments: { a: 1, b: 1 } }] }, { text: 'two' }, { text: 'two again' }]);
  const agent = await Agent.create({ agentId: 'restore-approval', model, tools: ['add'], permission: { mode: 'approval' } }, { store, toolRegistry });
  assert.equal((await agent.chat('add')).status, 'paused');
  await agent.checkpoints.create({ executionId: 'e', stepName: 'waiting', stepIndex: 0 });
  await agent.decide('c1', 'allow');
  await agent.idle();
  await agent.checkpoints.restore('ckpt-e-0');
  assert.equal((await agent.toolCalls()).find((c) => c.id === 'c1').state, 'APPROVAL_REQUIRED');
  await agent.decide('c1', 'allow');
  await agent.idle();
  assert.equal((await agent.messages()).at(-1).content[0].text, 'two again');
  await agent.close();
});

// Issue 12, item 8: credentials in meta.json, and the store's redact hook.
const OPENAI_SECRET = 'sk-proj-Ab3dEfGh1jKlMnOpQrStUvWxYz0123456789';
const ANTHROPIC_SECRET = 'sk-ant-api03-Ab3dEfGh1jKlMnOpQrStUvWxYz0123456789';
const GITHUB_SECRET = 'ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';
const JWT_SECRET = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlMTIz';

test('meta.json: every credential spelling of the issue is filtered by key and by value, on create, resume and fork', FILES, async () => {
  const store = await freshStore();
  const toolRegistry = tools();
  const metadata = () => ({
    private_key: 'plain-1', privateKey: 'plain-2', OPENAI_KEY: 'plain-3', key: 'plain-4', bearer: 'plain-5', cookie: 'plain-6',
    passwd: 'plain-7', pwd: 'plain-8', pat: 'plain-9', tokens: { refresh: 'plain-10' }, 'ＡＰＩ＿ＫＥＹ': 'plain-11', 'Api-Key': 'plain-12',
    APIKEY: 'plain-13', 'аpi_kеy': 'plain-14', // Cyrillic а and е
    headers: [['Authorization', `Bearer ${OPENAI_SECRET}`], ['Accept', 'application/json']],
    proxy: `https://user:${ANTHROPIC_SECRET}@proxy.example.com:8080/`,
    repo: `https://${GITHUB_SECRET}@github.com/o/r.git`,
    note: `session ${JWT_SECRET} ok`,
    maxTokens: 4096, max_output_tokens: 1024, tokenCount: 3, tokensUsed: 4, keyboard: 'qwerty', kept: 'kept',
  });
  const model = Object.assign(new ScriptedProvider([{ text: 'ok' }], { model: 'claude-sonnet-4' }), { apiKey: OPENAI_SECRET });
  const agent = await Agent.create({ agentId: 'creds', model, metadata: metadata() }, { store, toolRegistry });
  const onDisk = (id) => readFileSync(join(store.dir, id, 'meta.json'), 'utf8');
  const check = (id) => {
    const text = onDisk(id);
    for (const s of [OPENAI_SECRET, ANTHROPIC_SECRET, GITHUB_SECRET, JWT_SECRET, 'plain-']) assert.ok(!text.includes(s), `${id}/meta.json holds ${s}: ${text}`);
    const m = JSON.parse(text).metadata;
    assert.deepEqual(m, {
      headers: [['Authorization', '[redacted]'], ['Accept', 'application/json']],
      proxy: 'https://[redacted]@proxy.example.com:8080/',
      repo: 'https://[redacted]@github.com/o/r.git',
      note: 'session [redacted] ok',
      maxTokens: 4096, max_output_tokens: 1024, tokenCount: 3, tokensUsed: 4, keyboard: 'qwerty', kept: 'kept',
    });
    assert.equal(JSON.parse(text).model.model, 'claude-sonnet-4');
  };
  check('creds');
  await agent.chat('hi');
  const fork = await agent.fork();
  check(fork.agentId);
  await fork.close();
  await agent.close();
  // resumeFromStore with overrides rewrites meta.json: filtered again.
  const again = await Agent.resumeFromStore('creds', { store, toolRegistry, modelFactory: (ref) => new ScriptedProvider([], ref) }, { overrides: { metadata: metadata() } });
  check('creds');
  await again.close();
  assert.deepEqual((await store.list()).find((m) => m.agentId === 'creds').metadata.headers[0], ['Authorization', '[redacted]']);
});

test('redact hook: tool inputs, results, messages and checkpoint variables are filtered on disk when the store has one, verbatim without', FILES, async () => {
  const run = async (redact) => {
    const store = new JSONStore(mkdtempSync(join(tmpdir(), 'fp-redact-')), redact ? { redact } : {});
    const seen = [];
    const toolRegistry = new ToolRegistry().register({
      name: 'fetch', description: 'fetches', inputSchema: { type: 'object' },
      run: (input) => {
        seen.push(input);
        return { status: 200, echo: input.token };
      },
    });
    const model = new ScriptedProvider([
      { toolCalls: [{ id: 'f1', name: 'fetch', arguments: { url: 'https://api.example.com', token: GITHUB_SECRET } }] },
      { text: 'fetched' },
    ]);
    const agent = await Agent.create({ agentId: 'r', model, tools: ['fetch'] }, { store, toolRegistry });
    assert.equal((await agent.chat(`my key is ${OPENAI_SECRET}`)).text, 'fetched');
    await agent.checkpoints.create({ executionId: 'e', stepName: 's', stepIndex: 0, variables: { apiKey: ANTHROPIC_SECRET, attempt: 1 } });
    await agent.close();
    const session = readFileSync(join(store.dir, 'r', 'session.jsonl'), 'utf8');
    return { seen, session, store };
  };
  const calls = [];
  const hook = (value, where) => {
    calls.push({ kind: where.kind, agentId: where.agentId, toolName: where.toolName });
    return redactSecrets(value);
  };
  const { redactSecrets } = napi;
  const filtered = await run(hook);
  // The tool ran with what the model wrote; the disk holds none of it.
  assert.deepEqual(filtered.seen, [{ url: 'https://api.example.com', token: GITHUB_SECRET }]);
  for (const s of [OPENAI_SECRET, ANTHROPIC_SECRET, GITHUB_SECRET]) assert.ok(!filtered.session.includes(s), `the session holds ${s}`);
  assert.ok(filtered.session.includes('my key is [redacted]'));
  assert.deepEqual(new Set(calls.map((c) => c.kind)), new Set(['userMessage', 'toolInput', 'assistantMessage', 'toolResult', 'checkpointVariables']));
  assert.ok(calls.every((c) => c.agentId === 'r'));
  assert.equal(calls.find((c) => c.kind === 'toolInput').toolName, 'fetch');
  // A resumed agent reads what was stored.
  const back = await Agent.resume('r', { model: new ScriptedProvider([]) }, { store: filtered.store, toolRegistry: new ToolRegistry() });
  const [call] = await back.toolCalls();
  assert.deepEqual(call.input, { url: 'https://api.example.com' });
  assert.deepEqual((await back.checkpoints.restore('ckpt-e-0')).variables, { attempt: 1 });
  await back.close();
  // Without a hook the conversation is stored as it is.
  const verbatim = await run(undefined);
  for (const s of [OPENAI_SECRET, ANTHROPIC_SECRET, GITHUB_SECRET]) assert.ok(verbatim.session.includes(s), `the session lacks ${s}`);
  assert.throws(() => new JSONStore(tmpdir(), { redact: 'yes' }), (e) => e instanceof ForkpointError && e.code === 'INVALID_INPUT');
});

test('redactSecrets: the meta.json filter for any JSON value', () => {
  const { redactSecrets } = napi;
  assert.deepEqual(
    redactSecrets({ apiKey: 'x', nested: [{ Authorization: 'y', url: `https://u:p@h/x`, text: `key ${OPENAI_SECRET}` }], maxTokens: 5, model: 'gpt-4o' }),
    { nested: [{ url: 'https://[redacted]@h/x', text: 'key [redacted]' }], maxTokens: 5, model: 'gpt-4o' },
  );
  assert.equal(redactSecrets(`Bearer ${JWT_SECRET}`), 'Bearer [redacted]');
  assert.equal(redactSecrets(undefined), undefined);
  assert.equal(redactSecrets('claude-sonnet-4'), 'claude-sonnet-4');
});

test('a streaming provider: pieces are text_chunk events as they come, durable before the answer, and not repeated', async () => {
  const store = await freshStore();
  const model = new ScriptedProvider([{ thinking: 'let me think', text: 'Hello, streaming world!' }], { stream: 4 });
  const agent = await Agent.create({ agentId: 'streamer', model, tools: [] }, { store, toolRegistry: tools() });
  const live = [];
  agent.on('progress', (e) => live.push([e.type, e.delta ?? e.text ?? '']));
  const r = await agent.chat('go');
  assert.equal(r.text, 'Hello, streaming world!');
  const deltas = live.filter(([t]) => t === 'text_chunk').map(([, d]) => d);
  assert.ok(deltas.length >= 2, `streamed in pieces: ${JSON.stringify(deltas)}`);
  assert.equal(deltas.join(''), 'Hello, streaming world!');
  assert.equal(live.filter(([t]) => t === 'text_chunk_start').length, 1);
  assert.deepEqual(live.find(([t]) => t === 'text_chunk_end'), ['text_chunk_end', 'Hello, streaming world!']);
  assert.equal(live.filter(([t]) => t === 'think_chunk').map(([, d]) => d).join(''), 'let me think');
  // The log holds every piece, before the answer's end.
  const logged = [];
  for await (const { event } of agent.subscribe(['progress'], { since: null })) {
    logged.push(event.type);
    if (event.type === 'text_chunk_end') break;
  }
  assert.ok(logged.indexOf('text_chunk') < logged.indexOf('text_chunk_end'));
  await agent.close();
});

test('a provider that streams a bad piece or answers with a non-object: the call fails (INVALID_INPUT), the agent is READY and goes on', async () => {
  const store = await freshStore();
  let turn = 0;
  const model = {
    provider: 'p',
    model: 'm',
    async complete(req, { onDelta }) {
      turn++;
      if (turn === 1) onDelta({ index: -1, kind: 'text', text: 'x' });
      await new Promise((r) => setTimeout(r, 5));
      if (turn === 2) return 'not an object';
      return { content: [{ type: 'text', text: `turn ${turn}` }] };
    },
  };
  const agent = await Agent.create({ agentId: 'bad-provider', model }, { store, toolRegistry: tools() });
  await rejectsCode(agent.chat('one'), 'INVALID_INPUT');
  assert.equal((await agent.status()).state, 'READY');
  await rejectsCode(agent.chat('two'), 'INVALID_INPUT');
  assert.equal((await agent.status()).breakpoint, 'READY');
  assert.equal((await agent.chat('three')).text, 'turn 3');
  await agent.close();
});

test('a tool error or a model answer with a lone surrogate: stored with U+FFFD, the call ends, the agent goes on', async () => {
  const store = await freshStore();
  const toolRegistry = tools().register({ name: 'weird', description: 'throws odd text', inputSchema: { type: 'object' }, run: () => { throw new Error('bad \ud83d text'); } });
  let turn = 0;
  const model = {
    provider: 'p',
    model: 'm',
    async complete() {
      turn++;
      if (turn === 1) return { content: [{ type: 'toolCall', id: 'w1', name: 'weird', arguments: {} }] };
      if (turn === 2) return { content: [{ type: 'text', text: 'lone \udc00 surrogate' }] };
      return { content: [{ type: 'text', text: `turn ${turn}` }] };
    },
  };
  const agent = await Agent.create({ agentId: 'surrogates', model, tools: ['weird'] }, { store, toolRegistry });
  // Lone surrogates become U+FFFD: the text reaches the store and the model.
  assert.equal((await agent.chat('go')).text, 'lone \ufffd surrogate');
  const call = (await agent.toolCalls()).find((c) => c.id === 'w1');
  assert.equal(call.state, 'FAILED');
  assert.equal(call.result.error, 'bad \ufffd text');
  const st = await agent.status();
  assert.equal(st.state, 'READY');
  assert.equal((await agent.chat('again')).text, 'turn 3');
  await agent.close();
});

test('a lying, torn, FIFO or /dev/zero state.json never hangs or misleads a resume: it falls back to the whole session', FILES, async () => {
  const store = await freshStore();
  const deps = { store, toolRegistry: tools() };
  const a = await Agent.create({ agentId: 'st', model: new ScriptedProvider([{ text: 'a' }]) }, deps);
  await a.chat('hi');
  await a.close();
  const st = join(store.dir, 'st', 'state.json');
  const cases = [
    ['fifo', () => execFileSync('mkfifo', [st])],
    ['/dev/zero', () => symlinkSync('/dev/zero', st)],
    ['lying offsets', () => writeFileSync(st, JSON.stringify({ v: 1, sessionLen: 1e8, marks: { sfpOffset: 5, sfpId: 'zz', before: { messages: 1, users: 1, assistants: 0 }, todos: [1, 999999], queued: [] } }))],
    ['torn', () => writeFileSync(st, '{"v":1,"sessionLen":10')],
  ];
  let expected = 2;
  for (const [name, make] of cases) {
    rmSync(st, { force: true });
    make();
    const b = await Agent.resume('st', { model: new ScriptedProvider([{ text: 'b' }]) }, deps, { strategy: 'crash' });
    assert.equal((await b.info()).messageCount, expected, name);
    assert.equal((await b.chat('again')).text, 'b', name);
    expected += 2;
    await b.close();
  }
  assert.equal(readlinkOr(st), null, 'the state file was replaced, not written through a link');
});
const readlinkOr = (p) => {
  try {
    return readlinkSync(p);
  } catch {
    return null;
  }
};

test('an agent created without an id gets one (agt-…) and reopens by it', async () => {
  const store = await freshStore();
  const a = await Agent.create({ model: new ScriptedProvider([{ text: 'hi' }]) }, { store, toolRegistry: tools() });
  const b = await Agent.create({ model: new ScriptedProvider([{ text: 'hi' }]) }, { store, toolRegistry: tools() });
  assert.match(a.agentId, /^agt-[0-9a-z]+$/);
  assert.notEqual(a.agentId, b.agentId);
  assert.equal((await a.chat('x')).text, 'hi');
  const id = a.agentId;
  await a.close();
  await b.close();
  const again = await Agent.resume(id, { model: new ScriptedProvider([]) }, { store, toolRegistry: tools() });
  assert.equal((await again.messages()).length, 2);
  await again.close();
});
