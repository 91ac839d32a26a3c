/**
 * GET /_casket/events: the event log as Server-Sent Events
 * (https://html.spec.whatwg.org/multipage/server-sent-events.html), one
 * `id:`/`data:` message per record, data `{"Records":[record]}` as an S3
 * event notification (record.ts).
 *
 * - Resuming: `Last-Event-ID` (EventSource sends it when it reconnects), or
 *   `?lastEventId=` (a first connect cannot set headers), continues after
 *   that id; without either the stream starts with what happens next.
 *   A resume from further back than the log keeps first sends
 *   `event: lost` and goes on from the oldest event kept.
 * - Filters: `?bucket=` (repeatable), `?prefix=` (key prefix), `?event=`
 *   (event-name prefix, repeatable or comma-separated, e.g. `s3:ObjectCreated:`).
 * - `?sample=MS` (100–60000), for a person's view such as the console: at
 *   most one send every MS milliseconds, of the newest SAMPLE_RECORDS
 *   matching records since the last, after `event: skipped` with the count
 *   of those left out. A sampled stream that resumes (EventSource reconnects
 *   with Last-Event-ID) is sent the newest SAMPLE_RECORDS of its whole
 *   backlog in one send, read across pages, with the count of the rest.
 *   A program that must see every record leaves it out.
 * - A comment every `heartbeatMs` keeps proxies from closing an idle stream.
 * - Backpressure: the stream pulls from the log only when the socket has
 *   taken what was sent, so a slow subscriber holds one page at most and a
 *   write never waits for it. One that falls so far behind that the log
 *   forgot events it has not read gets `event: lagged` and the end of the
 *   stream; EventSource reconnects with its Last-Event-ID and hears `lost`.
 * - Access: `authorize` decides (server.ts: SigV4 by an admin key, or a
 *   console session); anyone else gets 403. A stream does not outlive its
 *   credential: when `authorize` answers a check, the stream asks it again
 *   every `recheckMs` (default: the heartbeat's period) and whenever
 *   `recheckAll` is called (credentials reloaded), and when it answers false
 *   sends `event: revoked` and ends. EventSource then reconnects and is
 *   refused (403), which ends it for good.
 */
import type { EventLog } from './log.js';
import { selects, type EventFilter } from './record.js';
import { EventTail, message } from './tail.js';

export const EVENTS_PATH = '/_casket/events';

/** Whether the credential a stream was opened with still holds (key present, admin, session not revoked). */
export type StillAllowed = () => Promise<boolean>;

/**
 * Decides whether a request may read the stream (admin credentials only):
 * false, or why not, refuses; true, or a StillAllowed, grants it — the latter
 * for as long as that check holds.
 */
export type Authorize = (request: Request) => Promise<boolean | string | StillAllowed>;

export interface StreamOptions {
  log: EventLog;
  authorize: Authorize;
  heartbeatMs?: number;
  /** How often an open stream checks its credential again (default heartbeatMs). */
  recheckMs?: number;
  /** Events read from the log per pull. */
  pageSize?: number;
  /** Least time between two reads of the log by one stream, gathering the appends between (default 20 ms). */
  batchMs?: number;
  /** Newest events kept for the streams that have caught up (tail.ts; default 2,000). */
  tailEvents?: number;
}

const encoder = new TextEncoder();

/** The most records one sampled send carries (`?sample=`). */
export const SAMPLE_RECORDS = 50;

/** What a sampled send says of the matching records it left out. */
function skippedEvent(count: number): string {
  return `event: skipped\ndata: ${JSON.stringify({ count })}\n\n`;
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
}

function list(query: URLSearchParams, name: string): string[] {
  return query.getAll(name).flatMap((v) => v.split(',')).map((v) => v.trim()).filter((v) => v !== '');
}

/** An empty `?prefix=` (a form sent blank) selects every key, as no prefix does (record.ts `selects`). */
export function filterFrom(query: URLSearchParams): EventFilter {
  return { buckets: list(query, 'bucket'), events: list(query, 'event'), prefix: query.get('prefix') ?? '' };
}

export interface EventsEndpoint {
  (request: Request): Promise<Response>;
  /** Ends every open stream (casket is stopping: an endless response would hold the drain to its limit). */
  endAll(): void;
  /** Checks every open stream's credential now (credentials were reloaded) and ends those it no longer holds for. */
  recheckAll(): Promise<void>;
}

export function eventsEndpoint(options: StreamOptions): EventsEndpoint {
  const { log } = options;
  /** Each open stream's end, and its credential check (undefined: granted for good). */
  const open = new Map<() => void, (() => Promise<void>) | undefined>();
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  const recheckMs = options.recheckMs ?? heartbeatMs;
  const pageSize = options.pageSize ?? 500;
  const batchMs = options.batchMs ?? 20;
  // Streams that have caught up share one read of the log (tail.ts).
  const tail = new EventTail(log, { pageSize, batchMs, keep: options.tailEvents });
  const endpoint = async (request: Request): Promise<Response> => {
    const granted = await options.authorize(request);
    if (granted !== true && typeof granted !== 'function') return json(403, { error: 'AccessDenied', message: typeof granted === 'string' ? `The event stream: ${granted}` : 'The event stream needs an admin credential: sign the request (SigV4) with an admin access key.' });
    const query = new URL(request.url).searchParams;
    const resume = request.headers.get('last-event-id') ?? query.get('lastEventId') ?? undefined;
    if (resume !== undefined && !log.validId(resume)) return json(400, { error: 'InvalidArgument', message: 'Last-Event-ID is not an id of this event stream.' });
    const filter = filterFrom(query);
    const sample = query.get('sample');
    const sampleMs = sample === null ? 0 : Number(sample);
    if (sample !== null && !(Number.isInteger(sampleMs) && sampleMs >= 100 && sampleMs <= 60_000)) return json(400, { error: 'InvalidArgument', message: 'sample is a number of milliseconds from 100 to 60000.' });
    let lastSent = 0;
    let cursor = resume ?? (await log.head());
    let first = resume !== undefined;
    // Stryker disable next-line BooleanLiteral: set false before each read of the log, the only place it is read after
    let pending = false;
    /** Whether the last pull was answered by the tail: then news comes from it, not from each append. */
    // Stryker disable next-line BooleanLiteral: the pull loop sets it before any wait; before the first pull there is no wake to call
    let atTail = false;
    /**
     * A sampled stream reading its backlog from the log (a resume; the
     * console's EventSource resends Last-Event-ID on every reconnect): the
     * newest SAMPLE_RECORDS matching records read so far, and how many older
     * ones it leaves out; `behind` while a full page says more follow.
     */
    let backlog: string[] = [];
    let backlogSkipped = 0;
    let behind = false;
    let wake: (() => void) | undefined;
    const offAppend = log.onAppend(() => {
      pending = true;
      if (!atTail) wake?.();
    });
    const offTail = tail.onNews(() => {
      if (atTail) wake?.();
    });
    await tail.join();
    let left = false;
    const off = () => {
      offAppend();
      offTail();
      if (!left) tail.leave();
      left = true;
    };
    // At most one read of the log per batchMs: under load one read carries
    // many events, so a subscriber costs the writes' event loop a read per
    // batch, not per write (measured: a read per write added ~30–50% to
    // casket's CPU per 4 KiB PutObject).
    let lastRead = 0;
    const waitForAppend = () =>
      new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => done(false), heartbeatMs);
        const done = (appended: boolean) => {
          clearTimeout(timer);
          wake = undefined;
          resolve(appended);
        };
        wake = () => done(true);
      });
    const stillAllowed = typeof granted === 'function' ? granted : undefined;
    let cancelled = false;
    let end = () => {};
    let recheckTimer: NodeJS.Timeout | undefined;
    const stream = new ReadableStream<Uint8Array>(
      {
        start(controller) {
          // retry: how long EventSource waits before reconnecting (ms).
          controller.enqueue(encoder.encode(': casket events\nretry: 2000\n\n'));
          end = () => {
            cancelled = true;
            clearInterval(recheckTimer);
            open.delete(end);
            off();
            wake?.();
            try {
              controller.close();
            } catch {
              // Already closed or errored.
            }
          };
          const recheck = stillAllowed
            ? async () => {
                if (cancelled) return;
                // Stryker disable next-line ArrowFunction: undefined is as falsy as false here
                const ok = await stillAllowed().catch(() => false);
                if (ok || cancelled) return;
                try {
                  controller.enqueue(encoder.encode(`event: revoked\ndata: ${JSON.stringify({ message: 'The credential this stream was opened with no longer holds.' })}\n\n`));
                } catch {
                  // Already closed.
                }
                end();
              }
            : undefined;
          open.set(end, recheck);
          if (recheck) {
            recheckTimer = setInterval(() => void recheck(), recheckMs);
            recheckTimer.unref();
          }
        },
        async pull(controller) {
          for (;;) {
            if (cancelled) return;
            // A resume's first read goes to the log, which knows whether events were lost.
            const news = first || behind ? undefined : tail.after(cursor);
            atTail = news !== undefined;
            if (news !== undefined) {
              if (news.length > 0) {
                const early = lastSent + sampleMs - Date.now();
                if (sampleMs > 0 && early > 0) {
                  // Sampled: gather until the next send is due, then look again.
                  await new Promise((resolve) => setTimeout(resolve, early));
                  continue;
                }
                cursor = news[news.length - 1]!.id;
                let matching = news.filter((e) => selects(filter, e.event));
                let skipped = '';
                if (sampleMs > 0 && matching.length > SAMPLE_RECORDS) {
                  skipped = skippedEvent(matching.length - SAMPLE_RECORDS);
                  matching = matching.slice(-SAMPLE_RECORDS);
                }
                const text = skipped + matching.map((e) => e.text).join('');
                if (text !== '') {
                  lastSent = Date.now();
                  controller.enqueue(encoder.encode(text));
                  return;
                }
                continue;
              }
              if (!(await waitForAppend())) {
                controller.enqueue(encoder.encode(': heartbeat\n\n'));
                return;
              }
              continue;
            }
            const early = lastRead + batchMs - Date.now();
            if (early > 0) await new Promise((resolve) => setTimeout(resolve, early));
            if (cancelled) return;
            lastRead = Date.now();
            pending = false;
            let page: Awaited<ReturnType<EventLog['read']>>;
            try {
              page = await log.read(cursor, pageSize);
            } catch {
              // The log is out of reach (Redis down): the stream waits, the cursor holds.
              controller.enqueue(encoder.encode(': event log unavailable, retrying\n\n'));
              await new Promise((resolve) => setTimeout(resolve, 1000));
              return;
            }
            if (cancelled) return;
            if (page.lost) {
              if (!first) {
                controller.enqueue(encoder.encode(`event: lagged\ndata: ${JSON.stringify({ after: cursor, message: 'This subscriber fell behind the event log; reconnect with Last-Event-ID.' })}\n\n`));
                open.delete(end);
                clearInterval(recheckTimer);
                off();
                controller.close();
                return;
              }
              controller.enqueue(encoder.encode(`event: lost\ndata: ${JSON.stringify({ after: cursor, message: 'Events after this id are no longer kept; the stream goes on from the oldest kept.' })}\n\n`));
              if (page.events.length === 0) cursor = await log.head();
            }
            first = false;
            if (sampleMs > 0) {
              // Sampled: the backlog's newest SAMPLE_RECORDS in one send once the log is read to its end, not every page of it.
              if (page.events.length > 0) cursor = page.events[page.events.length - 1]!.id;
              backlog.push(...page.events.filter((e) => selects(filter, e)).map(message));
              if (backlog.length > SAMPLE_RECORDS) {
                backlogSkipped += backlog.length - SAMPLE_RECORDS;
                backlog = backlog.slice(-SAMPLE_RECORDS);
              }
              behind = page.events.length === pageSize;
              if (behind) continue;
              const text = (backlogSkipped > 0 ? skippedEvent(backlogSkipped) : '') + backlog.join('');
              backlog = [];
              backlogSkipped = 0;
              if (text !== '') {
                lastSent = Date.now();
                controller.enqueue(encoder.encode(text));
                return;
              }
              if (page.events.length > 0) continue;
            } else if (page.events.length > 0) {
              cursor = page.events[page.events.length - 1]!.id;
              const text = page.events.filter((e) => selects(filter, e)).map(message).join('');
              // Stryker disable next-line StringLiteral: an empty chunk enqueued writes no bytes; the loop's next pull reads on
              if (text !== '') {
                controller.enqueue(encoder.encode(text));
                return;
              }
              continue;
            }
            if (pending) continue;
            if (!(await waitForAppend())) {
              controller.enqueue(encoder.encode(': heartbeat\n\n'));
              return;
            }
          }
        },
        cancel() {
          cancelled = true;
          clearInterval(recheckTimer);
          open.delete(end);
          off();
          wake?.();
        },
      },
      // Stryker disable next-line ObjectLiteral: 1 is also a ReadableStream's default (https://streams.spec.whatwg.org/#validate-and-normalize-high-water-mark); said here because the pull-per-send backpressure depends on it
      { highWaterMark: 1 },
    );
    return new Response(stream, {
      status: 200,
      headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' },
    });
  };
  return Object.assign(endpoint, {
    endAll: () => [...open.keys()].forEach((end) => end()),
    recheckAll: async () => {
      await Promise.all([...open.values()].map((recheck) => recheck?.()));
    },
  });
}
