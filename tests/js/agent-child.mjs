// A child process running an agent, for the crash tests: `node agent-child.mjs
// <store> <agentId> <mode>` (a directory, or `url#schema#leaseMs`). It prints `READY <json>` lines at known points;
// the parent kills it with SIGKILL there.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Agent, JSONStore, PostgresStore, ToolRegistry, ScriptedProvider } = require('forkpoint');
const [dir, agentId, mode] = process.argv.slice(2);
const say = (what, data = {}) => process.stdout.write(`${what} ${JSON.stringify(data)}\n`);

const toolRegistry = new ToolRegistry()
  .register({
    name: 'slow',
    description: 'a tool that never finishes (the parent kills the process while it runs)',
    inputSchema: { type: 'object' },
    run: () => {
      say('TOOL_RUNNING');
      return new Promise(() => {});
    },
  })
  .register({ name: 'echo', description: 'echoes', inputSchema: { type: 'object' }, run: (x) => x });

const model =
  mode === 'model-hang'
    ? {
        provider: 'scripted',
        model: 'hang',
        complete: () => {
          say('MODEL_CALL');
          return new Promise(() => {});
        },
      }
    : new ScriptedProvider([{ text: 'working', toolCalls: [{ id: 'call_slow_1', name: 'slow', arguments: { n: 1 } }] }]);
// `dir` is a store directory, or `url#schema#leaseMs` for PostgreSQL.
const [url, schema, leaseMs] = dir.split('#');
const store = dir.startsWith('postgres') ? await PostgresStore.open(url, { schema, leaseMs: Number(leaseMs) }) : new JSONStore(dir);
const permission = mode === 'approval' ? { mode: 'approval' } : { mode: 'auto' };
const agent = await Agent.create({ agentId, model, tools: ['slow', 'echo'], permission }, { store, toolRegistry });
if (mode === 'hold') {
  say('OPEN');
} else {
  const r = agent.chat('please run the slow tool');
  if (mode === 'approval') {
    const res = await r;
    say('PAUSED', res);
  }
}
setInterval(() => {}, 1000);
