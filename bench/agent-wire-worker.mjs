// One measurement of bench/agent-wire.mjs in a fresh process:
//   node agent-wire-worker.mjs build DIR ROUNDS   an agent store of ROUNDS tool rounds (~9 KiB each), written as the agent writes them
//   node agent-wire-worker.mjs fp DIR URL STEPS   forkpoint: resume with createProvider, one step (loads and converts the whole context), then STEPS timed steps
//   node agent-wire-worker.mjs js DIR URL STEPS   plain JS: the session's messages in memory; each step maps them, JSON.stringify, fetch, reads the stream
import { appendFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { baseline } from './normalize-baseline.mjs';

const require = createRequire(import.meta.url);
const { Agent, JSONStore, ToolRegistry, ScriptedProvider, createProvider } = require('forkpoint');
const [mode, dir, arg, stepsArg] = process.argv.slice(2);
const MODEL = 'claude-sonnet-4-5';
const tools = () => new ToolRegistry().register({ name: 'read_file', description: 'reads a file', inputSchema: { type: 'object' }, run: () => ({ ok: true }) });
const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };

async function build(rounds) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const seed = await Agent.create({ agentId: 'wire', model: new ScriptedProvider([]), tools: ['read_file'] }, { store: new JSONStore(dir), toolRegistry: tools() });
  await seed.close();
  const file = join(dir, 'wire', 'session.jsonl');
  let parent = null;
  let t = Date.now() - rounds * 1000;
  const lines = [];
  const entry = (id, message) => {
    lines.push(JSON.stringify({ type: 'message', id, parentId: parent, timestamp: new Date(t).toISOString(), message }));
    parent = id;
  };
  const text = 'lorem ipsum "quoted" dolor sit amet\n'.repeat(256);
  const origin = { api: 'anthropic-messages', provider: 'anthropic', model: MODEL, usage };
  for (let i = 0; i < rounds; i++, t += 1000) {
    const n = i.toString(16).padStart(6, '0');
    entry(`u${n}`, { role: 'user', content: [{ type: 'text', text: `question ${i}` }], timestamp: t });
    entry(`a${n}`, { role: 'assistant', ...origin, stopReason: 'toolUse', timestamp: t, content: [{ type: 'toolCall', id: `toolu_${n}`, name: 'read_file', arguments: { path: `f${i}` } }] });
    entry(`r${n}`, { role: 'toolResult', toolCallId: `toolu_${n}`, toolName: 'read_file', content: [{ type: 'text', text }], isError: false, timestamp: t });
    entry(`t${n}`, { role: 'assistant', ...origin, stopReason: 'stop', timestamp: t, content: [{ type: 'text', text: `answer ${i}` }] });
    if (lines.length > 20000) appendFileSync(file, lines.splice(0).join('\n') + '\n');
  }
  appendFileSync(file, lines.join('\n') + '\n');
  return {};
}

async function fp(url, steps) {
  const model = createProvider({ provider: 'anthropic', model: MODEL, apiKey: 'sk-bench', baseURL: url });
  const agent = await Agent.resume('wire', { model }, { store: new JSONStore(dir), toolRegistry: tools() }, { strategy: 'crash' });
  let t0 = performance.now();
  await agent.chat('first');
  const firstMs = performance.now() - t0;
  const ms = [];
  for (let i = 0; i < steps; i++) {
    t0 = performance.now();
    await agent.chat(`next ${i}`);
    ms.push(performance.now() - t0);
  }
  await agent.close();
  return { firstMs, ms };
}

async function js(url, steps) {
  const t0 = performance.now();
  const msgs = readFileSync(join(dir, 'wire', 'session.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((e) => e.type === 'message').map((e) => e.message);
  const loadMs = performance.now() - t0;
  const ms = [];
  let last = 0;
  for (let i = 0; i < steps; i++) {
    const t = performance.now();
    msgs.push({ role: 'user', content: [{ type: 'text', text: `next ${i}` }], timestamp: Date.now() });
    const body = JSON.stringify({ model: MODEL, max_tokens: 4096, stream: true, messages: baseline.anthropic(msgs) });
    const res = await fetch(url + '/v1/messages', { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'sk-bench', 'anthropic-version': '2023-06-01' }, body });
    const sse = await res.text();
    if (!sse.includes('message_stop')) throw new Error('no answer');
    msgs.push({ role: 'assistant', ...{ api: 'anthropic-messages', provider: 'anthropic', model: MODEL, usage }, stopReason: 'stop', content: [{ type: 'text', text: 'ok' }], timestamp: Date.now() });
    ms.push(performance.now() - t);
    last = Buffer.byteLength(body);
  }
  // The wire's floor: the same number of bytes, made before the clock
  // starts, sent as 1 MiB parts of a stream with the length known (as
  // forkpoint sends), and the answer read.
  const floorMs = [];
  const whole = Buffer.alloc(last, 0x20);
  for (let i = 0; i < steps; i++) {
    const parts = [];
    for (let o = 0; o < last; o += 1 << 20) parts.push(whole.subarray(o, Math.min(last, o + (1 << 20))));
    const t = performance.now();
    let k = 0;
    const stream = new ReadableStream({ pull: (c) => (k < parts.length ? c.enqueue(parts[k++]) : c.close()) });
    const res = await fetch(url + '/v1/messages', { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(last) }, body: stream, duplex: 'half' });
    await res.text();
    floorMs.push(performance.now() - t);
  }
  return { loadMs, ms, floorMs };
}

try {
  const out = mode === 'build' ? await build(Number(arg)) : mode === 'fp' ? await fp(arg, Number(stepsArg)) : await js(arg, Number(stepsArg));
  console.log(JSON.stringify({ ...out, rssPeakKb: process.resourceUsage().maxRSS }));
} catch (e) {
  console.log(JSON.stringify({ error: String(e?.stack ?? e) }));
}
