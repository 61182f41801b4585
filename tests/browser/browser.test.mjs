// forkpoint-web in real Chromium (Debian's, driven by playwright-core): a page on
// 127.0.0.1 loads fixtures with the web build and checks the results.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { serve } from './server.mjs';
import { CHROMIUM, CHROMIUM_ARGS } from './chromium.mjs';

export { CHROMIUM, CHROMIUM_ARGS };

test('forkpoint-web loads sessions in Chromium', { skip: !existsSync(CHROMIUM) && 'Chromium is not installed' }, async () => {
  const server = await serve();
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${server.url}/tests/browser/session.html`);
    await page.waitForFunction(() => window.__result !== undefined, null, { timeout: 30_000 });
    const r = await page.evaluate(() => window.__result);
    assert.equal(r.failed, undefined, r.failed);
    assert.deepEqual(errors, []);
    assert.deepEqual(r['branches.jsonl'].leaves, ['c0000005', 'c0000008', 'c0000015']);
    assert.equal(r['branches.jsonl'].branchPoints, 2);
    assert.deepEqual(r['branches.jsonl'].context, ['user', 'branchSummary', 'assistant', 'user', 'assistant']);
    assert.deepEqual(r['compactions.jsonl'].context, ['compactionSummary', 'custom', 'bashExecution', 'bashExecution', 'assistant', 'user', 'assistant']);
    assert.equal(r['v1-legacy.jsonl'].leafId, '00000009');
    assert.equal(r['branches.jsonl.gz'].entries, 3);
    for (const k of ['branches.jsonl', 'compactions.jsonl', 'v1-legacy.jsonl', 'branches.jsonl.gz']) {
      assert.equal(r[k].same, true, k);
      assert.equal(r[k].roundTrip, true, k);
    }
    assert.equal(r.fromText, 4);
    assert.equal(r.convert.format, 'claude-code');
    assert.ok(r.convert.messages > 4 && r.convert.contents > 2, JSON.stringify(r.convert));
    assert.equal(r.convert.compatible, true);
    assert.equal(r.convert.byteStable, true);
    assert.deepEqual(r.error.code, 'UNSUPPORTED_FORMAT');
    assert.equal(r.error.forkpoint, true);
  } finally {
    await browser.close();
    await server.close();
  }
});

test('forkpoint-web event log over real IndexedDB survives a reload', { skip: !existsSync(CHROMIUM) && 'Chromium is not installed' }, async () => {
  const server = await serve();
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  try {
    const page = await browser.newPage();
    const run = async () => {
      await page.waitForFunction(() => window.__result !== undefined, null, { timeout: 30_000 });
      const r = await page.evaluate(() => window.__result);
      assert.equal(r.failed, undefined, r.failed);
      return r;
    };
    await page.goto(`${server.url}/tests/browser/events.html`);
    const first = await run();
    assert.equal(first.before, 0);
    assert.deepEqual(first.seqs, Array.from({ length: 40 }, (_, i) => i + 1));
    assert.deepEqual(first.got, first.seqs);
    assert.deepEqual(first.bad, { forkpoint: true, code: 'INVALID_INPUT' });
    await page.reload();
    const second = await run();
    assert.equal(second.before, 40, 'the events are still in IndexedDB after a reload');
    assert.deepEqual(second.seqs, Array.from({ length: 40 }, (_, i) => i + 41), 'seq continues, never reused');
    assert.deepEqual(second.got, second.seqs);
    // Read the store with IndexedDB itself.
    const raw = await page.evaluate(
      () =>
        new Promise((resolve, reject) => {
          const req = indexedDB.open('forkpoint-browser-test');
          req.onsuccess = () => {
            const db = req.result;
            const all = db.transaction('events').objectStore('events').getAll();
            all.onsuccess = () => resolve({ stores: [...db.objectStoreNames], n: all.result.length, first: all.result[0] });
            all.onerror = () => reject(all.error);
          };
          req.onerror = () => reject(req.error);
        }),
    );
    assert.deepEqual(raw.stores, ['agentChunks', 'agentEvents', 'agents', 'checkpoints', 'chunks', 'events', 'sessions']);
    assert.equal(raw.n, 80);
    assert.match(raw.first, /^\{"seq":1,"timestamp":\d+,"channel":"progress","type":"text_chunk"/);
  } finally {
    await browser.close();
    await server.close();
  }
});
