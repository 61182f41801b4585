// A worker process on a PostgresStore, for tests/js/postgres.test.mjs:
// `node pg-child.mjs <url> <schema> <leaseMs> <agentId> <mode>`. It prints
// `WHAT <json>` lines at known points.
//   fence  creates the agent, runs a tool that says TOOL_RUNNING and finishes
//          1 s later (the parent stops this process meanwhile); prints what
//          the agent's chat ended with and whether the agent is closed.
//   steps  creates the agent and chats N=<leaseMs>… steps with an echo tool,
//          printing ACK {seq} after each.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Agent, PostgresStore, ToolRegistry, ScriptedProvider } = require('forkpoint');
const [url, schema, leaseMs, agentId, mode, count] = process.argv.slice(2);
const say = (what, data = {}) => process.stdout.write(`${what} ${JSON.stringify(data)}\n`);

const toolRegistry = new ToolRegistry()
  .register({
    name: 'late',
    description: 'finishes a second after it starts',
    inputSchema: { type: 'object' },
    run: async () => {
      say('TOOL_RUNNING');
      await new Promise((r) => setTimeout(r, 1000));
      say('TOOL_DONE');
      return { late: true };
    },
  })
  .register({ name: 'echo', description: 'echoes', inputSchema: { type: 'object' }, run: (x) => x });

const store = await PostgresStore.open(url, { schema, leaseMs: Number(leaseMs) });
if (mode === 'fence') {
  const model = new ScriptedProvider([{ text: 'working', toolCalls: [{ id: 'call_late_1', name: 'late', arguments: {} }] }, { text: 'finished' }]);
  const agent = await Agent.create({ agentId, model, tools: ['late'] }, { store, toolRegistry });
  let ended;
  try {
    ended = { status: (await agent.chat('run the late tool')).status };
  } catch (e) {
    ended = { code: e.code };
  }
  // Give the agent's own closing a moment, then see whether it is closed.
  await new Promise((r) => setTimeout(r, 100));
  let after;
  try {
    await agent.send('anything');
    after = 'open';
  } catch (e) {
    after = e.code;
  }
  say('ENDED', { ...ended, after });
  process.exit(0);
} else if (mode === 'steps') {
  const n = Number(count);
  const turns = [];
  for (let i = 0; i < n; i++) turns.push({ text: `step ${i}`, toolCalls: [{ name: 'echo', arguments: { i } }] }, { text: `done ${i}` });
  const agent = await Agent.create({ agentId, model: new ScriptedProvider(turns), tools: ['echo'] }, { store, toolRegistry });
  say('OPEN');
  for (let i = 0; i < n; i++) {
    const r = await agent.chat(`step ${i}`);
    say('ACK', { seq: r.last.seq });
  }
  await agent.close();
  await store.close();
  say('CLOSED');
}
