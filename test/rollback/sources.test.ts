/**
 * Where a rollback finds the bytes of the version to restore
 * (src/rollback/sources.ts, docs/design.md §10), in-process so that
 * `npm run mutate:rooms` sees it: pre-images (--keep-pre-images) when
 * nothing was retained, checked against their SHA-256 like retained bytes;
 * and the bucket's own versions of a key whose name S3's XML must escape.
 */
import { PutBucketVersioningCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sdk } from '../helpers/clients.js';
import type { InProcessCasket } from '../helpers/in-process.js';
import { agentPut, content, inProcessWithBucket, postRollback } from './helpers.js';

const bucket = 'sources';
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
});

async function setup(flags: Record<string, string>): Promise<{ c: InProcessCasket; alice: S3Client; person: S3Client }> {
  const { c, agents, person } = await inProcessWithBucket(bucket, stops, ['alice'], flags);
  return { c, alice: agents.alice!, person };
}

const rollback = postRollback;

const text = async (s3: S3Client, key: string) => (await content(s3, bucket, key))?.body.toString() ?? null;

describe('the goal version\'s bytes', () => {
  it('come from the pre-image when nothing was retained, and the answer says so', async () => {
    const { c, alice, person } = await setup({ retainMaxSize: '0', keepPreImages: 'true' });
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'pre', Body: 'before' }));
    const since = new Date().toISOString();
    await agentPut(alice, bucket, 'pre', 'after');
    const answer = await rollback(c, { agent: 'alice', since, bucket });
    expect(answer.restored).toEqual([{ bucket, key: 'pre', action: 'put', from: expect.any(String), to: `"${createHash('sha256').update('before').digest('hex')}"`, source: 'pre-image' }]);
    expect(await text(person, 'pre')).toBe('before');
  });

  it('a pre-image corrupted on disk is not written back: the key is unrecoverable and untouched', async () => {
    const { c, alice, person } = await setup({ retainMaxSize: '0', keepPreImages: 'true' });
    const before = 'the version before alice';
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'corrupt', Body: before }));
    const since = new Date().toISOString();
    await agentPut(alice, bucket, 'corrupt', "alice's bad write");
    const goal = createHash('sha256').update(before).digest('hex');
    const dir = join(c.dataDir, 'pre-images');
    const files = readdirSync(dir).filter((n) => n.startsWith(`${goal}.`));
    expect(files).toHaveLength(1);
    // One byte changed, same length: only the SHA-256 tells.
    writeFileSync(join(dir, files[0]!), 'the version before alicE');
    const answer = await rollback(c, { agent: 'alice', since, bucket });
    expect(answer.restored).toEqual([]);
    expect(answer.unrecoverable).toMatchObject([{ key: 'corrupt', goalETag: `"${goal}"`, reason: expect.stringContaining('neither retained, kept as a pre-image') }]);
    expect(await text(person, 'corrupt')).toBe("alice's bad write");
  });

  it('come from the bucket\'s versions for a key whose name XML escapes (& < > \' ")', async () => {
    const { c, alice, person } = await setup({ retainMaxSize: '0' });
    const admin = sdk(c.url, c.admin);
    stops.push(async () => admin.destroy());
    await admin.send(new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: 'Enabled' } }));
    const key = `notes/R&D <"draft"> isn't.txt`;
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'before\n' }));
    const since = new Date().toISOString();
    await agentPut(alice, bucket, key, 'after\n');
    const answer = await rollback(c, { agent: 'alice', since, bucket });
    expect(answer.unrecoverable).toEqual([]);
    expect(answer.restored).toMatchObject([{ key, action: 'put', source: 'versions' }]);
    expect(await text(person, key)).toBe('before\n');
  });
});
