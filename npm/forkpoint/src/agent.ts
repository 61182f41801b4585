/**
 * The durable agent in Node: the shared `Agent` driver over a crash-safe
 * `JSONStore` (the agent machine and the file store live in the Rust core).
 */
import { ForkpointError, call, callAsync, toJson } from '@forkpoint/shared';
import type { AgentBackend, NativeAgentLike, Redactor } from '@forkpoint/shared';
import { resolve } from 'node:path';
import * as native from '../native/binding.js';
import { EventLog } from './eventlog.js';

export { Agent, ToolRegistry, TemplateRegistry, ScriptedProvider } from '@forkpoint/shared';
export type {
  AgentLoggedEvent,
  AgentConfig,
  AgentDependencies,
  AgentInfo,
  AgentStatus,
  AgentState,
  AgentTemplate,
  AssistantReply,
  ChatResult,
  CheckpointArgs,
  CompleteOptions,
  ModelProvider,
  ModelRef,
  ModelRequest,
  Permission,
  RedactContext,
  RedactKind,
  Redactor,
  ResumeOptions,
  ResumeStrategy,
  ScriptedTurn,
  Tool,
  ToolCallView,
  ToolContext,
  ToolDefinition,
  TodoItem,
  UsageTotals,
} from '@forkpoint/shared';

/** Kode's config version, stored in `meta.json`. */
export const CONFIG_VERSION = 'forkpoint-1';

/** An agent's `meta.json` as listed by the store. */
export interface StoredAgentMeta {
  agentId: string;
  templateId?: string;
  createdAt?: string;
  lineage?: string[];
  model?: { provider: string; model: string; api?: string };
  corrupted?: boolean;
  [key: string]: unknown;
}

/**
 * An agent as bytes, exactly as a `JSONStore` keeps it: `meta.json`,
 * `session.jsonl` (whole lines) and `events.jsonl` (one line per event). What
 * `exportAgent` reads and `importAgent` writes, in any store.
 */
export interface AgentBytes {
  meta: Buffer;
  session: Buffer;
  events: Buffer;
}

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
  return JSON.parse(call(() => native.redactSecretsJson(toJson(value)))) as T;
}

/**
 * The embedded store: one flat directory per agent under `dir` (a fork is a
 * sibling), each with `meta.json`, `session.jsonl`, `events.jsonl` and `LOCK`.
 * An agent's lease is the OS lock on its `LOCK` file.
 */
export class JSONStore implements AgentBackend {
  readonly dir: string;
  /** The store's filter of what agents persist (`JSONStoreOptions.redact`). */
  readonly redact: Redactor | undefined;
  private readonly n: native.NativeStore;

  constructor(dir: string, opts: JSONStoreOptions = {}) {
    this.dir = resolve(dir);
    if (opts.redact !== undefined && typeof opts.redact !== 'function') {
      throw new ForkpointError({ code: 'INVALID_INPUT', message: 'JSONStore: redact is a function (value, where) => value' });
    }
    this.redact = opts.redact;
    this.n = new native.NativeStore(this.dir);
  }

  /** Every agent in the store (its `meta.json`). */
  list(): StoredAgentMeta[] {
    return JSON.parse(call(() => this.n.list())) as StoredAgentMeta[];
  }

  /** Whether the store holds agent `id` (`INVALID_ID` for an id that cannot be one). */
  exists(id: string): boolean {
    return call(() => this.n.exists(id));
  }

  /** Deletes an agent that no one runs (its forks stay). */
  delete(id: string): void {
    call(() => this.n.remove(id));
  }

  /**
   * Agent `id` whole, read without taking its lease (it may be running):
   * `AGENT_NOT_FOUND`. A session line still being written is left out.
   */
  exportAgent(id: string): Promise<AgentBytes> {
    return callAsync(() => this.n.exportAgent(id));
  }

  /**
   * Creates agent `id` holding exactly these bytes, not left open:
   * `ALREADY_EXISTS` when the id is taken, `INVALID_INPUT` when they cannot be
   * an agent's (the meta must name `id`).
   */
  async importAgent(id: string, parts: AgentBytes): Promise<void> {
    await callAsync(() => this.n.importAgent(id, parts.meta, parts.session, parts.events));
  }

  /** @internal What the store knows of agent `id`, without taking its lease (JSON). */
  inspectJson(id: string): Promise<string> {
    return callAsync(() => this.n.inspect(id));
  }

  /** @internal */
  validateAgentId(id: string): void {
    call(() => native.NativeStore.validateId(id));
  }

  /** @internal */
  async createAgent(metaJson: string, toolsJson: string): Promise<NativeAgentLike> {
    return callAsync(() => native.NativeAgent.create(this.n, metaJson, toolsJson));
  }

  /** @internal */
  async openAgent(id: string, toolsJson: string): Promise<NativeAgentLike> {
    return callAsync(() => native.NativeAgent.open(this.n, id, toolsJson));
  }

  /** @internal */
  async forkAgent(parent: NativeAgentLike, snapshot: string | null, toolsJson: string): Promise<NativeAgentLike> {
    return callAsync(() => (parent as native.NativeAgent).fork(this.n, snapshot, toolsJson));
  }

  /** @internal */
  agentLog(n: NativeAgentLike): EventLog {
    return EventLog.fromNative(call(() => (n as native.NativeAgent).events()));
  }
}
