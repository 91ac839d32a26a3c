/**
 * UploadPart bodies of known length go upstream as they arrive
 * (src/backends/s3/multipart.ts uploadStreamed), as PutObject bodies do
 * (streamed-uploads.test.ts), through a real casket in front of a real
 * upstream (moto by default, Ceph RGW with CASKET_TEST_UPSTREAM=rgw), reached
 * through a relay that counts the bytes casket sends it:
 * - a part sent unsigned, aws-chunked with a CRC32 trailer, with a signed
 *   literal SHA-256 and in signed chunks each reaches the upstream while the
 *   client is still sending it, nothing spooled; the upload completes to
 *   casket's `<sha256 of part sha256s>-N` ETag and the bytes sent;
 * - a wrong CRC32 trailer, a wrong chunk signature, or a client that goes
 *   away mid-part leave the upstream's part as it was (asked of the upstream
 *   itself: ListParts), though most of the part reached it, and Complete
 *   naming that part is InvalidPart;
 * - one part number uploaded several times at once, with different bodies:
 *   the object's bytes and its ETag agree (recomputed from a GET), and a
 *   part replaced around casket is refused, never shown under another's digest.
 */
import { CreateMultipartUploadCommand, GetObjectCommand, HeadObjectCommand, ListPartsCommand, S3Client, UploadPartCommand } from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { request as httpRequest, type ClientRequest } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signingKeyFor } from '../../../src/auth/sigv4.js';
import { checksumOf } from '../../../src/vocabulary/checksums.js';
import { chunkSigner, encodeChunked } from '../../auth/helpers.js';
import type { RunningCasket } from '../../helpers/casket.js';
import { bytes } from '../../helpers/clients.js';
import { until } from '../../helpers/poll.js';
import { errorCode, raw, signRequest, type RawResponse } from '../../helpers/raw.js';
import { relayedCasket, type CountingRelay, type RelayedCasket } from '../../helpers/counting-relay.js';
import type { Upstream } from '../../helpers/upstream.js';

const MiB = 1024 * 1024;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');
/** casket's ETag of a multipart object: the SHA-256 of the parts' SHA-256s, -N. */
const multipartETag = (parts: Buffer[]) => `"${createHash('sha256').update(Buffer.concat(parts.map((p) => createHash('sha256').update(p).digest()))).digest('hex')}-${parts.length}"`;
const unquote = (etag: string | undefined) => (etag ?? '').replace(/"/g, '');
const bucket = 'streamed-parts';

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

async function createUpload(key: string): Promise<string> {
  return (await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }))).UploadId!;
}

const partPath = (key: string, uploadId: string, n: number) => `/${bucket}/${key}?partNumber=${n}&uploadId=${encodeURIComponent(uploadId)}`;

/** The part ETags the upstream itself lists (asked directly, not through casket). */
async function upstreamParts(key: string, uploadId: string): Promise<Record<number, string>> {
  const r = await direct.send(new ListPartsCommand({ Bucket: bucket, Key: key, UploadId: uploadId }));
  return Object.fromEntries((r.Parts ?? []).map((p) => [p.PartNumber!, unquote(p.ETag)]));
}

function complete(key: string, uploadId: string, parts: Array<[number, string]>): Promise<RawResponse> {
  const xml = `<CompleteMultipartUpload>${parts.map(([n, etag]) => `<Part><PartNumber>${n}</PartNumber><ETag>"${etag}"</ETag></Part>`).join('')}</CompleteMultipartUpload>`;
  return raw(casket.url, casket.admin, { method: 'POST', path: `/${bucket}/${key}?uploadId=${encodeURIComponent(uploadId)}`, body: xml });
}

function spooled(): number {
  return readdirSync(join(casket.dataDir, 'spool')).length;
}

type Mode = 'unsigned' | 'trailer' | 'literal' | 'signed chunks';

/** A signed UploadPart request carrying `data` the way `mode` says; `spoil` breaks its trailer or a chunk signature. */
async function prepare(mode: Mode, path: string, data: Buffer, spoil?: 'trailer' | 'chunk'): Promise<{ headers: Record<string, string>; body: Buffer }> {
  const length = { 'content-length': String(data.length) };
  if (mode === 'unsigned') return { headers: (await signRequest(casket.url, casket.admin, { method: 'PUT', path, payloadHash: 'UNSIGNED-PAYLOAD', headers: length })).headers, body: data };
  if (mode === 'literal') return { headers: (await signRequest(casket.url, casket.admin, { method: 'PUT', path, payloadHash: sha(data), headers: length })).headers, body: data };
  const aws = { 'content-encoding': 'aws-chunked', 'x-amz-decoded-content-length': String(data.length) };
  if (mode === 'trailer') {
    const crc = spoil === 'trailer' ? 'AAAAAA==' : checksumOf('crc32', data).toString('base64');
    const body = encodeChunked(data, 64 * 1024, { trailers: `x-amz-checksum-crc32:${crc}\r\n` });
    const { headers } = await signRequest(casket.url, casket.admin, {
      method: 'PUT',
      path,
      payloadHash: 'STREAMING-UNSIGNED-PAYLOAD-TRAILER',
      headers: { ...aws, 'x-amz-trailer': 'x-amz-checksum-crc32', 'content-length': String(body.length) },
    });
    return { headers, body };
  }
  const chunk = 64 * 1024;
  const dummy = encodeChunked(data, chunk, { signatureFor: () => '0'.repeat(64) });
  const { headers } = await signRequest(casket.url, casket.admin, { method: 'PUT', path, payloadHash: 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD', headers: { ...aws, 'content-length': String(dummy.length) } });
  const amzDate = headers['x-amz-date']!;
  const seed = /Signature=([0-9a-f]{64})/.exec(headers.authorization!)![1]!;
  const signer = chunkSigner(signingKeyFor(casket.admin.secretAccessKey, amzDate.slice(0, 8), 'us-east-1', 's3'), amzDate, `${amzDate.slice(0, 8)}/us-east-1/s3/aws4_request`, seed);
  const body = Buffer.from(encodeChunked(data, chunk, { signatureFor: (c) => signer.chunk(c) }));
  // One flipped byte in the last data chunk: its signature no longer matches.
  if (spoil === 'chunk') body[body.length - 200] = body[body.length - 200]! ^ 1;
  return { headers, body };
}

/** Starts sending a prepared request: its first `first` bytes; the test finishes or cuts it. */
function start(path: string, prepared: { headers: Record<string, string>; body: Buffer }, first: number): { req: ClientRequest; answer: Promise<RawResponse> } {
  const u = new URL(casket.url);
  let req!: ClientRequest;
  const answer = new Promise<RawResponse>((resolve, reject) => {
    req = httpRequest({ host: u.hostname, port: u.port, method: 'PUT', path, headers: prepared.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
  req.write(prepared.body.subarray(0, first));
  return { req, answer };
}

/**
 * Sends a part in two goes: three quarters, then — once the upstream has
 * received half of the part while the client still holds the rest back
 * (received whole first, it would have received none) — the rest.
 */
async function sendStreaming(mode: Mode, path: string, data: Buffer, spoil?: 'trailer' | 'chunk'): Promise<RawResponse> {
  const prepared = await prepare(mode, path, data, spoil);
  const before = relay.sent();
  const { req, answer } = start(path, prepared, Math.floor((prepared.body.length * 3) / 4));
  await until(() => relay.sent() - before >= data.length / 2, `the upstream to receive half of the ${mode} part while the client still holds a quarter back`);
  expect(spooled(), 'nothing spooled to disk').toBe(0);
  req.end(prepared.body.subarray(Math.floor((prepared.body.length * 3) / 4)));
  return answer;
}

describe('an UploadPart body of known length streams upstream as it arrives', () => {
  it('unsigned, aws-chunked with a CRC32 trailer, signed SHA-256, signed chunks: each streams, and the upload completes to the right ETag and bytes', async () => {
    const key = 'four-ways';
    const id = await createUpload(key);
    const modes: Mode[] = ['unsigned', 'trailer', 'literal', 'signed chunks'];
    // Every part but the last at least 5 MiB (S3's minimum).
    const data = [randomBytes(5 * MiB + 3), randomBytes(5 * MiB), randomBytes(5 * MiB + 1), randomBytes(MiB + 7)];
    for (const [i, mode] of modes.entries()) {
      const r = await sendStreaming(mode, partPath(key, id, i + 1), data[i]!);
      expect([r.status, r.headers.etag], `${mode}: ${r.body}`).toEqual([200, `"${md5(data[i]!)}"`]);
      if (mode === 'trailer') expect(r.headers['x-amz-checksum-crc32']).toBe(checksumOf('crc32', data[i]!).toString('base64'));
    }
    // The upstream holds exactly these parts; casket lists the same, one per part number.
    expect(await upstreamParts(key, id)).toEqual(Object.fromEntries(data.map((d, i) => [i + 1, md5(d)])));
    const listed = await s3.send(new ListPartsCommand({ Bucket: bucket, Key: key, UploadId: id }));
    expect(listed.Parts?.map((p) => [p.PartNumber, unquote(p.ETag), p.Size])).toEqual(data.map((d, i) => [i + 1, md5(d), d.length]));

    const done = await complete(key, id, data.map((d, i) => [i + 1, md5(d)]));
    expect(done.status, done.body).toBe(200);
    const etag = multipartETag(data);
    expect(done.body).toContain(`<ETag>${etag.replace(/"/g, '&quot;')}</ETag>`);
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
    expect([head.ETag, head.ContentLength]).toEqual([etag, data.reduce((n, d) => n + d.length, 0)]);
    const get = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    expect([get.ETag, sha(await bytes(get.Body))]).toEqual([etag, sha(Buffer.concat(data))]);
  });

  it('an SDK\'s UploadPartCommand (its default checksum) completes to the right ETag and bytes', async () => {
    const key = 'sdk';
    const id = await createUpload(key);
    const data = randomBytes(2 * MiB + 5);
    const part = await s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId: id, PartNumber: 1, Body: data, ContentLength: data.length }));
    expect(unquote(part.ETag)).toBe(md5(data));
    const done = await complete(key, id, [[1, md5(data)]]);
    expect(done.status, done.body).toBe(200);
    const get = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    expect([get.ETag, sha(await bytes(get.Body))]).toEqual([multipartETag([data]), sha(data)]);
  });
});

describe('a streamed part that fails leaves the upstream part as it was, and Complete naming it is InvalidPart', () => {
  /**
   * Part 1 is uploaded whole; then `attempt` sends other bytes for part 1 and
   * for part 2, which fail. The upstream still holds the first part 1 and no
   * part 2; Complete naming either failed part is InvalidPart; with the
   * first part 1 it completes.
   */
  async function leavesNothing(key: string, attempt: (path: string, data: Buffer) => Promise<void>): Promise<void> {
    const id = await createUpload(key);
    const first = randomBytes(5 * MiB);
    const put = await raw(casket.url, casket.admin, { method: 'PUT', path: partPath(key, id, 1), payloadHash: 'UNSIGNED-PAYLOAD', body: first });
    expect(put.status, put.body).toBe(200);
    const other = randomBytes(2 * MiB);
    const second = randomBytes(2 * MiB);
    for (const [n, data] of [[1, other], [2, second]] as const) {
      const before = relay.sent();
      await attempt(partPath(key, id, n), data);
      expect(relay.sent() - before, `part ${n} streamed upstream`).toBeGreaterThan(MiB);
    }
    expect(await upstreamParts(key, id), 'the parts the upstream holds').toEqual({ 1: md5(first) });
    for (const parts of [[[1, md5(other)]], [[1, md5(first)], [2, md5(second)]]] as Array<Array<[number, string]>>) {
      const r = await complete(key, id, parts);
      expect([r.status, errorCode(r.body)], JSON.stringify(parts)).toEqual([400, 'InvalidPart']);
    }
    const done = await complete(key, id, [[1, md5(first)]]);
    expect(done.status, done.body).toBe(200);
    const get = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    expect([get.ETag, sha(await bytes(get.Body))]).toEqual([multipartETag([first]), sha(first)]);
  }

  it('a wrong CRC32 trailer → 400 BadDigest', async () => {
    await leavesNothing('bad-trailer', async (path, data) => {
      const r = await sendStreaming('trailer', path, data, 'trailer');
      expect([r.status, errorCode(r.body)]).toEqual([400, 'BadDigest']);
    });
  });

  it('a wrong chunk signature → 403 SignatureDoesNotMatch', async () => {
    await leavesNothing('bad-chunk', async (path, data) => {
      const r = await sendStreaming('signed chunks', path, data, 'chunk');
      expect([r.status, errorCode(r.body)]).toEqual([403, 'SignatureDoesNotMatch']);
    });
  });

  it('a client that disconnects mid-part', async () => {
    await leavesNothing('cut', async (path, data) => {
      const prepared = await prepare('unsigned', path, data);
      const before = relay.sent();
      const from = casket.logs.length;
      const { req, answer } = start(path, prepared, Math.floor((data.length * 3) / 4));
      answer.catch(() => {});
      await until(() => relay.sent() - before >= data.length / 2, 'the upstream to receive half of the part');
      req.destroy();
      await until(() => casket.logs.slice(from).some((line) => line.includes('"operation":"UploadPart"')), 'casket to log the end of the cut UploadPart');
    });
  });
});

describe('one part number uploaded several times at once', () => {
  /** The object's ETag (Complete, HEAD, GET) is the one its stored bytes make, and casket's ListParts agreed with the upstream before. */
  async function agrees(key: string, id: string, sent: Buffer[]): Promise<void> {
    const kept = (await upstreamParts(key, id))[1];
    const listed = await s3.send(new ListPartsCommand({ Bucket: bucket, Key: key, UploadId: id }));
    expect(listed.Parts?.map((p) => [p.PartNumber, unquote(p.ETag)]), 'casket lists the part the upstream kept, once').toEqual([[1, kept]]);
    // The client lists every ETag it got for the part (as Ceph's s3-tests do).
    const done = await complete(key, id, sent.map((d) => [1, md5(d)]));
    expect(done.status, done.body).toBe(200);
    const get = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    const stored = await bytes(get.Body);
    expect(sent.map(sha), 'the stored bytes are one of the bodies sent').toContain(sha(stored));
    expect(md5(stored)).toBe(kept);
    const etag = multipartETag([stored]);
    expect(get.ETag).toBe(etag);
    expect(done.body).toContain(`<ETag>${etag.replace(/"/g, '&quot;')}</ETag>`);
    expect((await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }))).ETag).toBe(etag);
  }

  it('the one started first finishes last: it is the part, and the ETag is its', async () => {
    const key = 'overlap';
    const id = await createUpload(key);
    const early = randomBytes(2 * MiB);
    const late = randomBytes(2 * MiB);
    const path = partPath(key, id, 1);
    const before = relay.sent();
    const { req, answer } = start(path, await prepare('unsigned', path, early), (early.length * 3) / 4);
    await until(() => relay.sent() - before >= early.length / 2, 'the upstream to receive half of the first upload');
    // The second upload of part 1 starts and ends while the first is in flight: no lock makes it wait.
    const second = await raw(casket.url, casket.admin, { method: 'PUT', path, payloadHash: 'UNSIGNED-PAYLOAD', body: late });
    expect([second.status, second.headers.etag], second.body).toEqual([200, `"${md5(late)}"`]);
    req.end(early.subarray((early.length * 3) / 4));
    const first = await answer;
    expect([first.status, first.headers.etag], first.body).toEqual([200, `"${md5(early)}"`]);
    expect(await upstreamParts(key, id)).toEqual({ 1: md5(early) });
    await agrees(key, id, [early, late]);
  });

  it('eight at once, in whatever order they land', async () => {
    for (const round of [1, 2]) {
      const key = `race-${round}`;
      const id = await createUpload(key);
      const bodies = Array.from({ length: 8 }, () => randomBytes(256 * 1024 + round));
      const results = await Promise.all(bodies.map((body) => raw(casket.url, casket.admin, { method: 'PUT', path: partPath(key, id, 1), payloadHash: 'UNSIGNED-PAYLOAD', body })));
      expect(results.map((r) => [r.status, r.headers.etag]), results.map((r) => r.body).join('\n')).toEqual(bodies.map((b) => [200, `"${md5(b)}"`]));
      await agrees(key, id, bodies);
    }
  });

  it('a part replaced around casket (straight to the upstream) is refused, never completed under the digest casket recorded', async () => {
    const key = 'around';
    const id = await createUpload(key);
    const ours = randomBytes(MiB);
    const put = await raw(casket.url, casket.admin, { method: 'PUT', path: partPath(key, id, 1), payloadHash: 'UNSIGNED-PAYLOAD', body: ours });
    expect(put.status, put.body).toBe(200);
    const theirs = randomBytes(MiB);
    await direct.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId: id, PartNumber: 1, Body: theirs }));
    for (const named of [ours, theirs]) {
      const r = await complete(key, id, [[1, md5(named)]]);
      expect([r.status, errorCode(r.body)]).toEqual([400, 'InvalidPart']);
    }
  });
});
