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

async function fpResume() {
  const store = new JSONStore(dir);
  const t0 = performance.now();
  const agent = await Agent.resume('bench', { model: model() }, { store, toolRegistry: tools() }, { strategy: 'crash' });
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
const ops = { 'fp-run': fpRun, 'fp-resume': fpResume, 'js-run': jsRun, 'js-resume': jsResume };
try {
  const r = await ops[mode]();
  process.stdout.write(JSON.stringify({ ...r, rssPeakKb: peakKb() }) + '\n');
} catch (e) {
  process.stdout.write(JSON.stringify({ error: String(e?.stack ?? e).slice(0, 500) }) + '\n');
}
