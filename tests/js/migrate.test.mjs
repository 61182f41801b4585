// SessionMigrator.migrate and importSession: real files, through the package
// under test (Node: files written atomically; browser build: text and Blobs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BACKEND, napi, web, pkg, realDir, fixturesDir, fromJsonl, rejectsCode } from './helpers.mjs';

const tmp = () => mkdtempSync(join(tmpdir(), 'fp-migrate-'));
const PI = realDir + 'badlogic-pi-mono_large-session.jsonl';
const CC = ['marot-spotter_tool_heavy.jsonl', 'marot-spotter_subagent.jsonl'];

/** Migrates with the backend under test; returns the new session's text and the result. */
async function migrate(src, from, to, opts = {}) {
  if (BACKEND === 'wasm') {
    const r = await web.SessionMigrator.migrate(new Blob([readFileSync(src)]), from, to, opts);
    return { text: r.text, result: r };
  }
  const dst = join(tmp(), 'out.jsonl');
  const result = await napi.SessionMigrator.migrate(src, from, to, dst, opts);
  return { text: readFileSync(dst, 'utf8'), result };
}

const lines = (t) => t.split('\n').filter((l) => l !== '');

test(`[${BACKEND}] migrate a real pi session to OpenAI: tree kept, messages made sendable, progress reported`, async () => {
  const progress = [];
  const { text, result } = await migrate(PI, 'anthropic', 'openai', { onProgress: (p) => progress.push(p), stepBytes: 256 << 10 });
  const before = fromJsonl(readFileSync(PI));
  const after = fromJsonl(text);
  assert.equal(lines(text).length, lines(readFileSync(PI, 'utf8')).length);
  assert.equal(after.getEntries().length, before.getEntries().length);
  assert.equal(after.getBranch().getLeaves().length, before.getBranch().getLeaves().length);
  assert.equal(after.getContext().length, before.getContext().length);
  // Nothing Anthropic-only is left: signed thinking became text; ids already fit.
  const ctx = after.getContext();
  for (const m of ctx) if (m.role === 'assistant') assert.ok(!m.content.some((b) => b.type === 'thinking' && b.thinkingSignature), 'signed thinking left');
  const o = pkg.toProvider(after.getLlmContext(), 'openai');
  assert.ok(!o.report.steps.some((s) => ['thinking_to_text', 'signature_dropped'].includes(s.code)), o.report.steps.map((s) => s.code).join());
  assert.ok(result.messagesChanged > 0);
  assert.ok(result.report.steps.some((s) => s.code === 'thinking_to_text' && s.message > 1));
  assert.equal(result.report.compatible, false);
  assert.ok(progress.length >= 2, `progress ${progress.length}`);
  for (let i = 1; i < progress.length; i++) assert.ok(progress[i].bytesRead >= progress[i - 1].bytesRead);
  assert.equal(progress.at(-1).bytesRead, progress.at(-1).totalBytes);
  assert.deepEqual(JSON.parse(lines(text)[0]).migration.to, 'openai');
});

test(`[${BACKEND}] migrate to the same provider changes no entry`, async () => {
  const { text, result } = await migrate(PI, 'anthropic', 'anthropic');
  const src = lines(readFileSync(PI, 'utf8'));
  const out = lines(text);
  assert.equal(result.messagesChanged, 0);
  // Only the header differs (it records the migration); every entry is byte-identical.
  assert.deepEqual(out.slice(1), src.slice(1));
  const { migration, ...header } = JSON.parse(out[0]);
  assert.deepEqual(header, JSON.parse(src[0]));
  assert.equal(migration.from, 'anthropic');
});

if (BACKEND === 'napi') {
  test('[napi] migrate is atomic: a corrupt source leaves the target as it was, no temporary file', async () => {
    const dir = tmp();
    const src = join(dir, 'src.jsonl');
    const good = readFileSync(PI, 'utf8').split('\n');
    good.splice(40, 0, '{"type":"message","message":{"role":"user"'); // a torn line in the middle
    writeFileSync(src, good.join('\n'));
    const dst = join(dir, 'dst.jsonl');
    writeFileSync(dst, 'OLD\n');
    const e = await rejectsCode(assert, napi.SessionMigrator.migrate(src, 'anthropic', 'google', dst, { overwrite: true }), 'CORRUPTED_DATA');
    assert.equal(e.line, 41);
    assert.equal(readFileSync(dst, 'utf8'), 'OLD\n');
    assert.deepEqual(readdirSync(dir).sort(), ['dst.jsonl', 'src.jsonl']);
    await rejectsCode(assert, napi.SessionMigrator.migrate(join(dir, 'none.jsonl'), 'anthropic', 'google', dst, { overwrite: true }), 'NOT_FOUND');
    await rejectsCode(assert, napi.SessionMigrator.migrate(src, 'anthropic', 'gemini-pro-max', dst), 'INVALID_INPUT');
  });

  test('[napi] migrate: gzip found by content; pi-style call|item ids of any length stay paired', async () => {
    const dir = tmp();
    const gz = join(dir, 'session.jsonl'); // gzip without the .gz name
    writeFileSync(gz, (await import('node:zlib')).gzipSync(readFileSync(PI)));
    const r = await napi.SessionMigrator.migrate(gz, 'anthropic', 'openai', join(dir, 'out.jsonl'));
    assert.ok(r.messagesChanged > 0);
    const long = 'call_' + 'x'.repeat(70);
    const lines = [
      { type: 'session', version: 3, id: 's', timestamp: '2026-01-01T00:00:00.000Z', cwd: '/' },
      { type: 'message', id: 'a', parentId: null, timestamp: '2026-01-01T00:00:01.000Z', message: { role: 'user', content: 'go', timestamp: 1 } },
      { type: 'message', id: 'b', parentId: 'a', timestamp: '2026-01-01T00:00:02.000Z', message: { role: 'assistant', content: [{ type: 'toolCall', id: `${long}|fc_1`, name: 'f', arguments: {} }], api: 'openai-responses', provider: 'openai', model: 'm', stopReason: 'toolUse', timestamp: 2 } },
      { type: 'message', id: 'c', parentId: 'b', timestamp: '2026-01-01T00:00:03.000Z', message: { role: 'toolResult', toolCallId: `${long}|fc_1`, toolName: 'f', content: [{ type: 'text', text: 'ok' }], isError: false, timestamp: 3 } },
    ];
    const src = join(dir, 'long.jsonl');
    writeFileSync(src, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
    for (const target of ['openai-responses', 'anthropic', 'openai', 'google']) {
      const dst = join(dir, `long-${target}.jsonl`);
      await napi.SessionMigrator.migrate(src, 'openai-responses', target, dst);
      const out = readFileSync(dst, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      const call = out[2].message.content[0].id;
      const result = out[3].message.toolCallId;
      assert.equal(result, call, target);
      const o = napi.SessionLoader.fromJsonl(readFileSync(dst)).toProvider(target);
      assert.ok(!o.report.steps.some((x) => x.code === 'orphan_tool_result_dropped'), target);
    }
  });

  test('[napi] importSession writes a pi v3 file beside the source; SessionLoader opens it', async () => {
    const dir = tmp();
    for (const f of CC) {
      const src = join(dir, f);
      writeFileSync(src, readFileSync(realDir + f));
      const { path, summary } = await napi.importSession(src, { id: 'imported-1' });
      assert.equal(path, join(dir, f.replace('.jsonl', '.forkpoint.jsonl')));
      assert.equal(summary.format, 'claude-code');
      assert.equal(summary.skippedLines, 0);
      const s = await napi.SessionLoader.open(path);
      assert.equal(s.getMetadata().sessionId ?? JSON.parse(readFileSync(path, 'utf8').split('\n')[0]).id, 'imported-1');
      assert.equal(s.getEntries().length, summary.entries);
      assert.ok(s.getContext().length > 0);
      // The browser build imports the same bytes to the same text.
      const w = await web.importSession(new Blob([readFileSync(realDir + f)]), { id: 'imported-1' });
      assert.equal(w.text, readFileSync(path, 'utf8'));
      assert.deepEqual(w.summary, summary);
      assert.equal(w.session.getEntries().length, summary.entries);
    }
    await rejectsCode(assert, napi.importSession(new Uint8Array([1, 2, 3])), 'INVALID_INPUT');
    await rejectsCode(assert, napi.importSession(new TextEncoder().encode('hello\n'), { to: join(dir, 'x.jsonl') }), 'UNSUPPORTED_FORMAT');
  });

  // Both ways of putting a new session file in place, with the same rules.
  const puts = {
    importSession: (src, dst, opts) => napi.importSession(src, { to: dst, id: 'imported-1', ...opts }),
    'SessionMigrator.migrate': (src, dst, opts) => napi.SessionMigrator.migrate(src, 'anthropic', 'openai', dst, opts),
  };
  for (const [name, put] of Object.entries(puts)) {
    test(`[napi] ${name} never replaces a file silently: ALREADY_EXISTS unless overwrite, SESSION_LOCKED for a file a SessionWriter holds`, async () => {
      const dir = tmp();
      const src = realDir + (name === 'importSession' ? CC[0] : 'badlogic-pi-mono_large-session.jsonl');
      const dst = join(dir, 'out.jsonl');
      writeFileSync(dst, 'OLD\n');
      const e = await rejectsCode(assert, put(src, dst), 'ALREADY_EXISTS');
      assert.equal(e.path, dst);
      assert.equal(readFileSync(dst, 'utf8'), 'OLD\n');
      assert.deepEqual(readdirSync(dir), ['out.jsonl']);
      await put(src, dst, { overwrite: true });
      const fresh = readFileSync(dst, 'utf8');
      assert.ok(napi.SessionLoader.fromJsonl(fresh).getEntries().length > 0);
      // A writer holds it: refused even with overwrite; its appends before and after stay.
      // (The real pi session is version 1: the writer rewrites it as version 3 first.)
      const w = await napi.SessionWriter.open(dst, { migrate: true });
      const a = await w.append({ type: 'custom', customType: 'before' });
      await rejectsCode(assert, put(src, dst), 'SESSION_LOCKED');
      await rejectsCode(assert, put(src, dst, { overwrite: true }), 'SESSION_LOCKED');
      const b = await w.append({ type: 'custom', customType: 'after' });
      await w.close();
      const s = await napi.SessionLoader.open(dst);
      const ids = s.getEntries().map((x) => x.id);
      assert.ok(ids.includes(a) && ids.includes(b));
      // The same source again with the default: what was appended survives.
      await rejectsCode(assert, put(src, dst), 'ALREADY_EXISTS');
      assert.ok((await napi.SessionLoader.open(dst)).getEntries().some((x) => x.id === b));
      assert.deepEqual(readdirSync(dir).filter((n) => n.startsWith('.')), []);
    });
  }

  test('[napi] importSession twice with the default target: the second is ALREADY_EXISTS, appends after the first survive', async () => {
    const dir = tmp();
    const src = join(dir, 'cc.jsonl');
    writeFileSync(src, readFileSync(realDir + CC[0]));
    const { path } = await napi.importSession(src);
    const w = await napi.SessionWriter.open(path);
    const id = await w.append({ type: 'custom', customType: 'mine' });
    await w.close();
    await rejectsCode(assert, napi.importSession(src), 'ALREADY_EXISTS');
    assert.ok((await napi.SessionLoader.open(path)).getEntries().some((x) => x.id === id));
  });
}

test(`[${BACKEND}] an imported Claude Code session goes to every provider with a report`, async () => {
  const bytes = readFileSync(realDir + CC[0]);
  let text;
  if (BACKEND === 'wasm') text = (await web.importSession(bytes, { id: 'x' })).text;
  else {
    const dst = join(tmp(), 'cc.jsonl');
    await napi.importSession(bytes, { to: dst, id: 'x' });
    text = readFileSync(dst, 'utf8');
  }
  const s = fromJsonl(text);
  const msgs = s.getLlmContext();
  assert.ok(msgs.length > 4);
  for (const t of ['anthropic', 'openai', 'openai-responses', 'google']) {
    const o = pkg.toProvider(msgs, t);
    assert.ok(o.body.length > 100, t);
    assert.ok(!o.report.steps.some((st) => st.code === 'missing_tool_result_filled' || st.code === 'orphan_tool_result_dropped'), `${t}: ${o.report.steps.map((x) => x.code)}`);
  }
  // Claude Code's own calls and results pair exactly: back to Anthropic nothing is lost.
  assert.equal(pkg.toProvider(msgs, 'anthropic').report.compatible, true);
});

/** Imports bytes with the backend under test: the session's text and the summary. */
async function importBytes(bytes) {
  if (BACKEND === 'wasm') {
    const r = await web.importSession(bytes, { id: 'imported-1' });
    return { text: r.text, summary: r.summary };
  }
  const dst = join(tmp(), 'imported.jsonl');
  const { summary } = await napi.importSession(bytes, { to: dst, id: 'imported-1' });
  return { text: readFileSync(dst, 'utf8'), summary };
}

const importFixture = (name) => readFileSync(fixturesDir + 'import/' + name);
const textOf = (c) => (typeof c === 'string' ? c : c.filter((b) => b.type === 'text').map((b) => b.text).join('\n'));

test(`[${BACKEND}] a Claude Code subagent transcript imports its own chain as the conversation`, async () => {
  const { text, summary } = await importBytes(importFixture('claude-code-subagent.jsonl'));
  assert.deepEqual([summary.entries, summary.messages, summary.customEntries], [4, 4, 0]);
  const ctx = fromJsonl(text).getContext();
  assert.deepEqual(ctx.map((m) => m.role), ['user', 'assistant', 'toolResult', 'assistant']);
  assert.equal(textOf(ctx[0].content), 'Find where the config file is loaded and report the function name.');
  assert.equal(ctx[1].content[1].id, 'toolu_01S');
  assert.equal(ctx[2].toolCallId, 'toolu_01S');
  // It converts like any conversation: the call and its result stay paired.
  const o = pkg.toProvider(fromJsonl(text).getLlmContext(), 'openai');
  assert.ok(!o.report.steps.some((s) => s.code === 'missing_tool_result_filled' || s.code === 'orphan_tool_result_dropped'));

  const older = await importBytes(importFixture('claude-code-subagent-progress.jsonl'));
  assert.deepEqual([older.summary.messages, older.summary.customEntries], [4, 2]);
  const ctx2 = fromJsonl(older.text).getContext();
  assert.deepEqual(ctx2.map((m) => m.role), ['user', 'assistant', 'toolResult', 'assistant']);
  assert.equal(ctx2[2].isError, true);
});

test(`[${BACKEND}] a Codex rollout with user turns only in event_msg user_message starts with the user; no duplicates when both exist`, async () => {
  const { text, summary } = await importBytes(importFixture('codex-user-events-only.jsonl'));
  assert.equal(summary.format, 'codex');
  assert.equal(summary.entries, 13);
  const ctx = fromJsonl(text).getContext();
  assert.deepEqual(ctx.map((m) => m.role), ['user', 'assistant', 'toolResult', 'assistant', 'user', 'assistant']);
  assert.equal(textOf(ctx[0].content), 'What does main.rs print?');
  assert.equal(ctx[4].content[1].type, 'image');
  assert.equal(ctx[4].content[1].mimeType, 'image/png');
  // Gemini and Anthropic get it without a placeholder turn: it starts with the user now.
  for (const t of ['google', 'anthropic']) {
    const o = pkg.toProvider(fromJsonl(text).getLlmContext(), t);
    assert.ok(!o.report.steps.some((s) => s.code === 'leading_user_turn_added'), t);
  }
  const both = await importBytes(importFixture('codex-user-events-and-items.jsonl'));
  const users = fromJsonl(both.text).getContext().filter((m) => m.role === 'user').map((m) => textOf(m.content));
  assert.equal(users.length, 3, users.join(' | '));
  assert.deepEqual(users.slice(1), ['list the files', 'thanks']);
});

// A Blob-like object whose `size` claims more bytes than its slices give ends
// with INVALID_INPUT (no endless loop, no buffer of the claimed size).
test('[wasm] Session.fromBlob and SessionMigrator.migrate: a Blob that lies about its size is INVALID_INPUT', async () => {
  const bytes = readFileSync(fixturesDir + 'branches.jsonl');
  class Lying extends Blob {
    get size() {
      return 1e12;
    }
  }
  const fakes = [
    new Lying([bytes]),
    { size: 1e12, slice: () => new Blob([]) },
    { size: bytes.length + 1, slice: (a, b) => new Blob([bytes.subarray(a, b)]) },
    { size: 1e12, slice: () => ({ arrayBuffer: async () => new ArrayBuffer(0) }), stream: () => new Blob([]).stream() },
  ];
  for (const blob of fakes) {
    const t0 = Date.now();
    // (A claim of more than maxFileBytes is refused before a read: raised here to reach the slices.)
    const e = await rejectsCode(assert, web.Session.fromBlob(blob, { maxFileBytes: 2e12 }), 'INVALID_INPUT');
    assert.match(e.message, /promised/);
    if (blob.size > 4 * 2 ** 30) assert.match((await rejectsCode(assert, web.Session.fromBlob(blob), 'LIMIT_EXCEEDED')).message, /maxFileBytes/);
    await rejectsCode(assert, web.SessionMigrator.migrate(blob, 'anthropic', 'openai'), 'INVALID_INPUT');
    assert.ok(Date.now() - t0 < 5000, 'ends at the first short slice');
  }
  for (const size of [Infinity, -1, 1.5, NaN, '12']) {
    const e = await rejectsCode(assert, web.Session.fromBlob({ size, slice: () => new Blob([]) }), 'INVALID_INPUT');
    assert.match(e.message, /not a byte count/);
  }
  // An honest Blob still loads, in slices.
  assert.equal((await web.Session.fromBlob(new Blob([bytes]))).entryCount, fromJsonl(bytes).entryCount);
});
