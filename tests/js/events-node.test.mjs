// Event logs from Node only: the lock, torn tails, and a second process
// following a log another process appends to.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { napi, rejectsCode } from './helpers.mjs';

const { EventLog, EventBus } = napi;
const tmp = () => join(mkdtempSync(join(tmpdir(), 'fp-events-node-')), 'events.jsonl');

test('one writer per log; a torn tail is cut and the next append kept', async () => {
  const path = tmp();
  const log = await EventLog.open(path);
  await log.append({ type: 'done', step: 1, reason: 'completed' });
  await rejectsCode(assert, EventLog.open(path), 'LOG_LOCKED');
  await log.close();
  appendFileSync(path, '{"seq":2,"timestamp":1,"channel":"progr');
  const again = await EventLog.open(path);
  assert.equal(again.info.repaired.offset, readFileSync(path, 'utf8').length);
  assert.equal((await again.append({ type: 'done', step: 2, reason: 'completed' })).seq, 2);
  assert.deepEqual((await again.readSince(null)).map((e) => e.step), [1, 2]);
  await again.close();
  // Corruption in the middle: a clear error with line and offset; the file is not changed.
  const text = readFileSync(path, 'utf8').split('\n');
  text.splice(1, 0, '{"seq":9,"garbage');
  writeFileSync(path, text.join('\n'));
  const e = await rejectsCode(assert, EventLog.open(path), 'CORRUPTED_DATA');
  assert.equal(e.line, 2);
  assert.equal(e.offset, text[0].length + 1);
});

const child = fileURLToPath(new URL('./events-writer.cjs', import.meta.url));

test('a second process reads and follows a log another process appends to', async () => {
  const path = tmp();
  const total = 300;
  const writer = spawn(process.execPath, [child, path, String(total)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => writer.on('exit', resolve));
  const ready = new Promise((resolve) => writer.stdout.once('data', resolve));
  await ready; // the writer has opened (and locked) the log
  const reader = await EventLog.open(path, { readOnly: true });
  await rejectsCode(assert, reader.append({ type: 'done' }), 'INVALID_INPUT');
  const bus = new EventBus(reader);
  const seen = [];
  for await (const { event } of bus.subscribe({ since: null })) {
    seen.push(event.seq);
    if (event.seq === total) break;
  }
  assert.deepEqual(seen, Array.from({ length: total }, (_, i) => i + 1));
  // Successive readSince calls with the last bookmark see each event once.
  const a = await reader.readSince(null, { limit: 100 });
  const b = await reader.readSince(a.at(-1));
  assert.deepEqual([...a, ...b].map((e) => e.seq), seen);
  const code = await exited;
  assert.equal(code, 0);
  await reader.close();
});

test('live handlers (on) of a read-only log see what another process appends, each once, in order', async () => {
  const path = tmp();
  const total = 400;
  const writer = spawn(process.execPath, [child, path, String(total)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => writer.on('exit', resolve));
  await new Promise((resolve) => writer.stdout.once('data', resolve));
  const reader = await EventLog.open(path, { readOnly: true });
  const bus = new EventBus(reader);
  const seen = [];
  const done = new Promise((resolve) => {
    const off = bus.on('progress', (e) => {
      seen.push(e.seq);
      if (e.seq === total) {
        off();
        resolve();
      }
    });
  });
  assert.equal(await exited, 0);
  await Promise.race([done, new Promise((_, reject) => setTimeout(() => reject(new Error(`only ${seen.length} events seen`)), 5000))]);
  assert.ok(seen.length > 0);
  assert.ok(seen.every((s, i) => i === 0 || s === seen[i - 1] + 1), 'consecutive, each once');
  assert.equal(seen.at(-1), total);
  await reader.close();
});
