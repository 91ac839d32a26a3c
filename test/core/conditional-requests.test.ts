/**
 * Second, independent tests of behaviours that one test each used to carry,
 * through casket's HTTP front in this process: CopyObject's
 * x-amz-copy-source-if-match, DeleteObjects' per-key <ETag>, a wrong
 * x-amz-checksum-sha256, and the access-key half of an exact retry.
 */
import { CopyObjectCommand, CreateBucketCommand, DeleteObjectsCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { bytes, failure, sdk } from '../helpers/clients.js';
import { raw, xmlField } from '../helpers/raw.js';
import { etagOf } from '../helpers/suite.js';

const bucket = 'conditions';
let casket: InProcessCasket;
let admin: S3Client;

beforeAll(async () => {
  casket = await startInProcess({ keys: ['carol'] });
  admin = sdk(casket.url, casket.admin);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
});
afterAll(async () => {
  admin?.destroy();
  await casket?.stop();
});

const put = async (key: string, body: string) => (await admin.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }))).ETag!;
const etagNow = async (key: string) => (await admin.send(new HeadObjectCommand({ Bucket: bucket, Key: key })).then((h) => h.ETag, () => undefined));

describe('CopyObject with x-amz-copy-source-if-match', () => {
  it('copies when the source is that version; 412 and no destination when it is not', async () => {
    const v1 = await put('copy/src', 'first');
    await put('copy/src', 'second');
    const f = await failure(admin.send(new CopyObjectCommand({ Bucket: bucket, Key: 'copy/stale', CopySource: `${bucket}/copy/src`, CopySourceIfMatch: v1 })));
    expect([f.name, f.status]).toEqual(['PreconditionFailed', 412]);
    expect(await etagNow('copy/stale')).toBeUndefined();
    const copied = await admin.send(new CopyObjectCommand({ Bucket: bucket, Key: 'copy/fresh', CopySource: `${bucket}/copy/src`, CopySourceIfMatch: etagOf('second') }));
    expect(copied.CopyObjectResult?.ETag).toBe(etagOf('second'));
    expect((await bytes((await admin.send(new GetObjectCommand({ Bucket: bucket, Key: 'copy/fresh' }))).Body)).toString()).toBe('second');
  });
});

describe('DeleteObjects with a per-key <ETag>', () => {
  it('deletes the keys whose ETag is current; a stale one is a PreconditionFailed error of its own and stays', async () => {
    const keep = await put('batch/keep', 'v1');
    await put('batch/keep', 'v2');
    const gone = await put('batch/gone', 'g');
    const result = await admin.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: [{ Key: 'batch/keep', ETag: keep }, { Key: 'batch/gone', ETag: gone }] } }));
    expect(result.Deleted?.map((d) => d.Key)).toEqual(['batch/gone']);
    expect(result.Errors?.map((e) => [e.Key, e.Code])).toEqual([['batch/keep', 'PreconditionFailed']]);
    expect(await etagNow('batch/keep')).toBe(etagOf('v2'));
    expect(await etagNow('batch/gone')).toBeUndefined();
  });
});

describe('a wrong x-amz-checksum-sha256', () => {
  it('is 400 BadDigest and nothing is written; the right one writes', async () => {
    const body = randomBytes(1000);
    const wrong = createHash('sha256').update('something else').digest('base64');
    const refused = await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}/sum`, headers: { 'x-amz-checksum-sha256': wrong }, body });
    expect([refused.status, xmlField(refused.body, 'Code')], refused.body).toEqual([400, 'BadDigest']);
    expect(await etagNow('sum')).toBeUndefined();
    const right = createHash('sha256').update(body).digest('base64');
    const written = await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}/sum`, headers: { 'x-amz-checksum-sha256': right }, body });
    expect(written.status, written.body).toBe(200);
    expect(await etagNow('sum')).toBe(etagOf(body));
  });
});

describe('an exact retry is the same access key and the same invocation', () => {
  it("the first call's key and invocation id: 200 as the first answer; the same invocation id from another key: 412", async () => {
    const v1 = await put('retry', 'one');
    const again = (cred: typeof casket.admin) => raw(casket.url, cred, { method: 'PUT', path: `/${bucket}/retry`, headers: { 'if-match': v1, 'amz-sdk-invocation-id': 'inv-retry' }, body: 'two' });
    expect((await again(casket.admin)).status).toBe(200);
    expect((await again(casket.admin)).status).toBe(200);
    const other = await again(casket.keys.carol!);
    expect([other.status, xmlField(other.body, 'Code')], other.body).toEqual([412, 'PreconditionFailed']);
    expect(await etagNow('retry')).toBe(etagOf('two'));
  });
});
