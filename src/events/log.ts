/**
 * The event log (docs/design.md §9): every event casket publishes, in one
 * order, each with an id that is its SSE `id:` and its record's sequencer.
 * The stream (stream.ts) and the webhook outbox (webhooks.ts) read it from a
 * cursor, so a subscriber that resumes with Last-Event-ID and a webhook
 * target after a restart both pick up where they left off, and nothing a
 * reader does ever waits a write: a write appends, readers pull.
 *
 * One per state store: memory-log.ts (memory), sqlite-log.ts (sqlite, its
 * own file in the data dir), redis-log.ts (redis: a Redis Stream every
 * casket appends to and reads, so each casket's stream carries every
 * casket's events in the one order of the stream). Bounded: the oldest
 * events are forgotten past `maxEvents` (and, for sqlite, the state TTL); a
 * reader whose cursor fell behind that is told (`lost`).
 */
import type { LoggedEvent, StoredRecord } from './record.js';

export interface EventPage {
  events: LoggedEvent[];
  /** Events after the cursor were forgotten before they were read (the reader lagged, or the log is not the one it read before). */
  lost: boolean;
}

export interface EventLog {
  append(record: StoredRecord): Promise<void>;
  /** Up to `limit` events after the id `after`, oldest first. */
  read(after: string, limit: number): Promise<EventPage>;
  /** The newest id, or the id before the first event when there is none: a cursor that reads only what comes next. */
  head(): Promise<string>;
  /** Whether `id` is an id of this kind of log (a Last-Event-ID from a client is checked before use). */
  validId(id: string): boolean;
  /** Called (without arguments) whenever events may have been appended, by this casket or another. Returns the unsubscribe. */
  onAppend(listener: () => void): () => void;
  /** A webhook target's delivery cursor, kept where every casket sharing the log sees it. */
  getCursor(target: string): Promise<string | undefined>;
  setCursor(target: string, id: string): Promise<void>;
  /**
   * Takes or renews the right to deliver to `target` for `ms`: with several
   * caskets on Redis one delivers to a target at a time, and when it dies
   * another takes over from the shared cursor once the lease runs out.
   */
  lease(target: string, holder: string, ms: number): Promise<boolean>;
  close(): Promise<void>;
}

/** At most this many events are kept (the oldest forgotten first). */
export const MAX_EVENTS = 100_000;

/** Hex sequencer of an integer id: fixed width, so string order is log order. */
export function integerSequencer(id: number): string {
  return id.toString(16).toUpperCase().padStart(16, '0');
}

/** Listeners told of appends; a throwing listener is not the writer's problem. */
export class AppendSignal {
  private readonly listeners = new Set<() => void>();
  on(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  emit(): void {
    for (const l of this.listeners) {
      try {
        l();
      } catch {
        // A reader's failure stays the reader's.
      }
    }
  }
}
