// The IndexedDbStore contract: one list of cases run in Node against
// fake-indexeddb (tests/js/store.test.mjs) and in Chromium against the real
// IndexedDB (tests/browser/store.html). No Node or browser API here: the
// runner passes what differs in `ctx`:
//   web      the forkpoint-web module
//   db()     a fresh database name
//   bytes(p) a fixture's bytes ('branches.jsonl', 'real/NAME')
//   assert   { ok, equal, deepEqual, rejectsCode }

const REAL = [
  'real/badlogic-pi-mono_large-session.jsonl',
  'real/mattpocock-sandcastle_resumed-session.jsonl',
  'real/marot-spotter_subagent.jsonl',
  'real/marot-spotter_tool_heavy.jsonl',
];

const sameBytes = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
const blobBytes = async (blob) => new Uint8Array(await blob.arrayBuffer());

/**
 * A pi v3 session of `n` turns of about `size` bytes each (several chunks when
 * large). `random`: text that does not compress (for quota tests).
 */
export function bigSession(n, size, id = 'big-session-1', random = false) {
  const lines = [JSON.stringify({ type: 'session', version: 3, id, timestamp: '2026-01-01T00:00:00.000Z', cwd: '/w' })];
  let parent = null;
  const pad = 'x'.repeat(size);
  const noise = () => Array.from(globalThis.crypto.getRandomValues(new Uint8Array(size / 2)), (b) => b.toString(16).padStart(2, '0')).join('');
  for (let i = 0; i < n; i++) {
    const eid = i.toString(16).padStart(8, '0');
    const role = i % 2 ? 'assistant' : 'user';
    lines.push(
      JSON.stringify({
        type: 'message',
        id: eid,
        parentId: parent,
        timestamp: '2026-01-01T00:00:01.000Z',
        message: { role, content: [{ type: 'text', text: `${i} ${random ? noise() : pad}` }], timestamp: 1 },
      }),
    );
    parent = eid;
  }
  return lines.join('\n') + '\n';
}

/** What a session's shape is, for comparisons. */
function shape(s) {
  const b = s.getBranch();
  return {
    entries: s.entryCount,
    leaf: s.leafId,
    leaves: b.getLeaves().map((n) => n.id),
    branchPoints: b.getBranchPoints().map((n) => n.id),
    runs: b.getTree().length,
    context: JSON.stringify(s.getContext()),
  };
}

export const cases = [
  {
    name: 'pi files: import, list, load whole and lazily, export the same bytes',
    async run({ web, db, bytes, assert }) {
      const store = await web.IndexedDbStore.open(db());
      for (const name of ['branches.jsonl', 'compactions.jsonl', 'leaf-moves.jsonl', 'v3-basic.jsonl']) {
        const b = await bytes(name);
        const info = await store.importSession(b);
        const ref = web.Session.fromJsonl(b);
        const m = ref.getMetadata();
        assert.equal(info.id, m.sessionId, `${name}: keyed by the header's id`);
        assert.deepEqual([info.entryCount, info.messageCount, info.leafId], [m.entryCount, m.messageCount, m.leafId], name);
        assert.deepEqual([info.format, info.version, info.changed, info.sourceBytes], ['pi', 3, false, 0], name);
        const s = await store.loadSession(info.id);
        assert.deepEqual(shape(s), shape(ref), `${name}: loaded = Session.fromJsonl`);
        const lazy = await store.loadSession(info.id, { lazy: true });
        assert.equal(JSON.stringify(lazy.getContext()), JSON.stringify(ref.getContext()), `${name}: lazy context`);
        assert.ok(sameBytes(await blobBytes(await store.exportSession(info.id)), b), `${name}: export is byte-identical`);
      }
      const list = await store.listSessions();
      assert.equal(list.length, 4);
      await store.close();
    },
  },
  {
    name: 'real files (pi v1, pi v3, Claude Code): export gives the imported bytes; the stored session is pi v3',
    async run({ web, db, bytes, assert }) {
      const store = await web.IndexedDbStore.open(db());
      for (const name of REAL) {
        const b = await bytes(name);
        const info = await store.importSession(new Blob([b]), { name });
        const ref = await web.importSession(b, { id: info.id });
        assert.equal(info.entryCount, ref.summary.entries, name);
        assert.equal(info.format, ref.summary.format, name);
        const s = await store.loadSession(info.id);
        assert.equal(s.getHeader().version, 3, name);
        assert.deepEqual(shape(s), shape(ref.session), `${name}: the same tree and context as importSession`);
        s.free();
        await assert.rejectsCode((async () => s.entryCount)(), 'CLOSED');
        assert.ok(sameBytes(await blobBytes(await store.exportSession(info.id)), b), `${name}: export is byte-identical`);
        const pi = await blobBytes(await store.exportSession(info.id, { format: 'pi' }));
        assert.equal(web.Session.fromJsonl(pi).entryCount, info.entryCount, name);
      }
      await store.close();
    },
  },
  {
    name: 'a Claude Code file imported twice: its own session id, then ALREADY_EXISTS; { copy: true } a new id; 0.1.0 random ids still open',
    async run({ web, db, bytes, assert }) {
      const ID = 'd6e0bada-1959-4eec-a9d2-0bfade768d8f';
      const store = await web.IndexedDbStore.open(db());
      const b = await bytes('real/marot-spotter_tool_heavy.jsonl');
      // As 0.1.0 stored it: under a random id.
      const old = await store.importSession(b, { id: 'f6634f6b-bead-4574-8809-f2e735e4a199' });
      const info = await store.importSession(new Blob([b]));
      assert.equal(info.id, ID);
      assert.equal((await store.loadSession(ID)).getHeader().id, ID);
      const e = await assert.rejectsCode(store.importSession(new Blob([b])), 'ALREADY_EXISTS');
      assert.ok(e.message.includes(ID), e.message);
      const copies = [await store.importSession(b, { copy: true }), await store.importSession(b, { copy: true })];
      for (const c of copies) {
        assert.ok(c.id !== ID && /^[0-9a-f-]{36}$/.test(c.id), c.id);
        assert.equal((await store.loadSession(c.id)).getHeader().id, c.id);
      }
      assert.ok(copies[0].id !== copies[1].id);
      assert.equal((await store.loadSession(old.id)).entryCount, info.entryCount);
      // The standalone import derives the same id.
      const ref = await web.importSession(b);
      assert.equal(ref.summary.sessionId, ID);
      assert.equal(ref.session.getHeader().id, ID);
      assert.equal((await store.listSessions()).length, 4);
      await store.close();
    },
  },
  {
    name: 'bad input: a clear code, nothing stored, nothing lost',
    async run({ web, db, bytes, assert }) {
      const store = await web.IndexedDbStore.open(db());
      const kept = await store.importSession(await bytes('branches.jsonl'));
      const e = await assert.rejectsCode(store.importSession(await bytes('corrupt-middle.jsonl')), 'CORRUPTED_DATA');
      assert.ok(e.line > 1, `line ${e.line}`);
      await assert.rejectsCode(store.importSession(await bytes('not-sessions/binary.jsonl')), 'UNSUPPORTED_FORMAT');
      await assert.rejectsCode(store.importSession('not json at all\n'), 'UNSUPPORTED_FORMAT');
      await assert.rejectsCode(store.importSession(await bytes('branches.jsonl')), 'ALREADY_EXISTS');
      await assert.rejectsCode(store.importSession(await bytes('compactions.jsonl'), { id: '../x' }), 'INVALID_ID');
      await assert.rejectsCode(store.importSession(await bytes('compactions.jsonl'), { format: 'nope' }), 'INVALID_INPUT');
      await assert.rejectsCode(store.loadSession('missing'), 'NOT_FOUND');
      await assert.rejectsCode(store.loadSession('missing', { lazy: true }), 'NOT_FOUND');
      await assert.rejectsCode(store.deleteSession('missing'), 'NOT_FOUND');
      await assert.rejectsCode(store.appendEntry(kept.id, { type: 'message', parentId: 'nope', message: { role: 'user', content: 'x' } }), 'NOT_FOUND');
      await assert.rejectsCode(store.appendEntry(kept.id, { noType: 1 }), 'INVALID_INPUT');
      // Nested deeper than JSON.stringify can go: INVALID_INPUT, not a crash.
      let deep = {};
      for (let i = 0; i < 100_000; i++) deep = { a: deep };
      const de = await assert.rejectsCode(store.appendEntry(kept.id, { type: 'custom', customType: 'deep', data: deep }), 'INVALID_INPUT');
      // (JSON.stringify throws for it in Node; a browser with a deeper stack writes it and the core refuses it)
      assert.ok(/nested too deeply|nested deeper than the limit/.test(de.message), de.message);
      // A Blob whose size claims more than its slices give: INVALID_INPUT, not a
      // loop over a terabyte or a buffer of that size.
      class Lying extends Blob {
        get size() {
          return 1e12;
        }
      }
      // (A claim past maxFileBytes is refused before any read: raised here to reach the slices.)
      const le = await assert.rejectsCode(store.importSession(new Lying([await bytes('compactions.jsonl')]), { maxFileBytes: 2e12 }), 'INVALID_INPUT');
      assert.ok(/promised/.test(le.message), le.message);
      await assert.rejectsCode(store.importSession({ size: 1e12, slice: () => new Blob([]) }, { maxFileBytes: 2e12 }), 'INVALID_INPUT');
      const fe = await assert.rejectsCode(store.importSession({ size: 1e12, slice: () => new Blob([]) }), 'LIMIT_EXCEEDED');
      assert.ok(/maxFileBytes/.test(fe.message), fe.message);
      await assert.rejectsCode(store.importSession({ size: Infinity, slice: () => new Blob([]) }), 'INVALID_INPUT');
      await assert.rejectsCode(store.moveLeaf(kept.id, 'nope'), 'NOT_FOUND');
      const list = await store.listSessions();
      assert.deepEqual(
        list.map((i) => [i.id, i.entryCount, i.changed]),
        [[kept.id, kept.entryCount, false]],
      );
      assert.ok(sameBytes(await blobBytes(await store.exportSession(kept.id)), await bytes('branches.jsonl')));
      await store.close();
    },
  },
  {
    name: 'a gzip bomb is LIMIT_EXCEEDED early (not out of memory), each limit an option; nothing stored',
    async run({ web, db, assert }) {
      const gzip = async (bytes) => new Uint8Array(await new Response(new Blob([bytes]).stream().pipeThrough(new CompressionStream('gzip'))).arrayBuffer());
      const header = await gzip(new TextEncoder().encode('{"type":"session","version":3,"id":"bomb-1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}\n'));
      // One line of 1 GiB after the header: the same 1 MiB member 1024 times (about 1 MB).
      const member = await gzip(new Uint8Array(1 << 20).fill(0x78));
      const bomb = new Uint8Array(header.length + 1024 * member.length);
      bomb.set(header);
      for (let i = 0; i < 1024; i++) bomb.set(member, header.length + i * member.length);
      const store = await web.IndexedDbStore.open(db());
      let e = await assert.rejectsCode(store.importSession(bomb), 'LIMIT_EXCEEDED');
      assert.ok(/maxCompressionRatio/.test(e.message), e.message);
      e = await assert.rejectsCode(store.importSession(bomb, { maxCompressionRatio: 0, maxLineBytes: 8 << 20 }), 'LIMIT_EXCEEDED');
      assert.ok(/maxLineBytes/.test(e.message), e.message);
      e = await assert.rejectsCode(store.importSession(new Blob([bomb]), { maxCompressionRatio: 0, maxDecompressedBytes: 4 << 20 }), 'LIMIT_EXCEEDED');
      assert.ok(/maxDecompressedBytes/.test(e.message), e.message);
      assert.deepEqual(await store.listSessions(), []);
      await store.close();
    },
  },
  {
    name: 'an aborted import (before, while reading, while writing) leaves nothing',
    async run({ web, db, assert }) {
      const store = await web.IndexedDbStore.open(db());
      const text = bigSession(2400, 1500); // ~4 MiB: several chunks
      const before = new AbortController();
      before.abort();
      await assert.rejectsCode(store.importSession(text, { signal: before.signal }), 'ABORTED');
      const phases = [];
      const mid = new AbortController();
      const e = await assert.rejectsCode(
        store.importSession(new Blob([text]), {
          signal: mid.signal,
          onProgress: (p) => {
            phases.push(p.phase);
            if (p.phase === 'write' && p.bytes < p.total) mid.abort();
          },
        }),
        'ABORTED',
      );
      assert.ok(phases.includes('read') && phases.includes('write'), phases.join());
      assert.ok(/nothing/.test(e.message), e.message);
      assert.equal((await store.listSessions()).length, 0);
      await assert.rejectsCode(store.loadSession('big-session-1'), 'NOT_FOUND');
      // The same import without abort lands whole.
      const info = await store.importSession(new Blob([text]));
      assert.equal(info.entryCount, 2400);
      assert.equal((await store.loadSession(info.id)).entryCount, 2400);
      await store.close();
    },
  },
  {
    name: 'appendEntry, moveLeaf, setLabel, fork, delete; everything survives reopening',
    async run({ web, db, bytes, assert }) {
      const name = db();
      let store = await web.IndexedDbStore.open(name);
      const b = await bytes('branches.jsonl');
      const info = await store.importSession(b);
      const ref = web.Session.fromJsonl(b);
      const other = ref.getBranch().getLeaves().find((l) => l.id !== ref.leafId);
      const moved = await store.moveLeaf(info.id, other.id);
      assert.deepEqual([moved.leafId, moved.changed, moved.entryCount], [other.id, true, info.entryCount + 1]);
      let s = await store.loadSession(info.id);
      assert.equal(JSON.stringify(s.getContext()), JSON.stringify(ref.getContext(other.id)), 'context after moveLeaf');
      const added = await Promise.all([
        store.appendEntry(info.id, { type: 'message', message: { role: 'user', content: [{ type: 'text', text: 'one' }], timestamp: 1 } }),
        store.appendEntry(info.id, { type: 'message', message: { role: 'assistant', content: [{ type: 'text', text: 'two' }], timestamp: 2 } }),
      ]);
      await store.setLabel(info.id, added[0], 'first');
      s = await store.loadSession(info.id);
      assert.equal(s.getEntry(added[0]).parentId, other.id, 'appends chain from the moved leaf');
      assert.equal(s.getEntry(added[1]).parentId, added[0], 'appends run in call order');
      assert.equal(s.getBranch().getLabel(added[0]), 'first');
      const now = await store.getSessionInfo(info.id);
      assert.deepEqual([now.changed, now.entryCount], [true, info.entryCount + 4]);
      const exported = await blobBytes(await store.exportSession(info.id));
      assert.ok(sameBytes(exported.subarray(0, b.length), b), 'the export starts with the imported bytes');
      const fork = await store.fork(info.id, added[0], { id: 'fork-1' });
      assert.equal(fork.parentSession, info.id);
      const f = await store.loadSession('fork-1');
      assert.equal(f.entryCount, s.getBranch().getPath(added[0]).length);
      assert.equal(JSON.stringify(f.getContext()), JSON.stringify(s.getContext(added[0])));
      await store.close();

      store = await web.IndexedDbStore.open(name);
      assert.deepEqual((await store.listSessions()).map((i) => i.id).sort(), [info.id, 'fork-1'].sort(), 'after reopening');
      assert.ok(sameBytes(await blobBytes(await store.exportSession(info.id)), exported));
      await store.deleteSession(info.id);
      assert.deepEqual((await store.listSessions()).map((i) => i.id), ['fork-1']);
      await store.close();
    },
  },
  {
    name: 'lazy load of a large stored session: the same context; maxMessages pages history',
    async run({ web, db, assert }) {
      const store = await web.IndexedDbStore.open(db());
      const text = bigSession(2400, 1500);
      const info = await store.importSession(text);
      for (let i = 0; i < 30; i++) {
        await store.appendEntry(info.id, { type: 'message', message: { role: 'user', content: [{ type: 'text', text: 'more '.repeat(3000) }], timestamp: 3 } });
      }
      const full = await store.loadSession(info.id);
      const lazy = await store.loadSession(info.id, { lazy: true });
      assert.equal(JSON.stringify(lazy.getContext()), JSON.stringify(full.getContext()));
      const cut = await store.loadSession(info.id, { lazy: true, maxMessages: 10 });
      assert.equal(cut.getContext().length, 10);
      const older = await cut.loadMoreHistory(25);
      assert.equal(older.length, 25);
      assert.equal(JSON.stringify(older), JSON.stringify(full.getContext().slice(-35, -10)));
      await store.close();
    },
  },
  {
    name: 'events and checkpoints per session',
    async run({ web, db, bytes, assert }) {
      const store = await web.IndexedDbStore.open(db());
      const info = await store.importSession(await bytes('branches.jsonl'));
      const log = await store.events(info.id);
      assert.ok((await store.events(info.id)) === log, 'one log per session and store');
      await log.append({ channel: 'progress', type: 'text_chunk', delta: 'a' });
      const bm = await log.append({ channel: 'progress', type: 'done' });
      const cp = await store.saveCheckpoint(info.id, { label: 'before' });
      assert.deepEqual([cp.entryId, cp.eventSeq, cp.label, cp.entryCount], [info.leafId, bm.seq, 'before', info.entryCount]);
      const other = web.Session.fromJsonl(await bytes('branches.jsonl'))
        .getBranch()
        .getLeaves()
        .find((l) => l.id !== info.leafId);
      await store.moveLeaf(info.id, other.id);
      await store.restoreCheckpoint(info.id, cp.id);
      assert.equal((await store.getSessionInfo(info.id)).leafId, info.leafId);
      assert.equal((await log.readSince(cp.eventSeq - 1)).length, 1);
      assert.equal((await store.listCheckpoints(info.id)).length, 1);
      await assert.rejectsCode(store.restoreCheckpoint(info.id, 'nope'), 'NOT_FOUND');
      await store.deleteSession(info.id);
      assert.ok(info.logName.startsWith(`session:${info.id}:`), info.logName);
      const again = await web.EventLog.openIndexedDb(store.dbName, info.logName);
      assert.equal(await again.lastBookmark(), null, 'deleting the session deleted its events');
      await again.close();
      await store.close();
    },
  },
  {
    name: 'two handles on one database never interleave their writes',
    async run({ web, db, bytes, assert }) {
      const name = db();
      const a = await web.IndexedDbStore.open(name);
      const b = await web.IndexedDbStore.open(name);
      const info = await a.importSession(await bytes('compactions.jsonl'));
      const entry = (t) => ({ type: 'custom', customType: t });
      const x = await a.appendEntry(info.id, entry('a1'));
      const y = await b.appendEntry(info.id, entry('b1'));
      const z = await a.appendEntry(info.id, entry('a2'));
      const [p, q] = await Promise.all([a.appendEntry(info.id, entry('a3')), b.appendEntry(info.id, entry('b2'))]);
      const s = await b.loadSession(info.id);
      assert.equal(s.getEntry(y).parentId, x);
      assert.equal(s.getEntry(z).parentId, y);
      const parents = [s.getEntry(p).parentId, s.getEntry(q).parentId];
      assert.ok(parents.includes(z) && (parents.includes(p) || parents.includes(q)), `concurrent appends chain: ${parents}`);
      assert.equal(s.entryCount, info.entryCount + 5);
      await a.close();
      await b.close();
    },
  },
  {
    name: 'schema: a version-1 database (events only) is upgraded with its events kept; an old tab blocks with BLOCKED; a newer version closes us (CLOSED) and is refused (UNSUPPORTED_FORMAT)',
    async run({ web, db, assert, indexedDB }) {
      const name = db();
      const open1 = () =>
        new Promise((resolve, reject) => {
          const r = indexedDB.open(name, 1);
          r.onupgradeneeded = () => r.result.createObjectStore('events');
          r.onsuccess = () => resolve(r.result);
          r.onerror = () => reject(r.error);
        });
      const old = await open1();
      await new Promise((resolve, reject) => {
        const tx = old.transaction('events', 'readwrite');
        tx.objectStore('events').put(JSON.stringify({ seq: 1, timestamp: 1767225600000, channel: 'monitor', type: 'old' }), ['legacy', 1]);
        tx.oncomplete = resolve;
        tx.onerror = () => reject(tx.error);
      });
      // An "old tab" that ignores versionchange blocks the upgrade: an error, not a hang.
      const e = await assert.rejectsCode(web.IndexedDbStore.open(name), 'BLOCKED');
      assert.ok(/another tab/.test(e.message), e.message);
      old.close();
      const store = await web.IndexedDbStore.open(name);
      assert.deepEqual(await store.listSessions(), []);
      const log = await web.EventLog.openIndexedDb(name, 'legacy');
      assert.equal((await log.lastBookmark())?.seq, 1, 'the version-1 event survived the upgrade');
      await log.close();
      // A newer version opened elsewhere: this connection lets go (no block),
      // later calls fail with CLOSED, and this build refuses the newer schema.
      const newer = await new Promise((resolve, reject) => {
        const r = indexedDB.open(name, 4); // one above this build's schema
        r.onsuccess = () => resolve(r.result);
        r.onerror = () => reject(r.error);
        setTimeout(() => reject(new Error('forkpoint kept the database from being upgraded')), 5000);
      });
      await assert.rejectsCode(store.listSessions(), 'CLOSED');
      newer.close();
      await assert.rejectsCode(web.IndexedDbStore.open(name), 'UNSUPPORTED_FORMAT');
    },
  },
  {
    name: 'reads wait for the changes asked before them; lazy history calls queue; a damaged record is listed and deletable',
    async run({ web, db, bytes, assert, indexedDB }) {
      const name = db();
      const store = await web.IndexedDbStore.open(name);
      const b = await bytes('branches.jsonl');
      const importing = store.importSession(b);
      // Not awaited: the reads below still see it.
      const list = await store.listSessions();
      const info = await importing;
      assert.deepEqual(list.map((i) => i.id), [info.id]);
      const appending = store.appendEntry(info.id, { type: 'custom', customType: 'x' });
      const after = await store.getSessionInfo(info.id);
      assert.equal(after.leafId, await appending);
      // Lazy history: two calls at once run one after the other; the context
      // can be read while they run.
      const big = await store.importSession(bigSession(1200, 1500, 'lazy-q'));
      const lazy = await store.loadSession(big.id, { lazy: true, maxMessages: 5 });
      const p1 = lazy.loadMoreHistory(10);
      const p2 = lazy.loadMoreHistory(10);
      assert.equal(lazy.getContext().length, 5);
      const [h1, h2] = await Promise.all([p1, p2]);
      assert.equal(h1.length + h2.length, 20);
      const full = (await store.loadSession(big.id)).getContext();
      assert.equal(JSON.stringify([...h2, ...h1]), JSON.stringify(full.slice(-25, -5)));
      // A record written by someone else that forkpoint cannot read.
      await new Promise((resolve, reject) => {
        const r = indexedDB.open(name);
        r.onsuccess = () => {
          const tx = r.result.transaction('sessions', 'readwrite');
          tx.objectStore('sessions').put('{damaged', 'broken-1');
          tx.oncomplete = () => (r.result.close(), resolve());
          tx.onerror = () => reject(tx.error);
        };
        r.onerror = () => reject(r.error);
      });
      const listed = await store.listSessions();
      const broken = listed.find((i) => i.id === 'broken-1');
      assert.equal(broken?.error?.code, 'CORRUPTED_DATA');
      assert.equal(listed.filter((i) => !i.error).length, 2, 'the others are listed as usual');
      await store.deleteSession('broken-1');
      assert.equal((await store.listSessions()).length, 2);
      await store.close();
    },
  },
  {
    name: 'another handle deletes and imports again under the same id: no stale writer or event log',
    async run({ web, db, bytes, assert }) {
      const name = db();
      const a = await web.IndexedDbStore.open(name);
      const b = await web.IndexedDbStore.open(name);
      await a.importSession(bigSession(2400, 1500, 'same'));
      await a.appendEntry('same', { type: 'custom', customType: 'a1' });
      const logA = await a.events('same');
      await logA.append({ channel: 'monitor', type: 'before' });
      await b.deleteSession('same');
      const c = await bytes('compactions.jsonl');
      await b.importSession(c, { id: 'same' });
      const kept = await b.appendEntry('same', { type: 'custom', customType: 'b1' });
      await a.appendEntry('same', { type: 'custom', customType: 'a2' });
      const text = new Uint8Array(await (await a.exportSession('same', { format: 'pi' })).arrayBuffer());
      assert.ok(sameBytes(text.subarray(0, c.length), c), "b's session is kept; a's append follows it");
      assert.ok(web.Session.fromJsonl(text).getEntry(kept));
      const logA2 = await a.events('same');
      assert.ok(logA2 !== logA, 'the new session gets its own log');
      assert.equal(await logA2.lastBookmark(), null, 'nothing of the deleted session\'s events');
      await a.close();
      await b.close();
    },
  },
  {
    name: 'handles racing: appends from three handles all land; checkpoints do not conflict with appends; one checkpoint id wins',
    async run({ web, db, bytes, assert }) {
      const name = db();
      const handles = await Promise.all([0, 1, 2].map(() => web.IndexedDbStore.open(name)));
      const info = await handles[0].importSession(await bytes('compactions.jsonl'));
      const ids = await Promise.all(
        handles.flatMap((h, k) => Array.from({ length: 10 }, (_, i) => h.appendEntry(info.id, { type: 'custom', customType: `h${k}-${i}` }))),
      );
      const s = await handles[1].loadSession(info.id);
      assert.equal(s.entryCount, info.entryCount + 30);
      assert.equal(new Set(ids).size, 30);
      for (const id of ids) assert.ok(s.getEntry(id), id);
      // A checkpoint beside an append from another handle: both land.
      const [cp] = await Promise.all([
        handles[0].saveCheckpoint(info.id, { id: 'c1' }),
        handles[1].appendEntry(info.id, { type: 'custom', customType: 'beside' }),
      ]);
      assert.equal(cp.id, 'c1');
      // The same checkpoint id from two handles at once: one wins, one is ALREADY_EXISTS.
      const both = await Promise.allSettled([
        handles[1].saveCheckpoint(info.id, { id: 'dup', label: 'one' }),
        handles[2].saveCheckpoint(info.id, { id: 'dup', label: 'two' }),
      ]);
      const won = both.filter((r) => r.status === 'fulfilled');
      const lost = both.filter((r) => r.status === 'rejected');
      assert.equal(won.length, 1);
      assert.equal(lost[0]?.reason?.code, 'ALREADY_EXISTS');
      const stored = (await handles[0].listCheckpoints(info.id)).find((c) => c.id === 'dup');
      assert.equal(stored.label, won[0].value.label, 'the stored one is the one acknowledged');
      for (const h of handles) await h.close();
    },
  },
];
