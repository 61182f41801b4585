// The contract both builds meet, run once per backend (FORKPOINT_BACKEND=napi|wasm).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { BACKEND, fromJsonl, fixture, fixtureBytes, fixturesDir, throwsCode } from './helpers.mjs';
import { loadReference } from '../reference/pi-reference.mjs';

const roles = (msgs) => msgs.map((m) => m.role);

test(`[${BACKEND}] every valid fixture: context equals the plain-JS reference of pi's rules`, () => {
  const valid = readdirSync(fixturesDir).filter((f) => f.endsWith('.jsonl') && !/corrupt|cycle|deep|torn/.test(f));
  assert.ok(valid.length >= 14);
  for (const f of valid) {
    const bytes = fixtureBytes(f);
    const s = fromJsonl(bytes);
    const ref = loadReference(fixture(f));
    assert.deepEqual(s.getSessionContext(), ref.context, f);
    assert.equal(s.getMetadata().leafId, ref.leaf?.id ?? null, f);
    assert.deepEqual(s.getEntries(), ref.entries, f);
    assert.equal(s.getBranch().getLeaves().length, ref.tree.leaves.length, f);
    assert.equal(s.getBranch().getBranchPoints().length, ref.tree.branchPoints.length, f);
    // Byte-identical write-back.
    assert.deepEqual(Buffer.from(s.toBytes()), bytes, f);
  }
});

test(`[${BACKEND}] branches: leaves, branch points, paths, labels, contexts from any leaf`, () => {
  const s = fromJsonl(fixtureBytes('branches.jsonl'));
  const b = s.getBranch();
  assert.deepEqual(b.getLeaves().map((n) => n.id), ['c0000005', 'c0000008', 'c0000015']);
  assert.deepEqual(b.getBranchPoints().map((n) => [n.id, n.children]), [['c0000001', 2], ['c0000007', 2]]);
  assert.deepEqual(b.getPath('c0000008').map((e) => e.id), ['c0000001', 'c0000006', 'c0000007', 'c0000008']);
  assert.equal(b.getPath('c0000008')[1].type, 'branch_summary');
  assert.equal(b.getLabel('c0000002'), 'plan A (old)');
  assert.equal(b.getLabel('c0000007'), undefined);
  const leaf = b.getLeaves().find((n) => n.id === 'c0000008');
  assert.equal(leaf.role, 'user');
  assert.deepEqual(roles(s.getContext('c0000004')), ['user', 'assistant', 'user', 'assistant']);
  assert.deepEqual(roles(s.getContext()), ['user', 'branchSummary', 'assistant', 'user', 'assistant']);
  const m = s.getMetadata();
  assert.equal(m.name, 'Parser design');
  assert.equal(m.entryCount, 15);
  assert.equal(m.messageCount, 8);
  assert.equal(m.firstTimestamp, s.getEntries({ limit: 1 })[0].timestamp);
  throwsCode(assert, () => s.getContext('missing'), 'NOT_FOUND');
  throwsCode(assert, () => b.getPath('missing'), 'NOT_FOUND');
});

test(`[${BACKEND}] compactions and the LLM view`, () => {
  const s = fromJsonl(fixtureBytes('compactions.jsonl'));
  const c = s.getSessionContext();
  assert.equal(c.messages[0].role, 'compactionSummary');
  assert.equal(c.messages[0].summary, 'q1..q3 happened.');
  assert.equal(c.thinkingLevel, 'low');
  const llm = s.getLlmContext();
  assert.ok(llm.every((m) => ['user', 'assistant', 'toolResult'].includes(m.role)));
  assert.equal(llm.length, c.messages.length - 1, 'the bash run excluded from context is dropped');
});

test(`[${BACKEND}] old versions migrate in memory`, () => {
  const s = fromJsonl(fixtureBytes('v1-legacy.jsonl'));
  assert.equal(s.getMetadata().version, 1);
  const e = s.getEntries();
  assert.deepEqual(e.slice(0, 3).map((x) => [x.id, x.parentId]), [['00000001', null], ['00000002', '00000001'], ['00000003', '00000002']]);
  assert.equal(s.getHeader().version, undefined, 'the header is returned as written');
  assert.deepEqual(roles(s.getContext()), ['compactionSummary', 'user', 'assistant', 'custom', 'user', 'assistant']);
  const v2 = fromJsonl(fixtureBytes('v2-hookmessage.jsonl'));
  assert.equal(v2.getContext()[1].role, 'custom');
});

test(`[${BACKEND}] bad input: stable codes, lines and offsets, nothing silently skipped`, () => {
  const e = throwsCode(assert, () => fromJsonl(fixtureBytes('corrupt-middle.jsonl')), 'CORRUPTED_DATA');
  assert.equal(e.line, 3);
  const text = readFileSync(fixture('corrupt-middle.jsonl'), 'utf8');
  assert.equal(e.offset, Buffer.byteLength(text.split('\n').slice(0, 2).join('\n') + '\n'));
  const lenient = fromJsonl(fixtureBytes('corrupt-middle.jsonl'), { lenient: true });
  assert.equal(lenient.getMetadata().skippedLines, 1);
  assert.equal(lenient.getMetadata().skipped[0].line, 3);

  const torn = fromJsonl(fixtureBytes('torn-tail.jsonl')).getMetadata();
  assert.equal(torn.entryCount, 3);
  assert.deepEqual(torn.tornTail, { line: 5, offset: 946, bytes: 57 });

  throwsCode(assert, () => fromJsonl(fixtureBytes('cycle.jsonl')), 'CORRUPTED_DATA');
  assert.equal(fromJsonl(fixtureBytes('cycle.jsonl'), { lenient: true }).getMetadata().brokenCycles, 1);
  throwsCode(assert, () => fromJsonl(fixtureBytes('deep-nesting.jsonl')), 'LIMIT_EXCEEDED');
  throwsCode(assert, () => fromJsonl(fixtureBytes('v3-basic.jsonl'), { maxLineBytes: 50 }), 'LIMIT_EXCEEDED');
  for (const f of readdirSync(fixturesDir + 'not-sessions')) {
    throwsCode(assert, () => fromJsonl(fixtureBytes('not-sessions/' + f)), 'UNSUPPORTED_FORMAT');
  }
  throwsCode(assert, () => fromJsonl(''), 'UNSUPPORTED_FORMAT');
  throwsCode(assert, () => fromJsonl(fixtureBytes('v3-basic.jsonl'), { lenient: 'yes' }), 'INVALID_INPUT');
});

test(`[${BACKEND}] lone surrogates and raw numbers survive`, () => {
  const s = fromJsonl(fixtureBytes('lone-surrogates.jsonl'));
  const text = s.getContext()[0].content[0].text;
  assert.equal(text, 'broken emoji: \ud83d and \ude00 end');
  assert.equal(s.getContext()[1].content[0].text, 'pair: \u{1F600}');
  const u = fromJsonl(fixtureBytes('unknown-types.jsonl'));
  assert.equal(u.getEntries()[1].type, 'forkpoint.experiment');
  assert.deepEqual(u.getEntries()[3].extra, 'escaped key');
});

test(`[${BACKEND}] raw non-ASCII text comes back as written in the context`, () => {
  // Latin-1, past U+00FF, astral, a key and a value; the addon hands the
  // context over as \u escapes, which must parse to the same text.
  const content = 'é ÿ Ā — 中文 😀 \u0080\u07ff\u0800\uffff \u{10FFFF} "q" \\ end';
  const lines = [
    { type: 'session', version: 3, id: 's', timestamp: '2025-01-01T00:00:00.000Z', cwd: '/' },
    { type: 'message', id: 'a', parentId: null, timestamp: '2025-01-01T00:00:00.000Z', message: { role: 'user', content, 'clé ✓': 'ü', timestamp: 1 } },
  ];
  const s = fromJsonl(new TextEncoder().encode(lines.map((l) => JSON.stringify(l)).join('\n') + '\n'));
  assert.deepEqual(s.getSessionContext().messages, [lines[1].message]);
});

test(`[${BACKEND}] gzip and CRLF`, () => {
  const gz = fromJsonl(fixtureBytes('branches.jsonl.gz'));
  assert.equal(gz.getMetadata().gzip, true);
  assert.equal(gz.getBranch().getBranchPoints().length, 1);
  assert.equal(fromJsonl(fixtureBytes('crlf.jsonl')).getContext().length, 3);
});

test(`[${BACKEND}] leaf entries`, () => {
  assert.equal(fromJsonl(fixtureBytes('leaf-moves.jsonl')).leafId, 'i0000002');
  assert.equal(fromJsonl(fixtureBytes('leaf-null.jsonl')).leafId, null);
  assert.deepEqual(fromJsonl(fixtureBytes('leaf-null.jsonl')).getContext(), []);
});
