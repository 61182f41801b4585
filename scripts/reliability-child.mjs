// The busy agent of the reliability harness: `node reliability-child.mjs <store> <seed>`.
// It resumes (or creates) agent `busy` with strategy 'crash' and works forever:
// messages, model calls with random delays, tools (some slow, some asking for
// approval, some failing), decisions. It reports on stdout what was
// acknowledged (ACK: a send() that resolved; EV: an event handed to a live
// handler, which only sees durable events) and the moments worth a kill (AT).
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Agent, JSONStore, ToolRegistry, ForkpointError } = require('forkpoint');
const [dir, seedArg] = process.argv.slice(2);

let seed = Number(seedArg) >>> 0;
const rand = () => {
  seed = (seed + 0x6d2b79f5) >>> 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const pick = (xs) => xs[Math.floor(rand() * xs.length)];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const say = (kind, data) => process.stdout.write(`${kind} ${JSON.stringify(data)}\n`);

const toolRegistry = new ToolRegistry()
  .register({ name: 'quick', description: 'returns at once', inputSchema: { type: 'object' }, run: (x) => ({ ok: true, x }) })
  .register({
    name: 'slow',
    description: 'takes a while',
    inputSchema: { type: 'object' },
    run: async (x, ctx) => {
      say('AT', { what: 'tool-running' });
      await sleep(5 + rand() * 40);
      if (ctx.signal.aborted) throw new Error('aborted');
      return { done: x };
    },
  })
  .register({ name: 'flaky', description: 'fails half the time', inputSchema: { type: 'object' }, run: () => { if (rand() < 0.5) throw new Error('flaky failure'); return 'fine'; } })
  .register({ name: 'guarded', description: 'needs approval', inputSchema: { type: 'object' }, requiresApproval: true, run: (x) => ({ approved: x }) });

let turn = 0;
const model = {
  provider: 'scripted',
  model: 'busy-1',
  api: 'scripted',
  async complete(request) {
    say('AT', { what: 'model-call' });
    await sleep(rand() * 15);
    const n = Math.floor(rand() * 4);
    const last = request.messages[request.messages.length - 1];
    const content = [{ type: 'text', text: `turn ${turn++}` }];
    // After tool results, usually answer; otherwise call 0-3 tools.
    if (last?.role !== 'toolResult' || rand() < 0.3) {
      for (let k = 0; k < n; k++) {
        content.push({ type: 'toolCall', id: `call_${seedArg}_${turn}_${k}`, name: pick(['quick', 'slow', 'flaky', 'guarded']), arguments: { k, big: 'x'.repeat(Math.floor(rand() * 2000)) } });
      }
    }
    return { content, stopReason: content.length > 1 ? 'toolUse' : 'stop' };
  },
};

const store = new JSONStore(dir);
const agent = await Agent.resumeOrCreate('busy', { model, tools: ['quick', 'slow', 'flaky', 'guarded'] }, { store, toolRegistry }, { strategy: 'crash' });
for (const ch of ['progress', 'control', 'monitor']) agent.on(ch, (e) => say('EV', { seq: e.seq, type: e.type }));
agent.on('permission_required', (e) => {
  say('AT', { what: 'approval' });
  setTimeout(() => {
    agent.decide(e.call.id, rand() < 0.7 ? 'allow' : 'deny').catch((err) => {
      if (!(err instanceof ForkpointError)) throw err;
    });
  }, rand() * 10);
});
say('READY', {});
for (let i = 0; ; i++) {
  const text = `message ${seedArg}-${i}`;
  const id = await agent.send(text);
  say('ACK', { id, text });
  if (rand() < 0.5) await agent.idle().catch(() => undefined);
  await sleep(rand() * 5);
}
