// One agent-benchmark measurement in a fresh process:
// `node bench/agent-worker.mjs <mode> <dir> <steps>`.
//   fp-run / js-run      run <steps> steps (one tool call each), report per-step time and bytes written
//   fp-resume / js-resume  resume the agent a run left in <dir>
import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync, appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Agent, JSONStore, ToolRegistry, ScriptedProvider } = require('forkpoint');
const [mode, dir, stepsArg] = process.argv.slice(2);
const steps = Number(stepsArg);
const peakKb = () => Number(/VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0);
const written = () => Number(/wchar:\s+(\d+)/.exec(readFileSync('/proc/self/io', 'utf8'))[1]);
const dirSize = (d) => readdirSync(d).reduce((n, f) => {
  const p = join(d, f);
  const s = statSync(p);
  return n + (s.isDirectory() ? dirSize(p) : s.size);
}, 0);

// The same conversation for both: a question, a tool call with ~300 bytes of
// arguments, its ~600-byte result, a ~200-byte answer.
const question = (i) => `Step ${i}: look at file src/module_${i}.ts and tell me what it exports.`;
const args = (i) => ({ path: `src/module_${i}.ts`, reason: 'x'.repeat(260) });
const result = (i) => ({ path: `src/module_${i}.ts`, exports: Array.from({ length: 12 }, (_, k) => `export_${i}_${k}`), body: 'y'.repeat(400) });
const answer = (i) => `module_${i}.ts exports twelve functions; ${'z'.repeat(150)}`;

function tools() {
  return new ToolRegistry().register({ name: 'read_file', description: 'reads a file', inputSchema: { type: 'object' }, run: ({ path }) => result(Number(/(\d+)/.exec(path)[1])) });
}

function model() {
  let i = 0;
  return new ScriptedProvider(
    Array.from({ length: 2 * steps }, (_, k) => (k % 2 === 0 ? () => ({ toolCalls: [{ id: `call_${i}`, name: 'read_file', arguments: args(i) }] }) : () => ({ text: answer(i++) }))),
  );
}

async function fpRun() {
  const store = new JSONStore(dir);
  const agent = await Agent.create({ agentId: 'bench', model: model(), tools: ['read_file'] }, { store, toolRegistry: tools() });
  const ms = [];
  const bytes = [];
  for (let i = 0; i < steps; i++) {
    const w0 = written();
    const t0 = performance.now();
    await agent.chat(question(i));
    ms.push(performance.now() - t0);
    bytes.push(written() - w0);
  }
  await agent.close();
  return { ms, bytes, storeBytes: dirSize(join(dir, 'bench')) };
}

// A long agent built by appending: `steps` steps written as the agent writes
// them (messages, tool-call records, events), then a few real steps on top, so
// the store ends as a running agent leaves it (resume state included).
async function fpBig() {
  const store = new JSONStore(dir);
  const seed = await Agent.create({ agentId: 'bench', model: model(), tools: ['read_file'] }, { store, toolRegistry: tools() });
  await seed.close();
  const base = join(dir, 'bench');
  const iso = (t) => new Date(t).toISOString();
  const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
  let parent = null;
  let seq = readFileSync(join(base, 'events.jsonl'), 'utf8').trim().split('\n').length;
  let t = Date.now() - steps * 1000;
  const lines = [];
  const events = [];
  const entry = (id, e) => {
    lines.push(JSON.stringify({ type: e.type, id, parentId: parent, timestamp: iso(t), ...e, type: undefined }).replace('{', `{"type":${JSON.stringify(e.type)},`).replace(',"type":undefined', ''));
    parent = id;
  };
  const ev = (channel, e) => events.push(JSON.stringify({ seq: ++seq, timestamp: t, channel, ...e }));
  const rec = (i, state, extra) => ({ type: 'custom', customType: 'forkpoint.toolcall', data: { id: `call_${i}`, name: 'read_file', state, at: t, ...extra } });
  const flush = () => {
    appendFileSync(join(base, 'session.jsonl'), lines.join('\n') + '\n');
    appendFileSync(join(base, 'events.jsonl'), events.join('\n') + '\n');
    lines.length = 0;
    events.length = 0;
  };
  for (let i = 0; i < steps; i++, t += 1000) {
    const n = i.toString(16).padStart(6, '0');
    entry(`u${n}`, { type: 'message', queueId: `msg-${n}`, message: { role: 'user', content: [{ type: 'text', text: question(i) }], timestamp: t } });
    ev('monitor', { type: 'state_changed', state: 'WORKING' });
    ev('monitor', { type: 'breakpoint_changed', previous: 'READY', current: 'PRE_MODEL', timestamp: t });
    ev('monitor', { type: 'breakpoint_changed', previous: 'PRE_MODEL', current: 'STREAMING_MODEL', timestamp: t });
    entry(`a${n}`, { type: 'message', message: { role: 'assistant', api: 'scripted', provider: 'scripted', model: 'scripted-1', usage, stopReason: 'toolUse', timestamp: t, content: [{ type: 'toolCall', id: `call_${i}`, name: 'read_file', arguments: args(i) }] } });
    entry(`p${n}`, rec(i, 'PENDING', { input: args(i) }));
    ev('progress', { type: 'token_usage', inputTokens: 0, outputTokens: 0, totalTokens: 0 });
    ev('monitor', { type: 'breakpoint_changed', previous: 'STREAMING_MODEL', current: 'TOOL_PENDING', timestamp: t });
    entry(`e${n}`, rec(i, 'EXECUTING', { note: 'execution start' }));
    ev('progress', { type: 'tool:start', call: { id: `call_${i}`, name: 'read_file', state: 'EXECUTING' } });
    const r = result(i);
    entry(`r${n}`, { type: 'message', message: { role: 'toolResult', toolCallId: `call_${i}`, toolName: 'read_file', content: [{ type: 'text', text: JSON.stringify(r) }], isError: false, timestamp: t } });
    entry(`c${n}`, rec(i, 'COMPLETED', { note: 'execution complete', durationMs: 1, result: r, isError: false }));
    ev('progress', { type: 'tool:end', call: { id: `call_${i}`, name: 'read_file', state: 'COMPLETED' } });
    ev('monitor', { type: 'breakpoint_changed', previous: 'TOOL_EXECUTING', current: 'POST_TOOL', timestamp: t });
    entry(`t${n}`, { type: 'message', message: { role: 'assistant', api: 'scripted', provider: 'scripted', model: 'scripted-1', usage, stopReason: 'stop', timestamp: t, content: [{ type: 'text', text: answer(i) }] } });
    ev('progress', { type: 'text_chunk', step: i + 1, delta: answer(i) });
    ev('control', { type: 'done', step: i + 1, reason: 'completed' });
    ev('monitor', { type: 'breakpoint_changed', previous: 'POST_TOOL', current: 'READY', timestamp: t });
    ev('monitor', { type: 'state_changed', state: 'READY' });
    if (lines.length > 20000) flush();
  }
  flush();
  // A few real steps: the agent loads it whole once and writes its resume state.
  const agent = await Agent.resume('bench', { model: model() }, { store, toolRegistry: tools() }, { strategy: 'crash' });
  for (let i = 0; i < 5; i++) await agent.chat(question(steps + i));
  await agent.close();
  return { ms: [], bytes: [], storeBytes: dirSize(base) };
}

async function fpResume() {
  const store = new JSONStore(dir);
  const deps = { store, toolRegistry: tools() };
  const m = model(); // built before the clock starts (its script has 2 × steps turns)
  const t0 = performance.now();
  const agent = await Agent.resume('bench', { model: m }, deps, { strategy: 'crash' });
  const ms = performance.now() - t0;
  const n = (await agent.info()).messageCount;
  const t1 = performance.now();
  const msgs = await agent.messages();
  const messagesMs = performance.now() - t1;
  if (msgs.length !== n) throw new Error('message count');
  await agent.close();
  return { ms, messagesMs, messages: n };
}

// Plain JS, persisting the way Kode's JSONStore does (research/kode.md §2.3, §7.1):
// per save the whole array goes to a WAL, then to a temporary file renamed over
// messages.json (pretty), then the WAL is removed; a tool step saves messages 3
// times plus the tool-call records, meta.json is rewritten, events are appended.
// No fsync (Kode has none).
function kodeSave(base, name, data) {
  writeFileSync(join(base, `${name}.wal`), JSON.stringify({ data, timestamp: Date.now() }));
  writeFileSync(join(base, `${name}.json.tmp`), JSON.stringify(data, null, 2));
  renameSync(join(base, `${name}.json.tmp`), join(base, `${name}.json`));
  unlinkSync(join(base, `${name}.wal`));
}

async function jsRun() {
  const base = join(dir, 'bench');
  mkdirSync(join(base, 'runtime'), { recursive: true });
  mkdirSync(join(base, 'events'), { recursive: true });
  const rt = join(base, 'runtime');
  const messages = [];
  const records = [];
  let seq = 0;
  const event = (channel, e) => appendFileSync(join(base, 'events', `${channel}.log`), JSON.stringify({ cursor: seq, bookmark: { seq, timestamp: Date.now() }, event: { ...e, channel, bookmark: { seq: seq++, timestamp: Date.now() } } }) + '\n');
  const meta = () => writeFileSync(join(base, 'meta.json'), JSON.stringify({ agentId: 'bench', messageCount: messages.length, lastBookmark: { seq, timestamp: Date.now() }, metadata: { tools: ['read_file'] } }, null, 2));
  const ms = [];
  const bytes = [];
  for (let i = 0; i < steps; i++) {
    const w0 = written();
    const t0 = performance.now();
    messages.push({ role: 'user', content: [{ type: 'text', text: question(i) }] });
    kodeSave(rt, 'messages', messages);
    meta();
    messages.push({ role: 'assistant', content: [{ type: 'tool_use', id: `call_${i}`, name: 'read_file', input: args(i) }] });
    kodeSave(rt, 'messages', messages);
    meta();
    event('progress', { type: 'tool:start', call: { id: `call_${i}` } });
    const r = result(i);
    records.push({ id: `call_${i}`, name: 'read_file', input: args(i), state: 'COMPLETED', result: r, auditTrail: [{ state: 'PENDING' }, { state: 'EXECUTING' }, { state: 'COMPLETED' }] });
    event('progress', { type: 'tool:end', call: { id: `call_${i}` } });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: `call_${i}`, content: JSON.stringify(r) }] });
    kodeSave(rt, 'tool-calls', records);
    kodeSave(rt, 'messages', messages);
    meta();
    messages.push({ role: 'assistant', content: [{ type: 'text', text: answer(i) }] });
    kodeSave(rt, 'messages', messages);
    event('progress', { type: 'text_chunk', delta: answer(i) });
    event('progress', { type: 'done', step: i });
    meta();
    ms.push(performance.now() - t0);
    bytes.push(written() - w0);
  }
  return { ms, bytes, storeBytes: dirSize(base) };
}

async function jsResume() {
  const base = join(dir, 'bench');
  const t0 = performance.now();
  const meta = JSON.parse(readFileSync(join(base, 'meta.json'), 'utf8'));
  // Kode reads messages and tool records twice on resume (initialize() and again).
  let messages;
  for (let k = 0; k < 2; k++) {
    messages = JSON.parse(readFileSync(join(base, 'runtime', 'messages.json'), 'utf8'));
    JSON.parse(readFileSync(join(base, 'runtime', 'tool-calls.json'), 'utf8'));
  }
  const ms = performance.now() - t0;
  return { ms, messages: messages.length, agent: meta.agentId };
}

void fsyncSync;
void openSync;
void closeSync;
const ops = { 'fp-big': fpBig, 'fp-run': fpRun, 'fp-resume': fpResume, 'js-run': jsRun, 'js-resume': jsResume };
try {
  const r = await ops[mode]();
  process.stdout.write(JSON.stringify({ ...r, rssPeakKb: peakKb() }) + '\n');
} catch (e) {
  process.stdout.write(JSON.stringify({ error: String(e?.stack ?? e).slice(0, 500) }) + '\n');
}
