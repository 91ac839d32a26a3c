/**
 * Flexible checksums as AWS S3 keeps them
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/checking-object-integrity.html):
 * the checksum a PutObject / UploadPart carried is stored and answered on
 * GetObject / HeadObject with `x-amz-checksum-mode: ENABLED`; multipart
 * uploads created with an algorithm get per-part checksums, validation of the
 * ones CompleteMultipartUpload names, and a COMPOSITE (`…-N`) or FULL_OBJECT
 * object checksum. Driven by the JS SDK (which validates what it gets back)
 * and boto3. Runs on the embedded store and through moto / Ceph RGW.
 */
import {
  CompleteMultipartUploadCommand, CopyObjectCommand, CreateMultipartUploadCommand, GetObjectCommand, HeadObjectCommand,
  ListMultipartUploadsCommand, ListObjectsCommand, ListObjectsV2Command, ListPartsCommand, PutObjectCommand, S3Client, UploadPartCommand, type ChecksumAlgorithm,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { checksumOf, combineCrcs, compositeChecksum } from '../../src/vocabulary/checksums.js';
import { cleanEnv, hasPythonModule, python3 } from '../helpers/cli-tools.js';
import { bytes, failure } from '../helpers/clients.js';
import { errorCode, raw } from '../helpers/raw.js';
import { casketWithBucket, etagOf } from '../helpers/suite.js';
import { need } from '../helpers/tools.js';

const t = casketWithBucket('checksums');
const bucket = t.bucket;
const MiB = 1024 * 1024;

type Alg = 'crc32' | 'crc32c' | 'crc64nvme' | 'sha1' | 'sha256';
const b64 = (alg: Alg, data: Buffer) => checksumOf(alg, data).toString('base64');
const sdkName: Record<Alg, ChecksumAlgorithm> = { crc32: 'CRC32', crc32c: 'CRC32C', crc64nvme: 'CRC64NVME', sha1: 'SHA1', sha256: 'SHA256' };
const field = { crc32: 'ChecksumCRC32', crc32c: 'ChecksumCRC32C', crc64nvme: 'ChecksumCRC64NVME', sha1: 'ChecksumSHA1', sha256: 'ChecksumSHA256' } as const;

describe('single PUT', () => {
  it('stores the CRC32 the SDK sends by default and answers it only when asked (ChecksumMode ENABLED)', async () => {
    const body = Buffer.from('hello world');
    const put = await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'default', Body: body }));
    expect(put.ChecksumCRC32).toBe('DUoRhQ==');
    const head = await t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'default', ChecksumMode: 'ENABLED' }));
    expect(head).toMatchObject({ ChecksumCRC32: 'DUoRhQ==', ChecksumType: 'FULL_OBJECT', ETag: etagOf(body) });
    const get = await t.s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'default', ChecksumMode: 'ENABLED' }));
    expect(get).toMatchObject({ ChecksumCRC32: 'DUoRhQ==', ChecksumType: 'FULL_OBJECT' });
    expect(await bytes(get.Body)).toEqual(body);
    const plain = await t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'default' }));
    expect(plain.ChecksumCRC32).toBeUndefined();
    // A range is not the object: no checksum for it (the SDK would check the bytes against it).
    const range = await t.s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'default', Range: 'bytes=0-4', ChecksumMode: 'ENABLED' }));
    expect(range.ChecksumCRC32).toBeUndefined();
    expect((await bytes(range.Body)).toString()).toBe('hello');
  });

  it.each(['sha256', 'crc32c', 'crc64nvme', 'sha1'] as const)('stores %s when the SDK is asked for it, header and streamed trailer alike', async (alg) => {
    const small = randomBytes(3000);
    const put = await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: `alg/${alg}`, Body: small, ChecksumAlgorithm: sdkName[alg] }));
    expect(put[field[alg]]).toBe(b64(alg, small));
    const head = await t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: `alg/${alg}`, ChecksumMode: 'ENABLED' }));
    expect(head[field[alg]]).toBe(b64(alg, small));
    expect(head.ChecksumType).toBe('FULL_OBJECT');

    const large = randomBytes(MiB + 5);
    await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: `alg/${alg}-stream`, Body: Readable.from([large]), ContentLength: large.length, ChecksumAlgorithm: sdkName[alg] }));
    const get = await t.s3.send(new GetObjectCommand({ Bucket: bucket, Key: `alg/${alg}-stream`, ChecksumMode: 'ENABLED' }));
    expect(get[field[alg]]).toBe(b64(alg, large));
    expect((await bytes(get.Body)).equals(large)).toBe(true);
  });

  it('a checksum value that is no digest of its algorithm is 400 BadDigest, as one that does not match, and nothing is written', async () => {
    for (const alg of ['sha256', 'crc64nvme', 'crc32'] as const) {
      const key = `malformed-${alg}`;
      const r = await raw(t.casket.url, t.casket.admin, { method: 'PUT', path: `/${bucket}/${key}`, headers: { [`x-amz-checksum-${alg}`]: 'bad' }, body: 'some content' });
      expect([alg, r.status, errorCode(r.body)]).toEqual([alg, 400, 'BadDigest']);
      expect(await failure(t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key })))).toMatchObject({ status: 404 });
    }
  });

  it('names the algorithm in ListObjectsV2 entries, and a copy keeps its algorithm', async () => {
    const body = Buffer.from('listed with a checksum');
    await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'listed/one', Body: body, ChecksumAlgorithm: 'CRC32C' }));
    const list = await t.s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'listed/' }));
    expect(list.Contents?.find((o) => o.Key === 'listed/one')?.ChecksumAlgorithm).toEqual(['CRC32C']);
    // ListObjects (v1) entries name it too.
    const v1 = await t.s3.send(new ListObjectsCommand({ Bucket: bucket, Prefix: 'listed/' }));
    expect(v1.Contents?.find((o) => o.Key === 'listed/one')?.ChecksumAlgorithm).toEqual(['CRC32C']);
    const copy = await t.s3.send(new CopyObjectCommand({ Bucket: bucket, Key: 'listed/copy', CopySource: `${bucket}/listed/one` }));
    expect(copy.CopyObjectResult?.ChecksumCRC32C).toBe(b64('crc32c', body));
    const head = await t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'listed/copy', ChecksumMode: 'ENABLED' }));
    expect(head.ChecksumCRC32C).toBe(b64('crc32c', body));
  });
});

describe('multipart', () => {
  const parts = [randomBytes(5 * MiB), randomBytes(5 * MiB), randomBytes(1234)];
  const whole = Buffer.concat(parts);

  it('COMPOSITE SHA256: echoes the algorithm, answers part checksums in UploadPart and ListParts, checks the named ones, and makes <checksum of checksums>-N', async () => {
    const key = 'mpu/sha256';
    const created = await t.s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key, ChecksumAlgorithm: 'SHA256' }));
    expect(created).toMatchObject({ ChecksumAlgorithm: 'SHA256', ChecksumType: 'COMPOSITE' });
    const uploadId = created.UploadId!;
    const done = [];
    for (const [i, data] of parts.entries()) {
      const r = await t.s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId: uploadId, PartNumber: i + 1, Body: data, ChecksumAlgorithm: 'SHA256' }));
      expect(r.ChecksumSHA256).toBe(b64('sha256', data));
      done.push({ PartNumber: i + 1, ETag: r.ETag!, ChecksumSHA256: r.ChecksumSHA256! });
    }
    const listed = await t.s3.send(new ListPartsCommand({ Bucket: bucket, Key: key, UploadId: uploadId }));
    expect(listed.ChecksumAlgorithm).toBe('SHA256');
    expect(listed.Parts?.map((p) => p.ChecksumSHA256)).toEqual(parts.map((p) => b64('sha256', p)));
    const uploads = await t.s3.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: key }));
    expect(uploads.Uploads?.[0]?.ChecksumAlgorithm).toBe('SHA256');

    // A part checksum that is not the part's: InvalidPart, and nothing is made.
    const wrong = done.map((p, i) => (i === 1 ? { ...p, ChecksumSHA256: b64('sha256', Buffer.from('other')) } : p));
    expect(await failure(t.s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId, MultipartUpload: { Parts: wrong } })))).toMatchObject({ name: 'InvalidPart', status: 400 });

    const completed = await t.s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId, MultipartUpload: { Parts: done } }));
    const composite = compositeChecksum('sha256', parts.map((p) => checksumOf('sha256', p)));
    expect(composite).toMatch(/-3$/);
    expect(completed).toMatchObject({ ChecksumSHA256: composite, ChecksumType: 'COMPOSITE' });
    const head = await t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key, ChecksumMode: 'ENABLED' }));
    expect(head).toMatchObject({ ChecksumSHA256: composite, ChecksumType: 'COMPOSITE', ETag: completed.ETag });
    // The SDK skips validating a composite value; the bytes are still whole.
    const get = await t.s3.send(new GetObjectCommand({ Bucket: bucket, Key: key, ChecksumMode: 'ENABLED' }));
    expect((await bytes(get.Body)).equals(whole)).toBe(true);
    // One part: that part's checksum, which the SDK checks against the part's
    // bytes, and the object's ChecksumType beside it as AWS sends it.
    const second = await t.s3.send(new GetObjectCommand({ Bucket: bucket, Key: key, PartNumber: 2, ChecksumMode: 'ENABLED' }));
    expect(second).toMatchObject({ ChecksumSHA256: b64('sha256', parts[1]!), ChecksumType: 'COMPOSITE' });
    expect((await bytes(second.Body)).equals(parts[1]!)).toBe(true);
  });

  it('lib-storage Upload (CRC32 by default) makes a COMPOSITE CRC32 object', async () => {
    const key = 'mpu/lib-storage-default';
    const result = await new Upload({ client: t.s3, params: { Bucket: bucket, Key: key, Body: whole }, partSize: 5 * MiB }).done();
    const composite = compositeChecksum('crc32', parts.map((p) => checksumOf('crc32', p)));
    expect(result.ChecksumCRC32).toBe(composite);
    const head = await t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key, ChecksumMode: 'ENABLED' }));
    expect(head).toMatchObject({ ChecksumCRC32: composite, ChecksumType: 'COMPOSITE' });
  });

  it.each([
    ['crc64nvme', undefined],
    ['crc32c', 'FULL_OBJECT'],
  ] as const)('lib-storage Upload with %s (%s) makes a FULL_OBJECT checksum equal to the whole content\'s, which the SDK checks on GET', async (alg, type) => {
    const key = `mpu/full-${alg}`;
    const result = await new Upload({ client: t.s3, params: { Bucket: bucket, Key: key, Body: whole, ChecksumAlgorithm: sdkName[alg], ...(type && { ChecksumType: type }) }, partSize: 5 * MiB }).done();
    const full = b64(alg, whole);
    expect(combineCrcs(alg, parts.map((p) => [checksumOf(alg, p), p.length] as const)).toString('base64')).toBe(full);
    expect(result[field[alg]]).toBe(full);
    const head = await t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key, ChecksumMode: 'ENABLED' }));
    expect(head).toMatchObject({ [field[alg]]: full, ChecksumType: 'FULL_OBJECT' });
    const get = await t.s3.send(new GetObjectCommand({ Bucket: bucket, Key: key, ChecksumMode: 'ENABLED' }));
    expect((await bytes(get.Body)).equals(whole)).toBe(true);
  });

  it('checks the object checksum a CompleteMultipartUpload states (BadDigest when wrong), and computes part checksums a client did not send', async () => {
    const key = 'mpu/stated';
    // A client that sends no checksum unless required: casket computes each part's.
    const quiet = new S3Client({ endpoint: t.casket.url, region: 'us-east-1', forcePathStyle: true, credentials: t.casket.admin, maxAttempts: 1, requestChecksumCalculation: 'WHEN_REQUIRED' });
    try {
      const created = await quiet.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key, ChecksumAlgorithm: 'CRC64NVME' }));
      expect(created.ChecksumType).toBe('FULL_OBJECT');
      const done: Array<{ PartNumber: number; ETag: string }> = [];
      for (const [i, data] of parts.entries()) {
        const r = await quiet.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId: created.UploadId, PartNumber: i + 1, Body: data }));
        expect(r.ChecksumCRC64NVME).toBe(b64('crc64nvme', data));
        done.push({ PartNumber: i + 1, ETag: r.ETag! });
      }
      const complete = (value: string) => quiet.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: created.UploadId, MultipartUpload: { Parts: done }, ChecksumCRC64NVME: value, ChecksumType: 'FULL_OBJECT' }));
      expect(await failure(complete(b64('crc64nvme', Buffer.from('not the object'))))).toMatchObject({ name: 'BadDigest', status: 400 });
      // A value that is no CRC64NVME at all can match no object either (ceph/s3-tests test_multipart_checksum_sha256).
      expect(await failure(complete('bad'))).toMatchObject({ name: 'BadDigest', status: 400 });
      const completed = await complete(b64('crc64nvme', whole));
      expect(completed).toMatchObject({ ChecksumCRC64NVME: b64('crc64nvme', whole), ChecksumType: 'FULL_OBJECT' });
      const first = await quiet.send(new GetObjectCommand({ Bucket: bucket, Key: key, PartNumber: 1, ChecksumMode: 'ENABLED' }));
      expect(first).toMatchObject({ ChecksumCRC64NVME: b64('crc64nvme', parts[0]!), ChecksumType: 'FULL_OBJECT' });
      await bytes(first.Body);
    } finally {
      quiet.destroy();
    }
  });

  it('refuses what S3 refuses: a COMPOSITE CRC64NVME, a FULL_OBJECT SHA256, a part with another algorithm', async () => {
    expect(await failure(t.s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'mpu/bad', ChecksumAlgorithm: 'CRC64NVME', ChecksumType: 'COMPOSITE' })))).toMatchObject({ name: 'InvalidRequest', status: 400 });
    expect(await failure(t.s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'mpu/bad', ChecksumAlgorithm: 'SHA256', ChecksumType: 'FULL_OBJECT' })))).toMatchObject({ name: 'InvalidRequest', status: 400 });
    const created = await t.s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'mpu/bad', ChecksumAlgorithm: 'SHA1' }));
    expect(await failure(t.s3.send(new UploadPartCommand({ Bucket: bucket, Key: 'mpu/bad', UploadId: created.UploadId, PartNumber: 1, Body: 'x', ChecksumAlgorithm: 'CRC32' })))).toMatchObject({ name: 'InvalidRequest', status: 400 });
    // A part sent without a checksum gets the upload's, computed by casket.
    const part = await t.s3.send(new UploadPartCommand({ Bucket: bucket, Key: 'mpu/bad', UploadId: created.UploadId, PartNumber: 1, Body: 'x', ChecksumAlgorithm: 'SHA1' }));
    expect(part.ChecksumSHA1).toBe(b64('sha1', Buffer.from('x')));
  });
});

describe('boto3', () => {
  it.runIf(need('boto3', hasPythonModule('boto3')))('put_object with ChecksumAlgorithm, get_object / head_object with ChecksumMode, upload_file multipart', async () => {
    const script = `
import boto3, json, sys, os, zlib, base64
from botocore.config import Config
from boto3.s3.transfer import TransferConfig
s = json.loads(sys.argv[1])
s3 = boto3.client("s3", endpoint_url=s["url"], aws_access_key_id=s["key"], aws_secret_access_key=s["secret"], region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
out = {}
body = b"boto3 checksum body"
out["put"] = s3.put_object(Bucket=s["bucket"], Key="boto3/sha256", Body=body, ChecksumAlgorithm="SHA256").get("ChecksumSHA256")
g = s3.get_object(Bucket=s["bucket"], Key="boto3/sha256", ChecksumMode="ENABLED")
out["get"] = [g.get("ChecksumSHA256"), g.get("ChecksumType"), g["Body"].read() == body]
h = s3.head_object(Bucket=s["bucket"], Key="boto3/sha256", ChecksumMode="ENABLED")
out["head"] = h.get("ChecksumSHA256")
path = os.path.join(s["dir"], "big")
data = os.urandom(11 * 1024 * 1024)
open(path, "wb").write(data)
s3.upload_file(path, s["bucket"], "boto3/multipart", Config=TransferConfig(multipart_threshold=5 * 1024 * 1024, multipart_chunksize=5 * 1024 * 1024))
h = s3.head_object(Bucket=s["bucket"], Key="boto3/multipart", ChecksumMode="ENABLED")
out["multipart"] = {k: v for k, v in h.items() if k.startswith("Checksum")}
g = s3.get_object(Bucket=s["bucket"], Key="boto3/multipart", ChecksumMode="ENABLED")
out["multipart_body"] = g["Body"].read() == data
out["crc32_parts"] = [base64.b64encode(zlib.crc32(data[i:i + 5 * 1024 * 1024]).to_bytes(4, "big")).decode() for i in range(0, len(data), 5 * 1024 * 1024)]
print(json.dumps(out))
`;
    const { mkdtempSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const dir = mkdtempSync(join(tmpdir(), 'casket-boto3-'));
    const settings = { url: t.casket.url, key: t.casket.admin.accessKeyId, secret: t.casket.admin.secretAccessKey, bucket, dir };
    const { stdout } = await promisify(execFile)(python3(), ['-c', script, JSON.stringify(settings)], { env: cleanEnv({ AWS_CONFIG_FILE: '/dev/null', AWS_SHARED_CREDENTIALS_FILE: '/dev/null' }), maxBuffer: 1 << 20 });
    const out = JSON.parse(stdout) as { put: string; get: [string, string, boolean]; head: string; multipart: Record<string, string>; multipart_body: boolean; crc32_parts: string[] };
    const expected = b64('sha256', Buffer.from('boto3 checksum body'));
    expect(out.put).toBe(expected);
    expect(out.get).toEqual([expected, 'FULL_OBJECT', true]);
    expect(out.head).toBe(expected);
    // boto3 1.43's transfer manager: CreateMultipartUpload with CRC32, parts with CRC32 → COMPOSITE CRC32.
    const composite = compositeChecksum('crc32', out.crc32_parts.map((p) => Buffer.from(p, 'base64')));
    expect(out.multipart).toEqual({ ChecksumCRC32: composite, ChecksumType: 'COMPOSITE' });
    expect(out.multipart_body).toBe(true);
  });
});
