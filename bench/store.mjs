// IndexedDB benchmark in Chromium (part of `npm run bench`): a generated pi
// session of about 100 MB is imported into IndexedDB, opened lazily (context of
// the current leaf), opened whole, and its tree drawn — by forkpoint-web's
// IndexedDbStore and by a plain-JS baseline in the same page (JSON.parse per
// line, one IndexedDB record per entry). Median of runs in fresh pages.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serve } from '../tests/browser/server.mjs';
import { CHROMIUM, CHROMIUM_ARGS } from '../tests/browser/chromium.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const MB = Number(process.env.STORE_BENCH_MB ?? 100);
const RUNS = Number(process.env.STORE_BENCH_RUNS ?? 3);
const name = `store-${MB}.jsonl`;
const file = join(root, 'bench/data', name);
mkdirSync(join(root, 'bench/data'), { recursive: true });
let stats = null;
if (!existsSync(file)) {
  console.error(`generating ${name} (${MB} MiB, compacting every 800 KiB, 30 branches)…`);
}
stats = JSON.parse(
  execFileSync(process.execPath, [
    join(root, '../shared/tools/gen-session.mjs'), '--out', file, '--mb', String(MB), '--seed', 'store',
    '--compact-every-kb', '800', '--branches', '30', '--stats',
  ], { encoding: 'utf8' }),
);
if (!existsSync(CHROMIUM)) {
  console.log('IndexedDB benchmark skipped: Chromium is not installed');
  process.exit(0);
}

const server = await serve();
const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
const results = { forkpoint: [], baseline: [], explorer: [] };
try {
  for (let i = 0; i < RUNS; i++) {
    for (const impl of ['forkpoint', 'baseline']) {
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(`${server.url}/bench/store-page.html`);
      await page.waitForFunction(() => window.ready === true, null, { timeout: 60_000 });
      const fn = impl === 'forkpoint' ? 'benchForkpoint' : 'benchBaseline';
      const r = await page.evaluate(([f, url]) => window[f](url), [fn, `/bench/data/${name}`]);
      results[impl].push(r);
      await context.close();
    }
  }
  // The explorer page itself: a click on the stored 100 MiB session until its
  // tree is drawn (loaded whole from IndexedDB, tree built, rows drawn).
  for (let i = 0; i < RUNS; i++) {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${server.url}/wasm/explorer/?db=bench-explorer`);
    await page.waitForSelector('[data-testid="file-input"]', { state: 'attached' });
    await page.evaluate(async (url) => {
      const { IndexedDbStore } = await import('/wasm/dist/web.js');
      const store = await IndexedDbStore.open('bench-explorer');
      for (const s of await store.listSessions()) await store.deleteSession(s.id);
      await store.importSession(await (await fetch(url)).blob());
      await store.close();
    }, `/bench/data/${name}`);
    await page.goto(`${server.url}/wasm/explorer/?db=bench-explorer`);
    await page.waitForSelector('[data-testid="open-session"]');
    const ms = await page.evaluate(
      () =>
        new Promise((resolve) => {
          const t = performance.now();
          document.querySelector('[data-testid="open-session"]').click();
          const check = () => {
            if (document.querySelector('[data-testid="tree-row"]') && !document.body.dataset.busy) {
              requestAnimationFrame(() => resolve(performance.now() - t));
            } else setTimeout(check, 5);
          };
          check();
        }),
    );
    results.explorer.push(ms);
    await context.close();
  }
} finally {
  await browser.close();
  await server.close();
}

const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const m = (impl, k) => median(results[impl].map((r) => r[k]));
const f = results.forkpoint[0];
const b = results.baseline[0];
// The same session both ways.
if (f.contextMessages !== stats.contextMessages || f.fullContextMessages !== stats.contextMessages) {
  throw new Error(`forkpoint context ${f.contextMessages}/${f.fullContextMessages}, expected ${stats.contextMessages}`);
}
if (f.entries !== stats.entries || b.entries !== stats.entries || f.leaves !== stats.leaves) {
  throw new Error(`entries ${f.entries}/${b.entries}, leaves ${f.leaves}; expected ${stats.entries}/${stats.leaves}`);
}
const mib = f.bytes / 1048576;
const row = (what, k, unit = 'ms') => {
  const fv = m('forkpoint', k);
  const bv = m('baseline', k);
  return `${what.padEnd(44)} ${fv.toFixed(0).padStart(9)} ${bv.toFixed(0).padStart(11)} ${(bv / fv).toFixed(2).padStart(8)}×`;
};
console.log(`\nIndexedDB benchmark (Chromium ${browser.version?.() ?? ''}) — ${new Date().toISOString()} — ${name}: ${mib.toFixed(1)} MiB, ${stats.entries} entries, ${stats.leaves} leaves, ${stats.compactions} compactions, context ${stats.contextMessages} messages; median of ${RUNS} fresh pages\n`);
console.log(`${'step'.padEnd(44)} ${'forkpoint'.padStart(9)} ${'plain JS'.padStart(11)} ${'vs JS'.padStart(9)}`);
console.log(row('import into IndexedDB (ms)', 'importMs'));
console.log(`${'  import throughput (MiB/s)'.padEnd(44)} ${(mib / (m('forkpoint', 'importMs') / 1000)).toFixed(1).padStart(9)} ${(mib / (m('baseline', 'importMs') / 1000)).toFixed(1).padStart(11)}`);
console.log(row('lazy open: context of the leaf (ms)', 'lazyMs'));
console.log(row('full open: whole session + context (ms)', 'fullMs'));
console.log(row('first tree render: load, tree, draw (ms)', 'treeMs'));
console.log(`${'explorer page: click → tree drawn (ms)'.padEnd(44)} ${median(results.explorer).toFixed(0).padStart(9)}`);
console.log(`\nforkpoint lazy open: the loader parsed ${(f.lazyBytesRead / 1048576).toFixed(2)} MiB (${f.lazyMode}), read as whole 1 MiB chunks; tree ${f.runs} runs (plain JS ${b.runs}); context ${f.contextMessages} messages (plain JS, a simplified rule: ${b.contextMessages}).`);
console.log('The plain-JS "lazy open" has no lazy path: it reads every entry to find the context.');
console.log('vs JS: the plain-JS time divided by forkpoint\'s (above 1: forkpoint is faster).');
