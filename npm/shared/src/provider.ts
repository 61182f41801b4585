/**
 * Real model providers: Anthropic Messages, OpenAI Chat Completions, OpenAI
 * Responses and Gemini, streaming. Everything that decides is in the core
 * (request bodies from the same encoders as `toProvider`, SSE decoding, the
 * answer, error codes, retry waits, prices); this file only moves bytes:
 * `fetch`, the response body's reader, timers.
 *
 * Inside an `Agent`, the body's bytes go straight to the agent's machine, so
 * every piece is an event, durable as it arrives. Outside one, `complete()`
 * decodes with a standalone decoder and returns the assistant message.
 */
import { ForkpointError, call, toForkpointError, toJson } from './errors.js';
import type { AssistantReply, CompleteOptions, ModelProvider, ModelRef, ModelRequest } from './agent.js';

/** The wire formats (the `toProvider` targets). */
export type ProviderApi = 'anthropic' | 'openai' | 'openai-responses' | 'google';

/** Prices in dollars per million tokens. */
export interface Pricing {
  input: number;
  output: number;
  cacheRead?: number;
  cacheWrite?: number;
}

/** Extended thinking / reasoning: a token budget, an effort, or off. */
export type ThinkingOption = boolean | { budgetTokens?: number; effort?: 'minimal' | 'low' | 'medium' | 'high' };

/** What `createProvider` takes. */
export interface ProviderOptions {
  provider: ProviderApi;
  model: string;
  /** Default: `ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, `GEMINI_API_KEY` (or `GOOGLE_API_KEY`). Never stored. */
  apiKey?: string;
  /**
   * Any compatible endpoint (OpenRouter, vLLM, Ollama, a proxy, a local test
   * server). Default: `ANTHROPIC_BASE_URL` / `OPENAI_BASE_URL` /
   * `GOOGLE_GEMINI_BASE_URL` when set, else the provider's own.
   */
  baseURL?: string;
  /** Sent with every request (after forkpoint's own). */
  headers?: Record<string, string>;
  /** Retries of a request that failed before anything streamed (default 3). */
  maxRetries?: number;
  /** Longest wait for the response and between two pieces of its body (default 600,000 ms). */
  timeoutMs?: number;
  maxTokens?: number;
  thinking?: ThinkingOption;
  temperature?: number;
  /** Per-million-token prices (default: the core's table for common models). */
  pricing?: Pricing;
  /** The name the answers carry in `provider` (default: the vendor, e.g. `openai`). */
  name?: string;
  /** A `fetch` to use instead of the global one. */
  fetch?: typeof fetch;
}

/** A request the core built: a path under the base URL, headers, the exact body. */
export interface WireRequest {
  path: string;
  headers: Array<[string, string]>;
  /**
   * The JSON body: its text, or its UTF-8 bytes in parts sent in order (an
   * agent's request: the parts kept from its last request are the same
   * objects, never copied again; read them, never write them). A `send`
   * wrapper that needs the text decodes the parts joined (`Buffer.concat`).
   */
  body: string | readonly Uint8Array[];
}

/**
 * What `fetch` is given for `body`. Parts go as a stream (Node's own
 * `fetch`: each part written to the socket as it is, with the length
 * known; measured 105-134 ms for 99 MiB in 100 parts, where one
 * `Uint8Array` took 290-720 ms and a `Blob` 260-350 ms: undici copies
 * both), else as a `Blob` (browsers stream uploads only over HTTP/2).
 */
function fetchBody(body: string | readonly Uint8Array[], streams: boolean): { body: BodyInit; length?: number } {
  if (typeof body === 'string') return { body };
  if (body.length === 1) return { body: body[0] as Uint8Array<ArrayBuffer> };
  if (!streams) return { body: new Blob(body as Uint8Array<ArrayBuffer>[]) };
  let length = 0;
  for (const p of body) length += p.byteLength;
  let i = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      if (i < body.length) c.enqueue(body[i++]);
      else c.close();
    },
  });
  return { body: stream, length };
}

/**
 * A provider whose stream the agent's machine decodes itself (what
 * `createProvider` returns). It is also a plain `ModelProvider`.
 */
export interface StreamingProvider extends ModelProvider {
  readonly wire: {
    api: ProviderApi;
    options: { maxTokens?: number; temperature?: number; thinking?: ThinkingOption };
    pricing: Pricing | null;
    /** The shortest time between two writes of streamed pieces (group commit; the core's figure). */
    commitIntervalMs: number;
  };
  /**
   * Sends a request the core built; resolves with the response body as it
   * arrives. Failures before the body (refused connections, HTTP errors) are
   * retried here as the core says; a failure is a `ForkpointError` with a
   * `PROVIDER_*` code.
   */
  send(req: WireRequest, signal: AbortSignal): Promise<AsyncIterable<Uint8Array>>;
  /** How long to wait before retry number `attempt` (from 0). */
  /** The wait before retry `attempt` (from 0): what the headers ask (`retry-after-ms` wins), else a growing jittered wait (the core decides). */
  retryWaitMs(attempt: number, retryAfter?: string | null, retryAfterMs?: string | null): number;
  readonly maxRetries: number;
  /** @internal The texts no error or event may hold (the key, the extra headers' values). */
  secrets(): string[];
}

/** The native functions (napi or wasm) behind the providers. */
export interface NativeProviderLike {
  providerDefaultsJson(api: string): string;
  buildProviderRequestJson(api: string, optionsJson: string, system: string | null, messagesJson: string, toolsJson: string): string;
  providerHttpFailureJson(api: string, status: number, body: Uint8Array, retryAfter: string | null): string;
  providerRetryWaitMs(attempt: number, retryAfter: string | null, retryAfterMs: string | null, jitter: number, nowMs: number | null): number;
  NativeStreamDecoder: new (api: string, provider: string, model: string) => NativeStreamDecoderLike;
}

export interface NativeStreamDecoderLike {
  configure(nameMapJson: string | null, pricingJson: string | null): void;
  push(bytes: Uint8Array): string;
  finish(): string;
  readonly delivered: boolean;
}

interface Defaults {
  /** pi's `api` name of the format (`anthropic-messages`, …): what `meta.json` keeps. */
  piApi: string;
  baseURL: string;
  /** Environment variables that override the base URL (as the official SDKs read them). */
  baseVars: string[];
  authHeader: string;
  authPrefix: string;
  keyVars: string[];
  vendor: string;
  commitIntervalMs: number;
}

type Piece = { type: 'text' | 'thinking' | 'toolCall' | 'toolArgs' | 'usage'; index: number; text?: string };

/** `true` for what `createProvider` returned (the agent streams it itself). */
/**
 * @internal Marks a body from `send` whose pending read settles when the
 * signal given to `send` aborts (the fetch is aborted with it), so a reader
 * need not race each read against the signal.
 */
export const ENDS_ON_ABORT: unique symbol = Symbol('forkpoint.endsOnAbort');

export function isStreamingProvider(p: unknown): p is StreamingProvider {
  return !!p && typeof (p as StreamingProvider).send === 'function' && !!(p as StreamingProvider).wire;
}

const env = (name: string): string | undefined => {
  const e = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  const v = e?.[name];
  return v === undefined || v === '' ? undefined : v;
};

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(aborted());
    const t = setTimeout(() => {
      signal.removeEventListener('abort', stop);
      resolve();
    }, ms);
    const stop = () => {
      clearTimeout(t);
      reject(aborted());
    };
    signal.addEventListener('abort', stop, { once: true });
  });

const aborted = () => new ForkpointError({ code: 'ABORTED', message: 'the model call was aborted' });

/** Removes each secret from a text that may repeat it (an echoing proxy). */
const scrub = (text: string, secrets: string[]) => secrets.filter((k) => k.length >= 4).reduce((t, k) => t.split(k).join('[redacted]'), text);

/** The providers of one native module (napi or wasm). */
export function createProviders(native: NativeProviderLike) {
  function createProvider(opts: ProviderOptions): StreamingProvider {
    if (!opts || typeof opts !== 'object') throw new ForkpointError({ code: 'INVALID_INPUT', message: 'createProvider takes {provider, model, …}' });
    if (typeof opts.model !== 'string' || opts.model === '') throw new ForkpointError({ code: 'INVALID_INPUT', message: 'createProvider: model is required' });
    const d = JSON.parse(call(() => native.providerDefaultsJson(String(opts.provider)))) as Defaults;
    const api = opts.provider;
    const baseURL = (opts.baseURL ?? d.baseVars.map(env).find((v) => v !== undefined) ?? d.baseURL).replace(/\/+$/, '');
    const timeoutMs = opts.timeoutMs ?? 600_000;
    const maxRetries = Math.max(0, Math.floor(opts.maxRetries ?? 3));
    const doFetch = opts.fetch ?? globalThis.fetch;
    // Node's own fetch (undici) takes a stream body with its length (see
    // `fetchBody`); Bun, Deno and Electron, which also have `process`, get a Blob.
    const proc = (globalThis as { process?: { release?: { name?: string }; versions?: Record<string, string | undefined> } }).process;
    const streams = opts.fetch === undefined && proc?.release?.name === 'node' && !proc.versions?.bun && !proc.versions?.deno && !proc.versions?.electron;
    const options: StreamingProvider['wire']['options'] = {};
    if (opts.maxTokens !== undefined) options.maxTokens = opts.maxTokens;
    if (opts.temperature !== undefined) options.temperature = opts.temperature;
    if (opts.thinking !== undefined) options.thinking = opts.thinking;
    const name = opts.name ?? d.vendor;
    const key = (): string | undefined => opts.apiKey ?? d.keyVars.map(env).find((v) => v !== undefined);
    const host = (() => {
      try {
        return new URL(baseURL).host;
      } catch {
        throw new ForkpointError({ code: 'INVALID_INPUT', message: `createProvider: baseURL ${JSON.stringify(baseURL)} is not a URL` });
      }
    })();

    const retryWaitMs = (attempt: number, retryAfter?: string | null, retryAfterMs?: string | null) =>
      native.providerRetryWaitMs(attempt, retryAfter ?? null, retryAfterMs ?? null, Math.random(), Date.now());

    const secrets = (): string[] => {
      const k = key();
      return [...(k === undefined ? [] : [k]), ...Object.values(opts.headers ?? {}).map(String)];
    };

    /**
     * POSTs `body` to `url`. Node's fetch cannot follow a redirect of a body
     * in bytes: a stream (parts) cannot be sent twice, and Node 20's undici
     * fails on a `Uint8Array` ("detached ArrayBuffer"), both as "fetch
     * failed". So in Node a 307 or 308 to the same origin is followed here as
     * fetch follows it elsewhere (the same method and body, sent again, at
     * most 5 times), and any other redirect is PROVIDER_PROTOCOL naming where
     * it points (fetch would turn the POST into a GET, and the API key is not
     * sent to another origin). Elsewhere fetch follows redirects itself.
     */
    /** The errors of redirects `post` would not follow (not retried). */
    const unfollowed = new WeakSet<ForkpointError>();

    async function post(url: string, headers: Record<string, string>, body: WireRequest['body'], signal: AbortSignal): Promise<Response> {
      for (let hop = 0; ; hop++) {
        const b = fetchBody(body, streams);
        const init: RequestInit & { duplex?: 'half' } = { method: 'POST', headers, body: b.body, signal };
        if (b.length !== undefined) {
          init.headers = { ...headers, 'content-length': String(b.length) };
          init.duplex = 'half';
        }
        if (!streams) return doFetch(url, init);
        init.redirect = 'manual';
        const res = await doFetch(url, init);
        if (![301, 302, 303, 307, 308].includes(res.status)) return res;
        await res.body?.cancel().catch(() => {});
        const location = res.headers.get('location');
        let next: URL | null = null;
        try {
          next = location === null ? null : new URL(location, url);
        } catch {
          // not a URL: said below
        }
        const sameOrigin = next !== null && next.origin === new URL(url).origin;
        if ((res.status === 307 || res.status === 308) && sameOrigin && hop < 5) {
          url = next!.href;
          continue;
        }
        // Shown without any user and password the address may carry.
        if (next) next.username = next.password = '';
        const why =
          next === null
            ? 'without a usable location'
            : !sameOrigin
              ? `to another origin, ${next.origin} (the API key is not sent there)`
              : hop >= 5
                ? 'more than 5 times'
                : `with ${res.status}, which would turn the POST into a GET`;
        const err = new ForkpointError({
          code: 'PROVIDER_PROTOCOL',
          message: scrub(`${host} redirected the request ${why}${next ? `: set baseURL to the address it names, ${next.href}` : ''}`, secrets()),
        });
        unfollowed.add(err);
        throw err;
      }
    }

    async function send(req: WireRequest, signal: AbortSignal): Promise<AsyncIterable<Uint8Array>> {
      const secret = secrets();
      const apiKey = key();
      const headers: Record<string, string> = {};
      for (const [k, v] of req.headers) headers[k] = v;
      if (apiKey !== undefined) headers[d.authHeader] = d.authPrefix + apiKey;
      Object.assign(headers, opts.headers ?? {});
      for (let attempt = 0; ; attempt++) {
        if (signal.aborted) throw aborted();
        const ac = new AbortController();
        const onAbort = () => ac.abort();
        signal.addEventListener('abort', onAbort, { once: true });
        let timedOut = false;
        let timer = setTimeout(() => {
          timedOut = true;
          ac.abort();
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
        };
        let res: Response;
        try {
          res = await post(baseURL + req.path, headers, req.body, ac.signal);
        } catch (e) {
          done();
          if (signal.aborted) throw aborted();
          // A redirect that cannot be followed: the same at every attempt.
          if (e instanceof ForkpointError && unfollowed.has(e)) throw e;
          const why = timedOut ? `no answer in ${timeoutMs} ms` : describe(e);
          const err = new ForkpointError({ code: 'PROVIDER_UNAVAILABLE', message: scrub(`cannot reach ${host}: ${why}`, secret) });
          if (attempt >= maxRetries) throw err;
          await sleep(retryWaitMs(attempt, null), signal);
          continue;
        }
        if (!res.ok) {
          const body = await readCapped(res, MAX_ERROR_BODY);
          done();
          const retryAfter = res.headers.get('retry-after');
          const f = JSON.parse(call(() => native.providerHttpFailureJson(api, res.status, body, retryAfter))) as { code: string; message: string; retryable: boolean };
          const err = new ForkpointError({ code: f.code as ForkpointError['code'], message: scrub(f.message, secret) });
          if (!f.retryable || attempt >= maxRetries) throw err;
          await sleep(retryWaitMs(attempt, retryAfter, res.headers.get('retry-after-ms')), signal);
          continue;
        }
        if (!res.body) {
          done();
          throw new ForkpointError({ code: 'PROVIDER_PROTOCOL', message: `${host} answered ${res.status} without a body` });
        }
        const reader = res.body.getReader();
        // From here the timer measures the gap between two pieces: one timer,
        // which on firing looks at when the last piece came (no timer churn
        // per piece).
        let lastPiece = Date.now();
        const idle = () => {
          const left = lastPiece + timeoutMs - Date.now();
          if (left > 0) {
            timer = setTimeout(idle, left);
            return;
          }
          timedOut = true;
          ac.abort();
        };
        clearTimeout(timer);
        timer = setTimeout(idle, timeoutMs);
        // One promise per piece (the reader's): no async wrapper around it.
        const piece = (r: ReadableStreamReadResult<Uint8Array>): IteratorResult<Uint8Array> => {
          if (r.done) {
            done();
            return { done: true, value: undefined };
          }
          lastPiece = Date.now();
          return r;
        };
        const broke = (e: unknown): never => {
          done();
          if (signal.aborted) throw aborted();
          throw new ForkpointError({
            code: 'PROVIDER_UNAVAILABLE',
            message: scrub(timedOut ? `${host} sent nothing for ${timeoutMs} ms` : `the stream from ${host} broke: ${describe(e)}`, secret),
          });
        };
        const body: AsyncIterable<Uint8Array> = {
          [Symbol.asyncIterator]() {
            return {
              next: () => reader.read().then(piece, broke),
              async return(): Promise<IteratorResult<Uint8Array>> {
                done();
                ac.abort();
                reader.cancel().catch(() => {});
                return { done: true, value: undefined };
              },
            };
          },
        };
        // Its reads end when `signal` aborts: the agent need not race them.
        Object.defineProperty(body, ENDS_ON_ABORT, { value: true });
        return body;
      }
    }

    const provider: StreamingProvider = {
      provider: name,
      model: opts.model,
      api: d.piApi,
      wire: { api, options, pricing: opts.pricing ?? null, commitIntervalMs: d.commitIntervalMs },
      maxRetries,
      send,
      retryWaitMs,
      secrets,
      /** Outside an agent: the request encoded by the core, the answer decoded by it. */
      async complete(request: ModelRequest, o: CompleteOptions): Promise<AssistantReply> {
        const signal = o?.signal ?? new AbortController().signal;
        const optionsJson = toJson({ ...options, model: opts.model });
        const req = JSON.parse(
          call(() =>
            native.buildProviderRequestJson(api, optionsJson, request.system ?? null, toJson(request.messages), toJson(request.tools ?? [])),
          ),
        ) as WireRequest & { nameMap: Record<string, string> };
        const nameMap = toJson(req.nameMap ?? {});
        const pricing = opts.pricing ? toJson(opts.pricing) : null;
        for (let attempt = 0; ; attempt++) {
          const dec = new native.NativeStreamDecoder(api, name, opts.model);
          call(() => dec.configure(nameMap, pricing));
          const body = await send(req, signal);
          let failure: ForkpointError | null = null;
          try {
            for await (const chunk of body) {
              const pieces = JSON.parse(call(() => dec.push(chunk))) as Piece[];
              for (const p of pieces) {
                if ((p.type === 'text' || p.type === 'thinking') && p.text) o?.onDelta?.({ index: p.index, kind: p.type, text: p.text });
              }
            }
            return JSON.parse(call(() => dec.finish())) as AssistantReply;
          } catch (e) {
            const f = toForkpointError(e);
            failure = new ForkpointError({ code: f.code, message: scrub(f.message, secrets()) });
          }
          if (!signal.aborted && failure.code === 'PROVIDER_UNAVAILABLE') {
            // The body broke after the stream's last event: the answer is whole.
            try {
              return JSON.parse(dec.finish()) as AssistantReply;
            } catch (e) {
              // The stream's own error (an error event before the break) says
              // more than the break; an early end leaves the failure as it is.
              const own = toForkpointError(e);
              if (own.code !== 'PROVIDER_PROTOCOL') failure = new ForkpointError({ code: own.code, message: scrub(own.message, secrets()) });
            }
          }
          const transient = failure.code === 'PROVIDER_UNAVAILABLE' || failure.code === 'PROVIDER_RATE_LIMITED';
          if (signal.aborted || dec.delivered || !transient || attempt >= maxRetries) throw failure;
          await sleep(retryWaitMs(attempt, null), signal);
        }
      },
    };
    return provider;
  }

  /** The default `modelFactory`: a provider from what `meta.json` keeps (keys from the environment). */
  function providerFromRef(ref: ModelRef): StreamingProvider {
    // The core reads the stored `api` (pi's names) or, without one, the provider.
    let api: ProviderApi | null = null;
    try {
      api = (JSON.parse(native.providerDefaultsJson(ref.api || ref.provider)) as { api: ProviderApi }).api;
    } catch {
      api = null;
    }
    if (!api) {
      throw new ForkpointError({
        code: 'INVALID_INPUT',
        message: `model ${ref.provider}/${ref.model}: no built-in provider speaks its API (${ref.api ?? ref.provider}); pass a provider or a modelFactory`,
      });
    }
    return createProvider({ provider: api, model: ref.model, name: ref.provider });
  }

  return { createProvider, providerFromRef };
}

/** An error answer's body is read up to this many bytes (its message is at the start). */
const MAX_ERROR_BODY = 64 * 1024;

/** The first `max` bytes of a body (the rest is not read); empty if it cannot be read. */
async function readCapped(res: Response, max: number): Promise<Uint8Array> {
  if (!res.body) return new Uint8Array();
  const reader = res.body.getReader();
  const parts: Uint8Array[] = [];
  let n = 0;
  try {
    while (n < max) {
      const r = await reader.read();
      if (r.done) break;
      parts.push(r.value);
      n += r.value.length;
    }
  } catch {
    // the rest of the error text is lost; the status still says what happened
  } finally {
    reader.cancel().catch(() => {});
  }
  const out = new Uint8Array(Math.min(n, max));
  let at = 0;
  for (const p of parts) {
    const take = Math.min(p.length, out.length - at);
    out.set(p.subarray(0, take), at);
    at += take;
    if (at === out.length) break;
  }
  return out;
}

function describe(e: unknown): string {
  const err = e as { message?: string; cause?: { code?: string; message?: string } };
  const cause = err?.cause?.code ?? err?.cause?.message;
  return cause ? `${err.message ?? e} (${cause})` : String(err?.message ?? e);
}
