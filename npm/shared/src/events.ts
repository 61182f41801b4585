import type { Bookmark, Channel, EventFilter, EventLogInfo } from '@forkpoint/types';
import { call, callAsync, toJson } from './errors.js';

/** What the napi and wasm builds expose for an event log. */
export interface NativeEventLogLike {
  infoJson(): string;
  append(eventJson: string): Promise<string>;
  readJson(since: number | null, until: number | null, filterJson: string | null): Promise<string>;
  /** Reads in parts (the Node build): each part is parsed while the next ones are read. */
  reader?(since: number | null, until: number | null, filterJson: string | null): NativeReaderLike;
  lastBookmarkJson(): string | Promise<string>;
  refresh(): void | Promise<void>;
  subscribe(filterJson: string | null, since: string, seq: number | null): number;
  poll(id: number, max: number): string;
  fill(id: number, since: number | null, limit: number): Promise<string>;
  unsubscribe(id: number): void;
  drainLiveJson(): string;
  close(): Promise<unknown>;
}

/** A read in parts: `take` gives a ready part (or `null`), `next` waits for one; `[]` ends. */
export interface NativeReaderLike {
  take(firstBytes: number, partBytes: number): string | null;
  next(maxBytes: number): Promise<string>;
  close(): void;
}

/** An event as stored: the log's envelope and the event's own fields. */
export interface LoggedEvent {
  seq: number;
  timestamp: number;
  channel: Channel;
  type: string;
  [key: string]: unknown;
}

/** An event to append: `type` is required; `channel` only for types Kode does not define. */
export interface NewEvent {
  type: string;
  channel?: Channel;
  [key: string]: unknown;
}

/** An item of a subscription. */
export interface BookmarkedEvent {
  bookmark: Bookmark;
  event: LoggedEvent;
}

/** Options of `subscribe`. */
export interface SubscribeOptions {
  channels?: Channel[];
  kinds?: string[];
  /**
   * Replay the events after this bookmark (or seq) first, then continue live;
   * `null` replays the whole log; absent: live events only.
   */
  since?: Bookmark | number | null;
}

/** Events handed to a subscription per step. */
const BATCH = 256;
/** A subscription's reads from storage start small (a fast first event) and grow to this. */
const MAX_FILL = 16384;
/**
 * Parts of a read: the first is read on the JS thread (parsing starts at once),
 * the rest on the addon's read-ahead thread while JS parses.
 */
const FIRST_PART = 256 << 10;
const PART = 512 << 10;
/** A long read lets the event loop run after about this many bytes parsed. */
const YIELD_BYTES = 8 << 20;
/** Runs `f` after pending I/O (setImmediate where there is one). */
const yieldToLoop: (f: () => void) => void =
  (globalThis as { setImmediate?: (f: () => void) => void }).setImmediate ?? ((f) => setTimeout(f, 0));
/** How often a read-only log looks for events another process appended. */
const FOLLOW_MS = 25;

const seqOf = (b: Bookmark | number): number => (typeof b === 'number' ? b : b.seq);
const bookmarkOf = (e: LoggedEvent): Bookmark => ({ seq: e.seq, timestamp: e.timestamp });

/**
 * An append-only log of events with bookmarks: one `seq` counter across the
 * `progress`, `control` and `monitor` channels, never reused (it continues from
 * the last durable event after a restart).
 */
export class EventLog {
  /** @internal */
  readonly native: NativeEventLogLike;
  /** What opening found: repairs, index rebuild, event count. */
  readonly info: EventLogInfo;
  private readonly buses = new Set<EventBus>();
  private waiters: Array<() => void> = [];
  private follow: ReturnType<typeof setInterval> | undefined;
  /** @internal Counts `pump()`s, so a subscriber knows whether a commit came since it polled. */
  commits = 0;
  /** @internal */
  closed = false;

  /** @internal */
  protected constructor(native: NativeEventLogLike) {
    this.native = native;
    this.info = JSON.parse(native.infoJson()) as EventLogInfo;
  }

  /** Appends an event; resolves to its bookmark once it is durable. */
  async append(event: NewEvent): Promise<Bookmark> {
    try {
      return JSON.parse(await callAsync(() => this.native.append(toJson(event)))) as Bookmark;
    } finally {
      this.pump();
    }
  }

  /** The events after `bookmark` (`null`: from the start), filtered, in seq order. */
  async readSince(bookmark: Bookmark | number | null, opts: EventFilter = {}): Promise<LoggedEvent[]> {
    return this.read(bookmark === null ? null : seqOf(bookmark), null, opts);
  }

  /** The events from `start` to `end`, both included. */
  async readRange(start: Bookmark | number, end: Bookmark | number, opts: EventFilter = {}): Promise<LoggedEvent[]> {
    const since = seqOf(start) - 1;
    return this.read(since < 0 ? null : since, seqOf(end), opts);
  }

  private async read(since: number | null, until: number | null, opts: EventFilter): Promise<LoggedEvent[]> {
    const native = this.native;
    const filter = toJson(opts);
    if (!native.reader) return JSON.parse(await callAsync(() => native.readJson(since, until, filter))) as LoggedEvent[];
    // In parts: the addon reads ahead on its own thread while this one parses.
    const reader = call(() => native.reader!(since, until, filter));
    try {
      let out: LoggedEvent[] = [];
      let parsed = 0;
      for (;;) {
        let text = call(() => reader.take(FIRST_PART, PART));
        if (text === null) text = await callAsync(() => reader.next(PART));
        if (text === '[]') return out;
        const part = JSON.parse(text) as LoggedEvent[];
        if (out.length === 0) out = part;
        else for (const e of part) out.push(e);
        parsed += text.length;
        if (parsed >= YIELD_BYTES) {
          parsed = 0;
          await new Promise<void>((resolve) => yieldToLoop(resolve));
        }
      }
    } finally {
      reader.close();
    }
  }

  /** The last durable event's bookmark (`null` for an empty log), read from the tail. */
  async lastBookmark(): Promise<Bookmark | null> {
    return JSON.parse(await callAsync(async () => this.native.lastBookmarkJson())) as Bookmark | null;
  }

  /** Waits for pending appends and releases the log (and its lock). */
  async close(): Promise<void> {
    this.closed = true;
    this.stopFollowing();
    this.wake(); // waiting subscriptions end
    await callAsync(() => this.native.close());
  }

  /** @internal Hands new committed events to live handlers and wakes subscribers. */
  pump(): void {
    const text = call(() => this.native.drainLiveJson());
    this.commits++;
    const listening = [...this.buses].filter((b) => b.hasHandlers());
    if (listening.length > 0) {
      const lines = JSON.parse(text) as LoggedEvent[];
      for (const bus of listening) bus.dispatch(lines);
    }
    this.wake();
  }

  /** @internal Resolves everyone waiting in `nextCommit` (they look again). */
  wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  /** @internal */
  attach(bus: EventBus): void {
    this.buses.add(bus);
  }

  /**
   * @internal Resolves at the next commit after the `seen`-th (at once if it
   * already came, or the log is closed), or, read-only, when the file grew.
   * A read-only log polls the file while someone waits, and that keeps the
   * process alive, as a `tail -f` does: a follower waiting for events does not
   * silently end when nothing else is scheduled.
   */
  nextCommit(seen: number): Promise<void> {
    if (this.closed || this.commits !== seen) return Promise.resolve();
    const p = new Promise<void>((resolve) => this.waiters.push(resolve));
    this.startFollowing();
    return p;
  }

  /**
   * @internal Read-only logs: looks at the file every 25 ms while someone waits
   * for events or a live handler is bound (`on`), and hands what another process
   * appended to them. It keeps the process alive meanwhile, as `tail -f` does.
   */
  startFollowing(): void {
    if (!this.info.readOnly || this.follow !== undefined || this.closed) return;
    this.follow = setInterval(() => {
      if (this.waiters.length === 0 && ![...this.buses].some((b) => b.hasHandlers())) {
        this.stopFollowing();
        return;
      }
      void Promise.resolve(this.native.refresh()).then(() => this.pump(), () => this.pump());
    }, FOLLOW_MS);
  }

  private stopFollowing(): void {
    if (this.follow !== undefined) clearInterval(this.follow);
    this.follow = undefined;
  }
}

type Handler = (event: LoggedEvent) => void;

/**
 * Emits events through an event log and streams them: `on` for live events,
 * `subscribe` for history then live, exactly once and in seq order.
 */
export class EventBus {
  readonly log: EventLog;
  private readonly handlers = new Map<string, Set<Handler>>();

  constructor(log: EventLog) {
    this.log = log;
    log.attach(this);
  }

  /** Appends an event; resolves to its bookmark once durable (in the log's durability mode). */
  emit(event: NewEvent): Promise<Bookmark> {
    return this.log.append(event);
  }

  /** Calls `handler` for every committed event of this type or channel from now on. */
  on(typeOrChannel: string, handler: Handler): () => void {
    let set = this.handlers.get(typeOrChannel);
    if (!set) this.handlers.set(typeOrChannel, (set = new Set()));
    set.add(handler);
    // A read-only log follows the file while a handler is bound.
    this.log.startFollowing();
    return () => {
      set.delete(handler);
    };
  }

  /** @internal */
  hasHandlers(): boolean {
    for (const set of this.handlers.values()) if (set.size > 0) return true;
    return false;
  }

  /** @internal */
  dispatch(events: LoggedEvent[]): void {
    for (const e of events) {
      for (const key of [e.type, e.channel]) {
        for (const h of this.handlers.get(key) ?? []) {
          try {
            h(e);
          } catch (err) {
            queueMicrotask(() => {
              throw err;
            });
          }
        }
      }
    }
  }

  /**
   * History after `since`, then live events, each exactly once and in seq order,
   * also while other code emits. A slow consumer does not grow memory: it reads
   * the log. Breaking out of the loop ends the subscription.
   */
  subscribe(opts: SubscribeOptions = {}): AsyncIterableIterator<BookmarkedEvent> {
    const log = this.log;
    const native = log.native;
    const filter = toJson({ channels: opts.channels, kinds: opts.kinds });
    const [kind, seq] = opts.since === undefined ? ['live', null] : opts.since === null ? ['start', null] : ['after', seqOf(opts.since)];
    const id = call(() => native.subscribe(filter, kind, seq));
    let closed = false;
    let buffer: LoggedEvent[] = [];
    let at = 0;
    let fill = BATCH;
    const close = () => {
      if (!closed) {
        closed = true;
        buffer = [];
        try {
          native.unsubscribe(id);
        } catch {
          // the log was closed
        }
        log.wake(); // a pending next() ends
      }
    };
    type Batch = { events: LoggedEvent[] | null; stored: boolean; seen: number };
    // The next batch: events from the ring, a read from storage, or null events
    // (caught up as of the `seen`-th commit).
    const fetch = async (): Promise<Batch> => {
      const seen = log.commits;
      const step = JSON.parse(call(() => native.poll(id, BATCH))) as
        | { kind: 'events'; events: LoggedEvent[] }
        | { kind: 'read'; since: number | null; limit: number }
        | { kind: 'pending' };
      if (step.kind === 'events') return { events: step.events, stored: false, seen };
      if (step.kind === 'pending') return { events: null, stored: false, seen };
      const events = JSON.parse(await callAsync(() => native.fill(id, step.since, fill))) as LoggedEvent[];
      fill = Math.min(fill * 4, MAX_FILL);
      return { events, stored: true, seen };
    };
    // While catching up from storage, the next read runs while this batch is consumed
    // (at most two batches are held: memory stays bounded).
    let ahead: Promise<Batch> | null = null;
    const refill = async (): Promise<IteratorResult<BookmarkedEvent>> => {
      for (;;) {
        if (closed || log.closed) return { done: true, value: undefined };
        if (at < buffer.length) {
          const e = buffer[at++]!;
          return { done: false, value: { bookmark: bookmarkOf(e), event: e } };
        }
        at = 0;
        buffer = [];
        const next = ahead ?? fetch();
        ahead = null;
        const got = await next;
        if (closed) return { done: true, value: undefined };
        if (got.events === null) {
          // Caught up: wait for a commit after the poll (one that came since returns at once).
          await log.nextCommit(got.seen);
          continue;
        }
        buffer = got.events;
        if (got.stored && buffer.length > 0) {
          ahead = fetch();
          ahead.catch(() => undefined); // awaited (and rethrown) by the next refill
        }
      }
    };
    // One refill at a time: a next() called while another is pending waits for it.
    let pending: Promise<IteratorResult<BookmarkedEvent>> | null = null;
    const it: AsyncIterableIterator<BookmarkedEvent> = {
      next(): Promise<IteratorResult<BookmarkedEvent>> {
        if (pending) return pending.then(() => it.next(), () => it.next());
        // Buffered events skip the async machinery (one resolved promise each).
        if (!closed && at < buffer.length) {
          const e = buffer[at++]!;
          return Promise.resolve({ done: false, value: { bookmark: bookmarkOf(e), event: e } });
        }
        const p = refill();
        pending = p;
        const clear = () => {
          if (pending === p) pending = null;
        };
        p.then(clear, clear);
        return p;
      },
      async return(): Promise<IteratorResult<BookmarkedEvent>> {
        close();
        return { done: true, value: undefined };
      },
      [Symbol.asyncIterator]() {
        return it;
      },
    };
    return it;
  }
}
