/**
 * The newest events, read from the log once for every stream that has caught
 * up with it (stream.ts), each turned into its SSE message once.
 *
 * Without it each subscriber read and re-serialised the same events on its
 * own: with the console open beside a program's subscriber, casket read and
 * encoded every event twice, ~40 µs of CPU per 4 KiB PutObject at 3,400
 * PUTs a second (README, Performance). With it, a subscriber that is caught
 * up costs a filter and a copy of text already made.
 *
 * The tail keeps a contiguous run of events: those after `start`, in log
 * order. It answers a cursor only when it knows exactly what follows it —
 * the cursor is `start` or one of the ids it holds; anything else (a resume
 * from further back, a reader that fell behind what it keeps) reads the log
 * itself, as before, until it has caught up.
 */
import type { EventLog } from './log.js';
import type { LoggedEvent } from './record.js';

/** One SSE message per record; JSON has no raw newlines, so one data: line is the whole record. */
export function message(e: LoggedEvent): string {
  return `id: ${e.id}\ndata: {"Records":[${e.json}]}\n\n`;
}

/** An event the tail holds, with its SSE message made once, when a stream first sends it (a sampled stream sends few). */
export class TailEvent {
  private sse: string | undefined;
  constructor(readonly event: LoggedEvent) {}
  get id(): string {
    return this.event.id;
  }
  /** The event as one SSE message (`id:` and `data:` lines). */
  get text(): string {
    return (this.sse ??= message(this.event));
  }
}

export class EventTail {
  private events: TailEvent[] = [];
  /** Position in `events` of each id held. */
  private readonly at = new Map<string, number>();
  /** The id the first held event follows; undefined while nobody listens. */
  private start: string | undefined;
  private cursor: string | undefined;
  private readers = 0;
  private offAppend: (() => void) | undefined;
  private readonly news = new Set<() => void>();
  private timer: NodeJS.Timeout | undefined;
  private reading = false;
  // Stryker disable next-line BooleanLiteral: read only at the end of read(), which sets it false first
  private pending = false;
  private lastRead = 0;
  private joined: Promise<void> | undefined;

  constructor(
    private readonly log: EventLog,
    private readonly options: { keep?: number; pageSize?: number; batchMs?: number } = {},
  ) {}

  /** A stream starts listening; the first one makes the tail follow the log. */
  async join(): Promise<void> {
    this.readers++;
    if (this.readers === 1) {
      this.offAppend = this.log.onAppend(() => this.schedule());
      this.joined = this.log.head().then(
        (head) => {
          if (this.readers > 0 && this.start === undefined) this.start = this.cursor = head;
        },
        () => {
          // The log is out of reach: every stream reads on its own (and says so) until an append restarts the tail.
        },
      );
    }
    await this.joined;
  }

  leave(): void {
    this.readers--;
    if (this.readers > 0) return;
    this.offAppend?.();
    this.offAppend = undefined;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.reset(undefined);
  }

  /** The events after `cursor`, oldest first, or undefined when the tail cannot tell (read the log). */
  after(cursor: string): readonly TailEvent[] | undefined {
    // Stryker disable next-line ConditionalExpression: with no start the tail holds nothing (reset() empties `at` with it), so the lookup below answers undefined too
    if (this.start === undefined) return undefined;
    if (cursor === this.start) return this.events;
    const i = this.at.get(cursor);
    return i === undefined ? undefined : this.events.slice(i + 1);
  }

  /** Calls `listener` whenever the tail has read new events (or gave up on the log: readers then read it themselves). */
  onNews(listener: () => void): () => void {
    this.news.add(listener);
    return () => this.news.delete(listener);
  }

  /** At most one read of the log per batchMs, however many appends and streams: one read carries many events. */
  private schedule(): void {
    this.pending = true;
    if (this.reading || this.timer !== undefined) return;
    const wait = Math.max(0, this.lastRead + (this.options.batchMs ?? 20) - Date.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.read();
    }, wait);
  }

  /** Runs only with a reader: leave() clears the timer, and a read schedules the next only while one is left. */
  private async read(): Promise<void> {
    this.reading = true;
    this.pending = false;
    this.lastRead = Date.now();
    const pageSize = this.options.pageSize ?? 500;
    try {
      if (this.cursor === undefined) this.start = this.cursor = await this.log.head();
      for (;;) {
        const page = await this.log.read(this.cursor, pageSize);
        if (this.readers === 0) return;
        if (page.lost) {
          // The log forgot events the tail had not read (or is not the log it read): start again from now; readers whose cursor is gone read the log and hear `lost` from it.
          this.reset(await this.log.head());
          break;
        }
        for (const e of page.events) this.push(new TailEvent(e));
        if (page.events.length < pageSize) break;
      }
    } catch {
      // Out of reach (Redis down): the readers fall back to the log, which tells them so.
      this.reset(undefined);
    } finally {
      this.reading = false;
    }
    for (const listener of this.news) listener();
    if (this.pending && this.readers > 0) this.schedule();
  }

  private push(e: TailEvent): void {
    this.at.set(e.id, this.events.length);
    this.events.push(e);
    this.cursor = e.id;
    const keep = this.options.keep ?? 2_000;
    // Trimmed in slices, not per event: a shift per event would copy the array each time.
    if (this.events.length >= keep * 2) {
      const dropped = this.events.length - keep;
      this.start = this.events[dropped - 1]!.id;
      this.events = this.events.slice(dropped);
      this.at.clear();
      this.events.forEach((x, i) => this.at.set(x.id, i));
    }
  }

  private reset(head: string | undefined): void {
    this.events = [];
    this.at.clear();
    this.start = this.cursor = head;
  }
}
