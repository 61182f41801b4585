// Agent stores written by forkpoint 0.1.0 open and resume with this version
// (tests/fixtures/agent-store-0.1.0-node, made by the 0.1.0 Node Agent).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Agent, JSONStore, ToolRegistry, ScriptedProvider, SessionLoader } = require('forkpoint');
const fixture = new URL('../fixtures/agent-store-0.1.0-node/store/', import.meta.url).pathname;

function copy() {
  const dir = mkdtempSync(join(tmpdir(), 'fp-compat-'));
  cpSync(fixture, dir, { recursive: true });
  return new JSONStore(dir);
}

const tools = (runs) =>
  new ToolRegistry()
    .register({ name: 'echo', description: 'echoes', inputSchema: { type: 'object' }, run: (x) => ({ echoed: x }) })
    .register({ name: 'danger', description: 'needs a decision', requiresApproval: true, inputSchema: { type: 'object' }, run: () => (runs.push('danger'), 'done') })
    .register({ name: 'slow', description: 'never ends', inputSchema: { type: 'object' }, run: () => (runs.push('slow'), 'fast now') });

const lastSeq = (store, id) => {
  const lines = readFileSync(join(store.dir, id, 'events.jsonl'), 'utf8').trim().split('\n');
  return JSON.parse(lines.at(-1)).seq;
};

test('a 0.1.0 agent waiting for a decision resumes: decide, run, deliver the queued message; todos, checkpoints, snapshots, fork kept', async () => {
  const store = copy();
  assert.deepEqual(store.list().map((m) => m.agentId).sort(), readdirSync(fixture).sort());
  const before = lastSeq(store, 'fixture-bot');
  const runs = [];
  const model = new ScriptedProvider([{ text: 'done with danger' }, { text: 'here is the story' }]);
  const a = await Agent.resume('fixture-bot', { model }, { store, toolRegistry: tools(runs) });
  const st = await a.status();
  assert.equal(st.state, 'PAUSED');
  assert.equal(st.breakpoint, 'AWAITING_APPROVAL');
  assert.deepEqual(a.getTodos().map((t) => [t.id, t.status]), [['t1', 'in_progress'], ['t2', 'pending']]);
  assert.equal(a.checkpoints.list()[0].checkpoints[0].id, 'ckpt-run-1-1');
  const calls = await a.toolCalls();
  assert.deepEqual(calls.map((c) => [c.id, c.state]), [['call_echo_1', 'COMPLETED'], ['call_danger_1', 'APPROVAL_REQUIRED']]);
  const seen = [];
  a.on('tool:end', (e) => seen.push(e.call.id));
  await a.decide('call_danger_1', 'allow');
  await a.idle();
  assert.deepEqual(runs, ['danger']);
  assert.deepEqual(seen, ['call_danger_1']);
  const msgs = await a.messages();
  assert.ok(msgs.some((m) => m.role === 'user' && m.content[0].text === 'and then tell me about it'), 'the queued message is delivered');
  assert.equal(msgs.at(-1).content[0].text, 'here is the story');
  // Events continue the 0.1.0 log's seq.
  const events = [];
  for await (const { event } of a.subscribe(undefined, { since: before })) {
    events.push(event);
    if (event.type === 'state_changed' && event.state === 'READY') break;
  }
  assert.ok(events[0].seq === before + 1 && events.every((e, i) => i === 0 || e.seq === events[i - 1].seq + 1));
  const fork = await a.fork('after-echo');
  assert.deepEqual((await fork.info()).lineage, ['fixture-bot']);
  await fork.close();
  await a.close();
  // The 0.1.0 fork opens too, and every session still loads strictly.
  const forkId = readdirSync(fixture).find((n) => n.startsWith('fixture-bot-fork-'));
  const f = await Agent.resume(forkId, { model: new ScriptedProvider([]) }, { store, toolRegistry: tools([]) });
  assert.deepEqual((await f.info()).lineage, ['fixture-bot']);
  assert.ok((await f.messages()).length >= 4);
  await f.close();
  for (const id of readdirSync(store.dir)) await SessionLoader.open(join(store.dir, id, 'session.jsonl'));
});

test('a 0.1.0 agent killed while its tool ran: crash resume seals the call, then it goes on', async () => {
  const store = copy();
  const runs = [];
  const a = await Agent.resume('crashed-bot', { model: new ScriptedProvider([{ text: 'sealed, moving on' }]) }, { store, toolRegistry: tools(runs) }, { strategy: 'crash' });
  const c = (await a.toolCalls()).find((x) => x.id === 'call_slow_1');
  assert.equal(c.state, 'SEALED');
  const res = (await a.messages()).find((m) => m.role === 'toolResult' && m.toolCallId === 'call_slow_1');
  assert.match(JSON.parse(res.content[0].text).error, /during execution/);
  assert.equal((await a.chat('go on')).text, 'sealed, moving on');
  assert.deepEqual(runs, [], 'a call running at the crash is never run again');
  await a.close();
});
