/**
 * SSE-C through casket (issue 44 item 1): in front of an upstream that
 * honours customer-provided keys (Ceph RGW, started by
 * scripts/ceph-rgw-up.sh with rgw_crypt_require_ssl = false: casket's own
 * hop is TLS here, and the upstream is on loopback), the keys go up with
 * PutObject, multipart, CopyObject (source and destination) and GET/HEAD,
 * the answers say so, and the upstream refuses a read without the right key
 * — so casket never serves the bytes to one. casket's ETag stays the SHA-256
 * of the plaintext. Nothing casket keeps between requests (retained
 * versions for diffs and merges) holds bytes read under a key: a reader
 * with the key cannot make a keyless one see them.
 *
 * Where the backend does not honour them — the embedded store, moto (which
 * stores the bytes in plaintext and serves them to anyone: probed) — an
 * SSE-C request is refused with 501 before anything is written.
 */
import {
  CompleteMultipartUploadCommand, CopyObjectCommand, CreateBucketCommand, CreateMultipartUploadCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client, UploadPartCommand,
} from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { createHash, randomBytes } from 'node:crypto';
import { Agent, request as httpsRequest } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type Cred, type RunningCasket } from '../helpers/casket.js';
import { bytes, failure } from '../helpers/clients.js';
import { signRequest, type RawResponse } from '../helpers/raw.js';
import { etagOf } from '../helpers/suite.js';
import { testTls, tlsArgs } from '../helpers/tls.js';
import { upstreamKindFromEnv } from '../helpers/upstream.js';

const bucket = 'ssec-up';
const key = randomBytes(32);
const wrongKey = randomBytes(32);
const ssec = { SSECustomerAlgorithm: 'AES256', SSECustomerKey: key.toString('base64') };
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const keyMd5 = createHash('md5').update(key).digest('base64');
const SECRET = Buffer.from('SECRET-PAYLOAD: the bytes this client encrypts with its own key\n');
/** RGW (as scripts/ceph-rgw-up.sh starts it) honours SSE-C; the embedded store and moto do not. */
const honoured = upstreamKindFromEnv() === 'rgw';

let casket: RunningCasket;
const clients: S3Client[] = [];

function client(cred: Cred): S3Client {
  const c = new S3Client({
    endpoint: casket.url, region: 'us-east-1', forcePathStyle: true, credentials: cred, maxAttempts: 1,
    requestHandler: new NodeHttpHandler({ httpsAgent: new Agent({ ca: testTls().ca }), requestTimeout: 20_000 }),
  });
  clients.push(c);
  return c;
}

/** A signed request over casket's TLS (test/helpers/raw.ts speaks plain HTTP). */
async function rawTls(cred: Cred, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<RawResponse> {
  const signed = await signRequest(casket.url, cred, { method, path, headers, ...(body !== undefined && { body }) });
  const u = new URL(casket.url);
  return new Promise((resolve, reject) => {
    const req = httpsRequest({ host: u.hostname, port: u.port, method, path: signed.path, headers: signed.headers, ca: testTls().ca }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A read that must not answer the bytes: refused, and no byte of the secret in what came back. */
async function refusedRead(s3: S3Client, k: string, extra: Record<string, unknown> = {}): Promise<number | undefined> {
  const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: k, ...extra })).then(async (r) => ({ served: await bytes(r.Body) }), (e: unknown) => ({ error: e as { $metadata?: { httpStatusCode?: number } } }));
  expect('served' in got ? got.served.toString() : 'refused').toBe('refused');
  const status = 'error' in got ? got.error.$metadata?.httpStatusCode : undefined;
  expect(status).toBeGreaterThanOrEqual(400);
  return status;
}

beforeAll(async () => {
  casket = await startCasket({ args: tlsArgs(), agents: ['alice', 'bob'] });
  await client(casket.admin).send(new CreateBucketCommand({ Bucket: bucket }));
});
afterAll(async () => {
  for (const c of clients) c.destroy();
  await casket?.stop();
});

describe('SSE-C in front of an upstream', () => {
  it('PutObject with a key: GET without it or with a wrong one is refused, never the bytes; with it, the bytes, the SHA-256 ETag and the key MD5 come back (GET and HEAD)', async () => {
    const s3 = client(casket.admin);
    if (!honoured) {
      const put = await failure(s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'one', Body: SECRET, ...ssec })));
      expect([put.status, put.name]).toEqual([501, 'NotImplemented']);
      expect(String(put.error.message)).toContain(casket.upstream ? 'does not honour customer-provided keys' : 'SSE-C');
      expect((await failure(s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'one' })))).name).toBe('NoSuchKey');
      return;
    }
    const put = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'one', Body: SECRET, ...ssec }));
    expect([put.ETag, put.SSECustomerAlgorithm, put.SSECustomerKeyMD5]).toEqual([etagOf(SECRET), 'AES256', keyMd5]);
    await refusedRead(s3, 'one');
    await refusedRead(s3, 'one', { SSECustomerAlgorithm: 'AES256', SSECustomerKey: wrongKey.toString('base64') });
    expect((await failure(s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'one' })))).status).toBeGreaterThanOrEqual(400);
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'one', ...ssec }));
    expect([got.ETag, got.SSECustomerAlgorithm, got.SSECustomerKeyMD5]).toEqual([etagOf(SECRET), 'AES256', keyMd5]);
    expect(await bytes(got.Body)).toEqual(SECRET);
    const ranged = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'one', Range: 'bytes=0-5', ...ssec }));
    expect((await bytes(ranged.Body)).toString()).toBe('SECRET');
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'one', ...ssec }));
    expect([head.ETag, head.ContentLength, head.SSECustomerAlgorithm]).toEqual([etagOf(SECRET), SECRET.length, 'AES256']);
    // Listed under the same ETag, for anyone who may list.
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'one' }));
    expect(listed.Contents?.map((c) => c.ETag)).toEqual([etagOf(SECRET)]);
  });

  it('multipart with a key on create, each part and complete; copy with the source key and with a destination key', async () => {
    const s3 = client(casket.admin);
    if (!honoured) {
      const mpu = await failure(s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'mpu', ...ssec })));
      expect([mpu.status, mpu.name]).toEqual([501, 'NotImplemented']);
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'plain', Body: SECRET }));
      const copy = await failure(s3.send(new CopyObjectCommand({ Bucket: bucket, Key: 'copy', CopySource: `${bucket}/plain`, ...ssec })));
      expect([copy.status, copy.name]).toEqual([501, 'NotImplemented']);
      return;
    }
    const part1 = Buffer.alloc(5 * 1024 * 1024, 'a');
    const mpu = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'mpu', ...ssec }));
    expect(mpu.SSECustomerAlgorithm).toBe('AES256');
    const p1 = await s3.send(new UploadPartCommand({ Bucket: bucket, Key: 'mpu', UploadId: mpu.UploadId, PartNumber: 1, Body: part1, ...ssec }));
    const p2 = await s3.send(new UploadPartCommand({ Bucket: bucket, Key: 'mpu', UploadId: mpu.UploadId, PartNumber: 2, Body: SECRET, ...ssec }));
    const done = await s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: 'mpu', UploadId: mpu.UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: p1.ETag }, { PartNumber: 2, ETag: p2.ETag }] }, ...ssec }));
    expect(done.ETag).toMatch(/-2"$/);
    await refusedRead(s3, 'mpu');
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'mpu', ...ssec }));
    expect(got.ETag).toBe(done.ETag);
    // Compared by digest: a 5 MiB mismatch would make the diff printer spin.
    const whole = await bytes(got.Body);
    expect([whole.length, sha256(whole)]).toEqual([part1.length + SECRET.length, sha256(Buffer.concat([part1, SECRET]))]);

    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'src', Body: SECRET, ...ssec }));
    // Without the source key the source cannot be read: nothing is copied.
    expect((await failure(s3.send(new CopyObjectCommand({ Bucket: bucket, Key: 'copy-nokey', CopySource: `${bucket}/src` })))).status).toBeGreaterThanOrEqual(400);
    expect((await failure(s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'copy-nokey' })))).name).toBe('NotFound');
    // With it, into a plain object (readable without a key) and into one under another key.
    const plain = await s3.send(new CopyObjectCommand({ Bucket: bucket, Key: 'copy-plain', CopySource: `${bucket}/src`, CopySourceSSECustomerAlgorithm: 'AES256', CopySourceSSECustomerKey: ssec.SSECustomerKey }));
    expect(plain.CopyObjectResult?.ETag).toBe(etagOf(SECRET));
    expect(await bytes((await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'copy-plain' }))).Body)).toEqual(SECRET);
    const other = { SSECustomerAlgorithm: 'AES256', SSECustomerKey: wrongKey.toString('base64') };
    const rekeyed = await s3.send(new CopyObjectCommand({ Bucket: bucket, Key: 'copy-rekeyed', CopySource: `${bucket}/src`, CopySourceSSECustomerAlgorithm: 'AES256', CopySourceSSECustomerKey: ssec.SSECustomerKey, ...other }));
    expect(rekeyed.SSECustomerAlgorithm).toBe('AES256');
    await refusedRead(s3, 'copy-rekeyed', ssec);
    expect(await bytes((await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'copy-rekeyed', ...other }))).Body)).toEqual(SECRET);
  });

  it('a reader with the key cannot make a keyless reader get the bytes: nothing read or written under a key is retained for diffs', async () => {
    if (!honoured) return void expect((await failure(client(casket.agents.alice!).send(new PutObjectCommand({ Bucket: bucket, Key: 'shared.txt', Body: SECRET, ...ssec })))).status).toBe(501);
    const alice = client(casket.agents.alice!);
    const bob = client(casket.agents.bob!);
    const draft = Buffer.from('draft 1\n');
    // bob (an agent: casket retains what agents read and write) writes a draft.
    await bob.send(new PutObjectCommand({ Bucket: bucket, Key: 'shared.txt', Body: draft, IfNoneMatch: '*' }));
    // alice reads it, overwrites it under her key, and reads her version back with it.
    await bytes((await alice.send(new GetObjectCommand({ Bucket: bucket, Key: 'shared.txt' }))).Body);
    const v2 = await alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'shared.txt', Body: SECRET, IfMatch: etagOf(draft), ...ssec }));
    expect(await bytes((await alice.send(new GetObjectCommand({ Bucket: bucket, Key: 'shared.txt', ...ssec }))).Body)).toEqual(SECRET);
    const v2ETag = v2.ETag!.replace(/"/g, '');
    const q = (to: string) => `/_casket/diff?${new URLSearchParams({ bucket, key: 'shared.txt', from: createHash('sha256').update(draft).digest('hex'), to })}`;
    // alice's own diff of her version would need it kept: it is not, for anyone.
    await new Promise((r) => setTimeout(r, 300));
    for (const who of [casket.agents.bob!, casket.agents.alice!]) {
      for (const to of [v2ETag, 'current']) {
        const diff = await rawTls(who, 'GET', q(to));
        expect(diff.body).not.toContain('SECRET');
        expect(diff.status, diff.body).toBeGreaterThanOrEqual(400);
      }
    }
    // bob, without the key: his GET is refused, and his stale write's 412 carries no diff of her bytes.
    await refusedRead(bob, 'shared.txt');
    const stale = await rawTls(casket.agents.bob!, 'PUT', `/${bucket}/shared.txt`, { 'if-match': etagOf(draft), 'content-type': 'text/plain' }, 'draft 2\n');
    // casket cannot look at the current version without the key either: refused, saying why, and nothing written.
    expect([stale.status, stale.body]).toEqual([400, expect.stringContaining('The correct parameters must be provided to retrieve the object.')]);
    expect(stale.body).not.toContain('SECRET');
    expect(await bytes((await alice.send(new GetObjectCommand({ Bucket: bucket, Key: 'shared.txt', ...ssec }))).Body)).toEqual(SECRET);
  });
});
