// The event-log part of `npm run bench`: append throughput and latency with
// 'fsync' and 'group', and readSince at 99% of a 1,000,000-event log, each
// measured in fresh processes against plain-JS baselines. Prints a table and
// adds an "events" section to bench/results.json.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync, openSync, writeSync, closeSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const root = fileURLToPath(new URL('..', import.meta.url));
const data = join(root, 'bench/data');
mkdirSync(data, { recursive: true });
const N = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);

function once(mode, file, arg) {
  const r = spawnSync(process.execPath, [join(root, 'bench/events-worker.mjs'), mode, file, String(arg)], { encoding: 'utf8', maxBuffer: 1 << 20 });
  try {
    return JSON.parse(r.stdout.trim().split('\n').pop());
  } catch {
    return { error: (r.stderr || r.stdout || `exit ${r.status}`).slice(-300) };
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
function measure(mode, file, arg, prepare) {
  const rs = [];
  for (let i = 0; i < RUNS; i++) {
    prepare?.();
    const r = once(mode, file, arg);
    if (r.error) return { mode, error: r.error };
    rs.push(r);
  }
  const out = { mode, runs: rs.length };
  for (const k of Object.keys(rs[0])) if (typeof rs[0][k] === 'number') out[k] = median(rs.map((r) => r[k]));
  return out;
}

// Appends.
const tmp = join(data, 'append-events.jsonl');
const clean = () => {
  rmSync(tmp, { force: true });
  rmSync(tmp + '.idx.json', { force: true });
};
const appendCases = [
  ["forkpoint 'group', 1024 emits in flight", 'fp-append', 'group:200000:1024'],
  ["forkpoint 'fsync', 64 emits in flight", 'fp-append', 'fsync:3000:64'],
  ["forkpoint 'fsync', one emit at a time", 'fp-append', 'fsync:2000:1'],
  ['plain JS: write + fdatasync per event, one at a time', 'js-append-fsync', 2000],
  ['plain JS: write per event, no fsync (not durable; as Kode)', 'js-append-nosync', 200000],
];
const appends = appendCases.map(([desc, mode, arg]) => ({ desc, ...measure(mode, tmp, arg, clean) }));
clean();

// A 1,000,000-event log, written directly (the first open below builds its index).
const big = join(data, `events-${N}.jsonl`);
if (!existsSync(big)) {
  process.stderr.write(`generating ${big}\n`);
  const fd = openSync(big, 'w');
  let buf = [];
  const t = Date.parse('2026-01-01T00:00:00Z');
  for (let i = 1; i <= N; i++) {
    const channel = i % 50 === 0 ? 'monitor' : 'progress';
    const type = channel === 'monitor' ? 'token_usage' : 'text_chunk';
    buf.push(JSON.stringify({ seq: i, timestamp: t + i, channel, type, step: i >> 6, delta: `chunk ${i} of a streamed model answer, roughly one hundred bytes of text...` }));
    if (buf.length === 10000) {
      writeSync(fd, buf.join('\n') + '\n');
      buf = [];
    }
  }
  if (buf.length) writeSync(fd, buf.join('\n') + '\n');
  closeSync(fd);
}
rmSync(big + '.idx.json', { force: true });
const t0 = performance.now();
const build = spawnSync(process.execPath, ['-e', `require('forkpoint').EventLog.open(${JSON.stringify(big)}).then(l => l.close())`], { cwd: root });
const indexMs = performance.now() - t0;
if (build.status !== 0) process.stderr.write(String(build.stderr));
const since = Math.floor(N * 0.99);
const reads = [
  { desc: 'forkpoint: open + readSince(bookmark) → array', ...measure('fp-readsince', big, since) },
  { desc: 'forkpoint: open + subscribe({since}), iterate to the end', ...measure('fp-subscribe', big, since) },
  { desc: 'forkpoint: open + the same read as JSON text (no objects)', ...measure('fp-readjson', big, since) },
  { desc: 'plain JS floor: JSON.parse of those lines held in memory', ...measure('js-parse-floor', big, since) },
  { desc: 'plain JS: scan every line, JSON.parse, keep seq > since', ...measure('js-scan', big, since) },
];

const results = JSON.parse(existsSync(join(root, 'bench/results.json')) ? readFileSync(join(root, 'bench/results.json'), 'utf8') : '{}');
results.events = { date: new Date().toISOString(), appends, reads, indexBuildMs: indexMs, events: N, since, bytes: Number(spawnSync('stat', ['-c', '%s', big], { encoding: 'utf8' }).stdout) };
writeFileSync(join(root, 'bench/results.json'), JSON.stringify(results, null, 2) + '\n');

const f = (x, d = 1) => (x === undefined ? '—' : x.toFixed(d));
const lines = [];
lines.push(`event log benchmark — ${new Date().toISOString()} — median of ${RUNS} runs, each in a fresh process`);
lines.push('');
lines.push('append (each awaited emit resolves after the fsync that made it durable, except the last row)');
lines.push(`${'writer'.padEnd(60)}${'events'.padStart(8)}${'events/s'.padStart(11)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}`);
for (const r of appends) {
  if (r.error) lines.push(`${r.desc.padEnd(60)}failed: ${r.error}`);
  else lines.push(`${r.desc.padEnd(60)}${String(r.events).padStart(8)}${f(r.perSec, 0).padStart(11)}${f(r.p50, 3).padStart(9)}${f(r.p99, 3).padStart(9)}`);
}
lines.push('');
lines.push(`readSince at 99% of a ${N.toLocaleString('en')}-event log (${(results.events.bytes / 2 ** 20).toFixed(0)} MiB; the ${N - since} events after seq ${since}; index built once in ${f(indexMs, 0)} ms)`);
lines.push(`${'reader (times from before opening the file)'.padEnd(60)}${'first ms'.padStart(10)}${'end ms'.padStart(10)}${'events'.padStart(9)}${'vs scan'.padStart(9)}${'RSS MB'.padStart(9)}`);
const js = reads.at(-1);
for (const r of reads) {
  if (r.error) {
    lines.push(`${r.desc.padEnd(60)}failed: ${r.error}`);
    continue;
  }
  const ratio = r === js || js.error ? '' : `${f(js.ms / r.ms, 0)}×`;
  lines.push(`${r.desc.padEnd(60)}${f(r.first, 2).padStart(10)}${f(r.ms, 2).padStart(10)}${String(r.count).padStart(9)}${ratio.padStart(9)}${f(r.rssPeakKb / 1024, 1).padStart(9)}`);
}
const [group] = appends;
const [rs, sub] = reads;
lines.push('');
lines.push('Goals:');
if (!group.error) lines.push(`  group commit: ${f(group.perSec, 0)} events/s, every acknowledged event durable (goal ≥ 50,000) — ${group.perSec >= 50000 ? 'met' : 'NOT met'}`);
if (!rs.error && !js.error) lines.push(`  readSince near the end: ${f(js.ms / rs.ms, 0)}× faster than the scan, open included (goal ≥ 100×) — ${js.ms / rs.ms >= 100 ? 'met' : 'NOT met'}`);
if (!sub.error && !js.error) lines.push(`  subscribe near the end: first event ${f(js.first / sub.first, 0)}× sooner than the scan's, last ${f(js.ms / sub.ms, 0)}× sooner (no goal set)`);
console.log(lines.join('\n'));
