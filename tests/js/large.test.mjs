// A 50 MB generated session (branches, compactions): full loads in both builds and
// a lazy resume give exactly the context length pi's rules give (gen-session --stats).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { napi, web } from './helpers.mjs';

const gen = fileURLToPath(new URL('../../../shared/tools/gen-session.mjs', import.meta.url));

test('50 MB session: full (napi, wasm) and lazy loads give contextMessages', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'forkpoint-large-'));
  try {
    const path = join(dir, 'big.jsonl');
    const stats = JSON.parse(
      execFileSync(process.execPath, [gen, '--out', path, '--mb', '50', '--compactions', '3', '--branches', '5', '--seed', 'large-test', '--stats'], { encoding: 'utf8' }),
    );
    assert.ok(stats.bytes >= 50 * 2 ** 20);
    const full = await napi.SessionLoader.open(path);
    const m = full.getMetadata();
    assert.equal(m.entryCount, stats.entries);
    assert.equal(m.messageCount, stats.messages);
    assert.equal(m.leafId, stats.leafId);
    assert.equal(m.branchPoints, stats.branchPoints);
    assert.equal(m.leafCount, stats.leaves);
    assert.equal(m.compactions, stats.compactions);
    assert.equal(full.getContext().length, stats.contextMessages);

    const w = web.Session.fromJsonl(readFileSync(path));
    assert.equal(w.getContext().length, stats.contextMessages);
    assert.deepEqual(w.getMetadata(), m);

    const lazy = await napi.loadSessionLazy(path);
    assert.equal(lazy.getContext().length, stats.contextMessages);
    const lm = lazy.getMetadata();
    assert.equal(lm.leafId, stats.leafId);
    assert.ok(lm.bytesRead < stats.bytes / 2, `lazy read ${lm.bytesRead} of ${stats.bytes} bytes`);
    const again = await napi.loadSessionLazy(path);
    assert.equal(again.getMetadata().mode, 'hint');
    assert.deepEqual(again.getSessionContext(), full.getSessionContext());
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
