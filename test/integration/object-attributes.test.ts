/**
 * GetObjectAttributes
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObjectAttributes.html),
 * modeled by casket on both backends: the ETag is casket's SHA-256 one (never
 * an upstream's MD5), ObjectParts pages with MaxParts / PartNumberMarker, and
 * an agent asking for attributes has read nothing (no read stamp). Runs on the
 * embedded store and through moto / Ceph RGW.
 */
import {
  CompleteMultipartUploadCommand, CreateMultipartUploadCommand, GetObjectAttributesCommand, PutObjectCommand, UploadPartCommand,
} from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { checksumOf, compositeChecksum } from '../../src/vocabulary/checksums.js';
import { failure, sdk } from '../helpers/clients.js';
import { casketWithBucket, etagOf } from '../helpers/suite.js';

const t = casketWithBucket('attributes', { agents: ['ana'] });
const bucket = t.bucket;
const MiB = 1024 * 1024;
const ALL = ['ETag', 'Checksum', 'ObjectParts', 'StorageClass', 'ObjectSize'] as const;

describe('GetObjectAttributes', () => {
  it('answers a single-part object: SHA-256 ETag, its checksum, size, storage class, no parts', async () => {
    const body = Buffer.from('attributes of a small object');
    await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'small', Body: body, ChecksumAlgorithm: 'SHA256' }));
    const a = await t.s3.send(new GetObjectAttributesCommand({ Bucket: bucket, Key: 'small', ObjectAttributes: [...ALL] }));
    expect(a.ETag?.replace(/"/g, '')).toBe(etagOf(body).replace(/"/g, ''));
    expect(a.Checksum).toEqual({ ChecksumSHA256: checksumOf('sha256', body).toString('base64'), ChecksumType: 'FULL_OBJECT' });
    expect(a.ObjectSize).toBe(body.length);
    expect(a.StorageClass).toBe('STANDARD');
    expect(a.ObjectParts).toBeUndefined();
    expect(a.LastModified).toBeInstanceOf(Date);
    // Only what was asked for.
    const sizeOnly = await t.s3.send(new GetObjectAttributesCommand({ Bucket: bucket, Key: 'small', ObjectAttributes: ['ObjectSize'] }));
    expect(sizeOnly.ObjectSize).toBe(body.length);
    expect(sizeOnly.ETag).toBeUndefined();
    expect(sizeOnly.Checksum).toBeUndefined();
  });

  it('pages the parts of a multipart object, each with its size and checksum', async () => {
    const parts = [randomBytes(5 * MiB), randomBytes(5 * MiB), randomBytes(777)];
    const key = 'multipart';
    const created = await t.s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key, ChecksumAlgorithm: 'CRC32C' }));
    const done = [];
    for (const [i, data] of parts.entries()) {
      const r = await t.s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId: created.UploadId, PartNumber: i + 1, Body: data, ChecksumAlgorithm: 'CRC32C' }));
      done.push({ PartNumber: i + 1, ETag: r.ETag!, ChecksumCRC32C: r.ChecksumCRC32C! });
    }
    const completed = await t.s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: created.UploadId, MultipartUpload: { Parts: done } }));
    const crcs = parts.map((p) => checksumOf('crc32c', p).toString('base64'));

    const first = await t.s3.send(new GetObjectAttributesCommand({ Bucket: bucket, Key: key, ObjectAttributes: [...ALL], MaxParts: 2 }));
    expect(`"${first.ETag?.replace(/"/g, '')}"`).toBe(completed.ETag);
    expect(first.ETag).toMatch(/^"?[0-9a-f]{64}-3"?$/);
    expect(first.Checksum).toEqual({ ChecksumCRC32C: compositeChecksum('crc32c', parts.map((p) => checksumOf('crc32c', p))), ChecksumType: 'COMPOSITE' });
    expect(first.ObjectSize).toBe(parts.reduce((n, p) => n + p.length, 0));
    expect(first.ObjectParts).toMatchObject({ TotalPartsCount: 3, PartNumberMarker: '0', MaxParts: 2, IsTruncated: true, NextPartNumberMarker: '2' });
    expect(first.ObjectParts?.Parts).toEqual([
      { PartNumber: 1, Size: 5 * MiB, ChecksumCRC32C: crcs[0] },
      { PartNumber: 2, Size: 5 * MiB, ChecksumCRC32C: crcs[1] },
    ]);
    const rest = await t.s3.send(new GetObjectAttributesCommand({ Bucket: bucket, Key: key, ObjectAttributes: ['ObjectParts'], MaxParts: 2, PartNumberMarker: '2' }));
    expect(rest.ObjectParts).toMatchObject({ TotalPartsCount: 3, IsTruncated: false, Parts: [{ PartNumber: 3, Size: 777, ChecksumCRC32C: crcs[2] }] });
  });

  it('refuses a missing key (404 NoSuchKey) and a request without x-amz-object-attributes', async () => {
    expect(await failure(t.s3.send(new GetObjectAttributesCommand({ Bucket: bucket, Key: 'nope', ObjectAttributes: ['ETag'] })))).toMatchObject({ name: 'NoSuchKey', status: 404 });
    expect(await failure(t.s3.send(new GetObjectAttributesCommand({ Bucket: bucket, Key: 'small', ObjectAttributes: [] })))).toMatchObject({ status: 400 });
  });

  it('is not a read: an agent that only asked for attributes may not overwrite the key (412 not-read)', async () => {
    await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'guarded', Body: 'v1' }));
    const ana = sdk(t.casket.url, t.casket.agents.ana!);
    try {
      const a = await ana.send(new GetObjectAttributesCommand({ Bucket: bucket, Key: 'guarded', ObjectAttributes: ['ETag'] }));
      const etag = `"${a.ETag!.replace(/"/g, '')}"`;
      expect(await failure(ana.send(new PutObjectCommand({ Bucket: bucket, Key: 'guarded', Body: 'v2', IfMatch: etag })))).toMatchObject({ status: 412 });
    } finally {
      ana.destroy();
    }
  });
});
