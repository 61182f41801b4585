// A small browser app on forkpoint-web, written as the README shows it. The
// packaging test (tests/package/package.test.mjs) builds it with Vite, esbuild
// and webpack 5 from the packed tarball, each without any configuration, and
// runs it in Chromium; `?init` makes it call `await init()` first.
import { init, Session, IndexedDbStore, IndexedDbAgentStore, Agent, ToolRegistry, ScriptedProvider, ForkpointError } from 'forkpoint-web';

const at = (s) => `2026-03-01T10:00:${s}.000Z`;
const SESSION = [
  { type: 'session', version: 3, id: '0b6f3c1e-0000-4000-8000-00000000a001', timestamp: at(20), cwd: '/app' },
  { type: 'message', id: 'a1', parentId: null, timestamp: at(21), message: { role: 'user', content: [{ type: 'text', text: 'hi' }], timestamp: 1 } },
  { type: 'message', id: 'a2', parentId: 'a1', timestamp: at(22), message: { role: 'assistant', content: [{ type: 'text', text: 'hello' }], api: 'anthropic-messages', provider: 'anthropic', model: 'm', usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } }, stopReason: 'stop', timestamp: 2 } },
]
  .map((e) => JSON.stringify(e) + '\n')
  .join('');

async function main() {
  if (new URLSearchParams(location.search).has('init')) await init();
  const session = Session.fromJsonl(SESSION);
  const context = session.getContext(session.getMetadata().leafId).map((m) => m.role);
  let error;
  try {
    Session.fromJsonl('not json\n');
  } catch (e) {
    error = e instanceof ForkpointError ? e.code : `not a ForkpointError: ${e}`;
  }

  const db = `app-${Date.now()}-${Math.random()}`;
  const store = await IndexedDbStore.open(db);
  const info = await store.importSession(new Blob([SESSION]));
  const stored = (await store.loadSession(info.id)).getMetadata().entryCount;

  const toolRegistry = new ToolRegistry().register({
    name: 'add',
    description: 'adds two numbers',
    inputSchema: { type: 'object' },
    run: ({ a, b }) => ({ sum: a + b }),
  });
  const model = new ScriptedProvider([
    { text: 'adding', toolCalls: [{ name: 'add', arguments: { a: 2, b: 3 } }] },
    (req) => ({ text: `sum=${JSON.parse(req.messages.at(-1).content[0].text).sum}` }),
  ]);
  const agents = await IndexedDbAgentStore.open(db);
  const agent = await Agent.create({ agentId: 'app', model, tools: ['add'] }, { store: agents, toolRegistry });
  const reply = await agent.chat('add 2 and 3');
  await agent.close();
  return { context, error, stored, status: reply.status, text: reply.text };
}

main().then(
  (r) => (window.__result = r),
  (e) => (window.__result = { failed: String(e?.stack ?? e) }),
);
