// The local provider servers (tests/js/providers/) tested where they can fail:
// the generated wire formats reassemble into the turn, the endpoints and
// headers are the providers', errors have their shapes, a drop really cuts the
// socket, pacing keeps order and time, bursts respect backpressure.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { PROVIDERS, sse, json, split } from './providers/wire.mjs';
import { startProviderServer, streamPath } from './providers/server.mjs';

const TURN = {
  text: 'Let me count them 😀 — twice.',
  thinking: { text: 'The user wants a count; call both tools.', signature: 'RXFzaWduYXR1cmUtYnl0ZXM=' },
  toolCalls: [
    { id: 'call_count', name: 'count', arguments: { n: 41, items: ['a', 'b'] } },
    { id: 'call_add', name: 'add', arguments: { a: 1.5, b: -2 } },
  ],
  usage: { input: 25, output: 40, cacheRead: 3, cacheWrite: 0, reasoning: 10 },
};

const HEADERS = {
  'content-type': 'application/json',
  'anthropic-version': '2023-06-01',
  'x-api-key': 'sk-test',
  authorization: 'Bearer sk-test',
  'x-goog-api-key': 'sk-test',
};

/** Splits an SSE text into events: [{event, data}] (blank line = \n\n or \r\n\r\n). */
function parseSse(text) {
  return text
    .split(/\r\n\r\n|\n\n/)
    .filter((b) => b.trim())
    .map((block) => {
      const ev = { event: null, data: [] };
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith('event: ')) ev.event = line.slice(7);
        else if (line.startsWith('data: ')) ev.data.push(line.slice(6));
      }
      return { event: ev.event, data: ev.data.join('\n') };
    });
}

/** A reference decoder: the turn a client should rebuild from a provider's events. */
function reassemble(provider, evs) {
  const out = { text: '', thinking: { text: '', signature: '' }, calls: [], usage: null, stop: null };
  const datas = evs.filter((e) => e.data !== '[DONE]').map((e) => JSON.parse(e.data));
  for (const d of datas) {
    if (provider === 'anthropic') {
      if (d.type === 'content_block_start' && d.content_block.type === 'tool_use') out.calls[d.index] = { id: d.content_block.id, name: d.content_block.name, args: '' };
      if (d.type === 'content_block_delta') {
        const x = d.delta;
        if (x.type === 'text_delta') out.text += x.text;
        if (x.type === 'thinking_delta') out.thinking.text += x.thinking;
        if (x.type === 'signature_delta') out.thinking.signature += x.signature;
        if (x.type === 'input_json_delta') out.calls[d.index].args += x.partial_json;
      }
      if (d.type === 'message_start') out.usage = { ...d.message.usage };
      if (d.type === 'message_delta') Object.assign(out.usage, d.usage), (out.stop = d.delta.stop_reason);
    } else if (provider === 'openai') {
      if (d.usage) out.usage = d.usage;
      for (const c of d.choices) {
        if (c.delta.content) out.text += c.delta.content;
        if (c.delta.reasoning_content) out.thinking.text += c.delta.reasoning_content;
        for (const tc of c.delta.tool_calls ?? []) {
          if (tc.id) out.calls[tc.index] = { id: tc.id, name: tc.function.name, args: '' };
          out.calls[tc.index].args += tc.function.arguments;
        }
        if (c.finish_reason) out.stop = c.finish_reason;
      }
    } else if (provider === 'openai-responses') {
      if (d.type === 'response.output_text.delta') out.text += d.delta;
      if (d.type === 'response.reasoning_summary_text.delta') out.thinking.text += d.delta;
      if (d.type === 'response.output_item.done' && d.item.type === 'reasoning') out.thinking.signature = d.item.encrypted_content;
      if (d.type === 'response.output_item.added' && d.item.type === 'function_call') out.calls[d.output_index] = { id: d.item.call_id, name: d.item.name, args: '' };
      if (d.type === 'response.function_call_arguments.delta') out.calls[d.output_index].args += d.delta;
      if (d.type === 'response.completed') (out.usage = d.response.usage), (out.stop = d.response.status);
    } else {
      const cand = d.candidates[0];
      for (const p of cand.content.parts) {
        if (p.thoughtSignature) out.thinking.signature = p.thoughtSignature;
        if (p.thought) out.thinking.text += p.text;
        else if (p.text !== undefined) out.text += p.text;
        if (p.functionCall) out.calls.push({ id: p.functionCall.id, name: p.functionCall.name, args: JSON.stringify(p.functionCall.args) });
      }
      if (cand.finishReason) (out.stop = cand.finishReason), (out.usage = d.usageMetadata);
    }
  }
  out.calls = out.calls.filter(Boolean).map((c) => ({ id: c.id, name: c.name, arguments: JSON.parse(c.args) }));
  return out;
}

const fetchStream = (srv, body = {}, headers = HEADERS, signal) =>
  fetch(srv.url + streamPath(srv.provider, 'gemini-test'), {
    method: 'POST', headers, signal, body: JSON.stringify({ model: 'model-x', stream: true, messages: [], ...body }),
  });

async function withServer(options, f) {
  const srv = await startProviderServer(options);
  try {
    return await f(srv);
  } finally {
    await srv.close();
  }
}

test('split cuts by code point and never inside a surrogate pair', () => {
  assert.deepEqual(split('a😀b😀', 4), ['a', '😀', 'b', '😀']);
  assert.deepEqual(split('ab', 5), ['a', 'b']);
  assert.deepEqual(split('', 3), []);
  assert.equal(split('x'.repeat(1000), 7).join(''), 'x'.repeat(1000));
});

for (const provider of PROVIDERS) {
  test(`${provider}: the generated stream reassembles into the turn, framed as the provider frames it`, () => {
    for (const pieces of [1, 3, 9]) {
      const raw = sse(provider, TURN, { pieces });
      const sep = provider === 'google' ? '\r\n\r\n' : '\n\n';
      for (const e of raw) assert.ok(e.endsWith(sep) && e.indexOf(sep) === e.length - sep.length, `one event per string: ${JSON.stringify(e)}`);
      const evs = parseSse(raw.join(''));
      const got = reassemble(provider, evs);
      assert.equal(got.text, TURN.text);
      assert.equal(got.thinking.text, TURN.thinking.text);
      if (provider !== 'openai') assert.equal(got.thinking.signature, TURN.thinking.signature);
      assert.deepEqual(got.calls, TURN.toolCalls);
      if (provider === 'anthropic' || provider === 'openai-responses') {
        for (const e of evs) assert.equal(e.event, JSON.parse(e.data).type, 'the event name is the data type');
      } else {
        assert.ok(evs.every((e) => e.event === null));
      }
      // The text arrives in exactly `pieces` deltas.
      const isText = {
        anthropic: (d) => d.delta?.type === 'text_delta',
        openai: (d) => !!d.choices?.[0]?.delta?.content,
        'openai-responses': (d) => d.type === 'response.output_text.delta',
        google: (d) => d.candidates[0].content.parts.some((p) => p.text && !p.thought),
      }[provider];
      assert.equal(evs.filter((e) => e.data !== '[DONE]' && isText(JSON.parse(e.data))).length, pieces);
    }
  });
}

test('usage and stop in each provider: Anthropic start+delta, OpenAI last chunk with choices [] then [DONE], Responses completed, Gemini usageMetadata', () => {
  const a = reassemble('anthropic', parseSse(sse('anthropic', TURN).join('')));
  assert.deepEqual([a.usage.input_tokens, a.usage.cache_read_input_tokens, a.usage.output_tokens, a.stop], [25, 3, 40, 'tool_use']);
  const oRaw = sse('openai', TURN);
  assert.equal(oRaw.at(-1), 'data: [DONE]\n\n');
  const last = JSON.parse(oRaw.at(-2).slice(6));
  assert.deepEqual(last.choices, []);
  assert.deepEqual([last.usage.prompt_tokens, last.usage.completion_tokens, last.usage.prompt_tokens_details.cached_tokens], [28, 40, 3]);
  assert.equal(reassemble('openai', parseSse(oRaw.join(''))).stop, 'tool_calls');
  const r = parseSse(sse('openai-responses', TURN).join(''));
  assert.deepEqual(r.map((e) => JSON.parse(e.data).sequence_number), r.map((_, i) => i));
  assert.equal(JSON.parse(r.at(-1).data).response.usage.output_tokens_details.reasoning_tokens, 10);
  const g = reassemble('google', parseSse(sse('google', TURN).join('')));
  assert.deepEqual([g.usage.promptTokenCount, g.usage.candidatesTokenCount, g.usage.thoughtsTokenCount, g.usage.totalTokenCount, g.stop], [28, 30, 10, 68, 'STOP']);
  // Without tool calls, Gemini puts the signature on the last text part.
  const gt = sse('google', { text: 'hi there', thinking: TURN.thinking }, { pieces: 2 }).map((e) => JSON.parse(e.slice(6)));
  assert.equal(gt.at(-1).candidates[0].content.parts[0].thoughtSignature, TURN.thinking.signature);
  assert.equal(gt.at(-2).candidates[0].content.parts[0].thoughtSignature, undefined);
});

test('OpenAI Chat interleaves parallel tool calls by index; only the first piece carries id and name', () => {
  const chunks = parseSse(sse('openai', TURN, { pieces: 3 }).join('')).map((e) => (e.data === '[DONE]' ? undefined : JSON.parse(e.data).choices[0]?.delta.tool_calls?.[0])).filter(Boolean);
  assert.deepEqual(chunks.map((c) => c.index), [0, 1, 0, 1, 0, 1, 0, 1]);
  assert.deepEqual(chunks.map((c) => c.id ?? null), ['call_count', 'call_add', null, null, null, null, null, null]);
});

test('json() holds the same turn as the stream', () => {
  const a = json('anthropic', TURN);
  assert.deepEqual(a.content.map((b) => b.type), ['thinking', 'text', 'tool_use', 'tool_use']);
  assert.deepEqual(a.content[2].input, TURN.toolCalls[0].arguments);
  const o = json('openai', TURN).choices[0].message;
  assert.equal(o.content, TURN.text);
  assert.deepEqual(JSON.parse(o.tool_calls[1].function.arguments), TURN.toolCalls[1].arguments);
  const r = json('openai-responses', TURN);
  assert.deepEqual(r.output.map((i) => i.type), ['reasoning', 'message', 'function_call', 'function_call']);
  const g = json('google', TURN).candidates[0].content.parts;
  assert.deepEqual(g.map((p) => Object.keys(p).filter((k) => k !== 'thoughtSignature')[0]), ['text', 'text', 'functionCall', 'functionCall']);
});

for (const provider of PROVIDERS) {
  test(`${provider}: serves its real endpoint and headers; other paths get the provider's 404 and consume no script item`, async () => {
    await withServer({ provider, script: [{ turn: { text: 'first' } }, { turn: { text: 'second' } }] }, async (srv) => {
      const bad = await fetch(srv.origin + '/v1/complete', { method: 'POST', headers: HEADERS, body: '{}' });
      assert.equal(bad.status, 404);
      const badBody = await bad.json();
      if (provider === 'anthropic') assert.equal(badBody.error.type, 'not_found_error');
      else if (provider === 'google') assert.equal(badBody.error.status, 'NOT_FOUND');
      else assert.match(badBody.error.message, /Invalid URL \(POST \/v1\/complete\)/);

      const res = await fetchStream(srv, { stream_options: { include_usage: true } });
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type'), /^text\/event-stream/);
      const idHeader = { anthropic: 'request-id', openai: 'x-request-id', 'openai-responses': 'x-request-id', google: 'server' }[provider];
      assert.ok(res.headers.get(idHeader), idHeader);
      const got = reassemble(provider, parseSse(await res.text()));
      assert.equal(got.text, 'first', 'the 404 did not consume the first item');
      const rec = srv.requests[1];
      assert.equal(rec.method, 'POST');
      assert.equal(rec.item, 0);
      assert.equal(rec.outcome, 'complete');
      assert.equal(rec.body.model, 'model-x');
      assert.equal(rec.auth.key, 'sk-test');
      assert.equal(srv.requests[0].item, null);
      const expectedPath = { anthropic: '/v1/messages', openai: '/v1/chat/completions', 'openai-responses': '/v1/responses', google: '/v1beta/models/gemini-test:streamGenerateContent?alt=sse' }[provider];
      assert.equal(rec.path, expectedPath);
    });
  });
}

test('non-streamed requests get the JSON response; Gemini :generateContent and streamGenerateContent without alt=sse', async () => {
  await withServer({ provider: 'openai', script: [{ turn: { text: 'plain' } }] }, async (srv) => {
    const r = await fetch(srv.url + '/chat/completions', { method: 'POST', headers: HEADERS, body: JSON.stringify({ model: 'm', messages: [] }) });
    assert.match(r.headers.get('content-type'), /^application\/json/);
    assert.equal((await r.json()).choices[0].message.content, 'plain');
  });
  await withServer({ provider: 'google', script: [{ turn: { text: 'one' } }, { turn: { text: 'two words here' }, opts: { pieces: 3 } }] }, async (srv) => {
    const r = await fetch(srv.url + '/models/gemini-x:generateContent', { method: 'POST', headers: HEADERS, body: '{"contents":[]}' });
    const body = await r.json();
    assert.equal(body.candidates[0].content.parts[0].text, 'one');
    assert.equal(body.modelVersion, 'gemini-x', 'the model comes from the path');
    const a = await fetch(srv.url + '/models/gemini-x:streamGenerateContent', { method: 'POST', headers: HEADERS, body: '{"contents":[]}' });
    const arr = JSON.parse(await a.text());
    assert.equal(arr.length, 3);
    assert.equal(arr.map((c) => c.candidates[0].content.parts[0].text).join(''), 'two words here');
  });
});

test('OpenAI Chat sends usage only when stream_options.include_usage asks for it', async () => {
  await withServer({ provider: 'openai', script: [{ turn: TURN }, { turn: TURN }] }, async (srv) => {
    const without = parseSse(await (await fetchStream(srv)).text());
    assert.ok(without.every((e) => e.data === '[DONE]' || !('usage' in JSON.parse(e.data))));
    const withU = parseSse(await (await fetchStream(srv, { stream_options: { include_usage: true } })).text());
    assert.equal(JSON.parse(withU.at(-2).data).usage.total_tokens, 68);
  });
});

test('429 carries retry-after (Anthropic, OpenAI) or a RetryInfo delay (Gemini); 529 is Anthropic overloaded', async () => {
  for (const provider of PROVIDERS) {
    await withServer({ provider, script: [{ error: 429, retryAfter: 7 }] }, async (srv) => {
      const r = await fetchStream(srv);
      assert.equal(r.status, 429);
      const body = await r.json();
      if (provider === 'google') {
        assert.equal(body.error.status, 'RESOURCE_EXHAUSTED');
        assert.equal(body.error.details.find((d) => d['@type'].endsWith('RetryInfo')).retryDelay, '7s');
      } else {
        assert.equal(r.headers.get('retry-after'), '7');
        if (provider === 'anthropic') assert.deepEqual([body.type, body.error.type, body.request_id], ['error', 'rate_limit_error', r.headers.get('request-id')]);
        else assert.equal(body.error.code, 'rate_limit_exceeded');
      }
      assert.equal(srv.requests[0].outcome, 'refused');
    });
  }
  await withServer({ provider: 'anthropic', script: [{ error: 529 }, { error: 400, message: 'max_tokens: Field required' }] }, async (srv) => {
    const r = await fetchStream(srv);
    assert.equal(r.status, 529);
    assert.equal((await r.json()).error.type, 'overloaded_error');
    const r2 = await fetchStream(srv);
    assert.deepEqual((await r2.json()).error, { type: 'invalid_request_error', message: 'max_tokens: Field required' });
  });
});

test('requireKey: a wrong or missing key gets the provider auth error and consumes nothing; the auth scheme is recorded', async () => {
  const expect = { anthropic: [401, 401], openai: [401, 401], 'openai-responses': [401, 401], google: [400, 403] };
  for (const provider of PROVIDERS) {
    await withServer({ provider, requireKey: 'sk-right', script: [{ turn: { text: 'ok' } }] }, async (srv) => {
      const wrong = await fetchStream(srv);
      const missing = await fetchStream(srv, {}, { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' });
      assert.deepEqual([wrong.status, missing.status], expect[provider]);
      const wb = await wrong.json();
      if (provider === 'anthropic') assert.equal(wb.error.type, 'authentication_error');
      else if (provider === 'google') assert.equal(wb.error.details[0].reason, 'API_KEY_INVALID');
      else assert.equal(wb.error.code, 'invalid_api_key');
      const key = { anthropic: { 'x-api-key': 'sk-right' }, google: { 'x-goog-api-key': 'sk-right' } }[provider] ?? { authorization: 'Bearer sk-right' };
      const ok = await fetchStream(srv, {}, { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...key });
      assert.equal(ok.status, 200);
      assert.equal(reassemble(provider, parseSse(await ok.text())).text, 'ok');
      assert.deepEqual(srv.requests.map((r) => r.item), [null, null, 0]);
      assert.equal(srv.requests[2].auth.scheme, Object.keys(key)[0] === 'authorization' ? 'bearer' : Object.keys(key)[0]);
    });
  }
  await withServer({ provider: 'anthropic', script: [{ turn: {} }] }, async (srv) => {
    const r = await fetchStream(srv, {}, { 'content-type': 'application/json', 'x-api-key': 'k' });
    assert.equal(r.status, 400);
    assert.equal((await r.json()).error.message, 'anthropic-version: header is required');
  });
});

/** Reads a fetch body, returning {text, error} (error if the stream failed). */
async function readAll(res) {
  const dec = new TextDecoder();
  let text = '';
  try {
    for await (const c of res.body) text += dec.decode(c, { stream: true });
    return { text, error: null };
  } catch (error) {
    return { text, error };
  }
}

test('dropAfter K really cuts the socket after exactly K events (FIN and RST)', async () => {
  for (const provider of PROVIDERS) {
    for (const reset of [false, true]) {
      await withServer({ provider, script: [{ turn: TURN, dropAfter: 4, reset }] }, async (srv) => {
        const res = await fetchStream(srv);
        assert.equal(res.status, 200);
        const { text, error } = await readAll(res);
        assert.ok(error, 'the body read fails instead of ending cleanly');
        assert.equal(parseSse(text).length, 4);
        assert.ok(text.endsWith(provider === 'google' ? '\r\n\r\n' : '\n\n'), 'the 4 events arrived whole');
        assert.equal(srv.requests[0].outcome, 'dropped');
        assert.equal(srv.requests[0].eventsWritten, 4);
      });
    }
  }
});

test('pacing: events arrive in order, paceMs apart', async () => {
  const turn = { text: 'abcdef' };
  await withServer({ provider: 'openai', script: [{ turn, paceMs: 40, opts: { pieces: 6 } }] }, async (srv) => {
    const t0 = performance.now();
    const res = await fetchStream(srv, { stream_options: { include_usage: false } });
    const dec = new TextDecoder();
    const arrivals = [];
    let buf = '';
    for await (const c of res.body) {
      buf += dec.decode(c, { stream: true });
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        arrivals.push({ at: performance.now() - t0, data: buf.slice(6, i) });
        buf = buf.slice(i + 2);
      }
    }
    const texts = arrivals.filter((a) => a.data !== '[DONE]').map((a) => JSON.parse(a.data).choices[0].delta.content).filter(Boolean);
    assert.deepEqual(texts, ['a', 'b', 'c', 'd', 'e', 'f']);
    assert.equal(arrivals.length, 9); // role, 6 deltas, finish, [DONE]
    // Event i is written i * paceMs after the first, so it cannot arrive sooner
    // (a busy client may read several at once later, so only the lower bound is checked).
    arrivals.forEach((a, i) => assert.ok(a.at >= i * 40 - 2, `event ${i} arrived at ${a.at.toFixed(1)} ms, before ${i * 40} ms`));
    const last = arrivals.at(-1).at;
    assert.ok(last >= 8 * 40 - 2, `the stream took ${last} ms`);
  });
});

test('burst respects backpressure: an unread stream stalls the server, then arrives whole and in order', async () => {
  const text = 'x'.repeat(40000) + 'END';
  const turn = { text };
  await withServer({ provider: 'anthropic', script: [{ turn, burst: true, opts: { pieces: 40000 } }] }, async (srv) => {
    const expected = sse('anthropic', turn, { pieces: 40000 }).length;
    const res = await fetchStream(srv);
    await sleep(150);
    const rec = srv.requests[0];
    assert.equal(rec.eventsTotal, expected);
    assert.ok(rec.eventsWritten < expected, `the server waited for drain (${rec.eventsWritten} of ${expected} written)`);
    const { text: body, error } = await readAll(res);
    assert.equal(error, null);
    assert.equal(reassemble('anthropic', parseSse(body)).text, text);
    assert.equal(rec.eventsWritten, expected);
  });
});

test('malformedAt K: event K has invalid JSON, the others parse', async () => {
  await withServer({ provider: 'openai-responses', script: [{ turn: { text: 'abc' }, malformedAt: 3 }] }, async (srv) => {
    const evs = parseSse(await (await fetchStream(srv)).text());
    evs.forEach((e, i) => (i === 3 ? assert.throws(() => JSON.parse(e.data), SyntaxError) : JSON.parse(e.data)));
    assert.equal(evs[3].event, 'response.content_part.added', 'the framing is kept');
  });
});

test('mid-stream errors are each provider\'s documented error event', async () => {
  for (const provider of PROVIDERS) {
    await withServer({ provider, script: [{ turn: TURN, errorAfter: 2 }, { turn: TURN, errorAfter: 2, error: { kind: 'failed', message: 'boom' } }] }, async (srv) => {
      const text = await (await fetchStream(srv)).text();
      if (provider === 'google') {
        // Raw JSON after the SSE events, outside the framing.
        const tail = text.slice(text.lastIndexOf('\r\n\r\n') + 4);
        assert.deepEqual(JSON.parse(tail).error.status, 'UNAVAILABLE');
        assert.equal(parseSse(text.slice(0, text.length - tail.length)).length, 2);
        return;
      }
      const evs = parseSse(text);
      assert.equal(evs.length, 3);
      const last = JSON.parse(evs[2].data);
      if (provider === 'anthropic') assert.deepEqual([evs[2].event, last.type, last.error.type], ['error', 'error', 'overloaded_error']);
      if (provider === 'openai') assert.equal(last.error.type, 'server_error');
      if (provider === 'openai-responses') {
        assert.deepEqual([evs[2].event, last.type, last.sequence_number], ['error', 'error', 2]);
        const failed = parseSse(await (await fetchStream(srv)).text()).at(-1);
        assert.equal(failed.event, 'response.failed');
        assert.deepEqual(JSON.parse(failed.data).response.error, { code: 'server_error', message: 'boom' });
      }
    });
  }
});

test('hang: no byte until the client aborts; hangAfter: K events then silence', async () => {
  await withServer({ provider: 'anthropic', script: [{ hang: true }, { turn: TURN, hangAfter: 2 }] }, async (srv) => {
    const ac = new AbortController();
    const t = setTimeout(() => ac.abort(), 100);
    await assert.rejects(fetchStream(srv, {}, HEADERS, ac.signal), { name: 'AbortError' });
    clearTimeout(t);
    assert.equal(await srv.requests[0].finished, 'aborted');

    const ac2 = new AbortController();
    const res = await fetchStream(srv, {}, HEADERS, ac2.signal);
    assert.equal(res.status, 200);
    const reader = res.body.getReader();
    let text = '';
    const dec = new TextDecoder();
    while (parseSse(text).length < 2) text += dec.decode((await reader.read()).value, { stream: true });
    const stalled = await Promise.race([reader.read().then(() => 'data'), sleep(120).then(() => 'silence')]);
    assert.equal(stalled, 'silence');
    ac2.abort();
    assert.equal(await srv.requests[1].finished, 'aborted');
  });
});

test('script: times repeats an item, a function chooses per request, exhaustion is a provider 500', async () => {
  await withServer({ provider: 'google', script: [{ turn: { text: 'a' }, times: 2 }] }, async (srv) => {
    for (let i = 0; i < 2; i++) assert.equal((await fetchStream(srv)).status, 200);
    const r = await fetchStream(srv);
    assert.equal(r.status, 500);
    assert.equal((await r.json()).error.status, 'INTERNAL');
  });
  await withServer({ provider: 'openai', script: (rec, n) => ({ turn: { text: `${rec.body.model}#${n}` } }) }, async (srv) => {
    assert.equal(reassemble('openai', parseSse(await (await fetchStream(srv)).text())).text, 'model-x#0');
    assert.equal(reassemble('openai', parseSse(await (await fetchStream(srv)).text())).text, 'model-x#1');
  });
});

test('spawnProviderServer: the same server in a child process, its requests fetched over IPC', async () => {
  const { spawnProviderServer } = await import('./providers/spawn.mjs');
  const srv = await spawnProviderServer({ provider: 'anthropic', script: [{ turn: { text: 'from a child' }, times: 2 }] });
  try {
    assert.notEqual(srv.pid, process.pid);
    assert.equal(reassemble('anthropic', parseSse(await (await fetchStream(srv)).text())).text, 'from a child');
    const reqs = await srv.requests();
    assert.deepEqual(reqs.map((r) => [r.path, r.outcome, r.auth.scheme]), [['/v1/messages', 'complete', 'x-api-key']]);
  } finally {
    await srv.close();
  }
  await assert.rejects(fetchStream(srv), { name: 'TypeError' }, 'closed: the port no longer answers');
});
