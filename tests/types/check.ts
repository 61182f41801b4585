// Compile-time checks: the public API of both packages is typed with the
// generated types (run with `tsc -p tests/types`; nothing is executed).
import * as node from 'forkpoint';
import type { AgentMessage, AnySessionEntry, LazyMetadata, SessionInfo, SessionMetadata, TreeNode } from 'forkpoint';
import * as web from 'forkpoint-web';

export async function nodeApi(path: string): Promise<void> {
  const s: node.SessionLoader = await node.SessionLoader.open(path, { lenient: true, maxDepth: 64 });
  const m: SessionMetadata = s.getMetadata();
  const leaves: TreeNode[] = s.getBranch().getLeaves();
  const entries: AnySessionEntry[] = s.getEntries({ start: 0, limit: 10 });
  const ctx: AgentMessage[] = s.getContext(leaves[0]?.id);
  for (const msg of ctx) {
    if (msg.role === 'assistant') {
      const model: string = msg.model;
      void model;
    }
  }
  const first = entries[0];
  if (first?.type === 'compaction' && 'firstKeptEntryId' in first) void first.firstKeptEntryId;
  const lazy = await node.loadSessionLazy(path, { maxMessages: 50, includeSummary: true });
  const lm: LazyMetadata = lazy.getMetadata();
  const more: AgentMessage[] = await lazy.loadMoreHistory(10);
  const w = await node.SessionWriter.open(path, { durability: 'group', cwd: '/x' });
  const id: string = await w.append({ type: 'message', message: { role: 'user', content: 'hi', timestamp: 1 } });
  await w.moveLeaf(id);
  await w.close();
  const infos: SessionInfo[] = await node.listSessions('/tmp');
  const inc = new node.IncrementalSessionLoader(path, 100);
  const batch: AnySessionEntry[] = await inc.loadNext();
  // @ts-expect-error durability is 'fsync' | 'group'
  await node.SessionWriter.open(path, { durability: 'sometimes' });
  // @ts-expect-error getContext takes an id string
  s.getContext(42);
  try {
    await node.SessionLoader.open('x');
  } catch (e) {
    if (e instanceof node.ForkpointError) {
      const code: node.ErrorCode = e.code;
      const line: number | undefined = e.line;
      void code, line;
    }
  }
  void m, lm, more, infos, batch;
}

export async function events(path: string): Promise<void> {
  const log: node.EventLog = await node.EventLog.open(path, { durability: 'group' });
  const bus = new node.EventBus(log);
  const b: node.Bookmark = await bus.emit({ type: 'tool:end', call: { id: 'x' } });
  const off: () => void = bus.on('monitor', (e: node.LoggedEvent) => void e.seq);
  for await (const { bookmark, event } of bus.subscribe({ channels: ['progress'], since: b })) {
    const s: number = bookmark.seq;
    const t: string = event.type;
    void s, t;
    break;
  }
  const evs: node.LoggedEvent[] = await log.readSince(null, { kinds: ['done'], limit: 10 });
  const last: node.Bookmark | null = await log.lastBookmark();
  // @ts-expect-error channels are progress | control | monitor
  await log.readSince(null, { channels: ['data'] });
  const w = await web.EventLog.openIndexedDb('db', 'log', { durability: 'memory' });
  await new web.EventBus(w).emit({ type: 'x', channel: 'monitor' });
  off();
  void evs, last;
}

export async function webApi(text: string, file: Blob): Promise<void> {
  const a: web.Session = web.Session.fromJsonl(text, { lenient: false });
  const b: web.Session = await web.Session.fromBlob(file);
  const m1: SessionMetadata = a.getMetadata();
  const m2: web.SessionMetadata = b.getMetadata();
  const bytes: Uint8Array = a.toBytes();
  void m1, m2, bytes;
}

export async function conversionApi(path: string): Promise<void> {
  const conv: node.FromProviderResult = node.fromProvider('{"messages":[]}', 'anthropic');
  const msgs: node.NormalizedMessage[] = conv.messages;
  const out: node.ProviderConversion = node.toProvider(msgs, 'google', { model: 'gemini-3-pro', system: 'Be brief.' });
  const report: node.CompatibilityReport = out.report;
  const steps: node.ConversionStep[] = report.steps;
  const body: string = out.body;
  const ids: Record<string, string> = out.idMap;
  void [steps, body, ids, out.request, out.nameMap];
  const one = node.MessageNormalizer.normalize({ role: 'user', content: 'hi' }, 'openai');
  void node.MessageNormalizer.denormalize(one, 'anthropic');
  const check: node.CompatibilityReport = node.SessionMigrator.checkCompatibility('anthropic', 'openai');
  const m: node.MigrationResult = await node.SessionMigrator.migrate(path, 'anthropic', 'openai', path + '.out', {
    onProgress: (p: node.MigrationProgress) => void p.bytesRead,
  });
  const imp: { path: string; summary: node.ImportSummary } = await node.importSession(path, { format: 'claude-code' });
  const s = await node.SessionLoader.open(imp.path);
  const fromSession: node.ProviderConversion = s.toProvider('openai-responses', { leafId: 'x' });
  void [check, m, fromSession];
  const w: web.ProviderConversion = web.toProvider('[]', 'openai');
  const ws = await web.importSession(new Blob(['']), { format: 'auto' });
  const wm = await web.SessionMigrator.migrate('', 'anthropic', 'google');
  void [w, ws.session.getBranch(), ws.summary.entries, wm.text];
}

// The browser store: overloads give a Session or a LazySession.
export async function browserStore(file: File): Promise<void> {
  const store: web.IndexedDbStore = await web.IndexedDbStore.open('db');
  const info: web.StoredSessionInfo = await store.importSession(file, {
    format: 'auto',
    signal: new AbortController().signal,
    onProgress: (p) => void [p.phase, p.bytes, p.total],
  });
  const list: web.StoredSessionInfo[] = await store.listSessions();
  const full: web.Session = await store.loadSession(info.id);
  const lazy: web.LazySession = await store.loadSession(info.id, { lazy: true, maxMessages: 20 });
  const more: web.AgentMessage[] = await lazy.loadMoreHistory(10);
  const id: string = await store.appendEntry(info.id, { type: 'custom', customType: 'note' });
  await store.moveLeaf(info.id, id);
  const fork: web.StoredSessionInfo = await store.fork(info.id, id);
  const blob: Blob = await store.exportSession(info.id, { format: 'pi' });
  const log: web.EventLog = await store.events(info.id);
  const cp: web.Checkpoint = await store.saveCheckpoint(info.id, { label: 'x' });
  const cps: web.Checkpoint[] = await store.listCheckpoints(info.id);
  await store.deleteSession(fork.id);
  await store.close();
  void [list, full.getBranch().getTree(), more, blob, log, cp, cps];
}

// The agent store's redact hook and the built-in credential filter.
export function redactHook(dir: string) {
  const redact: node.Redactor = (value: unknown, where: node.RedactContext) => {
    const kind: node.RedactKind = where.kind;
    return kind === 'toolInput' && where.toolName === 'http' ? node.redactSecrets(value) : value;
  };
  const opts: node.JSONStoreOptions = { redact };
  const store = new node.JSONStore(dir, opts);
  const kept: { model: string } = node.redactSecrets({ model: 'gpt-4o' });
  void [store.redact, kept];
}

// The Agent's events are typed by their type; tool input by the tool.
export async function agentEvents(agent: node.Agent, registry: node.ToolRegistry): Promise<void> {
  agent.on('tool:end', (e) => e.call.name);
  agent.on('done', (e) => void [e.reason, e.step, e.seq]);
  agent.on('monitor', (e) => void e.type);
  // @ts-expect-error: there is no 'tool:endd' event
  agent.on('tool:endd', () => undefined);
  registry.register<{ path: string }>({
    name: 'read',
    description: 'reads a file',
    inputSchema: { type: 'object', required: ['path'], properties: { path: { type: 'string' } } },
    run: (input) => input.path.length,
  });
  registry.register<{ path: string }>({
    name: 'bad',
    description: 'uses a member the input type does not have',
    inputSchema: { type: 'object' },
    // @ts-expect-error: 'count' is not in the input type
    run: (input) => input.count,
  });
}

export async function providers(): Promise<void> {
  for (const createProvider of [node.createProvider, web.createProvider]) {
    const p = createProvider({ provider: 'anthropic', model: 'claude-sonnet-4-5', thinking: { budgetTokens: 1024 }, pricing: { input: 3, output: 15 } });
    const api: string | undefined = p.api;
    void api;
    // @ts-expect-error the provider is one of the four wire formats
    createProvider({ provider: 'anthropc', model: 'x' });
    // @ts-expect-error a model is required
    createProvider({ provider: 'openai' });
  }
  const agent = await node.Agent.resumeFromStore('x', { store: new node.JSONStore('/tmp/x'), toolRegistry: new node.ToolRegistry() });
  await agent.setModel(node.createProvider({ provider: 'google', model: 'gemini-2.5-flash' }));
  const info = await agent.info();
  const cost: number = info.usage.cost;
  void cost;
  agent.on('model_partial', (e) => void e.reason);
  agent.on('tool_input_chunk', (e) => void e.delta.length);
}
