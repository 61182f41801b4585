import type { ErrorCode, ErrorInfo } from '@forkpoint/types';

/** Marks a ForkpointError of any copy of this module (see `Symbol.hasInstance` below). */
const BRAND = Symbol.for('forkpoint.ForkpointError');

/**
 * Every error forkpoint throws. `code` is stable across releases; `path`,
 * `line` (1-based) and `offset` (byte offset of the line) are set where they apply.
 * `instanceof ForkpointError` holds for the errors of both `forkpoint` and
 * `forkpoint-web`, also when one program uses both (each package carries its
 * own copy of this class).
 */
export class ForkpointError extends Error {
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as { [BRAND]?: unknown })[BRAND] === true;
  }

  readonly code: ErrorCode;
  readonly path?: string;
  readonly line?: number;
  readonly offset?: number;

  constructor(info: { code: ErrorCode; message: string; path?: string | null; line?: number | null; offset?: number | null }) {
    super(info.message);
    this.name = 'ForkpointError';
    this.code = info.code;
    if (info.path != null) this.path = info.path;
    if (info.line != null) this.line = info.line;
    if (info.offset != null) this.offset = info.offset;
  }
}
Object.defineProperty(ForkpointError.prototype, BRAND, { value: true });

function parseInfo(message: string): ErrorInfo | undefined {
  if (!message.startsWith('{"code":')) return undefined;
  try {
    return JSON.parse(message) as ErrorInfo;
  } catch {
    return undefined;
  }
}

/**
 * Turns whatever a native call threw into a `ForkpointError`: core errors arrive
 * as JSON in the message; argument conversion failures become `INVALID_INPUT`;
 * a WebAssembly trap becomes `INTERNAL`.
 */
export function toForkpointError(e: unknown): ForkpointError {
  if (e instanceof ForkpointError) return e;
  const message = e instanceof Error ? e.message : String(e);
  const info = parseInfo(message);
  if (info) return new ForkpointError(info);
  const wasm = (globalThis as { WebAssembly?: { RuntimeError?: abstract new (...args: never[]) => Error } }).WebAssembly;
  if (wasm?.RuntimeError && e instanceof wasm.RuntimeError) {
    return new ForkpointError({ code: 'INTERNAL', message: `forkpoint crashed: ${message} (please report this)` });
  }
  if (/convert|expected|invalid type|is not a|must be/i.test(message)) {
    return new ForkpointError({ code: 'INVALID_INPUT', message });
  }
  return new ForkpointError({ code: 'INTERNAL', message });
}

/** Calls `f`, rethrowing any error as a `ForkpointError`. */
export function call<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    throw toForkpointError(e);
  }
}

/** Awaits `f()`, rethrowing any error as a `ForkpointError`. */
export async function callAsync<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    throw toForkpointError(e);
  }
}

/**
 * `JSON.stringify` for values a caller hands over to the native side. A value
 * nested too deeply for the JavaScript stack, a cycle or a BigInt is
 * `INVALID_INPUT` (naming `what`), thrown before anything is sent or stored.
 */
export function toJson(value: unknown, what = 'the value'): string {
  try {
    return JSON.stringify(value);
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    if (e instanceof RangeError && /call stack/i.test(message)) {
      throw new ForkpointError({ code: 'INVALID_INPUT', message: `${what} is nested too deeply to be converted to JSON (${message})` });
    }
    if (e instanceof RangeError) {
      throw new ForkpointError({ code: 'INVALID_INPUT', message: `${what} is too large to be converted to JSON (${message})` });
    }
    throw new ForkpointError({ code: 'INVALID_INPUT', message: `${what} cannot be converted to JSON: ${message}` });
  }
}
