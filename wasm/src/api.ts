/**
 * forkpoint in the browser: load pi session files from text, bytes or a
 * `File`/`Blob`, walk their branches and build the LLM context from any leaf.
 * The same API runs in Node (`import('forkpoint-web')` picks the Node build).
 */
import type { EventLogOptions, LoadOptions } from '@forkpoint/types';
import {
  SessionView,
  EventLog as SharedEventLog,
  call,
  callAsync,
  createNormalizer,
  type NativeSessionLike,
  type NativeEventLogLike,
  type NativeNormalizerLike,
  type Normalizer,
} from '@forkpoint/shared';
import type { CompatibilityReport, ImportSummary, MigrationProgress, ProviderName } from '@forkpoint/types';

export { ForkpointError, EventBus } from '@forkpoint/shared';
export type { SessionBranch, ContextOptions, LoggedEvent, NewEvent, BookmarkedEvent, SubscribeOptions } from '@forkpoint/shared';
export type { ProviderConversion, FromProviderResult, DenormalizedMessage, MessagesInput } from '@forkpoint/shared';
export type * from '@forkpoint/types';

/** The wasm-bindgen module, Node or web build. */
export interface WasmBackend extends NativeNormalizerLike {
  importSessionJson(bytes: Uint8Array, format: string, sessionId: string, nowIso: string): string;
  NativeMigration: new (from: string, to: string, model: string | null, nowIso: string) => {
    push(text: string): string;
    finish(): string;
    readonly messagesChanged: number;
    resultJson(): string;
    free(): void;
  };
  NativeSession: { fromBytes(bytes: Uint8Array, opts?: string | null, path?: string | null): NativeSessionLike };
  NativeEventLog: { openIndexedDb(db: string, log: string, opts?: string | null): Promise<NativeEventLogLike> };
  NativeSessionBuilder: new () => {
    push(chunk: Uint8Array): void;
    finish(opts?: string | null, path?: string | null): NativeSessionLike;
    free(): void;
  };
}

let backend: WasmBackend | undefined;
let normalizer: Normalizer | undefined;

/** @internal Set by the entry module once the wasm module is ready. */
export function setBackend(b: WasmBackend): void {
  backend = b;
  normalizer = createNormalizer(b);
}

function norm(): Normalizer {
  if (!normalizer) throw new Error('forkpoint-web: the WebAssembly module is not initialized');
  return normalizer;
}

/** Canonical messages → a request body for `target`, with a report of every step. */
export const toProvider: Normalizer['toProvider'] = (messages, target, opts) => norm().toProvider(messages, target, opts);
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
        const step = opts.stepBytes ?? BLOB_CHUNK;
        for (let off = 0; off < blob.size; off += step) {
          const bytes = new Uint8Array(await blob.slice(off, off + step).arrayBuffer());
          const text = call(() => decoder.decode(bytes, { stream: off + step < blob.size }));
          parts.push(call(() => m.push(text)));
          opts.onProgress?.({ bytesRead: Math.min(off + step, blob.size), totalBytes: total, messagesChanged: m.messagesChanged });
        }
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
  if (!backend) throw new Error('forkpoint-web: the WebAssembly module is not initialized');
  return backend;
}

/** Bytes read per slice of a `Blob`. */
const BLOB_CHUNK = 8 << 20;

const json = (o: unknown): string | null => (o === undefined ? null : JSON.stringify(o));

/** A loaded session (the same API as `SessionLoader` in the Node package). */
export class Session extends SessionView {
  private constructor(n: NativeSessionLike) {
    super(n);
  }

  /** Loads a session from its text or bytes (`.jsonl`, or `.jsonl.gz` bytes). */
  static fromJsonl(data: string | Uint8Array, opts?: LoadOptions & { path?: string }): Session {
    const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : data;
    return new Session(call(() => wasm().NativeSession.fromBytes(bytes, json(stripPath(opts)), opts?.path ?? null)));
  }

  /** Loads a session from a `File` or `Blob`, reading it in slices. */
  static async fromBlob(blob: Blob, opts?: LoadOptions): Promise<Session> {
    const b = call(() => new (wasm().NativeSessionBuilder)());
    try {
      for (let off = 0; off < blob.size; off += BLOB_CHUNK) {
        const chunk = new Uint8Array(await blob.slice(off, off + BLOB_CHUNK).arrayBuffer());
        call(() => b.push(chunk));
      }
      const name = (blob as { name?: unknown }).name;
      return new Session(call(() => b.finish(json(opts), typeof name === 'string' ? name : null)));
    } finally {
      b.free();
    }
  }
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
}

/**
 * Imports a session recorded by pi (v1–v3), Claude Code or the Codex CLI
 * (text, bytes or a `File`/`Blob`) as a pi v3 session: `text` is the new
 * file, `session` the loaded `Session`. Nothing is skipped: metadata lines
 * are kept as `custom` entries (FORMAT.md §15.7).
 */
export async function importSession(
  source: string | Uint8Array | Blob,
  opts: { format?: 'auto' | 'pi' | 'claude-code' | 'codex'; id?: string } = {},
): Promise<{ session: Session; summary: ImportSummary; text: string }> {
  const bytes =
    typeof source === 'string' ? new TextEncoder().encode(source) : source instanceof Uint8Array ? source : new Uint8Array(await source.arrayBuffer());
  const id = opts.id ?? globalThis.crypto.randomUUID();
  const out = call(() => wasm().importSessionJson(bytes, opts.format ?? 'auto', id, new Date().toISOString()));
  const nl = out.indexOf('\n');
  const summary = JSON.parse(out.slice(0, nl)) as ImportSummary;
  const text = out.slice(nl + 1);
  return { session: Session.fromJsonl(text), summary, text };
}
