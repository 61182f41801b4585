import type { EventLogOptions } from '@forkpoint/types';
import { EventLog as SharedEventLog, callAsync, toJson } from '@forkpoint/shared';
import type { NativeEventLogLike } from '@forkpoint/shared';
import * as native from '../native/binding.js';

/**
 * An append-only event log file with bookmarks (`events.jsonl`). One writer per
 * file (an OS lock; a second gets `LOG_LOCKED`); other processes open it with
 * `{ readOnly: true }` to read and follow it.
 */
export class EventLog extends SharedEventLog {
  /**
   * Opens (or creates) an event log. A torn last line is cut off; the sparse
   * index beside it (`<file>.idx.json`) is rebuilt when missing or stale.
   */
  static async open(path: string, opts?: EventLogOptions): Promise<EventLog> {
    const o = opts === undefined ? undefined : toJson(opts);
    return new EventLog(await callAsync(() => native.NativeEventLog.open(path, o)));
  }

  /** @internal An agent's log, opened by the agent. */
  static fromNative(n: NativeEventLogLike): EventLog {
    return new EventLog(n);
  }
}
