// The streaming baseline: "a plain fetch + SSE reader that only concatenates
// text", and a harness that measures client CPU and wall time while reading a
// 10,000-chunk stream from a local provider server, paced (one event per
// millisecond) and in a burst (as fast as the socket takes it).
//
//   node bench/stream-baseline.mjs [--chunks 10000] [--runs-burst 5] [--runs-paced 2]
//                                  [--providers anthropic,openai] [--json]
//
// The server runs in a child process (tests/js/providers/spawn.mjs), so
// process.cpuUsage() here counts only the client. To compare another client,
// add a runner `(url, mode) => Promise<{text}>` (url: the provider's baseURL,
// mode: 'paced' | 'burst'), e.g.
//   RUNNERS.anthropic.forkpoint = (url) => myStream(url);
// and call runBench() (or run this file).
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { spawnProviderServer } from '../tests/js/providers/spawn.mjs';
import { sse } from '../tests/js/providers/wire.mjs';

// ------------------------------------------------------------------ baseline

const SEPARATOR = /\r?\n\r?\n/;

const TEXT_OF = {
  anthropic: (d) => (d.type === 'content_block_delta' && d.delta.type === 'text_delta' ? d.delta.text : ''),
  openai: (d) => d.choices?.[0]?.delta?.content ?? '',
  'openai-responses': (d) => (d.type === 'response.output_text.delta' ? d.delta : ''),
  google: (d) => {
    let s = '';
    for (const p of d.candidates?.[0]?.content?.parts ?? []) if (p.text && !p.thought) s += p.text;
    return s;
  },
};

function formatOf(url) {
  if (url.includes('/messages')) return 'anthropic';
  if (url.includes('/chat/completions')) return 'openai';
  if (url.includes('/responses')) return 'openai-responses';
  if (url.includes(':streamGenerateContent')) return 'google';
  throw new Error(`plainReader: cannot tell the provider format of ${url}`);
}

/**
 * The baseline client: POSTs `body` as JSON to `url` (the full endpoint URL),
 * decodes the SSE body with a TextDecoderStream, splits it on blank lines,
 * JSON.parses each `data:` and appends the text delta. Nothing else: no
 * thinking, tools, usage, errors or persistence. `format` defaults to the one
 * the URL path names; `plainReader.anthropic(url, body, headers)` (and
 * `.openai`, `['openai-responses']`, `.google`) pin it.
 */
export async function plainReader(url, body, headers = {}, format = formatOf(url)) {
  const textOf = TEXT_OF[format];
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  let text = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    const blocks = buf.split(SEPARATOR);
    buf = blocks.pop();
    for (const block of blocks) {
      let data = '';
      for (const line of block.split(/\r?\n/)) if (line.startsWith('data:')) data += (data ? '\n' : '') + line.slice(5).trimStart();
      if (!data || data === '[DONE]') continue;
      text += textOf(JSON.parse(data));
    }
  }
  return { text };
}
for (const f of Object.keys(TEXT_OF)) plainReader[f] = (url, body, headers) => plainReader(url, body, headers, f);

// ------------------------------------------------------------------- harness

/** What each provider's request looks like (the server checks paths, headers and JSON). */
export const REQUESTS = {
  anthropic: {
    path: '/v1/messages',
    headers: { 'x-api-key': 'sk-bench', 'anthropic-version': '2023-06-01' },
    body: { model: 'claude-sonnet-4-5', max_tokens: 64000, stream: true, messages: [{ role: 'user', content: 'Write a long text.' }] },
  },
  openai: {
    path: '/chat/completions',
    headers: { authorization: 'Bearer sk-bench' },
    body: { model: 'gpt-4.1', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Write a long text.' }] },
  },
  'openai-responses': {
    path: '/responses',
    headers: { authorization: 'Bearer sk-bench' },
    body: { model: 'gpt-5', stream: true, input: 'Write a long text.' },
  },
  google: {
    path: '/models/gemini-2.5-flash:streamGenerateContent?alt=sse',
    headers: { 'x-goog-api-key': 'sk-bench' },
    body: { contents: [{ role: 'user', parts: [{ text: 'Write a long text.' }] }] },
  },
};

const baseline = (provider) => (url) => plainReader(url + REQUESTS[provider].path, REQUESTS[provider].body, REQUESTS[provider].headers, provider);

/** Runners by provider and name: `(url, mode) => Promise<{text}>`. Add one per line. */
export const RUNNERS = {
  anthropic: { 'plain fetch + SSE reader': baseline('anthropic') },
  openai: { 'plain fetch + SSE reader': baseline('openai') },
  'openai-responses': { 'plain fetch + SSE reader': baseline('openai-responses') },
  google: { 'plain fetch + SSE reader': baseline('google') },
};

/** The server's delivery per mode (script item fields). */
export const MODES = { burst: { burst: true }, paced: { paceMs: 1 } };

/** The streamed text: `chunks` words of 8 code points each (some end in an emoji), one word per chunk. */
export function benchText(chunks) {
  let s = '';
  for (let i = 0; i < chunks; i++) s += `w${String(i % 1e6).padStart(6, '0')}${i % 100 === 99 ? '😀' : ' '}`;
  return s;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/**
 * Runs every runner of every provider in `providers` in both modes; the burst
 * mode runs first and its first run is a warm-up (not counted). Returns rows
 * {provider, mode, runner, chunks, runs, wallMs, cpuMs, cpuUsPerChunk} (medians).
 */
export async function runBench({ chunks = 10000, runs = { burst: 5, paced: 2 }, providers = ['anthropic', 'openai'], runners = RUNNERS, onRow } = {}) {
  const text = benchText(chunks);
  const turn = { text, usage: { input: 12, output: chunks } };
  const rows = [];
  for (const provider of providers) {
    for (const [mode, delivery] of Object.entries(MODES)) {
      const n = runs[mode];
      // The events are made once here, so the server only writes them.
      const events = sse(provider, turn, { pieces: chunks, includeUsage: true });
      const srv = await spawnProviderServer({ provider, script: [{ events, ...delivery, times: 1e9 }] });
      try {
        // The runners take turns (run 1 of each, then run 2 of each, …), so a
        // drift of the machine's speed during the bench falls on all of them
        // alike instead of on whichever ran last.
        const named = Object.entries(runners[provider] ?? {});
        const walls = named.map(() => []);
        const cpus = named.map(() => []);
        for (let i = mode === 'burst' ? -1 : 0; i < n; i++) {
          for (const [k, [name, run]] of named.entries()) {
            const c0 = process.cpuUsage();
            const t0 = performance.now();
            const out = await run(srv.url, mode);
            const wall = performance.now() - t0;
            const cpu = process.cpuUsage(c0);
            if (out?.text !== text) throw new Error(`${name} (${provider}, ${mode}) returned a different text (${out?.text?.length} of ${text.length} chars)`);
            if (i < 0) continue;
            walls[k].push(wall);
            cpus[k].push((cpu.user + cpu.system) / 1000);
          }
        }
        for (const [k, [name]] of named.entries()) {
          const row = { provider, mode, runner: name, chunks, runs: n, wallMs: median(walls[k]), cpuMs: median(cpus[k]), cpuUsPerChunk: (median(cpus[k]) * 1000) / chunks };
          rows.push(row);
          onRow?.(row);
        }
      } finally {
        await srv.close();
      }
    }
  }
  return rows;
}

function table(rows) {
  const head = ['provider', 'mode', 'runner', 'chunks', 'runs', 'wall ms', 'CPU ms', 'CPU µs/chunk'];
  const body = rows.map((r) => [r.provider, r.mode, r.runner, String(r.chunks), String(r.runs), r.wallMs.toFixed(1), r.cpuMs.toFixed(1), r.cpuUsPerChunk.toFixed(2)]);
  const w = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells) => cells.map((c, i) => (i < 3 ? c.padEnd(w[i]) : c.padStart(w[i]))).join('  ');
  return [line(head), line(w.map((n) => '-'.repeat(n))), ...body.map(line)].join('\n');
}

async function main() {
  const args = process.argv.slice(2);
  const opt = (name, dflt) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 ? args[i + 1] : dflt;
  };
  const chunks = Number(opt('chunks', 10000));
  const runs = { burst: Number(opt('runs-burst', 5)), paced: Number(opt('runs-paced', 2)) };
  const providers = opt('providers', 'anthropic,openai').split(',');
  const asJson = args.includes('--json');
  if (!asJson) console.error(`stream baseline: ${chunks} text chunks per stream; server in a child process; medians of ${runs.burst} burst runs (after 1 warm-up) and ${runs.paced} paced runs (1 event/ms); node ${process.version}`);
  const rows = await runBench({ chunks, runs, providers, onRow: (r) => asJson || console.error(`  ${r.provider} ${r.mode} ${r.runner}: ${r.cpuMs.toFixed(1)} ms CPU, ${r.wallMs.toFixed(1)} ms wall`) });
  console.log(asJson ? JSON.stringify(rows, null, 2) : table(rows));
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) await main();
