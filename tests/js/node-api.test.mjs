// The Node-only API: files, lazy resume, batches, the writer, listing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, copyFileSync, readFileSync, writeFileSync, existsSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { napi, fixture, rejectsCode } from './helpers.mjs';

const { SessionLoader, IncrementalSessionLoader, loadSessionLazy, SessionWriter, listSessions, ForkpointError } = napi;
const tmp = () => mkdtempSync(join(tmpdir(), 'forkpoint-test-'));

test('SessionLoader.open: errors carry code, path, line, offset', async () => {
  const e = await rejectsCode(assert, SessionLoader.open(fixture('corrupt-middle.jsonl')), 'CORRUPTED_DATA');
  assert.equal(e.path, fixture('corrupt-middle.jsonl'));
  assert.equal(e.line, 3);
  assert.equal(typeof e.offset, 'number');
  assert.ok(e instanceof ForkpointError && e instanceof Error && e.stack);
  await rejectsCode(assert, SessionLoader.open(join(tmp(), 'missing.jsonl')), 'NOT_FOUND');
  await rejectsCode(assert, SessionLoader.open(tmp()), 'INVALID_INPUT');
  const s = await SessionLoader.open(fixture('branches.jsonl'));
  assert.equal(s.path, fixture('branches.jsonl'));
  assert.equal(s.getMetadata().fileSize, readFileSync(fixture('branches.jsonl')).length);
});

test('SessionWriter: appends, moveLeaf, labels, branch summaries; a fresh load resumes at the moved leaf', async () => {
  const dir = tmp();
  const path = join(dir, 's.jsonl');
  const w = await SessionWriter.open(path, { cwd: '/project' });
  assert.equal(w.openReport.created, true);
  const u1 = await w.append({ type: 'message', message: { role: 'user', content: 'first', timestamp: 1 } });
  const a1 = await w.append({ type: 'message', message: { role: 'assistant', content: [{ type: 'text', text: 'one' }], provider: 'p', model: 'm' } });
  assert.match(u1, /^[0-9a-f]{8}$/);
  await w.moveLeaf(u1);
  assert.equal(w.leafId, u1);
  const a2 = await w.append({ type: 'message', message: { role: 'assistant', content: [{ type: 'text', text: 'two' }], provider: 'p', model: 'm' } });
  await w.appendLabel(a1, 'first try');
  const moved = await w.moveLeaf(a1);
  assert.match(moved, /^[0-9a-f]{8}$/);
  await w.close();
  await assert.rejects(w.append({ type: 'custom' }), (e) => e.code === 'CLOSED');

  const s = await SessionLoader.open(path);
  assert.equal(s.leafId, a1, 'the durable leaf entry is honored by a fresh load');
  assert.deepEqual(s.getContext().map((m) => m.content[0]?.text ?? m.content), ['first', 'one']);
  // Leaves: a1, and the label entry appended while a2 was the leaf.
  assert.deepEqual(s.getBranch().getLeaves().map((n) => [n.type, n.parentId]), [['message', u1], ['label', a2]]);
  assert.equal(s.getBranch().getLeaves()[0].id, a1);
  assert.equal(s.getBranch().getLabel(a1), 'first try');
  const lazy = await loadSessionLazy(path);
  assert.equal(lazy.getMetadata().leafId, a1);
  assert.deepEqual(lazy.getContext(), s.getContext());

  const w2 = await SessionWriter.open(path);
  assert.equal(w2.leafId, a1);
  const bs = await w2.branchWithSummary(u1, 'Tried one; going back.', { details: { readFiles: [] } });
  await w2.close();
  const s2 = await SessionLoader.open(path);
  const e = s2.getEntry(bs);
  assert.equal(e.type, 'branch_summary');
  assert.equal(e.parentId, u1);
  assert.equal(e.fromId, u1);
  assert.deepEqual(s2.getContext().map((m) => m.role), ['user', 'branchSummary']);
});

test('SessionWriter: bad entries are rejected with codes, nothing is written', async () => {
  const path = join(tmp(), 's.jsonl');
  const w = await SessionWriter.open(path);
  const id = await w.append({ type: 'custom', customType: 'x' });
  const before = readFileSync(path);
  await rejectsCode(assert, w.append({ customType: 'no type' }), 'INVALID_INPUT');
  await rejectsCode(assert, w.append({ type: 'custom', id }), 'INVALID_ID');
  await rejectsCode(assert, w.append({ type: 'custom', parentId: 'nope' }), 'NOT_FOUND');
  await rejectsCode(assert, w.moveLeaf('nope'), 'NOT_FOUND');
  await rejectsCode(assert, w.appendLabel('nope', 'x'), 'NOT_FOUND');
  assert.deepEqual(readFileSync(path), before);
  await w.close();
});

test('SessionWriter: one writer per file (OS lock), group commit under concurrency', async () => {
  const path = join(tmp(), 's.jsonl');
  const w = await SessionWriter.open(path, { durability: 'group' });
  await rejectsCode(assert, SessionWriter.open(path), 'SESSION_LOCKED');
  const ids = await Promise.all(Array.from({ length: 200 }, (_, i) => w.append({ type: 'custom', customType: 'n', data: i })));
  assert.equal(new Set(ids).size, 200);
  await w.close();
  const s = await SessionLoader.open(path);
  assert.deepEqual(s.getEntries().map((e) => e.data), Array.from({ length: 200 }, (_, i) => i), 'appends land in call order');
  assert.equal(s.getBranch().getPath(ids[199]).length, 200, 'each append is a child of the previous one');
  (await SessionWriter.open(path)).close();
});

test('SessionWriter: torn tail repaired on open; old versions need { migrate: true }', async () => {
  const dir = tmp();
  const path = join(dir, 'torn.jsonl');
  copyFileSync(fixture('torn-tail.jsonl'), path);
  const w = await SessionWriter.open(path);
  assert.deepEqual(w.openReport.repaired, { line: 5, offset: 946, bytes: 57 });
  const id = await w.append({ type: 'message', message: { role: 'assistant', content: [], provider: 'p', model: 'm' } });
  await w.close();
  const s = await SessionLoader.open(path);
  assert.equal(s.getMetadata().tornTail, null);
  assert.equal(s.leafId, id);

  const old = join(dir, 'old.jsonl');
  copyFileSync(fixture('v1-legacy.jsonl'), old);
  await rejectsCode(assert, SessionWriter.open(old), 'MIGRATION_REQUIRED');
  assert.deepEqual(readFileSync(old), readFileSync(fixture('v1-legacy.jsonl')));
  const m = await SessionWriter.open(old, { migrate: true });
  assert.equal(m.openReport.migratedFrom, 1);
  await m.close();
  assert.equal((await SessionLoader.open(old)).getMetadata().version, 3);
});

test('IncrementalSessionLoader: batches with offsets, hasMore, reset', async () => {
  const path = fixture('branches.jsonl');
  const bytes = readFileSync(path);
  const inc = new IncrementalSessionLoader(path, 4);
  const all = [];
  while (inc.hasMore()) {
    const batch = await inc.loadNextBatch();
    assert.ok(batch.entries.length <= 4);
    batch.entries.forEach((e, i) => {
      assert.equal(JSON.parse(bytes.subarray(batch.info.offsets[i]).toString('utf8').split('\n')[0]).id, e.id);
    });
    all.push(...batch.entries);
  }
  assert.equal(all.length, 15);
  assert.equal(inc.offset, bytes.length);
  inc.reset();
  assert.equal(inc.offset, 0);
  assert.deepEqual(await inc.loadNext(), all.slice(0, 4));
  // A growing file is followed.
  const dir = tmp();
  const p2 = join(dir, 'grow.jsonl');
  copyFileSync(fixture('v3-basic.jsonl'), p2);
  const g = new IncrementalSessionLoader(p2, 100);
  assert.equal((await g.loadNext()).length, 6);
  assert.equal(g.hasMore(), false);
  appendFileSync(p2, JSON.stringify({ type: 'custom', id: 'zz', parentId: 'a0000006', timestamp: '2026-01-01T00:00:00Z', customType: 'x' }) + '\n');
  assert.equal(g.hasMore(), true);
  assert.equal((await g.loadNext())[0].id, 'zz');
  await assert.rejects(new IncrementalSessionLoader(fixture('corrupt-middle.jsonl'), 10).loadNext(), (e) => e.code === 'CORRUPTED_DATA' && e.line === 3);
});

test('loadSessionLazy: maxMessages and loadMoreHistory page backwards', async () => {
  const path = join(tmp(), 'lazy.jsonl');
  const w = await SessionWriter.open(path);
  const ids = [];
  for (let i = 0; i < 30; i++) ids.push(await w.append({ type: 'message', message: { role: 'user', content: `m${i}`, timestamp: i } }));
  await w.append({ type: 'compaction', summary: 'first 20', firstKeptEntryId: ids[20], tokensBefore: 100 });
  for (let i = 30; i < 40; i++) await w.append({ type: 'message', message: { role: 'user', content: `m${i}`, timestamp: i } });
  await w.close();
  const full = (await SessionLoader.open(path)).getContext();
  assert.equal(full.length, 1 + 10 + 10);
  const lazy = await loadSessionLazy(path);
  assert.deepEqual(lazy.getContext(), full);
  assert.equal(lazy.getMetadata().mode, 'hint');
  const cut = await loadSessionLazy(path, { maxMessages: 5 });
  assert.deepEqual(cut.getContext().map((m) => m.content ?? m.role), ['compactionSummary', 'm35', 'm36', 'm37', 'm38', 'm39']);
  assert.deepEqual((await cut.loadMoreHistory(5)).map((m) => m.content), ['m30', 'm31', 'm32', 'm33', 'm34']);
  assert.equal(cut.getContext().length, 11);
  assert.deepEqual((await cut.loadMoreHistory(100)).map((m) => m.content), ['m20', 'm21', 'm22', 'm23', 'm24', 'm25', 'm26', 'm27', 'm28', 'm29']);
  assert.deepEqual((await cut.loadMoreHistory(3)).map((m) => m.content), ['m17', 'm18', 'm19'], 'then the compacted history');
  assert.equal(cut.getMetadata().hasMoreHistory, true);
  assert.equal((await cut.loadMoreHistory(100)).length, 17);
  assert.equal(cut.getMetadata().hasMoreHistory, false);
  assert.deepEqual(await cut.loadMoreHistory(10), []);
  await rejectsCode(assert, loadSessionLazy(fixture('not-sessions/codex-rollout.jsonl')), 'UNSUPPORTED_FORMAT');
});

test('listSessions reads headers and tails and reports non-sessions', async () => {
  const dir = tmp();
  for (const f of ['v3-basic.jsonl', 'branches.jsonl', 'not-sessions/plain-text.jsonl']) copyFileSync(fixture(f), join(dir, f.split('/').pop()));
  writeFileSync(join(dir, 'readme.md'), '# not listed');
  const list = await listSessions(dir);
  assert.equal(list.length, 3);
  const b = list.find((i) => i.path.endsWith('branches.jsonl'));
  assert.equal(b.id, '0b6f3c1e-0000-4000-8000-000000000003');
  assert.equal(b.name, 'Parser design');
  assert.equal(b.leafId, 'c0000015');
  assert.equal(list.find((i) => i.path.endsWith('plain-text.jsonl')).error.code, 'UNSUPPORTED_FORMAT');
  assert.ok(!existsSync(join(dir, 'branches.jsonl.idx.json')), 'listing writes nothing');
  await rejectsCode(assert, listSessions(join(dir, 'nope')), 'NOT_FOUND');
});

test('SessionWriter.append: an entry nested too deeply for JSON is INVALID_INPUT and the file is unchanged', async () => {
  const path = join(tmp(), 's.jsonl');
  const w = await SessionWriter.open(path, { cwd: '/project' });
  await w.append({ type: 'message', message: { role: 'user', content: 'first', timestamp: 1 } });
  const before = readFileSync(path);
  let deep = [];
  for (let i = 0; i < 100_000; i++) deep = [deep];
  await assert.rejects(w.append({ type: 'custom', customType: 'deep', data: deep }), (e) => e.code === 'INVALID_INPUT' && /nested too deeply/.test(e.message));
  assert.ok(readFileSync(path).equals(before));
  await w.close();
});
