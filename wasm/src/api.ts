/**
 * forkpoint in the browser: load pi session files from text, bytes or a
 * `File`/`Blob`, walk their branches and build the LLM context from any leaf.
 * The same API runs in Node (`import('forkpoint-web')` picks the Node build).
 */
import type {
  AgentMessage,
  Checkpoint,
  EventLogOptions,
  LazyOptions,
  LoadOptions,
  StoredSessionInfo,
} from '@forkpoint/types';
import {
  SessionView,
  LazyView,
  EventLog as SharedEventLog,
  ForkpointError,
  call,
  callAsync,
  createNormalizer,
  createProviders,
  requestBuilderOf,
  concatBytes,
  type RequestBuilder,
  type NativeRequestBuilderLike,
  Agent as SharedAgent,
  type NativeProviderLike,
  type ProviderOptions,
  type StreamingProvider,
  type ModelRef as SharedModelRef,
  type NativeSessionLike,
  type NativeLazyLike,
  type NativeEventLogLike,
  type NativeNormalizerLike,
  type Normalizer,
  type AgentBackend,
  type NativeAgentLike,
  type Redactor,
  toJson,
} from '@forkpoint/shared';
import type { CompatibilityReport, ImportSummary, LimitOptions, MigrationProgress, ProviderName, ToProviderOptions } from '@forkpoint/types';

export { ForkpointError, EventBus, Agent, ToolRegistry, TemplateRegistry, ScriptedProvider } from '@forkpoint/shared';
export type {
  AgentConfig,
  AgentDependencies,
  AgentInfo,
  AgentStatus,
  AgentState,
  AgentTemplate,
  AssistantReply,
  ChatResult,
  CheckpointArgs,
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
  StoredMeta,
  Tool,
  ToolCallView,
  ToolContext,
  ToolDefinition,
  TodoItem,
  UsageTotals,
  Pricing,
  ProviderApi,
  ProviderOptions,
  StreamingProvider,
  ThinkingOption,
  WireRequest,
} from '@forkpoint/shared';
export { isStreamingProvider } from '@forkpoint/shared';
export type { SessionBranch, ContextOptions, LoggedEvent, NewEvent, BookmarkedEvent, SubscribeOptions } from '@forkpoint/shared';
export type { ProviderConversion, FromProviderResult, DenormalizedMessage, MessagesInput, RequestBuilder, BuiltRequest } from '@forkpoint/shared';
export type * from '@forkpoint/types';

/** The wasm-bindgen module, Node or web build. */
export interface WasmBackend extends NativeNormalizerLike, NativeProviderLike {
  importSessionJson(bytes: Uint8Array, format: string, sessionId: string | null, nowIso: string, limits?: string | null): string;
  NativeMigration: new (from: string, to: string, model: string | null, nowIso: string) => {
    push(text: string): string;
    finish(): string;
    readonly messagesChanged: number;
    resultJson(): string;
    free(): void;
  };
  NativeSession: { fromBytes(bytes: Uint8Array, opts?: string | null, path?: string | null): NativeSessionLike };
  NativeEventLog: { openIndexedDb(db: string, log: string, opts?: string | null): Promise<NativeEventLogLike> };
  NativeStore: { open(dbName: string): Promise<NativeStoreLike> };
  NativeAgentStore: { open(dbName: string): Promise<NativeAgentStoreLike>; validateId(id: string): void; webLocks(): boolean };
  NativeAgent: {
    create(store: NativeAgentStoreLike, metaJson: string, toolsJson: string): Promise<NativeAgentWasm>;
    open(store: NativeAgentStoreLike, id: string, toolsJson: string): Promise<NativeAgentWasm>;
  };
  redactSecretsJson(json: string): string;
  NativeRequestBuilder: new (target: string, options?: string | null) => NativeRequestBuilderLike;
  checkFileSize(size: number, limits?: string | null, path?: string | null): void;
  NativeSessionBuilder: new (opts?: string | null) => {
    reserve(bytes: number): void;
    push(chunk: Uint8Array): void;
    finish(path?: string | null): NativeSessionLike;
    free(): void;
  };
}

/** @internal What the wasm module's `NativeStore` exposes. */
export interface NativeStoreLike {
  importSession(
    bytes: Uint8Array,
    opts: string | null,
    newId: string,
    nowMs: number,
    signal: AbortSignal | null,
    onProgress: ((written: number, total: number) => void) | null,
  ): Promise<string>;
  listJson(): Promise<string>;
  infoJson(id: string): Promise<string>;
  loadSession(id: string, opts: string | null): Promise<NativeSessionLike>;
  loadLazy(id: string, opts: string | null): Promise<NativeStoredLazyLike>;
  appendEntry(id: string, entry: string, nowMs: number): Promise<string>;
  moveLeaf(id: string, target: string | null, nowMs: number): Promise<string>;
  setLabel(id: string, target: string, label: string | null, nowMs: number): Promise<string>;
  fork(id: string, entryId: string, newId: string, nowMs: number): Promise<string>;
  exportBytes(id: string, original: boolean): Promise<Uint8Array>;
  deleteSession(id: string): Promise<void>;
  saveCheckpoint(id: string, opts: string, newId: string, nowMs: number): Promise<string>;
  checkpointsJson(id: string, nowMs: number): Promise<string>;
  restoreCheckpoint(id: string, checkpointId: string, nowMs: number): Promise<string>;
  deleteCheckpoint(id: string, checkpointId: string, nowMs: number): Promise<void>;
  close(): void;
}

/** @internal What the wasm module's `NativeAgentStore` exposes. */
export interface NativeAgentStoreLike {
  list(): Promise<string>;
  exists(id: string): Promise<boolean>;
  remove(id: string): Promise<void>;
  close(): void;
}

/** @internal What the wasm module's `NativeAgent` exposes. */
export interface NativeAgentWasm extends NativeAgentLike {
  events(): NativeEventLogLike;
  fork(store: NativeAgentStoreLike, snapshot: string | null, toolsJson: string): Promise<NativeAgentWasm>;
}

/** @internal */
export interface NativeStoredLazyLike extends NativeLazyLike {
  infoJson(): string;
}

let backend: WasmBackend | undefined;
let normalizer: Normalizer | undefined;
let providers: ReturnType<typeof createProviders> | undefined;

/** @internal How the entry module gets the wasm module: at once, or compiled off the main thread. */
export interface BackendLoader {
  sync(): WasmBackend;
  async(): Promise<WasmBackend>;
}
let loader: BackendLoader | undefined;
let initializing: Promise<void> | undefined;

/** @internal Set by the entry module: the Node build sets the backend, the web build a loader. */
export function setBackend(b: WasmBackend | BackendLoader): void {
  if ('sync' in b) {
    loader = b;
    return;
  }
  backend = b;
  normalizer = createNormalizer(b);
  providers = createProviders(b);
}

SharedAgent.defaultModelFactory ??= providerFromRef;

/**
 * Compiles and instantiates the WebAssembly module, off the main thread where
 * the platform can. Optional: the first call that needs the module does it
 * itself (compiling synchronously), so `await init()` once at start-up only
 * moves that work out of the first call. Resolves at once in Node and once done.
 */
export function init(): Promise<void> {
  if (backend) return Promise.resolve();
  if (!loader) return Promise.reject(new Error('forkpoint-web: no WebAssembly loader (import the package, not dist/api.js)'));
  initializing ??= loader.async().then(
    (b) => {
      if (!backend) setBackend(b);
    },
    (e: unknown) => {
      initializing = undefined;
      throw e;
    },
  );
  return initializing;
}

function provs(): ReturnType<typeof createProviders> {
  wasm();
  return providers!;
}

/**
 * A streaming provider for Anthropic Messages, OpenAI Chat Completions, OpenAI
 * Responses or Gemini (or any endpoint that speaks one of them). In a page,
 * pass `apiKey` (or route through your own proxy with `baseURL`).
 */
export function createProvider(opts: ProviderOptions): StreamingProvider {
  return provs().createProvider(opts);
}

/** The default `modelFactory`: a provider from a stored model reference. */
export function providerFromRef(ref: SharedModelRef): StreamingProvider {
  return provs().providerFromRef(ref);
}

function norm(): Normalizer {
  wasm();
  return normalizer!;
}

/** Canonical messages → a request body for `target`, with a report of every step. */
export const toProvider: Normalizer['toProvider'] = (messages, target, opts) => norm().toProvider(messages, target, opts);
/**
 * The requests of a conversation that grows, for `target` (an agent's model
 * calls): `push` new messages, `build` the request; a build converts only
 * what came after the last assistant turn of the build before.
 */
export function requestBuilder(target: ProviderName, opts?: ToProviderOptions): RequestBuilder {
  const b = wasm();
  return requestBuilderOf((t, o) => new b.NativeRequestBuilder(t, o), target, opts);
}
/** A provider request body → canonical messages (`{system?, messages, tools?}`). */
export const fromProvider: Normalizer['fromProvider'] = (request, provider) => norm().fromProvider(request, provider);
/** One message at a time (the seed API): `normalize(message, provider)`, `denormalize(normalized, provider)`. */
export const MessageNormalizer: Normalizer['MessageNormalizer'] = {
  normalize: (m, p) => norm().MessageNormalizer.normalize(m, p),
  denormalize: (m, p, o) => norm().MessageNormalizer.denormalize(m, p, o),
  denormalizeWithReport: (m, p, o) => norm().MessageNormalizer.denormalizeWithReport(m, p, o),
};

/** What `SessionMigrator.migrate` did, with the migrated session. */
export interface WebMigrationResult {
  /** The migrated session file. */
  text: string;
  report: CompatibilityReport;
  /** Target tool-call id → original id, for every id that had to change. */
  idMap: Record<string, string>;
  messagesChanged: number;
}

/** Moving whole sessions between providers. */
export const SessionMigrator = {
  /** What moving any conversation from `source` to `target` may lose (before looking at one). */
  checkCompatibility(source: ProviderName, target: ProviderName): CompatibilityReport {
    return norm().checkCompatibility(source, target);
  },
  /**
   * Rewrites a session (text, bytes or a `Blob`, read in slices) so every
   * message can be sent to `targetProvider`; the tree is kept. Messages
   * without an origin are taken to come from `sourceProvider`.
   */
  async migrate(
    source: string | Uint8Array | Blob,
    sourceProvider: ProviderName,
    targetProvider: ProviderName,
    opts: { model?: string; onProgress?: (p: MigrationProgress) => void; stepBytes?: number } = {},
  ): Promise<WebMigrationResult> {
    const m = call(() => new (wasm().NativeMigration)(sourceProvider, targetProvider, opts.model ?? null, new Date().toISOString()));
    try {
      const parts: string[] = [];
      const decoder = new TextDecoder('utf-8', { fatal: true });
      const total = typeof source === 'string' ? source.length : source instanceof Uint8Array ? source.byteLength : source.size;
      if (typeof source === 'string') parts.push(call(() => m.push(source)));
      else {
        const blob = source instanceof Uint8Array ? new Blob([source as Uint8Array<ArrayBuffer>]) : source;
        const size = blobSize(blob);
        await readBlobSlices(blob, size, opts.stepBytes ?? BLOB_CHUNK, (bytes, off) => {
          const end = off + bytes.byteLength;
          const text = call(() => decoder.decode(bytes, { stream: end < size }));
          parts.push(call(() => m.push(text)));
          opts.onProgress?.({ bytesRead: end, totalBytes: total, messagesChanged: m.messagesChanged });
        });
      }
      parts.push(call(() => m.finish()));
      const r = JSON.parse(call(() => m.resultJson())) as { report: CompatibilityReport; idMap: Record<string, string> };
      return { text: parts.join(''), ...r, messagesChanged: m.messagesChanged };
    } finally {
      m.free();
    }
  },
};

function wasm(): WasmBackend {
  if (!backend) {
    if (!loader) throw new Error('forkpoint-web: no WebAssembly loader (import the package, not dist/api.js)');
    setBackend(loader.sync());
  }
  return backend!;
}

/** Bytes read per slice of a `Blob`. */
const BLOB_CHUNK = 8 << 20;

/**
 * Bytes set aside up front for a `Blob`, at most: its `size` is only a claim,
 * so a larger one grows as its slices arrive instead of being reserved whole.
 */
const RESERVE_MAX = 64 << 20;

/** A `Blob`'s `size`, checked: a byte count (a safe integer ≥ 0), else `INVALID_INPUT`. */
function blobSize(blob: Blob): number {
  const size = (blob as { size?: unknown }).size;
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) {
    throw new ForkpointError({ code: 'INVALID_INPUT', message: `the Blob's size (${String(size)}) is not a byte count` });
  }
  return size;
}

/**
 * Reads `size` bytes of a `Blob` in slices of `step`, handing each to
 * `onSlice` with its offset. A slice that gives fewer or more bytes than the
 * size promised — a `Blob` whose `size` is wrong, or a file that changed while
 * it was read — ends the read with `INVALID_INPUT`; a slice that cannot be
 * read at all is `IO`.
 */
async function readBlobSlices(
  blob: Blob,
  size: number,
  step: number,
  onSlice: (bytes: Uint8Array, off: number) => void,
  signal?: AbortSignal,
): Promise<void> {
  if (!Number.isSafeInteger(step) || step <= 0) {
    throw new ForkpointError({ code: 'INVALID_INPUT', message: `the slice size (${String(step)}) must be a positive whole number of bytes` });
  }
  for (let off = 0; off < size; off += step) {
    if (signal?.aborted) throw new ForkpointError({ code: 'ABORTED', message: 'the import was aborted; nothing of it was stored' });
    const want = Math.min(step, size - off);
    let part: Uint8Array;
    try {
      part = new Uint8Array(await blob.slice(off, off + want).arrayBuffer());
    } catch (e) {
      throw new ForkpointError({ code: 'IO', message: `reading the Blob at byte ${off} failed: ${e instanceof Error ? e.message : String(e)}` });
    }
    if (part.byteLength !== want) {
      throw new ForkpointError({
        code: 'INVALID_INPUT',
        message: `the Blob gave ${part.byteLength} byte(s) at offset ${off} where its size (${size}) promised ${want}: its size is wrong, or it changed while it was read`,
      });
    }
    onSlice(part, off);
  }
}

const json = (o: unknown): string | null => (o === undefined ? null : toJson(o));

/** A loaded session (the same API as `SessionLoader` in the Node package). */
export class Session extends SessionView {
  private constructor(n: NativeSessionLike) {
    super(n);
  }

  /** @internal */
  static fromNative(n: NativeSessionLike): Session {
    return new Session(n);
  }

  /**
   * Releases the session's WebAssembly memory now instead of at garbage
   * collection (a page switching between large sessions wants this). The
   * session cannot be used afterwards.
   */
  free(): void {
    const n = this.native as unknown as { free(): void };
    // Every later call fails with CLOSED instead of reaching freed memory.
    const closed = () => {
      throw new ForkpointError({ code: 'CLOSED', message: 'the session was freed' });
    };
    (this as unknown as { native: unknown }).native = new Proxy({}, { get: () => closed });
    n.free();
  }

  /** Loads a session from its text or bytes (`.jsonl`, or `.jsonl.gz` bytes). */
  static fromJsonl(data: string | Uint8Array, opts?: LoadOptions & { path?: string }): Session {
    const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : data;
    return new Session(call(() => wasm().NativeSession.fromBytes(bytes, json(stripPath(opts)), opts?.path ?? null)));
  }

  /** Loads a session from a `File` or `Blob`, reading it in slices. */
  static async fromBlob(blob: Blob, opts?: LoadOptions): Promise<Session> {
    const size = blobSize(blob);
    const b = call(() => new (wasm().NativeSessionBuilder)(json(opts)));
    try {
      // maxFileBytes: refused before anything is read when the size says so
      // (and as the slices come, when it lied).
      call(() => wasm().checkFileSize(size, json(opts), blobName(blob)));
      // One buffer of the blob's size (up to RESERVE_MAX: the size is a claim
      // until the slices are read): the slices are copied in once, not again
      // each time a growing buffer moves.
      b.reserve(Math.min(size, RESERVE_MAX));
      await readBlobSlices(blob, size, BLOB_CHUNK, (chunk) => call(() => b.push(chunk)));
      return new Session(call(() => b.finish(blobName(blob))));
    } finally {
      b.free();
    }
  }
}

/** A `File`'s name (a plain `Blob` has none): the `path` of its errors. */
function blobName(blob: Blob): string | null {
  const name = (blob as { name?: unknown }).name;
  return typeof name === 'string' ? name : null;
}

function stripPath(opts?: LoadOptions & { path?: string }): LoadOptions | undefined {
  if (!opts) return undefined;
  const { path: _path, ...rest } = opts;
  return rest;
}

/**
 * An event log in IndexedDB: database `dbName`, log `logName` (many logs can
 * share a database). The same semantics as the Node package's file log: one
 * `seq` counter that continues after a reload, bookmarks, `readSince`, and
 * subscriptions through `EventBus`. Durability `'fsync'` and `'group'` commit
 * with IndexedDB's strict durability; `'memory'` stores nothing.
 */
export class EventLog extends SharedEventLog {
  static async openIndexedDb(dbName: string, logName: string, opts?: EventLogOptions): Promise<EventLog> {
    return new EventLog(await callAsync(() => wasm().NativeEventLog.openIndexedDb(dbName, logName, json(opts))));
  }

  /** @internal An agent's log (written by the agent only). */
  static ofAgent(native: NativeEventLogLike): EventLog {
    return new EventLog(native);
  }
}

/**
 * Imports a session recorded by pi (v1–v3), Claude Code or the Codex CLI
 * (text, bytes or a `File`/`Blob`) as a pi v3 session: `text` is the new
 * file, `session` the loaded `Session`. Nothing is skipped: metadata lines
 * are kept as `custom` entries (FORMAT.md §15.7).
 */
export async function importSession(
  source: string | Uint8Array | Blob,
  opts: {
    format?: 'auto' | 'pi' | 'claude-code' | 'codex';
    /** The new session's id (Claude Code and Codex). Default: derived from the source's own session id (FORMAT.md §15.7). */
    id?: string;
    /** A new random id instead of the derived one (Claude Code and Codex). Ignored with `id`. */
    copy?: boolean;
  } & LimitOptions = {},
): Promise<{ session: Session; summary: ImportSummary; text: string }> {
  const bytes = await readSource(source, {}, opts);
  const id = opts.id ?? (opts.copy ? globalThis.crypto.randomUUID() : null);
  const out = call(() => wasm().importSessionJson(bytes, opts.format ?? 'auto', id, new Date().toISOString(), toJson(opts)));
  const nl = out.indexOf('\n');
  const summary = JSON.parse(out.slice(0, nl)) as ImportSummary;
  const text = out.slice(nl + 1);
  return { session: Session.fromJsonl(text), summary, text };
}

/**
 * What `IndexedDbStore.importSession` accepts. The limits (`maxDecompressedBytes`,
 * `maxCompressionRatio`, `maxLineBytes`, `maxEntries`, `maxFileBytes`) apply
 * to the file as to `Session.fromJsonl`: a gzip bomb is `LIMIT_EXCEEDED`
 * early, with memory bounded by the limits, and a `Blob` larger than
 * `maxFileBytes` before it is read.
 */
export interface StoreImportOptions extends LimitOptions {
  /**
   * The key to store it under. Default: a pi session's own id; for Claude Code
   * and Codex the id derived from the source's own session id (FORMAT.md
   * §15.7), so importing the same file twice is `ALREADY_EXISTS` the second time.
   */
  id?: string;
  /** Store it under a new random id (a copy of a session already imported). Ignored with `id`. */
  copy?: boolean;
  /** Default `'auto'` (pi v1–v3, Claude Code, Codex; gzip or not, found by content). */
  format?: 'auto' | 'pi' | 'claude-code' | 'codex';
  /** Display name. Default: the session's own name, else the file name. */
  name?: string;
  /** Aborts the import (`ABORTED`); nothing of it is stored. */
  signal?: AbortSignal;
  /** Reading the source (`read`), then writing it (`write`). */
  onProgress?: (p: { phase: 'read' | 'write'; bytes: number; total: number }) => void;
}

/**
 * What `IndexedDbStore.saveCheckpoint` records besides the session's leaf; all
 * optional. The workflow fields are those of an agent's `checkpoints.create`
 * (`CheckpointArgs`); without them a checkpoint is an execution of its own
 * (`executionId` = its id, `stepName` = its label, `stepIndex` 0).
 */
export interface SaveCheckpointOptions {
  /** Its id (`[A-Za-z0-9][A-Za-z0-9._-]{0,127}`). Default: `ckpt-{executionId}-{stepIndex}` with `executionId`, else a new UUID. */
  id?: string;
  label?: string;
  /** The entry it points at. Default: the current leaf. */
  entryId?: string;
  /** Default: the last seq of the session's event log, when it was opened with `events`. */
  eventSeq?: number;
  executionId?: string;
  stepName?: string;
  stepIndex?: number;
  /** Default `'success'`. */
  status?: string;
  state?: unknown;
  context?: unknown;
  variables?: Record<string, unknown>;
}

/** What `IndexedDbStore.loadSession(id, { lazy: true })` returns: the context from the current leaf, read from the stored tail. */
export class LazySession extends LazyView {
  /** @internal */
  constructor(private readonly stored: NativeStoredLazyLike) {
    super(stored);
  }

  private pending: Promise<unknown> = Promise.resolve();

  /** The session's stored facts at the time it was opened. */
  get info(): StoredSessionInfo {
    return JSON.parse(call(() => this.stored.infoJson())) as StoredSessionInfo;
  }

  /** As `LazyView.loadMoreHistory`; calls run one after another. */
  override loadMoreHistory(n = 50): Promise<AgentMessage[]> {
    const run = this.pending.then(
      () => super.loadMoreHistory(n),
      () => super.loadMoreHistory(n),
    );
    this.pending = run.catch(() => undefined);
    return run;
  }
}

/** An entry to append: `type` is required; `id`, `parentId`, `timestamp` are filled when absent. */
export type NewEntry = { type: string; id?: string; parentId?: string | null; timestamp?: string; [key: string]: unknown };

/**
 * Sessions in an IndexedDB database that survive reloads (FORMAT.md §16).
 * Each session is stored as chunks of its pi JSONL with a small record, so
 * `listSessions` reads no entries and a lazy load reads only the kept tail.
 * Every change is one transaction; changes through one store run in call
 * order, and two tabs never interleave theirs (the loser re-reads and retries).
 *
 * ```js
 * const store = await IndexedDbStore.open('my-app');
 * const info = await store.importSession(file);          // File from <input> or a drop
 * const session = await store.loadSession(info.id);      // the same Session as Session.fromJsonl
 * const lazy = await store.loadSession(info.id, { lazy: true });
 * ```
 */
export class IndexedDbStore {
  private queue: Promise<unknown> = Promise.resolve();
  private readonly logs = new Map<string, { logName: string; log: Promise<EventLog> }>();

  private constructor(
    private readonly native: NativeStoreLike,
    /** The database's name. */
    readonly dbName: string,
  ) {}

  /**
   * Opens (creating or upgrading) database `dbName`. `BLOCKED` when another
   * tab holds it open at an older version; `UNSUPPORTED_FORMAT` when a newer
   * forkpoint created it.
   */
  static async open(dbName: string): Promise<IndexedDbStore> {
    return new IndexedDbStore(await callAsync(() => wasm().NativeStore.open(dbName)), dbName);
  }

  /** Runs changes one after another, in call order. */
  private serial<T>(f: () => Promise<T>): Promise<T> {
    const run = this.queue.then(f, f);
    this.queue = run.catch(() => undefined);
    return callAsync(() => run);
  }

  /**
   * Imports a session file (text, bytes, or a `File`/`Blob` read in slices)
   * in one transaction: on any error — `CORRUPTED_DATA` (with `line`),
   * `UNSUPPORTED_FORMAT`, `STORAGE_FULL`, `ABORTED`, `ALREADY_EXISTS` for an
   * id already stored, `INVALID_ID` — nothing of it is stored.
   */
  importSession(source: File | Blob | Uint8Array | string, opts: StoreImportOptions = {}): Promise<StoredSessionInfo> {
    return this.serial(async () => {
      const bytes = await readSource(source, opts, opts);
      const fileName = (source as { name?: unknown }).name;
      const o = {
        id: opts.id,
        copy: opts.copy ?? false,
        format: opts.format,
        name: opts.name,
        source: typeof fileName === 'string' ? fileName : undefined,
        maxLineBytes: opts.maxLineBytes,
        maxEntries: opts.maxEntries,
        maxDecompressedBytes: opts.maxDecompressedBytes,
        maxCompressionRatio: opts.maxCompressionRatio,
        maxFileBytes: opts.maxFileBytes,
      };
      const progress = opts.onProgress ? (bytes: number, total: number) => opts.onProgress?.({ phase: 'write', bytes, total }) : null;
      const out = await this.native.importSession(bytes, toJson(o), globalThis.crypto.randomUUID(), Date.now(), opts.signal ?? null, progress);
      return (JSON.parse(out) as { info: StoredSessionInfo }).info;
    });
  }

  /** Waits for the changes already asked of this store (reads see them). */
  private async settled(): Promise<void> {
    await this.queue;
  }

  /**
   * Every session's facts, most recently changed first (no entries are read).
   * A session whose record cannot be read is listed with `error` set; it can
   * be deleted.
   */
  async listSessions(): Promise<StoredSessionInfo[]> {
    await this.settled();
    return JSON.parse(await callAsync(() => this.native.listJson())) as StoredSessionInfo[];
  }

  /** One session's facts. Throws `NOT_FOUND`. */
  async getSessionInfo(id: string): Promise<StoredSessionInfo> {
    await this.settled();
    return JSON.parse(await callAsync(() => this.native.infoJson(id))) as StoredSessionInfo;
  }

  /**
   * Loads a session whole (the same `Session` as `Session.fromJsonl`), or with
   * `{ lazy: true }` only its context from the current leaf (reads about the
   * kept tail, not the session).
   */
  loadSession(id: string, opts?: LoadOptions & { lazy?: false }): Promise<Session>;
  loadSession(id: string, opts: LazyOptions & { lazy: true }): Promise<LazySession>;
  async loadSession(id: string, opts: (LoadOptions | LazyOptions) & { lazy?: boolean } = {}): Promise<Session | LazySession> {
    const { lazy, ...rest } = opts;
    await this.settled();
    if (lazy) return new LazySession(await callAsync(() => this.native.loadLazy(id, toJson(rest))));
    return Session.fromNative(await callAsync(() => this.native.loadSession(id, toJson(rest))));
  }

  /** Removes a session with its checkpoints and event log. Throws `NOT_FOUND`. */
  deleteSession(id: string): Promise<void> {
    return this.serial(async () => {
      const log = this.logs.get(id)?.log;
      this.logs.delete(id);
      if (log) await (await log.catch(() => null))?.close();
      await this.native.deleteSession(id);
    });
  }

  /** Appends an entry at the current leaf (or `parentId`); resolves to its id once stored. */
  appendEntry(id: string, entry: NewEntry): Promise<string> {
    return this.serial(() => this.native.appendEntry(id, toJson(entry, 'the entry'), Date.now()));
  }

  /**
   * Moves the current leaf to `entryId` (`null`: before the first entry) with a
   * stored `leaf` entry; resolves to the session's facts after the move.
   */
  moveLeaf(id: string, entryId: string | null): Promise<StoredSessionInfo> {
    return this.serial(async () => JSON.parse(await this.native.moveLeaf(id, entryId, Date.now())) as StoredSessionInfo);
  }

  /** Sets the label of an entry (`undefined` or `''` clears it); resolves to the session's facts. */
  setLabel(id: string, entryId: string, label?: string): Promise<StoredSessionInfo> {
    return this.serial(async () => JSON.parse(await this.native.setLabel(id, entryId, label ? label : null, Date.now())) as StoredSessionInfo);
  }

  /** A new session with the path from the root to `entryId`; its `parentSession` is `id`. */
  fork(id: string, entryId: string, opts: { id?: string } = {}): Promise<StoredSessionInfo> {
    return this.serial(async () =>
      JSON.parse(await this.native.fork(id, entryId, opts.id ?? globalThis.crypto.randomUUID(), Date.now())) as StoredSessionInfo,
    );
  }

  /**
   * The session as a file. While it is unchanged since its import, the bytes
   * imported (`format: 'original'`, the default: byte-identical, also for
   * Claude Code, Codex and gzip files); otherwise, or with `format: 'pi'`, its
   * pi v3 JSONL.
   */
  async exportSession(id: string, opts: { format?: 'original' | 'pi' } = {}): Promise<Blob> {
    await this.settled();
    const original = (opts.format ?? 'original') === 'original';
    const bytes = await callAsync(() => this.native.exportBytes(id, original));
    const gz = bytes[0] === 0x1f && bytes[1] === 0x8b;
    return new Blob([bytes as Uint8Array<ArrayBuffer>], { type: gz ? 'application/gzip' : 'application/x-ndjson' });
  }

  /**
   * The session's event log (named `info.logName` in this database): bookmarks,
   * `readSince`, subscriptions — the same `EventLog` as `EventLog.openIndexedDb`.
   * Opened once per store; deleting the session deletes it.
   */
  events(id: string, opts?: EventLogOptions): Promise<EventLog> {
    // In line with the changes: a delete asked before cannot be overtaken.
    return this.serial(() => this.openEvents(id, opts));
  }

  private async openEvents(id: string, opts?: EventLogOptions): Promise<EventLog> {
    const info = JSON.parse(await this.native.infoJson(id)) as StoredSessionInfo;
    const cached = this.logs.get(id);
    // A session deleted and imported again (by another tab) is another
    // session with another log.
    if (cached && cached.logName === info.logName) return cached.log;
    if (cached) await (await cached.log.catch(() => null))?.close();
    const log = EventLog.openIndexedDb(this.dbName, info.logName, opts);
    this.logs.set(id, { logName: info.logName, log });
    log.catch(() => this.logs.delete(id));
    return log;
  }

  /**
   * Saves a checkpoint: the current leaf (or `entryId`), the entry count and
   * the last seq of the session's event log (when it was opened with `events`,
   * or `eventSeq`). It is an entry of the session (`forkpoint.checkpoint`, the
   * record an agent's `checkpoints.create` writes: FORMAT.md §14), appended at
   * the current leaf; with `executionId`/`stepName`/`stepIndex` it is the
   * checkpoint an agent makes (`ckpt-{executionId}-{stepIndex}`). Throws
   * `ALREADY_EXISTS` when the session has a checkpoint of that id.
   */
  saveCheckpoint(id: string, opts: SaveCheckpointOptions = {}): Promise<Checkpoint> {
    return this.serial(async () => {
      let seq = opts.eventSeq ?? null;
      const log = this.logs.get(id)?.log;
      if (seq === null && log) seq = (await (await log).lastBookmark())?.seq ?? null;
      const o = toJson({ ...opts, eventSeq: seq });
      return JSON.parse(await this.native.saveCheckpoint(id, o, globalThis.crypto.randomUUID(), Date.now())) as Checkpoint;
    });
  }

  /**
   * The session's checkpoints, oldest first: its checkpoint entries, those an
   * agent made included. Checkpoints forkpoint-web 0.1.0 kept beside the
   * session are moved into it first.
   */
  async listCheckpoints(id: string): Promise<Checkpoint[]> {
    await this.settled();
    return JSON.parse(await callAsync(() => this.native.checkpointsJson(id, Date.now()))) as Checkpoint[];
  }

  /** Moves the session's leaf back to a checkpoint's entry (a `leaf` entry, as an agent's restore). Throws `NOT_FOUND`. */
  restoreCheckpoint(id: string, checkpointId: string): Promise<Checkpoint> {
    return this.serial(async () => JSON.parse(await this.native.restoreCheckpoint(id, checkpointId, Date.now())) as Checkpoint);
  }

  /** Deletes a checkpoint (with an entry that says so: the history is kept). Throws `NOT_FOUND`. */
  deleteCheckpoint(id: string, checkpointId: string): Promise<void> {
    return this.serial(() => this.native.deleteCheckpoint(id, checkpointId, Date.now()));
  }

  /** Closes the connection (and the event logs opened through `events`). */
  async close(): Promise<void> {
    await this.queue;
    for (const { log } of this.logs.values()) await (await log.catch(() => null))?.close();
    this.logs.clear();
    this.native.close();
  }
}

/**
 * Reads a source whole, a `Blob` in slices (with `read` progress and abort);
 * a `Blob` larger than `limits`' `maxFileBytes` is `LIMIT_EXCEEDED` before
 * it is read (text and bytes are checked where they are imported).
 */
async function readSource(
  source: Blob | Uint8Array | string,
  opts: Pick<StoreImportOptions, 'signal' | 'onProgress'>,
  limits: LimitOptions,
): Promise<Uint8Array> {
  if (typeof source === 'string') return new TextEncoder().encode(source);
  if (source instanceof Uint8Array) return source;
  const size = blobSize(source);
  call(() => wasm().checkFileSize(size, toJson(limits), blobName(source)));
  // One buffer of the claimed size only up to RESERVE_MAX; a larger Blob is
  // joined once every slice has come (its size then proven).
  const out = size <= RESERVE_MAX ? new Uint8Array(size) : null;
  const parts: Uint8Array[] = [];
  await readBlobSlices(
    source,
    size,
    BLOB_CHUNK,
    (part, off) => {
      if (out) out.set(part, off);
      else parts.push(part);
      opts.onProgress?.({ phase: 'read', bytes: off + part.byteLength, total: size });
    },
    opts.signal,
  );
  return out ?? concatBytes(parts);
}

// ---------------------------------------------------------------------------
// Agents

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

/** Options of an `IndexedDbAgentStore`. */
export interface IndexedDbAgentStoreOptions {
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
 * value (returns a filtered copy): members named like credentials are dropped;
 * the values of such `[name, value]` pairs and every secret-shaped piece of
 * text become `'[redacted]'` (the same filter as the Node package's).
 */
export function redactSecrets<T>(value: T): T {
  if (value === undefined) return value;
  return JSON.parse(call(() => wasm().redactSecretsJson(toJson(value)))) as T;
}

/**
 * Durable agents in an IndexedDB database (FORMAT.md §16.4): the `Agent` of
 * the Node package, with the same semantics, over the same database
 * `IndexedDbStore` and `EventLog.openIndexedDb` use (each keeps its own
 * stores). An agent is run by one tab at a time: its lease is a Web Lock, so a
 * second tab (or a second `Agent` in this one) gets `AGENT_LOCKED`, and a tab
 * that closes or crashes lets it go — the next one resumes with
 * `{ strategy: 'crash' }`. Without Web Locks (Node with fake-indexeddb) the
 * lease is held in this JavaScript realm only.
 *
 * ```js
 * const store = await IndexedDbAgentStore.open('my-app');
 * const agent = await Agent.resumeOrCreate('helper', { model, tools: ['search'] }, { store, toolRegistry });
 * const { text } = await agent.chat('hello');
 * ```
 */
export class IndexedDbAgentStore implements AgentBackend {
  /** The store's filter of what agents persist (`IndexedDbAgentStoreOptions.redact`). */
  readonly redact: Redactor | undefined;

  private constructor(
    private readonly native: NativeAgentStoreLike,
    /** The database's name. */
    readonly dbName: string,
    redact: Redactor | undefined,
  ) {
    this.redact = redact;
  }

  /**
   * Opens (creating or upgrading) database `dbName`. `BLOCKED` when another
   * tab holds it open at an older version; `UNSUPPORTED_FORMAT` when a newer
   * forkpoint created it.
   */
  static async open(dbName: string, opts: IndexedDbAgentStoreOptions = {}): Promise<IndexedDbAgentStore> {
    if (opts.redact !== undefined && typeof opts.redact !== 'function') {
      throw new ForkpointError({ code: 'INVALID_INPUT', message: 'IndexedDbAgentStore: redact is a function (value, where) => value' });
    }
    return new IndexedDbAgentStore(await callAsync(() => wasm().NativeAgentStore.open(dbName)), dbName, opts.redact);
  }

  /** Whether leases are Web Locks here (held across tabs); `false`: held in this JavaScript realm only. */
  static get webLocks(): boolean {
    return wasm().NativeAgentStore.webLocks();
  }

  /** Every agent in the store (its `meta.json`), by creation time then id. */
  async list(): Promise<StoredAgentMeta[]> {
    return JSON.parse(await callAsync(() => this.native.list())) as StoredAgentMeta[];
  }

  /** Whether the store holds agent `id` (`INVALID_ID` for an id that cannot be one). */
  exists(id: string): Promise<boolean> {
    return callAsync(() => this.native.exists(id));
  }

  /** Deletes an agent that no one runs (`AGENT_LOCKED` while one does); its forks stay. */
  delete(id: string): Promise<void> {
    return callAsync(() => this.native.remove(id));
  }

  /** Closes the database connection (agents opened through it stop working). */
  close(): void {
    this.native.close();
  }

  /** @internal */
  validateAgentId(id: string): void {
    call(() => wasm().NativeAgentStore.validateId(id));
  }

  /** @internal */
  createAgent(metaJson: string, toolsJson: string): Promise<NativeAgentLike> {
    return callAsync(() => wasm().NativeAgent.create(this.native, metaJson, toolsJson));
  }

  /** @internal */
  openAgent(id: string, toolsJson: string): Promise<NativeAgentLike> {
    return callAsync(() => wasm().NativeAgent.open(this.native, id, toolsJson));
  }

  /** @internal */
  forkAgent(parent: NativeAgentLike, snapshot: string | null, toolsJson: string): Promise<NativeAgentLike> {
    return callAsync(() => (parent as NativeAgentWasm).fork(this.native, snapshot, toolsJson));
  }

  /** @internal */
  agentLog(n: NativeAgentLike): EventLog {
    return EventLog.ofAgent(call(() => (n as NativeAgentWasm).events()));
  }
}
