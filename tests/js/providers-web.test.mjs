// forkpoint-web's createProvider (the wasm build, in Node over fake-indexeddb):
// the same streaming agent as in Node — the request built by the core, the
// provider's SSE bytes decoded by the machine as they arrive, every piece an
// event — against a local server in each provider's real format.
import 'fake-indexeddb/auto';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { web } from './helpers.mjs';
import { startProviderServer } from './providers/server.mjs';
import { PROVIDERS, defaultModel } from './providers/wire.mjs';
import { longConversation, checkRequests, countReuse } from './providers/long.mjs';

const { Agent, IndexedDbAgentStore, ToolRegistry, createProvider, ForkpointError } = web;
let n = 0;

const tools = () =>
  new ToolRegistry().register({
    name: 'count',
    description: 'adds one',
    inputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
    run: ({ n: x }) => ({ next: x + 1 }),
  });

for (const p of PROVIDERS) {
  test(`[wasm] ${p}: a streamed tool round trip in the browser build`, async () => {
    const srv = await startProviderServer({
      provider: p,
      requireKey: 'sk-web-test',
      script: [
        { turn: { text: 'Counting now.', toolCalls: [{ id: 'c1', name: 'count', arguments: { n: 1 } }], usage: { input: 10, output: 5 } }, opts: { pieces: 4 } },
        { turn: { text: 'It is 2.', usage: { input: 20, output: 3 } }, opts: { pieces: 3 } },
      ],
    });
    const store = await IndexedDbAgentStore.open(`providers-web-${process.pid}-${++n}`);
    try {
      const model = createProvider({ provider: p, model: defaultModel(p), apiKey: 'sk-web-test', baseURL: srv.url });
      const agent = await Agent.create({ model, tools: ['count'] }, { store, toolRegistry: tools() });
      const r = await agent.chat('count from 1');
      assert.equal(r.text, 'It is 2.');
      const evs = [];
      const last = (await agent.status()).lastBookmark.seq;
      for await (const { bookmark, event } of agent.subscribe(undefined, { since: 0 })) {
        evs.push(event);
        if (bookmark.seq >= last) break;
      }
      assert.ok(evs.filter((e) => e.type === 'text_chunk').length >= 4);
      assert.deepEqual(evs.find((e) => e.type === 'tool:end').call.result, { next: 2 });
      assert.equal(evs.filter((e) => e.type === 'token_usage').length, 2);
      const info = await agent.info();
      assert.equal(info.usage.calls, 2);
      assert.ok(info.usage.output >= 8);
      assert.equal(srv.requests.length, 2);
      await agent.close();
      // An HTTP error keeps its code in the browser build too.
      const bad = await Agent.create({ model: createProvider({ provider: p, model: defaultModel(p), apiKey: 'sk-wrong-000', baseURL: srv.url, maxRetries: 0 }) }, { store, toolRegistry: tools() });
      await assert.rejects(bad.chat('hi'), (e) => e instanceof ForkpointError && e.code === 'PROVIDER_AUTH');
      await bad.close();
    } finally {
      store.close();
      await srv.close();
    }
  });
}

for (const [k, p] of PROVIDERS.entries()) {
  // Half with the user's own fetch: the parts then go as a Blob (what browsers get).
  const own = k % 2 === 0;
  test(`[wasm] ${p}: a long conversation: each request is the whole conversion, its kept part sent as pieces (${own ? 'a Blob' : 'a stream'})`, async () => {
    const rounds = 4;
    const { toolRegistry, script } = longConversation(ToolRegistry, rounds);
    const srv = await startProviderServer({ provider: p, requireKey: 'sk-web-test', script });
    const store = await IndexedDbAgentStore.open(`providers-web-${process.pid}-${++n}`);
    try {
      const bodies = [];
      const fetchOwn = async (url, init) => {
        bodies.push(init.body);
        return fetch(url, init);
      };
      const model = createProvider({ provider: p, model: defaultModel(p), apiKey: 'sk-web-test', baseURL: srv.url, ...(own ? { fetch: fetchOwn } : {}) });
      const agent = await Agent.create({ model, tools: ['read'] }, { store, toolRegistry });
      const seen = countReuse(agent);
      for (let i = 0; i < rounds; i++) assert.equal((await agent.chat(`read f${i}`)).status, 'ok');
      assert.equal(srv.requests.length, 2 * rounds);
      assert.ok(seen.reused >= 1, `later requests named kept pieces by id (${seen.reused} in ${seen.bodies} bodies)`);
      checkRequests(srv, await agent.messages(), p, web.toProvider);
      if (own) assert.ok(bodies.some((b) => b instanceof Blob), 'parts went as a Blob');
      await agent.close();
    } finally {
      store.close();
      await srv.close();
    }
  });
}
