// The real sessions nobody on this team wrote load with both builds, which agree.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { napi, web, realDir } from './helpers.mjs';
import { loadReference } from '../reference/pi-reference.mjs';

const files = readdirSync(realDir).filter((f) => f.endsWith('.jsonl'));
// pi sessions start with a session header; the others are Claude Code transcripts.
// Told apart by content, not by name (the folder also holds a pi file imported
// from a Claude Code one).
const isPi = (f) => {
  const first = readFileSync(realDir + f, 'utf8').split('\n', 1)[0];
  try {
    return JSON.parse(first).type === 'session';
  } catch {
    return false;
  }
};

test('real pi sessions: napi and wasm agree with each other and with the reference', async () => {
  const pi = files.filter(isPi);
  assert.ok(pi.length >= 2);
  for (const f of pi) {
    const bytes = readFileSync(realDir + f);
    const a = await napi.SessionLoader.open(realDir + f);
    const b = web.Session.fromJsonl(bytes);
    const ref = loadReference(realDir + f);
    for (const s of [a, b]) {
      const m = s.getMetadata();
      assert.equal(m.entryCount, ref.entries.length, f);
      assert.equal(m.leafCount, ref.tree.leaves.length, f);
      assert.equal(s.getContext().length, ref.context.messages.length, f);
      assert.deepEqual(s.getSessionContext(), ref.context, f);
    }
    assert.deepEqual(a.getBranch().getLeaves(), b.getBranch().getLeaves(), f);
    const lazy = await napi.loadSessionLazy(realDir + f, { useHint: false });
    assert.deepEqual(lazy.getSessionContext(), ref.context, f);
  }
});

test('Claude Code transcripts are UNSUPPORTED_FORMAT in both builds', async () => {
  const cc = files.filter((f) => !isPi(f));
  assert.ok(cc.length >= 2);
  for (const f of cc) {
    await assert.rejects(napi.SessionLoader.open(realDir + f), (e) => e.code === 'UNSUPPORTED_FORMAT' && e.path === realDir + f && /Claude Code/.test(e.message));
    assert.throws(() => web.Session.fromJsonl(readFileSync(realDir + f)), (e) => e instanceof web.ForkpointError && e.code === 'UNSUPPORTED_FORMAT');
  }
});
