import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { PassThrough, Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createChecksum, type ChecksumAlgorithm } from '../../src/vocabulary/checksums.js';
import { createPayload, validatePayloadHeaders, type PayloadOptions } from '../../src/auth/payload.js';
import { verifySigV4, type AuthResult } from '../../src/auth/sigv4.js';
import type { Payload } from '../../src/backends/types.js';
import { S3Error, type S3ErrorCode } from '../../src/vocabulary/errors.js';
import { ALICE, chunkSigner, encodeChunked, lookup, signHeader } from './helpers.js';

const NOW = new Date('2026-03-01T12:00:00Z');
const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest();
const md5b64 = (b: Buffer | string) => createHash('md5').update(b).digest('base64');
function checksumB64(algorithm: ChecksumAlgorithm, data: Buffer): string {
  const c = createChecksum(algorithm);
  c.update(data);
  return c.digest().toString('base64');
}

function literalAuth(hashHex: string): AuthResult {
  return { credential: ALICE, presigned: false, payloadMode: 'literal', declaredSha256: hashHex, signedHeaders: ['host'], region: 'us-east-1' };
}
const UNSIGNED: AuthResult = { credential: ALICE, presigned: false, payloadMode: 'unsigned', signedHeaders: ['host'], region: 'us-east-1' };

/** Consumes the payload as a backend would (stream.pipeline); resolves the bytes, or rejects, and tells whether 'end' fired. */
async function consume(payload: Payload): Promise<{ data?: Buffer; error?: S3Error; ended: boolean }> {
  const chunks: Buffer[] = [];
  let ended = false;
  payload.stream.on('end', () => (ended = true));
  try {
    await pipeline(payload.stream, new Writable({ write: (c, _e, cb) => (chunks.push(c), cb()) }));
    return { data: Buffer.concat(chunks), ended };
  } catch (error) {
    return { error: error as S3Error, ended };
  }
}

async function run(body: Buffer | Buffer[], options: PayloadOptions) {
  const payload = createPayload(Readable.from(Array.isArray(body) ? body : [body]), options);
  return { payload, ...(await consume(payload)) };
}

async function expectFailure(body: Buffer | Buffer[], options: PayloadOptions, code: S3ErrorCode, message?: RegExp): Promise<S3Error> {
  const r = await run(body, options);
  expect(r.error, `expected ${code}`).toBeInstanceOf(S3Error);
  expect(r.error!.code).toBe(code);
  if (message) expect(r.error!.message).toMatch(message);
  // Raised before 'end': a consumer never sees success.
  expect(r.ended).toBe(false);
  expect(() => r.payload.digest()).toThrow();
  return r.error!;
}

function expectThrows(fn: () => unknown, code: S3ErrorCode): void {
  expect(fn).toThrow(expect.objectContaining({ name: 'S3Error', code }));
}

const BODY = Buffer.from('hello world');

describe('payload: plain bodies', () => {
  it('literal SHA-256 that matches: bytes through, digest with sha256 and size', async () => {
    const r = await run(BODY, { auth: literalAuth(sha256(BODY).toString('hex')), headers: { 'content-length': '11' } });
    expect(r.data?.toString()).toBe('hello world');
    expect(r.ended).toBe(true);
    expect(r.payload.digest()).toEqual({ sha256: sha256(BODY), size: 11 });
  });

  it('literal SHA-256 mismatch → XAmzContentSHA256Mismatch before end', async () => {
    const err = await expectFailure(BODY, { auth: literalAuth(sha256('other').toString('hex')), headers: {} }, 'XAmzContentSHA256Mismatch');
    expect(err.fields['S3ComputedContentSHA256']).toBe(sha256(BODY).toString('hex'));
  });

  it('anonymous requests: a declared literal hash is still checked', async () => {
    await expectFailure(BODY, { auth: null, headers: { 'x-amz-content-sha256': sha256('x').toString('hex') } }, 'XAmzContentSHA256Mismatch');
    const ok = await run(BODY, { auth: null, headers: {} });
    expect(ok.payload.digest().size).toBe(11);
  });

  it('Content-MD5: verified, mismatch → BadDigest, malformed → InvalidDigest up front', async () => {
    const ok = await run(BODY, { auth: UNSIGNED, headers: { 'content-md5': md5b64(BODY) } });
    expect(ok.payload.digest().md5?.toString('base64')).toBe(md5b64(BODY));
    await expectFailure(BODY, { auth: UNSIGNED, headers: { 'content-md5': md5b64('nope') } }, 'BadDigest', /Content-MD5/);
    for (const bad of ['abc', md5b64(BODY).slice(0, -2), Buffer.alloc(15).toString('base64')]) {
      expectThrows(() => validatePayloadHeaders({ 'content-md5': bad }, UNSIGNED), 'InvalidDigest');
      expectThrows(() => createPayload(Readable.from([BODY]), { auth: UNSIGNED, headers: { 'content-md5': bad } }), 'InvalidDigest');
    }
  });

  it('md5: true computes the MD5 (part ETags) without Content-MD5', async () => {
    const r = await run(BODY, { auth: UNSIGNED, headers: {}, md5: true });
    expect(r.payload.digest().md5?.toString('hex')).toBe('5eb63bbbe01eeed093cb22bb8f5acdc3');
  });

  it.each(['crc32', 'crc32c', 'crc64nvme', 'sha1', 'sha256'] as const)('x-amz-checksum-%s header: verified, mismatch → BadDigest', async (algorithm) => {
    const header = `x-amz-checksum-${algorithm}`;
    const ok = await run(BODY, { auth: UNSIGNED, headers: { [header]: checksumB64(algorithm, BODY) } });
    expect(ok.error).toBeUndefined();
    const err = await expectFailure(BODY, { auth: UNSIGNED, headers: { [header]: checksumB64(algorithm, Buffer.from('other')) } }, 'BadDigest');
    expect(err.message).toBe(`The ${algorithm.toUpperCase()} you specified did not match the calculated checksum.`);
  });

  it('checksum headers: malformed → BadDigest (no body can match it); several, or disagreeing with x-amz-sdk-checksum-algorithm → InvalidRequest; all up front', () => {
    expectThrows(() => validatePayloadHeaders({ 'x-amz-checksum-crc32': 'zzz' }, UNSIGNED), 'BadDigest');
    expectThrows(() => validatePayloadHeaders({ 'x-amz-checksum-crc32': 'DUoRhQ==', 'x-amz-checksum-crc32c': 'AAAAAA==' }, UNSIGNED), 'InvalidRequest');
    expectThrows(() => validatePayloadHeaders({ 'x-amz-checksum-crc32': 'DUoRhQ==', 'x-amz-sdk-checksum-algorithm': 'SHA256' }, UNSIGNED), 'InvalidRequest');
    validatePayloadHeaders({ 'x-amz-checksum-crc32': 'DUoRhQ==', 'x-amz-sdk-checksum-algorithm': 'CRC32', 'x-amz-checksum-type': 'FULL_OBJECT' }, UNSIGNED);
  });

  it('lengths: fewer or more bytes than Content-Length → IncompleteBody; over 5 GiB → EntityTooLarge up front', async () => {
    await expectFailure(BODY, { auth: UNSIGNED, headers: { 'content-length': '12' } }, 'IncompleteBody');
    await expectFailure(BODY, { auth: UNSIGNED, headers: { 'content-length': '10' } }, 'IncompleteBody');
    expectThrows(() => validatePayloadHeaders({ 'content-length': String(5 * 1024 ** 3 + 1) }, UNSIGNED), 'EntityTooLarge');
    validatePayloadHeaders({ 'content-length': String(5 * 1024 ** 3) }, UNSIGNED);
    expectThrows(() => validatePayloadHeaders({ 'content-length': '-1' }, UNSIGNED), 'InvalidArgument');
  });

  it('Transfer-Encoding: chunked, no Content-Length: the size limit holds as the bytes arrive, digests are checked', async () => {
    const chunked = { 'transfer-encoding': 'chunked' };
    const ok = await run([BODY.subarray(0, 3), BODY.subarray(3)], { auth: UNSIGNED, headers: chunked, maxSize: BODY.length });
    expect(ok.data).toEqual(BODY);
    await expectFailure([BODY, Buffer.from('x')], { auth: UNSIGNED, headers: chunked, maxSize: BODY.length }, 'EntityTooLarge');
    await expectFailure(BODY, { auth: UNSIGNED, headers: { ...chunked, 'content-md5': md5b64('other') } }, 'BadDigest');
    await expectFailure(BODY, { auth: literalAuth(sha256('other').toString('hex')), headers: chunked }, 'XAmzContentSHA256Mismatch');
  });

  it('a source that errors or closes early (client gone) → IncompleteBody before end', async () => {
    const source = new PassThrough();
    const payload = createPayload(source, { auth: UNSIGNED, headers: { 'content-length': '100' } });
    const result = consume(payload);
    source.write(Buffer.alloc(10));
    setImmediate(() => source.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' })));
    const r = await result;
    expect(r.error?.code).toBe('IncompleteBody');
    expect(r.ended).toBe(false);

    const closing = new PassThrough();
    const p2 = createPayload(closing, { auth: UNSIGNED, headers: {} });
    const r2p = consume(p2);
    closing.write(Buffer.alloc(10));
    setImmediate(() => closing.destroy());
    const r2 = await r2p;
    expect(r2.error?.code).toBe('IncompleteBody');
    expect(r2.ended).toBe(false);
  });
});

describe('payload: aws-chunked bodies', () => {
  const data = Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 31) & 0xff));
  const sdkHeaders = (algorithm: ChecksumAlgorithm = 'crc32') => ({
    'content-encoding': 'aws-chunked',
    'transfer-encoding': 'chunked',
    'x-amz-decoded-content-length': String(data.length),
    'x-amz-trailer': `x-amz-checksum-${algorithm}`,
    'x-amz-content-sha256': 'STREAMING-UNSIGNED-PAYLOAD-TRAILER',
  });
  const unsignedTrailer: AuthResult = { ...UNSIGNED, payloadMode: 'streaming-unsigned-trailer' };

  it.each(['crc32', 'crc32c', 'crc64nvme', 'sha1', 'sha256'] as const)('the SDK unsigned-trailer form with %s decodes and verifies', async (algorithm) => {
    const body = encodeChunked(data, 1024, { trailers: `x-amz-checksum-${algorithm}:${checksumB64(algorithm, data)}\r\n` });
    const r = await run(body, { auth: unsignedTrailer, headers: sdkHeaders(algorithm) });
    expect(r.error).toBeUndefined();
    expect(r.data?.equals(data)).toBe(true);
    // The verified checksum travels with the digest: the store keeps it with the object.
    expect(r.payload.digest()).toEqual({ sha256: sha256(data), size: data.length, checksum: { algorithm, value: Buffer.from(checksumB64(algorithm, data), 'base64') } });
  });

  it('trailer checksum mismatch or malformed → BadDigest; missing trailer → IncompleteBody', async () => {
    const wrong = encodeChunked(data, 1024, { trailers: `x-amz-checksum-crc32:${checksumB64('crc32', BODY)}\r\n` });
    await expectFailure(wrong, { auth: unsignedTrailer, headers: sdkHeaders() }, 'BadDigest', /CRC32/);
    const missing = encodeChunked(data, 1024);
    await expectFailure(missing, { auth: unsignedTrailer, headers: sdkHeaders() }, 'IncompleteBody');
    const malformed = encodeChunked(data, 1024, { trailers: 'x-amz-checksum-crc32:!!\r\n' });
    await expectFailure(malformed, { auth: unsignedTrailer, headers: sdkHeaders() }, 'BadDigest');
  });

  it('decoded length must equal x-amz-decoded-content-length, which is required', async () => {
    const body = encodeChunked(data, 1024, { trailers: `x-amz-checksum-crc32:${checksumB64('crc32', data)}\r\n` });
    await expectFailure(body, { auth: unsignedTrailer, headers: { ...sdkHeaders(), 'x-amz-decoded-content-length': String(data.length + 1) } }, 'IncompleteBody');
    await expectFailure(body, { auth: unsignedTrailer, headers: { ...sdkHeaders(), 'x-amz-decoded-content-length': String(data.length - 1) } }, 'IncompleteBody');
    const { 'x-amz-decoded-content-length': _, ...noLength } = sdkHeaders();
    expectThrows(() => validatePayloadHeaders(noLength, unsignedTrailer), 'MissingContentLength');
  });

  it('x-amz-trailer naming something other than one checksum → InvalidRequest', () => {
    expectThrows(() => validatePayloadHeaders({ ...sdkHeaders(), 'x-amz-trailer': 'x-amz-meta-foo' }, unsignedTrailer), 'InvalidRequest');
    expectThrows(() => validatePayloadHeaders({ ...sdkHeaders(), 'x-amz-trailer': 'x-amz-checksum-crc32,x-amz-checksum-sha1' }, unsignedTrailer), 'InvalidRequest');
    expectThrows(() => validatePayloadHeaders({ 'x-amz-trailer': 'x-amz-checksum-crc32' }, UNSIGNED), 'InvalidRequest');
  });

  it('Content-Encoding: aws-chunked with UNSIGNED-PAYLOAD (SDK for Java v2) is decoded too', async () => {
    const body = encodeChunked(data, 700);
    const r = await run(body, { auth: UNSIGNED, headers: { 'content-encoding': 'aws-chunked, gzip', 'x-amz-decoded-content-length': String(data.length) } });
    expect(r.data?.equals(data)).toBe(true);
  });

  it('broken framing surfaces as IncompleteBody through the payload', async () => {
    const body = encodeChunked(data, 1024, { trailers: `x-amz-checksum-crc32:${checksumB64('crc32', data)}\r\n` });
    await expectFailure(body.subarray(0, 2000), { auth: unsignedTrailer, headers: sdkHeaders() }, 'IncompleteBody');
  });

  it('signed streaming with a signed trailer, end to end from a smithy-signed request', async () => {
    const crc = checksumB64('crc64nvme', data);
    const req = await signHeader(
      ALICE,
      {
        method: 'PUT',
        path: '/bucket/key',
        headers: {
          'x-amz-content-sha256': 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER',
          'content-encoding': 'aws-chunked',
          'x-amz-decoded-content-length': String(data.length),
          'x-amz-trailer': 'x-amz-checksum-crc64nvme',
        },
      },
      { signingDate: NOW },
    );
    const auth = verifySigV4(req, lookup, NOW)!;
    const { signingKey, amzDate, scope, seedSignature } = auth.chunkSigning!;
    const makeBody = (trailerValue: string, tamper?: (b: Buffer) => void) => {
      const s = chunkSigner(signingKey, amzDate, scope, seedSignature);
      const body = encodeChunked(data, 2048, { signatureFor: (c) => s.chunk(c), finalLine: false });
      tamper?.(body);
      const trailer = `x-amz-checksum-crc64nvme:${trailerValue}`;
      return Buffer.concat([body, Buffer.from(`${trailer}\r\nx-amz-trailer-signature:${s.trailer(`${trailer}\n`)}\r\n\r\n`)]);
    };
    const ok = await run(makeBody(crc), { auth, headers: req.headers });
    expect(ok.error).toBeUndefined();
    expect(ok.data?.equals(data)).toBe(true);
    // A correctly signed but wrong checksum: BadDigest.
    await expectFailure(makeBody(checksumB64('crc64nvme', BODY)), { auth, headers: req.headers }, 'BadDigest');
    // A byte changed in transit: SignatureDoesNotMatch.
    await expectFailure(makeBody(crc, (b) => {
      b[500] = b[500]! ^ 1;
    }), { auth, headers: req.headers }, 'SignatureDoesNotMatch');
  });
});

describe('payload: memory and backpressure', () => {
  it('streams 256 MiB with bounded buffering and small memory growth', async () => {
    const total = 256 * 1024 * 1024;
    const piece = 64 * 1024;
    let produced = 0;
    let consumed = 0;
    let maxLag = 0;
    const source = new Readable({
      read() {
        if (produced >= total) return void this.push(null);
        produced += piece;
        this.push(Buffer.allocUnsafe(piece).fill(produced & 0xff));
      },
    });
    const before = process.memoryUsage();
    let peakRss = before.rss;
    const payload = createPayload(source, { auth: UNSIGNED, headers: { 'content-length': String(total) } });
    await pipeline(
      payload.stream,
      new Writable({
        highWaterMark: piece,
        write(chunk: Buffer, _e, cb) {
          consumed += chunk.length;
          maxLag = Math.max(maxLag, produced - consumed);
          if ((consumed & (16 * 1024 * 1024 - 1)) === 0) peakRss = Math.max(peakRss, process.memoryUsage().rss);
          // A slow consumer: every 1 MiB yield to the event loop.
          if ((consumed & (1024 * 1024 - 1)) === 0) setImmediate(cb);
          else cb();
        },
      }),
    );
    expect(payload.digest().size).toBe(total);
    // The source is never more than a few buffers ahead of the consumer.
    expect(maxLag).toBeLessThanOrEqual(1024 * 1024);
    expect(peakRss - before.rss).toBeLessThan(96 * 1024 * 1024);
  });

  it('streams 64 MiB of aws-chunked (1 MiB chunks, crc32 trailer) with bounded buffering', async () => {
    const chunk = 1024 * 1024;
    const count = 64;
    const crc = createChecksum('crc32');
    let sent = 0;
    let produced = 0;
    let consumed = 0;
    let maxLag = 0;
    const source = new Readable({
      read() {
        if (sent < count) {
          const data = Buffer.alloc(chunk, sent);
          crc.update(data);
          sent++;
          produced += chunk;
          this.push(Buffer.from(`${chunk.toString(16)}\r\n`));
          this.push(data);
          this.push(Buffer.from('\r\n'));
        } else if (sent === count) {
          sent++;
          this.push(Buffer.from(`0\r\nx-amz-checksum-crc32:${crc.digest().toString('base64')}\r\n\r\n`));
          this.push(null);
        }
      },
    });
    const payload = createPayload(source, {
      auth: { ...UNSIGNED, payloadMode: 'streaming-unsigned-trailer' },
      headers: { 'content-encoding': 'aws-chunked', 'x-amz-decoded-content-length': String(chunk * count), 'x-amz-trailer': 'x-amz-checksum-crc32' },
    });
    await pipeline(
      payload.stream,
      new Writable({
        write(c: Buffer, _e, cb) {
          consumed += c.length;
          maxLag = Math.max(maxLag, produced - consumed);
          setImmediate(cb);
        },
      }),
    );
    expect(payload.digest().size).toBe(chunk * count);
    // At most the chunk being read plus the one the source just produced.
    expect(maxLag).toBeLessThanOrEqual(2 * chunk);
  });
});
