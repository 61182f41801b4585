// IndexedDbStore in real Chromium on the real IndexedDB: the contract suite
// (the same cases as tests/js/store.test.mjs on fake-indexeddb), then what only
// a browser shows: sessions survive a reload, a quota error loses nothing, a
// tab closed in the middle of an import leaves no partial session.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { serve } from './server.mjs';
import { CHROMIUM, CHROMIUM_ARGS } from './chromium.mjs';

const skip = !existsSync(CHROMIUM) && 'Chromium is not installed';

async function withPage(f) {
  const server = await serve();
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  try {
    const context = await browser.newContext();
    const open = async () => {
      const page = await context.newPage();
      const errors = [];
      page.on('pageerror', (e) => errors.push(String(e)));
      await page.goto(`${server.url}/tests/browser/store.html`);
      await page.waitForFunction(() => window.ready === true, null, { timeout: 30_000 });
      return { page, errors };
    };
    await f({ open, context, url: server.url });
  } finally {
    await browser.close();
    await server.close();
  }
}

test('IndexedDbStore contract in Chromium (real IndexedDB)', { skip }, async (t) => {
  await withPage(async ({ open }) => {
    const { page, errors } = await open();
    const names = await page.evaluate(() => window.caseNames);
    assert.ok(names.length >= 9);
    for (const name of names) {
      await t.test(name, async () => {
        assert.equal(await page.evaluate((n) => window.runCase(n), name), 'ok');
      });
    }
    assert.deepEqual(errors, []);
  });
});

test('IndexedDbStore in Chromium: reload, quota, a tab closed mid-import (whole or nothing)', { skip }, async () => {
  await withPage(async ({ open, context, url }) => {
    let { page } = await open();
    // The origin gets 3 MB, set before it touches IndexedDB (Chromium reads
    // the quota when it opens the origin's database files).
    const cdp = await context.newCDPSession(page);
    await cdp.send('Storage.overrideQuotaForOrigin', { origin: url, quotaSize: 3 * 1024 * 1024 });
    const kept = await page.evaluate(async () => {
      const store = await web.IndexedDbStore.open('quota-db');
      const bytes = new Uint8Array(await (await fetch('/tests/fixtures/branches.jsonl')).arrayBuffer());
      const info = await store.importSession(new File([bytes], 'branches.jsonl'));
      await store.close();
      return { id: info.id, size: bytes.length, source: info.source };
    });
    assert.equal(kept.source, 'branches.jsonl');

    // Reload: still there (real IndexedDB on disk of this profile).
    await page.reload();
    await page.waitForFunction(() => window.ready === true);
    const listed = await page.evaluate(async () => {
      const store = await web.IndexedDbStore.open('quota-db');
      const l = await store.listSessions();
      await store.close();
      return l.map((i) => i.id);
    });
    assert.deepEqual(listed, [kept.id]);

    // Quota: a 12 MB import (text that does not compress) fails with
    // STORAGE_FULL and the session already stored is intact.
    const quota = await page.evaluate(async () => {
      const store = await web.IndexedDbStore.open('quota-db');
      let code = null;
      let message = null;
      try {
        await store.importSession(bigSession(8000, 1500, 'too-big', true));
      } catch (e) {
        code = e.code;
        message = e.message;
      }
      const list = (await store.listSessions()).map((i) => i.id);
      const ref = new Uint8Array(await (await fetch('/tests/fixtures/branches.jsonl')).arrayBuffer());
      const back = new Uint8Array(await (await store.exportSession(list[0])).arrayBuffer());
      const s = await store.loadSession(list[0]);
      await store.close();
      return { code, message, list, same: back.length === ref.length && back.every((b, i) => b === ref[i]), entries: s.entryCount };
    });
    assert.equal(quota.code, 'STORAGE_FULL', quota.message);
    assert.deepEqual(quota.list, [kept.id], 'nothing of the failed import, nothing lost');
    assert.equal(quota.same, true);
    await cdp.send('Storage.overrideQuotaForOrigin', { origin: url });

    // A tab closed while its import is being written: no partial session.
    const started = await page.evaluate(
      () =>
        new Promise((resolve) => {
          window.importing = (async () => {
            const store = await web.IndexedDbStore.open('quota-db');
            await store.importSession(bigSession(12000, 1500, 'cut-short'), {
              onProgress: (p) => p.phase === 'write' && resolve(p.total),
            });
          })();
        }),
    );
    assert.ok(started > 10e6, `import of ${started} bytes was being written`);
    await page.close({ runBeforeUnload: false });
    ({ page } = await open());
    // Whole or nothing: either no trace of it, or every chunk its record names.
    const after = await page.evaluate(async () => {
      const store = await web.IndexedDbStore.open('quota-db');
      const l = (await store.listSessions()).map((i) => i.id);
      let entries = null;
      try {
        entries = (await store.loadSession('cut-short')).entryCount;
      } catch (e) {
        entries = e.code;
      }
      await store.close();
      const raw = await new Promise((resolve, reject) => {
        const req = indexedDB.open('quota-db');
        req.onsuccess = () => {
          const db = req.result;
          const tx = db.transaction(['chunks', 'sessions']);
          const keys = tx.objectStore('chunks').getAllKeys(IDBKeyRange.bound(['cut-short'], ['cut-short', []]));
          const rec = tx.objectStore('sessions').get('cut-short');
          tx.oncomplete = () => {
            db.close();
            resolve({ chunks: keys.result.length, named: rec.result ? JSON.parse(rec.result).chunks.length : 0 });
          };
          tx.onerror = () => reject(tx.error);
        };
        req.onerror = () => reject(req.error);
      });
      return { l, entries, raw };
    });
    assert.equal(after.raw.chunks, after.raw.named, `chunks in IndexedDB ${after.raw.chunks}, named by a record ${after.raw.named}`);
    if (after.l.includes('cut-short')) assert.equal(after.entries, 12000, 'landed whole');
    else assert.equal(after.entries, 'NOT_FOUND', 'left nothing');
    assert.ok(after.l.includes(kept.id));
  });
});
