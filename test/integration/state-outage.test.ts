/**
 * The state store goes away (docs/design.md §4): with Redis stopped,
 * an agent's write — which needs the agent's read stamp before it may commit —
 * answers 503 ServiceUnavailable in S3 XML with Retry-After, and nothing is
 * written; reads keep working; a person's conditional write, which needs no
 * stamp, is still checked atomically by the backend; when Redis returns,
 * everything works again without restarting casket.
 *
 * Runs on the embedded store and, with CASKET_TEST_UPSTREAM, through moto or
 * Ceph RGW. The chain of a counter written through an outage is judged in
 * test/linearizability/counter.test.ts.
 */
import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { bytes, failure, sdk } from '../helpers/clients.js';
import { raw, xmlField } from '../helpers/raw.js';
import { hasRedis, startRedis, type RunningRedis } from '../helpers/redis.js';
import { etagOf } from '../helpers/suite.js';
import { until } from '../helpers/poll.js';
import { need } from '../helpers/tools.js';

const bucket = 'outage';
let redis: RunningRedis;
let casket: RunningCasket;
let admin: S3Client;
let alice: S3Client;

describe.runIf(need('redis-server', hasRedis()))('Redis, the state store, stops and comes back', () => {
  beforeAll(async () => {
    redis = await startRedis();
    casket = await startCasket({ agents: ['alice'], args: ['--state', 'redis', '--redis-url', redis.url] });
    admin = sdk(casket.url, casket.admin);
    alice = sdk(casket.url, casket.agents.alice!);
    await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}` });
  });

  afterAll(async () => {
    admin?.destroy();
    alice?.destroy();
    await casket?.stop();
    await redis?.stop();
  });

  async function read(s3: S3Client, key: string) {
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    return { etag: got.ETag!, body: (await bytes(got.Body)).toString() };
  }

  it("an agent's write answers 503 with Retry-After and writes nothing; reads and a person's conditional write go on; all works again once Redis is back", async () => {
    const v1 = await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'notes', Body: 'v1' }));
    const seen = await read(alice, 'notes');
    expect(seen.etag).toBe(v1.ETag);

    await redis.stop();
    const refused = await raw(casket.url, casket.agents.alice!, { method: 'PUT', path: `/${bucket}/notes`, headers: { 'if-match': seen.etag }, body: 'alice v2' });
    expect(refused.status).toBe(503);
    expect(xmlField(refused.body, 'Code')).toBe('ServiceUnavailable');
    expect(refused.headers['retry-after']).toBe('1');
    // The SDK sees a retryable ServiceUnavailable, not an InternalError.
    expect(await failure(alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'notes', Body: 'alice v2', IfMatch: seen.etag })))).toMatchObject({ status: 503, name: 'ServiceUnavailable' });
    // Creating needs no read, but the stamp of what it creates does not matter: still no write without the store.
    expect((await raw(casket.url, casket.agents.alice!, { method: 'PUT', path: `/${bucket}/fresh`, headers: { 'if-none-match': '*' }, body: 'x' })).status).toBe(503);
    // Nothing was written, and reads keep working — for a person and for the agent.
    expect(await read(admin, 'notes')).toEqual({ etag: v1.ETag, body: 'v1' });
    expect((await read(alice, 'notes')).body).toBe('v1');
    expect((await raw(casket.url, casket.admin, { method: 'HEAD', path: `/${bucket}/fresh` })).status).toBe(404);
    // A person's If-Match needs no stamp: the backend checks it atomically, as S3 would.
    const v2 = await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'notes', Body: 'person v2', IfMatch: v1.ETag }));
    expect(v2.ETag).toBe(etagOf('person v2'));
    expect(await failure(admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'notes', Body: 'person v2b', IfMatch: v1.ETag })))).toMatchObject({ status: 412 });
    // Naming who wrote v2 asks the store (s3/write.ts), which cannot answer:
    // the 412 stands, only without the writer's access key.
    const stale = await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}/notes`, headers: { 'if-match': v1.ETag! }, body: 'person v2c' });
    expect([stale.status, xmlField(stale.body, 'Code'), stale.headers['x-casket-writer-access-key']]).toEqual([412, 'PreconditionFailed', undefined]);

    await redis.start();
    // casket reconnects by itself (within ~2 s: src/state/redis.ts); until
    // then the agent's write is refused as above, never let through. Redis
    // came back empty (no persistence here), so alice reads again first.
    let v3: string | undefined;
    await until(async () => {
      const again = await read(alice, 'notes');
      expect(again.etag).toBe(v2.ETag);
      const put = await raw(casket.url, casket.agents.alice!, { method: 'PUT', path: `/${bucket}/notes`, headers: { 'if-match': again.etag }, body: 'alice v3' });
      // 503: not reconnected yet; 412 not-read: the read's stamp was recorded
      // while the store was still unreachable — re-read, as the 412 says.
      expect([200, 503, 412]).toContain(put.status);
      if (put.status === 412) expect(put.headers['x-casket-reason']).toBe('not-read');
      if (put.status === 200) v3 = put.headers.etag as string;
      return put.status === 200;
    }, 'an agent write to succeed once Redis is back');
    expect(v3).toBe(etagOf('alice v3'));
    expect(await read(admin, 'notes')).toEqual({ etag: etagOf('alice v3'), body: 'alice v3' });
  });
});
