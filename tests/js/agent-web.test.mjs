// The durable Agent in forkpoint-web's Node build over fake-indexeddb: the
// core's storage contract suite run on IdbAgentStorage (the test build of the
// wasm module, wasm/pkg/contract-node), then the agent scenarios
// (tests/js/agent-scenarios.mjs; the same run in Chromium in
// tests/browser/agent.test.mjs). Without Web Locks here, leases are held per
// process.
import 'fake-indexeddb/auto';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { web, fixture } from './helpers.mjs';
import { scenarios } from './agent-scenarios.mjs';

const require = createRequire(import.meta.url);
let n = 0;
const ctx = {
  web,
  indexedDB: globalThis.indexedDB,
  db: () => `agent-web-${process.pid}-${++n}`,
  json: async (name) => JSON.parse(readFileSync(fixture(name), 'utf8')),
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

test('[wasm, fake-indexeddb] the storage contract suite on IdbAgentStorage', async (t) => {
  const contract = require('../../wasm/pkg/contract-node/forkpoint_wasm.js');
  const checks = contract.storageContractChecks();
  assert.ok(checks.length >= 13, `${checks.length} checks`);
  // A broken contract panics in the module, possibly inside an IndexedDB
  // callback: the panic's message is what the check reports.
  let trapped = null;
  const onTrap = (e) => (trapped = e);
  process.on('uncaughtException', onTrap);
  try {
    for (const check of checks) {
      await t.test(check, async () => {
        try {
          await Promise.race([
            contract.runStorageContract(check, `contract-${process.pid}-${++n}`),
            new Promise((_, reject) => {
              const poll = setInterval(() => {
                if (trapped) {
                  clearInterval(poll);
                  reject(trapped);
                }
              }, 5);
              poll.unref();
            }),
          ]);
        } catch (e) {
          assert.fail(globalThis.__forkpointContractPanic ?? String(e?.stack ?? e));
        }
      });
    }
  } finally {
    process.off('uncaughtException', onTrap);
  }
  await assert.rejects(contract.runStorageContract('no_such_check', `contract-${process.pid}-x`), /no contract check/);
});

for (const s of scenarios) test(`[wasm, fake-indexeddb] ${s.name}`, () => s.run(ctx));

test('[wasm, fake-indexeddb] without Web Locks, leases are held per process', () => {
  assert.equal(web.IndexedDbAgentStore.webLocks, false);
});
