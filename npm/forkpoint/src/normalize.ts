/**
 * Provider conversion in Node: `toProvider`, `fromProvider`,
 * `MessageNormalizer`, and `SessionMigrator` (whose `migrate` streams a session
 * file into a new one, written atomically).
 */
import type { CompatibilityReport, ImportSummary, LimitOptions, MigrationProgress, ProviderName, ToProviderOptions } from '@forkpoint/types';
import { randomUUID } from 'node:crypto';
import { dirname, basename, join } from 'node:path';
import { open } from 'node:fs/promises';
import { constants as fsc } from 'node:fs';
import { constants as bufc } from 'node:buffer';
import { createNormalizer, callAsync, call, ForkpointError, requestBuilderOf, type RequestBuilder, toJson, useBodyDecoder } from '@forkpoint/shared';
import * as native from '../native/binding.js';

/** A string longer than four pieces crosses to the addon in pieces of this many UTF-16 units. */
const PIECE = 1 << 18;

/**
 * `native.toProviderBytes`, a long string taken in pieces (`NativeUtf8Text`):
 * the addon never copies it whole as UTF-16, which for a 124 MiB context was
 * 248 MB of fresh memory. Slices of a flat string share its characters.
 */
function toProviderBytes(messages: string, target: string, options?: string | null): Uint8Array {
  if (messages.length <= 4 * PIECE) return native.toProviderBytes(messages, target, options);
  return utf8Text(messages).toProviderBytes(target, options);
}

/** A long string's text, taken in pieces. */
function utf8Text(s: string): native.NativeUtf8Text {
  const text = new native.NativeUtf8Text(s.length);
  for (let i = 0; i < s.length; ) {
    let end = Math.min(i + PIECE, s.length);
    // A surrogate pair is never cut in two.
    if (end < s.length && (s.charCodeAt(end - 1) & 0xfc00) === 0xd800) end--;
    text.push(s.slice(i, end));
    i = end;
  }
  return text;
}

// A body becomes a string in the addon (an external string, not V8's
// decoder). One with more bytes than a string may have characters is left to
// Node, which says whether it fits (ERR_STRING_TOO_LONG) without the addon
// first transcoding it all.
useBodyDecoder((bytes) =>
  bytes.length <= bufc.MAX_STRING_LENGTH
    ? call(() => native.utf8ToString(bytes))
    : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'),
);

// The addon takes toProvider's text as UTF-16 and keeps lone surrogates itself.
const api = createNormalizer({ ...native, toProviderBytes }, { rawText: true });

/** Canonical messages → a request body for `target`, with a report of every step. */
export const toProvider = api.toProvider;
/**
 * The requests of a conversation that grows, for `target` (an agent's model
 * calls): `push` new messages, `build` the request; a build converts only
 * what came after the last assistant turn of the build before.
 */
export function requestBuilder(target: ProviderName, opts?: ToProviderOptions): RequestBuilder {
  return requestBuilderOf(
    (t, o) => {
      const b = new native.NativeRequestBuilder(t, o);
      return {
        // A long text crosses in pieces, as toProvider's does.
        pushJson: (messages: string) => (messages.length <= 4 * PIECE ? b.pushJson(messages) : b.pushUtf8(utf8Text(messages))),
        build: () => b.build(),
        meta: () => b.meta(),
        kept: () => b.kept(),
      };
    },
    target,
    opts,
  );
}
/** A provider request body → canonical messages (`{system?, messages, tools?}`). */
export const fromProvider = api.fromProvider;
/** One message at a time (the seed API): `normalize(message, provider)`, `denormalize(normalized, provider)`. */
export const MessageNormalizer = api.MessageNormalizer;

/** Options of `SessionMigrator.migrate`. */
export interface MigrateOptions {
  /** The target model (signatures of other models of the same provider are not kept). */
  model?: string;
  /** Called after each step (about 8 MiB of the source). */
  onProgress?: (p: MigrationProgress) => void;
  /** Bytes of source per step. Default 8 MiB. */
  stepBytes?: number;
  /**
   * Replace `targetPath` if it exists. Default `false`: an existing target is
   * `ALREADY_EXISTS` (checked before the migration starts, and again at the
   * end). A target that a `SessionWriter` holds is `SESSION_LOCKED` even with
   * `overwrite`: the rename happens under the target's writer lock.
   */
  overwrite?: boolean;
}

/** What `SessionMigrator.migrate` did. */
export interface MigrationResult {
  report: CompatibilityReport;
  /** Target tool-call id → original id, for every id that had to change. */
  idMap: Record<string, string>;
  messagesChanged: number;
  bytesRead: number;
}

/** Moving whole sessions between providers. */
export const SessionMigrator = {
  /** What moving any conversation from `source` to `target` may lose (before looking at one). */
  checkCompatibility(source: ProviderName, target: ProviderName): CompatibilityReport {
    return api.checkCompatibility(source, target);
  },

  /**
   * Rewrites the session file `sourcePath` (pi v1–v3 or forkpoint, `.jsonl` or
   * `.jsonl.gz`) so that every message can be sent to `targetProvider`, into
   * `targetPath`. Streams (never holds the file), keeps the tree (ids, parents,
   * order), and writes the target atomically: a temporary file beside it is
   * fsynced and renamed into place only at the end, so an error or a crash
   * leaves `targetPath` as it was. Messages without an origin are taken to
   * come from `sourceProvider`.
   *
   * Never replaces a file silently: an existing `targetPath` is
   * `ALREADY_EXISTS` unless `opts.overwrite`, and one a `SessionWriter` holds
   * is `SESSION_LOCKED` (always). Temporary files that a killed migration left
   * beside `targetPath` (`.{name}.migrating-{pid}-…`, their process gone) are
   * removed when it starts.
   */
  async migrate(
    sourcePath: string,
    sourceProvider: ProviderName,
    targetProvider: ProviderName,
    targetPath: string,
    opts: MigrateOptions = {},
  ): Promise<MigrationResult> {
    const m = call(() => new native.NativeMigration(sourcePath, sourceProvider, targetProvider, targetPath, opts.model ?? null, opts.overwrite ?? false));
    let last: MigrationProgress & { done: boolean } = { done: false, bytesRead: 0, totalBytes: 0, messagesChanged: 0 };
    try {
      while (!last.done) {
        last = JSON.parse(await callAsync(() => m.step(opts.stepBytes ?? 8 << 20)));
        opts.onProgress?.({ bytesRead: last.bytesRead, totalBytes: last.totalBytes, messagesChanged: last.messagesChanged });
      }
    } catch (e) {
      m.abort();
      throw e;
    }
    const r = JSON.parse(call(() => m.resultJson())) as { report: CompatibilityReport; idMap: Record<string, string> };
    return { ...r, messagesChanged: last.messagesChanged, bytesRead: last.bytesRead };
  },
};

/**
 * Options of `importSession`. The limits (`maxDecompressedBytes`,
 * `maxCompressionRatio`, `maxLineBytes`, `maxEntries`, `maxFileBytes`) apply
 * to the source as to `SessionLoader.open`; crossing one is `LIMIT_EXCEEDED`
 * (a file past `maxFileBytes` before it is read).
 */
export interface ImportOptions extends LimitOptions {
  /** `'auto'` (default: detected from the first lines), `'pi'`, `'claude-code'` or `'codex'`. */
  format?: 'auto' | 'pi' | 'claude-code' | 'codex';
  /**
   * Where to write the pi v3 session. Default for a path: beside it, with
   * `.forkpoint.jsonl` instead of `.jsonl`; required when `source` is bytes.
   */
  to?: string;
  /**
   * The new session's id (Claude Code and Codex imports). Default: derived
   * from the source's own session id (FORMAT.md §15.7), the same each time the
   * same source is imported. A pi file keeps its own id.
   */
  id?: string;
  /** A new random id instead of the derived one (Claude Code and Codex). Ignored with `id`. */
  copy?: boolean;
  /**
   * Called as the source file is read (`phase: 'read'`, in 8 MiB steps), then
   * once before it is converted and written (`phase: 'convert'`).
   */
  onProgress?: (p: { phase: 'read' | 'convert'; bytes: number; total: number }) => void;
  /**
   * Replace the target if it exists. Default `false`: an existing target is
   * `ALREADY_EXISTS` (so importing the same source twice never wipes what was
   * appended to the first import). A target that a `SessionWriter` holds is
   * `SESSION_LOCKED` even with `overwrite`.
   */
  overwrite?: boolean;
}

/**
 * Imports a session recorded by pi (v1–v3), Claude Code or the Codex CLI as a
 * forkpoint/pi v3 session file, written atomically to `opts.to`. Nothing is
 * skipped: metadata lines are kept as `custom` entries (FORMAT.md §15.7).
 * Resolves the path and a summary; open it with `SessionLoader.open(path)`.
 * An existing target is `ALREADY_EXISTS` unless `opts.overwrite`; one a
 * `SessionWriter` holds is `SESSION_LOCKED` (always).
 */
export async function importSession(source: string | Uint8Array, opts: ImportOptions = {}): Promise<{ path: string; summary: ImportSummary }> {
  let to = opts.to;
  if (to === undefined) {
    if (typeof source !== 'string') {
      throw new ForkpointError({ code: 'INVALID_INPUT', message: 'importSession: `to` is required when the source is bytes' });
    }
    to = join(dirname(source), basename(source).replace(/(\.jsonl)?(\.gz)?$/, '') + '.forkpoint.jsonl');
  }
  const dst = to;
  let bytes = typeof source === 'string' ? null : Buffer.from(source.buffer, source.byteOffset, source.byteLength);
  if (typeof source === 'string' && opts.onProgress) bytes = await readWithProgress(source, opts.onProgress, opts);
  if (opts.onProgress) opts.onProgress({ phase: 'convert', bytes: bytes?.byteLength ?? 0, total: bytes?.byteLength ?? 0 });
  const summary = JSON.parse(
    await callAsync(() =>
      native.importSessionJson(
        // With bytes read here, the path still names the source in errors.
        typeof source === 'string' ? source : null,
        bytes,
        dst,
        opts.format ?? 'auto',
        opts.id ?? (opts.copy ? randomUUID() : null),
        toJson(opts),
        opts.overwrite ?? false,
      ),
    ),
  ) as ImportSummary;
  return { path: dst, summary };
}

/** Reads the file at `path` in 8 MiB steps, reporting each (a missing file is `NOT_FOUND`). */
async function readWithProgress(path: string, onProgress: NonNullable<ImportOptions['onProgress']>, limits: LimitOptions): Promise<Buffer> {
  let fh;
  try {
    // Non-blocking: opening a FIFO must not wait for a writer (checked below).
    fh = await open(path, fsc.O_RDONLY | fsc.O_NONBLOCK);
  } catch (e) {
    throw fsError(e, path);
  }
  try {
    const st = await fh.stat();
    // As the core's reader says it (crates/fs io::regular_len).
    if (st.isDirectory()) throw new ForkpointError({ code: 'INVALID_INPUT', message: 'is a directory, not a session file', path });
    if (!st.isFile()) throw new ForkpointError({ code: 'INVALID_INPUT', message: 'is not a regular file (a FIFO, socket or device), not a session file', path });
    const total = st.size;
    // maxFileBytes, before anything is read (the core decides).
    call(() => native.checkFileSize(total, toJson(limits), path));
    if (total > bufc.MAX_LENGTH) throw new ForkpointError({ code: 'LIMIT_EXCEEDED', message: `the file is ${total} bytes, more than one buffer holds (${bufc.MAX_LENGTH})`, path });
    const out = Buffer.allocUnsafe(total);
    let off = 0;
    while (off < total) {
      const { bytesRead } = await fh.read(out, off, Math.min(8 << 20, total - off), off);
      if (bytesRead === 0) break;
      off += bytesRead;
      onProgress({ phase: 'read', bytes: off, total });
    }
    return out.subarray(0, off);
  } catch (e) {
    throw e instanceof ForkpointError ? e : fsError(e, path);
  } finally {
    await fh.close();
  }
}

/** A Node file-system error as a ForkpointError (`NOT_FOUND` for a missing file, else `IO`), with its path. */
function fsError(e: unknown, path: string): ForkpointError {
  const err = e as { code?: string; message?: string };
  const what = err.code === 'ENOENT' ? 'no such file' : (err.message ?? String(e)).replace(/^[A-Z]+: /, '');
  return new ForkpointError({ code: err.code === 'ENOENT' ? 'NOT_FOUND' : 'IO', message: `cannot read the source: ${what}`, path });
}
