/**
 * The webhook outbox (src/events/webhooks.ts) in this process, over a memory
 * event log, delivering to a real receiver on 127.0.0.1 (receiver.ts): what
 * a receiver and an operator see — which events arrive, in which order,
 * signed, how often a failing receiver is tried, what is dropped and
 * logged, and where delivery resumes after a reload or a stop.
 * webhooks.test.ts and webhook-backoff.test.ts drive the same through a
 * spawned casket; these run in-process so `npm run mutate:rooms`
 * (ROOM=events) can see a change to the worker.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { EventLog } from '../../src/events/log.js';
import { MemoryEventLog } from '../../src/events/memory-log.js';
import { NO_NOTIFICATIONS, type Notifications, type WebhookTarget } from '../../src/events/notifications.js';
import { recordOf } from '../../src/events/record.js';
import { Webhooks } from '../../src/events/webhooks.js';
import { until } from '../helpers/poll.js';
import { startReceiver, type Receiver } from './receiver.js';

const SECRET = 'test-webhook-secret-worker-0123456789';

interface Line {
  level: 'warn' | 'error' | 'info';
  fields: Record<string, unknown>;
  message: string;
}

/** The counters and log lines an operator sees (server.ts turns them into metrics and JSON lines). */
function observer() {
  const counts = { pushed: 0, failed: 0, dropped: 0 };
  const lines: Line[] = [];
  const at = (level: Line['level']) => (fields: Record<string, unknown>, message: string) => void lines.push({ level, fields, message });
  return {
    counts,
    lines,
    counters: { pushed: () => void counts.pushed++, failed: () => void counts.failed++, dropped: () => void counts.dropped++ },
    logger: { warn: at('warn'), error: at('error'), info: at('info') } as never,
  };
}

const put = (key: string, bucket = 'hooks') => recordOf({ kind: 'written', operation: 'PutObject', bucket, key, requestId: 'r', etag: 'e', size: 1 }, 'us-east-1');
const refused = (key: string) => recordOf({ kind: 'refused', operation: 'PutObject', bucket: 'hooks', key, requestId: 'r', reason: 'stale', status: 412, code: 'PreconditionFailed' }, 'us-east-1');
const keys = (r: Receiver, only: 'ok' | 'all' = 'ok') => (only === 'ok' ? r.acknowledged() : r.deliveries).map((d) => d.record.s3.object.key);

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

async function setup(settings: Partial<Omit<Notifications, 'webhooks'>>, target: Partial<WebhookTarget> = {}, log = new MemoryEventLog()) {
  const receiver = await startReceiver(SECRET);
  cleanup.push(() => receiver.close());
  const seen = observer();
  const hooks = new Webhooks(log, seen.counters, seen.logger, 'this-casket');
  cleanup.push(() => hooks.close());
  const notifications: Notifications = { ...NO_NOTIFICATIONS, timeoutMs: 2000, backoffMs: 20, maxBackoffMs: 20, ...settings, webhooks: [{ name: 'hook', url: receiver.url, secret: SECRET, events: ['s3:'], ...target }] };
  return { receiver, log, hooks, seen, notifications };
}

describe('a webhook target', () => {
  it('gets what happens after it is configured, in log order, signed, one record per POST; not the history before', async () => {
    const { receiver, log, hooks, seen, notifications } = await setup({});
    await log.append(put('before'));
    await hooks.configure(notifications);
    // The worker starts from the log's head: wait until it has taken it (its cursor is set).
    await until(async () => (await log.getCursor('hook')) !== undefined, 'the new target to take its cursor');
    for (const k of ['a', 'b', 'c']) await log.append(put(k));
    await until(() => seen.counts.pushed === 3, 'three deliveries acknowledged');
    expect(keys(receiver, 'all')).toEqual(['a', 'b', 'c']);
    expect(receiver.deliveries.every((d) => d.verified)).toBe(true);
    expect(receiver.deliveries.map((d) => d.eventId)).toEqual(['2', '3', '4']);
    expect(receiver.deliveries.map((d) => d.record.s3.object.sequencer)).toEqual(['0000000000000002', '0000000000000003', '0000000000000004']);
    expect(seen.counts).toEqual({ pushed: 3, failed: 0, dropped: 0 });
    expect(await log.getCursor('hook')).toBe('4');
    // A JSON body, said so (receivers' frameworks parse by it), from casket, stamped with the time of sending (unix seconds).
    const { headers } = receiver.deliveries[0]!;
    expect([headers['content-type'], headers['user-agent']]).toEqual(['application/json', 'casket-webhooks']);
    expect(Math.abs(Number(headers['x-casket-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
  });

  it('gets only the buckets, key prefixes and event names it asks for; the ones it skips still move its cursor', async () => {
    const { receiver, log, hooks, notifications } = await setup({}, { buckets: ['hooks'], prefix: 'keep/', events: ['s3:ObjectCreated:', 'casket:WriteRefused'] });
    await hooks.configure(notifications);
    await until(async () => (await log.getCursor('hook')) !== undefined, 'the new target to take its cursor');
    await log.append(put('keep/1'));
    await log.append(put('skip/2'));
    await log.append(put('keep/3', 'elsewhere'));
    await log.append(refused('keep/4'));
    await log.append(put('skip/5'));
    await until(async () => (await log.getCursor('hook')) === '5', 'the cursor past the last skipped event');
    expect(receiver.deliveries.map((d) => [d.record.eventName, d.record.s3.object.key])).toEqual([
      ['s3:ObjectCreated:Put', 'keep/1'],
      ['casket:WriteRefused', 'keep/4'],
    ]);
  });

  it('is tried again after a failure, each wait doubling from backoffMs up to maxBackoffMs; the event is dropped after the last attempt and the next one delivered', async () => {
    const { receiver, log, hooks, seen, notifications } = await setup({ attempts: 5, backoffMs: 50, maxBackoffMs: 150 });
    receiver.answer = (n) => (n <= 5 ? 'fail' : 'ok');
    await hooks.configure(notifications);
    await until(async () => (await log.getCursor('hook')) !== undefined, 'the new target to take its cursor');
    await log.append(put('doomed'));
    // Writes go on while the receiver fails: they do not cut a backoff short.
    await until(() => seen.counts.failed === 1, 'the first attempt failed');
    await log.append(put('next'));
    await until(() => seen.counts.pushed === 1, 'the next event delivered');
    expect(keys(receiver, 'all')).toEqual(['doomed', 'doomed', 'doomed', 'doomed', 'doomed', 'next']);
    const at = receiver.deliveries.map((d) => d.at);
    const gaps = at.slice(1, 5).map((t, i) => t - at[i]!);
    // 50, 100, then the cap: 150, 150 (a few ms of clock rounding allowed below; a loaded machine only adds).
    [50, 100, 150, 150].forEach((wait, i) => expect(gaps[i], `wait before attempt ${i + 2}: ${gaps.join(', ')} ms`).toBeGreaterThanOrEqual(wait - 5));
    expect(seen.counts).toEqual({ pushed: 1, failed: 5, dropped: 1 });
    // Capped: each retry's line says the wait it is about to take (an upper bound on the clock would fail on a loaded machine).
    const retries = seen.lines.filter((l) => l.message === 'webhook delivery failed; retrying');
    expect(retries.map((l) => [l.level, l.fields.target, l.fields.eventId, l.fields.attempt, l.fields.why, l.fields.retryInMs])).toEqual([
      ['info', 'hook', '1', 1, 'HTTP 500', 50],
      ['info', 'hook', '1', 2, 'HTTP 500', 100],
      ['info', 'hook', '1', 3, 'HTTP 500', 150],
      ['info', 'hook', '1', 4, 'HTTP 500', 150],
    ]);
    const dropped = seen.lines.filter((l) => l.message === 'webhook event dropped after the last attempt');
    expect(dropped.map((l) => [l.level, l.fields.target, l.fields.eventId, l.fields.eventName, l.fields.attempts])).toEqual([['warn', 'hook', '1', 's3:ObjectCreated:Put', 5]]);
    expect(JSON.stringify(seen.lines)).not.toContain(SECRET);
  });

  it('that never answers fails each attempt after timeoutMs, said so in the log', async () => {
    const { receiver, log, hooks, seen, notifications } = await setup({ attempts: 2, timeoutMs: 200 });
    receiver.answer = (n) => (n === 1 ? 'hang' : 'ok');
    await hooks.configure(notifications);
    await until(async () => (await log.getCursor('hook')) !== undefined, 'the new target to take its cursor');
    await log.append(put('slow'));
    await until(() => seen.counts.pushed === 1, 'the second attempt delivered');
    expect(seen.lines.filter((l) => l.message === 'webhook delivery failed; retrying').map((l) => l.fields.why)).toEqual(['no answer within 200 ms']);
    expect(seen.counts).toEqual({ pushed: 1, failed: 1, dropped: 0 });
  });

  it('stopped while waiting to try again stops at once and keeps its cursor: the event goes again to the next configuration', async () => {
    const { receiver, log, hooks, seen, notifications } = await setup({ attempts: 3, backoffMs: 60_000, maxBackoffMs: 60_000 });
    receiver.answer = 'fail';
    await hooks.configure(notifications);
    await until(async () => (await log.getCursor('hook')) !== undefined, 'the new target to take its cursor');
    await log.append(put('again'));
    await until(() => seen.lines.some((l) => l.message === 'webhook delivery failed; retrying'), 'the first attempt failed');
    const started = Date.now();
    receiver.answer = 'ok';
    // A reload keeping the target by name: the old worker stops in its 60 s wait, the new one resumes at the cursor.
    await hooks.configure(notifications);
    expect(Date.now() - started).toBeLessThan(5_000);
    await until(() => receiver.acknowledged().length === 1, 'the event delivered by the new worker');
    expect(keys(receiver, 'all')).toEqual(['again', 'again']);
    expect(seen.counts.dropped).toBe(0);
    await hooks.close();
    await log.append(put('after-close'));
    await new Promise((r) => setTimeout(r, 100));
    expect(keys(receiver, 'all')).toEqual(['again', 'again']);
  });

  it('stopped while an attempt is in flight stops at once, not after the wait before the next attempt', async () => {
    const { receiver, log, hooks, seen, notifications } = await setup({ attempts: 3, timeoutMs: 60_000, backoffMs: 60_000, maxBackoffMs: 60_000 });
    receiver.answer = (n) => (n === 1 ? 'hang' : 'ok');
    await hooks.configure(notifications);
    await until(async () => (await log.getCursor('hook')) !== undefined, 'the new target to take its cursor');
    await log.append(put('held'));
    await until(() => receiver.hanging() === 1, 'the receiver holding the first attempt');
    const started = Date.now();
    // A reload (or casket closing) aborts the attempt: the worker must not then sit out a backoff.
    await hooks.configure(notifications);
    expect(Date.now() - started).toBeLessThan(5_000);
    await until(() => seen.counts.pushed === 1, 'the event delivered by the new worker');
    expect(keys(receiver)).toEqual(['held']);
    // The aborted attempt was not the receiver's failure.
    expect(seen.counts).toEqual({ pushed: 1, failed: 0, dropped: 0 });
  }, 15_000);

  it('at a port nobody listens on: each failure says why (the connection refused), and the event is dropped', async () => {
    const { receiver, log, hooks, seen, notifications } = await setup({ attempts: 2 });
    const closed = new URL(receiver.url);
    await receiver.close();
    await hooks.configure({ ...notifications, webhooks: [{ ...notifications.webhooks[0]!, url: closed.href }] });
    await until(async () => (await log.getCursor('hook')) !== undefined, 'the new target to take its cursor');
    await log.append(put('nobody'));
    await until(() => seen.counts.dropped === 1, 'the event dropped');
    expect(seen.lines.filter((l) => l.message === 'webhook delivery failed; retrying').map((l) => l.fields.why)).toEqual([`connect ECONNREFUSED 127.0.0.1:${closed.port}`]);
    expect(await log.getCursor('hook')).toBe('1');
  });

  it('whose cursor the log does not know (another log, a replaced data dir) is warned of, and goes on from what comes next', async () => {
    const { receiver, log, hooks, seen, notifications } = await setup({});
    await log.setCursor('hook', '7');
    await hooks.configure(notifications);
    await until(async () => (await log.getCursor('hook')) === '0', 'the cursor moved to the head');
    expect(seen.lines.filter((l) => l.message === 'webhook: events after the cursor were forgotten before delivery').map((l) => [l.level, l.fields.target, l.fields.after])).toEqual([['warn', 'hook', '7']]);
    await log.append(put('next'));
    await until(() => seen.counts.pushed === 1, 'the next event delivered');
    expect(keys(receiver)).toEqual(['next']);
  });

  it('waits out a log that is out of reach (Redis down), said so, and delivers once it is back', async () => {
    const log = new MemoryEventLog();
    const read = log.read.bind(log);
    let down = true;
    log.read = async (after, limit) => {
      if (down) throw new Error('connect ECONNREFUSED (redis)');
      return read(after, limit);
    };
    const { receiver, hooks, seen, notifications } = await setup({}, {}, log);
    await log.append(put('waiting'));
    await log.setCursor('hook', '0');
    await hooks.configure(notifications);
    await until(() => seen.lines.some((l) => l.message === 'webhook: event log unavailable'), 'the outage logged');
    expect(seen.lines.find((l) => l.message === 'webhook: event log unavailable')!.fields).toEqual({ target: 'hook', err: 'connect ECONNREFUSED (redis)' });
    expect(seen.lines.find((l) => l.message === 'webhook: event log unavailable')!.level).toBe('error');
    down = false;
    await until(() => seen.counts.pushed === 1, 'the event delivered once the log is back');
    expect(keys(receiver)).toEqual(['waiting']);
  });

  it('is not delivered to while another casket holds its lease; once it runs out, delivery goes on from the shared cursor', async () => {
    // Typed as the EventLog it is: MemoryEventLog's own lease() takes no arguments.
    const log: EventLog & MemoryEventLog = new MemoryEventLog();
    let held = true;
    const asked: string[] = [];
    (log as EventLog).lease = async (target, holder, ms) => {
      asked.push(`${target} ${holder} ${ms}`);
      return !held;
    };
    const { receiver, hooks, seen, notifications } = await setup({}, {}, log);
    await log.setCursor('hook', await log.head());
    await hooks.configure(notifications);
    await log.append(put('theirs'));
    await until(() => asked.length > 0, 'the lease asked for');
    await new Promise((r) => setTimeout(r, 200));
    expect(receiver.deliveries).toEqual([]);
    expect(asked[0]).toBe('hook this-casket 15000');
    // It waits to ask again; it does not spin on the lease.
    expect(asked.length).toBeLessThanOrEqual(2);
    held = false;
    // The worker asks again a third of the lease (15 s) later.
    await until(() => seen.counts.pushed === 1, 'delivery once the lease is free', 10_000);
    expect(keys(receiver)).toEqual(['theirs']);
  }, 20_000);

  it('losing its lease between two attempts (another casket took it over) sends nothing more and leaves the cursor', async () => {
    const log = new MemoryEventLog();
    let granted = 1;
    log.lease = async () => granted-- > 0;
    const { receiver, hooks, seen, notifications } = await setup({}, {}, log);
    await log.append(put('mine'));
    await log.setCursor('hook', '0');
    await hooks.configure(notifications);
    // The worker's own check passes once; deliver's, before the POST, finds the lease gone.
    await until(() => granted < -1, 'the lease asked for again');
    expect(receiver.deliveries).toEqual([]);
    expect(await log.getCursor('hook')).toBe('0');
    expect(seen.counts).toEqual({ pushed: 0, failed: 0, dropped: 0 });
  });

  it('stopped while taking its lease for an attempt sends nothing to a receiver that would hold it', async () => {
    const log = new MemoryEventLog();
    let calls = 0;
    let inLease: () => void = () => {};
    const second = new Promise<void>((resolve) => (inLease = resolve));
    log.lease = async () => {
      if (++calls === 2) {
        inLease();
        await new Promise((r) => setTimeout(r, 200));
      }
      return true;
    };
    const { receiver, hooks, notifications } = await setup({ timeoutMs: 60_000 }, {}, log);
    receiver.answer = 'hang';
    await log.append(put('held'));
    await log.setCursor('hook', '0');
    await hooks.configure(notifications);
    await second;
    const started = Date.now();
    await hooks.close();
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(receiver.hanging()).toBe(0);
  }, 15_000);

  it('many deliveries leave no listener behind (no MaxListenersExceededWarning)', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => void warnings.push(w.name);
    process.on('warning', onWarning);
    cleanup.push(async () => void process.off('warning', onWarning));
    const { log, hooks, seen, notifications } = await setup({});
    await log.setCursor('hook', '0');
    await hooks.configure(notifications);
    for (let i = 0; i < 15; i++) await log.append(put(`k${i}`));
    await until(() => seen.counts.pushed === 15, 'fifteen deliveries');
    await new Promise((r) => setImmediate(r));
    expect(warnings).toEqual([]);
  });

  it('removed by a reload gets nothing more; a new one gets what follows', async () => {
    const { receiver, log, hooks, notifications } = await setup({});
    await hooks.configure(notifications);
    await until(async () => (await log.getCursor('hook')) !== undefined, 'the new target to take its cursor');
    await log.append(put('first'));
    await until(() => receiver.acknowledged().length === 1, 'the first event');
    const second = await startReceiver(SECRET);
    cleanup.push(() => second.close());
    await hooks.configure({ ...notifications, webhooks: [{ name: 'second', url: second.url, secret: SECRET, events: ['s3:'] }] });
    await until(async () => (await log.getCursor('second')) !== undefined, 'the second target to take its cursor');
    await log.append(put('later'));
    await until(() => second.acknowledged().length === 1, 'the second target gets the next event');
    expect(keys(second)).toEqual(['later']);
    expect(keys(receiver, 'all')).toEqual(['first']);
  });
});
