/**
 * `If-None-Match: "etag"` on PutObject and CompleteMultipartUpload (docs/design.md §3):
 * write unless the current version is one of those named — as Ceph RGW and
 * MinIO honour it (AWS answers 501 NotImplemented, so a user of RGW would lose
 * it through casket). Checked atomically with the commit like every
 * condition: 16 writers of the same bytes under `If-None-Match: <those
 * bytes' ETag>` make exactly one write. Runs on the embedded store and, with
 * CASKET_TEST_UPSTREAM, in front of moto and Ceph RGW.
 */
import {
  CompleteMultipartUploadCommand, CreateMultipartUploadCommand, GetObjectCommand,
  PutObjectCommand, UploadPartCommand,
} from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { failure } from '../helpers/clients.js';
import { errorCode, raw, xmlField } from '../helpers/raw.js';
import { casketWithBucket, etagOf } from '../helpers/suite.js';

const t = casketWithBucket('inm-etag');
const bucket = t.bucket;

async function body(key: string): Promise<string> {
  const got = await t.s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return got.Body!.transformToString();
}

async function completeUpload(key: string, content: string, condition: { IfNoneMatch?: string; IfMatch?: string }) {
  const { UploadId } = await t.s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
  const part = await t.s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: 1, Body: content }));
  return t.s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId, ...condition, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] } }));
}

describe('If-None-Match with an ETag', () => {
  it('PutObject: 412 naming If-None-Match when the current version is named (quoted or not, in a list), 200 otherwise and on a missing key', async () => {
    const v1 = await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'put', Body: 'one' }));
    for (const named of [v1.ETag!, v1.ETag!.slice(1, -1), `${etagOf('other')}, ${v1.ETag}`]) {
      const r = await raw(t.casket.url, t.casket.admin, { method: 'PUT', path: `/${bucket}/put`, headers: { 'if-none-match': named }, body: 'two' });
      expect([named, r.status, errorCode(r.body), xmlField(r.body, 'Condition')]).toEqual([named, 412, 'PreconditionFailed', 'If-None-Match']);
      expect(r.headers.etag).toBe(v1.ETag);
    }
    expect(await body('put')).toBe('one');
    const v2 = await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'put', Body: 'two', IfNoneMatch: etagOf('other') }));
    expect(v2.ETag).toBe(etagOf('two'));
    expect(await body('put')).toBe('two');
    const created = await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'put-new', Body: 'new', IfNoneMatch: etagOf('new') }));
    expect(created.ETag).toBe(etagOf('new'));
  });

  it('CompleteMultipartUpload: 412 when the current version is named, 200 otherwise and on a missing key', async () => {
    const first = await completeUpload('mpu', 'part one', { IfNoneMatch: etagOf('anything') });
    expect(first.ETag).toMatch(/^"[0-9a-f]{64}-1"$/);
    expect(await failure(completeUpload('mpu', 'part two', { IfNoneMatch: first.ETag! }))).toMatchObject({ name: 'PreconditionFailed', status: 412 });
    expect(await body('mpu')).toBe('part one');
    const second = await completeUpload('mpu', 'part two', { IfNoneMatch: etagOf('part one') });
    expect(second.ETag).not.toBe(first.ETag);
    expect(await body('mpu')).toBe('part two');
  });

  it('16 concurrent writers of the same bytes under If-None-Match: <their ETag>: one 200, fifteen 412 naming it — 10 rounds', async () => {
    const key = 'race';
    for (let round = 0; round < 10; round++) {
      const content = `round ${round}`;
      const results = await Promise.all(
        Array.from({ length: 16 }, () => raw(t.casket.url, t.casket.admin, { method: 'PUT', path: `/${bucket}/${key}`, headers: { 'if-none-match': etagOf(content) }, body: content })),
      );
      const statuses = results.map((r) => r.status).sort();
      expect(statuses, `round ${round}`).toEqual([200, ...Array(15).fill(412)]);
      for (const r of results.filter((x) => x.status === 412)) expect(r.headers.etag, `round ${round}`).toBe(etagOf(content));
    }
  });
});
