// A local HTTP server on 127.0.0.1 that speaks one provider's real API: its
// endpoint paths, headers, SSE framing, error bodies and failure modes. Tests,
// the demo and the benchmarks point a client at `url` instead of the network.
//
//   const srv = await startProviderServer({ provider: 'anthropic', script: [
//     { turn: { text: 'Hello' } },                       // a streamed (or JSON) turn
//     { error: 429, retryAfter: 2 },                     // an HTTP error
//     { turn, dropAfter: 3 },                            // socket destroyed after 3 events
//   ] });
//   … client.baseURL = srv.url …
//   srv.requests[0].body.messages; await srv.close();
//
// Script items (one is consumed per request that reaches the endpoint; a
// request refused for its path, key, version header or JSON consumes none):
//   { turn, opts?, paceMs?, burst?, headers?, times? }
//       Streams the turn (wire.sse) when the request asks for a stream, or
//       answers its non-streamed JSON (wire.json). `opts` are wire options
//       (pieces, model, …). `paceMs`: delay between events (drift-free, the
//       first event right after the headers). `burst`: events are coalesced
//       into 64 KiB writes sent as fast as the socket takes them. Default: one
//       write per event, no delay. Every write respects backpressure (waits
//       for 'drain'). `times`: the item answers that many requests (default 1).
//   { turn, errorAfter: K, error?: {status, type, message, code, kind} }
//       K events, then the provider's mid-stream error (wire.streamError), then
//       the end of the response.
//   { turn, dropAfter: K, reset? }
//       K events (flushed to the socket), then the socket is destroyed (with
//       `reset`, by a TCP RST) without ending the chunked body.
//   { turn, malformedAt: K, malformed? }
//       Event K's data line carries invalid JSON (its JSON cut in half, or
//       `malformed`); the other events are sent unchanged.
//   { turn, hangAfter: K }   headers and K events, then nothing until the client goes away.
//   { hang: true }           no bytes at all (not even headers) until the client goes away.
//   { error: status, message?, type?, code?, retryAfter?, headers? }
//       The provider's HTTP error (wire.httpError): 400, 401, 403, 404, 429
//       (retry-after; Gemini: RetryInfo), 500, 503, 529 (Anthropic overloaded).
//   { events: [string…], status?, headers? }   these raw event strings, as they are.
//   { reply: { status, headers, body } }       any response (body: string, bytes or object).
// On non-streamed requests the stream faults apply as: hang / hangAfter hang,
// dropAfter destroys the socket before any byte; others answer the JSON.
// `script` may also be a function `(record, n) => item`. When the script is
// exhausted the server answers a 500 in the provider's format.
//
// Each entry of `requests`: { n, method, path, headers, body (parsed JSON, or
// the raw text if it is not JSON), auth: {scheme, key} | null, stream, model,
// item (script index or null), status, eventsWritten, eventsTotal, outcome }
// with outcome 'complete' | 'aborted' (the client went away first) | 'dropped'
// | 'refused' (answered an error) | 'pending', and a non-enumerable `finished`
// promise resolving to the outcome.

import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { sse, json, httpError, streamError, okHeaders, PROVIDERS } from './wire.mjs';

const API_PATH = { anthropic: '', openai: '/v1', 'openai-responses': '/v1', google: '/v1beta' };

function route(provider, pathname, body, query) {
  const obj = body && typeof body === 'object' ? body : {};
  switch (provider) {
    case 'anthropic':
      return pathname === '/v1/messages' ? { stream: obj.stream === true, model: obj.model } : null;
    case 'openai':
      return pathname === '/v1/chat/completions' ? { stream: obj.stream === true, model: obj.model } : null;
    case 'openai-responses':
      return pathname === '/v1/responses' ? { stream: obj.stream === true, model: obj.model } : null;
    case 'google': {
      const m = /^\/v1beta\/models\/([^/:]+):(streamGenerateContent|generateContent)$/.exec(pathname);
      if (!m) return null;
      const stream = m[2] === 'streamGenerateContent';
      return { stream, model: decodeURIComponent(m[1]), jsonArray: stream && query.get('alt') !== 'sse' };
    }
  }
}

function authOf(provider, headers, query) {
  const bearer = /^Bearer\s+(.+)$/i.exec(headers.authorization ?? '');
  if (provider === 'anthropic') {
    if (headers['x-api-key'] !== undefined) return { scheme: 'x-api-key', key: headers['x-api-key'] };
    return bearer ? { scheme: 'bearer', key: bearer[1] } : null;
  }
  if (provider === 'google') {
    if (headers['x-goog-api-key'] !== undefined) return { scheme: 'x-goog-api-key', key: headers['x-goog-api-key'] };
    return query.has('key') ? { scheme: 'query', key: query.get('key') } : null;
  }
  return bearer ? { scheme: 'bearer', key: bearer[1] } : null;
}

// The provider's answer to a missing or wrong key. Gemini answers a wrong key
// with 400 API_KEY_INVALID and a missing one with 403, not 401.
function authError(provider, auth, requestId) {
  switch (provider) {
    case 'anthropic':
      return httpError(provider, 401, { requestId, message: auth ? 'invalid x-api-key' : 'x-api-key header is required' });
    case 'google':
      return auth
        ? httpError(provider, 400, {
            message: 'API key not valid. Please pass a valid API key.',
            details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com', metadata: { service: 'generativelanguage.googleapis.com' } }],
          })
        : httpError(provider, 403, {});
    default:
      return auth
        ? httpError(provider, 401, { requestId, message: `Incorrect API key provided: ${mask(auth.key)}. You can find your API key at https://platform.openai.com/account/api-keys.` })
        : httpError(provider, 401, { requestId, code: null, message: "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY). You can obtain an API key from https://platform.openai.com/account/api-keys." });
  }
}
const mask = (k) => (k.length > 8 ? `${k.slice(0, 3)}*********${k.slice(-4)}` : k);

function badJson(provider, requestId) {
  const message = {
    anthropic: 'There was an issue with your request body: invalid JSON',
    google: 'Invalid JSON payload received. Unexpected token.',
  }[provider] ?? "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)";
  return httpError(provider, 400, { requestId, message, param: null });
}

function notFound(provider, method, path, requestId) {
  if (provider === 'anthropic') return httpError(provider, 404, { requestId });
  if (provider === 'google') return httpError(provider, 404, { message: `The requested URL ${path} was not found on this server.` });
  return httpError(provider, 404, { requestId, message: `Invalid URL (${method} ${path})`, code: null });
}

const pad = (n, w) => String(n).padStart(w, '0');

function idsFor(provider, n) {
  return {
    message: {
      anthropic: `msg_01FkpWire${pad(n, 16)}`, openai: `chatcmpl-FkpWire${pad(n, 21)}`,
      'openai-responses': `resp_fkpwire${pad(n, 24)}`, google: `FkpWire${pad(n, 13)}`,
    }[provider],
    created: Math.floor(Date.now() / 1000),
  };
}

// Event K with its JSON cut in half (framing kept).
function corrupt(event, replacement) {
  const at = event.indexOf('data: ');
  if (at < 0) return replacement ?? event.slice(0, Math.floor(event.length / 2));
  const end = event.indexOf('\n', at);
  const data = event.slice(at + 6, end < 0 ? undefined : end).replace(/\r$/, '');
  const bad = replacement ?? data.slice(0, Math.max(1, Math.floor(data.length / 2)));
  return event.slice(0, at + 6) + bad + event.slice(at + 6 + data.length);
}

// Gemini's streamGenerateContent without alt=sse: one JSON array, written element by element.
function jsonArray(events) {
  const objs = events.map((e) => JSON.parse(e.slice(6)));
  return objs.map((o, i) => (i === 0 ? '[' : ',\r\n') + JSON.stringify(o, null, 2) + (i === objs.length - 1 ? ']' : ''));
}

// Burst: events joined into writes of about `size` characters; `weights[i]` events per write.
function coalesce(events, size = 65536) {
  const chunks = [];
  const weights = [];
  let cur = '';
  let w = 0;
  for (const e of events) {
    cur += e;
    w++;
    if (cur.length >= size) {
      chunks.push(cur);
      weights.push(w);
      cur = '';
      w = 0;
    }
  }
  if (cur) {
    chunks.push(cur);
    weights.push(w);
  }
  return { chunks, weights };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function drained(res) {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

function gone(res) {
  return new Promise((resolve) => (res.destroyed || res.closed ? resolve() : res.once('close', resolve)));
}

/**
 * Writes `chunks` in order with pacing and backpressure; counts them into
 * `rec.eventsWritten` (`weights[i]` events per chunk). With `flush`, waits
 * until the last chunk has left the process. Returns false if the client went away.
 */
async function writeAll(res, rec, chunks, { paceMs = 0, weights, flush = false } = {}) {
  const start = performance.now();
  for (let i = 0; i < chunks.length; i++) {
    if (paceMs > 0) {
      const wait = start + i * paceMs - performance.now();
      if (wait > 0) await sleep(wait);
    }
    if (res.destroyed) return false;
    const last = i === chunks.length - 1;
    let ok;
    if (last && flush) {
      await new Promise((resolve) => {
        ok = res.write(chunks[i], resolve);
        res.once('close', resolve);
      });
    } else {
      ok = res.write(chunks[i]);
    }
    rec.eventsWritten += weights ? weights[i] : 1;
    if (!ok && !res.destroyed) await drained(res);
  }
  return !res.destroyed;
}

/**
 * Starts a server for `provider` on 127.0.0.1 (an ephemeral port).
 * Options: provider, script (array or function), requireKey (the key a request
 * must carry, else the provider's auth error), opts (wire options for every
 * turn), headers (extra response headers), lenient (skip the anthropic-version
 * check), host, port.
 * Returns { provider, url (the client's baseURL: origin for anthropic, …/v1 for
 * openai and openai-responses, …/v1beta for google), origin, port, requests, close() }.
 */
export async function startProviderServer({ provider, script = [], requireKey, opts: wireDefaults = {}, headers: extraHeaders = {}, lenient = false, host = '127.0.0.1', port = 0 } = {}) {
  if (!PROVIDERS.includes(provider)) throw new Error(`unknown provider ${JSON.stringify(provider)} (one of ${PROVIDERS.join(', ')})`);
  const requests = [];
  let cursor = 0;
  let usedOfCursor = 0;
  let served = 0;

  const nextItem = (rec) => {
    if (typeof script === 'function') return { item: script(rec, served), index: served++ };
    while (cursor < script.length) {
      const item = script[cursor];
      if (usedOfCursor < (item.times ?? 1)) {
        usedOfCursor++;
        served++;
        return { item, index: cursor };
      }
      cursor++;
      usedOfCursor = 0;
    }
    return { item: undefined, index: null };
  };

  async function handle(req, res) {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const raw = Buffer.concat(chunks).toString('utf8');
    const u = new URL(req.url, 'http://127.0.0.1');
    let body = raw;
    let parsed = false;
    try {
      body = raw ? JSON.parse(raw) : null;
      parsed = true;
    } catch {
      /* keep the raw text */
    }
    const n = requests.length + 1;
    const requestId = `req_011CFkpWire${pad(n, 12)}`;
    const rec = {
      n, method: req.method, path: req.url, headers: req.headers, body, auth: authOf(provider, req.headers, u.searchParams),
      stream: false, model: undefined, item: null, status: 0, eventsWritten: 0, eventsTotal: 0, outcome: 'pending',
    };
    let settle;
    Object.defineProperty(rec, 'finished', { value: new Promise((r) => (settle = r)), enumerable: false });
    requests.push(rec);
    const finish = (outcome) => {
      if (rec.outcome === 'pending') rec.outcome = outcome;
      settle(rec.outcome);
    };
    res.on('close', () => finish(res.writableFinished ? 'complete' : 'aborted'));

    const answer = ({ status, headers, body: b }, outcome = 'refused') => {
      rec.status = status;
      rec.outcome = outcome;
      res.writeHead(status, { ...headers, ...extraHeaders });
      res.end(typeof b === 'string' || b instanceof Uint8Array ? b : JSON.stringify(b));
    };

    const r = req.method === 'POST' ? route(provider, u.pathname, body, u.searchParams) : null;
    if (!r) return answer(notFound(provider, req.method, u.pathname, requestId));
    if (requireKey !== undefined && rec.auth?.key !== requireKey) return answer(authError(provider, rec.auth, requestId));
    if (provider === 'anthropic' && !lenient && !req.headers['anthropic-version']) {
      return answer(httpError(provider, 400, { requestId, message: 'anthropic-version: header is required' }));
    }
    if (!parsed || body === null || typeof body !== 'object') return answer(badJson(provider, requestId));
    rec.stream = r.stream;
    rec.model = r.model;

    const { item, index } = nextItem(rec);
    rec.item = index;
    if (!item) return answer(httpError(provider, 500, { requestId, message: `forkpoint test server: script exhausted after ${served} request(s)` }));

    if (item.hang) {
      rec.status = 0;
      return gone(res);
    }
    if (typeof item.error === 'number') {
      const e = httpError(provider, item.error, { requestId, ...item });
      return answer({ ...e, headers: { ...e.headers, ...(item.headers ?? {}) } });
    }
    if (item.reply) return answer({ status: 200, headers: {}, ...item.reply }, 'complete');

    const base = { ...okHeaders(provider, { requestId, json: !r.stream }), ...extraHeaders, ...(item.headers ?? {}) };
    if (!r.stream && item.turn) {
      if (item.hangAfter !== undefined) return gone(res);
      if (item.dropAfter !== undefined) {
        rec.outcome = 'dropped';
        return item.reset ? req.socket.resetAndDestroy() : req.socket.destroy();
      }
      const wopts = { ...wireDefaults, ids: idsFor(provider, n), model: r.model, ...(item.opts ?? {}) };
      return answer({ status: 200, headers: base, body: json(provider, item.turn, wopts) }, 'complete');
    }

    // A stream.
    let events;
    if (item.events) {
      events = item.events;
    } else {
      const wopts = { ...wireDefaults, ids: idsFor(provider, n), model: r.model };
      if (provider === 'openai') {
        wopts.includeUsage = body.stream_options?.include_usage === true;
        wopts.obfuscation = body.stream_options?.include_obfuscation !== false;
      }
      if (provider === 'openai-responses') wopts.obfuscation = body.stream_options?.include_obfuscation !== false;
      Object.assign(wopts, item.opts ?? {});
      events = sse(provider, item.turn ?? {}, wopts);
      if (r.jsonArray) events = jsonArray(events);
      if (item.malformedAt !== undefined) events = events.map((e, i) => (i === item.malformedAt ? corrupt(e, item.malformed) : e));
      if (item.errorAfter !== undefined) {
        const err = streamError(provider, { sequenceNumber: item.errorAfter, ...wopts, ...(item.error ?? {}) });
        events = [...events.slice(0, item.errorAfter), err];
      }
    }
    const cut = item.dropAfter ?? item.hangAfter;
    if (cut !== undefined) events = events.slice(0, cut);
    rec.eventsTotal = events.length;
    rec.status = item.status ?? 200;
    if (r.jsonArray) base['content-type'] = 'application/json; charset=UTF-8';
    res.writeHead(rec.status, base);
    res.flushHeaders();

    const { chunks: chunked, weights } = item.burst ? coalesce(events) : { chunks: events, weights: undefined };
    const alive = await writeAll(res, rec, chunked, { paceMs: item.burst ? 0 : item.paceMs ?? 0, weights, flush: item.dropAfter !== undefined });
    if (!alive) return;
    if (item.dropAfter !== undefined) {
      rec.outcome = 'dropped';
      if (item.reset) res.socket.resetAndDestroy();
      else res.socket.destroy();
      return;
    }
    if (item.hangAfter !== undefined) return gone(res);
    res.end();
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err) => {
      if (process.env.FKP_SERVER_DEBUG) console.error(err);
      res.destroy(err);
    });
  });
  server.keepAliveTimeout = 5000;
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const addr = server.address();
  const origin = `http://${host}:${addr.port}`;
  return {
    provider,
    origin,
    url: origin + API_PATH[provider],
    port: addr.port,
    requests,
    /** Stops listening and cuts every open connection (hung streams included). */
    close() {
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

/** The URL path of the streaming endpoint relative to `url` (for plain fetch clients). */
export function streamPath(provider, model) {
  switch (provider) {
    case 'anthropic': return '/v1/messages';
    case 'openai': return '/chat/completions';
    case 'openai-responses': return '/responses';
    case 'google': return `/models/${encodeURIComponent(model)}:streamGenerateContent?alt=sse`;
  }
  throw new Error(`unknown provider ${provider}`);
}
