// Adversarial review of the real providers and the durable streaming:
// each test pins a behaviour a user would hit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { napi } from './helpers.mjs';
import { startProviderServer } from './providers/server.mjs';
import { defaultModel, events as wireEvents } from './providers/wire.mjs';

const { Agent, JSONStore, ToolRegistry, createProvider } = napi;
const KEY = 'sk-test-0123456789abcdef';
const freshStore = () => new JSONStore(mkdtempSync(join(tmpdir(), 'fp-prov-review-')));
const tools = () => new ToolRegistry();
const provider = (p, srv, extra = {}) =>
  createProvider({ provider: p, model: defaultModel(p), apiKey: KEY, baseURL: srv.url, maxRetries: 2, ...extra });

async function allEvents(agent) {
  const out = [];
  const last = (await agent.status()).lastBookmark.seq;
  for await (const { bookmark, event } of agent.subscribe(undefined, { since: 0 })) {
    out.push(event);
    if (bookmark.seq >= last) break;
  }
  return out;
}

for (const p of ['anthropic', 'openai', 'openai-responses', 'google']) {
  test(`${p}: a connection that drops after the stream's last event still gives the answer`, async () => {
    const turn = { text: 'The whole answer arrived.' };
    const n = wireEvents(p, turn, { pieces: 4 }).length;
    const srv = await startProviderServer({ provider: p, script: [{ turn, opts: { pieces: 4 }, dropAfter: n }] });
    try {
      const agent = await Agent.create({ model: provider(p, srv) }, { store: freshStore(), toolRegistry: tools() });
      const r = await agent.chat('hi');
      assert.equal(r.text, 'The whole answer arrived.');
      await agent.close();
    } finally {
      await srv.close();
    }
  });
}
