/**
 * The embedded store through @aws-sdk/client-s3: buckets, objects, ranges,
 * metadata, listing, copy — and the same SHA-256 ETag on every path
 * (docs/design.md §2).
 */
import {
  CopyObjectCommand, CreateBucketCommand, DeleteBucketCommand, DeleteObjectCommand, DeleteObjectsCommand,
  GetBucketAclCommand, GetBucketLocationCommand, GetBucketVersioningCommand, GetObjectCommand, HeadBucketCommand,
  HeadObjectCommand, ListBucketsCommand, ListObjectsCommand, ListObjectsV2Command, PutObjectCommand,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { casketWithBucket, etagOf } from '../helpers/suite.js';
import { bytes, failure } from '../helpers/clients.js';

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const quoted = etagOf;

const t = casketWithBucket('objects');
const bucket = t.bucket;

describe('buckets', () => {
  it('creates idempotently, lists, heads, locates, and refuses to delete a non-empty bucket', async () => {
    await t.s3.send(new CreateBucketCommand({ Bucket: 'b-2' }));
    await t.s3.send(new CreateBucketCommand({ Bucket: 'b-2' }));
    const list = await t.s3.send(new ListBucketsCommand({}));
    expect(list.Buckets?.map((b) => b.Name)).toEqual(expect.arrayContaining(['b-2', bucket]));
    await t.s3.send(new HeadBucketCommand({ Bucket: 'b-2' }));
    const loc = await t.s3.send(new GetBucketLocationCommand({ Bucket: 'b-2' }));
    expect(loc.LocationConstraint ?? '').toBe('');
    await t.s3.send(new PutObjectCommand({ Bucket: 'b-2', Key: 'x', Body: 'x' }));
    expect(await failure(t.s3.send(new DeleteBucketCommand({ Bucket: 'b-2' })))).toMatchObject({ name: 'BucketNotEmpty', status: 409 });
    await t.s3.send(new DeleteObjectCommand({ Bucket: 'b-2', Key: 'x' }));
    await t.s3.send(new DeleteBucketCommand({ Bucket: 'b-2' }));
    expect(await failure(t.s3.send(new HeadBucketCommand({ Bucket: 'b-2' })))).toMatchObject({ status: 404 });
  });

  it('answers the side calls clients make: acl, versioning', async () => {
    const acl = await t.s3.send(new GetBucketAclCommand({ Bucket: bucket }));
    expect(acl.Grants?.[0]?.Permission).toBe('FULL_CONTROL');
    const v = await t.s3.send(new GetBucketVersioningCommand({ Bucket: bucket }));
    expect(v.Status).toBeUndefined();
  });

  it('refuses invalid bucket names and unknown buckets in S3 words', async () => {
    expect(await failure(t.s3.send(new CreateBucketCommand({ Bucket: 'Bad_Name' })))).toMatchObject({ status: 400 });
    expect(await failure(t.s3.send(new GetObjectCommand({ Bucket: 'no-such-bucket', Key: 'k' })))).toMatchObject({ name: 'NoSuchBucket', status: 404 });
  });
});

describe('objects and ETags', () => {
  it('shows one SHA-256 ETag on PutObject, HeadObject, GetObject, ListObjects v1 and v2, CopyObject', async () => {
    const body = Buffer.from('hello casket');
    const put = await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'etag/one', Body: body, ContentType: 'text/plain', Metadata: { owner: 'ana' } }));
    expect(put.ETag).toBe(quoted(body));
    const head = await t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'etag/one' }));
    expect(head.ETag).toBe(put.ETag);
    expect(head.ContentLength).toBe(body.length);
    expect(head.ContentType).toBe('text/plain');
    expect(head.Metadata).toEqual({ owner: 'ana' });
    const get = await t.s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'etag/one' }));
    expect(get.ETag).toBe(put.ETag);
    expect(await bytes(get.Body)).toEqual(body);
    const v1 = await t.s3.send(new ListObjectsCommand({ Bucket: bucket, Prefix: 'etag/' }));
    expect(v1.Contents?.find((o) => o.Key === 'etag/one')?.ETag).toBe(put.ETag);
    const v2 = await t.s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'etag/' }));
    expect(v2.Contents?.find((o) => o.Key === 'etag/one')?.ETag).toBe(put.ETag);
    const copy = await t.s3.send(new CopyObjectCommand({ Bucket: bucket, Key: 'etag/copy', CopySource: `${bucket}/etag/one` }));
    expect(copy.CopyObjectResult?.ETag).toBe(put.ETag);
    const copyHead = await t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'etag/copy' }));
    expect(copyHead.ETag).toBe(put.ETag);
    expect(copyHead.Metadata).toEqual({ owner: 'ana' });
  });

  it('streams a body sent aws-chunked with a CRC32 trailer (the SDK default for streams)', async () => {
    const data = randomBytes(3 * 1024 * 1024 + 17);
    const put = await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'stream/a', Body: Readable.from([data.subarray(0, 1000), data.subarray(1000)]), ContentLength: data.length }));
    expect(put.ETag).toBe(quoted(data));
    const get = await t.s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'stream/a' }));
    expect(sha(await bytes(get.Body))).toBe(sha(data));
  });

  it('keeps keys with spaces, unicode, plus signs and dots as they are', async () => {
    const keys = ['a b/c+d', 'ünï/cødé ✓', 'dots/../x', 'tilde~and!star*(paren)', "quote'"];
    for (const key of keys) await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: `keys/${key}`, Body: key }));
    const list = await t.s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'keys/' }));
    expect(list.Contents?.map((o) => o.Key).sort()).toEqual(keys.map((k) => `keys/${k}`).sort());
    for (const key of keys) {
      const got = await t.s3.send(new GetObjectCommand({ Bucket: bucket, Key: `keys/${key}` }));
      expect((await bytes(got.Body)).toString()).toBe(key);
    }
  });

  it('serves ranges: closed, open-ended, suffix; 416 past the end', async () => {
    const body = Buffer.from('0123456789');
    await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'range', Body: body }));
    const get = async (Range: string) => {
      const r = await t.s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'range', Range }));
      return { text: (await bytes(r.Body)).toString(), contentRange: r.ContentRange };
    };
    expect(await get('bytes=2-4')).toEqual({ text: '234', contentRange: 'bytes 2-4/10' });
    expect(await get('bytes=7-')).toEqual({ text: '789', contentRange: 'bytes 7-9/10' });
    expect(await get('bytes=-3')).toEqual({ text: '789', contentRange: 'bytes 7-9/10' });
    expect(await get('bytes=8-100')).toEqual({ text: '89', contentRange: 'bytes 8-9/10' });
    expect(await failure(t.s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'range', Range: 'bytes=10-' })))).toMatchObject({ name: 'InvalidRange', status: 416 });
  });

  it('applies response-* overrides and serves versionId=null', async () => {
    await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'override', Body: 'x', ContentType: 'text/plain' }));
    const r = await t.s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'override', ResponseContentType: 'application/json', ResponseContentDisposition: 'attachment; filename="x.json"', VersionId: 'null' }));
    expect(r.ContentType).toBe('application/json');
    expect(r.ContentDisposition).toBe('attachment; filename="x.json"');
    await bytes(r.Body);
  });

  it('answers conditional GETs with 304 and 412', async () => {
    const put = await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'cond-get', Body: 'v1' }));
    expect(await failure(t.s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'cond-get', IfNoneMatch: put.ETag })))).toMatchObject({ status: 304 });
    expect(await failure(t.s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'cond-get', IfMatch: '"0000"' })))).toMatchObject({ name: 'PreconditionFailed', status: 412 });
    expect(await failure(t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'cond-get', IfMatch: '"0000"' })))).toMatchObject({ status: 412 });
    const ok = await t.s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'cond-get', IfMatch: put.ETag }));
    expect((await bytes(ok.Body)).toString()).toBe('v1');
  });

  it('deletes many keys at once, quietly or not, with per-object ETag conditions', async () => {
    const a = await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'del/a', Body: 'a' }));
    await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'del/b', Body: 'b' }));
    await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'del/c', Body: 'c' }));
    const r = await t.s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: [{ Key: 'del/a', ETag: a.ETag }, { Key: 'del/b', ETag: quoted('not b') }, { Key: 'del/c' }, { Key: 'del/missing' }] } }));
    expect(r.Deleted?.map((d) => d.Key).sort()).toEqual(['del/a', 'del/c', 'del/missing']);
    expect(r.Errors).toEqual([expect.objectContaining({ Key: 'del/b', Code: 'PreconditionFailed' })]);
    const left = await t.s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'del/' }));
    expect(left.Contents?.map((o) => o.Key)).toEqual(['del/b']);
    const quiet = await t.s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Quiet: true, Objects: [{ Key: 'del/b' }] } }));
    expect(quiet.Deleted ?? []).toEqual([]);
  });

  it('refuses a DeleteObjects of more than 1000 keys', async () => {
    const Objects = Array.from({ length: 1001 }, (_, i) => ({ Key: `k${i}` }));
    expect(await failure(t.s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects } })))).toMatchObject({ name: 'MalformedXML', status: 400 });
  });

  it('copies with REPLACE metadata and honours x-amz-copy-source-if-match', async () => {
    const src = await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'copy/src', Body: 'source', Metadata: { a: '1' } }));
    await t.s3.send(new CopyObjectCommand({ Bucket: bucket, Key: 'copy/dst', CopySource: `${bucket}/copy/src`, MetadataDirective: 'REPLACE', Metadata: { b: '2' }, ContentType: 'text/x-test' }));
    const head = await t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'copy/dst' }));
    expect(head.Metadata).toEqual({ b: '2' });
    expect(head.ContentType).toBe('text/x-test');
    expect(head.ETag).toBe(src.ETag);
    expect(await failure(t.s3.send(new CopyObjectCommand({ Bucket: bucket, Key: 'copy/dst2', CopySource: `${bucket}/copy/src`, CopySourceIfMatch: quoted('other') })))).toMatchObject({ name: 'PreconditionFailed', status: 412 });
    expect(await failure(t.s3.send(new CopyObjectCommand({ Bucket: bucket, Key: 'copy/src', CopySource: `${bucket}/copy/src` })))).toMatchObject({ name: 'InvalidRequest', status: 400 });
  });
});

describe('multipart', () => {
  it('lib-storage Upload: composite ETag, the same on HEAD, GET, list; partNumber GET', async () => {
    const part = 5 * 1024 * 1024;
    const data = randomBytes(2 * part + 1234);
    const upload = new Upload({ client: t.s3, params: { Bucket: bucket, Key: 'mp/big', Body: Readable.from([data]) }, partSize: part, queueSize: 2 });
    const done = await upload.done();
    const digests = [data.subarray(0, part), data.subarray(part, 2 * part), data.subarray(2 * part)].map((p) => createHash('sha256').update(p).digest());
    const expected = `"${createHash('sha256').update(Buffer.concat(digests)).digest('hex')}-3"`;
    expect(done.ETag).toBe(expected);
    const head = await t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'mp/big' }));
    expect(head.ETag).toBe(expected);
    expect(head.ContentLength).toBe(data.length);
    const get = await t.s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'mp/big' }));
    expect(get.ETag).toBe(expected);
    expect(sha(await bytes(get.Body))).toBe(sha(data));
    const list = await t.s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'mp/' }));
    expect(list.Contents?.[0]?.ETag).toBe(expected);
    const p2 = await t.s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'mp/big', PartNumber: 2 }));
    expect(p2.PartsCount).toBe(3);
    expect(sha(await bytes(p2.Body))).toBe(sha(data.subarray(part, 2 * part)));
  });
});

describe('listing', () => {
  it('orders keys by UTF-8 bytes, rolls up common prefixes and paginates v1 and v2', async () => {
    // UTF-8 byte order: 'z' (0x7a) sorts before 'é' (0xc3 0xa9).
    const keys = ['list/a', 'list/b/1', 'list/b/2', 'list/c', 'list/d/x/y', 'list/z', 'list/é'];
    for (const k of keys) await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: k, Body: k }));
    const v2 = await t.s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'list/', Delimiter: '/' }));
    expect(v2.Contents?.map((o) => o.Key)).toEqual(['list/a', 'list/c', 'list/z', 'list/é']);
    expect(v2.CommonPrefixes?.map((p) => p.Prefix)).toEqual(['list/b/', 'list/d/']);
    const seen: string[] = [];
    let token: string | undefined;
    do {
      const page = await t.s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'list/', MaxKeys: 2, ContinuationToken: token }));
      seen.push(...(page.Contents ?? []).map((o) => o.Key!));
      token = page.NextContinuationToken;
      expect(page.IsTruncated).toBe(token !== undefined);
    } while (token);
    expect(seen).toEqual(keys);
    const v1: string[] = [];
    let marker: string | undefined;
    for (;;) {
      const page = await t.s3.send(new ListObjectsCommand({ Bucket: bucket, Prefix: 'list/', MaxKeys: 3, Marker: marker }));
      v1.push(...(page.Contents ?? []).map((o) => o.Key!));
      if (!page.IsTruncated) break;
      marker = page.NextMarker ?? page.Contents?.at(-1)?.Key;
    }
    expect(v1).toEqual(keys);
    const after = await t.s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'list/', StartAfter: 'list/c' }));
    expect(after.Contents?.map((o) => o.Key)).toEqual(['list/d/x/y', 'list/z', 'list/é']);
  });
});
