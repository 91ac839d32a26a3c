/**
 * Webhooks (docs/design.md §9) against a real receiver on 127.0.0.1:
 * each event a target asks for is POSTed, signed, at least once after the
 * commit — through a receiver that fails (500), hangs, and recovers — and
 * never for a write that was refused. A hanging receiver does not slow a
 * write. A restarted casket resumes delivery where it stopped. Counters
 * casket_webhook_{pushed,failed,dropped}_total move in /_casket/metrics.
 */
import { CreateBucketCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { failure, sdk } from '../helpers/clients.js';
import { until } from '../helpers/poll.js';
import { startReceiver, type Receiver } from './receiver.js';

const SECRET = 'test-webhook-secret-0123456789abcdef';

async function metric(casket: RunningCasket, name: string, target: string): Promise<number> {
  const text = await (await fetch(`${casket.url}/_casket/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{target="${target}"}`));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

function notifications(dir: string, receiver: Receiver, settings: Record<string, number>, extra: Record<string, unknown> = {}): string {
  const file = join(dir, 'notifications.json');
  writeFileSync(file, JSON.stringify({ webhooks: [{ name: 'hook', url: receiver.url, secret: SECRET, ...extra }], ...settings }), { mode: 0o600 });
  return file;
}

describe('webhooks', () => {
  const cleanup: Array<() => Promise<void>> = [];
  const clients: S3Client[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) c.destroy();
    for (const f of cleanup.splice(0).reverse()) await f();
  });
  afterAll(async () => {
    for (const f of cleanup.splice(0).reverse()) await f();
  });

  async function setup(settings: Record<string, number>, extra: Record<string, unknown> = {}, nodeArgs: string[] = []) {
    const receiver = await startReceiver(SECRET);
    cleanup.push(() => receiver.close());
    const dir = mkdtempSync(join(tmpdir(), 'casket-hooks-'));
    cleanup.push(async () => rmSync(dir, { recursive: true, force: true }));
    const file = notifications(dir, receiver, settings, extra);
    const casket = await startCasket({ agents: ['alice'], args: ['--notifications', file], nodeArgs });
    cleanup.push(() => casket.stop());
    const admin = sdk(casket.url, casket.admin);
    const alice = sdk(casket.url, casket.agents.alice!);
    clients.push(admin, alice);
    await admin.send(new CreateBucketCommand({ Bucket: 'hooks' }));
    return { receiver, casket, admin, alice, file };
  }

  it('delivers every event, signed, through 500s until the receiver recovers; nothing for a refused write', async () => {
    const { receiver, casket, admin, alice } = await setup({ timeoutMs: 1000, attempts: 20, backoffMs: 20, maxBackoffMs: 100 });
    // The first four requests fail, whatever they carry.
    receiver.answer = (n) => (n <= 4 ? 'fail' : 'ok');
    for (const key of ['a', 'b', 'c']) await admin.send(new PutObjectCommand({ Bucket: 'hooks', Key: key, Body: key }));
    const refused = await failure(alice.send(new PutObjectCommand({ Bucket: 'hooks', Key: 'a', Body: 'mine', IfMatch: '"0000000000000000000000000000000000000000000000000000000000000000"' })));
    expect(refused.status).toBe(412);
    await admin.send(new PutObjectCommand({ Bucket: 'hooks', Key: 'd', Body: 'd' }));
    await until(async () => receiver.acknowledged().length >= 4, 'four deliveries acknowledged', 15_000);
    const acked = receiver.acknowledged();
    expect(acked.map((d) => [d.record.eventName, d.record.s3.object.key])).toEqual([
      ['s3:ObjectCreated:Put', 'a'],
      ['s3:ObjectCreated:Put', 'b'],
      ['s3:ObjectCreated:Put', 'c'],
      ['s3:ObjectCreated:Put', 'd'],
    ]);
    expect(receiver.deliveries.every((d) => d.verified)).toBe(true);
    // Nothing about alice's refused body was sent, failed attempts included.
    expect(receiver.deliveries.filter((d) => d.record.casket.agent === 'alice')).toEqual([]);
    expect(receiver.deliveries.filter((d) => d.answered === 'fail')).toHaveLength(4);
    expect(await metric(casket, 'casket_webhook_pushed_total', 'hook')).toBe(4);
    expect(await metric(casket, 'casket_webhook_failed_total', 'hook')).toBe(4);
    expect(await metric(casket, 'casket_webhook_dropped_total', 'hook')).toBe(0);
    // The secret is in no log line.
    expect(casket.logs.join('\n')).not.toContain(SECRET);
  });

  it('a hanging receiver never slows a write; its event is dropped after the last attempt, and later ones arrive once it recovers', async () => {
    // --gc-global makes every collection a full one: an attempt's timeout
    // must survive it (a timeout signal held only by AbortSignal.any() is
    // collected and never fires: nodejs/node#57736, seen failing here).
    const { receiver, casket, admin } = await setup({ timeoutMs: 3000, attempts: 2, backoffMs: 20, maxBackoffMs: 20 }, {}, ['--gc-global']);
    receiver.answer = (n) => (n <= 2 ? 'hang' : 'ok');
    await admin.send(new PutObjectCommand({ Bucket: 'hooks', Key: 'stuck', Body: 'x' }));
    await until(async () => receiver.deliveries.length >= 1, 'the first delivery reaches the receiver');
    // The receiver holds the delivery open: every write is acknowledged
    // while casket still waits on it (judged by the open connection, not
    // by a clock, so a loaded machine cannot fail it).
    for (let i = 0; i < 10; i++) await admin.send(new PutObjectCommand({ Bucket: 'hooks', Key: `fast-${i}`, Body: 'y' }));
    expect(receiver.hanging()).toBe(1);
    expect(receiver.deliveries).toHaveLength(1);
    expect(receiver.acknowledged()).toHaveLength(0);
    await until(async () => (await metric(casket, 'casket_webhook_dropped_total', 'hook')) === 1, 'the hung event dropped', 30_000);
    await until(async () => receiver.acknowledged().length >= 10, 'the later events delivered', 15_000);
    expect(receiver.acknowledged().map((d) => d.record.s3.object.key)).toEqual(Array.from({ length: 10 }, (_, i) => `fast-${i}`));
    expect(await metric(casket, 'casket_webhook_failed_total', 'hook')).toBe(2);
    expect(casket.logs.some((l) => l.includes('webhook event dropped after the last attempt') && l.includes('"target":"hook"'))).toBe(true);
  });

  it('filters by bucket, prefix and event name; a restarted casket resumes delivery at its cursor', async () => {
    const { receiver, casket, admin, file } = await setup({ timeoutMs: 1000, attempts: 50, backoffMs: 50, maxBackoffMs: 100 }, { buckets: ['hooks'], prefix: 'keep/', events: ['s3:ObjectCreated:', 'casket:WriteRefused'] });
    await admin.send(new CreateBucketCommand({ Bucket: 'elsewhere' }));
    receiver.answer = 'fail';
    await admin.send(new PutObjectCommand({ Bucket: 'hooks', Key: 'keep/1', Body: '1' }));
    await admin.send(new PutObjectCommand({ Bucket: 'hooks', Key: 'skip/2', Body: '2' }));
    await admin.send(new PutObjectCommand({ Bucket: 'elsewhere', Key: 'keep/3', Body: '3' }));
    await admin.send(new PutObjectCommand({ Bucket: 'hooks', Key: 'keep/4', Body: '4' }));
    await until(async () => receiver.deliveries.length >= 2, 'delivery attempted');
    // Killed while keep/1 is still failing: nothing was acknowledged.
    await casket.kill();
    receiver.answer = 'ok';
    const again = await casket.restart(['--notifications', file]);
    cleanup.push(() => again.stop());
    await until(async () => receiver.acknowledged().length >= 2, 'both events delivered after the restart', 15_000);
    expect(receiver.acknowledged().map((d) => [d.record.s3.bucket.name, d.record.s3.object.key])).toEqual([
      ['hooks', 'keep/1'],
      ['hooks', 'keep/4'],
    ]);
  });

  it('reloads the targets (SIGHUP, or the file changing): a new target gets the next events, the removed one no more', async () => {
    const { receiver, casket, admin, file } = await setup({ timeoutMs: 1000, attempts: 5, backoffMs: 20, maxBackoffMs: 20 });
    await admin.send(new PutObjectCommand({ Bucket: 'hooks', Key: 'before', Body: '1' }));
    await until(async () => receiver.acknowledged().length === 1, 'the first target got the first event');
    const second = await startReceiver(SECRET);
    cleanup.push(() => second.close());
    writeFileSync(file, JSON.stringify({ webhooks: [{ name: 'second', url: second.url, secret: SECRET }] }));
    casket.proc.kill('SIGHUP');
    await until(async () => casket.logs.some((l) => l.includes('notifications reloaded')), 'the reload logged');
    await admin.send(new PutObjectCommand({ Bucket: 'hooks', Key: 'after', Body: '2' }));
    await until(async () => second.acknowledged().length === 1, 'the new target got the next event');
    expect(second.acknowledged()[0]!.record.s3.object.key).toBe('after');
    expect(second.acknowledged()[0]!.verified).toBe(true);
    expect(receiver.deliveries.map((d) => d.record.s3.object.key)).toEqual(['before']);
  });
});
