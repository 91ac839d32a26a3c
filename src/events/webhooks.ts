/**
 * Webhooks (docs/design.md §9): each target of the notification
 * configuration (notifications.ts) gets a POST of `{"Records":[record]}` per
 * event it asks for, at least once, after the commit.
 *
 * An outbox, not a queue: a worker per target reads the event log
 * (log.ts) from that target's cursor, delivers one event at a time in log
 * order, and moves the cursor, kept in the log's store, only after the
 * receiver answered 2xx or the event was dropped. A write only appends to
 * the log, so a slow, failing or dead receiver never slows one; a casket
 * that restarts resumes each target at its cursor (the event in flight is
 * sent again: at least once). With several caskets on Redis one casket
 * delivers to a target at a time, holding a lease it renews before each
 * attempt; when it dies the lease runs out and another casket carries on
 * from the shared cursor, so no event is lost, and one may be sent twice.
 *
 * Each attempt: a timeout (`timeoutMs`); failures (no answer, non-2xx) are
 * retried after `backoffMs`, doubled per attempt up to `maxBackoffMs`;
 * after `attempts` the event is dropped with a log line. Counters:
 * casket_webhook_{pushed,failed,dropped}_total by target name.
 *
 * Signature: `x-casket-signature: sha256=<hex>`, the HMAC-SHA256 with the
 * target's secret of `<x-casket-timestamp>.<body>` (the timestamp in unix
 * seconds): a receiver recomputes it, compares in constant time, and
 * refuses timestamps older than a few minutes, so a captured delivery
 * cannot be replayed later. The secret is never logged.
 */
import { createHmac } from 'node:crypto';
import type { Logger } from '../log.js';
import type { EventLog } from './log.js';
import type { Notifications, WebhookTarget } from './notifications.js';
import { selects, type LoggedEvent } from './record.js';

export interface WebhookCounters {
  pushed(target: string): void;
  failed(target: string): void;
  dropped(target: string): void;
}

/** How long a casket holds a target's delivery before another may take it over. */
const LEASE_MS = 15_000;

/** The signature of a delivery: hex HMAC-SHA256 of `<timestamp>.<body>`. */
export function signature(secret: string, timestamp: string, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
}

class TargetWorker {
  private stopped = false;
  /** Aborts the attempt in flight when the worker stops (a reload, casket closing). */
  private readonly abort = new AbortController();
  private wake: (() => void) | undefined;
  private readonly off: () => void;
  readonly done: Promise<void>;

  constructor(
    private readonly target: WebhookTarget,
    private readonly settings: Omit<Notifications, 'webhooks'>,
    private readonly log: EventLog,
    private readonly counters: WebhookCounters,
    private readonly logger: Pick<Logger, 'warn' | 'error' | 'info'>,
    private readonly holder: string,
  ) {
    this.off = log.onAppend(() => this.wake?.());
    this.done = this.run();
  }

  stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    this.off();
    this.wake?.();
    return this.done;
  }

  /** Sleeps up to `ms`, or until an append or stop wakes it. */
  private sleep(ms: number, wakeOnAppend = true): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => finish(), ms);
      const finish = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      this.wake = wakeOnAppend ? finish : () => this.stopped && finish();
    });
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        if (!(await this.log.lease(this.target.name, this.holder, LEASE_MS))) {
          await this.sleep(LEASE_MS / 3, false);
          continue;
        }
        let cursor = await this.log.getCursor(this.target.name);
        if (cursor === undefined) {
          // A new target starts with what happens next, not the whole history.
          cursor = await this.log.head();
          await this.log.setCursor(this.target.name, cursor);
        }
        const page = await this.log.read(cursor, 50);
        if (page.lost) this.logger.warn({ target: this.target.name, after: cursor }, 'webhook: events after the cursor were forgotten before delivery');
        if (page.events.length === 0) {
          if (page.lost) await this.log.setCursor(this.target.name, await this.log.head());
          else await this.sleep(1000);
          continue;
        }
        // Events the target does not ask for move the cursor once per page, not once each.
        let skipped: string | undefined;
        for (const event of page.events) {
          if (!selects(this.target, event)) {
            skipped = event.id;
            continue;
          }
          if (skipped !== undefined) await this.log.setCursor(this.target.name, skipped);
          skipped = undefined;
          if (!(await this.deliver(event))) break;
          await this.log.setCursor(this.target.name, event.id);
        }
        if (skipped !== undefined && !this.stopped) await this.log.setCursor(this.target.name, skipped);
      } catch (err) {
        // The log is out of reach (Redis down): try again; the cursor has not moved.
        this.logger.error({ target: this.target.name, err: err instanceof Error ? err.message : String(err) }, 'webhook: event log unavailable');
        await this.sleep(1000, false);
      }
    }
  }

  /** true: delivered or dropped (move on); false: stopped, or the lease went to another casket (leave the cursor). */
  private async deliver(event: LoggedEvent): Promise<boolean> {
    const body = `{"Records":[${event.json}]}`;
    const { attempts, timeoutMs, backoffMs, maxBackoffMs } = this.settings;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      if (this.stopped || !(await this.log.lease(this.target.name, this.holder, LEASE_MS))) return false;
      const timestamp = String(Math.floor(Date.now() / 1000));
      let why: string;
      // A timer of our own, not AbortSignal.any([AbortSignal.timeout(ms), …]):
      // Node 20–24 can garbage-collect a timeout signal held only by an any()
      // composite, and then a hung receiver holds the worker forever
      // (nodejs/node#57736; reproduced here with --gc-global).
      const attemptAbort = new AbortController();
      const timer = setTimeout(() => attemptAbort.abort(new DOMException(`no answer within ${timeoutMs} ms`, 'TimeoutError')), timeoutMs);
      const stop = () => attemptAbort.abort(this.abort.signal.reason);
      // Stryker disable next-line ObjectLiteral,BooleanLiteral: an AbortSignal fires 'abort' once, and the finally below removes the listener; `once` only says so.
      this.abort.signal.addEventListener('abort', stop, { once: true });
      if (this.abort.signal.aborted) stop(); // stopped while the lease was being taken
      try {
        const res = await fetch(this.target.url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'user-agent': 'casket-webhooks',
            'x-casket-event-id': event.id,
            'x-casket-timestamp': timestamp,
            'x-casket-signature': `sha256=${signature(this.target.secret, timestamp, body)}`,
          },
          body,
          redirect: 'manual',
          signal: attemptAbort.signal,
        });
        // Read to the end so the connection can be reused (undici's advice).
        await res.arrayBuffer().catch(() => undefined);
        // 2xx only (Response.ok): a 3xx is not followed (redirect: 'manual') and is a failure.
        if (res.ok) {
          this.counters.pushed(this.target.name);
          return true;
        }
        why = `HTTP ${res.status}`;
      } catch (err) {
        why = err instanceof Error && err.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
      } finally {
        clearTimeout(timer);
        this.abort.signal.removeEventListener('abort', stop);
      }
      // Stopped mid-attempt (a reload, casket closing): not the receiver's failure, and no backoff to sit out — the
      // sleep below is woken only by a stop that comes during it, so a stop before it would hold configure() for up to maxBackoffMs.
      if (this.stopped) return false;
      this.counters.failed(this.target.name);
      if (attempt === attempts) break;
      // The wait is in the line: an operator sees the backoff a failing receiver gets.
      const retryInMs = Math.min(backoffMs * 2 ** (attempt - 1), maxBackoffMs);
      this.logger.info({ target: this.target.name, eventId: event.id, attempt, why, retryInMs }, 'webhook delivery failed; retrying');
      await this.sleep(retryInMs, false);
    }
    this.counters.dropped(this.target.name);
    this.logger.warn({ target: this.target.name, eventId: event.id, eventName: event.record.eventName, attempts }, 'webhook event dropped after the last attempt');
    return true;
  }
}

/** The webhook workers of the current configuration; `configure` swaps them (a reload). */
export class Webhooks {
  private workers: TargetWorker[] = [];

  constructor(
    private readonly log: EventLog,
    private readonly counters: WebhookCounters,
    private readonly logger: Pick<Logger, 'warn' | 'error' | 'info'>,
    /** This casket's name in the delivery leases. */
    private readonly holder: string,
  ) {}

  async configure(notifications: Notifications): Promise<void> {
    const old = this.workers;
    this.workers = [];
    // The old workers finish their attempt in flight; their cursors stay, so a target kept by name resumes where it was.
    await Promise.all(old.map((w) => w.stop()));
    const { webhooks, ...settings } = notifications;
    this.workers = webhooks.map((t) => new TargetWorker(t, settings, this.log, this.counters, this.logger, this.holder));
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.stop()));
    this.workers = [];
  }
}
