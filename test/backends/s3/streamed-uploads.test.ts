/**
 * PutObject bodies whose SHA-256 is known only at their end (UNSIGNED-PAYLOAD,
 * aws-chunked with a trailer, signed chunks: what SDKs send most of the time)
 * go upstream as they arrive (src/backends/s3/objects.ts putStreamed), through
 * a real casket in front of a real upstream (moto by default, Ceph RGW with
 * CASKET_TEST_UPSTREAM=rgw), reached through a relay that counts the bytes
 * casket sends it:
 * - the upstream receives most of an 8 MiB body while the client is still
 *   sending it (spooled first, it would receive none), and nothing is spooled;
 * - the ETag is the body's SHA-256 on PUT, HEAD, GET and listings, and a
 *   trailer's CRC32 comes back with the object;
 * - a wrong CRC32 trailer, a wrong chunk signature, or a client that goes
 *   away mid-body leave nothing upstream, though most of the body reached it;
 * - the SHA-256 lives in the ETag index only: a casket with an empty index
 *   (another process, its own state) still serves the right ETag, by hashing;
 * - concurrent conditional writes of streamed bodies: exactly one wins.
 */
import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { request as httpRequest, type ClientRequest } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signingKeyFor } from '../../../src/auth/sigv4.js';
import { checksumOf } from '../../../src/vocabulary/checksums.js';
import { chunkSigner, encodeChunked } from '../../auth/helpers.js';
import { startCasket, type RunningCasket } from '../../helpers/casket.js';
import { bytes, sdk } from '../../helpers/clients.js';
import { until } from '../../helpers/poll.js';
import { errorCode, raw, send, signRequest, type RawResponse } from '../../helpers/raw.js';
import { relayedCasket, type CountingRelay, type RelayedCasket } from '../../helpers/counting-relay.js';
import type { Upstream } from '../../helpers/upstream.js';

const MiB = 1024 * 1024;
const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const quoted = (b: Buffer | string) => `"${sha(b)}"`;
const bucket = 'streamed';

let upstream: Upstream;
let relay: CountingRelay;
let casket: RunningCasket;
let direct: S3Client;
let s3: S3Client;

let fixture: RelayedCasket | undefined;

beforeAll(async () => {
  fixture = await relayedCasket(bucket);
  ({ upstream, relay, casket, direct, s3 } = fixture);
});
afterAll(() => fixture?.stop());

/** Nothing stored upstream under this key: a HEAD straight to the upstream is 404, a GET NoSuchKey. */
async function absentUpstream(key: string): Promise<void> {
  const head = await direct.send(new HeadObjectCommand({ Bucket: bucket, Key: key })).then(
    () => 200,
    (e: { $metadata?: { httpStatusCode?: number } }) => e.$metadata?.httpStatusCode,
  );
  expect(head, `HEAD ${key} on the upstream`).toBe(404);
  const get = await direct.send(new GetObjectCommand({ Bucket: bucket, Key: key })).then(
    () => 'stored',
    (e: { name?: string }) => e.name,
  );
  expect(get, `GET ${key} on the upstream`).toBe('NoSuchKey');
}

/** Waits for casket to log the end of a request on this key after log line `from`. */
async function logged(key: string, from: number): Promise<void> {
  await until(() => casket.logs.slice(from).some((line) => line.includes('"operation":"PutObject"') && line.includes(`"key":"${key}"`)), `casket to log the PutObject of ${key}`);
}

function spooled(): number {
  return readdirSync(join(casket.dataDir, 'spool')).length;
}

/**
 * Starts an UNSIGNED-PAYLOAD PutObject of `body` and sends its first `first`
 * bytes; resolves with the open request, for the test to finish or cut.
 */
async function startUnsignedPut(key: string, body: Buffer, first: number): Promise<{ req: ClientRequest; answer: Promise<RawResponse> }> {
  const { headers } = await signRequest(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}/${key}`, payloadHash: 'UNSIGNED-PAYLOAD', headers: { 'content-length': String(body.length) } });
  return startPut(`/${bucket}/${key}`, headers, body, first);
}

/**
 * A signed PUT whose body fails only at its end: all but the last `holdBack`
 * bytes are sent, and the rest only once the upstream has received more than
 * 1 MiB — so "most of it got there" holds however loaded the machine (sent
 * at once, casket can refuse before its upstream socket has been read).
 */
async function putFailingAtTheEnd(path: string, headers: Record<string, string>, body: Buffer, holdBack = 128 * 1024): Promise<{ answer: RawResponse; streamed: number }> {
  const before = relay.sent();
  const { req, answer } = startPut(path, headers, body, body.length - holdBack);
  await until(() => relay.sent() - before > MiB, 'the upstream to receive more than 1 MiB before the end of the body is sent');
  const streamed = relay.sent() - before;
  req.end(body.subarray(body.length - holdBack));
  return { answer: await answer, streamed };
}

function startPut(path: string, headers: Record<string, string>, body: Buffer, first: number): { req: ClientRequest; answer: Promise<RawResponse> } {
  const u = new URL(casket.url);
  let req!: ClientRequest;
  const answer = new Promise<RawResponse>((resolve, reject) => {
    req = httpRequest({ host: u.hostname, port: u.port, method: 'PUT', path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
  req.write(body.subarray(0, first));
  return { req, answer };
}

describe('an unsigned PutObject streams upstream as it arrives', () => {
  it('8 MiB: the upstream receives most of it before the client has sent the rest; the ETag is its SHA-256 everywhere', async () => {
    const body = randomBytes(8 * MiB);
    const before = relay.sent();
    const { req, answer } = await startUnsignedPut('big', body, 6 * MiB);
    // Received whole first, the upstream would see none of it until the client ended.
    await until(() => relay.sent() - before >= 5 * MiB, 'the upstream to receive the first 5 MiB while the client still holds 2 MiB back');
    expect(spooled(), 'nothing spooled to disk').toBe(0);
    req.end(body.subarray(6 * MiB));
    const put = await answer;
    expect([put.status, put.headers.etag], put.body).toEqual([200, quoted(body)]);

    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'big' }));
    expect([head.ETag, head.ContentLength]).toEqual([quoted(body), body.length]);
    const get = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'big' }));
    expect(get.ETag).toBe(quoted(body));
    expect(sha(await bytes(get.Body))).toBe(sha(body));
    const list = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'big' }));
    expect(list.Contents?.map((o) => [o.Key, o.ETag])).toEqual([['big', quoted(body)]]);
    // Not kept as metadata (it was not known before the body): in the index.
    const upstreamHead = await direct.send(new HeadObjectCommand({ Bucket: bucket, Key: 'big' }));
    expect(upstreamHead.Metadata?.['casket-sha256']).toBeUndefined();
    expect(upstreamHead.ETag).toBe(`"${createHash('md5').update(body).digest('hex')}"`);
  });

  it('aws-chunked with a CRC32 trailer: stored with its SHA-256 ETag, and the CRC32 comes back', async () => {
    const data = randomBytes(MiB + 7);
    const crc = checksumOf('crc32', data).toString('base64');
    const put = await raw(casket.url, casket.admin, {
      method: 'PUT',
      path: `/${bucket}/trailer-ok`,
      payloadHash: 'STREAMING-UNSIGNED-PAYLOAD-TRAILER',
      headers: { 'content-encoding': 'aws-chunked', 'x-amz-decoded-content-length': String(data.length), 'x-amz-trailer': 'x-amz-checksum-crc32' },
      body: encodeChunked(data, 64 * 1024, { trailers: `x-amz-checksum-crc32:${crc}\r\n` }),
    });
    expect([put.status, put.headers.etag], put.body).toEqual([200, quoted(data)]);
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'trailer-ok', ChecksumMode: 'ENABLED' }));
    expect([head.ETag, head.ChecksumCRC32]).toEqual([quoted(data), crc]);
  });

  it('16 concurrent If-Match writes of streamed bodies on one version: exactly one wins, the stored bytes are its', async () => {
    const v0 = (await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}/race`, body: 'v0' })).headers.etag as string;
    const bodies = Array.from({ length: 16 }, () => randomBytes(256 * 1024));
    const results = await Promise.all(
      bodies.map((body) => raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}/race`, payloadHash: 'UNSIGNED-PAYLOAD', headers: { 'if-match': v0 }, body })),
    );
    const statuses = results.map((r) => `${r.status} ${r.status === 200 ? '' : errorCode(r.body)}`).join(',');
    const winners = results.flatMap((r, i) => (r.status === 200 ? [{ r, body: bodies[i]! }] : []));
    expect(winners.length, statuses).toBe(1);
    const winner = winners[0]!;
    expect(winner.r.headers.etag).toBe(quoted(winner.body));
    // Losers: 412 naming the winner (or, where a refused body would have to be sent twice, 503 SlowDown: retried by clients).
    for (const r of results) if (r.status !== 200) expect([412, 503], statuses).toContain(r.status);
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'race' }));
    expect([got.ETag, sha(await bytes(got.Body))]).toEqual([winner.r.headers.etag, sha(winner.body)]);
  });
});

describe('a streamed body that fails leaves nothing upstream, though most of it got there', () => {
  it('a wrong CRC32 trailer → 400 BadDigest', async () => {
    const data = randomBytes(2 * MiB);
    const path = `/${bucket}/bad-trailer`;
    const body = Buffer.from(encodeChunked(data, 64 * 1024, { trailers: 'x-amz-checksum-crc32:AAAAAA==\r\n' }));
    const { headers } = await signRequest(casket.url, casket.admin, {
      method: 'PUT',
      path,
      payloadHash: 'STREAMING-UNSIGNED-PAYLOAD-TRAILER',
      headers: { 'content-encoding': 'aws-chunked', 'x-amz-decoded-content-length': String(data.length), 'x-amz-trailer': 'x-amz-checksum-crc32', 'content-length': String(body.length) },
    });
    const { answer: r, streamed } = await putFailingAtTheEnd(path, headers, body);
    expect([r.status, errorCode(r.body)]).toEqual([400, 'BadDigest']);
    expect(streamed, 'the body streamed upstream').toBeGreaterThan(MiB);
    await absentUpstream('bad-trailer');
  });

  it('a wrong chunk signature → 403 SignatureDoesNotMatch', async () => {
    const data = randomBytes(2 * MiB);
    const chunk = 64 * 1024;
    const path = `/${bucket}/bad-chunk`;
    const dummy = encodeChunked(data, chunk, { signatureFor: () => '0'.repeat(64) });
    const { headers } = await signRequest(casket.url, casket.admin, {
      method: 'PUT',
      path,
      payloadHash: 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD',
      headers: { 'content-encoding': 'aws-chunked', 'x-amz-decoded-content-length': String(data.length), 'content-length': String(dummy.length) },
    });
    const amzDate = headers['x-amz-date']!;
    const seed = /Signature=([0-9a-f]{64})/.exec(headers.authorization!)![1]!;
    const signer = chunkSigner(signingKeyFor(casket.admin.secretAccessKey, amzDate.slice(0, 8), 'us-east-1', 's3'), amzDate, `${amzDate.slice(0, 8)}/us-east-1/s3/aws4_request`, seed);
    const body = Buffer.from(encodeChunked(data, chunk, { signatureFor: (c) => signer.chunk(c) }));
    // One flipped byte in the last data chunk: its signature no longer matches.
    body[body.length - 200] = body[body.length - 200]! ^ 1;
    const { answer: r, streamed } = await putFailingAtTheEnd(path, headers, body);
    expect([r.status, errorCode(r.body)]).toEqual([403, 'SignatureDoesNotMatch']);
    expect(streamed, 'the body streamed upstream').toBeGreaterThan(MiB);
    await absentUpstream('bad-chunk');
  });

  it('a client that disconnects mid-body', async () => {
    const body = randomBytes(8 * MiB);
    const before = relay.sent();
    const from = casket.logs.length;
    const { req, answer } = await startUnsignedPut('cut', body, 6 * MiB);
    answer.catch(() => {});
    await until(() => relay.sent() - before >= 5 * MiB, 'the upstream to receive the first 5 MiB');
    req.destroy();
    await logged('cut', from);
    await absentUpstream('cut');
    // casket keeps serving, on the same upstream connections.
    const after = await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}/cut`, payloadHash: 'UNSIGNED-PAYLOAD', body });
    expect([after.status, after.headers.etag]).toEqual([200, quoted(body)]);
  });
});

describe('the ETag index lost', () => {
  it('a casket with an empty index serves a streamed object with its SHA-256 ETag (computed by reading it)', async () => {
    const body = randomBytes(3 * MiB + 1);
    const put = await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}/indexed`, payloadHash: 'UNSIGNED-PAYLOAD', headers: { 'x-amz-checksum-crc32': checksumOf('crc32', body).toString('base64') }, body });
    expect([put.status, put.headers.etag]).toEqual([200, quoted(body)]);
    // Another casket process on its own data dir: its state store has never seen the object.
    const other = await startCasket({ upstream });
    try {
      const s = sdk(other.url, other.admin);
      const list = await s.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'indexed' }));
      expect(list.Contents?.map((o) => o.ETag)).toEqual([quoted(body)]);
      const head = await s.send(new HeadObjectCommand({ Bucket: bucket, Key: 'indexed', ChecksumMode: 'ENABLED' }));
      // A checksum sent as a header went with the object: it outlives the index.
      expect([head.ETag, head.ChecksumCRC32]).toEqual([quoted(body), checksumOf('crc32', body).toString('base64')]);
      const get = await s.send(new GetObjectCommand({ Bucket: bucket, Key: 'indexed' }));
      expect([get.ETag, sha(await bytes(get.Body))]).toEqual([quoted(body), sha(body)]);
      s.destroy();
    } finally {
      await other.stop();
    }
  });
});
