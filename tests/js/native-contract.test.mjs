// The core's storage contract suite on FileStorage, run from JS through the
// test build of the addon (cargo feature `contract`, debug profile; built by
// scripts/build.sh into tests/native-contract/, never into the package). The
// same suite runs on IndexedDB in agent-web.test.mjs and in Chromium.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const dir = fileURLToPath(new URL('../native-contract/', import.meta.url));
const addon = existsSync(dir) ? readdirSync(dir).find((f) => f.endsWith('.node')) : undefined;
if (!addon) throw new Error(`no contract build of the addon in ${dir}: run scripts/build.sh (or build.sh --node)`);
const contract = require(join(dir, addon));

/** The core error a native call rejected with (its message is the error as JSON). */
function coreError(e) {
  try {
    return JSON.parse(e.message);
  } catch {
    return { code: undefined, message: String(e?.stack ?? e) };
  }
}

async function inTempDir(f) {
  const root = mkdtempSync(join(tmpdir(), 'fp-native-contract-'));
  try {
    return await f(root);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

test('[napi] the storage contract suite on FileStorage', async (t) => {
  const checks = contract.storageContractChecks();
  assert.ok(checks.length >= 12, `${checks.length} checks`);
  assert.equal(new Set(checks).size, checks.length);
  for (const check of checks) {
    await t.test(check, () =>
      inTempDir(async (root) => {
        try {
          await contract.runStorageContract(check, root);
        } catch (e) {
          assert.fail(coreError(e).message);
        }
        assert.ok(readdirSync(root).length >= 1, 'the check made its stores in the directory given');
      }),
    );
  }
});

test('[napi] the contract runner reports a broken check and an unknown name', async () => {
  const unknown = await inTempDir((root) =>
    contract.runStorageContract('no_such_check', root).then(
      () => assert.fail('an unknown check ran'),
      (e) => coreError(e),
    ),
  );
  assert.equal(unknown.code, 'INVALID_INPUT');
  assert.match(unknown.message, /no contract check 'no_such_check'/);
  // Stores that cannot be made (their directory's parent is a file): the
  // check panics, and the panic's message is what the promise rejects with.
  await inTempDir(async (root) => {
    const file = join(root, 'not-a-dir');
    writeFileSync(file, 'x');
    const broken = await contract.runStorageContract('create_then_already_exists', file).then(
      () => assert.fail('a check passed on stores that cannot exist'),
      (e) => coreError(e),
    );
    assert.equal(broken.code, 'INTERNAL');
    assert.match(broken.message, /contract check 'create_then_already_exists' failed: .*create/);
  });
});
