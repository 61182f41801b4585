// Durable streaming against the plain reader: a 10,000-chunk stream from a
// local server (a child process) in the provider's real format, paced (one
// event per millisecond) and in a burst, for Anthropic and OpenAI Chat.
//
//   forkpoint: an Agent with createProvider over a JSONStore: every piece an
//              event in the agent's log, durable (fsync'd) as it arrives, and
//              the answer stored in the session.
//   baseline:  a plain fetch + SSE reader that only concatenates text.
//
// Reports client CPU (process.cpuUsage) and wall time, the ratio to the
// baseline, and the latency from a chunk's arrival (the fetch body yields it)
// to its event being durable (the fsync of the addon's writer thread that
// wrote it, from Agent.streamWrites), p50/p99 over every chunk of the burst
// runs (one paced run), and to the agent's live listener seeing it (p99).
//
//   node bench/stream.mjs [--chunks 10000] [--runs-burst 5] [--runs-paced 3] [--json]
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { RUNNERS, runBench, benchText, MODES } from './stream-baseline.mjs';
import { spawnProviderServer } from '../tests/js/providers/spawn.mjs';
import { sse } from '../tests/js/providers/wire.mjs';

const require = createRequire(import.meta.url);
const { Agent, JSONStore, ToolRegistry, createProvider } = require('forkpoint');

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const chunks = Number(opt('chunks', 10000));
const runs = { burst: Number(opt('runs-burst', 5)), paced: Number(opt('runs-paced', 3)) };
const asJson = args.includes('--json');
const providers = ['anthropic', 'openai'];
const MODEL = { anthropic: 'claude-sonnet-4-5', openai: 'gpt-4.1' };
const log = (s) => asJson || console.error(s);

const dirs = [];
const PLACEHOLDER = 'http://forkpoint.invalid';

/** A fetch that sends to the server of the current run (agents are made before the clock starts). */
function routed(state, onBody) {
  return async (url, init) => {
    const res = await fetch(String(url).replace(PLACEHOLDER, state.url), init);
    return onBody ? onBody(res) : res;
  };
}

/** Agents made ahead, one per timed run (creating one is not part of a streamed step). */
function pool(provider, state, n, onBody) {
  const out = [];
  return (async () => {
    for (let i = 0; i < n; i++) {
      const dir = mkdtempSync(join(tmpdir(), 'fp-bench-stream-'));
      dirs.push(dir);
      const model = createProvider({ provider, model: MODEL[provider], apiKey: 'sk-bench', baseURL: PLACEHOLDER, fetch: routed(state, onBody) });
      out.push(await Agent.create({ model }, { store: new JSONStore(dir), toolRegistry: new ToolRegistry() }));
    }
    return out;
  })();
}

// ---------------------------------------------------------------- CPU and wall

const state = { url: '' };
const agents = {};
for (const p of providers) agents[p] = await pool(p, state, 2 * (runs.burst + 1 + runs.paced), null);
for (const p of providers) {
  RUNNERS[p]['forkpoint Agent (durable events)'] = async (url) => {
    state.url = url;
    const agent = agents[p].shift();
    const r = await agent.chat('Write a long text.');
    await agent.close();
    return { text: r.text };
  };
}
log(`stream: ${chunks} text chunks per stream; server in a child process; medians of ${runs.burst} burst runs (after 1 warm-up) and ${runs.paced} paced runs; node ${process.version}`);
const rows = await runBench({ chunks, runs, providers, onRow: (r) => log(`  ${r.provider} ${r.mode} ${r.runner}: ${r.cpuMs.toFixed(1)} ms CPU, ${r.wallMs.toFixed(1)} ms wall`) });

// ------------------------------------------------------- chunk → durable latency

/** Epoch milliseconds with sub-millisecond precision (the addon's write times are epoch based). */
const epoch = () => performance.timeOrigin + performance.now();

/**
 * Wraps a response so each piece of the body's arrival is recorded as [bytes
 * so far, time]: as little work on the JavaScript thread as a stamp can be,
 * so the measurement does not slow what it measures. `arrivalsOf` then finds
 * each word (`w000123` marks chunk 123) in the body's bytes.
 */
function timing(stamps) {
  return (res) => {
    let at = 0;
    const stamp = new TransformStream({
      transform(chunk, ctl) {
        at += chunk.length;
        stamps.push([at, epoch()]);
        ctl.enqueue(chunk);
      },
    });
    return new Response(res.body.pipeThrough(stamp), { status: res.status, headers: res.headers });
  };
}

/** Each word's arrival: the time of the piece that completed it. */
function arrivalsOf(stamps, body, chunks) {
  const arrivals = new Map();
  let from = 0;
  let k = 0;
  for (let i = 0; i < chunks; i++) {
    const id = String(i % 1e6).padStart(6, '0');
    const pos = body.indexOf(`w${id}`, from);
    if (pos < 0) continue; // split over two events: not counted
    from = pos;
    while (k < stamps.length && stamps[k][0] < pos + 7) k++;
    if (k < stamps.length) arrivals.set(id, stamps[k][1]);
  }
  return arrivals;
}

const pct = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

// chunk → durable: from the chunk's arrival (the fetch body yields it) to the
// end of the write (fsync) that made its event durable, as the addon's writer
// thread reports it (Agent.streamWrites: each write's time and last seq).
// chunk → listener: to the agent's live listener seeing the event, which in a
// burst waits for the JavaScript thread to finish reading.
const latency = [];
const latencyRuns = { burst: runs.burst, paced: 1 };
for (const p of providers) {
  for (const [mode, delivery] of Object.entries(MODES)) {
    const text = benchText(chunks);
    const events = sse(p, { text, usage: { input: 12, output: chunks } }, { pieces: chunks, includeUsage: true });
    const srv = await spawnProviderServer({ provider: p, script: [{ events, ...delivery, times: 1e9 }] });
    try {
      const durable = [];
      const seen = [];
      const body = Buffer.from(events.join(''));
      for (let run = 0; run < latencyRuns[mode]; run++) {
        const stamps = [];
        const lst = { url: srv.url };
        const [agent] = await pool(p, lst, 1, timing(stamps));
        let writes = [];
        agent.streamWrites = (w) => (writes = w);
        const marks = [];
        agent.on('text_chunk', (e) => marks.push([e.seq, e.delta, epoch()]));
        const r = await agent.chat('Write a long text.');
        if (r.text !== text) throw new Error('latency run: a different text');
        await agent.close();
        const arrivals = arrivalsOf(stamps, body, chunks);
        for (const m of marks.splice(0)) for (const w of m[1].matchAll(/w(\d{6})/g)) marks.push([m[0], arrivals.get(w[1]), m[2]]);
        let w = 0;
        for (const [seq, arrived, heard] of marks.sort((a, b) => a[0] - b[0])) {
          if (arrived === undefined) continue;
          while (w < writes.length && (writes[w].lastSeq ?? -1) < seq) w++;
          if (w === writes.length) throw new Error(`latency run: event ${seq} is in no write`);
          durable.push(writes[w].at - arrived);
          seen.push(heard - arrived);
        }
      }
      const row = { provider: p, mode, runs: latencyRuns[mode], samples: durable.length, p50: pct(durable, 0.5), p99: pct(durable, 0.99), max: Math.max(...durable), listenerP50: pct(seen, 0.5), listenerP99: pct(seen, 0.99) };
      latency.push(row);
      log(`  ${p} ${mode} chunk→durable: p50 ${row.p50.toFixed(2)} ms, p99 ${row.p99.toFixed(2)} ms; chunk→listener p50 ${row.listenerP50.toFixed(2)} ms, p99 ${row.listenerP99.toFixed(2)} ms (${row.samples} chunks, ${row.runs} runs)`);
    } finally {
      await srv.close();
    }
  }
}

for (const d of dirs) rmSync(d, { recursive: true, force: true });

// ---------------------------------------------------------------------- table

const out = [];
for (const p of providers) {
  for (const mode of Object.keys(MODES)) {
    const base = rows.find((r) => r.provider === p && r.mode === mode && r.runner.startsWith('plain'));
    const fp = rows.find((r) => r.provider === p && r.mode === mode && r.runner.startsWith('forkpoint'));
    const lat = latency.find((r) => r.provider === p && r.mode === mode);
    out.push({
      provider: p,
      mode,
      baselineCpuMs: base.cpuMs,
      forkpointCpuMs: fp.cpuMs,
      cpuRatio: fp.cpuMs / base.cpuMs,
      baselineWallMs: base.wallMs,
      forkpointWallMs: fp.wallMs,
      durableP50Ms: lat.p50,
      durableP99Ms: lat.p99,
      listenerP99Ms: lat.listenerP99,
    });
  }
}
if (asJson) {
  console.log(JSON.stringify({ chunks, runs, rows, latency, summary: out }, null, 2));
} else {
  const head = ['provider', 'mode', 'plain CPU ms', 'forkpoint CPU ms', 'CPU ratio', 'plain wall ms', 'forkpoint wall ms', 'chunk→durable p50', 'p99', 'chunk→listener p99'];
  const body = out.map((r) => [r.provider, r.mode, r.baselineCpuMs.toFixed(1), r.forkpointCpuMs.toFixed(1), `${r.cpuRatio.toFixed(2)}×`, r.baselineWallMs.toFixed(1), r.forkpointWallMs.toFixed(1), `${r.durableP50Ms.toFixed(2)} ms`, `${r.durableP99Ms.toFixed(2)} ms`, `${r.listenerP99Ms.toFixed(2)} ms`]);
  const w = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells) => cells.map((c, i) => (i < 2 ? c.padEnd(w[i]) : c.padStart(w[i]))).join('  ');
  console.log([line(head), line(w.map((n) => '-'.repeat(n))), ...body.map(line)].join('\n'));
  console.log('goals: CPU ≤ 1.3× the plain reader in both modes; chunk→durable p99 ≤ 15 ms paced, ≤ 25 ms burst');
}
