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

// Where the APIs overlap: a session kept in the browser store answers exactly
// as the Node package's SessionLoader does on the same file.
test('[wasm, fake-indexeddb] stored sessions answer as the Node SessionLoader does on the same bytes', async () => {
  const { napi } = await import('./helpers.mjs');
  const store = await web.IndexedDbStore.open(ctx.db());
  const names = ['branches.jsonl', 'compactions.jsonl', 'leaf-moves.jsonl', 'v1-legacy.jsonl', 'real/badlogic-pi-mono_large-session.jsonl'];
  for (const name of names) {
    const b = await ctx.bytes(name);
    const info = await store.importSession(b, { id: `x${names.indexOf(name)}` });
    const s = await store.loadSession(info.id);
    const ref = napi.SessionLoader.fromJsonl(b);
    const view = (x) => {
      const br = x.getBranch();
      return {
        leaves: br.getLeaves().map((n) => n.id),
        branchPoints: br.getBranchPoints().map((n) => n.id),
        tree: br.getTree(),
        leaf: x.leafId,
        contexts: br.getLeaves().map((n) => x.getContext(n.id)),
        llm: x.getLlmContext(),
      };
    };
    assert.deepEqual(view(s), view(ref), name);
    const lazy = await store.loadSession(info.id, { lazy: true });
    assert.deepEqual(lazy.getContext(), ref.getContext(), `${name}: lazy`);
  }
  await store.close();
});

// Both builds derive the same id from the same source (FORMAT.md §15.7).
test('[wasm and napi] an import without an id gets the same id from both builds: the source id, or its hash', async () => {
  const { napi } = await import('./helpers.mjs');
  const { mkdtempSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dir = mkdtempSync(join(tmpdir(), 'fp-ids-'));
  const line = (sid, uuid, parent, extra = {}) =>
    JSON.stringify({ parentUuid: parent, sessionId: sid, uuid, type: 'user', timestamp: '2026-01-01T00:00:00.000Z', message: { role: 'user', content: uuid }, ...extra });
  const cases = [
    [readFileSync(realDir + 'marot-spotter_tool_heavy.jsonl'), 'd6e0bada-1959-4eec-a9d2-0bfade768d8f'],
    [Buffer.from(`${line('not/valid', 'u1', null)}\n`), null],
    [Buffer.from(`${line('S-9', 'u1', null, { isSidechain: true, agentId: 'ag1' })}\n`), 'S-9-agent-ag1'],
  ];
  let k = 0;
  for (const [bytes, want] of cases) {
    const w = (await web.importSession(bytes)).summary.sessionId;
    const n = (await napi.importSession(bytes, { to: join(dir, `${k++}.jsonl`) })).summary.sessionId;
    assert.equal(w, n);
    if (want) assert.equal(w, want);
    else assert.match(w, /^claude-code-[0-9a-f]{16}$/);
  }
});
