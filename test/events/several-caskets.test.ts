/**
 * Several caskets on one Redis (docs/design.md §9, §11): each casket's
 * /_casket/events carries every casket's events, in one order — the same
 * ids in the same order on both streams — and a Last-Event-ID from one
 * casket resumes on the other. A webhook target both caskets name gets
 * each event once, from whichever casket holds its delivery lease.
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { bytes, sdk } from '../helpers/clients.js';
import { hasRedis, startRedis, type RunningRedis } from '../helpers/redis.js';
import { need } from '../helpers/tools.js';
import { startUpstream, upstreamKindFromEnv, type Upstream } from '../helpers/upstream.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until } from '../helpers/poll.js';
import { startReceiver, type Receiver } from './receiver.js';
import { subscribe, type Subscription } from './sse.js';

const SECRET = 'shared-webhook-secret-0123456789';

const haveRedis = need('redis-server', hasRedis());

describe.runIf(haveRedis)('two caskets on one Redis', () => {
  let redis: RunningRedis;
  let upstream: Upstream;
  let one: RunningCasket;
  let two: RunningCasket;
  const clients: S3Client[] = [];
  const streams: Subscription[] = [];

  let receiver: Receiver;
  let dir: string;

  beforeAll(async () => {
    redis = await startRedis();
    // Both caskets name the same webhook target: one of them delivers each event (a lease in Redis).
    receiver = await startReceiver(SECRET);
    dir = mkdtempSync(join(tmpdir(), 'casket-hooks-'));
    const file = join(dir, 'notifications.json');
    writeFileSync(file, JSON.stringify({ webhooks: [{ name: 'shared', url: receiver.url, secret: SECRET }], backoffMs: 20, maxBackoffMs: 50 }), { mode: 0o600 });
    const args = ['--state', 'redis', '--redis-url', redis.url, '--notifications', file];
    // Replicas share one upstream (moto, or CASKET_TEST_UPSTREAM's) as they share Redis.
    upstream = await startUpstream(upstreamKindFromEnv() ?? 'moto');
    one = await startCasket({ agents: ['alice', 'bob'], upstream, args });
    two = await startCasket({ credentialsOf: one, upstream, args });
  });

  afterAll(async () => {
    for (const s of streams) s.close();
    for (const c of clients) c.destroy();
    await one?.stop();
    await two?.stop();
    await upstream?.stop();
    await redis?.stop();
    await receiver?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('each stream shows both caskets\' events, in the same order, and one casket\'s id resumes on the other', async () => {
    for (const c of [one, two]) streams.push(await subscribe(c.url, one.admin));
    const alice = sdk(one.url, one.agents.alice!);
    const bob = sdk(two.url, one.agents.bob!);
    clients.push(alice, bob, sdk(one.url, one.admin));
    await clients[2]!.send(new CreateBucketCommand({ Bucket: 'shared' }));
    // Alternate caskets on one key, each write naming the version before it.
    let etag = (await alice.send(new PutObjectCommand({ Bucket: 'shared', Key: 'k', Body: 'v0', IfNoneMatch: '*' }))).ETag!;
    for (let i = 1; i <= 6; i++) {
      const who = i % 2 ? bob : alice;
      // An agent writes what it has read (docs/design.md §4).
      await bytes((await who.send(new GetObjectCommand({ Bucket: 'shared', Key: 'k' }))).Body);
      etag = (await who.send(new PutObjectCommand({ Bucket: 'shared', Key: 'k', Body: `v${i}`, IfMatch: etag }))).ETag!;
      // And a write of another key on the other casket, concurrently.
      await (i % 2 ? alice : bob).send(new PutObjectCommand({ Bucket: 'shared', Key: `other-${i}`, Body: `o${i}`, IfNoneMatch: '*' }));
    }
    const [a, b] = await Promise.all(streams.map((s) => s.until((r) => r.length >= 13)));
    expect(a!.map((r) => r.id)).toEqual(b!.map((r) => r.id));
    expect(new Set(a!.map((r) => r.casket.agent))).toEqual(new Set(['alice', 'bob']));
    // One order per key, chained: each write of k replaced the one before it.
    const k = a!.filter((r) => r.s3.object.key === 'k');
    expect(k).toHaveLength(7);
    for (let i = 1; i < k.length; i++) expect(k[i]!.casket.previousETag).toBe(k[i - 1]!.s3.object.eTag);
    expect(`"${k.at(-1)!.s3.object.eTag}"`).toBe(etag);
    expect(a!.map((r) => r.s3.object.sequencer)).toEqual([...a!.map((r) => r.s3.object.sequencer)].sort());

    // An id from casket one resumes on casket two.
    const resumed = await subscribe(two.url, one.admin, '/_casket/events', { 'last-event-id': a![9]!.id });
    streams.push(resumed);
    expect((await resumed.until((r) => r.length >= 3)).map((r) => r.id)).toEqual(a!.slice(10).map((r) => r.id));

    // The webhook got each event of both caskets once, in the stream's order.
    await until(async () => receiver.acknowledged().length >= 13, 'every event delivered');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.deliveries.map((d) => d.eventId)).toEqual(a!.map((r) => r.id));
    expect(receiver.deliveries.every((d) => d.verified)).toBe(true);
  });
});
