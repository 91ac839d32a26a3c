/**
 * createPayload (src/auth/payload.ts) where payload.test.ts does not look:
 * which bodies are aws-chunked, what an anonymous x-amz-content-sha256
 * declares, the checksum an upload created with x-amz-checksum-algorithm asks
 * of each part, signed streaming with and without a signed trailer, and the
 * words and fields of each IncompleteBody / EntityTooLarge a client reads.
 * Specs: https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutObject.html,
 * .../userguide/checking-object-integrity.html, .../API/sigv4-streaming.html,
 * .../API/sigv4-streaming-trailers.html
 */
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { Duplex, PassThrough, Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createPayload, validatePayloadHeaders, type PayloadOptions } from '../../src/auth/payload.js';
import { signingKeyFor, type AuthResult, type ChunkSigning } from '../../src/auth/sigv4.js';
import type { Payload } from '../../src/backends/types.js';
import { checksumOf } from '../../src/vocabulary/checksums.js';
import { S3Error } from '../../src/vocabulary/errors.js';
import { ALICE, chunkSigner, encodeChunked, expectS3Error } from './helpers.js';

const UNSIGNED: AuthResult = { credential: ALICE, presigned: false, payloadMode: 'unsigned', signedHeaders: ['host'], region: 'us-east-1' };
const UNSIGNED_TRAILER: AuthResult = { ...UNSIGNED, payloadMode: 'streaming-unsigned-trailer' };
const SIGNING: ChunkSigning = {
  signingKey: signingKeyFor('secret', '20260301', 'us-east-1', 's3'),
  amzDate: '20260301T120000Z',
  scope: '20260301/us-east-1/s3/aws4_request',
  seedSignature: 'c0ffee'.padEnd(64, '0'),
};

const BODY = Buffer.from('hello world');
const DATA = Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 7) & 0xff));
const sha256Hex = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const crc32B64 = (b: Buffer) => checksumOf('crc32', b).toString('base64');

/** Consumes the payload as a backend does (stream.pipeline): the bytes it got, or the error. */
async function consume(payload: Payload): Promise<{ data: Buffer; error?: S3Error }> {
  const chunks: Buffer[] = [];
  try {
    await pipeline(payload.stream, new Writable({ write: (c, _e, cb) => (chunks.push(c), cb()) }));
    return { data: Buffer.concat(chunks) };
  } catch (error) {
    return { data: Buffer.concat(chunks), error: error as S3Error };
  }
}

async function run(body: Buffer | Buffer[], options: PayloadOptions) {
  const payload = createPayload(Readable.from(Array.isArray(body) ? body : [body]), options);
  return { payload, ...(await consume(payload)) };
}

async function failure(body: Buffer | Buffer[], options: PayloadOptions): Promise<S3Error> {
  const r = await run(body, options);
  expect(r.error).toBeInstanceOf(S3Error);
  return r.error!;
}

describe('which bodies are aws-chunked', () => {
  // A STREAMING-* x-amz-content-sha256 says the body is aws-chunked by itself;
  // Content-Encoding: aws-chunked is what SDKs send beside it, not what decides.
  it.each<[string, AuthResult | null, Record<string, string>]>([
    ['a signed request with STREAMING-UNSIGNED-PAYLOAD-TRAILER', UNSIGNED_TRAILER, {}],
    ['an anonymous request with STREAMING-UNSIGNED-PAYLOAD-TRAILER', null, { 'x-amz-content-sha256': 'STREAMING-UNSIGNED-PAYLOAD-TRAILER' }],
  ])('%s is decoded without Content-Encoding: aws-chunked', async (_name, auth, headers) => {
    const r = await run(encodeChunked(DATA, 1000), { auth, headers: { ...headers, 'x-amz-decoded-content-length': String(DATA.length) } });
    expect(r.error).toBeUndefined();
    expect(r.data.equals(DATA)).toBe(true);
  });

  it('Content-Encoding naming other codings only (gzip) frames nothing: Content-Length counts and the body is stored as sent', async () => {
    const sent = encodeChunked(BODY, 4);
    const r = await run(sent, { auth: UNSIGNED, headers: { 'content-encoding': 'gzip, br', 'content-length': String(sent.length) } });
    expect(r.error).toBeUndefined();
    expect(r.data.equals(sent)).toBe(true);
  });

  it('an anonymous literal SHA-256 beside Content-Encoding: aws-chunked frames nothing: the body is stored as sent and checked', async () => {
    const sent = encodeChunked(BODY, 4);
    const headers = { 'x-amz-content-sha256': sha256Hex(sent), 'content-encoding': 'aws-chunked', 'content-length': String(sent.length) };
    const r = await run(sent, { auth: null, headers });
    expect(r.error).toBeUndefined();
    expect(r.data.equals(sent)).toBe(true);
  });

  it('an anonymous x-amz-content-sha256 that is no SHA-256 (65 hex digits) declares nothing: an aws-chunked body is decoded as UNSIGNED-PAYLOAD', async () => {
    const headers = { 'x-amz-content-sha256': 'a'.repeat(65), 'content-encoding': 'aws-chunked', 'x-amz-decoded-content-length': String(DATA.length) };
    const r = await run(encodeChunked(DATA, 1000), { auth: null, headers });
    expect(r.error).toBeUndefined();
    expect(r.data.equals(DATA)).toBe(true);
  });
});

describe('an anonymous x-amz-content-sha256 is read as sigv4 reads a signed one: whitespace around it does not hide it', () => {
  it('a padded SHA-256 that does not match → XAmzContentSHA256Mismatch', async () => {
    const err = await failure(BODY, { auth: null, headers: { 'x-amz-content-sha256': ` ${sha256Hex('other')} ` } });
    expect(err.code).toBe('XAmzContentSHA256Mismatch');
  });

  it('a padded STREAMING-AWS4-HMAC-SHA256-PAYLOAD → AccessDenied', () => {
    const headers = { 'x-amz-content-sha256': ' STREAMING-AWS4-HMAC-SHA256-PAYLOAD ', 'content-encoding': 'aws-chunked', 'x-amz-decoded-content-length': '11' };
    expectS3Error(() => validatePayloadHeaders(headers, null), 'AccessDenied');
  });
});

describe('x-amz-trailer', () => {
  const chunked = { 'content-encoding': 'aws-chunked', 'x-amz-decoded-content-length': String(DATA.length) };

  it('an empty element in the list (a trailing comma) names nothing: the one checksum named is read and verified', async () => {
    const headers = { ...chunked, 'x-amz-trailer': 'x-amz-checksum-crc32,' };
    const ok = await run(encodeChunked(DATA, 1000, { trailers: `x-amz-checksum-crc32:${crc32B64(DATA)}\r\n` }), { auth: UNSIGNED_TRAILER, headers });
    expect(ok.error).toBeUndefined();
    expect(ok.payload.digest().checksum).toEqual({ algorithm: 'crc32', value: checksumOf('crc32', DATA) });
    const bad = await failure(encodeChunked(DATA, 1000, { trailers: `x-amz-checksum-crc32:${crc32B64(BODY)}\r\n` }), { auth: UNSIGNED_TRAILER, headers });
    expect(bad.code).toBe('BadDigest');
  });

  it('a checksum beside a name that is no checksum → InvalidRequest for the unsupported name, not for the count', () => {
    const err = expectS3Error(() => validatePayloadHeaders({ ...chunked, 'x-amz-trailer': 'x-amz-checksum-crc32, x-amz-meta-a' }, UNSIGNED_TRAILER), 'InvalidRequest');
    expect(err.message).toBe('The value specified in the x-amz-trailer header is not supported');
  });

  it('the missing trailer is named in the IncompleteBody', async () => {
    const err = await failure(encodeChunked(DATA, 1000), { auth: UNSIGNED_TRAILER, headers: { ...chunked, 'x-amz-trailer': 'x-amz-checksum-crc32' } });
    expect(err.code).toBe('IncompleteBody');
    expect(err.message).toBe('The request body terminated unexpectedly (missing trailing header x-amz-checksum-crc32).');
  });
});

describe('CompleteMultipartUpload (ignoreChecksumHeaders): the x-amz-checksum-* headers describe the object, not the XML body', () => {
  it('are not checked against the body, nor against x-amz-sdk-checksum-algorithm, and no checksum is computed', async () => {
    const headers = { 'x-amz-checksum-crc32': crc32B64(Buffer.from('the whole object')), 'x-amz-sdk-checksum-algorithm': 'CRC32' };
    const r = await run(BODY, { auth: UNSIGNED, headers, ignoreChecksumHeaders: true });
    expect(r.error).toBeUndefined();
    expect(r.payload.digest().checksum).toBeUndefined();
  });
});

describe('UploadPart of an upload created with x-amz-checksum-algorithm (options.checksum)', () => {
  const chunked = { 'content-encoding': 'aws-chunked', 'x-amz-decoded-content-length': String(DATA.length) };

  it('a part that carries no checksum gets one computed: the store keeps it with the part', async () => {
    const r = await run(BODY, { auth: UNSIGNED, headers: { 'content-length': '11' }, checksum: 'crc32' });
    expect(r.error).toBeUndefined();
    expect(r.payload.digest().checksum).toEqual({ algorithm: 'crc32', value: checksumOf('crc32', BODY) });
  });

  it('a part that carries a checksum of that algorithm, as a header or a trailer, is verified against it', async () => {
    const ok = await run(BODY, { auth: UNSIGNED, headers: { 'x-amz-checksum-crc32': crc32B64(BODY) }, checksum: 'crc32' });
    expect(ok.payload.digest().checksum).toEqual({ algorithm: 'crc32', value: checksumOf('crc32', BODY) });
    const trailer = await run(encodeChunked(DATA, 1000, { trailers: `x-amz-checksum-crc32:${crc32B64(DATA)}\r\n` }), {
      auth: UNSIGNED_TRAILER,
      headers: { ...chunked, 'x-amz-trailer': 'x-amz-checksum-crc32' },
      checksum: 'crc32',
    });
    expect(trailer.error).toBeUndefined();
    const bad = await failure(BODY, { auth: UNSIGNED, headers: { 'x-amz-checksum-crc32': crc32B64(DATA) }, checksum: 'crc32' });
    expect(bad.message).toBe('The CRC32 you specified did not match the calculated checksum.');
  });

  it.each<[string, Record<string, string>]>([
    ['header', { 'x-amz-checksum-sha1': createHash('sha1').update(BODY).digest('base64') }],
    ['trailer', { ...chunked, 'x-amz-trailer': 'x-amz-checksum-sha1' }],
  ])("a part that carries another algorithm's checksum (%s) → InvalidRequest before its body", (_where, headers) => {
    const auth = headers['x-amz-trailer'] ? UNSIGNED_TRAILER : UNSIGNED;
    const err = expectS3Error(() => createPayload(Readable.from([BODY]), { auth, headers, checksum: 'crc32' }), 'InvalidRequest');
    expect(err.message).toBe('Checksum Type mismatch occurred, expected checksum Type: crc32, actual checksum Type: sha1');
  });
});

describe('signed streaming (STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER])', () => {
  const headers = { 'content-encoding': 'aws-chunked', 'x-amz-decoded-content-length': String(DATA.length) };

  it('without a trailer: chunk signatures are verified and no trailer signature is asked for', async () => {
    const s = chunkSigner(SIGNING.signingKey, SIGNING.amzDate, SIGNING.scope, SIGNING.seedSignature);
    const body = encodeChunked(DATA, 1024, { signatureFor: (c) => s.chunk(c) });
    const r = await run(body, { auth: { ...UNSIGNED, payloadMode: 'streaming-signed', chunkSigning: SIGNING }, headers });
    expect(r.error).toBeUndefined();
    expect(r.data.equals(DATA)).toBe(true);
  });

  it('with a trailer: a trailer whose x-amz-trailer-signature does not match → SignatureDoesNotMatch', async () => {
    const auth: AuthResult = { ...UNSIGNED, payloadMode: 'streaming-signed-trailer', chunkSigning: SIGNING };
    const withTrailer = { ...headers, 'x-amz-trailer': 'x-amz-checksum-crc32' };
    const body = (sign: (s: ReturnType<typeof chunkSigner>, lines: string) => string) => {
      const s = chunkSigner(SIGNING.signingKey, SIGNING.amzDate, SIGNING.scope, SIGNING.seedSignature);
      const chunks = encodeChunked(DATA, 1024, { signatureFor: (c) => s.chunk(c), finalLine: false });
      const line = `x-amz-checksum-crc32:${crc32B64(DATA)}`;
      return Buffer.concat([chunks, Buffer.from(`${line}\r\nx-amz-trailer-signature:${sign(s, `${line}\n`)}\r\n\r\n`)]);
    };
    const ok = await run(body((s, lines) => s.trailer(lines)), { auth, headers: withTrailer });
    expect(ok.error).toBeUndefined();
    // Signed over other trailer lines than those sent: the checksum may have been swapped in transit.
    const err = await failure(body((s) => s.trailer('x-amz-checksum-crc32:AAAAAA==\n')), { auth, headers: withTrailer });
    expect(err.code).toBe('SignatureDoesNotMatch');
  });
});

describe('lengths as the bytes arrive, in the words a client reads', () => {
  it('bytes past Content-Length are refused as they arrive and never reach the backend', async () => {
    const r = await run([BODY.subarray(0, 10), BODY.subarray(10)], { auth: UNSIGNED, headers: { 'content-length': '10' } });
    expect(r.error?.code).toBe('IncompleteBody');
    expect(r.error?.message).toBe('The body is longer than Content-Length.');
    expect(r.data.length).toBeLessThanOrEqual(10);
  });

  it('decoded bytes past x-amz-decoded-content-length → IncompleteBody saying so', async () => {
    const headers = { 'content-encoding': 'aws-chunked', 'x-amz-decoded-content-length': String(DATA.length - 1) };
    const err = await failure(encodeChunked(DATA, 1000), { auth: UNSIGNED_TRAILER, headers });
    expect(err.code).toBe('IncompleteBody');
    expect(err.message).toBe('The decoded body is longer than x-amz-decoded-content-length.');
  });

  it('a short body → IncompleteBody with S3’s message and both lengths', async () => {
    const err = await failure(BODY, { auth: UNSIGNED, headers: { 'content-length': '12' } });
    expect(err.code).toBe('IncompleteBody');
    expect(err.message).toBe('You did not provide the number of bytes specified by the Content-Length HTTP header.');
    expect(err.fields).toEqual({ ExpectedLength: 12, ReceivedLength: 11 });
  });

  it('a short decoded body → IncompleteBody naming x-amz-decoded-content-length', async () => {
    const headers = { 'content-encoding': 'aws-chunked', 'x-amz-decoded-content-length': String(DATA.length + 1) };
    const err = await failure(encodeChunked(DATA, 1000), { auth: UNSIGNED_TRAILER, headers });
    expect(err.code).toBe('IncompleteBody');
    expect(err.message).toBe('The decoded body length does not match x-amz-decoded-content-length.');
    expect(err.fields).toEqual({ ExpectedLength: DATA.length + 1, ReceivedLength: DATA.length });
  });

  it('a body without a length that outgrows the limit → EntityTooLarge naming MaxSizeAllowed', async () => {
    const err = await failure([BODY, Buffer.from('x')], { auth: UNSIGNED, headers: { 'transfer-encoding': 'chunked' }, maxSize: 11 });
    expect(err.code).toBe('EntityTooLarge');
    expect(err.fields).toEqual({ MaxSizeAllowed: 11 });
  });
});

describe('the source and the consumer going away', () => {
  it('a source that errors → IncompleteBody with S3’s message and the cause', async () => {
    const source = new PassThrough();
    const result = consume(createPayload(source, { auth: UNSIGNED, headers: { 'content-length': '100' } }));
    source.write(Buffer.alloc(10));
    setImmediate(() => source.destroy(new Error('socket hang up')));
    const { error } = await result;
    expect(error?.code).toBe('IncompleteBody');
    expect(error?.message).toBe('You did not provide the number of bytes specified by the Content-Length HTTP header.');
    expect(error?.fields).toEqual({ Cause: 'socket hang up' });
  });

  it('a source whose whole body was read is done: its write side closing afterwards fails nothing', async () => {
    // A half-open duplex (as a socket is): its readable side ended, its writable side is torn down later.
    const source = new Duplex({ allowHalfOpen: true, read() {}, write: (_c, _e, cb) => cb() });
    const payload = createPayload(source, { auth: UNSIGNED, headers: { 'content-length': '11' } });
    source.push(BODY);
    source.push(null);
    await once(source, 'end');
    source.destroy();
    await once(source, 'close');
    const r = await consume(payload);
    expect(r.error).toBeUndefined();
    expect(r.data).toEqual(BODY);
  });

  it('a consumer that destroys the payload early leaves the source unpiped and paused (the HTTP layer drains or closes it)', async () => {
    const source = new PassThrough();
    const payload = createPayload(source, { auth: UNSIGNED, headers: { 'content-length': '100' } });
    source.write(Buffer.alloc(10));
    await new Promise(setImmediate);
    payload.stream.destroy();
    await once(payload.stream, 'close');
    expect(source.readableFlowing).toBe(false);
    source.write(Buffer.alloc(10));
    await new Promise(setImmediate);
    expect(source.readableLength).toBe(10);
  });

  it('digest() before the body ended clean is a programming error, said so', () => {
    const payload = createPayload(new PassThrough(), { auth: UNSIGNED, headers: {} });
    expect(() => payload.digest()).toThrow('payload digest read before the body ended clean');
    payload.stream.destroy();
  });
});
