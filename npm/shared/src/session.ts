import type {
  LazyMetadata,
  AgentMessage,
  AnySessionEntry,
  LlmMessage,
  ProviderName,
  ToProviderOptions,
  SessionContext,
  SessionHeader,
  SessionMetadata,
  TreeNode,
  TreeRun,
} from '@forkpoint/types';
import { call, callAsync } from './errors.js';
import { parseConversion, optionsText, providerName, type ProviderConversion } from './normalize.js';

/** What both the napi and the wasm builds expose for a loaded session. */
export interface NativeSessionLike {
  metadataJson(): string;
  headerJson(): string;
  entryCount(): number;
  entriesJson(start: number, end: number): string;
  entryJson(id: string): string;
  pathJson(id: string): string;
  nodesJson(which: string, id?: string | null): string;
  treeJson(): string;
  label(id: string): string | null | undefined;
  contextJson(leafId?: string | null, llm?: boolean | null): string;
  toProviderBytes(leafId: string | null | undefined, target: string, options?: string | null): Uint8Array;
  leafId(): string | null | undefined;
  toBytes(): Uint8Array;
}

/** Walks the branches of a session. */
export interface SessionBranch {
  /** Entries without children, in file order. */
  getLeaves(): TreeNode[];
  /** Entries from the root down to `id` (inclusive). Throws `NOT_FOUND`. */
  getPath(id: string): AnySessionEntry[];
  /** Entries with two or more children, in file order. */
  getBranchPoints(): TreeNode[];
  /** Entries without a parent (orphans included). */
  getRoots(): TreeNode[];
  /** The children of an entry, in file order. Throws `NOT_FOUND`. */
  getChildren(id: string): TreeNode[];
  /** The label of an entry, if one is set. */
  getLabel(id: string): string | undefined;
  /** The whole tree with linear runs collapsed, depth-first (for tree views). */
  getTree(): TreeRun[];
}

/** Entries per JSON page handed over from the native side. */
const PAGE = 20_000;

/** Options of `getContext`. */
export interface ContextOptions {
  /** Convert to the messages pi sends to the LLM (`convertToLlm`). */
  llm?: boolean;
}

/**
 * A loaded session: entries, metadata, branches and the LLM context from any
 * leaf. The same class backs `SessionLoader` (Node) and `Session` (browser).
 */
export class SessionView {
  /** @internal */
  protected readonly native: NativeSessionLike;

  /** @internal */
  protected constructor(native: NativeSessionLike) {
    this.native = native;
  }

  /** The header line (first line of the file) as written. */
  getHeader(): SessionHeader {
    return JSON.parse(call(() => this.native.headerJson())) as SessionHeader;
  }

  /** Number of entries (header excluded). */
  get entryCount(): number {
    return call(() => this.native.entryCount());
  }

  /**
   * Entries in file order (header excluded), migrated to version 3 for older
   * files. Unknown entry types and fields are kept as written. `start`/`limit`
   * select a page.
   */
  getEntries(opts: { start?: number; limit?: number } = {}): AnySessionEntry[] {
    const total = this.entryCount;
    const start = Math.max(0, Math.min(total, opts.start ?? 0));
    const end = opts.limit === undefined ? total : Math.min(total, start + Math.max(0, opts.limit));
    const out: AnySessionEntry[] = [];
    for (let i = start; i < end; i += PAGE) {
      const page = JSON.parse(call(() => this.native.entriesJson(i, Math.min(end, i + PAGE)))) as AnySessionEntry[];
      for (const e of page) out.push(e);
    }
    return out;
  }

  /** One entry by id. Throws `NOT_FOUND`. */
  getEntry(id: string): AnySessionEntry {
    return JSON.parse(call(() => this.native.entryJson(id))) as AnySessionEntry;
  }

  /** Facts about the session: ids, counts, timestamps, repairs. */
  getMetadata(): SessionMetadata {
    return JSON.parse(call(() => this.native.metadataJson())) as SessionMetadata;
  }

  /** The current leaf (see `SessionMetadata.leafId`). */
  get leafId(): string | null {
    return call(() => this.native.leafId()) ?? null;
  }

  /** The tree of entries. */
  getBranch(): SessionBranch {
    const n = this.native;
    const nodes = (which: string, id?: string) => JSON.parse(call(() => n.nodesJson(which, id))) as TreeNode[];
    return {
      getLeaves: () => nodes('leaves'),
      getBranchPoints: () => nodes('branchPoints'),
      getRoots: () => nodes('roots'),
      getChildren: (id: string) => nodes('children', id),
      getPath: (id: string) => JSON.parse(call(() => n.pathJson(id))) as AnySessionEntry[],
      getLabel: (id: string) => call(() => n.label(id)) ?? undefined,
      getTree: () => JSON.parse(call(() => n.treeJson())) as TreeRun[],
    };
  }

  /**
   * The messages of the context from `leafId` (default: the current leaf),
   * exactly as pi's `buildSessionContext` builds them. Throws `NOT_FOUND` for an
   * unknown id.
   */
  getContext(leafId?: string): AgentMessage[] {
    return this.getSessionContext(leafId).messages;
  }

  /** The context with the thinking level and model in force at the leaf. */
  getSessionContext(leafId?: string, opts: ContextOptions = {}): SessionContext {
    return JSON.parse(call(() => this.native.contextJson(leafId ?? null, opts.llm ?? false))) as SessionContext;
  }

  /** The messages pi would send to the LLM from `leafId` (`convertToLlm` applied). */
  getLlmContext(leafId?: string): LlmMessage[] {
    return this.getSessionContext(leafId, { llm: true }).messages as unknown as LlmMessage[];
  }

  /**
   * The context from `opts.leafId` (default: the current leaf) as a request
   * body for `target`, with the report of every step (`toProvider` on the
   * messages pi would send). The context is built and converted in the native
   * code and never goes through JS objects.
   */
  toProvider(target: ProviderName, opts: ToProviderOptions & { leafId?: string } = {}): ProviderConversion {
    const { leafId, ...rest } = opts;
    return parseConversion(
      call(() => this.native.toProviderBytes(leafId ?? null, providerName(target, 'the target'), optionsText(Object.keys(rest).length ? rest : undefined))),
    );
  }

  /** The file's bytes exactly as loaded: an unchanged session writes back identically. */
  toBytes(): Uint8Array {
    return call(() => this.native.toBytes());
  }
}

/** What both builds expose for a lazily resumed session. */
export interface NativeLazyLike {
  contextJson(llm: boolean): string;
  metadataJson(): string;
  loadMoreHistory(n: number): Promise<string>;
}

/**
 * A session resumed from its tail: the context from the current leaf without
 * reading the whole session. The same class backs `LazySession` in the Node
 * package (files) and in the browser package (IndexedDB).
 */
export class LazyView {
  /** @internal */
  protected readonly native: NativeLazyLike;

  /** @internal */
  constructor(native: NativeLazyLike) {
    this.native = native;
  }

  /** The context from the current leaf: equal to a full load's unless `maxMessages` cuts it. */
  getContext(): AgentMessage[] {
    return this.getSessionContext().messages;
  }

  /** The context with the thinking level and model in force. */
  getSessionContext(opts: { llm?: boolean } = {}): SessionContext {
    return JSON.parse(call(() => this.native.contextJson(opts.llm ?? false))) as SessionContext;
  }

  /** Facts about the resume: how the tail was found, bytes read, counts when known. */
  getMetadata(): LazyMetadata {
    return JSON.parse(call(() => this.native.metadataJson())) as LazyMetadata;
  }

  /**
   * Loads up to `n` older messages (default 50), oldest first: first the newest
   * of those `maxMessages` cut from the context, then history from before the
   * context (the compacted part). Returns `[]` when nothing older remains.
   */
  async loadMoreHistory(n = 50): Promise<AgentMessage[]> {
    return JSON.parse(await callAsync(() => this.native.loadMoreHistory(n))) as AgentMessage[];
  }
}
