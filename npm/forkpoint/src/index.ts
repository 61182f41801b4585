/**
 * forkpoint for Node: load, resume, branch and write pi-format agent sessions.
 *
 * ```js
 * const { SessionLoader, loadSessionLazy, SessionWriter } = require('forkpoint');
 * const s = await SessionLoader.open('session.jsonl');
 * console.log(s.getMetadata().leafId, s.getContext().length);
 * ```
 */
import type {
  AnySessionEntry,
  BatchInfo,
  LazyOptions,
  LimitOptions,
  LoadOptions,
  SessionInfo,
  WriterOpenReport,
  WriterOptions,
} from '@forkpoint/types';
import { LazyView, SessionView, call, callAsync, toJson } from '@forkpoint/shared';
import * as native from '../native/binding.js';

export { ForkpointError, EventBus } from '@forkpoint/shared';
export type { SessionBranch, ContextOptions, LoggedEvent, NewEvent, BookmarkedEvent, SubscribeOptions } from '@forkpoint/shared';
export type * from '@forkpoint/types';

const json = (o: unknown): string | undefined => (o === undefined ? undefined : toJson(o));

/** A session file loaded whole (in milliseconds, even for very large files). */
export class SessionLoader extends SessionView {
  /** The file this session was loaded from, if any. */
  readonly path: string | undefined;

  private constructor(n: native.NativeSession, path?: string) {
    super(n);
    this.path = path;
  }

  /**
   * Loads a session file (`.jsonl`, or `.jsonl.gz` detected by content) on a
   * worker thread. Versions 1 and 2 are migrated in memory; the file is never
   * changed. Throws `ForkpointError` (`CORRUPTED_DATA` with path/line/offset,
   * `UNSUPPORTED_FORMAT`, `NOT_FOUND`, `LIMIT_EXCEEDED`, ...).
   */
  static async open(path: string, opts?: LoadOptions): Promise<SessionLoader> {
    const n = await callAsync(() => native.NativeSession.open(path, json(opts)));
    return new SessionLoader(n, path);
  }

  /** Loads a session from its text or bytes. */
  static fromJsonl(data: string | Uint8Array, opts?: LoadOptions): SessionLoader {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    return new SessionLoader(call(() => native.NativeSession.fromBytes(bytes, json(opts))));
  }
}

/** A batch from `IncrementalSessionLoader.loadNextBatch()`. */
export interface EntryBatch {
  entries: AnySessionEntry[];
  info: BatchInfo;
}

/**
 * Reads a session file in batches of entries, with byte offsets (plain `.jsonl`;
 * load `.jsonl.gz` files with `SessionLoader`). Version 1 files get the same
 * ids as a full load gives them.
 */
export class IncrementalSessionLoader {
  private readonly native: native.NativeIncremental;

  /** A loader handing out `batchSize` entries per batch. */
  constructor(path: string, batchSize = 100, opts?: LoadOptions) {
    this.native = call(() => new native.NativeIncremental(path, batchSize, json(opts)));
  }

  /** The next batch of entries (empty at the end). */
  async loadNext(): Promise<AnySessionEntry[]> {
    return (await this.loadNextBatch()).entries;
  }

  /** The next batch with its byte offsets. */
  async loadNextBatch(): Promise<EntryBatch> {
    return JSON.parse(await callAsync(() => this.native.loadNext())) as EntryBatch;
  }

  /** Whether entries remain (the file's current length is checked, so a growing file is followed). */
  hasMore(): boolean {
    return call(() => this.native.hasMore());
  }

  /** Back to the start of the file. */
  reset(): void {
    call(() => this.native.reset());
  }

  /** Byte offset where the next batch starts. */
  get offset(): number {
    return call(() => this.native.offset());
  }
}

/** A session resumed from the tail of its file. */
export class LazySession extends LazyView {}

/**
 * Resumes a session from the tail of its file: cost grows with the part the
 * context needs, not with the file. Uses and refreshes `<file>.idx.json`.
 */
export async function loadSessionLazy(path: string, opts?: LazyOptions): Promise<LazySession> {
  return new LazySession(await callAsync(() => native.NativeLazySession.load(path, json(opts))));
}

/** An entry to append: `type` is required; `id`, `parentId`, `timestamp` are filled when absent. */
export type NewEntry = { type: string; id?: string; parentId?: string | null; timestamp?: string; [key: string]: unknown };

/** Appends to a session file, durably, holding its lock. */
export class SessionWriter {
  private readonly native: native.NativeWriter;
  /** What opening found and repaired. */
  readonly openReport: WriterOpenReport;

  private constructor(n: native.NativeWriter) {
    this.native = n;
    this.openReport = JSON.parse(n.openReportJson()) as WriterOpenReport;
  }

  /**
   * Opens a session file for appending, creating it (with a header) if needed.
   * A torn last line is cut off (see `openReport.repaired`). Throws
   * `SESSION_LOCKED` when another writer has it open, `MIGRATION_REQUIRED` for
   * version 1/2 files unless `{ migrate: true }`.
   */
  static async open(path: string, opts?: WriterOptions): Promise<SessionWriter> {
    return new SessionWriter(await callAsync(() => native.NativeWriter.open(path, json(opts))));
  }

  /** Appends an entry; resolves to its id once it is on disk. */
  append(entry: NewEntry): Promise<string> {
    return callAsync(() => this.native.append(toJson(entry, 'the entry')));
  }

  /** Moves the current leaf to `id` (`null`: before the first entry) with a durable `leaf` entry. */
  moveLeaf(id: string | null): Promise<string> {
    return callAsync(() => this.native.moveLeaf(id));
  }

  /** Sets the label of an entry (`undefined` or `''` clears it). */
  appendLabel(targetId: string, label?: string): Promise<string> {
    return callAsync(() => this.native.appendLabel(targetId, label ?? null));
  }

  /** Moves the leaf to `id` and appends a `branch_summary` there (pi's `branchWithSummary`). */
  branchWithSummary(id: string | null, summary: string, opts: { details?: unknown; fromHook?: boolean } = {}): Promise<string> {
    return callAsync(() => this.native.branchWithSummary(id, summary, json(opts.details) ?? null, opts.fromHook ?? null));
  }

  /** The current leaf. */
  get leafId(): string | null {
    return call(() => this.native.leafId()) ?? null;
  }

  /** Waits for pending appends, writes the resume hint and releases the lock. */
  close(): Promise<void> {
    return callAsync(() => this.native.close());
  }
}

/**
 * Lists the sessions in a directory from their headers and tails, newest first.
 * A file that cannot be listed — not a session, not a regular file (a FIFO, a
 * device), or a `.jsonl.gz` over the limits in `opts` (`LIMIT_EXCEEDED`) — is
 * listed with `error` set. `.jsonl.gz` files are decompressed as a stream that
 * keeps only their first and last 64 KiB.
 */
export async function listSessions(dir: string, opts?: LimitOptions): Promise<SessionInfo[]> {
  return JSON.parse(await callAsync(() => native.listSessionsJson(dir, json(opts)))) as SessionInfo[];
}

export { EventLog } from './eventlog.js';
export { PostgresStore } from './postgres.js';
export type { PostgresStoreOptions } from './postgres.js';
export { createProvider, providerFromRef, isStreamingProvider } from './provider.js';
export type { Pricing, ProviderApi, ProviderOptions, StreamingProvider, ThinkingOption, WireRequest } from './provider.js';
export { toProvider, fromProvider, MessageNormalizer, SessionMigrator, importSession, requestBuilder } from './normalize.js';
export type { MigrateOptions, MigrationResult, ImportOptions } from './normalize.js';
export type { ProviderConversion, FromProviderResult, DenormalizedMessage, MessagesInput, RequestBuilder, BuiltRequest } from '@forkpoint/shared';
export {
  Agent,
  JSONStore,
  ToolRegistry,
  TemplateRegistry,
  ScriptedProvider,
  CONFIG_VERSION,
  redactSecrets,
} from './agent.js';
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
  AgentBytes,
  JSONStoreOptions,
  RedactContext,
  RedactKind,
  Redactor,
  ResumeOptions,
  ResumeStrategy,
  ScriptedTurn,
  StoredAgentMeta,
  Tool,
  ToolCallView,
  ToolContext,
  ToolDefinition,
  TodoItem,
  UsageTotals,
} from './agent.js';
