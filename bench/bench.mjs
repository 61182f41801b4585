// `npm run bench`: full load + context and lazy resume on generated pi sessions of
// 10 MB, 128 MB and 1 GB, each measurement in its own process, median of several
// runs; forkpoint (native Rust, Node addon, wasm in Node) against a plain-JS
// baseline in the same run. Prints a table and writes bench/results.json.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const root = fileURLToPath(new URL('..', import.meta.url));
const data = join(root, 'bench/data');
const gen = join(root, '../shared/tools/gen-session.mjs');
const native = join(root, 'target/release/examples/bench_native');
mkdirSync(data, { recursive: true });

const SIZES = (process.env.BENCH_SIZES ?? '10,128,1024').split(',').map(Number);
const RUNS = { 10: 7, 128: 5, 1024: 3 };
const runsFor = (mb) => Number(process.env.BENCH_RUNS ?? RUNS[mb] ?? 3);

function generate(name, mb, extra) {
  const file = join(data, `${name}-${mb}.jsonl`);
  const statsFile = file + '.stats.json';
  if (!existsSync(file) || !existsSync(statsFile)) {
    process.stderr.write(`generating ${file}\n`);
    const out = execFileSync(process.execPath, [gen, '--out', file, '--mb', String(mb), '--compactions', '3', '--branches', '5', '--seed', 'bench', ...extra, '--stats'], {
      encoding: 'utf8',
    });
    writeFileSync(statsFile, out);
  }
  return { file, stats: JSON.parse(readFileSync(statsFile, 'utf8')) };
}

function once(mode, file) {
  const r = mode.startsWith('native-')
    ? spawnSync(native, [mode.slice(7), file], { encoding: 'utf8', maxBuffer: 1 << 20 })
    : spawnSync(process.execPath, ['--max-old-space-size=16384', join(root, 'bench/worker.mjs'), mode, file], { encoding: 'utf8', maxBuffer: 1 << 20 });
  const line = r.stdout.trim().split('\n').pop() ?? '';
  try {
    return JSON.parse(line);
  } catch {
    return { error: (r.stderr || line || `exit ${r.status}`).trim().split('\n').slice(-3).join(' ').slice(0, 300) };
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

function measure(mode, file, runs, prepare) {
  const samples = [];
  for (let i = 0; i < runs; i++) {
    prepare?.();
    const r = once(mode, file);
    if (r.error) return { mode, error: r.error };
    samples.push(r);
  }
  return {
    mode,
    ms: median(samples.map((s) => s.ms)),
    msAll: samples.map((s) => +s.ms.toFixed(2)),
    rssPeakMb: median(samples.map((s) => s.rssPeakKb)) / 1024,
    contextMessages: samples[0].contextMessages,
  };
}

const baseline = measure('baseline', '', 3);
const baseRss = baseline.rssPeakMb;
const results = { date: new Date().toISOString(), machine: { cpus: (await import('node:os')).cpus().length, node: process.version }, nodeBaselineRssMb: baseRss, sizes: [] };

for (const mb of SIZES) {
  const runs = runsFor(mb);
  const full = generate('full', mb, []);
  const lazy = generate('lazy', mb, ['--compact-every-kb', '800']);
  const hint = lazy.file + '.idx.json';
  const row = { mb, bytes: full.stats.bytes, runs, full: [], lazy: [], stats: { full: full.stats, lazy: lazy.stats } };
  // pi on 1 GB needs more than the time a bench has (minutes, tens of GB).
  for (const mode of ['read-bytes', 'read', 'js-full', ...(mb <= 128 ? ['pi-full'] : []), 'native-full', 'napi-full', 'wasm-full']) {
    process.stderr.write(`${mb} MB ${mode}…\n`);
    row.full.push(measure(mode, full.file, runs));
  }
  for (const mode of ['js-full', 'napi-full', 'napi-lazy-scan', 'napi-lazy-first']) {
    process.stderr.write(`${mb} MB lazy set ${mode}…\n`);
    row.lazy.push(measure(mode, lazy.file, runs, () => rmSync(hint, { force: true })));
  }
  once('napi-lazy-hint', lazy.file); // writes the hint
  spawnSync(process.execPath, ['-e', `require('forkpoint').loadSessionLazy(${JSON.stringify(lazy.file)})`], { cwd: root });
  for (const mode of ['napi-lazy-hint', 'native-lazy']) {
    process.stderr.write(`${mb} MB lazy set ${mode}…\n`);
    row.lazy.push(measure(mode, lazy.file, runs));
  }
  results.sizes.push(row);
}

// The table.
const pad = (s, n) => String(s).padEnd(n);
const lpad = (s, n) => String(s).padStart(n);
const fmt = (ms) => (ms === undefined ? '—' : ms < 10 ? ms.toFixed(2) : ms < 100 ? ms.toFixed(1) : ms.toFixed(0));
const lines = [];
lines.push(`forkpoint benchmark — ${results.date} — ${results.machine.cpus} cores, Node ${results.machine.node}`);
lines.push(`Each figure: median of N runs, each in a fresh process; time of the operation alone. Node RSS baseline ${baseRss.toFixed(1)} MB.`);
lines.push('');
lines.push(`${pad('file', 14)}${pad('operation', 40)}${lpad('median ms', 11)}${lpad('vs JS', 9)}${lpad('peak RSS MB', 13)}${lpad('over Node', 11)}  ctx msgs`);
const label = {
  'read-bytes': 'read the bytes in 1 MiB chunks (the floor)',
  read: 'read the lines only (JS, decoded)',
  'pi-full': 'pi 0.73.1: SessionManager.open + context',
  'js-full': 'plain JS: JSON.parse every line + context',
  'native-full': 'forkpoint native Rust: full load + context',
  'napi-full': 'forkpoint Node addon: full load + context',
  'wasm-full': 'forkpoint wasm in Node: full load + context',
  'napi-lazy-scan': 'forkpoint addon: lazy resume, reverse scan',
  'napi-lazy-first': 'forkpoint addon: lazy, first open (no hint)',
  'napi-lazy-hint': 'forkpoint addon: lazy resume with hint',
  'native-lazy': 'forkpoint native Rust: lazy resume (hint)',
};
for (const row of results.sizes) {
  for (const [set, list, stats] of [['full', row.full, row.stats.full], ['lazy', row.lazy, row.stats.lazy]]) {
    const js = list.find((r) => r.mode === 'js-full');
    const name = `${row.mb} MB ${set === 'lazy' ? '(c800)' : ''}`;
    for (const r of list) {
      if (r.error) {
        lines.push(`${pad(name, 14)}${pad(label[r.mode], 40)}${lpad('failed', 11)}  ${r.error}`);
        continue;
      }
      const ratio = js && !js.error && r.mode !== 'js-full' ? `${(js.ms / r.ms).toFixed(1)}×` : '';
      const ok = r.contextMessages === -1 || r.contextMessages === stats.contextMessages ? '' : ` (expected ${stats.contextMessages}!)`;
      r.ratioVsJs = ratio ? js.ms / r.ms : undefined;
      lines.push(
        `${pad(name, 14)}${pad(label[r.mode], 40)}${lpad(fmt(r.ms), 11)}${lpad(ratio, 9)}${lpad(r.rssPeakMb.toFixed(1), 13)}${lpad((r.rssPeakMb - baseRss).toFixed(1), 11)}  ${r.contextMessages === -1 ? '' : r.contextMessages}${ok}`,
      );
    }
    lines.push('');
  }
}
// Goals from the issue, checked against this run.
const find = (mb, set, mode) => results.sizes.find((s) => s.mb === mb)?.[set].find((r) => r.mode === mode);
const goals = [];
const l1g = find(1024, 'lazy', 'napi-lazy-hint');
const l10 = find(10, 'lazy', 'napi-lazy-hint');
if (l1g && l10 && !l1g.error && !l10.error) {
  goals.push(`lazy resume 1 GB: ${fmt(l1g.ms)} ms (goal ≤ 20 ms) — ${l1g.ms <= 20 ? 'met' : 'NOT met'}`);
  goals.push(`lazy resume 1 GB vs 10 MB: ${(l1g.ms / l10.ms).toFixed(2)}× (goal ≤ 1.5×) — ${l1g.ms / l10.ms <= 1.5 ? 'met' : 'NOT met'}`);
  goals.push(`lazy resume 1 GB peak RSS over Node: ${(l1g.rssPeakMb - baseRss).toFixed(1)} MB (goal < 64 MB) — ${l1g.rssPeakMb - baseRss < 64 ? 'met' : 'NOT met'}`);
}
for (const row of results.sizes) {
  const first = find(row.mb, 'lazy', 'napi-lazy-first');
  const hinted = find(row.mb, 'lazy', 'napi-lazy-hint');
  if (first && hinted && !first.error && !hinted.error) {
    const r = first.ms / hinted.ms;
    goals.push(`lazy first open ${row.mb} MB (no hint): ${fmt(first.ms)} ms, ${r.toFixed(2)}× the hinted ${fmt(hinted.ms)} ms (goal ≤ 2×) — ${r <= 2 ? 'met' : 'NOT met'}`);
  }
}
const n128 = find(128, 'full', 'napi-full');
const j128 = find(128, 'full', 'js-full');
const r128 = find(128, 'full', 'read');
if (n128 && j128 && r128 && !n128.error && !j128.error) {
  goals.push(`addon full load + context 128 MB: ${(j128.ms / n128.ms).toFixed(1)}× faster than plain JS (goal ≥ 5×) — ${j128.ms / n128.ms >= 5 ? 'met' : 'NOT met'}`);
  goals.push(`addon vs reading the lines alone: ${(n128.ms / r128.ms).toFixed(2)}× the floor (goal ≤ 2×) — ${n128.ms / r128.ms <= 2 ? 'met' : 'NOT met'}`);
}
const b128 = find(128, 'full', 'read-bytes');
const w128 = find(128, 'full', 'wasm-full');
const p128 = find(128, 'full', 'pi-full');
if (n128 && b128 && w128 && !n128.error && !b128.error && !w128.error) {
  const mb128 = row128Bytes() / 2 ** 20;
  goals.push(`wasm full load 128 MB: ${(w128.ms / n128.ms).toFixed(2)}× the addon (goal ≤ 1.5×) — ${w128.ms / n128.ms <= 1.5 ? 'met' : 'NOT met'}`);
  goals.push(`addon full load 128 MB: ${(n128.ms / b128.ms).toFixed(2)}× reading the bytes (goal ≤ 1.5×) — ${n128.ms / b128.ms <= 1.5 ? 'met' : 'NOT met'}`);
  const over = (n128.rssPeakMb - baseRss) / mb128;
  goals.push(`addon full load 128 MB, peak RSS over Node: ${over.toFixed(2)}× the file (goal ≤ 1.2×) — ${over <= 1.2 ? 'met' : 'NOT met'}`);
  if (p128 && !p128.error) goals.push(`pi 0.73.1 full load 128 MB: ${fmt(p128.ms)} ms, ${(p128.ms / n128.ms).toFixed(1)}× the addon, ${(p128.ms / j128.ms).toFixed(2)}× the plain-JS baseline`);
}
function row128Bytes() {
  return results.sizes.find((s) => s.mb === 128).bytes;
}
const f1g = find(1024, 'full', 'napi-full');
if (f1g) goals.push(`1 GB full load through the addon: ${f1g.error ? 'FAILED: ' + f1g.error : fmt(f1g.ms) + ' ms, works'}`);
lines.push('Goals:');
for (const g of goals) lines.push('  ' + g);
results.goals = goals;
console.log(lines.join('\n'));
writeFileSync(join(root, 'bench/results.json'), JSON.stringify(results, null, 2) + '\n');
