/**
 * A listing in front of an upstream asks the state store for casket's ETags
 * once per page, not once per key (backends/s3/listing.ts, etags.ts
 * indexedMany): observed on a real Redis through INFO commandstats
 * (https://redis.io/docs/latest/commands/info/), from a second casket that
 * shares the Redis but has none of the entries in its own memory — for
 * ListObjectsV2 and for ListObjectVersions of a versioned bucket (the
 * upstream's own version listing, backends/s3/version-reads.ts). And a key
 * rewritten behind casket's back shows the SHA-256 of what the upstream now
 * holds, in ListObjectsV2, ListObjects (v1) and ListObjectVersions alike.
 */
import { CreateBucketCommand, ListObjectsCommand, ListObjectsV2Command, ListObjectVersionsCommand, PutBucketVersioningCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { sdk } from '../helpers/clients.js';
import { hasRedis, startRedis, type RunningRedis } from '../helpers/redis.js';
import { need } from '../helpers/tools.js';
import { startUpstream, upstreamKindFromEnv, type Upstream } from '../helpers/upstream.js';

const N = 30;
const bucket = 'lookups';
const versioned = 'lookups-versioned';
const sha256 = (s: string) => `"${createHash('sha256').update(s).digest('hex')}"`;
const keys = Array.from({ length: N }, (_, i) => `dir/k${String(i).padStart(2, '0')}`);

describe.runIf(need('redis-server', hasRedis()))('listing ETags from the state store', () => {
  let redis: RunningRedis;
  let upstream: Upstream;
  let one: RunningCasket;
  let two: RunningCasket;
  let stats: Redis;
  let direct: S3Client;

  beforeAll(async () => {
    redis = await startRedis();
    upstream = await startUpstream(upstreamKindFromEnv() ?? 'moto');
    one = await startCasket({ upstream, args: ['--state', 'redis', '--redis-url', redis.url] });
    two = await startCasket({ upstream, args: ['--state', 'redis', '--redis-url', redis.url, '--credentials', `${one.dataDir}/test-credentials.json`] });
    stats = new Redis(redis.url, { lazyConnect: true });
    await stats.connect();
    direct = new S3Client({ endpoint: upstream.url, region: upstream.region, forcePathStyle: true, credentials: { accessKeyId: upstream.accessKey, secretAccessKey: upstream.secretKey } });
    const admin = sdk(one.url, one.admin);
    await admin.send(new CreateBucketCommand({ Bucket: bucket }));
    for (const key of keys) await admin.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: `body of ${key}` }));
    await admin.send(new CreateBucketCommand({ Bucket: versioned }));
    await admin.send(new PutBucketVersioningCommand({ Bucket: versioned, VersioningConfiguration: { Status: 'Enabled' } }));
    for (const key of keys) await admin.send(new PutObjectCommand({ Bucket: versioned, Key: key, Body: `version of ${key}` }));
  });
  afterAll(async () => {
    direct?.destroy();
    stats?.disconnect();
    await two?.stop();
    await one?.stop();
    await upstream?.stop();
    await redis?.stop();
  });

  /** Calls of the commands that read the ETag index (GET per key before, MGET per page now) since the last reset. */
  async function indexReads(): Promise<number> {
    const info = await stats.info('commandstats');
    const calls = (cmd: string) => Number(new RegExp(`^cmdstat_${cmd}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
    return calls('get') + calls('mget') + calls('hmget');
  }

  it(`ListObjectsV2 of ${N} keys costs one state-store lookup per page, not one per key`, async () => {
    // Two pages: the lookups follow pages, not keys.
    const s3 = sdk(two.url, one.admin);
    await stats.config('RESETSTAT');
    const first = await s3.send(new ListObjectsV2Command({ Bucket: bucket, MaxKeys: N / 2 }));
    const second = await s3.send(new ListObjectsV2Command({ Bucket: bucket, MaxKeys: N / 2, ContinuationToken: first.NextContinuationToken }));
    const reads = await indexReads();
    const listed = [...(first.Contents ?? []), ...(second.Contents ?? [])];
    expect(listed.map((o) => o.Key)).toEqual(keys);
    expect(listed.map((o) => o.ETag)).toEqual(keys.map((k) => sha256(`body of ${k}`)));
    expect(reads).toBe(2);
  });

  it(`ListObjectVersions of a versioned bucket of ${N} keys costs one state-store lookup per page, not one per version`, async () => {
    const s3 = sdk(two.url, one.admin);
    await stats.config('RESETSTAT');
    const first = await s3.send(new ListObjectVersionsCommand({ Bucket: versioned, MaxKeys: N / 2 }));
    const second = await s3.send(new ListObjectVersionsCommand({ Bucket: versioned, MaxKeys: N / 2, KeyMarker: first.NextKeyMarker, VersionIdMarker: first.NextVersionIdMarker }));
    const reads = await indexReads();
    const listed = [...(first.Versions ?? []), ...(second.Versions ?? [])];
    expect(listed.map((v) => v.Key)).toEqual(keys);
    expect(listed.map((v) => v.ETag)).toEqual(keys.map((k) => sha256(`version of ${k}`)));
    expect(reads).toBe(2);
  });

  it('a key rewritten behind casket shows the SHA-256 of what the upstream now holds, in every listing', async () => {
    const [key] = keys as [string];
    await direct.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'rewritten around casket' }));
    const expected = sha256('rewritten around casket');
    for (const casket of [one, two]) {
      const s3 = sdk(casket.url, one.admin);
      const v2 = await s3.send(new ListObjectsV2Command({ Bucket: bucket, MaxKeys: 3 }));
      expect(v2.Contents?.map((o) => o.ETag)).toEqual([expected, sha256(`body of ${keys[1]}`), sha256(`body of ${keys[2]}`)]);
      const v1 = await s3.send(new ListObjectsCommand({ Bucket: bucket, MaxKeys: 1 }));
      expect(v1.Contents?.map((o) => o.ETag)).toEqual([expected]);
      const versions = await s3.send(new ListObjectVersionsCommand({ Bucket: bucket, Prefix: key }));
      expect(versions.Versions?.map((v) => v.ETag)).toEqual([expected]);
    }
  });
});
