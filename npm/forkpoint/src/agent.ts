/**
 * The durable agent: a Kode-style `Agent` over a crash-safe `JSONStore`.
 *
 * The loop (queue, model call, tool calls, approvals) runs here; every state it
 * announces is durable first (write-ahead) through the Rust core, which keeps
 * the session, the tool-call records, the event log, snapshots, checkpoints and
 * the sealing of interrupted calls.
 */
import type { AgentMessage, Bookmark, Breakpoint, Channel, CheckpointInfo, SealedCall, ToolCallRecord, ToolCallState } from '@forkpoint/types';
import { EventBus, ForkpointError, call, callAsync } from '@forkpoint/shared';
import type { BookmarkedEvent, LoggedEvent } from '@forkpoint/shared';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import * as native from '../native/index.js';
import { EventLog } from './eventlog.js';

/** Kode's config version, stored in `meta.json`. */
export const CONFIG_VERSION = 'forkpoint-1';

// ---------------------------------------------------------------------------
// Models

/** A tool as the model sees it. */
export interface ToolDefinition {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** What a model provider is asked. */
export interface ModelRequest {
  system?: string;
  messages: AgentMessage[];
  tools: ToolDefinition[];
}

/** The assistant message a provider returns (pi's shape; missing fields are filled). */
export type AssistantReply = Partial<Omit<Extract<AgentMessage, { role: 'assistant' }>, 'content'>> & { content: unknown[] };

/** A model provider: anything that answers a request with an assistant message. */
export interface ModelProvider {
  provider: string;
  model: string;
  api?: string;
  complete(request: ModelRequest, opts: { signal: AbortSignal }): Promise<AssistantReply>;
}

/** What `meta.json` keeps of a provider (never credentials). */
export interface ModelRef {
  provider: string;
  model: string;
  api?: string;
}

/** A scripted turn: text, thinking and tool calls the "model" answers with. */
export interface ScriptedTurn {
  text?: string;
  thinking?: string;
  toolCalls?: Array<{ id?: string; name: string; arguments: Record<string, unknown> }>;
}

/**
 * A provider that answers from a script, for tests and demos: each call returns
 * the next turn (a turn may be a function of the request); when the turns run
 * out it answers `{ text: '' }`.
 */
export class ScriptedProvider implements ModelProvider {
  readonly provider: string;
  readonly model: string;
  readonly api = 'scripted';
  /** The requests received, oldest first. */
  readonly requests: ModelRequest[] = [];
  private next = 0;

  constructor(
    private readonly turns: Array<ScriptedTurn | ((request: ModelRequest) => ScriptedTurn | Promise<ScriptedTurn>)>,
    opts: { provider?: string; model?: string } = {},
  ) {
    this.provider = opts.provider ?? 'scripted';
    this.model = opts.model ?? 'scripted-1';
  }

  async complete(request: ModelRequest, opts: { signal: AbortSignal }): Promise<AssistantReply> {
    this.requests.push(request);
    const t = this.turns[this.next++];
    const turn: ScriptedTurn = t === undefined ? { text: '' } : typeof t === 'function' ? await t(request) : t;
    if (opts.signal.aborted) throw new ForkpointError({ code: 'CLOSED', message: 'model call aborted' });
    const content: unknown[] = [];
    if (turn.thinking) content.push({ type: 'thinking', thinking: turn.thinking });
    if (turn.text !== undefined && (turn.text !== '' || !turn.toolCalls?.length)) content.push({ type: 'text', text: turn.text });
    for (const c of turn.toolCalls ?? []) content.push({ type: 'toolCall', id: c.id ?? newId('call'), name: c.name, arguments: c.arguments });
    return { content, stopReason: turn.toolCalls?.length ? 'toolUse' : 'stop' };
  }
}

// ---------------------------------------------------------------------------
// Tools, templates, store

/** What a tool gets besides its input. */
export interface ToolContext {
  agentId: string;
  callId: string;
  /** Aborts when the agent is interrupted. */
  signal: AbortSignal;
  /** Emits a `monitor` `tool_custom_event {toolName, eventType, data, timestamp}`; resolves when durable. */
  emit(eventType: string, data?: unknown): Promise<Bookmark>;
}

/** A tool the agent can call. */
export interface Tool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  /** Always ask for a decision before running it. */
  requiresApproval?: boolean;
  run(input: any, ctx: ToolContext): unknown;
}

/** The tools agents may use, by name. */
export class ToolRegistry {
  private readonly tools = new Map<string, Tool>();

  register(tool: Tool): this {
    if (!tool || typeof tool.name !== 'string' || !tool.name || typeof tool.run !== 'function') {
      throw new ForkpointError({ code: 'INVALID_INPUT', message: 'a tool has a name and a run function' });
    }
    this.tools.set(tool.name, tool);
    return this;
  }

  get(name: string): Tool | undefined {
    return this.tools.get(name);
  }

  has(name: string): boolean {
    return this.tools.has(name);
  }

  list(): string[] {
    return [...this.tools.keys()];
  }
}

/** Permission modes: `auto` runs every call; `approval` asks first (every call, or the tools listed). */
export interface Permission {
  mode: 'auto' | 'approval';
  requireApprovalTools?: string[];
}

/** A template: defaults an agent is created from, looked up again on resume. */
export interface AgentTemplate {
  id: string;
  systemPrompt?: string;
  tools?: string[];
  permission?: Permission;
  model?: ModelRef;
}

/** Templates by id. */
export class TemplateRegistry {
  private readonly templates = new Map<string, AgentTemplate>();

  register(t: AgentTemplate): this {
    this.templates.set(t.id, t);
    return this;
  }

  /** The template (`TEMPLATE_NOT_FOUND` when missing). */
  get(id: string): AgentTemplate {
    const t = this.templates.get(id);
    if (!t) throw new ForkpointError({ code: 'TEMPLATE_NOT_FOUND', message: `no template '${id}' in the template registry` });
    return t;
  }

  has(id: string): boolean {
    return this.templates.has(id);
  }
}

/** An agent's `meta.json` as listed by the store. */
export interface StoredAgentMeta {
  agentId: string;
  templateId?: string;
  createdAt?: string;
  lineage?: string[];
  model?: ModelRef;
  corrupted?: boolean;
  [key: string]: unknown;
}

/**
 * What a value handed to a `redact` hook is:
 * - `userMessage`: the content blocks of a message `send` / `chat` stores (or queues);
 * - `toolInput`: the arguments of one tool call of a model's answer;
 * - `assistantMessage`: the model's answer (its tool calls already through `toolInput`);
 * - `toolResult`: what a tool returned, or the message of its error (`isError`);
 * - `checkpointVariables`, `checkpointState`, `checkpointContext`: those parts of `checkpoints.create`.
 */
export type RedactKind =
  | 'userMessage'
  | 'toolInput'
  | 'assistantMessage'
  | 'toolResult'
  | 'checkpointVariables'
  | 'checkpointState'
  | 'checkpointContext';

/** Where a value handed to a `redact` hook will be stored. */
export interface RedactContext {
  kind: RedactKind;
  agentId: string;
  /** `toolInput`, `toolResult`: the tool. */
  toolName?: string;
  /** `toolInput`, `toolResult`: the call. */
  callId?: string;
  /** `toolResult`: the value is the message of the tool's error. */
  isError?: boolean;
}

/**
 * A store's filter of what agents persist: called with a copy of each value
 * about to be stored (the hook may change it in place or return another),
 * synchronously; what it returns is stored, and it is what the agent goes on
 * with (the model sees it in later turns, a resumed agent reads it). Only a
 * tool's own run in this process gets its unfiltered input. A hook that throws
 * fails the operation, so nothing unfiltered is written.
 */
export type Redactor = (value: unknown, where: RedactContext) => unknown;

/** Options of a `JSONStore`. */
export interface JSONStoreOptions {
  /**
   * Filters the conversation and the checkpoints before they are stored (see
   * `RedactKind`); without it they are stored as they are. `meta.json` is
   * always filtered (credentials never reach it); `redactSecrets` is that
   * filter, for use inside a hook.
   */
  redact?: Redactor;
}

/**
 * The built-in credential filter `meta.json` is written through, for any JSON
 * value (returns a filtered copy): members named like credentials (`apiKey`,
 * `Authorization`, `password`, `accessToken`, … in any case or look-alike
 * spelling) are dropped; the values of such `[name, value]` pairs and every
 * secret-shaped piece of text (`sk-…`, `AIza…`, `ghp_…`, JWTs, `Bearer …`,
 * URL user information) become `'[redacted]'`.
 */
export function redactSecrets<T>(value: T): T {
  if (value === undefined) return value;
  return JSON.parse(call(() => native.redactSecretsJson(JSON.stringify(value)))) as T;
}

/**
 * The embedded store: one flat directory per agent under `dir` (a fork is a
 * sibling), each with `meta.json`, `session.jsonl`, `events.jsonl` and `LOCK`.
 */
export class JSONStore {
  readonly dir: string;
  /** The store's filter of what agents persist (`JSONStoreOptions.redact`). */
  readonly redact: Redactor | undefined;

  constructor(dir: string, opts: JSONStoreOptions = {}) {
    this.dir = resolve(dir);
    if (opts.redact !== undefined && typeof opts.redact !== 'function') {
      throw new ForkpointError({ code: 'INVALID_INPUT', message: 'JSONStore: redact is a function (value, where) => value' });
    }
    this.redact = opts.redact;
  }

  /** Every agent in the store (its `meta.json`). */
  list(): StoredAgentMeta[] {
    return JSON.parse(call(() => native.NativeAgent.list(this.dir))) as StoredAgentMeta[];
  }

  /** Whether the store holds agent `id` (`INVALID_ID` for an id that cannot be one). */
  exists(id: string): boolean {
    return call(() => native.NativeAgent.exists(this.dir, id));
  }

  /** Deletes an agent that no one runs (its forks stay). */
  delete(id: string): void {
    call(() => native.NativeAgent.remove(this.dir, id));
  }
}

/** What agents are built with. */
export interface AgentDependencies {
  store: JSONStore;
  toolRegistry: ToolRegistry;
  templateRegistry?: TemplateRegistry;
  /** Builds a provider from what `meta.json` keeps (resumeFromStore, forks of resumed agents). */
  modelFactory?: (ref: ModelRef) => ModelProvider;
}

/** An agent's configuration. */
export interface AgentConfig {
  agentId?: string;
  templateId?: string;
  /** A provider, or a reference the `modelFactory` turns into one. */
  model?: ModelProvider | ModelRef;
  tools?: string[];
  permission?: Permission;
  systemPrompt?: string;
  metadata?: Record<string, unknown>;
}

export type ResumeStrategy = 'manual' | 'crash';
export type AgentState = 'READY' | 'WORKING' | 'PAUSED';

export interface ResumeOptions {
  strategy?: ResumeStrategy;
  /** Continue right away: deliver queued messages, redo an interrupted model call. */
  autoRun?: boolean;
}

export interface AgentStatus {
  agentId: string;
  state: AgentState;
  stepCount: number;
  lastSfpIndex: number;
  lastBookmark: Bookmark | null;
  breakpoint: Breakpoint;
}

export interface AgentInfo {
  agentId: string;
  templateId: string | null;
  createdAt: string;
  lineage: string[];
  configVersion: string;
  messageCount: number;
  lastSfpIndex: number;
  lastBookmark: Bookmark | null;
  breakpoint: Breakpoint;
}

export interface ChatResult {
  status: 'ok' | 'paused';
  text: string;
  last: Bookmark | null;
  permissionIds: string[];
}

/** A tool call as `toolCalls()` reports it. */
export interface ToolCallView {
  id: string;
  name: string;
  state: ToolCallState;
  input: unknown;
  result?: unknown;
  isError?: boolean;
  approval?: unknown;
  audit: ToolCallRecord['audit'];
}

/** A todo item (at most one `in_progress`). */
export interface TodoItem {
  id: string;
  title: string;
  status: 'pending' | 'in_progress' | 'completed';
  assignee?: string;
  notes?: string;
  createdAt?: number;
  updatedAt?: number;
}

export interface CheckpointArgs {
  executionId: string;
  stepName: string;
  stepIndex: number;
  state?: unknown;
  context?: unknown;
  variables?: Record<string, unknown>;
  status?: string;
}

interface Meta {
  agentId: string;
  templateId: string | null;
  createdAt: string;
  updatedAt: string;
  lineage: string[];
  configVersion: string;
  model: ModelRef;
  tools: string[];
  permission: Permission;
  systemPrompt: string | null;
  metadata: Record<string, unknown>;
  forkedFrom?: { agentId: string; snapshot: string; entryId: string };
}

interface Opened {
  meta: Meta;
  breakpoint: Breakpoint;
  repaired: boolean;
}

type Call = { id: string; name: string; arguments: unknown; state: ToolCallState | null };

const newId = (prefix: string) => `${prefix}-${Date.now().toString(36)}${randomBytes(6).toString('hex')}`;

function isProvider(m: unknown): m is ModelProvider {
  return !!m && typeof (m as ModelProvider).complete === 'function';
}

function refOf(m: ModelProvider | ModelRef): ModelRef {
  const r: ModelRef = { provider: String(m.provider), model: String(m.model) };
  if (m.api) r.api = String(m.api);
  return r;
}

function textOf(m: AgentMessage | undefined): string {
  if (!m || m.role !== 'assistant') return '';
  return (m.content as Array<{ type: string; text?: string }>)
    .filter((b) => b.type === 'text')
    .map((b) => b.text ?? '')
    .join('');
}

function resultText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === undefined) return '';
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}

// ---------------------------------------------------------------------------
// Agent

/** A durable agent (one process runs it at a time: its store directory is locked). */
export class Agent {
  readonly agentId: string;
  private readonly n: native.NativeAgent;
  private readonly deps: AgentDependencies;
  private readonly log: EventLog;
  private readonly bus: EventBus;
  private meta: Meta;
  private provider: ModelProvider;
  /** The messages at the leaf; parsed from the opened context when first needed. */
  private msgsCache: AgentMessage[] | null = null;
  private bp: Breakpoint;
  private state: AgentState = 'READY';
  private processing: Promise<void> | null = null;
  private failure: unknown = null;
  private lastDone: Bookmark | null = null;
  private readonly pendingPermissions = new Set<string>();
  private readonly aborts = new Set<AbortController>();
  private inflight: Promise<Bookmark>[] = [];
  private interrupted = false;
  private interrupting: Promise<void> | null = null;
  private closed = false;
  private restored: { variables?: Record<string, unknown>; state?: unknown } = {};
  /** The unfiltered inputs of the latest answer's calls, for their runs in this process (with a `redact` hook). */
  private readonly liveInputs = new Map<string, unknown>();

  /** Workflow checkpoints: create, list, lastSuccessful, restore (the `/checkpoint` flow). */
  readonly checkpoints: {
    create(args: CheckpointArgs): Promise<string>;
    list(): Array<{ executionId: string; checkpoints: CheckpointInfo[] }>;
    lastSuccessful(executionId: string, beforeStep?: number): CheckpointInfo | null;
    restore(id: string): Promise<CheckpointInfo>;
  };

  private constructor(n: native.NativeAgent, opened: Opened, provider: ModelProvider, deps: AgentDependencies) {
    this.n = n;
    this.deps = deps;
    this.meta = opened.meta;
    this.agentId = opened.meta.agentId;
    this.provider = provider;
    this.bp = opened.breakpoint;
    this.log = EventLog.fromNative(call(() => n.events()));
    this.bus = new EventBus(this.log);
    this.checkpoints = {
      create: async (args) => {
        const stored = { ...args };
        if (stored.variables !== undefined) stored.variables = this.redact(stored.variables, { kind: 'checkpointVariables' }) as Record<string, unknown>;
        if (stored.state !== undefined) stored.state = this.redact(stored.state, { kind: 'checkpointState' });
        if (stored.context !== undefined) stored.context = this.redact(stored.context, { kind: 'checkpointContext' });
        const c = JSON.parse(await callAsync(() => n.checkpoint(JSON.stringify(stored)))) as CheckpointInfo;
        return c.id;
      },
      list: () => JSON.parse(call(() => n.checkpointsJson())),
      lastSuccessful: (executionId, beforeStep) => JSON.parse(call(() => n.lastSuccessfulJson(executionId, beforeStep))),
      restore: (id) => this.restoreCheckpoint(id),
    };
  }

  private get msgs(): AgentMessage[] {
    if (!this.msgsCache) {
      this.msgsCache = (JSON.parse(call(() => this.n.takeOpenedContext())) as { messages: AgentMessage[] }).messages;
    }
    return this.msgsCache;
  }

  private set msgs(m: AgentMessage[]) {
    this.msgsCache = m;
  }

  // -- creation and resume ---------------------------------------------------

  /** Creates an agent in the store (`INVALID_ID`, or `INVALID_ID` if the id is taken). */
  static async create(config: AgentConfig, deps: AgentDependencies): Promise<Agent> {
    const template = config.templateId ? Agent.template(config.templateId, deps) : undefined;
    const agentId = config.agentId ?? newId('agt');
    call(() => native.NativeAgent.validateId(agentId));
    const model = config.model ?? template?.model;
    if (!model) throw new ForkpointError({ code: 'INVALID_INPUT', message: 'an agent needs a model (config.model or a template with one)' });
    const provider = Agent.providerOf(model, deps);
    const tools = config.tools ?? template?.tools ?? [];
    const now = new Date().toISOString();
    const meta: Meta = {
      agentId,
      templateId: config.templateId ?? null,
      createdAt: now,
      updatedAt: now,
      lineage: [],
      configVersion: CONFIG_VERSION,
      model: refOf(provider),
      tools,
      permission: config.permission ?? template?.permission ?? { mode: 'auto' },
      systemPrompt: config.systemPrompt ?? template?.systemPrompt ?? null,
      metadata: config.metadata ?? {},
    };
    const n = await callAsync(() => native.NativeAgent.create(deps.store.dir, agentId, JSON.stringify(meta)));
    const agent = new Agent(n, JSON.parse(n.openedJson()) as Opened, provider, deps);
    void agent.emit({ type: 'agent_created', channel: 'monitor', agentId, templateId: meta.templateId });
    await agent.flush();
    return agent;
  }

  /**
   * Reopens an agent with `config` (credentials and the provider come from it;
   * what the store keeps fills the rest). `strategy: 'crash'` seals every call
   * left without a result; `'manual'` (default) seals nothing and reports them.
   */
  static async resume(agentId: string, config: AgentConfig, deps: AgentDependencies, opts: ResumeOptions = {}): Promise<Agent> {
    return Agent.reopen(agentId, config, deps, opts, false);
  }

  /** Reopens an agent from what the store keeps; `overrides` change model, permission, tools, prompt for real. */
  static async resumeFromStore(
    agentId: string,
    deps: AgentDependencies,
    opts: ResumeOptions & { overrides?: Partial<AgentConfig> } = {},
  ): Promise<Agent> {
    return Agent.reopen(agentId, opts.overrides ?? {}, deps, opts, true);
  }

  /** `resumeFromStore` (with `config` as overrides), or `create` when the store has no such agent. */
  static async resumeOrCreate(
    agentId: string,
    config: AgentConfig,
    deps: AgentDependencies,
    opts: ResumeOptions & { overrides?: Partial<AgentConfig> } = {},
  ): Promise<Agent> {
    try {
      return await Agent.reopen(agentId, { ...config, ...opts.overrides }, deps, opts, true);
    } catch (e) {
      if (e instanceof ForkpointError && e.code === 'AGENT_NOT_FOUND') return Agent.create({ ...config, agentId }, deps);
      throw e;
    }
  }

  private static template(id: string, deps: AgentDependencies): AgentTemplate {
    if (!deps.templateRegistry) throw new ForkpointError({ code: 'TEMPLATE_NOT_FOUND', message: `template '${id}' needs a templateRegistry in the dependencies` });
    return deps.templateRegistry.get(id);
  }

  private static providerOf(model: ModelProvider | ModelRef, deps: AgentDependencies): ModelProvider {
    if (isProvider(model)) return model;
    if (!deps.modelFactory) {
      throw new ForkpointError({ code: 'INVALID_INPUT', message: `model ${model.provider}/${model.model} is a reference: pass a provider, or a modelFactory in the dependencies` });
    }
    return deps.modelFactory(model);
  }

  private static async reopen(
    agentId: string,
    config: Partial<AgentConfig>,
    deps: AgentDependencies,
    opts: ResumeOptions,
    fromStore: boolean,
  ): Promise<Agent> {
    call(() => native.NativeAgent.validateId(agentId));
    const n = await callAsync(() => native.NativeAgent.open(deps.store.dir, agentId));
    let agent: Agent;
    try {
      const opened = JSON.parse(n.openedJson()) as Opened;
      const meta = opened.meta;
      const template = meta.templateId ? Agent.template(meta.templateId, deps) : undefined;
      void template;
      const model = config.model ?? (fromStore ? meta.model : undefined) ?? meta.model;
      const provider = Agent.providerOf(model, deps);
      const changed: Partial<Meta> = {};
      if (refOf(provider).model !== meta.model.model || refOf(provider).provider !== meta.model.provider) changed.model = refOf(provider);
      if (config.permission) changed.permission = config.permission;
      if (config.tools) changed.tools = config.tools;
      if (config.systemPrompt !== undefined) changed.systemPrompt = config.systemPrompt;
      if (config.metadata) changed.metadata = { ...meta.metadata, ...config.metadata };
      agent = new Agent(n, opened, provider, deps);
      if (Object.keys(changed).length > 0) await agent.saveMeta(changed);
      await agent.afterResume(opts);
    } catch (e) {
      await n.close().catch(() => undefined);
      throw e;
    }
    return agent;
  }

  private async afterResume(opts: ResumeOptions): Promise<void> {
    const strategy = opts.strategy ?? 'manual';
    const crashedAt = this.bp;
    let sealed: SealedCall[] = [];
    if (strategy === 'crash' && this.openCalls().length > 0) {
      sealed = JSON.parse(await callAsync(() => this.n.seal(null, null))) as SealedCall[];
      for (const s of sealed) void this.emit({ type: 'tool:end', call: this.snapshotOf(s.id), sealed: true });
      for (const s of sealed) this.msgs.push(s.message);
    } else {
      for (const c of this.openCalls()) if (c.state === 'APPROVAL_REQUIRED') this.pendingPermissions.add(c.id);
    }
    const open = strategy === 'crash' ? [] : this.openCalls();
    await this.emit({ type: 'agent_resumed', strategy, sealed: sealed.map((s) => ({ ...this.snapshotOf(s.id), priorState: s.priorState, recommendations: s.recommendations })), breakpoint: crashedAt, open });
    if (strategy === 'crash') this.setBreakpoint('READY');
    if (this.pendingPermissions.size > 0) this.state = 'PAUSED';
    await this.flush();
    if (opts.autoRun) this.kick();
  }

  // -- events ----------------------------------------------------------------

  /**
   * Appends an event. Events are ordered by the call; they are not each awaited:
   * `flush()` waits for all, and the loop flushes before every side effect
   * (a model call, a tool run, a pause), so group commit makes one fsync of them.
   */
  private emit(e: { type: string; channel?: Channel; [k: string]: unknown }): Promise<Bookmark> {
    const p = this.bus.emit(e);
    this.inflight.push(p);
    p.catch(() => undefined); // rethrown by flush()
    return p;
  }

  /** Waits until every event emitted so far is durable. */
  private async flush(): Promise<void> {
    while (this.inflight.length > 0) {
      const ps = this.inflight;
      this.inflight = [];
      await Promise.all(ps);
    }
  }

  /** Calls `handler` for each live event of a type (or a whole channel); returns the unsubscribe function. */
  on(type: string, handler: (event: LoggedEvent) => void): () => void {
    return this.bus.on(type, handler);
  }

  /**
   * The agent's events on `channels` (default all), from after `since` (from
   * storage, however old) then live: exactly once, in seq order.
   */
  subscribe(channels?: Channel[], opts: { since?: Bookmark | number | null; kinds?: string[] } = {}): AsyncIterableIterator<BookmarkedEvent> {
    return this.bus.subscribe({ channels, kinds: opts.kinds, since: opts.since });
  }

  private setBreakpoint(bp: Breakpoint): void {
    if (bp === this.bp) return;
    const previous = this.bp;
    this.bp = bp;
    void this.emit({ type: 'breakpoint_changed', previous, current: bp, timestamp: Date.now() });
  }

  private setState(s: AgentState): void {
    if (s === this.state) return;
    this.state = s;
    void this.emit({ type: 'state_changed', state: s });
  }

  /** `value` through the store's `redact` hook (a copy of it), or `value` without one. */
  private redact(value: unknown, where: Omit<RedactContext, 'agentId'>): unknown {
    const hook = this.deps.store.redact;
    if (!hook) return value;
    let copy: unknown = value;
    try {
      copy = structuredClone(value);
    } catch {
      // Not cloneable (a function inside): the hook gets the value itself.
    }
    return hook(copy, { ...where, agentId: this.agentId });
  }

  private async saveMeta(changed: Partial<Meta>): Promise<void> {
    this.meta = { ...this.meta, ...changed, updatedAt: new Date().toISOString() };
    await callAsync(() => this.n.setMeta(JSON.stringify(this.meta)));
  }

  // -- messages --------------------------------------------------------------

  /**
   * Sends a user message; resolves to its id once it is durable. The agent
   * starts working on it (or queues it, durably, while busy).
   */
  async send(input: string | unknown[]): Promise<string> {
    this.checkOpen();
    const content = this.redact(typeof input === 'string' ? [{ type: 'text', text: input }] : input, { kind: 'userMessage' });
    const queueId = newId('msg');
    const busy = !!this.processing || this.pendingPermissions.size > 0 || this.openCalls().length > 0;
    if (busy) await callAsync(() => this.n.send(queueId, JSON.stringify(content), true));
    else await this.appendUser(queueId, content);
    this.kick();
    return queueId;
  }

  private async appendUser(queueId: string, content: unknown): Promise<void> {
    const message = JSON.parse(await callAsync(() => this.n.send(queueId, JSON.stringify(content), false))) as AgentMessage;
    this.msgs.push(message);
  }

  /** Sends a message and waits until the agent is idle or waits for a decision. */
  async chat(input: string | unknown[]): Promise<ChatResult> {
    await this.send(input);
    await this.idle();
    return this.result();
  }

  private result(): ChatResult {
    let last: AgentMessage | undefined;
    for (let i = this.msgs.length - 1; i >= 0 && !last; i--) if (this.msgs[i].role === 'assistant') last = this.msgs[i];
    return {
      status: this.pendingPermissions.size > 0 ? 'paused' : 'ok',
      text: textOf(last),
      last: this.lastDone,
      permissionIds: [...this.pendingPermissions],
    };
  }

  /** Resolves when the agent is idle or waiting for a decision (rejects with the loop's error). */
  async idle(): Promise<void> {
    while (this.processing) await this.processing;
    if (this.failure) {
      const f = this.failure;
      this.failure = null;
      throw f;
    }
  }

  private kick(): void {
    if (this.processing || this.closed || this.interrupting) return;
    this.processing = this.process()
      .catch((e) => {
        this.failure = e;
      })
      .finally(() => {
        this.processing = null;
        // A message queued while the loop was finishing: go on with it.
        if (!this.failure && this.pendingPermissions.size === 0 && this.hasQueued()) this.kick();
      });
  }

  private hasQueued(): boolean {
    try {
      return (JSON.parse(call(() => this.n.queuedJson())) as unknown[]).length > 0;
    } catch {
      return false;
    }
  }

  private openCalls(): Call[] {
    return JSON.parse(call(() => this.n.openCallsJson())) as Call[];
  }

  private needsModel(): boolean {
    const last = this.msgs[this.msgs.length - 1];
    return !!last && (last.role === 'user' || last.role === 'toolResult');
  }

  private async process(): Promise<void> {
    this.interrupted = false;
    for (;;) {
      if (this.interrupted || this.closed) return;
      if (this.openCalls().length > 0) {
        if (await this.runCalls()) return; // paused for a decision
        continue;
      }
      if (!this.needsModel()) {
        const queued = JSON.parse(call(() => this.n.queuedJson())) as Array<{ queueId: string; content: unknown }>;
        if (queued.length === 0) break;
        for (const q of queued) await this.appendUser(q.queueId, q.content);
      }
      await this.modelStep();
    }
    if (!this.interrupted) {
      this.setBreakpoint('READY');
      this.setState('READY');
    }
    await this.flush();
  }

  private toolDefs(): ToolDefinition[] {
    const out: ToolDefinition[] = [];
    for (const name of this.meta.tools) {
      const t = this.deps.toolRegistry.get(name);
      if (t) out.push({ name: t.name, description: t.description, inputSchema: t.inputSchema });
    }
    return out;
  }

  private async modelStep(): Promise<void> {
    const step = this.stepCount() + 1;
    this.setState('WORKING');
    this.setBreakpoint('PRE_MODEL');
    this.setBreakpoint('STREAMING_MODEL');
    await this.flush(); // durable before the model is called
    const ac = new AbortController();
    this.aborts.add(ac);
    let reply: AssistantReply;
    try {
      const system = this.meta.systemPrompt ?? undefined;
      const call = this.provider.complete({ system, messages: [...this.msgs], tools: this.toolDefs() }, { signal: ac.signal });
      // A provider that ignores the signal does not hold up an interrupt.
      reply = await Promise.race([
        call,
        new Promise<never>((_, reject) => {
          const stop = () => reject(new ForkpointError({ code: 'CLOSED', message: 'model call interrupted' }));
          if (ac.signal.aborted) stop();
          else ac.signal.addEventListener('abort', stop, { once: true });
        }),
      ]);
    } catch (e) {
      if (this.interrupted) return;
      await this.emit({ type: 'error', severity: 'error', phase: 'model', message: String((e as Error)?.message ?? e) });
      this.setBreakpoint('READY');
      this.setState('READY');
      await this.flush();
      throw e;
    } finally {
      this.aborts.delete(ac);
    }
    if (this.interrupted) return;
    const ref = refOf(this.provider);
    this.liveInputs.clear();
    const content = (Array.isArray(reply?.content) ? reply.content : []).map((b) => {
      const block = b as { type?: string; id?: string; name?: string; arguments?: unknown };
      if (block?.type !== 'toolCall') return b;
      const id = block.id || newId('call');
      if (!this.deps.store.redact) return block.id ? b : { ...block, id };
      // Stored filtered; this process runs the tool with what the model wrote.
      this.liveInputs.set(id, block.arguments);
      return { ...block, id, arguments: this.redact(block.arguments, { kind: 'toolInput', toolName: block.name, callId: id }) };
    });
    const answer = {
      role: 'assistant',
      api: reply.api ?? ref.api ?? 'unknown',
      provider: reply.provider ?? ref.provider,
      model: reply.model ?? ref.model,
      usage: reply.usage ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
      stopReason: reply.stopReason ?? 'stop',
      timestamp: Date.now(),
      ...reply,
      content,
    };
    const message = this.redact(answer, { kind: 'assistantMessage' }) as AgentMessage;
    const storedContent = (message as { content?: unknown }).content;
    const stored: unknown[] = Array.isArray(storedContent) ? storedContent : [];
    const calls = stored.filter((b) => (b as { type?: string }).type === 'toolCall');
    // The answer and a PENDING record per call, durable together before anything runs.
    await callAsync(() => this.n.answer(JSON.stringify(message)));
    this.msgs.push(message);
    for (const b of stored as Array<{ type: string; text?: string; thinking?: string }>) {
      if (b.type === 'thinking') {
        void this.emit({ type: 'think_chunk_start', step });
        void this.emit({ type: 'think_chunk', step, delta: b.thinking ?? '' });
        void this.emit({ type: 'think_chunk_end', step });
      } else if (b.type === 'text') {
        void this.emit({ type: 'text_chunk_start', step });
        void this.emit({ type: 'text_chunk', step, delta: b.text ?? '' });
        void this.emit({ type: 'text_chunk_end', step, text: b.text ?? '' });
      }
    }
    const usage = (message as { usage?: { input?: number; output?: number; totalTokens?: number } }).usage;
    if (usage) void this.emit({ type: 'token_usage', inputTokens: usage.input ?? 0, outputTokens: usage.output ?? 0, totalTokens: usage.totalTokens ?? 0 });
    if (calls.length > 0) {
      this.setBreakpoint('TOOL_PENDING');
      return;
    }
    this.lastDone = await this.emit({ type: 'done', step, reason: 'completed' });
    void this.emit({ type: 'step_complete', step, done: this.lastDone });
  }

  private needsApproval(name: string, tool: Tool | undefined): boolean {
    if (tool?.requiresApproval) return true;
    const p = this.meta.permission;
    if (p.mode !== 'approval') return false;
    return !p.requireApprovalTools || p.requireApprovalTools.includes(name);
  }

  private snapshotOf(id: string): Record<string, unknown> {
    const r = JSON.parse(call(() => this.n.recordJson(id))) as ToolCallRecord | null;
    if (!r) return { id };
    const preview = resultText(r.input);
    return {
      id: r.id,
      name: r.name,
      state: r.state,
      approval: r.approval,
      result: r.result,
      isError: r.isError,
      startedAt: r.startedAt,
      completedAt: r.completedAt,
      inputPreview: preview.length > 200 ? `${preview.slice(0, 200)}…` : preview,
      auditTrail: r.audit,
    };
  }

  private async record(id: string, name: string, state: ToolCallState, extra?: Record<string, unknown>): Promise<void> {
    await callAsync(() => this.n.record(id, name, state, extra ? JSON.stringify(extra) : null));
  }

  /** Finishes a call: its result message and terminal record, durable together. */
  private async finishCall(c: Call, state: ToolCallState, text: string, isError: boolean, result: unknown, extra: Record<string, unknown> = {}): Promise<void> {
    let recordJson: string;
    try {
      recordJson = JSON.stringify({ ...extra, result, isError });
    } catch (e) {
      // A result JSON cannot hold (a cycle, a BigInt): the call fails, it is not run again.
      const why = `the tool's result cannot be stored as JSON: ${(e as Error)?.message ?? e}`;
      [state, text, isError] = ['FAILED', `Error: ${why}`, true];
      recordJson = JSON.stringify({ ...extra, result: { ok: false, error: why }, isError: true });
    }
    let message: string;
    try {
      message = await callAsync(() => this.n.completeCall(c.id, c.name, state, text, isError, recordJson));
    } catch (e) {
      if (!(e instanceof ForkpointError) || !['INVALID_INPUT', 'CORRUPTED_DATA', 'LIMIT_EXCEEDED'].includes(e.code)) throw e;
      // The result cannot be stored as it is (too deep, too long): the call fails, with why.
      const why = `the tool's result cannot be stored: ${e.message}`;
      const failed = JSON.stringify({ note: 'result not storable', result: { ok: false, error: why }, isError: true });
      message = await callAsync(() => this.n.completeCall(c.id, c.name, 'FAILED', `Error: ${why}`, true, failed));
    }
    this.msgs.push(JSON.parse(message) as AgentMessage);
    void this.emit({ type: 'tool:end', call: this.snapshotOf(c.id) });
  }

  /** Drives the open calls in order; true when paused for a decision. */
  private async runCalls(): Promise<boolean> {
    for (const c of this.openCalls()) {
      if (this.interrupted || this.closed) return true;
      const tool = this.meta.tools.includes(c.name) ? this.deps.toolRegistry.get(c.name) : undefined;
      const state = c.state ?? 'PENDING';
      if (state === 'APPROVAL_REQUIRED') {
        this.pendingPermissions.add(c.id);
        this.setBreakpoint('AWAITING_APPROVAL');
        this.setState('PAUSED');
        await this.flush();
        return true;
      }
      if (state === 'EXECUTING' || (state !== 'PENDING' && state !== 'APPROVED')) {
        // Started before a crash or a rewind (or closed without its message):
        // never run twice. Sealed (or its stored result restored) instead.
        const sealed = JSON.parse(await callAsync(() => this.n.seal(null, c.id))) as SealedCall[];
        for (const s of sealed) {
          this.msgs.push(s.message);
          void this.emit({ type: 'tool:end', call: this.snapshotOf(s.id), sealed: true });
        }
        continue;
      }
      if (!tool) {
        await this.finishCall(c, 'FAILED', `Tool '${c.name}' is not available to this agent.`, true, { ok: false, error: 'tool not found' }, { note: 'tool not found' });
        continue;
      }
      if (state === 'PENDING' && this.needsApproval(c.name, tool)) {
        await this.record(c.id, c.name, 'APPROVAL_REQUIRED', { approval: { required: true }, note: 'awaiting approval' });
        this.pendingPermissions.add(c.id);
        this.setBreakpoint('AWAITING_APPROVAL');
        this.setState('PAUSED');
        await this.emit({ type: 'permission_required', call: this.snapshotOf(c.id) });
        return true;
      }
      // Registered before anything is announced: an interrupt from a handler aborts it.
      const ac = new AbortController();
      this.aborts.add(ac);
      this.setBreakpoint('PRE_TOOL');
      await this.record(c.id, c.name, 'EXECUTING', { note: 'execution start' });
      this.setBreakpoint('TOOL_EXECUTING');
      void this.emit({ type: 'tool:start', call: this.snapshotOf(c.id) });
      await this.flush(); // the record and the breakpoint are durable before the tool runs
      let value: unknown;
      let error: unknown;
      const started = Date.now();
      try {
        value = await new Promise((resolveRun, rejectRun) => {
          const stop = () => rejectRun(new ForkpointError({ code: 'CLOSED', message: 'interrupted' }));
          if (ac.signal.aborted) return stop();
          ac.signal.addEventListener('abort', stop, { once: true });
          Promise.resolve()
            .then(() =>
              tool.run(this.liveInputs.has(c.id) ? this.liveInputs.get(c.id) : c.arguments, {
                agentId: this.agentId,
                callId: c.id,
                signal: ac.signal,
                emit: (eventType, data) => this.emit({ type: 'tool_custom_event', toolName: c.name, eventType, data, timestamp: Date.now() }),
              }),
            )
            .then(resolveRun, rejectRun);
        });
      } catch (e) {
        error = e;
      } finally {
        this.aborts.delete(ac);
      }
      this.liveInputs.delete(c.id);
      if (this.interrupted || this.closed) return true; // interrupt() seals it
      const where = { kind: 'toolResult', toolName: c.name, callId: c.id } as const;
      if (error === undefined) {
        value = this.redact(value, { ...where, isError: false });
        await this.finishCall(c, 'COMPLETED', resultText(value), false, value, { note: 'execution complete', durationMs: Date.now() - started });
      } else {
        const message = String(this.redact(String((error as Error)?.message ?? error), { ...where, isError: true }));
        await this.finishCall(c, 'FAILED', `Error: ${message}`, true, { ok: false, error: message }, { note: 'execution failed' });
        void this.emit({ type: 'tool:error', call: this.snapshotOf(c.id), error: message });
      }
      void this.emit({ type: 'tool_executed', call: this.snapshotOf(c.id) });
      this.setBreakpoint('POST_TOOL');
    }
    return false;
  }

  /** Allows or denies a call waiting for a decision (`PERMISSION_NOT_PENDING` otherwise). */
  async decide(permissionId: string, decision: 'allow' | 'deny', note?: string): Promise<void> {
    this.checkOpen();
    if (decision !== 'allow' && decision !== 'deny') throw new ForkpointError({ code: 'INVALID_INPUT', message: "decision is 'allow' or 'deny'" });
    const c = this.openCalls().find((x) => x.id === permissionId);
    // Claimed at once: a second decide() for the same call finds nothing pending.
    if (!c || c.state !== 'APPROVAL_REQUIRED' || !this.pendingPermissions.delete(permissionId)) {
      throw new ForkpointError({ code: 'PERMISSION_NOT_PENDING', message: `no call '${permissionId}' waits for a decision` });
    }
    const approval = { required: true, decision, decidedBy: 'api', decidedAt: Date.now(), note };
    try {
      if (decision === 'allow') {
        await this.record(c.id, c.name, 'APPROVED', { approval, note: note ?? 'approval granted' });
      } else {
        await this.finishCall(c, 'DENIED', `Denied by the user${note ? `: ${note}` : ''}.`, true, { ok: false, error: 'denied', note }, { approval, note: note ?? 'approval denied' });
      }
    } catch (e) {
      this.pendingPermissions.add(permissionId); // not decided: it can be tried again
      throw e;
    }
    void this.emit({ type: 'permission_decided', callId: permissionId, decision, decidedBy: 'api', note });
    this.setBreakpoint(decision === 'allow' ? 'PRE_TOOL' : 'POST_TOOL');
    if (this.pendingPermissions.size === 0) this.setState('WORKING');
    await this.flush();
    if (this.pendingPermissions.size === 0) this.kick();
  }

  /** Stops the model call and running tools; every open call is sealed with `note`. */
  interrupt(opts: { note?: string } = {}): Promise<void> {
    this.checkOpen();
    if (!this.interrupting) {
      this.interrupting = this.doInterrupt(opts).finally(() => {
        this.interrupting = null;
      });
    }
    return this.interrupting;
  }

  private async doInterrupt(opts: { note?: string }): Promise<void> {
    this.interrupted = true;
    this.liveInputs.clear();
    for (const ac of this.aborts) ac.abort();
    while (this.processing) await this.processing.catch(() => undefined);
    this.failure = null;
    const sealed = JSON.parse(await callAsync(() => this.n.seal(opts.note ?? 'Interrupted by user', null))) as SealedCall[];
    for (const s of sealed) void this.emit({ type: 'tool:end', call: this.snapshotOf(s.id), sealed: true });
    for (const s of sealed) this.msgs.push(s.message);
    this.pendingPermissions.clear();
    this.lastDone = await this.emit({ type: 'done', step: this.stepCount(), reason: 'interrupted' });
    this.setBreakpoint('READY');
    this.setState('READY');
    await this.flush();
    this.interrupted = false;
  }

  // -- state -----------------------------------------------------------------

  private stepCount(): number {
    return this.counts().assistantMessages;
  }

  private counts(): { messageCount: number; lastSfpIndex: number; assistantMessages: number } {
    return JSON.parse(call(() => this.n.countsJson()));
  }

  private lastBookmark(): Promise<Bookmark | null> {
    return this.log.lastBookmark();
  }

  async status(): Promise<AgentStatus> {
    return {
      agentId: this.agentId,
      state: this.state,
      stepCount: this.stepCount(),
      lastSfpIndex: this.counts().lastSfpIndex,
      lastBookmark: await this.lastBookmark(),
      breakpoint: this.bp,
    };
  }

  async info(): Promise<AgentInfo> {
    const c = this.counts();
    return {
      agentId: this.agentId,
      templateId: this.meta.templateId,
      createdAt: this.meta.createdAt,
      lineage: [...this.meta.lineage],
      configVersion: this.meta.configVersion,
      messageCount: c.messageCount,
      lastSfpIndex: c.lastSfpIndex,
      lastBookmark: await this.lastBookmark(),
      breakpoint: this.bp,
    };
  }

  /** The conversation at the current leaf (pi message shapes). */
  async messages(): Promise<AgentMessage[]> {
    return structuredClone(this.msgs);
  }

  private records(): ToolCallRecord[] {
    return JSON.parse(call(() => this.n.recordsJson())) as ToolCallRecord[];
  }

  /** Every tool call of the current branch with its audit trail. */
  async toolCalls(): Promise<ToolCallView[]> {
    return this.records().map((r) => ({
      id: r.id,
      name: r.name,
      state: r.state,
      input: r.input,
      ...(r.result !== undefined ? { result: r.result } : {}),
      ...(r.isError !== undefined ? { isError: r.isError } : {}),
      ...(r.approval !== undefined ? { approval: r.approval } : {}),
      audit: r.audit,
    }));
  }

  // -- todos -----------------------------------------------------------------

  /** The todo list (persisted; restored on resume, copied on fork). */
  getTodos(): TodoItem[] {
    const t = JSON.parse(call(() => this.n.todosJson())) as { todos: TodoItem[] } | null;
    return t?.todos ?? [];
  }

  /** Replaces the todo list (`INVALID_INPUT` for duplicate ids or more than one in progress); durable on resolve. */
  async setTodos(todos: TodoItem[]): Promise<void> {
    this.checkOpen();
    const { current, previous } = JSON.parse(await callAsync(() => this.n.setTodos(JSON.stringify(todos)))) as { current: TodoItem[]; previous: TodoItem[] };
    void this.emit({ type: 'todo_changed', current, previous });
    await this.flush();
  }

  /** Changes one todo (by id). */
  async updateTodo(todo: Partial<TodoItem> & { id: string }): Promise<void> {
    const todos = this.getTodos();
    const i = todos.findIndex((t) => t.id === todo.id);
    if (i < 0) throw new ForkpointError({ code: 'NOT_FOUND', message: `no todo '${todo.id}'` });
    todos[i] = { ...todos[i], ...todo };
    await this.setTodos(todos);
  }

  /** Removes one todo (by id). */
  async deleteTodo(id: string): Promise<void> {
    const todos = this.getTodos();
    if (!todos.some((t) => t.id === id)) throw new ForkpointError({ code: 'NOT_FOUND', message: `no todo '${id}'` });
    await this.setTodos(todos.filter((t) => t.id !== id));
  }

  /** Variables and state of the last restored checkpoint. */
  get restoredCheckpoint(): { variables?: Record<string, unknown>; state?: unknown } {
    return this.restored;
  }

  // -- snapshots, forks, checkpoints ------------------------------------------

  /** Names the latest safe-fork-point: returns `label`, or `sfp:{index}`. */
  async snapshot(label?: string): Promise<string> {
    this.checkOpen();
    return callAsync(() => this.n.snapshot(label ?? null));
  }

  /**
   * A new agent (a sibling in the store, lineage = this one's + this id) from a
   * snapshot (default: a new one of the latest safe-fork-point). It never holds
   * a call without its result.
   */
  async fork(snapshotId?: string): Promise<Agent> {
    this.checkOpen();
    const sel = snapshotId ?? (await this.snapshot());
    call(() => this.n.snapshotJson(sel)); // SNAPSHOT_NOT_FOUND before anything is created
    const base = this.agentId.length > 90 ? this.agentId.slice(0, 90) : this.agentId;
    const id = `${base}-fork-${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
    const now = new Date().toISOString();
    const meta: Meta = { ...this.meta, agentId: id, createdAt: now, updatedAt: now, lineage: [...this.meta.lineage, this.agentId] };
    delete meta.forkedFrom;
    const n = await callAsync(() => this.n.fork(this.deps.store.dir, id, sel, JSON.stringify(meta)));
    const fork = new Agent(n, JSON.parse(n.openedJson()) as Opened, this.provider, this.deps);
    // The todo list comes along as it is now (not as it was at the snapshot).
    const todos = this.getTodos();
    if (JSON.stringify(todos) !== JSON.stringify(fork.getTodos())) await fork.setTodos(todos);
    return fork;
  }

  private async restoreCheckpoint(id: string): Promise<CheckpointInfo> {
    this.checkOpen();
    const cp = JSON.parse(call(() => this.n.checkpointJson(id))) as CheckpointInfo;
    await this.idle().catch(() => undefined);
    const ctx = JSON.parse(await callAsync(() => this.n.moveLeaf(cp.entryId))) as { messages: AgentMessage[] };
    this.liveInputs.clear();
    this.msgs = ctx.messages;
    this.pendingPermissions.clear();
    for (const c of this.openCalls()) if (c.state === 'APPROVAL_REQUIRED') this.pendingPermissions.add(c.id);
    this.restored = { variables: cp.variables as Record<string, unknown> | undefined, state: cp.state };
    void this.emit({ type: 'checkpoint_restored', channel: 'monitor', checkpointId: cp.id, entryId: cp.entryId });
    this.setBreakpoint('READY');
    this.setState('READY');
    await this.flush();
    return cp;
  }

  // -- closing ---------------------------------------------------------------

  private checkOpen(): void {
    if (this.closed) throw new ForkpointError({ code: 'CLOSED', message: `agent '${this.agentId}' is closed` });
  }

  /** Waits for the running step, then releases the agent (and its lock). */
  async close(): Promise<void> {
    if (this.closed) return;
    while (this.processing) await this.processing.catch(() => undefined);
    await this.flush().catch(() => undefined);
    this.closed = true;
    await this.log.close();
    await callAsync(() => this.n.close());
  }
}
