// A process that runs an agent on a slow stream until it is killed
// (providers.test.mjs, "SIGKILL mid-stream"): prints `chunks N` as pieces become durable.
import { napi } from './helpers.mjs';

const { Agent, JSONStore, ToolRegistry, createProvider } = napi;
const [dir, url, provider = 'anthropic', modelName = 'claude-sonnet-4-5'] = process.argv.slice(2);
const toolRegistry = new ToolRegistry().register({
  name: 'count',
  description: 'adds one',
  inputSchema: { type: 'object' },
  run: ({ n }) => ({ next: n + 1 }),
});
const model = createProvider({ provider, model: modelName, apiKey: 'sk-test', baseURL: url });
const agent = await Agent.create({ agentId: 'killed', model, tools: ['count'] }, { store: new JSONStore(dir), toolRegistry });
let n = 0;
agent.on('text_chunk', () => {
  n += 1;
  process.stdout.write(`chunks ${n}\n`);
});
await agent.send('tell me a long story');
await new Promise(() => {}); // until killed
