/**
 * Group commit on the JavaScript side of a model call: what arrives while a
 * write runs goes out together in the next write, and a write starts at most
 * once per `intervalMs` (the core's figure). The writes themselves run off the
 * JavaScript thread (the addon's worker pool, or IndexedDB).
 *
 * The wait between two writes ends on a timer or on the first arrival after
 * it is due, whichever comes first: in a burst the event loop can stay in one
 * poll phase (reading the socket) for tens of milliseconds, during which no
 * timer fires, so a timer alone would hold every piece of the burst back.
 */
export class GroupCommit<T> {
  private queued: T[] = [];
  private running: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private dueAt = -Infinity;
  private ending = false;
  /** The error of the write that failed; nothing is written after it. */
  failed: unknown = null;
  /** Set when a write returned `true` (the writer wants no more). */
  stopped = false;

  /**
   * @param write sends one group; returns `true` to stop (what is queued is dropped)
   * @param intervalMs the least time between the starts of two writes
   * @param halted checked before each write (e.g. the call was interrupted)
   */
  constructor(
    private readonly write: (items: T[]) => Promise<boolean>,
    private readonly intervalMs: number,
    private readonly halted: () => boolean = () => false,
  ) {}

  push(item: T): void {
    this.queued.push(item);
    if (this.wake !== null && performance.now() >= this.dueAt) this.wake();
    this.kick();
  }

  /** Sends what is queued at once and waits for every write to finish. */
  async end(): Promise<void> {
    this.ending = true;
    this.wake?.();
    while (this.running) await this.running;
  }

  private kick(): void {
    if (this.running) return;
    const f = this.loop();
    this.running = f;
    void f.finally(() => {
      if (this.running !== f) return;
      this.running = null;
      // Pushed after the loop saw an empty queue but before this ran.
      if (this.queued.length > 0 && !this.stopped && this.failed === null && !this.halted()) this.kick();
    });
  }

  private async loop(): Promise<void> {
    try {
      while (this.queued.length > 0 && !this.stopped && this.failed === null && !this.halted()) {
        const gap = this.dueAt - performance.now();
        if (gap > 0 && !this.ending) {
          await new Promise<void>((resolve) => {
            const t = setTimeout(resolve, gap);
            this.wake = () => {
              clearTimeout(t);
              resolve();
            };
          });
          this.wake = null;
        }
        this.dueAt = performance.now() + this.intervalMs;
        const items = this.queued;
        this.queued = [];
        if (await this.write(items)) this.stopped = true;
      }
    } catch (e) {
      this.failed = e;
    }
  }
}
