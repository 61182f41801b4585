// A worker of bench/postgres.mjs: `node pg-worker.mjs <json args>`.
//   steps   runs `agents` agents concurrently, `steps` steps each (a step: a
//           model call asking for one tool call, and the tool's run; ten per
//           chat turn); prints {steps, wall, ms[]} (each step's time).
//   long    one agent, `steps` steps; prints the step times in order.
//   emit    one agent, `steps` steps, chat turns paced `gapMs` apart (the emitter).
//   follow  follows agent `id` from here; prints delivery delays (receipt
//           minus the event's timestamp), one line per event, until killed.
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';

const require = createRequire(import.meta.url);
const { Agent, JSONStore, PostgresStore, EventBus, ToolRegistry, ScriptedProvider } = require('forkpoint');
const a = JSON.parse(process.argv[2]);
const store = a.url ? await PostgresStore.open(a.url, { schema: a.schema, poolSize: Number(process.env.UV_THREADPOOL_SIZE ?? 4), host: a.host }) : new JSONStore(a.dir);
const toolRegistry = new ToolRegistry().register({ name: 'lookup', description: 'looks a key up', inputSchema: { type: 'object' }, run: ({ key }) => ({ key, value: `value of ${key}`.repeat(8) }) });
// A step: a model call that asks for one tool call, and the tool's run; ten
// steps per chat turn (the model looks ten keys up, then answers). About 1 KB
// of conversation per step.
const PER_TURN = 10;
const script = (n) => {
  const turns = [];
  for (let i = 0; i < n; i++) {
    turns.push({ text: `I will look up key ${i} to answer that. `.repeat(3), toolCalls: [{ name: 'lookup', arguments: { key: `k${i}`, reason: 'the user asked about it' } }] });
    if (i % PER_TURN === PER_TURN - 1 || i === n - 1) turns.push({ text: `The values are what the lookups returned; here is a summary for you. `.repeat(4) });
  }
  return new ScriptedProvider(turns);
};
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');

/** Runs agent `id` for `n` steps; the time of each step (between the ends of consecutive tool calls). */
async function run(id, n, gapMs = 0) {
  const agent = await Agent.create({ agentId: id, model: script(n), tools: ['lookup'] }, { store, toolRegistry });
  const ms = [];
  let last = performance.now();
  agent.on('tool:end', () => {
    const now = performance.now();
    ms.push(now - last);
    last = now;
  });
  for (let done = 0; done < n; done += PER_TURN) {
    last = performance.now();
    await agent.chat(`Please look up the next ${PER_TURN} keys and explain them.`);
    if (gapMs) await new Promise((r) => setTimeout(r, gapMs));
  }
  await agent.close();
  return ms;
}

if (a.mode === 'steps') {
  const t0 = performance.now();
  const all = await Promise.all(Array.from({ length: a.agents }, (_, i) => run(`${a.prefix}-${i}`, a.steps)));
  const cpu = process.cpuUsage();
  out({ steps: a.agents * a.steps, wall: performance.now() - t0, cpuMs: (cpu.user + cpu.system) / 1000, ms: all.flat() });
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
