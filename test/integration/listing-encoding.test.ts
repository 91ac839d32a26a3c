/**
 * Smaller differences from AWS S3 that clients notice:
 * - encoding-type=url listings encode as AWS does (`/` kept, space as `%20`,
 *   everything else %XX) in keys, v2's Prefix, Delimiter, StartAfter, v1's
 *   Marker / NextMarker (not v1's top-level Prefix) and common prefixes — and boto3, which always asks
 *   for it and decodes with unquote_plus, gets every key back exactly;
 * - ?partNumber= past the object's part count is 400 InvalidPartNumber;
 * - a part uploaded twice concurrently: the upload that finishes last is the
 *   part, and CompleteMultipartUpload accepts a list naming both answers.
 * On the embedded store, through moto and RGW.
 */
import {
  CompleteMultipartUploadCommand, CreateMultipartUploadCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, UploadPartCommand,
} from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { describe, expect, it } from 'vitest';
import { bytes, failure } from '../helpers/clients.js';
import { hasPythonModule, ok, python3, run } from '../helpers/cli-tools.js';
import { errorCode, raw, sha256hex, signRequest } from '../helpers/raw.js';
import { casketWithBucket, etagOf } from '../helpers/suite.js';
import { need } from '../helpers/tools.js';

const t = casketWithBucket('encoding');
const bucket = t.bucket;
const KEYS = ['a b/c+d.txt', 'a b/e%f(1).txt', 'plain/x', 'é/ü~*!.txt'];

describe('encoding-type=url', () => {
  it('ListObjectsV2 encodes keys, Prefix, Delimiter, StartAfter and common prefixes, never /', async () => {
    for (const key of KEYS) await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: key }));
    const all = await raw(t.casket.url, t.casket.admin, { method: 'GET', path: `/${bucket}?list-type=2&encoding-type=url` });
    expect(all.status).toBe(200);
    expect([...all.body.matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => m[1])).toEqual([
      'a%20b/c%2Bd.txt',
      'a%20b/e%25f%281%29.txt',
      'plain/x',
      '%C3%A9/%C3%BC%7E*%21.txt',
    ]);
    const q = new URLSearchParams({ 'list-type': '2', 'encoding-type': 'url', prefix: 'a b/', delimiter: '.', 'start-after': 'a b/c' });
    const some = await raw(t.casket.url, t.casket.admin, { method: 'GET', path: `/${bucket}?${q.toString().replace(/\+/g, '%20')}` });
    expect(some.status).toBe(200);
    expect(some.body).toContain('<Prefix>a%20b/</Prefix>');
    expect(some.body).toContain('<Delimiter>.</Delimiter>');
    expect(some.body).toContain('<StartAfter>a%20b/c</StartAfter>');
    expect([...some.body.matchAll(/<CommonPrefixes><Prefix>([^<]*)<\/Prefix><\/CommonPrefixes>/g)].map((m) => m[1])).toEqual(['a%20b/c%2Bd.', 'a%20b/e%25f%281%29.']);
  });

  it('ListObjects (v1) encodes Marker and NextMarker too, but answers its top-level Prefix as sent', async () => {
    const q = new URLSearchParams({ 'encoding-type': 'url', delimiter: '/', marker: 'a b/', 'max-keys': '1' });
    const r = await raw(t.casket.url, t.casket.admin, { method: 'GET', path: `/${bucket}?${q.toString().replace(/\+/g, '%20')}` });
    expect(r.status).toBe(200);
    expect(r.body).toContain('<Marker>a%20b/</Marker>');
    expect(r.body).toContain('<NextMarker>plain/</NextMarker>');
    expect(r.body).toContain('<IsTruncated>true</IsTruncated>');
    const next = await raw(t.casket.url, t.casket.admin, { method: 'GET', path: `/${bucket}?encoding-type=url&delimiter=%2F&marker=plain%2F` });
    expect(next.body).toContain('<Prefix>%C3%A9/</Prefix>');
    const prefixed = await raw(t.casket.url, t.casket.admin, { method: 'GET', path: `/${bucket}?encoding-type=url&prefix=a%20b%2F%0A` });
    expect(prefixed.body).toContain('<Prefix>a b/\n</Prefix>');
  });

  const haveBoto3 = need('boto3 (python3)', hasPythonModule('boto3'));
  it.runIf(haveBoto3)('boto3 pages through v1 and v2 (encoding-type=url) and gets every key back exactly', async () => {
    const script = `
import json, sys
import boto3
from botocore.config import Config
a = json.loads(sys.argv[1])
s3 = boto3.client("s3", endpoint_url=a["endpoint"], aws_access_key_id=a["key"], aws_secret_access_key=a["secret"], region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
out = {}
for op in ["list_objects", "list_objects_v2"]:
    keys, prefixes = [], []
    for page in s3.get_paginator(op).paginate(Bucket=a["bucket"], Delimiter="/", PaginationConfig={"PageSize": 1}):
        keys += [o["Key"] for o in page.get("Contents", [])]
        prefixes += [p["Prefix"] for p in page.get("CommonPrefixes", [])]
    flat = []
    for page in s3.get_paginator(op).paginate(Bucket=a["bucket"], Prefix="a b/", PaginationConfig={"PageSize": 1}):
        flat += [o["Key"] for o in page.get("Contents", [])]
    out[op] = {"keys": keys, "prefixes": prefixes, "flat": flat}
print(json.dumps(out))
`;
    const args = JSON.stringify({ endpoint: t.casket.url, key: t.casket.admin.accessKeyId, secret: t.casket.admin.secretAccessKey, bucket });
    const out = JSON.parse(ok(await run('boto3', python3(), ['-c', script, args])).stdout) as Record<string, { keys: string[]; prefixes: string[]; flat: string[] }>;
    for (const op of ['list_objects', 'list_objects_v2']) {
      expect(out[op], op).toEqual({ keys: [], prefixes: ['a b/', 'plain/', 'é/'], flat: ['a b/c+d.txt', 'a b/e%f(1).txt'] });
    }
  });
});

/** A 5 MiB first part (the minimum), a short second one. */
async function twoPartObject(key: string): Promise<void> {
  const { UploadId } = await t.s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
  const p1 = await t.s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: 1, Body: Buffer.alloc(5 * 1024 * 1024, 1) }));
  const p2 = await t.s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: 2, Body: 'tail' }));
  await t.s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: p1.ETag }, { PartNumber: 2, ETag: p2.ETag }] } }));
}

describe('?partNumber=', () => {
  it('past the part count is 400 InvalidPartNumber on GET and HEAD; within it, the part', async () => {
    await twoPartObject('two-parts');
    const part2 = await t.s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'two-parts', PartNumber: 2 }));
    expect([part2.PartsCount, (await bytes(part2.Body)).toString()]).toEqual([2, 'tail']);
    const get = await raw(t.casket.url, t.casket.admin, { method: 'GET', path: `/${bucket}/two-parts?partNumber=3` });
    expect([get.status, errorCode(get.body)]).toEqual([400, 'InvalidPartNumber']);
    expect(await failure(t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'two-parts', PartNumber: 3 })))).toMatchObject({ status: 400 });
    await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'one-part', Body: 'whole' }));
    expect((await bytes((await t.s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'one-part', PartNumber: 1 }))).Body)).toString()).toBe('whole');
    expect(await failure(t.s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'one-part', PartNumber: 2 })))).toMatchObject({ name: 'InvalidPartNumber', status: 400 });
  });
});

/** An UploadPart whose body is sent in two halves: the second only once `release` resolves. */
async function slowPart(key: string, uploadId: string, body: Buffer, release: Promise<void>): Promise<string> {
  const path = `/${bucket}/${encodeURIComponent(key)}?partNumber=1&uploadId=${encodeURIComponent(uploadId)}`;
  const { headers } = await signRequest(t.casket.url, t.casket.admin, { method: 'PUT', path, body, payloadHash: sha256hex(body) });
  const u = new URL(t.casket.url);
  return new Promise<string>((resolve, reject) => {
    const req = httpRequest({ host: u.hostname, port: u.port, method: 'PUT', path, headers }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve(String(res.headers.etag)) : reject(new Error(`UploadPart answered ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.write(body.subarray(0, body.length / 2));
    void release.then(() => req.end(body.subarray(body.length / 2)));
  });
}

describe('a part uploaded twice concurrently', () => {
  it('the upload that finishes last is the part, and Complete accepts both answers listed', async () => {
    const key = 'resent';
    const { UploadId } = await t.s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
    const a = Buffer.alloc(64 * 1024, 'A');
    const b = Buffer.alloc(64 * 1024, 'B');
    let releaseA!: () => void;
    const first = slowPart(key, UploadId!, a, new Promise<void>((r) => (releaseA = r)));
    // B starts after A and finishes before it.
    const second = await t.s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: 1, Body: b }));
    releaseA();
    const firstETag = await first;
    expect([firstETag, second.ETag]).toEqual([`"${createHash('md5').update(a).digest('hex')}"`, `"${createHash('md5').update(b).digest('hex')}"`]);
    const done = await t.s3.send(new CompleteMultipartUploadCommand({
      Bucket: bucket,
      Key: key,
      UploadId,
      MultipartUpload: { Parts: [{ PartNumber: 1, ETag: second.ETag }, { PartNumber: 1, ETag: firstETag }] },
    }));
    const got = await t.s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    expect((await bytes(got.Body)).equals(a)).toBe(true);
    expect(got.ETag).toBe(done.ETag);
    expect(done.ETag).toBe(`"${createHash('sha256').update(createHash('sha256').update(a).digest()).digest('hex')}-1"`);
  });

  it('still refuses parts out of order, and a part whose listed ETags are all stale', async () => {
    const key = 'order';
    const { UploadId } = await t.s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
    const p1 = await t.s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: 1, Body: Buffer.alloc(5 * 1024 * 1024, 2) }));
    const p2 = await t.s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: 2, Body: 'two' }));
    const reversed = await failure(t.s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId, MultipartUpload: { Parts: [{ PartNumber: 2, ETag: p2.ETag }, { PartNumber: 1, ETag: p1.ETag }] } })));
    expect(reversed).toMatchObject({ name: 'InvalidPartOrder', status: 400 });
    const stale = await failure(t.s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: p1.ETag }, { PartNumber: 2, ETag: etagOf('x') }, { PartNumber: 2, ETag: `"${'0'.repeat(32)}"` }] } })));
    expect(stale).toMatchObject({ name: 'InvalidPart', status: 400 });
  });
});
