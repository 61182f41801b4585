// The durable Agent on IndexedDB (forkpoint-web's IndexedDbAgentStore): one
// list of scenarios run in Node against fake-indexeddb
// (tests/js/agent-web.test.mjs) and in Chromium against the real IndexedDB
// (tests/browser/agent.html). The same semantics as the Node package's agent
// tests (tests/js/agent.test.mjs). No Node or browser API here: the runner
// passes what differs in `ctx`:
//   web      the forkpoint-web module
//   db()     a fresh database name
//   assert   { ok, equal, deepEqual, rejectsCode }

/** The tools the scenarios use. */
export function tools(web) {
  return new web.ToolRegistry()
    .register({ name: 'add', description: 'adds two numbers', inputSchema: { type: 'object' }, run: ({ a, b }) => ({ sum: a + b }) })
    .register({ name: 'echo', description: 'echoes', inputSchema: { type: 'object' }, run: (x) => x })
    .register({
      name: 'wait',
      description: 'waits until aborted',
      inputSchema: { type: 'object' },
      run: (_x, ctx) => new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('aborted')))),
    });
}

/** A model that calls `add` once, then says the sum. */
export const adder = (web) =>
  new web.ScriptedProvider([
    { text: 'adding', toolCalls: [{ name: 'add', arguments: { a: 2, b: 3 } }] },
    (req) => ({ text: `sum=${JSON.parse(req.messages.at(-1).content[0].text).sum}` }),
  ]);

/** The agent's events after `since` up to its last one, replayed by a subscription. */
export async function replay(agent, since = 0, channels) {
  const out = [];
  const last = (await agent.status()).lastBookmark.seq;
  if (last <= since) return out;
  for await (const { bookmark, event } of agent.subscribe(channels, { since })) {
    out.push(event);
    if (bookmark.seq >= last) break;
  }
  return out;
}

export const scenarios = [
  {
    name: 'chat runs the loop: a tool call with records and audit, events on the three channels, durable state',
    async run({ web, db, assert }) {
      const store = await web.IndexedDbAgentStore.open(db());
      const toolRegistry = tools(web);
      const agent = await web.Agent.create({ agentId: 'calc', model: adder(web), tools: ['add'] }, { store, toolRegistry });
      const live = [];
      agent.on('tool:end', (e) => live.push(e.type));
      agent.on('progress', (e) => live.push(e.channel));
      const r = await agent.chat('what is 2+3?');
      assert.equal(r.status, 'ok');
      assert.equal(r.text, 'sum=5');
      assert.deepEqual(r.permissionIds, []);
      assert.deepEqual((await agent.messages()).map((m) => m.role), ['user', 'assistant', 'toolResult', 'assistant']);
      const [call] = await agent.toolCalls();
      assert.equal(call.state, 'COMPLETED');
      assert.deepEqual(call.input, { a: 2, b: 3 });
      assert.deepEqual(call.result, { sum: 5 });
      assert.deepEqual(call.audit.map((a) => a.state), ['PENDING', 'EXECUTING', 'COMPLETED']);
      assert.ok(live.includes('tool:end') && live.includes('progress'), `live events reach on(): ${live}`);
      const st = await agent.status();
      assert.equal(st.state, 'READY');
      assert.equal(st.lastSfpIndex, 3);
      const evs = await replay(agent);
      const types = evs.map((e) => e.type);
      for (const t of ['agent_created', 'tool:start', 'tool:end', 'tool_executed', 'text_chunk', 'done', 'step_complete', 'breakpoint_changed', 'state_changed']) {
        assert.ok(types.includes(t), `${t} in ${types}`);
      }
      const bps = evs.filter((e) => e.type === 'breakpoint_changed').map((e) => e.current);
      assert.deepEqual(bps.slice(0, 7), ['PRE_MODEL', 'STREAMING_MODEL', 'TOOL_PENDING', 'PRE_TOOL', 'TOOL_EXECUTING', 'POST_TOOL', 'PRE_MODEL']);
      assert.ok(evs.every((e, i) => i === 0 || e.seq === evs[i - 1].seq + 1), 'seqs are consecutive');
      assert.equal(r.last.seq, evs.find((e) => e.type === 'done').seq);
      // Queries are answered while a step waits for IndexedDB (the state the step will store).
      let settled = false;
      const pending = agent.setTodos([{ id: 't1', title: 'check', status: 'pending' }]).then(() => (settled = true));
      let during = 0;
      while (!settled) {
        assert.equal((await agent.status()).state, 'READY');
        during++;
        await new Promise((resolve) => setTimeout(resolve, 0));
      }
      await pending;
      assert.ok(during > 0, 'a query ran while the step was being written');
      assert.deepEqual(agent.getTodos().map((t) => t.id), ['t1']);
      const lastSeq = (await agent.status()).lastBookmark.seq;
      await agent.close();
      await assert.rejectsCode(agent.send('after close'), 'CLOSED');
      // Another store object on the database (another tab, as far as the lease goes) reads it back.
      const other = await web.IndexedDbAgentStore.open(store.dbName);
      const again = await web.Agent.resume('calc', { model: adder(web) }, { store: other, toolRegistry });
      assert.deepEqual((await again.messages()).map((m) => m.role), ['user', 'assistant', 'toolResult', 'assistant']);
      assert.equal((await again.toolCalls())[0].state, 'COMPLETED');
      assert.equal((await again.info()).lastBookmark.seq, lastSeq + 1, 'agent_resumed follows the last event');
      await again.close();
      const listed = await other.list();
      assert.deepEqual(listed.map((m) => m.agentId), ['calc']);
      assert.equal(await other.exists('calc'), true);
      assert.equal(await other.exists('nope'), false);
      other.close();
      store.close();
    },
  },
  {
    name: 'one holder per agent: AGENT_LOCKED while held (also through another store object), free after close; delete needs it closed',
    async run({ web, db, assert }) {
      const name = db();
      const store = await web.IndexedDbAgentStore.open(name);
      const second = await web.IndexedDbAgentStore.open(name);
      const toolRegistry = tools(web);
      const a = await web.Agent.create({ agentId: 'solo', model: new web.ScriptedProvider([]), tools: [] }, { store, toolRegistry });
      const e = await assert.rejectsCode(web.Agent.resume('solo', { model: new web.ScriptedProvider([]) }, { store: second, toolRegistry }), 'AGENT_LOCKED');
      assert.ok(/another tab/.test(e.message), e.message);
      await assert.rejectsCode(web.Agent.resume('solo', { model: new web.ScriptedProvider([]) }, { store, toolRegistry }), 'AGENT_LOCKED');
      await assert.rejectsCode(web.Agent.create({ agentId: 'solo', model: new web.ScriptedProvider([]) }, { store: second, toolRegistry }), 'ALREADY_EXISTS');
      await assert.rejectsCode(second.delete('solo'), 'AGENT_LOCKED');
      await a.close();
      const b = await web.Agent.resume('solo', { model: new web.ScriptedProvider([]) }, { store: second, toolRegistry });
      await b.close();
      await assert.rejectsCode(web.Agent.resume('ghost', { model: new web.ScriptedProvider([]) }, { store, toolRegistry }), 'AGENT_NOT_FOUND');
      await assert.rejectsCode(web.Agent.create({ agentId: '../x', model: new web.ScriptedProvider([]) }, { store, toolRegistry }), 'INVALID_ID');
      await store.delete('solo');
      assert.equal(await store.exists('solo'), false);
      await assert.rejectsCode(store.delete('solo'), 'AGENT_NOT_FOUND');
      // The id is free again.
      const c = await web.Agent.create({ agentId: 'solo', model: new web.ScriptedProvider([{ text: 'new' }]) }, { store, toolRegistry });
      assert.equal((await c.messages()).length, 0);
      assert.equal((await c.chat('hi')).text, 'new');
      await c.close();
      store.close();
      second.close();
    },
  },
  {
    name: 'approvals: pause, decide allow/deny, PERMISSION_NOT_PENDING; resumeFromStore applies overrides for real',
    async run({ web, db, assert }) {
      const store = await web.IndexedDbAgentStore.open(db());
      const toolRegistry = tools(web);
      const script = new web.ScriptedProvider([
        { toolCalls: [{ id: 'p1', name: 'add', arguments: { a: 1, b: 1 } }] },
        { text: 'done one' },
        { toolCalls: [{ id: 'p2', name: 'add', arguments: { a: 2, b: 2 } }] },
        { text: 'done two' },
      ]);
      const agent = await web.Agent.create({ agentId: 'ask', model: script, tools: ['add'], permission: { mode: 'approval' } }, { store, toolRegistry });
      const required = [];
      agent.on('permission_required', (e) => required.push(e.call.id));
      const r = await agent.chat('add');
      assert.equal(r.status, 'paused');
      assert.deepEqual(r.permissionIds, ['p1']);
      assert.equal((await agent.status()).breakpoint, 'AWAITING_APPROVAL');
      await assert.rejectsCode(agent.decide('nope', 'allow'), 'PERMISSION_NOT_PENDING');
      await agent.decide('p1', 'allow', 'fine');
      await agent.idle();
      assert.equal((await agent.messages()).at(-1).content[0].text, 'done one');
      assert.deepEqual(required, ['p1']);
      const c1 = (await agent.toolCalls()).find((c) => c.id === 'p1');
      assert.deepEqual(c1.audit.map((a) => a.state), ['PENDING', 'APPROVAL_REQUIRED', 'APPROVED', 'EXECUTING', 'COMPLETED']);
      const r2 = await agent.chat('again');
      assert.deepEqual(r2.permissionIds, ['p2']);
      await agent.decide('p2', 'deny', 'not now');
      await agent.idle();
      assert.equal((await agent.toolCalls()).find((c) => c.id === 'p2').state, 'DENIED');
      assert.equal((await agent.messages()).at(-1).content[0].text, 'done two');
      await agent.close();
      const newModel = new web.ScriptedProvider([{ toolCalls: [{ id: 'p3', name: 'add', arguments: { a: 5, b: 5 } }] }, { text: 'auto now' }], { provider: 'other', model: 'm-2' });
      const resumed = await web.Agent.resumeFromStore('ask', { store, toolRegistry }, { overrides: { model: newModel, permission: { mode: 'auto' }, tools: ['add', 'echo'] } });
      const r3 = await resumed.chat('add without asking');
      assert.equal(r3.status, 'ok');
      assert.equal(r3.text, 'auto now');
      assert.equal(newModel.requests[0].tools.length, 2);
      await resumed.close();
      const [meta] = await store.list();
      assert.deepEqual(meta.permission, { mode: 'auto' });
      assert.deepEqual(meta.model, { provider: 'other', model: 'm-2', api: 'scripted' });
      assert.deepEqual(meta.tools, ['add', 'echo']);
      store.close();
    },
  },
  {
    name: 'a call left waiting for approval: a crash resume seals it; resumeOrCreate creates then resumes',
    async run({ web, db, assert }) {
      const store = await web.IndexedDbAgentStore.open(db());
      const toolRegistry = tools(web);
      const model = new web.ScriptedProvider([{ toolCalls: [{ id: 'w1', name: 'echo', arguments: { x: 1 } }] }]);
      const agent = await web.Agent.resumeOrCreate('sealme', { model, tools: ['echo'], permission: { mode: 'approval' } }, { store, toolRegistry });
      assert.equal((await agent.chat('go')).status, 'paused');
      await agent.close();
      const again = await web.Agent.resumeOrCreate('sealme', { model: new web.ScriptedProvider([{ text: 'after' }]), tools: ['echo'] }, { store, toolRegistry }, { strategy: 'crash' });
      const [c] = await again.toolCalls();
      assert.equal(c.state, 'SEALED');
      const last = (await again.messages()).at(-1);
      assert.equal(last.role, 'toolResult');
      assert.equal(last.isError, true);
      assert.ok(/awaiting approval/.test(JSON.parse(last.content[0].text).error), JSON.parse(last.content[0].text).error);
      const resumed = (await replay(again)).filter((e) => e.type === 'agent_resumed');
      assert.equal(resumed.at(-1).strategy, 'crash');
      assert.equal(resumed.at(-1).sealed[0].priorState, 'APPROVAL_REQUIRED');
      assert.equal((await again.chat('next')).text, 'after');
      await again.close();
      store.close();
    },
  },
  {
    name: 'interrupt aborts a running tool and seals it with the note',
    async run({ web, db, assert }) {
      const store = await web.IndexedDbAgentStore.open(db());
      const toolRegistry = tools(web);
      const model = new web.ScriptedProvider([{ toolCalls: [{ id: 'w1', name: 'wait', arguments: {} }] }, { text: 'after interrupt' }]);
      const agent = await web.Agent.create({ agentId: 'intr', model, tools: ['wait'] }, { store, toolRegistry });
      const started = new Promise((resolve) => agent.on('tool:start', resolve));
      const chat = agent.chat('wait for it');
      await started;
      await agent.interrupt({ note: 'user pressed stop' });
      await chat;
      const [c] = await agent.toolCalls();
      assert.equal(c.state, 'SEALED');
      const last = (await agent.messages()).at(-1);
      assert.equal(last.role, 'toolResult');
      assert.equal(JSON.parse(last.content[0].text).error, 'user pressed stop');
      assert.equal((await agent.chat('next')).text, 'after interrupt');
      await agent.close();
      store.close();
    },
  },
  {
    name: 'snapshot and fork: no dangling tool call, lineage, forks of forks, parent deletion keeps forks, todos copied',
    async run({ web, db, assert }) {
      const store = await web.IndexedDbAgentStore.open(db());
      const toolRegistry = tools(web);
      const model = new web.ScriptedProvider([{ text: 'first' }, { toolCalls: [{ id: 'open1', name: 'add', arguments: { a: 1, b: 2 } }] }]);
      const agent = await web.Agent.create({ agentId: 'root', model, tools: ['add'], permission: { mode: 'approval' } }, { store, toolRegistry });
      await agent.chat('one');
      assert.equal(await agent.snapshot('after-one'), 'after-one');
      await agent.setTodos([{ id: 't1', title: 'write tests', status: 'in_progress' }]);
      assert.equal((await agent.chat('two')).status, 'paused');
      const sfp = await agent.snapshot();
      assert.equal(sfp, 'sfp:2');
      const fork = await agent.fork(sfp);
      assert.deepEqual((await fork.messages()).map((m) => m.role), ['user', 'assistant', 'user']);
      assert.equal((await fork.toolCalls()).length, 0);
      assert.deepEqual(fork.getTodos().map((t) => t.id), ['t1']);
      const fi = await fork.info();
      assert.deepEqual(fi.lineage, ['root']);
      assert.ok(fi.agentId !== 'root', fi.agentId);
      const fevs = await replay(fork);
      assert.equal(fevs[0].type, 'agent_forked');
      assert.equal(fevs[0].from, 'root');
      assert.ok(fevs[0].seq > (await agent.info()).lastBookmark.seq - 5, 'the fork continues the seq');
      const fork2 = await fork.fork('sfp-2');
      assert.deepEqual((await fork2.info()).lineage, ['root', fi.agentId]);
      await assert.rejectsCode(agent.fork('no-such-snapshot'), 'SNAPSHOT_NOT_FOUND');
      const byLabel = await agent.fork('after-one');
      assert.deepEqual((await byLabel.messages()).map((m) => m.role), ['user', 'assistant']);
      // A fork without a snapshot names the latest safe-fork-point itself.
      const implicit = await agent.fork();
      assert.deepEqual((await implicit.messages()).map((m) => m.role), ['user', 'assistant', 'user']);
      assert.deepEqual((await implicit.info()).lineage, ['root']);
      for (const a of [fork, fork2, byLabel, implicit, agent]) await a.close();
      assert.equal((await store.list()).length, 5);
      await store.delete('root');
      assert.equal(await store.exists('root'), false);
      assert.equal((await store.list()).length, 4, 'forks stay');
      const reopened = await web.Agent.resume(fi.agentId, { model: new web.ScriptedProvider([{ text: 'fork answer' }]) }, { store, toolRegistry });
      assert.equal((await reopened.chat('go')).text, 'fork answer');
      await reopened.close();
      store.close();
    },
  },
  {
    name: 'checkpoints: create, list by execution, lastSuccessful, restore moves the leaf and keeps history across a reopen',
    async run({ web, db, assert }) {
      const store = await web.IndexedDbAgentStore.open(db());
      const toolRegistry = tools(web);
      const model = new web.ScriptedProvider([{ text: 'a1' }, { text: 'a2' }, { text: 'a3' }, (req) => ({ text: `after restore: ${req.messages.length} messages` })]);
      const agent = await web.Agent.create({ agentId: 'ck', model, tools: [] }, { store, toolRegistry });
      await agent.chat('q1');
      const id1 = await agent.checkpoints.create({ executionId: 'exec-1', stepName: 'first', stepIndex: 0, variables: { x: 1 }, state: { phase: 'one' } });
      assert.equal(id1, 'ckpt-exec-1-0');
      await agent.chat('q2');
      await agent.checkpoints.create({ executionId: 'exec-1', stepName: 'second', stepIndex: 1, variables: { x: 2 }, status: 'failed' });
      await agent.chat('q3');
      assert.deepEqual(agent.checkpoints.list().map((g) => [g.executionId, g.checkpoints.map((c) => c.stepIndex)]), [['exec-1', [0, 1]]]);
      assert.equal(agent.checkpoints.lastSuccessful('exec-1').id, 'ckpt-exec-1-0');
      const cp = await agent.checkpoints.restore('ckpt-exec-1-0');
      assert.deepEqual(cp.variables, { x: 1 });
      assert.deepEqual(agent.restoredCheckpoint, { variables: { x: 1 }, state: { phase: 'one' } });
      assert.deepEqual((await agent.messages()).map((m) => m.role), ['user', 'assistant']);
      assert.equal((await agent.chat('q4')).text, 'after restore: 3 messages');
      await assert.rejectsCode(agent.checkpoints.restore('ckpt-none-0'), 'NOT_FOUND');
      await agent.close();
      const again = await web.Agent.resume('ck', { model: new web.ScriptedProvider([]) }, { store, toolRegistry });
      assert.deepEqual((await again.messages()).map((m) => m.role), ['user', 'assistant', 'user', 'assistant']);
      assert.equal(again.checkpoints.list()[0].checkpoints.length, 2);
      await again.close();
      store.close();
    },
  },
  {
    name: 'subscribe({since}) replays from storage then follows live, exactly once and in order; kinds and channels filter',
    async run({ web, db, assert }) {
      const store = await web.IndexedDbAgentStore.open(db());
      const toolRegistry = tools(web);
      const turns = [];
      for (let i = 0; i < 6; i++) turns.push({ toolCalls: [{ name: 'echo', arguments: { i } }] }, { text: `turn ${i}` });
      const agent = await web.Agent.create({ agentId: 'subs', model: new web.ScriptedProvider(turns), tools: ['echo'] }, { store, toolRegistry });
      await agent.chat('first');
      await agent.chat('second');
      const mid = (await agent.status()).lastBookmark.seq;
      await agent.close();
      // A reopened agent: the history is only in storage.
      const again = await web.Agent.resume('subs', { model: new web.ScriptedProvider(turns.slice(4)) }, { store, toolRegistry });
      const got = [];
      const it = again.subscribe(undefined, { since: 3 });
      const done = (async () => {
        for await (const { bookmark, event } of it) {
          got.push(event);
          assert.equal(bookmark.seq, event.seq);
          if (event.type === 'done' && event.seq > mid) break;
        }
      })();
      const onlyDone = [];
      const it2 = again.subscribe(['progress'], { since: null, kinds: ['done'] });
      const done2 = (async () => {
        for await (const { event } of it2) {
          onlyDone.push(event);
          if (onlyDone.length === 3) break;
        }
      })();
      await again.chat('third');
      await done;
      await done2;
      assert.equal(got[0].seq, 4, 'starts right after since');
      assert.ok(got.every((e, i) => i === 0 || e.seq === got[i - 1].seq + 1), 'exactly once, in order, across storage and live');
      assert.ok(got.some((e) => e.type === 'agent_resumed'), 'through the resume');
      assert.ok(got.at(-1).seq > mid, 'live events after the reopen');
      assert.deepEqual(onlyDone.map((e) => e.type), ['done', 'done', 'done']);
      assert.equal(onlyDone[2].seq, got.at(-1).seq);
      await again.close();
      store.close();
    },
  },
  {
    name: 'a session of many chunks (large tool results) reads back whole after a reopen; the redact hook filters what is stored',
    async run({ web, db, assert }) {
      const redact = (v, where) => (where.kind === 'toolResult' && v && typeof v === 'object' && 'secret' in v ? { ...v, secret: '[x]' } : v);
      const store = await web.IndexedDbAgentStore.open(db(), { redact });
      const toolRegistry = new web.ToolRegistry().register({
        name: 'big',
        description: 'a large result',
        inputSchema: { type: 'object' },
        run: ({ i }) => ({ i, secret: 'hunter2', pad: String(i).repeat(30000) }),
      });
      const turns = [];
      for (let i = 0; i < 8; i++) turns.push({ toolCalls: [{ name: 'big', arguments: { i } }] }, { text: `got ${i}` });
      const agent = await web.Agent.create({ agentId: 'big', model: new web.ScriptedProvider(turns), tools: ['big'] }, { store, toolRegistry });
      for (let i = 0; i < 8; i++) await agent.chat(`call ${i}`);
      const before = await agent.messages();
      await agent.close();
      const again = await web.Agent.resume('big', { model: new web.ScriptedProvider([]) }, { store, toolRegistry });
      const after = await again.messages();
      assert.equal(JSON.stringify(after), JSON.stringify(before));
      const results = after.filter((m) => m.role === 'toolResult').map((m) => JSON.parse(m.content[0].text));
      assert.equal(results.length, 8);
      assert.ok(results.every((r, i) => r.i === i && r.secret === '[x]' && r.pad.length >= 30000), 'stored filtered, whole');
      await again.close();
      assert.equal(web.redactSecrets({ apiKey: 'sk-abc', keep: 1 }).keep, 1);
      assert.equal(web.redactSecrets({ apiKey: 'sk-abc', keep: 1 }).apiKey, undefined);
      store.close();
    },
  },
];

/** Every record of an object store, as `[key, value]`, read with IndexedDB itself. */
export async function rawAll(indexedDB, name, store) {
  const d = await new Promise((resolve, reject) => {
    const r = indexedDB.open(name);
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
  try {
    const tx = d.transaction(store);
    const keys = tx.objectStore(store).getAllKeys();
    const values = tx.objectStore(store).getAll();
    await new Promise((resolve, reject) => {
      tx.oncomplete = resolve;
      tx.onerror = () => reject(tx.error);
    });
    return keys.result.map((k, i) => [k, values.result[i]]);
  } finally {
    d.close();
  }
}

/** Loads a dump of `tests/fixtures/idb-v2` into database `name` at its version. */
export async function loadDump(indexedDB, name, dump) {
  const bytes = (b64) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  await new Promise((resolve, reject) => {
    const r = indexedDB.open(name, dump.version);
    r.onupgradeneeded = () => {
      for (const s of Object.keys(dump.stores)) r.result.createObjectStore(s);
    };
    r.onsuccess = () => {
      const d = r.result;
      const tx = d.transaction(Object.keys(dump.stores), 'readwrite');
      for (const [s, rows] of Object.entries(dump.stores)) for (const [k, v] of rows) tx.objectStore(s).put(v.s ?? bytes(v.b64), k);
      tx.oncomplete = () => {
        d.close();
        resolve();
      };
      tx.onerror = () => reject(tx.error);
    };
    r.onerror = () => reject(r.error);
  });
}

scenarios.push({
  name: 'upgrade: a database written by forkpoint-web 0.1.0 (schema 2) opens at schema 3 and keeps its sessions, checkpoints and event logs; agents live beside them',
  async run({ web, db, assert, indexedDB, json }) {
    const dump = await json('idb-v2/forkpoint-0.1.0.json');
    assert.equal(dump.version, 2);
    const name = db();
    await loadDump(indexedDB, name, dump);
    // The agent store opens first: it upgrades the database.
    const agents = await web.IndexedDbAgentStore.open(name);
    const toolRegistry = tools(web);
    const agent = await web.Agent.create({ agentId: 'beside', model: adder(web), tools: ['add'] }, { store: agents, toolRegistry });
    assert.equal((await agent.chat('2+3?')).text, 'sum=5');
    await agent.close();
    const schema = await new Promise((resolve, reject) => {
      const r = indexedDB.open(name);
      r.onsuccess = () => {
        const out = { version: r.result.version, stores: [...r.result.objectStoreNames].sort() };
        r.result.close();
        resolve(out);
      };
      r.onerror = () => reject(r.error);
    });
    assert.deepEqual(schema, { version: 3, stores: ['agentChunks', 'agentEvents', 'agents', 'checkpoints', 'chunks', 'events', 'sessions'] });
    assert.equal((await rawAll(indexedDB, name, 'checkpoints')).length, 1, 'the agent store leaves sessions alone');
    // What 0.1.0 wrote is all there.
    const sessions = await web.IndexedDbStore.open(name);
    const list = await sessions.listSessions();
    assert.deepEqual(list.map((i) => [i.id, i.name]), [['kept', 'kept session']]);
    const s = await sessions.loadSession('kept');
    assert.equal(s.entryCount, list[0].entryCount);
    assert.equal(s.getContext().at(-1).content[0].text, 'added by 0.1.0');
    // Its checkpoint moved into the session (an entry, as an agent's) when the
    // store opened, and is listed as 0.1.0 listed it.
    const old = JSON.parse(dump.stores.checkpoints[0][1].s);
    const [cp, ...more] = await sessions.listCheckpoints('kept');
    assert.deepEqual(more, []);
    assert.deepEqual(cp, { ...old, executionId: 'cp-1', stepName: 'after append', stepIndex: 0, status: 'success' });
    assert.deepEqual(await rawAll(indexedDB, name, 'checkpoints'), [], 'nothing left beside the session');
    const entry = s.getEntries().filter((e) => e.customType === 'forkpoint.checkpoint');
    assert.deepEqual(entry.map((e) => e.data.id), ['cp-1']);
    assert.equal(entry[0].data.createdAt, Date.parse(old.createdAt));
    assert.equal(s.leafId, entry[0].id, 'appended at the leaf');
    // Restorable: the leaf goes back to its entry.
    await sessions.moveLeaf('kept', null);
    const back = await sessions.restoreCheckpoint('kept', 'cp-1');
    assert.equal(back.entryId, old.entryId);
    assert.equal((await sessions.getSessionInfo('kept')).leafId, old.entryId);
    assert.equal((await sessions.loadSession('kept')).getContext().at(-1).content[0].text, 'added by 0.1.0');
    const log = await sessions.events('kept');
    assert.deepEqual((await log.readSince(null)).map((e) => e.n), [1, 2, 3]);
    // It goes on: an append and a new event continue where 0.1.0 stopped.
    await sessions.appendEntry('kept', { type: 'custom', customType: 'after-upgrade' });
    assert.equal((await log.append({ type: 'note', channel: 'monitor', n: 4 })).seq, 4);
    await sessions.close();
    const other = await web.EventLog.openIndexedDb(name, 'app-log');
    assert.deepEqual((await other.readSince(null)).map((e) => [e.seq, e.n]), [[1, 'a'], [2, 'b']]);
    await other.close();
    assert.deepEqual((await agents.list()).map((m) => m.agentId), ['beside']);
    agents.close();
  },
});

scenarios.push({
  name: 'upgrade: two stores opening a 0.1.0 database at once move its checkpoint into the session once',
  async run({ web, db, assert, indexedDB, json }) {
    const dump = await json('idb-v2/forkpoint-0.1.0.json');
    const name = db();
    await loadDump(indexedDB, name, dump);
    const [a, b] = await Promise.all([web.IndexedDbStore.open(name), web.IndexedDbStore.open(name)]);
    const s = await b.loadSession('kept');
    assert.deepEqual(
      s.getEntries().filter((e) => e.customType === 'forkpoint.checkpoint').map((e) => e.data.id),
      ['cp-1'],
    );
    assert.deepEqual((await a.listCheckpoints('kept')).map((c) => c.id), ['cp-1']);
    assert.deepEqual(await rawAll(indexedDB, name, 'checkpoints'), []);
    await a.close();
    await b.close();
  },
});

scenarios.push({
  name: 'one checkpoint model: an agent\'s checkpoint is a store checkpoint (listed, restored, deleted) and the store writes the agent\'s record',
  async run({ web, db, assert, indexedDB }) {
    const name = db();
    const agents = await web.IndexedDbAgentStore.open(name);
    const toolRegistry = tools(web);
    const model = new web.ScriptedProvider([{ text: 'first answer' }, { text: 'second answer' }]);
    const agent = await web.Agent.create({ agentId: 'wf', model, tools: [] }, { store: agents, toolRegistry });
    await agent.chat('first');
    await agent.checkpoints.create({ executionId: 'e', stepName: 'plan', stepIndex: 0, variables: { v: 1 } });
    await agent.chat('second');
    const [{ checkpoints: [made] }] = agent.checkpoints.list();
    await agent.close();
    agents.close();
    // The agent's session as a file (its chunks, in order), kept by the session store.
    const chunks = await rawAll(indexedDB, name, 'agentChunks');
    const parts = chunks.filter(([k]) => k[0] === 'wf').map(([, v]) => v);
    const bytes = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    parts.reduce((at, p) => (bytes.set(p, at), at + p.length), 0);
    const store = await web.IndexedDbStore.open(name);
    await store.importSession(bytes, { id: 'from-agent' });
    const [cp] = await store.listCheckpoints('from-agent');
    assert.equal(cp.id, made.id);
    assert.deepEqual(
      [cp.executionId, cp.stepName, cp.stepIndex, cp.status, cp.entryId, cp.variables, cp.createdAt, cp.sessionId, cp.label, cp.eventSeq],
      ['e', 'plan', 0, 'success', made.entryId, { v: 1 }, new Date(made.createdAt).toISOString(), 'from-agent', null, null],
    );
    const texts = async () => (await store.loadSession('from-agent')).getContext().filter((m) => m.role === 'user').map((m) => m.content[0]?.text ?? m.content);
    assert.deepEqual(await texts(), ['first', 'second']);
    await store.restoreCheckpoint('from-agent', made.id);
    assert.equal((await store.getSessionInfo('from-agent')).leafId, made.entryId);
    assert.deepEqual(await texts(), ['first'], 'back where the agent made it');
    // The store makes the same record an agent makes, under the same name.
    const mine = await store.saveCheckpoint('from-agent', { executionId: 'e', stepName: 'review', stepIndex: 1, label: 'review', variables: { v: 2 } });
    assert.equal(mine.id, 'ckpt-e-1');
    await assert.rejectsCode(store.saveCheckpoint('from-agent', { id: made.id }), 'ALREADY_EXISTS');
    const entries = (await store.loadSession('from-agent')).getEntries().filter((e) => e.customType === 'forkpoint.checkpoint');
    assert.deepEqual(entries.map((e) => e.data.id), [made.id, 'ckpt-e-1']);
    const [agentMade, storeMade] = entries.map((e) => e.data);
    for (const k of Object.keys(agentMade)) assert.ok(k in storeMade, `the store's record has the agent's ${k}`);
    assert.deepEqual(Object.keys(storeMade).filter((k) => !(k in agentMade)).sort(), ['entryCount', 'label'], 'and adds only its own facts');
    // Deleting one is an entry too; the other stays.
    await store.deleteCheckpoint('from-agent', made.id);
    assert.deepEqual((await store.listCheckpoints('from-agent')).map((c) => c.id), ['ckpt-e-1']);
    await assert.rejectsCode(store.restoreCheckpoint('from-agent', made.id), 'NOT_FOUND');
    await store.close();
  },
});

/** The result of an IndexedDB request. */
const req = (r) =>
  new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });

scenarios.push({
  name: 'resume reads the tail: status, todos, open calls and checkpoints come without the history (a history chunk made unreadable goes unnoticed until messages() loads it); history queries work after',
  async run({ web, db, assert, indexedDB }) {
    const name = db();
    const store = await web.IndexedDbAgentStore.open(name);
    const toolRegistry = tools(web);
    const big = 'x'.repeat(6000);
    const turns = [];
    for (let i = 0; i < 40; i++) turns.push({ text: `answer ${i} ${big}` });
    turns.push({ toolCalls: [{ id: 'last1', name: 'add', arguments: { a: 40, b: 2 } }] });
    const agent = await web.Agent.create({ agentId: 'tail', model: new web.ScriptedProvider(turns), tools: ['add'], permission: { mode: 'approval' } }, { store, toolRegistry });
    await agent.chat('q0');
    await agent.checkpoints.create({ executionId: 'run', stepName: 'early', stepIndex: 0, variables: { at: 0 } });
    await agent.setTodos([{ id: 't1', title: 'ship', status: 'in_progress' }]);
    for (let i = 1; i < 40; i++) await agent.chat(`q${i} ${big}`);
    assert.equal((await agent.chat('add 40 and 2')).status, 'paused');
    const st0 = await agent.status();
    const count = (await agent.info()).messageCount;
    const roles = (await agent.messages()).map((m) => m.role);
    await agent.close();

    // A chunk of the history, before the tail and away from every line the
    // resume state points to, is made unreadable behind the store's back.
    const raw = await req(indexedDB.open(name));
    const read = (s, q, all) => req(raw.transaction(s, 'readonly').objectStore(s)[all ? 'getAllKeys' : 'get'](q));
    const state = JSON.parse(JSON.parse(await read('agents', 'tail')).state);
    assert.equal(state.v, 2);
    const marks = state.marks;
    const pointed = [marks.todos, ...marks.queued.map((q) => q.slice(1)), ...marks.checkpoints].filter(Boolean);
    assert.equal(marks.checkpoints.length, 1);
    const offsets = (await read('agentChunks', IDBKeyRange.bound(['tail', 0], ['tail', Number.MAX_SAFE_INTEGER]), true)).map((k) => k[1]);
    const k = offsets.findIndex((off, i) => i > 0 && i + 1 < offsets.length && offsets[i + 1] <= marks.sfpOffset && !pointed.some(([o, n]) => o + n >= off && o < offsets[i + 1]));
    assert.ok(k > 0, `a chunk before the tail (${offsets.length} chunks, tail at ${marks.sfpOffset})`);
    const key = ['tail', offsets[k]];
    const original = await read('agentChunks', key);
    const garbage = new Uint8Array(original.length).fill(0x78);
    garbage[garbage.length - 1] = 0x0a;
    const put = (v) => {
      const tx = raw.transaction('agentChunks', 'readwrite');
      tx.objectStore('agentChunks').put(v, key);
      return new Promise((resolve, reject) => {
        tx.oncomplete = resolve;
        tx.onerror = () => reject(tx.error);
      });
    };
    await put(garbage);

    const again = await web.Agent.resume('tail', { model: new web.ScriptedProvider([{ text: 'the sum is 42' }]) }, { store, toolRegistry });
    const st = await again.status();
    assert.deepEqual([st.state, st.breakpoint, st.stepCount, st.lastSfpIndex], [st0.state, st0.breakpoint, st0.stepCount, st0.lastSfpIndex]);
    assert.equal(st.state, 'PAUSED');
    assert.deepEqual(again.getTodos().map((t) => [t.id, t.status]), [['t1', 'in_progress']]);
    assert.equal(again.checkpoints.list()[0].checkpoints[0].id, 'ckpt-run-0');
    assert.deepEqual(again.checkpoints.lastSuccessful('run').variables, { at: 0 });
    const resumed = (await replay(again)).filter((e) => e.type === 'agent_resumed').at(-1);
    assert.deepEqual(resumed.open.map((c) => [c.id, c.state]), [['last1', 'APPROVAL_REQUIRED']]);
    // Nothing before the tail was read: the broken chunk shows only now.
    await assert.rejectsCode(again.messages(), 'CORRUPTED_DATA');
    // info()'s usage totals are in the resume state: no history is read.
    const info = await again.info();
    assert.equal(info.usage.calls, st0.stepCount);
    assert.equal(info.messageCount, count);
    await put(original);
    raw.close();
    assert.equal((await again.info()).messageCount, count);
    assert.deepEqual((await again.messages()).map((m) => m.role), roles);
    assert.deepEqual((await again.toolCalls()).map((c) => [c.id, c.state]), [['last1', 'APPROVAL_REQUIRED']]);
    await again.decide('last1', 'allow');
    await again.idle();
    assert.equal((await again.messages()).at(-1).content[0].text, 'the sum is 42');
    await again.close();
    store.close();
  },
});
