// Adversarial review of the real providers and the durable streaming:
// each test pins a behaviour a user would hit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { napi } from './helpers.mjs';
import { startProviderServer } from './providers/server.mjs';
import { defaultModel, events as wireEvents, sse } from './providers/wire.mjs';

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

async function waitFor(agent, type) {
  const t0 = Date.now();
  while (!(await allEvents(agent)).some((e) => e.type === type)) {
    assert.ok(Date.now() - t0 < 5000, `a ${type} event comes`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

test('a key echoed in an error event of the stream is in no event and no error', async () => {
  // A self-hosted server's key need not look like a credential.
  const key = 'letmein-please-42';
  const srv = await startProviderServer({
    provider: 'openai',
    script: [{ turn: { text: 'x' }, errorAfter: 0, error: { status: 401, type: 'invalid_request_error', message: `bad key ${key}` } }],
  });
  try {
    const agent = await Agent.create({ model: provider('openai', srv, { apiKey: key }) }, { store: freshStore(), toolRegistry: tools() });
    let err;
    await assert.rejects(agent.chat('hi'), (e) => ((err = e), true));
    assert.ok(!String(err.message).includes(key), err.message);
    const evs = await allEvents(agent);
    assert.ok(!JSON.stringify(evs).includes(key), 'the key is in no event');
    await agent.close();
  } finally {
    await srv.close();
  }
});

test('a message sent while the first answer streams is answered after it', async () => {
  const srv = await startProviderServer({
    provider: 'anthropic',
    script: [{ turn: { text: 'first answer, slowly' }, opts: { pieces: 6 }, paceMs: 30 }, { turn: { text: 'second answer' } }],
  });
  try {
    const agent = await Agent.create({ model: provider('anthropic', srv) }, { store: freshStore(), toolRegistry: tools() });
    const one = agent.chat('one');
    await waitFor(agent, 'text_chunk');
    const two = agent.chat('two');
    await Promise.all([one, two]);
    const msgs = await agent.messages();
    const answers = msgs.filter((m) => m.role === 'assistant').map((m) => m.content.map((b) => b.text).join(''));
    assert.deepEqual(answers, ['first answer, slowly', 'second answer']);
    await agent.close();
  } finally {
    await srv.close();
  }
});

test('interrupt() mid-stream, then chat() again: the new call streams normally', async () => {
  const srv = await startProviderServer({
    provider: 'openai',
    script: [{ turn: { text: 'a long answer that will be cut' }, opts: { pieces: 10 }, paceMs: 40 }, { turn: { text: 'after the interrupt' } }],
  });
  try {
    const agent = await Agent.create({ model: provider('openai', srv) }, { store: freshStore(), toolRegistry: tools() });
    const one = agent.chat('one');
    one.catch(() => {});
    await waitFor(agent, 'text_chunk');
    await agent.interrupt();
    const r = await agent.chat('two');
    assert.equal(r.text, 'after the interrupt');
    const msgs = await agent.messages();
    const answers = msgs.filter((m) => m.role === 'assistant').map((m) => m.content.map((b) => b.text).join(''));
    assert.deepEqual(answers, ['after the interrupt']);
    await agent.close();
  } finally {
    await srv.close();
  }
});

// Gemini answers without call ids: each streamed turn's made-up ids carry the
// step (gcall_<step>_<n>), and a repeated made-up id renamed by the encoder
// takes its results with it.
test('Gemini without call ids: two tool turns each run their call and get their own result', async () => {
  const reg = new ToolRegistry().register({
    name: 'count',
    description: 'adds one',
    inputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
    run: ({ n }) => ({ next: n + 1 }),
  });
  const call = (n) => ({ toolCalls: [{ id: `c${n}`, name: 'count', arguments: { n } }] });
  const srv = await startProviderServer({
    provider: 'google',
    script: [
      { turn: call(1), opts: { callIds: false } },
      { turn: call(10), opts: { callIds: false } },
      { turn: { text: 'done' }, opts: { callIds: false } },
    ],
  });
  try {
    const agent = await Agent.create({ model: provider('google', srv), tools: ['count'] }, { store: freshStore(), toolRegistry: reg });
    assert.equal((await agent.chat('go')).text, 'done');
    // The last request carries both calls, each answered with its own result.
    const contents = srv.requests[2].body.contents;
    const results = contents.flatMap((c) => c.parts).filter((p) => p.functionResponse).map((p) => JSON.stringify(p.functionResponse.response));
    assert.equal(results.length, 2, JSON.stringify(contents));
    assert.ok(results[0].includes('2') && results[1].includes('11'), results.join(' | '));
    const ids = (await agent.messages()).flatMap((m) => (m.role === 'assistant' ? m.content.filter((b) => b.type === 'toolCall').map((b) => b.id) : []));
    assert.equal(new Set(ids).size, ids.length, `call ids are distinct: ${ids}`);
    await agent.close();
  } finally {
    await srv.close();
  }
});

test('retry-after-ms wins over retry-after (as the core and OpenAI say)', async () => {
  const srv = await startProviderServer({
    provider: 'openai',
    script: [{ error: 429, headers: { 'retry-after': '20', 'retry-after-ms': '50' } }, { turn: { text: 'after the wait' } }],
  });
  try {
    const agent = await Agent.create({ model: provider('openai', srv) }, { store: freshStore(), toolRegistry: tools() });
    const t0 = Date.now();
    assert.equal((await agent.chat('hi')).text, 'after the wait');
    assert.ok(Date.now() - t0 < 5000, `waited ${Date.now() - t0} ms`);
    await agent.close();
  } finally {
    await srv.close();
  }
});

test('provider.complete(): a connection that drops after the last event still gives the answer', async () => {
  const turn = { text: 'standalone and whole' };
  const n = wireEvents('anthropic', turn, { pieces: 3 }).length;
  const srv = await startProviderServer({ provider: 'anthropic', script: [{ turn, opts: { pieces: 3 }, dropAfter: n }] });
  try {
    const p = provider('anthropic', srv);
    const m = await p.complete({ messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }], timestamp: 1 }] }, {});
    assert.equal(m.content.map((b) => b.text).join(''), 'standalone and whole');
    assert.equal(srv.requests.length, 1);
  } finally {
    await srv.close();
  }
});

for (const p of ['anthropic', 'openai', 'openai-responses', 'google']) {
  test(`${p}: a tool whose name the request renamed is called by its own name`, async () => {
    let ran = 0;
    const reg = new ToolRegistry().register({
      name: 'fs.read file',
      description: 'reads',
      inputSchema: { type: 'object', properties: { path: { type: 'string' } } },
      run: () => (ran++, { ok: true }),
    });
    const wireName = (rec) => {
      const b = rec.body;
      const t = b.tools?.[0];
      return t?.name ?? t?.function?.name ?? t?.functionDeclarations?.[0]?.name;
    };
    const srv = await startProviderServer({
      provider: p,
      script: (rec, n) =>
        n === 0 ? { turn: { toolCalls: [{ id: 'call_1', name: wireName(rec), arguments: { path: 'a' } }] } } : { turn: { text: 'read it' } },
    });
    try {
      const agent = await Agent.create({ model: provider(p, srv), tools: ['fs.read file'] }, { store: freshStore(), toolRegistry: reg });
      assert.equal((await agent.chat('go')).text, 'read it');
      assert.notEqual(wireName(srv.requests[0]), 'fs.read file', 'the request renamed the tool');
      assert.equal(ran, 1);
      const evs = await allEvents(agent);
      assert.equal(evs.find((e) => e.type === 'tool_input_chunk_start').name, 'fs.read file');
      await agent.close();
    } finally {
      await srv.close();
    }
  });
}

test('a stream the machine has failed (malformed event) is not read to its end: chat() rejects at once', async () => {
  const turn = { text: 'a long answer streamed slowly, piece after piece, for seconds' };
  const srv = await startProviderServer({ provider: 'anthropic', script: [{ turn, opts: { pieces: 30 }, paceMs: 100, malformedAt: 3 }] });
  try {
    const agent = await Agent.create({ model: provider('anthropic', srv) }, { store: freshStore(), toolRegistry: tools() });
    const t0 = Date.now();
    let timer;
    const late = new Promise((resolve) => (timer = setTimeout(() => resolve('still pending after 8 s'), 8000)));
    const got = await Promise.race([agent.chat('hi').then(() => 'resolved', (e) => e.code), late]);
    clearTimeout(timer);
    assert.equal(got, 'PROVIDER_PROTOCOL');
    const took = Date.now() - t0;
    assert.ok(took < 1500, `chat() rejected after ${took} ms (the whole stream takes ~3.5 s)`);
    if (got !== 'still pending after 8 s') await agent.close();
  } finally {
    await srv.close();
  }
});

test('close() while a provider hangs mid-stream stops the call at once; a resume with autoRun makes it again', async () => {
  const srv = await startProviderServer({
    provider: 'anthropic',
    script: [{ turn: { text: 'half an answer, then silence' }, opts: { pieces: 6 }, hangAfter: 4 }, { turn: { text: 'the whole answer' } }],
  });
  const store = freshStore();
  try {
    // timeoutMs is a minute: close() must not wait for it.
    const agent = await Agent.create({ model: provider('anthropic', srv, { timeoutMs: 60_000 }) }, { store, toolRegistry: tools() });
    const one = agent.chat('one');
    one.catch(() => {});
    await waitFor(agent, 'text_chunk');
    const closing = agent.close();
    const outcome = await Promise.race([closing.then(() => 'closed'), new Promise((r) => setTimeout(() => r('still waiting'), 5_000))]);
    assert.equal(outcome, 'closed');
    const again = await Agent.resumeFromStore(agent.agentId, { store, toolRegistry: tools(), modelFactory: () => provider('anthropic', srv) }, { autoRun: true });
    const evs = await allEvents(again);
    const partial = evs.find((e) => e.type === 'model_partial');
    assert.equal(partial?.reason, 'interrupted');
    assert.match(partial.content.map((b) => b.text).join(''), /^half/);
    await again.idle();
    const msgs = await again.messages();
    const answers = msgs.filter((m) => m.role === 'assistant').map((m) => m.content.map((b) => b.text).join(''));
    assert.deepEqual(answers, ['the whole answer']);
    await again.close();
  } finally {
    await srv.close();
  }
});

test('the addon writes a streamed answer on its own thread: pieces become durable while JavaScript is busy', async () => {
  // A body whose reader blocks the JavaScript thread for 300 ms after two
  // pieces: the first is written at once, the second is due 10 ms later
  // (group commit), which falls inside the block; only a writer off the
  // JavaScript thread can make it durable then.
  const turn = { text: Array.from({ length: 40 }, (_, i) => `w${i} `).join('') };
  const bytes = new TextEncoder().encode(sse('anthropic', turn, { pieces: 40 }).join(''));
  const [q1, q2] = [bytes.length >> 2, bytes.length >> 1];
  const busy = {};
  let pulls = 0;
  const fetch = async () =>
    new Response(
      new ReadableStream({
        start(c) {
          c.enqueue(bytes.slice(0, q1));
        },
        pull(c) {
          pulls++;
          if (pulls === 1) return c.enqueue(bytes.slice(q1, q2));
          if (pulls > 2) return;
          return new Promise((resolve) =>
            setTimeout(() => {
              busy.from = Date.now();
              while (Date.now() - busy.from < 300); // JavaScript does nothing else
              busy.to = Date.now();
              c.enqueue(bytes.slice(q2));
              c.close();
              resolve();
            }, 0),
          );
        },
      }),
      { status: 200, headers: { 'content-type': 'text/event-stream' } },
    );
  const model = createProvider({ provider: 'anthropic', model: defaultModel('anthropic'), apiKey: KEY, baseURL: 'http://127.0.0.1:9', fetch });
  const agent = await Agent.create({ model }, { store: freshStore(), toolRegistry: tools() });
  let writes = [];
  agent.streamWrites = (w) => (writes = w);
  const r = await agent.chat('go');
  assert.equal(r.text, turn.text);
  // Every piece whose bytes were handed over before the block (its whole
  // event within the first half) was durable before the block ended.
  const before = new TextDecoder().decode(bytes.slice(0, q2));
  const whole = before.slice(0, before.lastIndexOf('\n\n'));
  const n = whole.split('event: content_block_delta').length - 1;
  const chunks = [];
  const last = (await agent.status()).lastBookmark.seq;
  for await (const { bookmark, event } of agent.subscribe(undefined, { since: 0 })) {
    if (event.type === 'text_chunk') chunks.push({ seq: bookmark.seq });
    if (bookmark.seq >= last) break;
  }
  assert.ok(n >= 2 && chunks.length > n, `${n} pieces before the block, ${chunks.length} in all`);
  const seq = chunks[n - 1].seq;
  const w = writes.find((x) => x.lastSeq !== null && x.lastSeq >= seq);
  assert.ok(
    w && w.at < busy.to,
    `the pieces before the block (up to seq ${seq}) were durable during it (${busy.from}..${busy.to}: ${writes.map((x) => `${x.at.toFixed(0)}@${x.lastSeq}`).join(', ')})`,
  );
  await agent.close();
});

test('an HTTP-date retry-after is honoured (the core reads it against the current time)', async () => {
  const at = new Date(Date.now() + 3_000).toUTCString(); // whole seconds: a wait of 2 to 3 s
  const srv = await startProviderServer({
    provider: 'anthropic',
    script: [{ error: 429, headers: { 'retry-after': at } }, { turn: { text: 'after the date' } }],
  });
  try {
    const agent = await Agent.create({ model: provider('anthropic', srv) }, { store: freshStore(), toolRegistry: tools() });
    const t0 = Date.now();
    assert.equal((await agent.chat('hi')).text, 'after the date');
    // The growing wait of a first retry is at most 500 ms.
    assert.ok(Date.now() - t0 >= 1_500, `waited ${Date.now() - t0} ms for ${at}`);
    await agent.close();
  } finally {
    await srv.close();
  }
});

test("provider.complete(): an error event, then a broken connection: the error event's code", async () => {
  const srv = await startProviderServer({
    provider: 'anthropic',
    script: [{ turn: { text: 'one two three four' }, opts: { pieces: 4 }, errorAfter: 5, error: { type: 'rate_limit_error', message: 'slow down' }, dropAfter: 6 }],
  });
  try {
    const p = provider('anthropic', srv);
    await assert.rejects(
      p.complete({ messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }], timestamp: 1 }] }, {}),
      (e) => e.code === 'PROVIDER_RATE_LIMITED' && /slow down/.test(e.message),
    );
  } finally {
    await srv.close();
  }
});

test('a compressed bomb (40 MB of one event in 40 KB of gzip) fails with LIMIT_EXCEEDED at 16 MiB, memory bounded', async () => {
  const { gzipSync } = await import('node:zlib');
  const raw = Buffer.concat([Buffer.from('event: content_block_delta\ndata: "'), Buffer.alloc(40 << 20, 'a')]);
  const body = gzipSync(raw, { level: 9 });
  assert.ok(body.length < 100_000, `${body.length} bytes of gzip`);
  const srv = await startProviderServer({
    provider: 'anthropic',
    script: [{ reply: { status: 200, headers: { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' }, body } }],
  });
  try {
    const agent = await Agent.create({ model: provider('anthropic', srv) }, { store: freshStore(), toolRegistry: tools() });
    const before = process.memoryUsage().rss;
    await assert.rejects(agent.chat('hi'), (e) => e.code === 'LIMIT_EXCEEDED' && /over 16 MiB/.test(e.message));
    const grew = process.memoryUsage().rss - before;
    assert.ok(grew < 200 << 20, `memory grew by ${(grew / 1048576).toFixed(0)} MiB`);
    await agent.close();
  } finally {
    await srv.close();
  }
});
