/**
 * Server-side encryption headers are honoured or refused, never dropped
 * (issue 44): casket does not carry SSE-C, SSE-KMS or SSE-S3 yet, so each is
 * refused with AWS's error and nothing is stored — a client that asked for its
 * own key must never get 200 with its bytes kept in plaintext. SSE-C over
 * plain HTTP is refused as AWS refuses it (400 InvalidRequest,
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/ServerSideEncryptionCustomerKeys.html).
 * SDK v3 and boto3, over HTTP and HTTPS; runs on the embedded store and
 * through moto / Ceph RGW.
 */
import {
  CompleteMultipartUploadCommand, CopyObjectCommand, CreateBucketCommand, CreateMultipartUploadCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, S3Client, UploadPartCommand,
} from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Agent } from 'node:https';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { cleanEnv, hasPythonModule, python3 } from '../helpers/cli-tools.js';
import { bytes, failure } from '../helpers/clients.js';
import { errorCode, raw } from '../helpers/raw.js';
import { casketWithBucket, etagOf } from '../helpers/suite.js';
import { need } from '../helpers/tools.js';
import { testTls, tlsArgs } from '../helpers/tls.js';
import { upstreamKindFromEnv } from '../helpers/upstream.js';

const plain = casketWithBucket('sse-plain');
const bucket = 'sse-tls';
let secure: RunningCasket;
let s3: S3Client;
const key = randomBytes(16).toString('hex'); // 32 bytes: an AES-256 key
const body = Buffer.from('bytes the client wanted encrypted with its own key');

beforeAll(async () => {
  secure = await startCasket({ args: tlsArgs() });
  s3 = new S3Client({
    endpoint: secure.url, region: 'us-east-1', forcePathStyle: true, credentials: secure.admin, maxAttempts: 1,
    requestHandler: new NodeHttpHandler({ httpsAgent: new Agent({ ca: testTls().ca }) }),
  });
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
});
afterAll(async () => {
  s3?.destroy();
  await secure?.stop();
});

/** A GET without the key: never the bytes (the object must not exist at all). */
async function neverServed(client: S3Client, b: string, k: string): Promise<void> {
  const got = await failure(client.send(new GetObjectCommand({ Bucket: b, Key: k })));
  expect(got.status).toBe(404);
  expect(got.name).toBe('NoSuchKey');
}

describe('SSE-C (customer-provided keys)', () => {
  it('over plain HTTP is refused as AWS refuses it, and nothing is stored', async () => {
    const put = await failure(plain.s3.send(new PutObjectCommand({ Bucket: plain.bucket, Key: 'ssec', Body: body, SSECustomerAlgorithm: 'AES256', SSECustomerKey: key })));
    expect(put.status).toBe(400);
    expect(put.name).toBe('InvalidRequest');
    expect(put.error.message).toBe('Requests specifying Server Side Encryption with Customer provided keys must be made over a secure connection.');
    await neverServed(plain.s3, plain.bucket, 'ssec');
  });

  it('over TLS is refused on PUT, multipart, copy and GET: a GET without the key never returns the bytes', async () => {
    const ssec = { SSECustomerAlgorithm: 'AES256', SSECustomerKey: key };
    const put = await failure(s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'ssec', Body: body, ...ssec })));
    expect([put.status, put.name]).toEqual([501, 'NotImplemented']);
    await neverServed(s3, bucket, 'ssec');
    const mpu = await failure(s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'ssec-mpu', ...ssec })));
    expect([mpu.status, mpu.name]).toEqual([501, 'NotImplemented']);

    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'plain', Body: body }));
    const copyTo = await failure(s3.send(new CopyObjectCommand({ Bucket: bucket, Key: 'ssec-copy', CopySource: `${bucket}/plain`, ...ssec })));
    expect([copyTo.status, copyTo.name]).toEqual([501, 'NotImplemented']);
    await neverServed(s3, bucket, 'ssec-copy');
    const copyFrom = await failure(s3.send(new CopyObjectCommand({ Bucket: bucket, Key: 'copy-of-ssec', CopySource: `${bucket}/plain`, CopySourceSSECustomerAlgorithm: 'AES256', CopySourceSSECustomerKey: key })));
    expect([copyFrom.status, copyFrom.name]).toEqual([501, 'NotImplemented']);
    // A read naming a key: refused, not answered with the plaintext of an object casket never stored that way.
    const head = await failure(s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'plain', ...ssec })));
    expect(head.status).toBe(501);
  });
});

describe('SSE-KMS and SSE-S3', () => {
  const kms = { ServerSideEncryption: 'aws:kms', SSEKMSKeyId: 'arn:aws:kms:us-east-1:123456789012:key/casket-test', BucketKeyEnabled: true } as const;

  it('on the embedded store, SSE-KMS with a key id and SSE-S3 are refused rather than stored unencrypted; in front of an upstream, honoured or refused by it, never dropped', async () => {
    if (upstreamKindFromEnv() === 'moto') return carriedUp();
    if (upstreamKindFromEnv() === 'rgw') return honouredOrRefused();
    for (const [k, sse] of [['kms', kms], ['s3', { ServerSideEncryption: 'AES256' }]] as const) {
      const put = await failure(s3.send(new PutObjectCommand({ Bucket: bucket, Key: k, Body: body, ...sse })));
      expect([put.status, put.name], k).toEqual([501, 'NotImplemented']);
      expect(String(put.error.message)).toContain(sse.ServerSideEncryption);
      await neverServed(s3, bucket, k);
      const mpu = await failure(s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: `${k}-mpu`, ...sse })));
      expect([mpu.status, mpu.name], k).toEqual([501, 'NotImplemented']);
    }
  });

  /** moto encrypts (or says it does) as asked: SSE-S3 and SSE-KMS go up on PUT, multipart and copy, and the answers say so; the ETag stays the SHA-256 of the plaintext. */
  async function carriedUp(): Promise<void> {
    const upstream = secure.upstream!;
    const direct = new S3Client({ endpoint: upstream.url, region: upstream.region, forcePathStyle: true, credentials: { accessKeyId: upstream.accessKey, secretAccessKey: upstream.secretKey }, maxAttempts: 1 });
    try {
      const put = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'sse-s3', Body: body, ServerSideEncryption: 'AES256' }));
      expect(put.ServerSideEncryption).toBe('AES256');
      expect(put.ETag).toBe(etagOf(body));
      const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'sse-s3' }));
      expect([got.ServerSideEncryption, got.ETag]).toEqual(['AES256', etagOf(body)]);
      expect(await bytes(got.Body)).toEqual(body);
      // The upstream itself holds it encrypted: the header reached it.
      expect((await direct.send(new HeadObjectCommand({ Bucket: bucket, Key: 'sse-s3' }))).ServerSideEncryption).toBe('AES256');

      const kmsPut = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'sse-kms', Body: body, ...kms }));
      expect([kmsPut.ServerSideEncryption, kmsPut.SSEKMSKeyId]).toEqual(['aws:kms', kms.SSEKMSKeyId]);
      const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'sse-kms' }));
      expect([head.ServerSideEncryption, head.SSEKMSKeyId, head.ETag]).toEqual(['aws:kms', kms.SSEKMSKeyId, etagOf(body)]);
      expect((await direct.send(new HeadObjectCommand({ Bucket: bucket, Key: 'sse-kms' }))).SSEKMSKeyId).toBe(kms.SSEKMSKeyId);

      // A copy is encrypted as its own request asks, not as its source was.
      const copy = await s3.send(new CopyObjectCommand({ Bucket: bucket, Key: 'sse-copy', CopySource: `${bucket}/sse-kms`, ServerSideEncryption: 'AES256' }));
      expect(copy.ServerSideEncryption).toBe('AES256');
      const copied = await direct.send(new HeadObjectCommand({ Bucket: bucket, Key: 'sse-copy' }));
      expect([copied.ServerSideEncryption, copied.SSEKMSKeyId]).toEqual(['AES256', undefined]);

      const mpu = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'sse-mpu', ...kms }));
      expect(mpu.ServerSideEncryption).toBe('aws:kms');
      const part = await s3.send(new UploadPartCommand({ Bucket: bucket, Key: 'sse-mpu', UploadId: mpu.UploadId, PartNumber: 1, Body: body }));
      const done = await s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: 'sse-mpu', UploadId: mpu.UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] } }));
      expect(done.ETag).toBeDefined();
      expect((await direct.send(new HeadObjectCommand({ Bucket: bucket, Key: 'sse-mpu' }))).ServerSideEncryption).toBe('aws:kms');
      expect((await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'sse-mpu' }))).ServerSideEncryption).toBe('aws:kms');

      // A read that declares an encryption is 400, as S3 answers it (s3-tests test_sse_kms_read_declare), and carries no bytes.
      await plain.s3.send(new PutObjectCommand({ Bucket: plain.bucket, Key: 'declared', Body: body }));
      const declared = await raw(plain.casket.url, plain.casket.admin, { method: 'GET', path: `/${plain.bucket}/declared`, headers: { 'x-amz-server-side-encryption': 'aws:kms', 'x-amz-server-side-encryption-aws-kms-key-id': 'testkey-1' } });
      expect([declared.status, errorCode(declared.body)]).toEqual([400, 'InvalidArgument']);
      const bad = await failure(s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'sse-bad', Body: body, ServerSideEncryption: 'rot13' as 'AES256' })));
      expect([bad.status, bad.name]).toEqual([400, 'InvalidArgument']);
      await neverServed(s3, bucket, 'sse-bad');
    } finally {
      direct.destroy();
    }
  }

  /**
   * Ceph RGW as started by scripts/ceph-rgw-up.sh has no KMS: it honours
   * or refuses what it can, and casket passes its answer on — a 200 that
   * drops the header never comes back.
   */
  async function honouredOrRefused(): Promise<void> {
    for (const [k, sse] of [['kms', kms], ['s3', { ServerSideEncryption: 'AES256' }]] as const) {
      const put = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: k, Body: body, ...sse })).catch((e: Error) => e);
      if (put instanceof Error) {
        await neverServed(s3, bucket, k);
        continue;
      }
      expect(put.ServerSideEncryption, k).toBe(sse.ServerSideEncryption);
      expect((await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: k }))).ServerSideEncryption, k).toBe(sse.ServerSideEncryption);
    }
  }
});

describe('boto3', () => {
  it.runIf(need('boto3', hasPythonModule('boto3')))('put_object with SSECustomerKey: refused over HTTP and HTTPS, get_object without the key finds nothing', async () => {
    const script = `
import boto3, json, sys
from botocore.config import Config
from botocore.exceptions import ClientError
out = {}
for name, s in json.loads(sys.argv[1]).items():
    s3 = boto3.client("s3", endpoint_url=s["url"], aws_access_key_id=s["key"], aws_secret_access_key=s["secret"], region_name="us-east-1",
                      verify=s["ca"] or True, config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
    for op, call in [("put", lambda: s3.put_object(Bucket=s["bucket"], Key="boto3-ssec", Body=b"secret", SSECustomerAlgorithm="AES256", SSECustomerKey="k" * 32)),
                     ("get", lambda: s3.get_object(Bucket=s["bucket"], Key="boto3-ssec")["Body"].read().decode())]:
        try:
            out[name + "-" + op] = ["ok", call()]
        except ClientError as e:
            out[name + "-" + op] = [e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]]
print(json.dumps(out, default=str))
`;
    const settings = {
      http: { url: plain.casket.url, key: plain.casket.admin.accessKeyId, secret: plain.casket.admin.secretAccessKey, bucket: plain.bucket, ca: null },
      https: { url: secure.url, key: secure.admin.accessKeyId, secret: secure.admin.secretAccessKey, bucket, ca: testTls().caFile },
    };
    const { stdout } = await promisify(execFile)(python3(), ['-c', script, JSON.stringify(settings)], { env: cleanEnv({ AWS_CONFIG_FILE: '/dev/null', AWS_SHARED_CREDENTIALS_FILE: '/dev/null' }) });
    expect(JSON.parse(stdout)).toEqual({
      'http-put': ['InvalidRequest', 400],
      'http-get': ['NoSuchKey', 404],
      'https-put': ['NotImplemented', 501],
      'https-get': ['NoSuchKey', 404],
    });
  });
});
