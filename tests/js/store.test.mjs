// The IndexedDbStore contract (tests/js/store-contract.mjs) on forkpoint-web's
// Node build over fake-indexeddb. The same cases run in Chromium on the real
// IndexedDB (tests/browser/store.test.mjs).
import 'fake-indexeddb/auto';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { web, fixture, realDir } from './helpers.mjs';
import { cases } from './store-contract.mjs';

let n = 0;
const ctx = {
  web,
  indexedDB: globalThis.indexedDB,
  db: () => `store-test-${process.pid}-${++n}`,
  bytes: async (name) => new Uint8Array(readFileSync(name.startsWith('real/') ? realDir + name.slice(5) : fixture(name))),
  assert: {
    ok: (v, m) => assert.ok(v, m),
    equal: (a, b, m) => assert.equal(a, b, m),
    deepEqual: (a, b, m) => assert.deepEqual(a, b, m),
    async rejectsCode(p, code) {
      try {
        await p;
      } catch (e) {
        assert.ok(e instanceof web.ForkpointError, `expected ForkpointError, got ${e?.constructor?.name}: ${e?.message}`);
        assert.equal(e.code, code, e.message);
        return e;
      }
      assert.fail(`expected ${code}`);
    },
  },
};

for (const c of cases) test(`[wasm, fake-indexeddb] ${c.name}`, () => c.run(ctx));
