/**
 * Moving conversations between providers: the canonical model
 * (`NormalizedMessage`), `toProvider` / `fromProvider`, `MessageNormalizer`
 * and `SessionMigrator.checkCompatibility`. The Node package and the browser
 * package build these from their native module (`createNormalizer`).
 *
 * JSON crosses as text: pass a string to keep number spellings exactly
 * (`1.10` stays `1.10`); `body` is the exact request text to send.
 */
import type {
  CompatibilityReport,
  NormalizedConversation,
  NormalizedMessage,
  ProviderName,
  ToProviderOptions,
} from '@forkpoint/types';
import { call, ForkpointError, toJson } from './errors.js';

/** The native functions (napi or wasm) behind the API. */
export interface NativeNormalizerLike {
  fromProviderJson(request: string, provider: string): string;
  /** The request's JSON, a newline, then `{report, idMap, nameMap}`, as UTF-8 bytes. */
  toProviderBytes(messages: string, target: string, options?: string | null): Uint8Array;
  normalizeMessageJson(message: string, provider: string): string;
  denormalizeMessageJson(normalized: string, provider: string, model?: string | null): string;
  checkCompatibilityJson(source: string, target: string): string;
}

/** A request body for a provider, with what the conversion did. */
export interface ProviderConversion {
  /**
   * The request body fragment the provider takes: Anthropic `{system?, messages}`,
   * OpenAI Chat `{messages}`, Responses `{instructions?, input}`, Gemini
   * `{systemInstruction?, contents}` (plus `tools` when given). Merge it into
   * your request (`{model, max_tokens, ...request}`).
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  request: any;
  /** Every step taken, lossy or not; `compatible` is false when something was lost. */
  report: CompatibilityReport;
  /** Target tool-call id → original id, for every id that had to change. */
  idMap: Record<string, string>;
  /** Target tool name → original name, for every name that had to change. */
  nameMap: Record<string, string>;
  /** `request` as the exact JSON text (number spellings kept); made from `bodyBytes` on first use. */
  body: string;
  /** `body` as UTF-8 bytes, as it is sent (`fetch(url, { body: bodyBytes })`): no string is made unless `body` is read. */
  bodyBytes: Uint8Array;
  /**
   * `bodyBytes` in parts, in order: one part for `toProvider`; for
   * `RequestBuilder.build`, the parts kept from the build before are the same
   * objects (never copied again), so sending the parts as they are (a
   * stream, a `Blob`) costs what is new, not the conversation's length.
   * `bodyBytes` joins them on first use. Read them, never write them: the
   * kept parts are shared with the builder's later requests.
   */
  bodyParts: readonly Uint8Array[];
}

/** What `fromProvider` returns. */
export interface FromProviderResult extends NormalizedConversation {
  /** The same as JSON text (number spellings inside arguments kept). */
  json: string;
}

/** What `MessageNormalizer.denormalizeWithReport` returns. */
export interface DenormalizedMessage {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  message: any;
  report: CompatibilityReport;
}

/** Canonical messages, a conversation, or its JSON text. */
export type MessagesInput = NormalizedMessage[] | NormalizedConversation | string;

/** A lone UTF-16 surrogate (a half of a pair): JSON text can hold it only as an escape. */
const LONE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * JSON text for the native side. Text given by the caller may hold raw lone
 * surrogates (inside string literals, the only place JSON allows them); they
 * are written as `\uXXXX` escapes, which mean the same, so that they reach the
 * core as they are (a raw one would become U+FFFD on the way without a report).
 */
function text(v: unknown, what: string): string {
  if (v === undefined || v === null) throw new ForkpointError({ code: 'INVALID_INPUT', message: `${what} is missing` });
  const t = typeof v === 'string' ? v : toJson(v, what);
  const wellFormed = (t as unknown as { isWellFormed?: () => boolean }).isWellFormed?.() ?? t.search(LONE) === -1;
  return wellFormed ? t : t.replace(LONE, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

function name(v: unknown, what: string): string {
  if (typeof v !== 'string') throw new ForkpointError({ code: 'INVALID_INPUT', message: `${what} must be a string (anthropic, openai, openai-responses or google)` });
  return v;
}

/** The conversion API over a native module. */
export interface Normalizer {
  toProvider(messages: MessagesInput, target: ProviderName, opts?: ToProviderOptions): ProviderConversion;
  fromProvider(request: object | string, provider: ProviderName): FromProviderResult;
  MessageNormalizer: {
    normalize(message: object | string, provider: ProviderName): NormalizedMessage | NormalizedMessage[];
    denormalize(normalized: NormalizedMessage | NormalizedMessage[] | string, provider: ProviderName, opts?: { model?: string }): unknown;
    denormalizeWithReport(normalized: NormalizedMessage | NormalizedMessage[] | string, provider: ProviderName, opts?: { model?: string }): DenormalizedMessage;
  };
  checkCompatibility(source: ProviderName, target: ProviderName): CompatibilityReport;
}


type ConversionMeta = Pick<ProviderConversion, 'report' | 'idMap' | 'nameMap'>;

/** UTF-8 bytes as a string: Node's `Buffer` decoder where there is one (faster than `TextDecoder` in Node 20), else `TextDecoder`. */
const decodeUtf8: (bytes: Uint8Array) => string = (() => {
  const B = (globalThis as { Buffer?: { from(b: ArrayBufferLike, offset: number, length: number): { toString(enc: string): string } } }).Buffer;
  if (B) return (bytes: Uint8Array) => B.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  const d = new TextDecoder();
  return (bytes: Uint8Array) => d.decode(bytes);
})();

/** How a body's bytes become `body`: `decodeUtf8` unless the build has its own (`useBodyDecoder`). */
let decodeBody = decodeUtf8;

/**
 * @internal The build's own maker of `body` from its bytes, for every
 * `body` read after this call (the addon's makes a string whose characters V8
 * keeps outside its heap, without V8's UTF-8 decoder).
 */
export function useBodyDecoder(decode: (bytes: Uint8Array) => string): void {
  decodeBody = decode;
}

/**
 * @internal A conversion from its body's bytes and `{report, idMap, nameMap}`
 * as JSON text; `body`, `request` and the metadata are made on first use.
 */
function conversionOf(parts: readonly Uint8Array[], metaText: () => string): ProviderConversion {
  let meta: ConversionMeta | undefined;
  const m = () => (meta ??= JSON.parse(metaText()) as ConversionMeta);
  let bytes: Uint8Array | undefined = parts.length === 1 ? parts[0] : undefined;
  let body: string | undefined;
  let request: unknown;
  let parsed = false;
  return {
    bodyParts: parts,
    get bodyBytes() {
      return (bytes ??= concat(parts));
    },
    get body() {
      return (body ??= decodeBody(this.bodyBytes));
    },
    get request() {
      if (!parsed) {
        request = JSON.parse(this.body);
        parsed = true;
      }
      return request;
    },
    get report() {
      return m().report;
    },
    get idMap() {
      return m().idMap;
    },
    get nameMap() {
      return m().nameMap;
    },
  };
}

/** The bytes of several chunks as one (a copy). */
export function concat(parts: readonly Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.byteLength;
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/**
 * @internal A request body's parts from what the native side gives,
 * `[id, bytes | null, …]`: id 0 is a part of that body alone; another is a
 * piece of a kept conversion, whose bytes come once and then as `null` (this
 * keeps the pieces of the last body by id).
 */
export class BodyPieces {
  private last = new Map<number, Uint8Array>();

  parts(flat: ReadonlyArray<number | Uint8Array | null>): Uint8Array[] {
    const parts: Uint8Array[] = [];
    const now = new Map<number, Uint8Array>();
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const id = flat[i] as number;
      const bytes = (flat[i + 1] as Uint8Array | null) ?? this.last.get(id);
      if (bytes === undefined) throw new ForkpointError({ code: 'INTERNAL', message: `piece ${id} of a request body was given before, but not kept` });
      if (id !== 0) now.set(id, bytes);
      parts.push(bytes);
    }
    this.last = now;
    return parts;
  }
}

/** @internal The native output of a conversion: the request's JSON, a newline (compact JSON has none), then `{report, idMap, nameMap}`, as UTF-8 bytes. */
export function parseConversion(out: Uint8Array): ProviderConversion {
  const nl = out.lastIndexOf(10);
  const metaBytes = out.subarray(nl + 1);
  return conversionOf([out.subarray(0, nl)], () => decodeUtf8(metaBytes));
}

/** @internal Options as JSON text for the native side. */
export function optionsText(opts: unknown): string | null {
  return opts === undefined ? null : text(opts, 'the options');
}

/** @internal Checks a provider name argument. */
export function providerName(v: unknown, what: string): string {
  return name(v, what);
}

/**
 * Builds the API over `n`. `rawText`: `n.toProviderBytes` takes its text as
 * UTF-16 and keeps lone surrogates itself (the Node addon), so the text is not
 * scanned for them here.
 */
export function createNormalizer(n: NativeNormalizerLike, how: { rawText?: boolean } = {}): Normalizer {
  const denormalizeWithReport = (
    normalized: NormalizedMessage | NormalizedMessage[] | string,
    provider: ProviderName,
    opts?: { model?: string },
  ): DenormalizedMessage =>
    JSON.parse(call(() => n.denormalizeMessageJson(text(normalized, 'the message'), name(provider, 'the provider'), opts?.model ?? null)));
  return {
    toProvider(messages, target, opts) {
      // A `fromProvider` result: its `json` copy is not sent again (edits to `messages` count).
      const input =
        messages && typeof messages === 'object' && !Array.isArray(messages) && 'json' in messages ? { ...messages, json: undefined } : messages;
      // JSON.stringify escapes lone surrogates itself; the addon escapes those of given text.
      const messagesText =
        how.rawText && input !== undefined && input !== null ? (typeof input === 'string' ? input : toJson(input, 'the messages')) : text(input, 'the messages');
      const out = call(() => n.toProviderBytes(messagesText, name(target, 'the target'), opts === undefined ? null : text(opts, 'the options')));
      return parseConversion(out);
    },
    fromProvider(request, provider) {
      const json = call(() => n.fromProviderJson(text(request, 'the request'), name(provider, 'the provider')));
      return { ...(JSON.parse(json) as NormalizedConversation), json };
    },
    MessageNormalizer: {
      normalize: (message, provider) => JSON.parse(call(() => n.normalizeMessageJson(text(message, 'the message'), name(provider, 'the provider')))),
      denormalize: (normalized, provider, opts) => denormalizeWithReport(normalized, provider, opts).message,
      denormalizeWithReport,
    },
    checkCompatibility: (source, target) =>
      JSON.parse(call(() => n.checkCompatibilityJson(name(source, 'the source provider'), name(target, 'the target provider')))),
  };
}

/** The native side of a `RequestBuilder` (napi or wasm). */
export interface NativeRequestBuilderLike {
  pushJson(messages: string): number;
  /** The body's parts, `[id, bytes | null, …]` (`BodyPieces`). */
  build(): Array<number | Uint8Array | null>;
  /** The last build's `{report, idMap, nameMap}`, made when read. */
  meta(): { json(): string };
  kept(): number;
}

/** A request built by `RequestBuilder.build` (the same as a `toProvider` result). */
export type BuiltRequest = ProviderConversion;

/**
 * The requests of a conversation that grows, for one target (an agent's model
 * calls): `push` the new messages, `build` the request for the whole
 * conversation. A build converts only the messages after the last assistant
 * turn of the build before (the rest is kept, converted), so its cost follows
 * what is new, not the conversation's length. Each body is the one
 * `toProvider` gives for all the messages pushed so far.
 */
export class RequestBuilder {
  /** @internal */
  private readonly native: NativeRequestBuilderLike;
  /** @internal */
  private readonly pieces = new BodyPieces();

  /** @internal */
  constructor(native: NativeRequestBuilderLike) {
    this.native = native;
  }

  /** Appends canonical messages (objects, or their JSON text as an array); returns how many there are. */
  push(messages: NormalizedMessage | NormalizedMessage[] | string): number {
    return call(() => this.native.pushJson(text(messages, 'the messages')));
  }

  /** Messages whose conversion the next build reuses. */
  get kept(): number {
    return this.native.kept();
  }

  /** The request for every message pushed so far. */
  build(): BuiltRequest {
    const parts = this.pieces.parts(call(() => this.native.build()));
    // This build's, also after the next (a handle: made when read).
    const meta = this.native.meta();
    return conversionOf(parts, () => call(() => meta.json()));
  }
}

/** @internal A `RequestBuilder` over the native constructor of a build. */
export function requestBuilderOf(
  make: (target: string, options: string | null) => NativeRequestBuilderLike,
  target: ProviderName,
  opts?: ToProviderOptions,
): RequestBuilder {
  return new RequestBuilder(call(() => make(name(target, 'the target'), optionsText(opts))));
}
