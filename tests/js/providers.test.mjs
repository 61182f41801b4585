// Real providers (createProvider) over local servers that speak each
// provider's real streaming format: an agent's tool round trip end to end,
// every piece durable as it arrives, retries, errors with stable codes, a
// SIGKILL mid-stream, switching providers mid-session, usage and cost.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { napi } from './helpers.mjs';
import { startProviderServer } from './providers/server.mjs';
import { PROVIDERS, defaultModel, events as wireEvents } from './providers/wire.mjs';
import { longConversation, checkRequests, countReuse } from './providers/long.mjs';

const { Agent, JSONStore, ToolRegistry, ForkpointError, createProvider } = napi;
const child = fileURLToPath(new URL('./providers-child.mjs', import.meta.url));
const KEY = 'sk-test-0123456789abcdef';

const freshStore = () => new JSONStore(mkdtempSync(join(tmpdir(), 'fp-prov-')));

function tools() {
  return new ToolRegistry().register({
    name: 'count',
    description: 'adds one',
    inputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
    run: ({ n }) => ({ next: n + 1 }),
  });
}

async function rejectsCode(p, code) {
  let err;
  await assert.rejects(p, (e) => {
    assert.ok(e instanceof ForkpointError, `a ForkpointError, got ${e}`);
    assert.equal(e.code, code, e.message);
    err = e;
    return true;
  });
  return err;
}

async function events(agent) {
  const out = [];
  const last = (await agent.status()).lastBookmark.seq;
  for await (const { bookmark, event } of agent.subscribe(undefined, { since: 0 })) {
    out.push(event);
    if (bookmark.seq >= last) break;
  }
  return out;
}

const provider = (p, srv, extra = {}) =>
  createProvider({ provider: p, model: defaultModel(p), apiKey: KEY, baseURL: srv.url, maxRetries: 2, ...extra });

const toolTurn = {
  thinking: { text: 'The user wants a count. I will call the tool.', signature: 'c2lnbmF0dXJlLW9mLXRoZS10aGlua2luZw==' },
  text: 'Let me count that for you.',
  toolCalls: [{ id: 'call_01', name: 'count', arguments: { n: 41 } }],
  usage: { input: 120, output: 40, cacheRead: 100 },
};
const finalTurn = { text: 'The next number is 42.', usage: { input: 200, output: 10 } };

for (const p of PROVIDERS) {
  test(`${p}: a tool round trip streams every piece durably and stores the provider's answer`, async () => {
    const srv = await startProviderServer({
      provider: p,
      requireKey: KEY,
      script: [{ turn: toolTurn, opts: { pieces: { text: 6, thinking: 4, args: 5 } } }, { turn: finalTurn, opts: { pieces: 5 } }],
    });
    try {
      const agent = await Agent.create({ model: provider(p, srv), tools: ['count'], systemPrompt: 'You count.' }, { store: freshStore(), toolRegistry: tools() });
      const r = await agent.chat('What comes after 41?');
      assert.equal(r.status, 'ok');
      assert.equal(r.text, finalTurn.text);
      const evs = await events(agent);
      const texts = evs.filter((e) => e.type === 'text_chunk');
      assert.ok(texts.length >= 6, `text arrived in pieces (${texts.length} text_chunk events)`);
      assert.equal(texts.map((e) => e.delta).join(''), toolTurn.text + finalTurn.text);
      if (p !== 'google') {
        // Gemini sends calls whole: no argument pieces.
        const args = evs.filter((e) => e.type === 'tool_input_chunk');
        assert.ok(args.length >= 2, `${args.length} argument pieces`);
        assert.deepEqual(JSON.parse(args.map((e) => e.delta).join('')), { n: 41 });
        assert.ok(evs.some((e) => e.type === 'tool_input_chunk_end'));
      }
      const ends = evs.filter((e) => e.type === 'tool:end');
      assert.equal(ends.length, 1);
      assert.deepEqual(ends[0].call.result, { next: 42 });
      const usage = evs.filter((e) => e.type === 'token_usage');
      assert.equal(usage.length, 2);
      assert.ok(usage[0].outputTokens > 0 && usage[0].inputTokens > 0, JSON.stringify(usage[0]));
      // The answer as stored: origin, thinking (with its signature where the
      // provider has one), the call with its full arguments, the stop reason.
      const msgs = await agent.messages();
      const a = msgs.find((m) => m.role === 'assistant');
      assert.equal(a.model, defaultModel(p));
      assert.equal(a.stopReason, 'toolUse');
      const call = a.content.find((b) => b.type === 'toolCall');
      assert.equal(call.name, 'count');
      assert.deepEqual(call.arguments, { n: 41 });
      assert.ok(a.content.some((b) => b.type === 'text' && b.text === toolTurn.text));
      if (p === 'anthropic') {
        const th = a.content.find((b) => b.type === 'thinking');
        assert.equal(th.thinking, toolTurn.thinking.text);
        assert.equal(th.thinkingSignature, toolTurn.thinking.signature);
      }
      // The second request carries the tool's result in the provider's shape.
      assert.equal(srv.requests.length, 2);
      const second = JSON.stringify(srv.requests[1].body);
      assert.ok(second.includes('42') && second.includes('next'), second.slice(0, 400));
      for (const rq of srv.requests) assert.equal(rq.auth?.key, KEY);
      const info = await agent.info();
      assert.equal(info.usage.calls, 2);
      assert.ok(info.usage.output >= 50, JSON.stringify(info.usage));
      assert.ok(info.usage.cost > 0, `a cost from the pricing table: ${JSON.stringify(info.usage)}`);
      await agent.close();
    } finally {
      await srv.close();
    }
  });

  test(`${p}: 429 with retry-after and 500 are retried; 401 is PROVIDER_AUTH without the key`, async () => {
    const srv = await startProviderServer({
      provider: p,
      requireKey: KEY,
      script: [{ error: 429, retryAfter: 0 }, { error: 500 }, { turn: { text: 'ok after two failures' } }],
    });
    try {
      const agent = await Agent.create({ model: provider(p, srv) }, { store: freshStore(), toolRegistry: tools() });
      const r = await agent.chat('hi');
      assert.equal(r.text, 'ok after two failures');
      assert.equal(srv.requests.length, 3);
      await agent.close();
      const bad = await Agent.create({ model: provider(p, srv, { apiKey: 'sk-wrong-key-000000' }) }, { store: freshStore(), toolRegistry: tools() });
      const e = await rejectsCode(bad.chat('hi'), 'PROVIDER_AUTH');
      assert.ok(!e.message.includes('sk-wrong-key-000000'), e.message);
      const evs = await events(bad);
      const err = evs.find((x) => x.type === 'error');
      assert.equal(err.code, 'PROVIDER_AUTH');
      assert.ok(!JSON.stringify(evs).includes('sk-wrong-key'), 'the key is in no event');
      await bad.close();
    } finally {
      await srv.close();
    }
  });

  test(`${p}: a stream that breaks after content keeps the partial and fails the call; the agent goes on`, async () => {
    // Each fault comes after the first text piece and before the stream's end.
    const cut = { text: 'This answer will be cut in the middle of a sentence.' };
    const second = { text: 'A second answer, ended by an error.' };
    const third = { text: 'Broken JSON follows.' };
    const n = (turn) => wireEvents(p, turn, { pieces: 8 }).length;
    const srv = await startProviderServer({
      provider: p,
      script: [
        { turn: cut, opts: { pieces: 8 }, dropAfter: n(cut) - 2 },
        { turn: second, opts: { pieces: 8 }, errorAfter: n(second) - 2 },
        { turn: third, opts: { pieces: 8 }, malformedAt: n(third) - 2 },
        { turn: { text: 'Fine now.' } },
      ],
    });
    try {
      const agent = await Agent.create({ model: provider(p, srv) }, { store: freshStore(), toolRegistry: tools() });
      await rejectsCode(agent.chat('one'), 'PROVIDER_UNAVAILABLE');
      // The provider's own mid-stream error: overloaded / server error.
      await rejectsCode(agent.chat('two'), 'PROVIDER_UNAVAILABLE');
      await rejectsCode(agent.chat('three'), 'PROVIDER_PROTOCOL');
      const r = await agent.chat('four');
      assert.equal(r.text, 'Fine now.');
      const evs = await events(agent);
      const partials = evs.filter((e) => e.type === 'model_partial');
      assert.equal(partials.length, 3, `${partials.length} model_partial events`);
      assert.equal(partials[0].reason, 'failed');
      const t = partials[0].content.find((b) => b.type === 'text').text;
      assert.ok(t.length > 0 && 'This answer will be cut in the middle of a sentence.'.startsWith(t), t);
      // Only the complete answer is in the conversation.
      const msgs = await agent.messages();
      assert.deepEqual(
        msgs.filter((m) => m.role === 'assistant').map((m) => m.content.map((b) => b.text).join('')),
        ['Fine now.'],
      );
      assert.equal(srv.requests.length, 4, 'a stream that delivered content is never retried');
      await agent.close();
    } finally {
      await srv.close();
    }
  });
}

test('an error event before any content is retried (Anthropic overloaded right after message_start)', async () => {
  const srv = await startProviderServer({
    provider: 'anthropic',
    script: [{ turn: { text: 'never sent' }, errorAfter: 1, error: { type: 'overloaded_error', message: 'Overloaded' } }, { turn: { text: 'second try' } }],
  });
  try {
    const agent = await Agent.create({ model: provider('anthropic', srv) }, { store: freshStore(), toolRegistry: tools() });
    const r = await agent.chat('hi');
    assert.equal(r.text, 'second try');
    assert.equal(srv.requests.length, 2);
    await agent.close();
  } finally {
    await srv.close();
  }
});

test('interrupt() aborts a request that hangs; the timeout ends one that never answers', async () => {
  const srv = await startProviderServer({ provider: 'openai', script: [{ turn: { text: 'half' }, hangAfter: 2 }, { hang: true }, { hang: true }] });
  try {
    const agent = await Agent.create({ model: provider('openai', srv) }, { store: freshStore(), toolRegistry: tools() });
    await agent.send('hi');
    const t0 = Date.now();
    while (!(await events(agent)).some((e) => e.type === 'text_chunk')) {
      assert.ok(Date.now() - t0 < 5000, 'a piece arrives');
      await new Promise((r) => setTimeout(r, 10));
    }
    await agent.interrupt();
    const evs = await events(agent);
    const partial = evs.find((e) => e.type === 'model_partial');
    assert.equal(partial.reason, 'interrupted');
    await agent.close();
    const slow = await Agent.create({ model: provider('openai', srv, { timeoutMs: 300, maxRetries: 1 }) }, { store: freshStore(), toolRegistry: tools() });
    const t1 = Date.now();
    await rejectsCode(slow.chat('hi'), 'PROVIDER_UNAVAILABLE');
    assert.ok(Date.now() - t1 < 5000);
    await slow.close();
  } finally {
    await srv.close();
  }
});

test('setModel switches provider mid-session: the next request is converted and reported', async () => {
  const a = await startProviderServer({ provider: 'anthropic', script: [{ turn: toolTurn }, { turn: { text: 'counted: 42' } }] });
  const o = await startProviderServer({ provider: 'openai', script: [{ turn: { text: 'now from openai' } }] });
  try {
    const agent = await Agent.create({ model: provider('anthropic', a), tools: ['count'] }, { store: freshStore(), toolRegistry: tools() });
    assert.equal((await agent.chat('count from 41')).text, 'counted: 42');
    await agent.setModel(provider('openai', o));
    assert.equal((await agent.info()).model.provider, 'openai');
    assert.equal((await agent.chat('and now?')).text, 'now from openai');
    // The whole history went to OpenAI in its own shapes: the call and its result paired.
    const body = o.requests[0].body;
    const asked = body.messages.find((m) => m.role === 'assistant' && m.tool_calls);
    assert.equal(asked.tool_calls[0].function.name, 'count');
    assert.deepEqual(JSON.parse(asked.tool_calls[0].function.arguments), { n: 41 });
    const result = body.messages.find((m) => m.role === 'tool');
    assert.equal(result.tool_call_id, asked.tool_calls[0].id);
    const evs = await events(agent);
    const conv = evs.filter((e) => e.type === 'request_converted');
    assert.equal(conv.length, 1, 'reported once');
    assert.equal(conv[0].provider, 'openai');
    assert.ok(conv[0].steps.length > 0, JSON.stringify(conv[0]));
    await agent.close();
  } finally {
    await a.close();
    await o.close();
  }
});

test('provider.complete() outside an agent streams onDelta and returns the answer', async () => {
  const srv = await startProviderServer({ provider: 'openai-responses', script: [{ turn: { text: 'standalone answer', usage: { input: 5, output: 3 } }, opts: { pieces: 4 } }] });
  try {
    const pieces = [];
    const m = await provider('openai-responses', srv).complete(
      { system: 'be brief', messages: [{ role: 'user', content: 'hi', timestamp: 1 }], tools: [] },
      { signal: new AbortController().signal, onDelta: (d) => pieces.push(d.text) },
    );
    assert.equal(pieces.join(''), 'standalone answer');
    assert.ok(pieces.length >= 3);
    assert.equal(m.content[0].text, 'standalone answer');
    assert.equal(m.api, 'openai-responses');
    assert.equal(m.usage.input, 5);
    assert.equal(srv.requests[0].body.instructions, 'be brief');
  } finally {
    await srv.close();
  }
});

test('resumeFromStore without a modelFactory builds the provider from meta.json (key and URL from the environment)', async () => {
  const srv = await startProviderServer({ provider: 'anthropic', requireKey: KEY, script: [{ turn: { text: 'first' } }, { turn: { text: 'after resume' } }] });
  const saved = { k: process.env.ANTHROPIC_API_KEY, u: process.env.ANTHROPIC_BASE_URL };
  try {
    process.env.ANTHROPIC_API_KEY = KEY;
    process.env.ANTHROPIC_BASE_URL = srv.url;
    const store = freshStore();
    const agent = await Agent.create({ agentId: 'env-bot', model: createProvider({ provider: 'anthropic', model: 'claude-sonnet-4-5' }) }, { store, toolRegistry: tools() });
    assert.equal((await agent.chat('hi')).text, 'first');
    await agent.close();
    const again = await Agent.resumeFromStore('env-bot', { store, toolRegistry: tools() });
    assert.equal((await again.chat('hi again')).text, 'after resume');
    await again.close();
  } finally {
    for (const [k, v] of [['ANTHROPIC_API_KEY', saved.k], ['ANTHROPIC_BASE_URL', saved.u]]) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await srv.close();
  }
});

for (const p of PROVIDERS) {
  test(`${p}: SIGKILL mid-stream: the resume reports what streamed and redoes the call, with no duplicated tool call`, async () => {
    const story = 'A long answer that streams slowly, piece by piece, until the process dies.';
    const srv = await startProviderServer({
      provider: p,
      script: [{ turn: { text: story }, opts: { pieces: 40 }, paceMs: 25 }, { turn: toolTurn }, { turn: finalTurn }],
    });
    const dir = mkdtempSync(join(tmpdir(), 'fp-prov-kill-'));
    try {
      const c = spawn(process.execPath, [child, dir, srv.url, p, defaultModel(p)], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      await new Promise((resolve, reject) => {
        c.stdout.on('data', (d) => {
          out += d;
          if (out.includes('chunks 5')) resolve();
        });
        c.on('exit', () => reject(new Error(`the child ended early: ${out}`)));
      });
      c.kill('SIGKILL');
      await new Promise((r) => c.once('exit', r));
      const store = new JSONStore(dir);
      const agent = await Agent.resume('killed', { model: provider(p, srv), tools: ['count'] }, { store, toolRegistry: tools() }, { strategy: 'crash', autoRun: true });
      await agent.idle();
      const evs = await events(agent);
      const partial = evs.find((e) => e.type === 'model_partial');
      assert.ok(partial, 'model_partial after the kill');
      assert.equal(partial.reason, 'crashed');
      const t = partial.content[0].text;
      assert.ok(t.length > 0 && story.startsWith(t), t);
      const msgs = await agent.messages();
      const calls = msgs.flatMap((m) => (m.role === 'assistant' ? m.content.filter((b) => b.type === 'toolCall') : []));
      assert.equal(calls.length, 1, 'one tool call');
      assert.equal(msgs.filter((m) => m.role === 'toolResult').length, 1);
      assert.equal(msgs.at(-1).content.find((b) => b.type === 'text').text, finalTurn.text);
      assert.ok(!msgs.some((m) => m.role === 'assistant' && JSON.stringify(m.content).includes('until the process dies')), 'the half-answer is not in the session');
      await agent.close();
    } finally {
      await srv.close();
    }
  });

  test(`${p}: parallel tool calls in one answer run and are answered in order`, async () => {
    const two = {
      text: 'Counting both.',
      toolCalls: [
        { id: 'call_a', name: 'count', arguments: { n: 1 } },
        { id: 'call_b', name: 'count', arguments: { n: 10 } },
      ],
    };
    const srv = await startProviderServer({ provider: p, script: [{ turn: two, opts: { pieces: { text: 2, args: 4 } } }, { turn: { text: 'Got 2 and 11.' } }] });
    try {
      const agent = await Agent.create({ model: provider(p, srv), tools: ['count'] }, { store: freshStore(), toolRegistry: tools() });
      assert.equal((await agent.chat('count twice')).text, 'Got 2 and 11.');
      const msgs = await agent.messages();
      const a = msgs.find((m) => m.role === 'assistant');
      assert.deepEqual(a.content.filter((b) => b.type === 'toolCall').map((b) => b.arguments.n), [1, 10]);
      assert.deepEqual(msgs.filter((m) => m.role === 'toolResult').map((m) => JSON.parse(m.content[0].text).next), [2, 11]);
      if (p !== 'google') {
        const evs = await events(agent);
        const starts = evs.filter((e) => e.type === 'tool_input_chunk_start');
        assert.equal(starts.length, 2);
        for (const s of starts) {
          const text = evs.filter((e) => e.type === 'tool_input_chunk' && e.index === s.index).map((e) => e.delta).join('');
          assert.ok([1, 10].includes(JSON.parse(text).n), text);
        }
      }
      await agent.close();
    } finally {
      await srv.close();
    }
  });
}

for (const p of PROVIDERS) {
  test(`${p}: a long conversation: each request is the whole conversion, its kept part sent again as the same pieces`, async () => {
    const rounds = 4;
    const { toolRegistry, script } = longConversation(ToolRegistry, rounds);
    const srv = await startProviderServer({ provider: p, requireKey: KEY, script });
    try {
      const agent = await Agent.create({ model: provider(p, srv), tools: ['read'] }, { store: freshStore(), toolRegistry });
      const seen = countReuse(agent);
      for (let i = 0; i < rounds; i++) assert.equal((await agent.chat(`read f${i}`)).status, 'ok');
      assert.equal(srv.requests.length, 2 * rounds);
      assert.ok(seen.reused >= 1, `later requests named kept pieces by id (${seen.reused} in ${seen.bodies} bodies)`);
      checkRequests(srv, await agent.messages(), p, napi.toProvider);
      await agent.close();
    } finally {
      await srv.close();
    }
  });
}

test('a request given up right after its body was taken: the next request still has every piece', async () => {
  const { toolRegistry, script } = longConversation(ToolRegistry, 8);
  const srv = await startProviderServer({ provider: 'anthropic', requireKey: KEY, script });
  try {
    const agent = await Agent.create({ model: provider('anthropic', srv), tools: ['read'] }, { store: freshStore(), toolRegistry });
    // The first body that brings a piece never given before is given up at
    // once (as an interrupt landing while the request was being built).
    const native = agent.n;
    const take = native.takeRequestBody.bind(native);
    let fired;
    const firedP = new Promise((r) => (fired = r));
    let armed = true;
    native.takeRequestBody = () => {
      const flat = take();
      const fresh = flat && flat.some((x, i) => i % 2 === 1 && x !== null && flat[i - 1] !== 0);
      if (armed && fresh && srv.requests.length > 0) {
        armed = false;
        for (const ac of agent.aborts) ac.abort();
        fired();
      }
      return flat;
    };
    let i = 0;
    while (armed && i < 6) assert.equal((await Promise.race([agent.chat(`read f${i++}`), firedP.then(() => null)]))?.status ?? 'given up', armed ? 'ok' : 'given up');
    assert.equal(armed, false, 'a body with a new piece was given up');
    await agent.interrupt();
    const before = srv.requests.length;
    assert.equal((await agent.chat(`read f${i}`)).status, 'ok');
    assert.ok(srv.requests.length > before);
    const msgs = await agent.messages();
    const answers = msgs.flatMap((m, k) => (m.role === 'assistant' ? [k] : []));
    const last = srv.requests.at(-1).body.messages;
    assert.deepEqual(last, napi.toProvider(msgs.slice(0, answers.at(-1)), 'anthropic', { model: defaultModel('anthropic') }).request.messages);
    await agent.close();
  } finally {
    await srv.close();
  }
});

/**
 * A server in front of `srv` that answers every request under /old with
 * `status` to the same path under `to` (default: /new on itself), and passes
 * requests under /new on to `srv`.
 */
async function redirecting(srv, status, to) {
  const http = await import('node:http');
  const hops = [];
  const server = http.createServer((req, res) => {
    if (req.url.startsWith('/old')) {
      hops.push(req.url);
      req.resume();
      req.on('end', () => {
        res.writeHead(status, to === null ? {} : { location: (to ?? '/new') + req.url.slice(4) });
        res.end();
      });
      return;
    }
    const target = new URL(srv.url);
    const up = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url.replace(/^\/new/, ''), headers: req.headers }, (r) => {
      res.writeHead(r.statusCode, r.headers);
      r.pipe(res);
    });
    req.pipe(up);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}`, hops, close: () => new Promise((r) => server.close(r)) };
}

test('redirects in Node: a 307/308 on the same origin is followed with the same body (as one buffer and as a stream of parts); another origin, a 302, no location or a 6th hop are PROVIDER_PROTOCOL, not retried', async () => {
  // What fetch is given: an agent's later requests go out in parts, as a stream.
  const realFetch = globalThis.fetch;
  let bodies = [];
  globalThis.fetch = (url, init) => {
    bodies.push(init?.body instanceof ReadableStream ? 'stream' : 'bytes');
    return realFetch(url, init);
  };
  const big = 'x'.repeat(3 << 20);
  const srv = await startProviderServer({ provider: 'anthropic', requireKey: KEY, script: (_req, n) => ({ turn: { text: `answer ${n}` } }) });
  const other = await startProviderServer({ provider: 'anthropic', script: [] });
  const refused = async (r, says) => {
    const agent = await Agent.create({ model: provider('anthropic', { url: `${r.url}/old` }) }, { store: freshStore(), toolRegistry: tools() });
    const e = await rejectsCode(agent.chat(big), 'PROVIDER_PROTOCOL');
    assert.match(e.message, says);
    assert.doesNotMatch(e.message, new RegExp(KEY));
    await agent.close();
    await r.close();
    return e;
  };
  try {
    for (const status of [307, 308]) {
      const r = await redirecting(srv, status);
      bodies = [];
      const agent = await Agent.create({ model: provider('anthropic', { url: `${r.url}/old` }) }, { store: freshStore(), toolRegistry: tools() });
      const seen = srv.requests.length;
      assert.match((await agent.chat(big)).text, /^answer/);
      assert.match((await agent.chat('and again')).text, /^answer/);
      await agent.close();
      // Each request twice (the redirect, then the follow), the second request in parts.
      assert.deepEqual(bodies, ['bytes', 'bytes', 'stream', 'stream'], `${status}`);
      const got = srv.requests.slice(seen);
      assert.equal(got.length, 2, 'each request reached the server once');
      for (const g of got) assert.ok(JSON.stringify(g.body.messages[0]).includes(big), 'the whole body followed the redirect');
      assert.ok(JSON.stringify(got[1].body.messages.at(-1)).includes('and again'));
      assert.equal(r.hops.length, 2);
      await r.close();
    }
    // To another origin: the key is not sent there, and the error names where.
    const cross = await redirecting(srv, 307, `${other.url}/new`);
    await refused(cross, /another origin/);
    assert.equal(other.requests.length, 0, 'nothing reached the other origin');
    assert.equal(cross.hops.length, 1, 'not retried');
    const moved = await redirecting(srv, 302);
    await refused(moved, /302.*GET.*set baseURL/);
    // A redirect to itself: given up after 5 hops.
    const loop = await redirecting(srv, 307, '/old');
    await refused(loop, /more than 5 times/);
    assert.equal(loop.hops.length, 6);
    // No location at all.
    const nowhere = await redirecting(srv, 307, null);
    await refused(nowhere, /without a usable location/);
  } finally {
    globalThis.fetch = realFetch;
    await srv.close();
    await other.close();
  }
});
