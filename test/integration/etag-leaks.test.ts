/**
 * No upstream ETag leaks (docs/design.md §2): every answer casket
 * builds or forwards shows casket's ETags — the SHA-256 of an object
 * (`<sha256 of part digests>-N` for multipart), the MD5 of a part as S3
 * shows part ETags — never the upstream's MD5 object ETags. Meant to be run
 * through moto and RGW (CASKET_TEST_UPSTREAM), where the upstream's own ETags
 * exist to leak; the same answers hold on the embedded store. Covered:
 * CopyObject, UploadPartCopy, UploadPart, ListParts, CompleteMultipartUpload,
 * HeadObject, ListObjects v1 / v2, ListObjectVersions (modeled, no longer
 * forwarded), and forwarded operations (no ETag header; GetObjectAttributes
 * answers casket's ETag or is refused, never the upstream's).
 */
import {
  CompleteMultipartUploadCommand, CopyObjectCommand, CreateMultipartUploadCommand, HeadObjectCommand,
  ListObjectsCommand, ListObjectsV2Command, ListObjectVersionsCommand, ListPartsCommand, PutObjectCommand, PutObjectTaggingCommand,
  UploadPartCommand, UploadPartCopyCommand,
} from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { failure } from '../helpers/clients.js';
import { raw, xmlField } from '../helpers/raw.js';
import { casketWithBucket, etagOf } from '../helpers/suite.js';

const t = casketWithBucket('leaks');
const bucket = t.bucket;
const UPSTREAM = process.env.CASKET_TEST_UPSTREAM !== undefined && process.env.CASKET_TEST_UPSTREAM !== '';
const md5 = (b: Buffer | string) => `"${createHash('md5').update(b).digest('hex')}"`;
const sha = (b: Buffer | string) => createHash('sha256').update(b).digest();

/** The ETag of `key` in every listing and in HEAD: one value. */
async function everywhere(key: string): Promise<string[]> {
  const head = await t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
  const v2 = await t.s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: key }));
  const v1 = await t.s3.send(new ListObjectsCommand({ Bucket: bucket, Prefix: key }));
  const versions = await t.s3.send(new ListObjectVersionsCommand({ Bucket: bucket, Prefix: key }));
  return [head.ETag!, v2.Contents![0]!.ETag!, v1.Contents![0]!.ETag!, versions.Versions![0]!.ETag!];
}

describe('answers casket builds', () => {
  it('CopyObject: the copy shows the SHA-256 of its content, in its result and everywhere', async () => {
    const body = randomBytes(1000);
    await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'src', Body: body }));
    const copy = await t.s3.send(new CopyObjectCommand({ Bucket: bucket, Key: 'dst', CopySource: `${bucket}/src` }));
    expect(copy.CopyObjectResult!.ETag).toBe(etagOf(body));
    expect(await everywhere('dst')).toEqual(Array(4).fill(etagOf(body)));
  });

  it('multipart: part ETags are the parts\' MD5s (UploadPart, UploadPartCopy, ListParts), the object\'s is casket\'s', async () => {
    const big = randomBytes(5 * 1024 * 1024);
    const tail = randomBytes(100);
    await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'big', Body: big }));
    const { UploadId } = await t.s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'assembled' }));
    const p1 = await t.s3.send(new UploadPartCopyCommand({ Bucket: bucket, Key: 'assembled', UploadId, PartNumber: 1, CopySource: `${bucket}/big` }));
    const p2 = await t.s3.send(new UploadPartCommand({ Bucket: bucket, Key: 'assembled', UploadId, PartNumber: 2, Body: tail }));
    expect([p1.CopyPartResult!.ETag, p2.ETag]).toEqual([md5(big), md5(tail)]);
    const parts = await t.s3.send(new ListPartsCommand({ Bucket: bucket, Key: 'assembled', UploadId }));
    expect(parts.Parts!.map((p) => [p.PartNumber, p.ETag, p.Size])).toEqual([[1, md5(big), big.length], [2, md5(tail), tail.length]]);
    const done = await t.s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: 'assembled', UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: p1.CopyPartResult!.ETag }, { PartNumber: 2, ETag: p2.ETag }] } }));
    const expected = `"${createHash('sha256').update(Buffer.concat([sha(big), sha(tail)])).digest('hex')}-2"`;
    expect(done.ETag).toBe(expected);
    expect(await everywhere('assembled')).toEqual(Array(4).fill(expected));
  });
});

describe('answers casket forwards', () => {
  it('carry no ETag header (object tagging; 501 on the embedded store)', async () => {
    await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'tagged', Body: 'x' }));
    const put = t.s3.send(new PutObjectTaggingCommand({ Bucket: bucket, Key: 'tagged', Tagging: { TagSet: [{ Key: 'a', Value: 'b' }] } }));
    if (UPSTREAM) await put;
    else expect(await failure(put)).toMatchObject({ status: 501 });
    const get = await raw(t.casket.url, t.casket.admin, { method: 'GET', path: `/${bucket}/tagged?tagging` });
    expect(get.status).toBe(UPSTREAM ? 200 : 501);
    expect(get.headers.etag).toBeUndefined();
  });

  it('GetObjectAttributes never shows the upstream\'s ETag (casket\'s, or refused)', async () => {
    const body = 'attributes';
    await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'attrs', Body: body }));
    const r = await raw(t.casket.url, t.casket.admin, { method: 'GET', path: `/${bucket}/attrs?attributes`, headers: { 'x-amz-object-attributes': 'ETag,ObjectSize' } });
    // moto answers <ETag> with its MD5 (refused: 501); Ceph RGW 16 ignores
    // ?attributes and serves the object (measured) — without its ETag
    // header. Once GetObjectAttributes is modeled: casket's ETag.
    expect(`${JSON.stringify(r.headers)}${r.body}`).not.toContain(md5(body).slice(1, -1));
    const named = xmlField(r.body, 'ETag');
    expect([undefined, etagOf(body), etagOf(body).slice(1, -1)]).toContain(named);
    expect([200, 501]).toContain(r.status);
  });
});
