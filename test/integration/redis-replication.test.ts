/**
 * A state change is acknowledged only once a replica holds it (docs/design.md §11):
 * casket found through Redis Sentinel, on a primary with one replica. While
 * the replica stops acknowledging (SIGSTOP: it still holds its connection, so
 * only WAIT can tell), an agent's write answers 503 ServiceUnavailable with
 * Retry-After and writes nothing — in words of casket's own, none of Redis's;
 * a read goes on; once the replica catches up (SIGCONT) the same write
 * succeeds without a restart. A person's write, which consults no read stamp,
 * is checked by the backend as when Redis is down (state-outage.test.ts).
 *
 * Runs on the embedded store and, with CASKET_TEST_UPSTREAM, through moto or
 * Ceph RGW. The failover itself is test/linearizability/failover.test.ts.
 */
import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { bytes, sdk } from '../helpers/clients.js';
import { raw, xmlField } from '../helpers/raw.js';
import { GROUP, hasSentinel, startRedisGroup, type RedisGroup } from '../helpers/redis-sentinel.js';
import { until } from '../helpers/poll.js';
import { need } from '../helpers/tools.js';

const bucket = 'replicated';
let group: RedisGroup;
let casket: RunningCasket;
let admin: S3Client;
let alice: S3Client;

describe.runIf(need('redis-server and redis-sentinel', hasSentinel()))('Redis through Sentinel: a write waits for a replica', () => {
  beforeAll(async () => {
    group = await startRedisGroup({ replicas: 1 });
    casket = await startCasket({ agents: ['alice'], args: ['--state', 'redis', '--redis-sentinels', group.sentinels, '--redis-sentinel-name', GROUP, '--redis-replica-timeout', '500'] });
    admin = sdk(casket.url, casket.admin);
    alice = sdk(casket.url, casket.agents.alice!, { retries: 1 });
    await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}` });
  }, 60_000);

  afterAll(async () => {
    admin?.destroy();
    alice?.destroy();
    await casket?.stop();
    await group?.stop();
  });

  async function read(s3: S3Client, key: string) {
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    return { etag: got.ETag!, body: (await bytes(got.Body)).toString() };
  }

  it("an agent's write with no replica confirming answers 503 and writes nothing; it succeeds once the replica catches up", { timeout: 60_000 }, async () => {
    const v1 = await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'notes', Body: 'v1' }));
    const [replica] = group.nodes.filter((p) => p !== group.nodes[0]);
    group.pause(replica!);
    try {
      // The read goes on (its stamp waits for the replica in vain, and is kept on the primary).
      const seen = await read(alice, 'notes');
      expect(seen).toEqual({ etag: v1.ETag, body: 'v1' });
      const refused = await raw(casket.url, casket.agents.alice!, { method: 'PUT', path: `/${bucket}/notes`, headers: { 'if-match': seen.etag }, body: 'alice v2' });
      expect(refused.status).toBe(503);
      expect(xmlField(refused.body, 'Code')).toBe('ServiceUnavailable');
      expect(refused.headers['retry-after']).toBe('1');
      // casket's words only: nothing of WAIT, replicas counted, hosts or Redis's own errors.
      expect(xmlField(refused.body, 'Message')).not.toMatch(/WAIT|\d+ of \d+|127\.0\.0\.1|READONLY|NOREPLICAS|ioredis|Connection/);
      expect(await read(admin, 'notes')).toEqual({ etag: v1.ETag, body: 'v1' });
    } finally {
      group.resume(replica!);
    }
    // Caught up: the same write goes through, no restart.
    let v2: string | undefined;
    await until(async () => {
      const r = await raw(casket.url, casket.agents.alice!, { method: 'PUT', path: `/${bucket}/notes`, headers: { 'if-match': v1.ETag! }, body: 'alice v2' });
      if (r.status === 200) v2 = String(r.headers.etag);
      else expect(r.status, r.body).toBe(503);
      return r.status === 200;
    }, 'the write to succeed once the replica is back');
    expect(await read(admin, 'notes')).toEqual({ etag: v2, body: 'alice v2' });
  });
});
