// The browser agent part of `npm run bench`: the 1,000-step agent of
// bench/agent.mjs (one tool call per step) run by forkpoint-web's Agent on
// IndexedDbAgentStore in Chromium, next to plain-JS baselines persisting the
// same conversation the way a typical browser app does (the whole message
// array JSON.stringify-ed into one IndexedDB record, or one localStorage key,
// per save), all in bench/agent-page.html. Time per step (first 50 vs last 50),
// then resume in fresh pages (new tabs of the same profile, on disk).
// BENCH_AGENT_STEPS (default 1000), BENCH_RUNS resumes (default 5).
// Adds an "agentBrowser" section to bench/results.json.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serve } from '../tests/browser/server.mjs';
import { CHROMIUM, CHROMIUM_ARGS } from '../tests/browser/chromium.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const STEPS = Number(process.env.BENCH_AGENT_STEPS ?? 1000);
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
if (!(STEPS >= 100) || !(RUNS >= 1)) throw new Error('BENCH_AGENT_STEPS must be at least 100 and BENCH_RUNS at least 1');
if (!existsSync(CHROMIUM)) {
  console.log('browser agent benchmark skipped: Chromium is not installed');
  process.exit(0);
}

const IMPLS = [
  { key: 'forkpoint', name: 'forkpoint-web (Agent, IndexedDbAgentStore, strict)', db: 'bench-agent' },
  { key: 'idb', name: 'plain JS: whole array → 1 IDB record/save (default)', db: 'bench-agent-plain' },
  { key: 'idb-strict', name: 'plain JS: the same, durability strict', db: 'bench-agent-plain-strict' },
  { key: 'localStorage', name: 'plain JS: whole array → localStorage/save', db: null },
];

// A persistent profile (IndexedDB on disk, as in a real browser; a default
// Playwright context keeps it in memory), shared by every page of the run.
const profile = mkdtempSync(join(tmpdir(), 'forkpoint-agent-bench-'));
const server = await serve();
const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, args: CHROMIUM_ARGS });
const version = context.browser()?.version() ?? '';
const errors = [];
async function fresh() {
  const page = await context.newPage();
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${server.url}/bench/agent-page.html`);
  await page.waitForFunction(() => window.ready === true, null, { timeout: 60_000 });
  return page;
}
const t0 = Date.now();
const raw = {};
try {
  for (const p of context.pages()) await p.close();
  for (const impl of IMPLS) {
    const page = await fresh();
    const run =
      impl.key === 'forkpoint'
        ? await page.evaluate(([db, n]) => window.runForkpoint(db, n), [impl.db, STEPS])
        : await page.evaluate(([k, db, n]) => window.runBaseline(k, db, n), [impl.key, impl.db, STEPS]);
    await page.close();
    const resumes = [];
    for (let i = 0; i < RUNS; i++) {
      const p = await fresh();
      resumes.push(
        impl.key === 'forkpoint'
          ? await p.evaluate(([db, n]) => window.resumeForkpoint(db, n), [impl.db, STEPS])
          : await p.evaluate(([k, db, n]) => window.resumeBaseline(k, db, n), [impl.key, impl.db, STEPS]),
      );
      await p.close();
    }
    raw[impl.key] = { run, resumes };
    console.error(`  ${impl.key}: done (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
  }
} finally {
  await context.close();
  await server.close();
  rmSync(profile, { recursive: true, force: true });
}
if (errors.length) throw new Error(`page errors: ${errors.join('\n')}`);

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const avg = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
const sum = (xs) => xs.reduce((a, b) => a + b, 0);
const rows = IMPLS.map((impl) => {
  const { run, resumes } = raw[impl.key];
  return {
    key: impl.key,
    name: impl.name,
    first50ms: avg(run.ms.slice(0, 50)),
    last50ms: avg(run.ms.slice(-50)),
    totalS: sum(run.ms) / 1000,
    openMs: median(resumes.map((r) => r.openMs)),
    resumeMs: median(resumes.map((r) => r.resumeMs)),
    totalResumeMs: median(resumes.map((r) => r.openMs + r.resumeMs)),
    messages: resumes[0].messages,
    resumeRunsMs: resumes.map((r) => r.openMs + r.resumeMs),
    ...(impl.key === 'forkpoint' ? { messagesMs: median(resumes.map((r) => r.messagesMs)), state: resumes[0].state } : {}),
  };
});
const [fp, ...base] = rows;
for (const r of rows) if (r.messages !== 4 * STEPS) throw new Error(`${r.key}: ${r.messages} messages after resume, expected ${4 * STEPS}`);
if (fp.state !== 'READY') throw new Error(`forkpoint resumed as ${fp.state}`);
if (!raw.forkpoint.run.webLocks) throw new Error('forkpoint ran without Web Locks');
// The strongest baseline of each measure (the lowest time).
const best = (k) => base.reduce((a, b) => (b[k] < a[k] ? b : a));
const bStep = best('last50ms');
const bResume = best('totalResumeMs');

const pad = (s, n) => String(s).padStart(n);
const W = 54;
const lines = [];
lines.push(`browser agent benchmark (Chromium ${version}, IndexedDB on disk) — ${new Date().toISOString()} — ${STEPS} steps, one tool call each; resume: median of ${RUNS} fresh pages`);
lines.push('');
lines.push(`${'store'.padEnd(W)}${pad('ms/step 1-50', 13)}${pad(`${STEPS - 49}-${STEPS}`, 11)}${pad('growth', 8)}${pad('total s', 9)}`);
for (const r of rows) lines.push(`${r.name.padEnd(W)}${pad(r.first50ms.toFixed(2), 13)}${pad(r.last50ms.toFixed(2), 11)}${pad((r.last50ms / r.first50ms).toFixed(2) + '×', 8)}${pad(r.totalS.toFixed(1), 9)}`);
lines.push(`${`  vs the strongest baseline (${bStep.key}): ×`.padEnd(W)}${pad((bStep.first50ms / fp.first50ms).toFixed(2), 13)}${pad((bStep.last50ms / fp.last50ms).toFixed(2), 11)}${pad('', 8)}${pad((bStep.totalS / fp.totalS).toFixed(2), 9)}`);
lines.push('');
lines.push(`${'store'.padEnd(W)}${pad('open db ms', 11)}${pad('resume ms', 11)}${pad('total ms', 10)}${pad('messages', 10)}`);
for (const r of rows) lines.push(`${r.name.padEnd(W)}${pad(r.key === 'localStorage' ? '-' : r.openMs.toFixed(1), 11)}${pad(r.resumeMs.toFixed(1), 11)}${pad(r.totalResumeMs.toFixed(1), 10)}${pad(r.messages, 10)}`);
lines.push(`${`  vs the strongest baseline (${bResume.key}): ×`.padEnd(W)}${pad('', 11)}${pad('', 11)}${pad((bResume.totalResumeMs / fp.totalResumeMs).toFixed(2), 10)}`);
lines.push(`  (forkpoint: resume is Agent.resume(id, …, { strategy: 'crash' }); it reads the session's tail; the first messages() after it loads the history: ${fp.messagesMs.toFixed(1)} ms)`);
lines.push('');
lines.push('Goals:');
const g = (ok) => (ok ? 'met' : 'NOT met');
lines.push(`  step cost flat: last 50 ${(fp.last50ms / fp.first50ms).toFixed(2)}× the first 50 (goal ≤ 1.2×) — ${g(fp.last50ms <= 1.2 * fp.first50ms)}`);
lines.push(`  last-50 step vs the strongest baseline (${bStep.key}, ${bStep.last50ms.toFixed(2)} ms): ${(bStep.last50ms / fp.last50ms).toFixed(2)}× (goal ≥ 1×: no slower) — ${g(fp.last50ms <= bStep.last50ms)}`);
lines.push(`  resume of a ${STEPS}-step agent (open + Agent.resume): ${fp.totalResumeMs.toFixed(1)} ms (goal ≤ 5 ms, as in Node) — ${g(fp.totalResumeMs <= 5)}`);
lines.push(`  (not goals: vs the baseline with the same durability, idb-strict: last-50 step ${(rows[2].last50ms / fp.last50ms).toFixed(2)}×, total ${(rows[2].totalS / fp.totalS).toFixed(2)}×; resume vs the strongest baseline, ${bResume.key}: ${(bResume.totalResumeMs / fp.totalResumeMs).toFixed(2)}×)`);
lines.push('ratios ×: the baseline\'s time divided by forkpoint\'s (above 1: forkpoint is faster).');
console.log(lines.join('\n'));

const resultsPath = join(root, 'bench/results.json');
const results = existsSync(resultsPath) ? JSON.parse(readFileSync(resultsPath, 'utf8')) : {};
results.agentBrowser = { date: new Date().toISOString(), chromium: version, steps: STEPS, runs: RUNS, rows, strongest: { step: bStep.key, resume: bResume.key } };
writeFileSync(resultsPath, JSON.stringify(results, null, 2));
