/**
 * The durable agent: a Kode-style `Agent` driving the core's agent machine.
 *
 * Every decision (breakpoints, approvals, ids, sealing, queued delivery, forks,
 * overrides) is made by the machine in the Rust core; this class only carries
 * out its commands — call the provider, run the tool, abort — and feeds back
 * what happened. Every state the machine announces is durable before the side
 * effect it precedes. The same class runs in Node (over `JSONStore`) and in
 * browsers (over IndexedDB).
 */
import type { AgentEvent, AgentEventType, AgentMessage, AgentMeta, AgentModelRef, ErrorCode, ModelDelta, Permission as MetaPermission, Bookmark, Breakpoint, Channel, CheckpointInfo, ToolCallRecord, ToolCallState } from '@forkpoint/types';
import { ForkpointError, call, callAsync, toForkpointError, toJson } from './errors.js';
import { ENDS_ON_ABORT, isStreamingProvider } from './provider.js';
import type { StreamingProvider, WireRequest } from './provider.js';
import { EventBus } from './events.js';
import { BodyPieces, concat } from './normalize.js';
import { GroupCommit } from './group-commit.js';
import type { BookmarkedEvent, EventLog, LoggedEvent } from './events.js';

/** An agent's event as the log keeps it: its members, and `seq`, `timestamp`, `channel`. */
export type AgentLoggedEvent<K extends AgentEventType = AgentEventType> = Extract<AgentEvent, { type: K }> & {
  seq: number;
  timestamp: number;
  channel: Channel;
};

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
  /** The context (parsed when first read). */
  messages: AgentMessage[];
  tools: ToolDefinition[];
}

/** The assistant message a provider returns (pi's shape; missing fields are filled). */
export type AssistantReply = Partial<Omit<Extract<AgentMessage, { role: 'assistant' }>, 'content'>> & { content: unknown[] };

/** What a provider's `complete` gets besides the request. */
export interface CompleteOptions {
  /** Aborts when the agent is interrupted. */
  signal: AbortSignal;
  /**
   * Report pieces of the answer as they stream (text or thinking of content
   * block `index`); each becomes a `text_chunk` / `think_chunk` event, durable
   * as it comes (pieces that arrive while a write is running go out together).
   */
  onDelta(delta: ModelDelta): void;
}

/** A model provider: anything that answers a request with an assistant message. */
export interface ModelProvider {
  provider: string;
  model: string;
  api?: string;
  complete(request: ModelRequest, opts: CompleteOptions): Promise<AssistantReply>;
}

/** What `meta.json` keeps of a provider (never credentials). */
export type ModelRef = AgentModelRef;

/** A scripted turn: text, thinking and tool calls the "model" answers with. */
export interface ScriptedTurn {
  text?: string;
  thinking?: string;
  toolCalls?: Array<{ id?: string; name: string; arguments: Record<string, unknown> }>;
}

/**
 * A provider that answers from a script, for tests and demos: each call returns
 * the next turn (a turn may be a function of the request); when the turns run
 * out it answers `{ text: '' }`. Tool calls without an id get one from the agent.
 */
export class ScriptedProvider implements ModelProvider {
  readonly provider: string;
  readonly model: string;
  readonly api = 'scripted';
  /** The requests received, oldest first. */
  readonly requests: ModelRequest[] = [];
  private next = 0;

  private readonly stream: number;

  /** `stream`: report the text and thinking in pieces of this many characters as they "stream". */
  constructor(
    private readonly turns: Array<ScriptedTurn | ((request: ModelRequest) => ScriptedTurn | Promise<ScriptedTurn>)>,
    opts: { provider?: string; model?: string; stream?: number } = {},
  ) {
    this.provider = opts.provider ?? 'scripted';
    this.model = opts.model ?? 'scripted-1';
    this.stream = opts.stream ?? 0;
  }

  async complete(request: ModelRequest, opts: Partial<CompleteOptions> & { signal: AbortSignal }): Promise<AssistantReply> {
    this.requests.push(request);
    const t = this.turns[this.next++];
    const turn: ScriptedTurn = t === undefined ? { text: '' } : typeof t === 'function' ? await t(request) : t;
    if (opts.signal.aborted) throw new ForkpointError({ code: 'CLOSED', message: 'model call aborted' });
    const content: unknown[] = [];
    if (turn.thinking) content.push({ type: 'thinking', thinking: turn.thinking });
    if (turn.text !== undefined && (turn.text !== '' || !turn.toolCalls?.length)) content.push({ type: 'text', text: turn.text });
    for (const c of turn.toolCalls ?? []) content.push({ type: 'toolCall', ...(c.id ? { id: c.id } : {}), name: c.name, arguments: c.arguments });
    if (this.stream > 0 && opts.onDelta) {
      for (const [index, b] of (content as Array<{ type: string; text?: string; thinking?: string }>).entries()) {
        const kind = b.type === 'text' ? 'text' : b.type === 'thinking' ? 'thinking' : null;
        const all = (kind === 'text' ? b.text : b.thinking) ?? '';
        for (let i = 0; kind && i < all.length; i += this.stream) {
          opts.onDelta({ index, kind, text: all.slice(i, i + this.stream) });
          await new Promise((r) => setTimeout(r, 0));
          if (opts.signal.aborted) throw new ForkpointError({ code: 'CLOSED', message: 'model call aborted' });
        }
      }
    }
    return { content, stopReason: turn.toolCalls?.length ? 'toolUse' : 'stop' };
  }
}

// ---------------------------------------------------------------------------
// Tools, templates

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
export interface Tool<Input = any> {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  /** Always ask for a decision before running it. */
  requiresApproval?: boolean;
  run(input: Input, ctx: ToolContext): unknown;
}

/** The tools agents may use, by name. */
export class ToolRegistry {
  private readonly tools = new Map<string, Tool>();

  register<Input = any>(tool: Tool<Input>): this {
    if (!tool || typeof tool.name !== 'string' || !tool.name || typeof tool.run !== 'function') {
      throw new ForkpointError({ code: 'INVALID_INPUT', message: 'a tool has a name and a run function' });
    }
    this.tools.set(tool.name, tool as Tool);
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

  /** @internal The specs the agent machine decides with (JSON). */
  specsJson(): string {
    return toJson(
      [...this.tools.values()].map((t) => ({
        name: t.name,
        description: t.description ?? '',
        inputSchema: t.inputSchema ?? {},
        requiresApproval: !!t.requiresApproval,
      })),
    );
  }
}

/** Permission modes: `auto` runs every call; `approval` asks first (every call, or the tools listed). */
export type Permission = MetaPermission;

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

/** The native agent of a binding (napi or wasm): convert → call → convert. */
export interface NativeAgentLike {
  readonly id: string;
  events(): unknown;
  resume(optsJson: string): Promise<string>;
  input(inputJson: string): Promise<string>;
  /** Bytes of model call `ticket`'s streamed body (a step, JSON; the wasm build). */
  streamBytes?(ticket: number, bytes: Uint8Array): Promise<string>;
  /** Starts model call `ticket`'s stream writer on a thread of its own (napi); `onWrite` after each write. */
  streamStart?(ticket: number, intervalMs: number, onWrite: (n: number) => unknown): void;
  /** Queues body bytes (returns at once); `false` once the writer stopped. */
  streamPush?(ticket: number, bytes: Uint8Array): boolean;
  /** Ends the writer: `{steps, writes}` (JSON). */
  streamEnd?(ticket: number, discard: boolean): Promise<string>;
  /** The body of the request the last `modelStream` input answered, once: `[id, bytes | null, …]` (`BodyPieces`). */
  takeRequestBody(): Array<number | Uint8Array | null> | null;
  query(queryJson: string): string;
  completeReply(replyJson: string): string;
  setTools(toolsJson: string): void;
  changeMeta(changesJson: string): Promise<string>;
  restore(id: string): Promise<string>;
  /** Loads the whole session after a resume from the tail (off the main thread where it can). */
  loadWhole?(): Promise<unknown>;
  close(): Promise<unknown>;
}

/** What an agent store gives the `Agent` (implemented by `JSONStore` and the IndexedDB store). */
export interface AgentBackend {
  /** The store's filter of what agents persist. */
  readonly redact: Redactor | undefined;
  /** @internal */
  validateAgentId(id: string): void;
  /** @internal */
  createAgent(metaJson: string, toolsJson: string): Promise<NativeAgentLike>;
  /** @internal */
  openAgent(id: string, toolsJson: string): Promise<NativeAgentLike>;
  /** @internal */
  forkAgent(parent: NativeAgentLike, snapshot: string | null, toolsJson: string): Promise<NativeAgentLike>;
  /** @internal The agent's event log. */
  agentLog(n: NativeAgentLike): EventLog;
}

/** What agents are built with. */
export interface AgentDependencies<Store extends AgentBackend = AgentBackend> {
  store: Store;
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

/** Tokens and cost of every model answer in the context, summed. */
export interface UsageTotals {
  /** Model answers counted. */
  calls: number;
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  reasoning: number;
  totalTokens: number;
  /** Dollars (from the answers' `usage.cost`). */
  cost: number;
}

export interface AgentInfo {
  /** The model the next call goes to. */
  model: ModelRef;
  /** Tokens and cost so far (the current branch's answers; the first `info()` after a resume reads the history for it). */
  usage: UsageTotals;
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

/** An agent's `meta.json` as the store keeps it (generated from the core's `AgentMeta`). */
export type StoredMeta = AgentMeta;

type Cmd =
  | { kind: 'callModel'; ticket: number; system: string | null; messageCount: number; tools: string }
  | { kind: 'runTool'; ticket: number; callId: string; name: string; input: string }
  | { kind: 'abort' };

interface StepOut {
  commands: Cmd[];
  value: unknown;
  bookmark: Bookmark | null;
}

/** One write of a streamed answer: when its events were durable (ms since the epoch) and its last event's seq. */
export interface StreamWrite {
  at: number;
  lastSeq: number | null;
}

/** Where the bytes of a streamed body go (see `Agent.byteSink`). */
interface ByteSink {
  /** `false`: stop reading (the stream failed, or a write did). */
  push(bytes: Uint8Array): boolean;
  /** Writes what is left (drops it with `discard`); the steps the driver must see. */
  end(discard: boolean): Promise<StepOut[]>;
}

interface Status {
  agentId: string;
  state: AgentState;
  breakpoint: Breakpoint;
  stepCount: number;
  messageCount: number;
  lastSfpIndex: number;
  lastBookmark: Bookmark | null;
  lastDone: Bookmark | null;
  pending: string[];
  running: boolean;
}

function isProvider(m: unknown): m is ModelProvider {
  return !!m && typeof (m as ModelProvider).complete === 'function';
}

function refOf(m: ModelProvider | ModelRef): ModelRef {
  const r: ModelRef = { provider: String(m.provider), model: String(m.model) };
  if (m.api) r.api = String(m.api);
  return r;
}

/** A request whose messages are read from the machine when first asked for. */
function request(c: Extract<Cmd, { kind: 'callModel' }>, read: (upTo: number) => AgentMessage[]): ModelRequest {
  let messages: AgentMessage[] | undefined;
  const r = { tools: JSON.parse(c.tools) as ToolDefinition[] } as ModelRequest;
  if (c.system !== null) r.system = c.system;
  Object.defineProperty(r, 'messages', {
    enumerable: true,
    get: () => (messages ??= read(c.messageCount)),
    set: (v: AgentMessage[]) => {
      messages = v;
    },
  });
  return r;
}

// ---------------------------------------------------------------------------
// Agent

/** A durable agent (one process or tab runs it at a time: it holds the agent's lease). */
export class Agent {
  /** @internal Told each streamed call's write times (the addon's writer thread); for `bench/stream.mjs`. */
  streamWrites?: (writes: StreamWrite[]) => void;
  readonly agentId: string;
  private readonly n: NativeAgentLike;
  /** The pieces of the last request body (kept conversion, sent again as they are). */
  private readonly bodyPieces = new BodyPieces();
  private readonly deps: AgentDependencies;
  private readonly log: EventLog;
  private readonly bus: EventBus;
  private provider: ModelProvider;
  /** Commands being carried out (a model call or a tool run and what follows it). */
  private readonly work = new Set<Promise<void>>();
  private failure: unknown = null;
  private readonly aborts = new Set<AbortController>();
  private interrupting: Promise<void> | null = null;
  /** Model calls in flight (close() stops them). */
  private modelCalls = 0;
  private closed = false;
  private restored: { variables?: Record<string, unknown>; state?: unknown } = {};
  private whole = false;
  /** The unfiltered inputs of the latest answer's calls, for their runs in this process (with a `redact` hook). */
  private readonly liveInputs = new Map<string, unknown>();

  /** Workflow checkpoints: create, list, lastSuccessful, restore (the `/checkpoint` flow). */
  readonly checkpoints: {
    create(args: CheckpointArgs): Promise<string>;
    list(): Array<{ executionId: string; checkpoints: CheckpointInfo[] }>;
    lastSuccessful(executionId: string, beforeStep?: number): CheckpointInfo | null;
    restore(id: string): Promise<CheckpointInfo>;
  };

  private constructor(n: NativeAgentLike, provider: ModelProvider, deps: AgentDependencies) {
    this.n = n;
    this.deps = deps;
    this.agentId = n.id;
    this.provider = provider;
    this.log = deps.store.agentLog(n);
    this.bus = new EventBus(this.log);
    this.checkpoints = {
      create: async (args) => {
        this.checkOpen();
        const stored = { ...args };
        if (stored.variables !== undefined) stored.variables = this.redact(stored.variables, { kind: 'checkpointVariables' }) as Record<string, unknown>;
        if (stored.state !== undefined) stored.state = this.redact(stored.state, { kind: 'checkpointState' });
        if (stored.context !== undefined) stored.context = this.redact(stored.context, { kind: 'checkpointContext' });
        const s = await this.input({ kind: 'checkpoint', args: stored });
        return (s.value as CheckpointInfo).id;
      },
      list: () => this.query({ kind: 'checkpoints' }),
      lastSuccessful: (executionId, beforeStep) => this.query({ kind: 'lastSuccessful', executionId, beforeStep }),
      restore: (id) => this.restoreCheckpoint(id),
    };
  }

  // -- creation and resume ---------------------------------------------------

  /** Creates an agent in the store (`INVALID_ID`; `ALREADY_EXISTS` if the id is taken). */
  static async create(config: AgentConfig, deps: AgentDependencies): Promise<Agent> {
    const template = config.templateId ? Agent.template(config.templateId, deps) : undefined;
    if (config.agentId !== undefined) deps.store.validateAgentId(config.agentId);
    const model = config.model ?? template?.model;
    if (!model) throw new ForkpointError({ code: 'INVALID_INPUT', message: 'an agent needs a model (config.model or a template with one)' });
    const provider = Agent.providerOf(model, deps);
    const meta = {
      agentId: config.agentId ?? '',
      templateId: config.templateId ?? null,
      model: refOf(provider),
      tools: config.tools ?? template?.tools ?? [],
      permission: config.permission ?? template?.permission ?? { mode: 'auto' },
      systemPrompt: config.systemPrompt ?? template?.systemPrompt ?? null,
      metadata: config.metadata ?? {},
    };
    const n = await deps.store.createAgent(toJson(meta), deps.toolRegistry.specsJson());
    const agent = new Agent(n, provider, deps);
    agent.log.pump();
    return agent;
  }

  /**
   * Reopens an agent with `config` (credentials and the provider come from it;
   * what the store keeps fills the rest). `strategy: 'crash'` seals every call
   * left without a result; `'manual'` (default) seals nothing and reports them.
   */
  static async resume(agentId: string, config: AgentConfig, deps: AgentDependencies, opts: ResumeOptions = {}): Promise<Agent> {
    return Agent.reopen(agentId, config, deps, opts);
  }

  /** Reopens an agent from what the store keeps; `overrides` change model, permission, tools, prompt for real. */
  static async resumeFromStore(
    agentId: string,
    deps: AgentDependencies,
    opts: ResumeOptions & { overrides?: Partial<AgentConfig> } = {},
  ): Promise<Agent> {
    return Agent.reopen(agentId, opts.overrides ?? {}, deps, opts);
  }

  /** `resumeFromStore` (with `config` as overrides), or `create` when the store has no such agent. */
  static async resumeOrCreate(
    agentId: string,
    config: AgentConfig,
    deps: AgentDependencies,
    opts: ResumeOptions & { overrides?: Partial<AgentConfig> } = {},
  ): Promise<Agent> {
    try {
      return await Agent.reopen(agentId, { ...config, ...opts.overrides }, deps, opts);
    } catch (e) {
      if (e instanceof ForkpointError && e.code === 'AGENT_NOT_FOUND') return Agent.create({ ...config, agentId }, deps);
      throw e;
    }
  }

  private static template(id: string, deps: AgentDependencies): AgentTemplate {
    if (!deps.templateRegistry) throw new ForkpointError({ code: 'TEMPLATE_NOT_FOUND', message: `template '${id}' needs a templateRegistry in the dependencies` });
    return deps.templateRegistry.get(id);
  }

  /**
   * The `modelFactory` used when the dependencies have none: the package sets
   * it to build a `createProvider` provider from the stored `{provider, model,
   * api}` (keys from the environment).
   */
  static defaultModelFactory: ((ref: ModelRef) => ModelProvider) | undefined;

  private static providerOf(model: ModelProvider | ModelRef, deps: AgentDependencies): ModelProvider {
    if (isProvider(model)) return model;
    if (!deps.modelFactory && Agent.defaultModelFactory) return Agent.defaultModelFactory(model);
    if (!deps.modelFactory) {
      throw new ForkpointError({ code: 'INVALID_INPUT', message: `model ${model.provider}/${model.model} is a reference: pass a provider, or a modelFactory in the dependencies` });
    }
    return deps.modelFactory(model);
  }

  private static async reopen(agentId: string, config: Partial<AgentConfig>, deps: AgentDependencies, opts: ResumeOptions): Promise<Agent> {
    deps.store.validateAgentId(agentId);
    const n = await deps.store.openAgent(agentId, deps.toolRegistry.specsJson());
    let agent: Agent;
    try {
      const meta = JSON.parse(call(() => n.query('{"kind":"meta"}'))) as StoredMeta;
      if (meta.templateId) Agent.template(meta.templateId, deps);
      const provider = Agent.providerOf(config.model ?? meta.model, deps);
      const changes: Record<string, unknown> = { model: refOf(provider) };
      if (config.permission) changes.permission = config.permission;
      if (config.tools) changes.tools = config.tools;
      if (config.systemPrompt !== undefined) changes.systemPrompt = config.systemPrompt;
      if (config.metadata) changes.metadata = config.metadata;
      agent = new Agent(n, provider, deps);
      const out = JSON.parse(
        await callAsync(() => n.resume(toJson({ strategy: opts.strategy ?? 'manual', changes, autoRun: !!opts.autoRun }))),
      ) as { step: StepOut };
      agent.carryOut(out.step);
    } catch (e) {
      await n.close().catch(() => undefined);
      throw e;
    }
    return agent;
  }

  // -- the driver ------------------------------------------------------------

  private query<T>(q: Record<string, unknown>): T {
    return JSON.parse(call(() => this.n.query(toJson(q)))) as T;
  }

  /** Loads the whole session (once) before a query that needs the history. */
  private async loadWhole(): Promise<void> {
    if (this.whole) return;
    const n = this.n;
    if (n.loadWhole) await callAsync(() => n.loadWhole!());
    this.whole = true;
  }

  private status_(): Status {
    return this.query<Status>({ kind: 'status' });
  }

  /** Feeds an input to the machine; carries out the commands it answers with. */
  private async input(i: Record<string, unknown>): Promise<StepOut> {
    let text: string;
    try {
      text = await callAsync(() => this.n.input(toJson(i)));
    } catch (e) {
      this.fenced(e);
      throw e;
    } finally {
      this.log.pump(); // live listeners see what became durable
    }
    const step = JSON.parse(text) as StepOut;
    this.carryOut(step);
    return step;
  }

  private carryOut(step: StepOut): void {
    this.log.pump();
    for (const c of step.commands) {
      if (c.kind === 'abort') {
        for (const ac of this.aborts) ac.abort();
        continue;
      }
      const p: Promise<void> = (c.kind === 'callModel' ? this.callModel(c) : this.runTool(c))
        .catch((e) => {
          this.fenced(e);
          this.failure ??= e;
        })
        .finally(() => {
          this.work.delete(p);
        });
      this.work.add(p);
    }
  }

  private async callModel(c: Extract<Cmd, { kind: 'callModel' }>): Promise<void> {
    this.modelCalls++;
    try {
      await this.callModel_(c);
    } finally {
      this.modelCalls--;
    }
  }

  private async callModel_(c: Extract<Cmd, { kind: 'callModel' }>): Promise<void> {
    if (isStreamingProvider(this.provider) && (this.n.streamStart || this.n.streamBytes) && !this.deps.store.redact) {
      return this.callModelStreaming(c, this.provider);
    }
    const ac = new AbortController();
    this.aborts.add(ac);
    let reply: AssistantReply;
    // Streamed pieces, fed in order (group commit).
    const pieces = new GroupCommit<ModelDelta>(
      async (deltas) => {
        await this.input({ kind: 'modelDeltas', ticket: c.ticket, deltas });
        return false;
      },
      0,
      () => ac.signal.aborted,
    );
    const onDelta = (d: ModelDelta) => {
      if (ac.signal.aborted) return;
      pieces.push({ index: Number(d.index), kind: d.kind, text: String(d.text) });
    };
    try {
      const read = (upTo: number) => this.query<AgentMessage[]>({ kind: 'messages', upTo });
      const pending = this.provider.complete(request(c, read), { signal: ac.signal, onDelta });
      // A provider that ignores the signal does not hold up an interrupt.
      reply = await Promise.race([
        pending,
        new Promise<never>((_, reject) => {
          const stop = () => reject(new ForkpointError({ code: 'CLOSED', message: 'model call interrupted' }));
          if (ac.signal.aborted) stop();
          else ac.signal.addEventListener('abort', stop, { once: true });
        }),
      ]);
    } catch (e) {
      if (ac.signal.aborted) return;
      await this.input({ kind: 'modelError', ticket: c.ticket, message: String((e as Error)?.message ?? e) });
      this.failure ??= e;
      return;
    } finally {
      this.aborts.delete(ac);
    }
    if (ac.signal.aborted) return;
    await pieces.end(); // the pieces are durable before the answer
    if (pieces.failed !== null) {
      // A piece the machine refused ends the call as a failed one.
      const fed = pieces.failed;
      await this.input({ kind: 'modelError', ticket: c.ticket, message: String((fed as Error)?.message ?? fed) });
      throw fed;
    }
    let answer: unknown = reply;
    if (this.deps.store.redact) {
      // Stored filtered; this process runs the tools with what the model wrote.
      const m = JSON.parse(call(() => this.n.completeReply(toJson(reply)))) as { content: Array<Record<string, unknown>> };
      this.liveInputs.clear();
      m.content = m.content.map((b) => {
        if (b?.type !== 'toolCall') return b;
        this.liveInputs.set(String(b.id), b.arguments);
        return { ...b, arguments: this.redact(b.arguments, { kind: 'toolInput', toolName: String(b.name), callId: String(b.id) }) };
      });
      answer = this.redact(m, { kind: 'assistantMessage' });
    }
    try {
      await this.input({ kind: 'modelReply', ticket: c.ticket, reply: answer });
    } catch (e) {
      // Refused before the machine saw it (JSON it cannot read: a lone
      // surrogate, too deep): the call ends as failed (a no-op if it did see it).
      if (e instanceof ForkpointError && e.code === 'INVALID_INPUT') {
        await this.input({ kind: 'modelError', ticket: c.ticket, message: `the model's answer cannot be stored: ${e.message}` });
      }
      throw e;
    }
  }

  /**
   * A model call whose stream the machine decodes: it builds the request, the
   * provider sends it, the body's bytes go to the machine as they come (those
   * that arrive while a write runs go out together: group commit), then the
   * end. The machine says when a failed stream may start over.
   */
  private async callModelStreaming(c: Extract<Cmd, { kind: 'callModel' }>, p: StreamingProvider): Promise<void> {
    const ac = new AbortController();
    this.aborts.add(ac);
    type Verdict = { retry: boolean; code: ErrorCode; message: string };
    const fail = (v: Verdict) => {
      this.failure ??= new ForkpointError({ code: v.code, message: v.message });
    };
    try {
      for (let attempt = 0; ; attempt++) {
        const open = await this.input({
          kind: 'modelStream',
          ticket: c.ticket,
          api: p.wire.api,
          provider: p.provider,
          model: p.model,
          options: p.wire.options,
          pricing: p.wire.pricing,
          secrets: p.secrets(),
        });
        const head = open.value as Omit<WireRequest, 'body'> | null;
        // Taken and read at once, whatever comes next: the native side now
        // counts this body's pieces as given (the next body names them by id).
        const flat = head ? this.n.takeRequestBody() : null;
        const parts = flat ? this.bodyPieces.parts(flat) : null;
        if (!head || !parts || ac.signal.aborted) return; // the call ended meanwhile
        const req: WireRequest = { ...head, body: parts };
        let body: AsyncIterable<Uint8Array>;
        try {
          body = await p.send(req, ac.signal);
        } catch (e) {
          if (ac.signal.aborted) return;
          const err = toForkpointError(e);
          await this.input({ kind: 'modelError', ticket: c.ticket, message: err.message, code: err.code });
          this.failure ??= err;
          return;
        }
        let verdict: Verdict | null = null;
        let broke: ForkpointError | null = null;
        let refused: unknown = null;
        let sink: ByteSink;
        try {
          sink = this.byteSink(c.ticket, p.wire.commitIntervalMs, ac.signal);
        } catch (e) {
          // The body is not read: release it, and the call ends as failed.
          void Promise.resolve(body[Symbol.asyncIterator]().return?.()).catch(() => {});
          const err = toForkpointError(e);
          await this.input({ kind: 'modelError', ticket: c.ticket, message: err.message, code: err.code });
          this.failure ??= err;
          return;
        }
        // Read until the end, a stop, or the abort: a body that ignores the
        // signal does not hold up an interrupt or close().
        const it = body[Symbol.asyncIterator]();
        const aborted = new Promise<null>((resolve) => {
          if (ac.signal.aborted) resolve(null);
          else ac.signal.addEventListener('abort', () => resolve(null), { once: true });
        });
        try {
          if ((body as { [ENDS_ON_ABORT]?: boolean })[ENDS_ON_ABORT] === true) {
            // The provider's own body: a read settles on abort by itself, so
            // each piece costs one promise.
            for (;;) {
              const r = await it.next();
              if (r.done || !sink.push(r.value) || ac.signal.aborted) break;
            }
          } else {
            for (;;) {
              const r = await Promise.race([it.next(), aborted]);
              if (r === null || r.done) break;
              if (!sink.push(r.value) || ac.signal.aborted) break;
            }
          }
        } catch (e) {
          broke = toForkpointError(e);
        }
        if (broke === null) void Promise.resolve(it.return?.()).catch(() => {}); // stops a body not read to its end
        try {
          for (const step of await sink.end(ac.signal.aborted)) {
            this.carryOut(step);
            if (step.value) verdict = step.value as Verdict;
          }
        } catch (e) {
          refused = e;
        }
        if (ac.signal.aborted) return;
        if (refused !== null) {
          // A piece the machine refused (over a limit): the call ends as failed.
          const err = toForkpointError(refused);
          await this.input({ kind: 'modelError', ticket: c.ticket, message: err.message, code: err.code });
          throw err;
        }
        if (verdict === null) {
          const end = await this.input({ kind: 'modelStreamEnd', ticket: c.ticket, ...(broke ? { error: broke.message } : {}) });
          verdict = (end.value as Verdict | null) ?? null;
          if (verdict === null) return; // stored
        }
        const v: Verdict = verdict;
        if (!v.retry || attempt >= p.maxRetries) {
          if (v.retry) await this.input({ kind: 'modelError', ticket: c.ticket, message: v.message, code: v.code });
          fail(v);
          return;
        }
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, p.retryWaitMs(attempt, null));
          ac.signal.addEventListener('abort', () => {
            clearTimeout(t);
            resolve();
          }, { once: true });
        });
        if (ac.signal.aborted) return;
      }
    } finally {
      this.aborts.delete(ac);
    }
  }

  /**
   * Where a streamed body's bytes go. With the addon, to the call's writer
   * thread (decoded and made durable there, group commit off the JavaScript
   * thread); otherwise through `streamBytes`, one write at a time, what comes
   * meanwhile in the next (group commit on this thread).
   */
  private byteSink(ticket: number, intervalMs: number, signal: AbortSignal): ByteSink {
    const n = this.n;
    if (n.streamStart && n.streamPush && n.streamEnd) {
      const [start, push, end] = [n.streamStart.bind(n), n.streamPush.bind(n), n.streamEnd.bind(n)];
      // Told after each write, possibly after the call ended or the agent closed.
      const written = () => {
        if (this.closed) return;
        try {
          this.log.pump();
        } catch {
          // the log closed meanwhile: nothing to hand out
        }
      };
      call(() => start(ticket, intervalMs, written));
      return {
        // Per piece: no wrapper (the read loop turns an error into a ForkpointError).
        push: (bytes) => push(ticket, bytes),
        end: async (discard) => {
          try {
            const out = JSON.parse(await callAsync(() => end(ticket, discard))) as { steps: StepOut[]; writes: StreamWrite[] };
            this.streamWrites?.(out.writes);
            return out.steps;
          } finally {
            this.log.pump();
          }
        },
      };
    }
    const steps: StepOut[] = [];
    const stream = n.streamBytes!.bind(n);
    const bytes = new GroupCommit<Uint8Array>(
      async (chunks) => {
        const all = chunks.length === 1 ? chunks[0]! : concat(chunks);
        let text: string;
        try {
          text = await callAsync(() => stream(ticket, all));
        } finally {
          this.log.pump();
        }
        const step = JSON.parse(text) as StepOut;
        if (step.value || step.commands.length > 0) steps.push(step);
        return !!step.value;
      },
      intervalMs,
      () => signal.aborted,
    );
    return {
      push: (chunk) => {
        bytes.push(chunk);
        return !bytes.stopped && bytes.failed === null;
      },
      end: async () => {
        await bytes.end();
        if (bytes.failed !== null) throw bytes.failed;
        return steps;
      },
    };
  }

  private async runTool(c: Extract<Cmd, { kind: 'runTool' }>): Promise<void> {
    const tool = this.deps.toolRegistry.get(c.name);
    const ac = new AbortController();
    this.aborts.add(ac);
    let value: unknown;
    let error: unknown;
    let threw = false;
    try {
      if (!tool) throw new Error(`tool '${c.name}' is not in the tool registry`);
      const input = this.liveInputs.has(c.callId) ? this.liveInputs.get(c.callId) : JSON.parse(c.input);
      value = await new Promise((resolveRun, rejectRun) => {
        const stop = () => rejectRun(new ForkpointError({ code: 'CLOSED', message: 'interrupted' }));
        if (ac.signal.aborted) return stop();
        ac.signal.addEventListener('abort', stop, { once: true });
        Promise.resolve()
          .then(() =>
            tool.run(input, {
              agentId: this.agentId,
              callId: c.callId,
              signal: ac.signal,
              emit: async (eventType, data) => {
                const s = await this.input({ kind: 'toolEvent', callId: c.callId, eventType, data: data === undefined ? null : data });
                return s.bookmark as Bookmark;
              },
            }),
          )
          .then(resolveRun, rejectRun);
      });
    } catch (e) {
      threw = true;
      error = e;
    } finally {
      this.aborts.delete(ac);
    }
    this.liveInputs.delete(c.callId);
    if (ac.signal.aborted || this.closed) return; // interrupted: the machine sealed it
    const where = { kind: 'toolResult', toolName: c.name, callId: c.callId } as const;
    let outcome: Record<string, unknown>;
    if (!threw) {
      value = this.redact(value, { ...where, isError: false });
      try {
        const text = value === undefined ? 'null' : toJson(value);
        outcome = { kind: 'value', value: text ?? 'null' };
      } catch (e) {
        outcome = { kind: 'notJson', message: String((e as Error)?.message ?? e) };
      }
    } else {
      outcome = { kind: 'error', message: String(this.redact(String((error as Error)?.message ?? error), { ...where, isError: true })) };
    }
    try {
      await this.input({ kind: 'toolDone', ticket: c.ticket, outcome });
    } catch (e) {
      if (!(e instanceof ForkpointError) || e.code !== 'INVALID_INPUT') throw e;
      // What the tool gave cannot be read back (a lone surrogate, too deep): the call fails with why.
      await this.input({ kind: 'toolDone', ticket: c.ticket, outcome: { kind: 'error', message: `the tool's result cannot be stored: ${e.message}` } });
    }
  }

  // -- events ----------------------------------------------------------------

  /**
   * Calls `handler` for each live event of a type (typed by the event), or of a
   * whole channel; returns the unsubscribe function.
   */
  on<K extends AgentEventType>(type: K, handler: (event: AgentLoggedEvent<K>) => void): () => void;
  on(channel: Channel, handler: (event: AgentLoggedEvent) => void): () => void;
  on(type: string, handler: (event: AgentLoggedEvent) => void): () => void {
    return this.bus.on(type, handler as (event: LoggedEvent) => void);
  }

  /**
   * The agent's events on `channels` (default all), from after `since` (from
   * storage, however old) then live: exactly once, in seq order.
   */
  subscribe(channels?: Channel[], opts: { since?: Bookmark | number | null; kinds?: string[] } = {}): AsyncIterableIterator<BookmarkedEvent> {
    return this.bus.subscribe({ channels, kinds: opts.kinds, since: opts.since });
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

  // -- messages --------------------------------------------------------------

  /**
   * Sends a user message; resolves to its id once it is durable. The agent
   * starts working on it (or queues it, durably, while busy).
   */
  async send(input: string | unknown[]): Promise<string> {
    this.checkOpen();
    const content = this.redact(typeof input === 'string' ? [{ type: 'text', text: input }] : input, { kind: 'userMessage' });
    const s = await this.input({ kind: 'send', content });
    return s.value as string;
  }

  /** Sends a message and waits until the agent is idle or waits for a decision. */
  async chat(input: string | unknown[]): Promise<ChatResult> {
    await this.send(input);
    await this.idle();
    return this.result();
  }

  private result(): ChatResult {
    const s = this.status_();
    return {
      status: s.pending.length > 0 ? 'paused' : 'ok',
      text: this.query<string>({ kind: 'lastText' }),
      last: s.lastDone,
      permissionIds: s.pending,
    };
  }

  /** Resolves when the agent is idle or waits for a decision (rejects with the loop's error). */
  async idle(): Promise<void> {
    while (this.work.size > 0) await Promise.allSettled([...this.work]);
    if (this.failure) {
      const f = this.failure;
      this.failure = null;
      throw f;
    }
  }

  /** Allows or denies a call waiting for a decision (`PERMISSION_NOT_PENDING` otherwise). */
  async decide(permissionId: string, decision: 'allow' | 'deny', note?: string): Promise<void> {
    this.checkOpen();
    if (decision !== 'allow' && decision !== 'deny') throw new ForkpointError({ code: 'INVALID_INPUT', message: "decision is 'allow' or 'deny'" });
    await this.input({ kind: 'decide', callId: permissionId, allow: decision === 'allow', note });
  }

  /** Stops the model call and running tools; every open call is sealed with `note`. */
  interrupt(opts: { note?: string } = {}): Promise<void> {
    this.checkOpen();
    if (!this.interrupting) {
      this.interrupting = (async () => {
        this.liveInputs.clear();
        await this.input({ kind: 'interrupt', note: opts.note });
        while (this.work.size > 0) await Promise.allSettled([...this.work]);
        this.failure = null;
      })().finally(() => {
        this.interrupting = null;
      });
    }
    return this.interrupting;
  }

  // -- state -----------------------------------------------------------------

  async status(): Promise<AgentStatus> {
    const s = this.status_();
    return {
      agentId: this.agentId,
      state: s.state,
      stepCount: s.stepCount,
      lastSfpIndex: s.lastSfpIndex,
      lastBookmark: s.lastBookmark,
      breakpoint: s.breakpoint,
    };
  }

  async info(): Promise<AgentInfo> {
    const s = this.status_();
    const m = this.query<StoredMeta>({ kind: 'meta' });
    // Kept in the resume state; when it has none, the history says.
    let usage = this.query<UsageTotals | null>({ kind: 'usage' });
    if (usage === null) {
      await this.loadWhole();
      usage = this.query<UsageTotals>({ kind: 'usage' });
    }
    return {
      agentId: this.agentId,
      templateId: m.templateId,
      createdAt: m.createdAt,
      lineage: [...m.lineage],
      configVersion: m.configVersion,
      messageCount: s.messageCount,
      lastSfpIndex: s.lastSfpIndex,
      lastBookmark: s.lastBookmark,
      breakpoint: s.breakpoint,
      model: { ...m.model },
      usage,
    };
  }

  /**
   * Switches the model from the next call on: a provider, or a reference the
   * `modelFactory` turns into one. Stored in `meta.json`; the next request is
   * converted from whatever providers the context came from (the report is a
   * `request_converted` event).
   */
  async setModel(model: ModelProvider | ModelRef): Promise<void> {
    this.checkOpen();
    const provider = Agent.providerOf(model, this.deps);
    let text: string;
    try {
      text = await callAsync(() => this.n.changeMeta(toJson({ model: refOf(provider) })));
    } catch (e) {
      this.fenced(e);
      throw e;
    }
    const step = JSON.parse(text) as StepOut;
    this.provider = provider;
    this.carryOut(step);
  }

  /** The conversation at the current leaf (pi message shapes). */
  async messages(): Promise<AgentMessage[]> {
    await this.loadWhole();
    return this.query<AgentMessage[]>({ kind: 'messages' });
  }

  /** Every tool call of the current branch with its audit trail. */
  async toolCalls(): Promise<ToolCallView[]> {
    await this.loadWhole();
    return this.query<ToolCallRecord[]>({ kind: 'records' }).map((r) => ({
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
    return this.query<{ todos: TodoItem[] } | null>({ kind: 'todos' })?.todos ?? [];
  }

  /** Replaces the todo list (`INVALID_INPUT` for duplicate ids or more than one in progress); durable on resolve. */
  async setTodos(todos: TodoItem[]): Promise<void> {
    this.checkOpen();
    await this.input({ kind: 'setTodos', todos });
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
    const s = await this.input({ kind: 'snapshot', label });
    return s.value as string;
  }

  /**
   * A new agent (a sibling in the store, lineage = this one's + this id) from a
   * snapshot (default: a new one of the latest safe-fork-point). It never holds
   * a call without its result; it gets this agent's todo list as it is now.
   */
  async fork(snapshotId?: string): Promise<Agent> {
    this.checkOpen();
    const n = await this.deps.store.forkAgent(this.n, snapshotId ?? null, this.deps.toolRegistry.specsJson());
    this.log.pump();
    const fork = new Agent(n, this.provider, this.deps);
    fork.log.pump();
    return fork;
  }

  private async restoreCheckpoint(id: string): Promise<CheckpointInfo> {
    this.checkOpen();
    this.query({ kind: 'checkpoint', id }); // NOT_FOUND before anything waits
    await this.idle().catch(() => undefined);
    let out: { checkpoint: CheckpointInfo; step: StepOut };
    try {
      out = JSON.parse(await callAsync(() => this.n.restore(id))) as { checkpoint: CheckpointInfo; step: StepOut };
    } catch (e) {
      this.fenced(e);
      throw e;
    } finally {
      this.log.pump();
    }
    this.liveInputs.clear();
    const cp = out.checkpoint;
    this.restored = { variables: cp.variables as Record<string, unknown> | undefined, state: cp.state };
    this.carryOut(out.step);
    return cp;
  }

  // -- closing ---------------------------------------------------------------

  /**
   * Another worker took the lease over (`LEASE_LOST`, a store shared by
   * hosts): nothing this object writes can be stored any more, so it closes
   * (running tools are aborted; later calls are `CLOSED`).
   */
  private fenced(e: unknown): void {
    if (!(e instanceof ForkpointError) || e.code !== 'LEASE_LOST' || this.closed) return;
    this.closed = true;
    for (const ac of this.aborts) ac.abort();
    void this.log.close().catch(() => undefined);
    void callAsync(() => this.n.close()).catch(() => undefined);
  }

  private checkOpen(): void {
    if (this.closed) throw new ForkpointError({ code: 'CLOSED', message: `agent '${this.agentId}' is closed` });
  }

  /** Waits for the running step, then releases the agent (and its lease). */
  async close(): Promise<void> {
    if (this.closed) return;
    // A model call being answered stops as interrupt() stops it (what
    // streamed is kept as `model_partial`, reason 'interrupted'; `run()` after
    // a resume makes the call again): a provider that hangs would otherwise
    // hold close() for its whole timeout. Running tools finish first.
    if (this.modelCalls > 0) await this.interrupt({ note: 'Closed while the model was answering' }).catch(() => {});
    while (this.work.size > 0) await Promise.allSettled([...this.work]);
    this.closed = true;
    await this.log.close();
    await callAsync(() => this.n.close());
  }
}
