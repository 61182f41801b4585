// The demo's agent process: works through a migration task with a slow tool.
// The demo kills it with SIGKILL while the tool runs.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Agent, JSONStore } = require('forkpoint');
const { deps, model } = require('./demo-agent-setup.cjs');

const [dir] = process.argv.slice(2);
const store = new JSONStore(dir);
const agent = await Agent.create(
  { agentId: 'migrator', model: model('first-run'), tools: ['read_schema', 'run_migration', 'check_tables'], systemPrompt: 'You migrate databases carefully.' },
  deps(store),
);
agent.on('progress', (e) => {
  if (e.type === 'tool:start') process.stdout.write(`TOOL_START ${JSON.stringify({ name: e.call.name, seq: e.seq })}\n`);
  if (e.type === 'tool:end') process.stdout.write(`TOOL_END ${JSON.stringify({ name: e.call.name, seq: e.seq })}\n`);
  if (e.type === 'text_chunk') process.stdout.write(`TEXT ${JSON.stringify({ text: e.delta, seq: e.seq })}\n`);
});
await agent.chat('Migrate the orders database to schema v2.');
