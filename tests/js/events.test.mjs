// The event-log contract both builds meet (FORKPOINT_BACKEND=napi: files;
// wasm: IndexedDB through fake-indexeddb).
import 'fake-indexeddb/auto';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BACKEND, napi, web } from './helpers.mjs';

const pkg = BACKEND === 'wasm' ? web : napi;
const { EventBus } = pkg;
let n = 0;
/** A fresh log location; `open(where, opts)` opens it with the backend under test. */
const fresh = () => (BACKEND === 'wasm' ? { db: `db-${process.pid}-${++n}`, log: 'agent' } : join(mkdtempSync(join(tmpdir(), 'fp-events-')), 'events.jsonl'));
const open = (where, opts) => (BACKEND === 'wasm' ? web.EventLog.openIndexedDb(where.db, where.log, opts) : napi.EventLog.open(where, opts));

async function rejects(p, code) {
  await assert.rejects(p, (e) => e instanceof pkg.ForkpointError && e.code === code);
}

test(`[${BACKEND}] append, bookmarks, channels, readSince, readRange, lastBookmark`, async () => {
  const where = fresh();
  const log = await open(where);
  assert.equal(await log.lastBookmark(), null);
  const b1 = await log.append({ type: 'tool:start', call: { id: 'c1' } });
  const b2 = await log.append({ type: 'permission_required', call: { id: 'c1' } });
  const b3 = await log.append({ type: 'agent_resumed', strategy: 'crash', sealed: [] });
  const b4 = await log.append({ type: 'my:thing', channel: 'monitor', n: 1.5 });
  assert.deepEqual([b1.seq, b2.seq, b3.seq, b4.seq], [1, 2, 3, 4]);
  assert.equal(typeof b1.timestamp, 'number');
  const all = await log.readSince(null);
  assert.deepEqual(all.map((e) => [e.seq, e.channel, e.type]), [[1, 'progress', 'tool:start'], [2, 'control', 'permission_required'], [3, 'monitor', 'agent_resumed'], [4, 'monitor', 'my:thing']]);
  assert.deepEqual(all[0].call, { id: 'c1' });
  assert.equal(all[3].n, 1.5);
  assert.deepEqual((await log.readSince(b2)).map((e) => e.seq), [3, 4]);
  assert.deepEqual((await log.readSince(b1, { channels: ['monitor'] })).map((e) => e.seq), [3, 4]);
  assert.deepEqual((await log.readSince(null, { kinds: ['permission_required'] })).map((e) => e.seq), [2]);
  assert.deepEqual((await log.readSince(0, { limit: 2 })).map((e) => e.seq), [1, 2]);
  assert.deepEqual((await log.readRange(b2, b3)).map((e) => e.seq), [2, 3]);
  assert.deepEqual(await log.lastBookmark(), b4);
  await rejects(log.append({ type: 'custom_unknown' }), 'INVALID_INPUT');
  await rejects(log.append({ type: 'tool:end', channel: 'monitor' }), 'INVALID_INPUT');
  await rejects(log.append({ type: 'done', seq: 9 }), 'INVALID_INPUT');
  await rejects(log.readSince(1.5), 'INVALID_INPUT');
  await rejects(log.readRange(1, -2), 'INVALID_INPUT');
  await log.close();
  // Reopen: seq continues after the last durable event, never reused.
  const again = await open(where);
  assert.equal(again.info.events, 4);
  assert.deepEqual(again.info.lastBookmark, b4);
  assert.equal((await again.append({ type: 'done', step: 1, reason: 'completed' })).seq, 5);
  await again.close();
});

test(`[${BACKEND}] replay then live: exactly once, in order, while a writer emits during the hand-over`, async () => {
  for (const durability of ['fsync', 'group']) {
    const log = await open(fresh(), { durability });
    const bus = new EventBus(log);
    for (let i = 0; i < 50; i++) await bus.emit({ type: 'text_chunk', step: 1, delta: `h${i}` });
    const since = { seq: 17, timestamp: 0 };
    const total = 250;
    const got = [];
    const reader = (async () => {
      for await (const { bookmark, event } of bus.subscribe({ since })) {
        assert.equal(bookmark.seq, event.seq);
        got.push(event.seq);
        if (event.seq === total) break;
      }
    })();
    // Concurrent emits while the subscriber replays history and switches to live.
    const writers = [];
    for (let i = 50; i < total; i++) writers.push(bus.emit({ type: 'text_chunk', step: 2, delta: `l${i}` }));
    await Promise.all(writers);
    await reader;
    assert.deepEqual(got, Array.from({ length: total - 17 }, (_, i) => i + 18), durability);
    await log.close();
  }
});

test(`[${BACKEND}] filters, live-only subscriptions, on() handlers, breaking out releases`, async () => {
  const log = await open(fresh(), { durability: 'group' });
  const bus = new EventBus(log);
  await bus.emit({ type: 'done' });
  const seen = [];
  const off = bus.on('control', (e) => seen.push(`c${e.seq}`));
  bus.on('tool:end', (e) => seen.push(`t${e.seq}`));
  const live = bus.subscribe({ channels: ['control'] });
  const first = live.next();
  await bus.emit({ type: 'tool:end', call: {} });
  await bus.emit({ type: 'permission_decided', callId: 'x', decision: 'allow', decidedBy: 'user' });
  const r = await first;
  assert.equal(r.value.event.type, 'permission_decided');
  assert.equal(r.value.bookmark.seq, 3);
  assert.deepEqual((await live.return()).done, true);
  assert.deepEqual((await live.next()).done, true, 'a returned iterator stays done');
  off();
  await bus.emit({ type: 'permission_required', call: {} });
  assert.deepEqual(seen, ['t2', 'c3']);
  await log.close();
});

test(`[${BACKEND}] a slow subscriber falls back to reading the log (bounded memory)`, async () => {
  const log = await open(fresh(), { durability: 'group' });
  const bus = new EventBus(log);
  const count = 12_000; // more than the in-memory ring holds
  const emits = [];
  for (let i = 0; i < count; i++) emits.push(bus.emit({ type: 'think_chunk', step: 1, delta: 'x' }));
  await Promise.all(emits);
  let expect = 1;
  for await (const { event } of bus.subscribe({ since: null })) {
    assert.equal(event.seq, expect++);
    if (expect > count) break;
  }
  assert.equal(expect, count + 1);
  await log.close();
});

test(`[${BACKEND}] a reopened log replays from storage with read-ahead, then live; breaking out mid-read is clean`, async () => {
  const where = fresh();
  let log = await open(where, { durability: 'group' });
  let bus = new EventBus(log);
  const kinds = ['text_chunk', 'token_usage', 'tool:end'];
  const history = 3000;
  await Promise.all(Array.from({ length: history }, (_, i) => bus.emit({ type: kinds[i % 3], i })));
  await log.close();
  // A fresh open: nothing is in memory, the replay reads the log in growing steps.
  log = await open(where, { durability: 'group' });
  bus = new EventBus(log);
  const rejected = [];
  const onRejection = (e) => rejected.push(e);
  process.on('unhandledRejection', onRejection);
  try {
    const abandoned = bus.subscribe({ since: 10 });
    assert.equal((await abandoned.next()).value.event.seq, 11);
    await abandoned.return(); // a read ahead may still be running
    const total = history + 600;
    const want = [];
    for (let seq = 101; seq <= total; seq++) if (kinds[(seq - 1) % 3] === 'token_usage') want.push(seq);
    const got = [];
    const reader = (async () => {
      for await (const { event } of bus.subscribe({ since: 100, channels: ['monitor'] })) {
        got.push(event.seq);
        if (event.seq === want.at(-1)) break;
      }
    })();
    const emits = [];
    for (let i = history; i < total; i++) emits.push(bus.emit({ type: kinds[i % 3], i }));
    await Promise.all(emits);
    await reader;
    assert.deepEqual(got, want);
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(rejected, []);
  } finally {
    process.off('unhandledRejection', onRejection);
  }
  await log.close();
});

test(`[${BACKEND}] a read of megabytes (parts read ahead) gives every event once, in order, filtered and limited`, async () => {
  const where = fresh();
  let log = await open(where, { durability: 'group' });
  const bus = new EventBus(log);
  const pad = 'p'.repeat(400);
  const count = 8000;
  await Promise.all(Array.from({ length: count }, (_, i) => bus.emit({ type: i % 4 ? 'text_chunk' : 'tool:end', i, pad })));
  await log.close();
  log = await open(where, { readOnly: BACKEND === 'napi' });
  const all = await log.readSince(5);
  assert.equal(all.length, count - 5);
  assert.ok(all.every((e, k) => e.seq === k + 6 && e.i === k + 5 && e.pad === pad));
  const some = await log.readSince({ seq: 100, timestamp: 0 }, { kinds: ['tool:end'], limit: 1500 });
  assert.equal(some.length, 1500);
  assert.ok(some.every((e, k) => e.type === 'tool:end' && e.seq === 101 + 4 * k));
  const range = await log.readRange(2000, 7000);
  assert.equal(range.length, 5001);
  assert.equal(range.at(-1).seq, 7000);
  await log.close();
});

test(`[${BACKEND}] an event committed while a batch is consumed is not left waiting; next() calls at once; close ends a wait`, async () => {
  const where = fresh();
  let log = await open(where, { durability: 'group' });
  let bus = new EventBus(log);
  for (let i = 1; i <= 5; i++) await bus.emit({ type: 'text_chunk', i });
  await log.close();
  log = await open(where, { durability: 'group' });
  bus = new EventBus(log);
  // The history comes from storage; the read ahead then finds nothing new...
  const it = bus.subscribe({ since: null });
  assert.equal((await it.next()).value.event.seq, 1);
  // ...and this commit happens before anyone waits for one.
  await bus.emit({ type: 'text_chunk', i: 6 });
  const within = (p, what) => Promise.race([p, new Promise((_, reject) => setTimeout(() => reject(new Error(`${what}: timed out`)), 2000))]);
  const rest = [];
  for (let k = 0; k < 5; k++) rest.push((await within(it.next(), `event ${k + 2}`)).value.event.seq);
  assert.deepEqual(rest, [2, 3, 4, 5, 6]);
  // Two next() calls at once get consecutive events.
  const both = Promise.all([it.next(), it.next()]);
  await bus.emit({ type: 'text_chunk', i: 7 });
  await bus.emit({ type: 'text_chunk', i: 8 });
  assert.deepEqual((await within(both, 'two at once')).map((r) => r.value.event.seq), [7, 8]);
  // Closing the log ends a subscription waiting for the next commit.
  const waiting = it.next();
  await log.close();
  assert.deepEqual(await within(waiting, 'close'), { done: true, value: undefined });
});

test(`[${BACKEND}] a read-only log reads what the writer stored since it opened`, async () => {
  const where = fresh();
  const w = await open(where, { durability: 'group' });
  for (let i = 0; i < 3; i++) await w.append({ type: 'text_chunk', i });
  const r = await open(where, { readOnly: true });
  assert.equal((await r.readSince(null)).length, 3);
  for (let i = 3; i < 5; i++) await w.append({ type: 'text_chunk', i });
  assert.deepEqual((await r.readSince(null)).map((e) => e.seq), [1, 2, 3, 4, 5]);
  assert.equal((await r.lastBookmark()).seq, 5);
  await r.close();
  await w.close();
});

test(`[${BACKEND}] memory durability`, async () => {
  const log = await open(fresh(), { durability: 'memory' });
  assert.equal((await log.append({ type: 'done' })).seq, 1);
  assert.deepEqual((await log.readSince(null)).map((e) => e.type), ['done']);
  await log.close();
});
