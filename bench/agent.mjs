// The agent part of `npm run bench`: a 1,000-step agent (one tool call per
// step) on forkpoint's JSONStore, next to a plain-JS baseline persisting the
// way Kode's JSONStore does. Time and bytes written per step (first 50 vs last
// 50), totals, store size, and resume time and peak RSS in fresh processes.
// Adds an "agent" section to bench/results.json.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const root = fileURLToPath(new URL('..', import.meta.url));
const STEPS = Number(process.env.BENCH_AGENT_STEPS ?? 1000);
const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const base = join(root, 'bench/data/agent');

function once(mode, dir) {
  const r = spawnSync(process.execPath, [join(root, 'bench/agent-worker.mjs'), mode, dir, String(STEPS)], { encoding: 'utf8', maxBuffer: 64 << 20 });
  try {
    const out = JSON.parse(r.stdout.trim().split('\n').pop());
    if (out.error) throw new Error(out.error);
    return out;
  } catch (e) {
    throw new Error(`${mode}: ${e.message} ${r.stderr.slice(-500)}`);
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const avg = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
const sum = (xs) => xs.reduce((a, b) => a + b, 0);
const mb = (b) => (b / 2 ** 20).toFixed(2);

const rows = [];
for (const [name, run, resume] of [
  ['forkpoint (JSONStore: append-only, group commit, fsync)', 'fp-run', 'fp-resume'],
  ["plain JS as Kode's JSONStore (whole files rewritten, no fsync)", 'js-run', 'js-resume'],
]) {
  const dir = join(base, run);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const r = once(run, dir);
  const resumes = Array.from({ length: RUNS }, () => once(resume, dir));
  rows.push({
    name,
    first50ms: avg(r.ms.slice(0, 50)),
    last50ms: avg(r.ms.slice(-50)),
    totalS: sum(r.ms) / 1000,
    first50B: avg(r.bytes.slice(0, 50)),
    last50B: avg(r.bytes.slice(-50)),
    writtenB: sum(r.bytes),
    storeB: r.storeBytes,
    runRssMb: r.rssPeakKb / 1024,
    resumeMs: median(resumes.map((x) => x.ms)),
    resumeRssMb: median(resumes.map((x) => x.rssPeakKb)) / 1024,
    messages: resumes[0].messages,
  });
}

// The same agent at BIG steps, its store built by appending (bench/agent-worker.mjs fp-big).
const BIG = Number(process.env.BENCH_AGENT_BIG ?? 100000);
let big = null;
if (BIG > 0) {
  const dir = join(base, 'fp-big');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const r = spawnSync(process.execPath, [join(root, 'bench/agent-worker.mjs'), 'fp-big', dir, String(BIG)], { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`fp-big: ${r.stderr.slice(-500)}`);
  const built = JSON.parse(r.stdout.trim().split('\n').pop());
  const resumes = Array.from({ length: RUNS }, () => once('fp-resume', dir));
  big = {
    name: `forkpoint, ${BIG.toLocaleString('en')}-step agent (store built by appending)`,
    storeB: built.storeBytes,
    resumeMs: median(resumes.map((x) => x.ms)),
    resumeRssMb: median(resumes.map((x) => x.rssPeakKb)) / 1024,
    messages: resumes[0].messages,
    firstLoadMs: median(resumes.map((x) => x.messagesMs)),
  };
}

const [fp, js] = rows;
const pad = (s, n) => String(s).padStart(n);
const lines = [];
lines.push(`agent benchmark — ${new Date().toISOString()} — ${STEPS} steps, one tool call each; resume: median of ${RUNS} fresh processes`);
lines.push('');
lines.push(`${'store'.padEnd(64)}${pad('ms/step 1-50', 13)}${pad('951-1000', 10)}${pad('growth', 8)}${pad('total s', 9)}`);
for (const r of rows) lines.push(`${r.name.padEnd(64)}${pad(r.first50ms.toFixed(2), 13)}${pad(r.last50ms.toFixed(2), 10)}${pad((r.last50ms / r.first50ms).toFixed(2) + '×', 8)}${pad(r.totalS.toFixed(1), 9)}`);
lines.push('');
lines.push(`${'store'.padEnd(64)}${pad('KB/step 1-50', 13)}${pad('951-1000', 10)}${pad('written MB', 12)}${pad('store MB', 10)}${pad('written/store', 15)}`);
for (const r of rows) lines.push(`${r.name.padEnd(64)}${pad((r.first50B / 1024).toFixed(1), 13)}${pad((r.last50B / 1024).toFixed(1), 10)}${pad(mb(r.writtenB), 12)}${pad(mb(r.storeB), 10)}${pad((r.writtenB / r.storeB).toFixed(2) + '×', 15)}`);
lines.push('');
lines.push(`${'store'.padEnd(64)}${pad('resume ms', 11)}${pad('RSS MB', 8)}${pad('messages', 10)}${pad('store MB', 10)}`);
for (const r of [...rows, ...(big ? [big] : [])]) lines.push(`${r.name.padEnd(64)}${pad(r.resumeMs.toFixed(1), 11)}${pad(r.resumeRssMb.toFixed(1), 8)}${pad(r.messages, 10)}${pad(mb(r.storeB), 10)}`);
if (big) lines.push(`  (after the resume, the ${BIG.toLocaleString('en')}-step agent's first step that needs the history loads it whole: messages() took ${big.firstLoadMs.toFixed(0)} ms)`);
lines.push('');
lines.push('Goals:');
const g = (ok) => (ok ? 'met' : 'NOT met');
lines.push(`  step cost flat: last 50 ${(fp.last50ms / fp.first50ms).toFixed(2)}× the first 50 (goal ≤ 1.2×) — ${g(fp.last50ms <= 1.2 * fp.first50ms)}`);
lines.push(`  bytes written ${(fp.writtenB / fp.storeB).toFixed(2)}× the final store (goal ≤ 2×) — ${g(fp.writtenB <= 2 * fp.storeB)}`);
lines.push(`  resume of a ${STEPS}-step agent: ${fp.resumeMs.toFixed(1)} ms (goal ≤ 5 ms) — ${g(fp.resumeMs <= 5)}`);
if (big) lines.push(`  resume of a ${BIG.toLocaleString('en')}-step agent: ${big.resumeMs.toFixed(1)} ms, ${(big.resumeMs / fp.resumeMs).toFixed(2)}× the ${STEPS}-step one (goal ≤ 1.5×) — ${g(big.resumeMs <= 1.5 * fp.resumeMs)}`);
lines.push(`  vs the Kode-style baseline: last-50 step ${(js.last50ms / fp.last50ms).toFixed(1)}× faster, ${(js.writtenB / fp.writtenB).toFixed(1)}× fewer bytes written, resume ${(js.resumeMs / fp.resumeMs).toFixed(2)}× (the baseline reads whole JSON files and neither validates nor locks)`);
console.log(lines.join('\n'));

const resultsPath = join(root, 'bench/results.json');
const results = existsSync(resultsPath) ? JSON.parse(readFileSync(resultsPath, 'utf8')) : {};
results.agent = { date: new Date().toISOString(), steps: STEPS, rows, big };
writeFileSync(resultsPath, JSON.stringify(results, null, 2));
