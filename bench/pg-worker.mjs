// A worker of bench/postgres.mjs: `node pg-worker.mjs <json args>`.
//   steps   runs `agents` agents concurrently, `steps` chat turns each (one
//           tool call per turn); prints {steps, wall, ms[]} (each turn's time).
//   long    one agent, `steps` turns; prints the turn times in order.
//   emit    one agent, `steps` turns paced `gapMs` apart (the emitter).
//   follow  follows agent `id` from here; prints delivery delays (receipt
//           minus the event's timestamp), one line per event, until killed.
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';

const require = createRequire(import.meta.url);
const { Agent, JSONStore, PostgresStore, EventBus, ToolRegistry, ScriptedProvider } = require('forkpoint');
const a = JSON.parse(process.argv[2]);
const store = a.url ? await PostgresStore.open(a.url, { schema: a.schema, poolSize: a.poolSize ?? 8, host: a.host }) : new JSONStore(a.dir);
const toolRegistry = new ToolRegistry().register({ name: 'lookup', description: 'looks a key up', inputSchema: { type: 'object' }, run: ({ key }) => ({ key, value: `value of ${key}`.repeat(8) }) });
// A realistic turn: a user line, a tool call with arguments, a result, an answer (about 1.5 KB).
const script = (n) => {
  const turns = [];
  for (let i = 0; i < n; i++) {
    turns.push(
      { text: `I will look up key ${i} to answer that. `.repeat(4), toolCalls: [{ name: 'lookup', arguments: { key: `k${i}`, reason: 'the user asked about it' } }] },
      { text: `The value of k${i} is what the lookup returned; here is a summary of it for you. `.repeat(5) },
    );
  }
  return new ScriptedProvider(turns);
};
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');

async function run(id, n, gapMs = 0) {
  const agent = await Agent.create({ agentId: id, model: script(n), tools: ['lookup'] }, { store, toolRegistry });
  const ms = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await agent.chat(`What is the value of k${i}? Please explain it in a few sentences.`);
    ms.push(performance.now() - t);
    if (gapMs) await new Promise((r) => setTimeout(r, gapMs));
  }
  await agent.close();
  return ms;
}

if (a.mode === 'steps') {
  const t0 = performance.now();
  const all = await Promise.all(Array.from({ length: a.agents }, (_, i) => run(`${a.prefix}-${i}`, a.steps)));
  out({ steps: a.agents * a.steps, wall: performance.now() - t0, ms: all.flat() });
} else if (a.mode === 'long') {
  out({ ms: await run(a.id, a.steps) });
} else if (a.mode === 'emit') {
  await run(a.id, a.steps, a.gapMs);
  out({ done: true });
} else if (a.mode === 'follow') {
  let log;
  for (;;) {
    try {
      log = await store.events(a.id);
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  out({ ready: true });
  for await (const { event } of new EventBus(log).subscribe({})) out({ delay: Date.now() - event.timestamp });
}
await store.close?.();
process.exit(0);
