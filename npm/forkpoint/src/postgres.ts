/**
 * `PostgresStore`: agents in PostgreSQL, shared by workers on many hosts (one
 * writer per agent: an expiring lease with fencing tokens). The same `Agent`
 * runs over it as over `JSONStore`; the storage lives in the Rust core
 * (`forkpoint-pg`), driven on the addon's thread pool.
 */
import { ForkpointError, call, callAsync, toJson } from '@forkpoint/shared';
import type { AgentBackend, NativeAgentLike, Redactor } from '@forkpoint/shared';
import * as native from '../native/binding.js';
import type { AgentBytes, StoredAgentMeta } from './agent.js';
import { EventLog } from './eventlog.js';

/** Options of `PostgresStore.open`. */
export interface PostgresStoreOptions {
  /**
   * A PostgreSQL connection string: `postgres://user:password@host:5432/db` or `host=… user=… dbname=…`.
   * TLS as for libpq: `sslmode` (`disable`, `allow`, `prefer`: the default, `require`, `verify-ca`,
   * `verify-full`), `sslrootcert` (a PEM file, or `system`), `sslcert` and `sslkey`; `channel_binding`.
   */
  connectionString?: string;
  /** The PostgreSQL schema holding forkpoint's tables (created if missing; default `forkpoint`). */
  schema?: string;
  /**
   * How long an agent's lease lasts after its holder last renewed it, in ms
   * (default 10,000). An open agent renews it every third of that; a worker
   * that crashed or was cut off loses it this long after, and another may
   * then take the agent over.
   */
  leaseMs?: number;
  /**
   * How many connections the store opens at most (default 4); calls beyond
   * wait for one. Each call in flight also holds one of Node's libuv threads
   * (4 unless `UV_THREADPOOL_SIZE` says more): with many agents writing at
   * once, raise both (the benchmark uses 8 of each per worker).
   */
  poolSize?: number;
  /** How long opening a connection may take, in ms (default 10,000). */
  connectTimeoutMs?: number;
  /** The host name written into leases (default: this machine's). */
  host?: string;
  /** Filters the conversation and checkpoints before they are stored (as `JSONStoreOptions.redact`). */
  redact?: Redactor;
}

/**
 * Agents in PostgreSQL. Any worker on any host can resume any agent; exactly
 * one of them writes it at a time (a second gets `AGENT_LOCKED` naming the
 * holder), and a worker whose lease was taken over gets `LEASE_LOST` on its
 * next write, stores nothing more, and its `Agent` closes.
 *
 * ```js
 * const store = await PostgresStore.open('postgres://user@127.0.0.1:5432/agents', { leaseMs: 10_000 });
 * const agent = await Agent.resumeOrCreate('build-bot', config, { store, toolRegistry }, { strategy: 'crash' });
 * ```
 */
export class PostgresStore implements AgentBackend {
  /** The PostgreSQL schema holding the tables. */
  readonly schema: string;
  /** The store's filter of what agents persist. */
  readonly redact: Redactor | undefined;
  private readonly n: native.NativeStore;
  private closed = false;

  private constructor(n: native.NativeStore, schema: string, redact: Redactor | undefined) {
    this.n = n;
    this.schema = schema;
    this.redact = redact;
  }

  /**
   * Connects, and creates or migrates forkpoint's tables. `STORE_UNAVAILABLE`
   * when the server cannot be reached or refuses the credentials,
   * `UNSUPPORTED_FORMAT` when the tables were made by a newer forkpoint,
   * `INVALID_INPUT` for a bad connection string or option.
   */
  static async open(target: string | PostgresStoreOptions, opts: Omit<PostgresStoreOptions, 'connectionString'> = {}): Promise<PostgresStore> {
    const o: PostgresStoreOptions = typeof target === 'string' ? { ...opts, connectionString: target } : { ...target };
    if (typeof o.connectionString !== 'string' || o.connectionString === '') {
      throw new ForkpointError({ code: 'INVALID_INPUT', message: 'PostgresStore.open: a connection string is required' });
    }
    if (o.redact !== undefined && typeof o.redact !== 'function') {
      throw new ForkpointError({ code: 'INVALID_INPUT', message: 'PostgresStore: redact is a function (value, where) => value' });
    }
    const { redact, ...rest } = o;
    const n = await callAsync(() => native.NativeStore.openPostgres(toJson(rest)));
    return new PostgresStore(n, o.schema ?? 'forkpoint', redact);
  }

  private check(): void {
    if (this.closed) throw new ForkpointError({ code: 'CLOSED', message: 'the PostgresStore is closed' });
  }

  /** Every agent in the store (its `meta.json`), by creation time then id. */
  async list(): Promise<StoredAgentMeta[]> {
    this.check();
    return JSON.parse(await callAsync(() => this.n.listAsync())) as StoredAgentMeta[];
  }

  /** Whether the store holds agent `id` (`INVALID_ID` for an id that cannot be one). */
  async exists(id: string): Promise<boolean> {
    this.check();
    return callAsync(() => this.n.existsAsync(id));
  }

  /** Deletes an agent that no one runs (`AGENT_LOCKED` while a lease on it is live; its forks stay). */
  async delete(id: string): Promise<void> {
    this.check();
    await callAsync(() => this.n.removeAsync(id));
  }

  /**
   * Agent `id` whole (as a `JSONStore` keeps it: `meta.json`, `session.jsonl`,
   * `events.jsonl`), read without taking its lease (it may be running):
   * `AGENT_NOT_FOUND`.
   */
  async exportAgent(id: string): Promise<AgentBytes> {
    this.check();
    return callAsync(() => this.n.exportAgent(id));
  }

  /**
   * Creates agent `id` holding exactly these bytes, not left open:
   * `ALREADY_EXISTS` when the id is taken, `INVALID_INPUT` when they cannot be
   * an agent's (the meta must name `id`).
   */
  async importAgent(id: string, parts: AgentBytes): Promise<void> {
    this.check();
    await callAsync(() => this.n.importAgent(id, parts.meta, parts.session, parts.events));
  }

  /**
   * Agent `id`'s event log, followed from this host whoever writes it:
   * `subscribe({ since })` replays, then delivers each event its writer
   * stores (woken by PostgreSQL notifications, read by seq: a lost
   * notification delays an event by at most a second, never loses it).
   */
  async events(id: string): Promise<EventLog> {
    this.check();
    return EventLog.fromNative(await callAsync(() => this.n.follow(id)));
  }

  /**
   * Ends the store's use: later calls are `CLOSED`, idle connections are
   * closed. Close its agents first (an agent still open keeps its lease).
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.n.closeStore();
  }

  /** @internal What the store knows of agent `id`, without taking its lease (JSON). */
  inspectJson(id: string): Promise<string> {
    this.check();
    return callAsync(() => this.n.inspect(id));
  }

  /** @internal */
  validateAgentId(id: string): void {
    call(() => native.NativeStore.validateId(id));
  }

  /** @internal */
  async createAgent(metaJson: string, toolsJson: string): Promise<NativeAgentLike> {
    this.check();
    return callAsync(() => native.NativeAgent.create(this.n, metaJson, toolsJson));
  }

  /** @internal */
  async openAgent(id: string, toolsJson: string): Promise<NativeAgentLike> {
    this.check();
    return callAsync(() => native.NativeAgent.open(this.n, id, toolsJson));
  }

  /** @internal */
  async forkAgent(parent: NativeAgentLike, snapshot: string | null, toolsJson: string): Promise<NativeAgentLike> {
    this.check();
    return callAsync(() => (parent as native.NativeAgent).fork(this.n, snapshot, toolsJson));
  }

  /** @internal */
  agentLog(n: NativeAgentLike): EventLog {
    return EventLog.fromNative((n as native.NativeAgent).storedEvents());
  }
}
