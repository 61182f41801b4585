// Review (h-review3) of the addon's stream writer and the usage totals: each
// test pins a behaviour a user would hit; they fail on the code reviewed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { napi } from './helpers.mjs';

const napiPath = new URL('../../npm/forkpoint', import.meta.url).pathname;
import { startProviderServer } from './providers/server.mjs';
import { defaultModel } from './providers/wire.mjs';

const { Agent, JSONStore, ToolRegistry, createProvider } = napi;
const freshStore = (d = mkdtempSync(join(tmpdir(), 'fp-review3-'))) => new JSONStore(d);
const provider = (p, srv, extra = {}) =>
  createProvider({ provider: p, model: defaultModel(p), apiKey: 'sk-test-0123', baseURL: srv.url, maxRetries: 0, ...extra });

test('a stream writer that cannot start ends the call: the agent answers the next message (a NaN interval is 0)', async () => {
  const srv = await startProviderServer({ provider: 'anthropic', script: (_r, n) => ({ turn: { text: `hello${n}` } }) });
  try {
    const p = provider('anthropic', srv, { timeoutMs: 2000 });
    const a = await Agent.create({ model: p }, { store: freshStore(), toolRegistry: new ToolRegistry() });
    // The writer thread cannot start (as when the OS refuses a thread), once.
    const n = a.n;
    const start = n.streamStart;
    n.streamStart = () => {
      n.streamStart = start;
      throw new Error(JSON.stringify({ code: 'INTERNAL', message: 'cannot start the stream writer' }));
    };
    await assert.rejects(a.chat('one'));
    assert.equal((await a.status()).state, 'READY');
    assert.equal((await a.chat('two')).text, 'hello1');
    await a.close();
  } finally {
    await srv.close();
  }
});

test('close() does not wait for a streamed body that ignores the abort signal (and the process exits)', () => {
  // In a child: on failure the writer thread and the provider's timer keep it alive.
  const script = `
    import { createRequire } from 'node:module';
    import { mkdtempSync } from 'node:fs'; import { tmpdir } from 'node:os'; import { join } from 'node:path';
    import { startProviderServer } from ${JSON.stringify(new URL('./providers/server.mjs', import.meta.url).href)};
    const { Agent, JSONStore, ToolRegistry, createProvider } = createRequire(${JSON.stringify(import.meta.url)})(${JSON.stringify(napiPath)});
    const srv = await startProviderServer({ provider: 'anthropic', script: [{ turn: { text: 'hello world' }, opts: { pieces: 2 } }] });
    const p = createProvider({ provider: 'anthropic', model: 'claude-sonnet-4-5', apiKey: 'k', baseURL: srv.url, maxRetries: 0 });
    const send = p.send.bind(p);
    p.send = async (req, signal) => {
      const body = await send(req, signal);
      return { async *[Symbol.asyncIterator]() { for await (const c of body) { yield c; break; } await new Promise(() => {}); } };
    };
    const a = await Agent.create({ model: p }, { store: new JSONStore(mkdtempSync(join(tmpdir(), 'fp-review3-'))), toolRegistry: new ToolRegistry() });
    a.chat('hi').catch(() => {});
    await new Promise((r) => setTimeout(r, 200));
    await a.close();
    console.log('closed');
    await srv.close();
  `;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { timeout: 8000, encoding: 'utf8' });
  assert.match(r.stdout, /closed/, `stderr: ${r.stderr}`);
  assert.equal(r.status, 0);
});

test('info().usage after a tail resume equals the one from the whole history (cost to the last bit)', async () => {
  const srv = await startProviderServer({
    provider: 'anthropic',
    script: (_r, n) => ({ turn: { text: 'a', usage: { input: n + 1, output: 100 * (n + 1) } } }),
  });
  try {
    const d = mkdtempSync(join(tmpdir(), 'fp-review3-'));
    const a = await Agent.create({ model: provider('anthropic', srv) }, { store: freshStore(d), toolRegistry: new ToolRegistry() });
    // Answer costs 0.001503·k (claude-sonnet pricing): after 17 the float sum needs all 17 digits.
    for (let i = 0; i < 17; i++) await a.chat(`m${i}`);
    const live = (await a.info()).usage;
    await a.close();
    const b = await Agent.resume(a.agentId, { model: provider('anthropic', srv) }, { store: freshStore(d), toolRegistry: new ToolRegistry() });
    const tail = (await b.info()).usage;
    await b.messages();
    const whole = (await b.info()).usage;
    await b.close();
    assert.deepEqual(whole, live);
    assert.deepEqual(tail, whole);
  } finally {
    await srv.close();
  }
});

test('a NaN commit interval does not stop the stream writer', async () => {
  const srv = await startProviderServer({ provider: 'anthropic', script: [{ turn: { text: 'fine' } }] });
  try {
    const p = provider('anthropic', srv);
    p.wire.commitIntervalMs = NaN;
    const a = await Agent.create({ model: p }, { store: freshStore(), toolRegistry: new ToolRegistry() });
    assert.equal((await a.chat('one')).text, 'fine');
    await a.close();
  } finally {
    await srv.close();
  }
});
