/**
 * The conditional deletes AWS added in 2024
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_DeleteObject.html):
 * `x-amz-if-match-size` and `x-amz-if-match-last-modified-time` on
 * DeleteObject, `<Size>` and `<LastModifiedTime>` in DeleteObjects entries.
 * A version that differs → 412 PreconditionFailed (with casket's current
 * state), a key that does not exist → 204, and the check is atomic with the
 * delete: a size-conditioned delete racing a writer that replaces the object
 * never deletes the replacement. On the embedded store, through moto and RGW.
 */
import { DeleteObjectCommand, DeleteObjectsCommand, HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { failure, sdk } from '../helpers/clients.js';
import { errorCode, raw, xmlField } from '../helpers/raw.js';
import { casketWithBucket, etagOf } from '../helpers/suite.js';

const t = casketWithBucket('conddel', { agents: ['ann'] });
const bucket = t.bucket;

async function put(key: string, body: string): Promise<Date> {
  await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
  return (await t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }))).LastModified!;
}

async function exists(key: string): Promise<boolean> {
  try {
    await t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
    return true;
  } catch (e) {
    if ((e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return false;
    throw e;
  }
}

describe('DeleteObject with x-amz-if-match-size', () => {
  it('deletes only the size named: 412 with the current state otherwise, 204 for a missing key', async () => {
    await put('sized', 'twelve bytes');
    const wrong = await raw(t.casket.url, t.casket.admin, { method: 'DELETE', path: `/${bucket}/sized`, headers: { 'x-amz-if-match-size': '11' } });
    expect([wrong.status, errorCode(wrong.body)]).toEqual([412, 'PreconditionFailed']);
    expect(xmlField(wrong.body, 'Condition')).toBe('x-amz-if-match-size');
    expect(xmlField(wrong.body, 'CurrentETag')).toBe(etagOf('twelve bytes'));
    expect(wrong.headers.etag).toBe(etagOf('twelve bytes'));
    expect(await exists('sized')).toBe(true);
    await t.s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'sized', IfMatchSize: 12 }));
    expect(await exists('sized')).toBe(false);
    const missing = await raw(t.casket.url, t.casket.admin, { method: 'DELETE', path: `/${bucket}/sized`, headers: { 'x-amz-if-match-size': '12' } });
    expect(missing.status).toBe(204);
  });

  it('a size that is not a number is 400 InvalidArgument', async () => {
    await put('bad-size', 'x');
    const r = await raw(t.casket.url, t.casket.admin, { method: 'DELETE', path: `/${bucket}/bad-size`, headers: { 'x-amz-if-match-size': 'ten' } });
    expect([r.status, errorCode(r.body)]).toEqual([400, 'InvalidArgument']);
    expect(await exists('bad-size')).toBe(true);
  });

  it('with If-Match: both must hold', async () => {
    await put('both', 'content');
    const sdkWrong = await failure(t.s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'both', IfMatch: etagOf('content'), IfMatchSize: 1 })));
    expect(sdkWrong).toMatchObject({ name: 'PreconditionFailed', status: 412 });
    expect(await failure(t.s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'both', IfMatch: etagOf('other'), IfMatchSize: 7 })))).toMatchObject({ status: 412 });
    expect(await exists('both')).toBe(true);
    await t.s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'both', IfMatch: etagOf('content'), IfMatchSize: 7 }));
    expect(await exists('both')).toBe(false);
    // If-Match still needs the key to exist (404), whatever the size says.
    expect(await failure(t.s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'both', IfMatch: etagOf('content'), IfMatchSize: 7 })))).toMatchObject({ name: 'NoSuchKey', status: 404 });
  });
});

describe('DeleteObject with x-amz-if-match-last-modified-time', () => {
  it('deletes only the version last modified at that time (to the second, as HTTP dates carry it)', async () => {
    const lastModified = await put('dated', 'v1');
    const earlier = new Date(lastModified.getTime() - 60_000);
    const wrong = await failure(t.s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'dated', IfMatchLastModifiedTime: earlier })));
    expect(wrong).toMatchObject({ name: 'PreconditionFailed', status: 412 });
    const iso = await raw(t.casket.url, t.casket.admin, { method: 'DELETE', path: `/${bucket}/dated`, headers: { 'x-amz-if-match-last-modified-time': earlier.toUTCString() } });
    expect(xmlField(iso.body, 'Condition')).toBe('x-amz-if-match-last-modified-time');
    expect(await exists('dated')).toBe(true);
    await t.s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'dated', IfMatchLastModifiedTime: lastModified, IfMatchSize: 2 }));
    expect(await exists('dated')).toBe(false);
    expect((await raw(t.casket.url, t.casket.admin, { method: 'DELETE', path: `/${bucket}/dated`, headers: { 'x-amz-if-match-last-modified-time': earlier.toUTCString() } })).status).toBe(204);
  });
});

describe('DeleteObjects with <Size> and <LastModifiedTime>', () => {
  it('deletes the entries whose version matches and reports the others as PreconditionFailed', async () => {
    const t1 = await put('batch/a', 'aaaa');
    await put('batch/b', 'bb');
    const t3 = await put('batch/c', 'c');
    const r = await t.s3.send(new DeleteObjectsCommand({
      Bucket: bucket,
      Delete: {
        Objects: [
          { Key: 'batch/a', Size: 4, LastModifiedTime: t1 },
          { Key: 'batch/b', Size: 3 },
          { Key: 'batch/c', LastModifiedTime: new Date(t3.getTime() - 3_600_000) },
          { Key: 'batch/missing', Size: 9 },
        ],
      },
    }));
    expect((r.Deleted ?? []).map((d) => d.Key).sort()).toEqual(['batch/a', 'batch/missing']);
    expect((r.Errors ?? []).map((e) => [e.Key, e.Code]).sort()).toEqual([['batch/b', 'PreconditionFailed'], ['batch/c', 'PreconditionFailed']]);
    expect([await exists('batch/a'), await exists('batch/b'), await exists('batch/c')]).toEqual([false, true, true]);
  });
});

describe('atomic with the delete', () => {
  it('a delete conditioned on the old size never deletes the replacement that raced it', async () => {
    for (let round = 0; round < 8; round++) {
      const key = `race-${round}`;
      await put(key, 'old');
      const deletes = Array.from({ length: 6 }, () =>
        raw(t.casket.url, t.casket.admin, { method: 'DELETE', path: `/${bucket}/${key}`, headers: { 'x-amz-if-match-size': '3' } }),
      );
      const replace = t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'the replacement' }));
      const [results] = await Promise.all([Promise.all(deletes), replace]);
      for (const r of results) expect([204, 412], r.body).toContain(r.status);
      // Whatever the interleaving, the replacement (15 bytes) survives: a
      // size-conditioned delete that deleted it would have checked, then deleted.
      const head = await t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
      expect([round, head.ContentLength, head.ETag]).toEqual([round, 15, etagOf('the replacement')]);
    }
  });
});

describe('agents', () => {
  it('a size or time does not stand for a read: an agent still needs If-Match', async () => {
    await put('agent-owned', 'data');
    const ann = sdk(t.casket.url, t.casket.agents.ann!);
    try {
      expect(await failure(ann.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'agent-owned', IfMatchSize: 4 })))).toMatchObject({ status: 428 });
      expect(await exists('agent-owned')).toBe(true);
    } finally {
      ann.destroy();
    }
  });
});
