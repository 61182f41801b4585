/**
 * forkpoint in the browser: load pi session files from text, bytes or a
 * `File`/`Blob`, walk their branches and build the LLM context from any leaf.
 * The same API runs in Node (`import('forkpoint-web')` picks the Node build).
 */
import type { EventLogOptions, LoadOptions } from '@forkpoint/types';
import { SessionView, EventLog as SharedEventLog, call, callAsync, type NativeSessionLike, type NativeEventLogLike } from '@forkpoint/shared';

export { ForkpointError, EventBus } from '@forkpoint/shared';
export type { SessionBranch, ContextOptions, LoggedEvent, NewEvent, BookmarkedEvent, SubscribeOptions } from '@forkpoint/shared';
export type * from '@forkpoint/types';

/** The wasm-bindgen module, Node or web build. */
export interface WasmBackend {
  NativeSession: { fromBytes(bytes: Uint8Array, opts?: string | null, path?: string | null): NativeSessionLike };
  NativeEventLog: { openIndexedDb(db: string, log: string, opts?: string | null): Promise<NativeEventLogLike> };
  NativeSessionBuilder: new () => {
    push(chunk: Uint8Array): void;
    finish(opts?: string | null, path?: string | null): NativeSessionLike;
    free(): void;
  };
}

let backend: WasmBackend | undefined;

/** @internal Set by the entry module once the wasm module is ready. */
export function setBackend(b: WasmBackend): void {
  backend = b;
}

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
