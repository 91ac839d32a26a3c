/**
 * The bucket's own versions as the source of a rollback's goal
 * (src/rollback/sources.ts, docs/design.md §10) at their edges: the version
 * casket serves for `GET ?versionId=` must be the goal — its ETag, and for a
 * single-part object its SHA-256 — or nothing is written back; a dry run
 * reads them as nobody; and the null version (written before versioning was
 * enabled) is a version like any other. With retention off and no
 * pre-images, the versions are the only source. In-process (the backend is
 * made to misbehave from inside, as in edges.test.ts), so `npm run
 * mutate:rooms` sees it.
 */
import { CreateBucketCommand, PutBucketVersioningCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InProcessCasket } from '../helpers/in-process.js';
import { captureLog, tornBody, withReads } from '../helpers/faults.js';
import { raw, sha256hex } from '../helpers/raw.js';
import type { ObjectReader } from '../../src/backends/types.js';
import { MAX_TOTAL_BYTES } from '../../src/changesets/commit.js';
import { agentMultipartCreate, agentPut, content, inProcessWithBucket, postRollback } from './helpers.js';

const bucket = 'versions-edges';
const stops: Array<() => Promise<void>> = [];
let c: InProcessCasket;
let admin: S3Client;
let alice: S3Client;
let person: S3Client;

beforeAll(async () => {
  const made = await inProcessWithBucket(bucket, stops, ['alice'], { retainMaxSize: '0' });
  ({ c, admin, person } = made);
  alice = made.agents.alice!;
  await admin.send(new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: 'Enabled' } }));
});
afterAll(async () => {
  for (const s of stops.splice(0).reverse()) await s();
});

const text = async (key: string, b = bucket) => (await content(person, b, key))?.body.toString() ?? null;

/** While `run` runs, the backend answers `GET key?versionId=` with `serve(key, versionId, the real answer)`. */
function withVersionReads<T>(key: string, serve: (versionId: string, real: (v?: string) => Promise<ObjectReader | null>) => Promise<ObjectReader | null>, run: () => Promise<T>): Promise<T> {
  return withReads(c.casket.services.backend, (k, v, real) => (k === key && v !== undefined ? serve(v, real) : real(v)), run);
}

describe('the goal from the bucket\'s versions', () => {
  it('a backend that answers GET ?versionId= with the current version: a multipart goal is unrecoverable, the key left as it is', async () => {
    const parts = [randomBytes(5 * 1024 * 1024), randomBytes(100)];
    await agentMultipartCreate(person, bucket, 'big.bin', parts);
    const since = new Date().toISOString();
    await agentPut(alice, bucket, 'big.bin', 'alice\n');
    const answer = await withVersionReads('big.bin', (_v, real) => real(undefined), () => postRollback(c, { agent: 'alice', since, bucket }));
    expect(answer.restored).toEqual([]);
    expect(answer.unrecoverable).toMatchObject([{ key: 'big.bin', reason: 'the version to restore is a multipart version, and the bucket keeps no version of it; nothing written' }]);
    expect(await text('big.bin')).toBe('alice\n');
  });

  it('a version whose bytes are not its SHA-256 (one byte flipped on the backend\'s disk) is unrecoverable, the key left as it is', async () => {
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'flipped.txt', Body: 'before\n' }));
    const since = new Date().toISOString();
    await agentPut(alice, bucket, 'flipped.txt', 'alice\n');
    const flip = async (versionId: string, real: (v?: string) => Promise<ObjectReader | null>): Promise<ObjectReader | null> => {
      const r = await real(versionId);
      if (!r) return r;
      const body = Buffer.concat((await r.open().toArray()) as Buffer[]);
      body[0] = body[0]! ^ 1;
      return { info: r.info, open: () => Readable.from([body]) };
    };
    const answer = await withVersionReads('flipped.txt', flip, () => postRollback(c, { agent: 'alice', since, bucket }));
    expect(answer.restored).toEqual([]);
    expect(answer.unrecoverable).toMatchObject([{ key: 'flipped.txt', goalETag: `"${sha256hex('before\n')}"` }]);
    expect(await text('flipped.txt')).toBe('alice\n');
  });

  it('the null version (written before versioning was enabled) is restored like any other', async () => {
    const older = 'versions-null';
    await admin.send(new CreateBucketCommand({ Bucket: older }));
    await person.send(new PutObjectCommand({ Bucket: older, Key: 'old.txt', Body: 'from before versioning\n' }));
    await admin.send(new PutBucketVersioningCommand({ Bucket: older, VersioningConfiguration: { Status: 'Enabled' } }));
    const since = new Date().toISOString();
    await agentPut(alice, older, 'old.txt', 'alice\n');
    const answer = await postRollback(c, { agent: 'alice', since, bucket: older });
    expect(answer.unrecoverable).toEqual([]);
    expect(answer.restored).toMatchObject([{ key: 'old.txt', action: 'put', source: 'versions' }]);
    expect(await text('old.txt', older)).toBe('from before versioning\n');
  });

  it('a version whose bytes fail mid-read: unrecoverable, and the operator\'s log says which key and why', async () => {
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'torn.txt', Body: 'before, and more\n' }));
    const since = new Date().toISOString();
    await agentPut(alice, bucket, 'torn.txt', 'alice\n');
    const torn = async (versionId: string, real: (v?: string) => Promise<ObjectReader | null>): Promise<ObjectReader | null> => {
      const r = await real(versionId);
      if (!r) return r;
      return { info: r.info, open: () => tornBody('before') };
    };
    const { logged, restore } = captureLog(c.casket.services.log, 'warn');
    let answer;
    try {
      answer = await withVersionReads('torn.txt', torn, () => postRollback(c, { agent: 'alice', since, bucket, prefix: 'torn' }));
    } finally {
      restore();
    }
    expect(answer.restored).toEqual([]);
    expect(answer.unrecoverable).toMatchObject([{ key: 'torn.txt' }]);
    expect(logged.filter(([, msg]) => msg === 'rollback: versions not read')).toEqual([[{ error: 'disk failed mid-read', bucket, key: 'torn.txt' }, 'rollback: versions not read']]);
    expect(await text('torn.txt')).toBe('alice\n');
  });

  it('a goal larger than a rollback writes back at once (100 MiB) is unrecoverable, named by its size and never read; the key left as it is', async () => {
    const huge = Buffer.alloc(MAX_TOTAL_BYTES + 1, 'h');
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'huge.bin', Body: huge }));
    const since = new Date().toISOString();
    await agentPut(alice, bucket, 'huge.bin', 'alice\n');
    let versionReads = 0;
    const reason = `the version to restore is ${MAX_TOTAL_BYTES + 1} bytes, over the ${MAX_TOTAL_BYTES} (100 MiB) a rollback writes back at once; nothing written`;
    for (const dryRun of [true, false]) {
      const answer = await withVersionReads('huge.bin', (v, real) => (versionReads++, real(v)), () => postRollback(c, { agent: 'alice', since, bucket, dryRun }));
      expect(answer.restored).toEqual([]);
      expect(answer.unrecoverable).toMatchObject([{ key: 'huge.bin', goalETag: `"${sha256hex(huge)}"`, reason }]);
    }
    expect(versionReads).toBe(0);
    expect(await text('huge.bin')).toBe('alice\n');
  });

  it('a key with more versions than one page of ListObjectVersions (1,000): the goal is found on the next page', async () => {
    const key = 'paged.txt';
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'the goal\n' }));
    const since = new Date().toISOString();
    let etag = (await content(alice, bucket, key))!.etag;
    for (let i = 0; i < 1000; i++) etag = (await alice.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: `alice ${i}\n`, IfMatch: etag }))).ETag!;
    const answer = await postRollback(c, { agent: 'alice', since, bucket, prefix: key });
    expect(answer.unrecoverable).toEqual([]);
    expect(answer.restored).toMatchObject([{ key, action: 'put', source: 'versions' }]);
    expect(await text(key)).toBe('the goal\n');
  }, 60_000);
});
