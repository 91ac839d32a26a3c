/**
 * aws-chunked (src/auth/aws-chunked.ts) at its edges: the words of each
 * IncompleteBody a client reads (S3's "The request body terminated
 * unexpectedly" plus what was wrong), the limits to the byte, and the chunk
 * and trailer signatures when one byte of what they cover changes.
 * Wire form and signatures: https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-streaming.html
 * and .../sigv4-streaming-trailers.html
 */
import { describe, expect, it } from 'vitest';
import { AwsChunkedParser, MAX_CHUNK_LINE, MAX_TRAILER_BYTES, type AwsChunkedOptions } from '../../src/auth/aws-chunked.js';
import { S3Error } from '../../src/vocabulary/errors.js';
import { chunkSigner, chunkSigningFor, encodeChunked } from './helpers.js';

function decode(body: Buffer | string, options: AwsChunkedOptions = {}): { data: string; trailers: Map<string, string> } {
  const parser = new AwsChunkedParser(options);
  const out: Buffer[] = [];
  parser.feed(typeof body === 'string' ? Buffer.from(body, 'latin1') : body, (b) => out.push(Buffer.from(b)));
  parser.end();
  return { data: Buffer.concat(out).toString('latin1'), trailers: new Map(parser.trailers) };
}

function refusal(fn: () => unknown): S3Error {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(S3Error);
    return e as S3Error;
  }
  throw new Error('expected an S3Error');
}

const signing = chunkSigningFor('b'.repeat(64));
const signer = () => chunkSigner(signing.signingKey, signing.amzDate, signing.scope, signing.seedSignature);

describe('IncompleteBody says what was wrong', () => {
  it.each([
    ['zz\r\nabc\r\n0\r\n\r\n', 'invalid chunk size "zz"'],
    ['3\nabc\r\n0\r\n\r\n', 'chunk size line not terminated by CRLF'],
    ['3\r\nabcXY0\r\n\r\n', 'chunk data not followed by CRLF'],
    ['3\r\nabc\rX0\r\n\r\n', 'chunk data not followed by CRLF'],
    ['3\r\nabc\r\n', 'body ended before the final chunk'],
    ['3\r\nabc\r\n0\r\n\r\nmore', 'data after the final chunk'],
    ['3\r\nabc\r\n0\r\nnot a header\r\n\r\n', 'malformed trailing header'],
    ['3\r\nabc\r\n0\r\n:value\r\n\r\n', 'malformed trailing header'],
    ['3\r\nabc\r\n0\r\nx amz:value\r\n\r\n', 'malformed trailing header'],
    ['0\r\nx-amz-checksum-crc32:AAAAAA==\r\nX-Amz-Checksum-CRC32:AAAAAA==\r\n\r\n', 'repeated trailing header x-amz-checksum-crc32'],
    ['0\r\nx-amz-trailer-signature:a\r\nx-amz-trailer-signature:a\r\n\r\n', 'repeated x-amz-trailer-signature'],
    ['0\r\nx-amz-trailer-signature:a\r\nx-amz-meta-late:1\r\n\r\n', 'trailing header after x-amz-trailer-signature'],
    ['1000001\r\n', 'chunk of 16777217 bytes exceeds the 16777216-byte limit'],
  ])('%j → %s', (body, detail) => {
    const err = refusal(() => decode(body));
    expect(err.code).toBe('IncompleteBody');
    expect(err.message).toBe(`The request body terminated unexpectedly (${detail})`);
  });

  it('an invalid size is quoted at most 32 characters long', () => {
    const err = refusal(() => decode(`${'g'.repeat(40)}\r\n`));
    expect(err.message).toBe(`The request body terminated unexpectedly (invalid chunk size "${'g'.repeat(32)}")`);
  });
});

describe('limits, to the byte', () => {
  it('a chunk of exactly the limit is accepted; one byte more is refused', () => {
    expect(decode('3\r\nabc\r\n0\r\n\r\n', { maxChunkSize: 3 }).data).toBe('abc');
    expect(refusal(() => decode('4\r\nabcd\r\n0\r\n\r\n', { maxChunkSize: 3 })).message).toMatch(/chunk of 4 bytes exceeds the 3-byte limit/);
  });

  it('a size line of 4 KiB (its CR included) is accepted; one byte more is refused', () => {
    const line = (n: number) => `3;${'x'.repeat(n - 2)}`;
    expect(decode(`${line(MAX_CHUNK_LINE)}\r\nabc\r\n0\r\n\r\n`).data).toBe('abc');
    expect(refusal(() => decode(`${line(MAX_CHUNK_LINE + 1)}\r\nabc\r\n0\r\n\r\n`)).message).toMatch(/line longer than 4 KiB/);
  });

  it('16 KiB of trailers in all is accepted; one byte more is refused', () => {
    // Trailer bytes count every line with its CR LF, the closing empty line
    // included; each line stays under the 4 KiB line limit.
    const fill = (total: number) => {
      const line = (i: number, length: number) => `x-amz-meta-${i}:${'v'.repeat(length - 13)}\r\n`;
      const last = total - 2 - 4 * (3500 + 2) - 2;
      return `${[0, 1, 2, 3].map((i) => line(i, 3500)).join('')}${line(4, last)}\r\n`;
    };
    expect(decode(`0\r\n${fill(MAX_TRAILER_BYTES)}`).trailers.size).toBe(5);
    expect(refusal(() => decode(`0\r\n${fill(MAX_TRAILER_BYTES + 1)}`)).message).toMatch(/trailers longer than 16 KiB/);
  });
});

describe('chunk signatures', () => {
  const data = Buffer.from('hello, chunked world');

  it('upper-case hex and any case of the extension name verify', () => {
    const s = signer();
    const sig = s.chunk(data).toUpperCase();
    const last = s.chunk(Buffer.alloc(0));
    const body = `${data.length.toString(16)};Chunk-Signature=${sig}\r\n${data.toString('latin1')}\r\n0;chunk-signature=${last}\r\n\r\n`;
    expect(decode(body, { signing }).data).toBe(data.toString());
  });

  it('the seed signature in upper case chains the same', () => {
    const s = signer();
    const body = encodeChunked(data, 8, { signatureFor: (c) => s.chunk(c) });
    expect(decode(body, { signing: { ...signing, seedSignature: signing.seedSignature.toUpperCase() } }).data).toBe(data.toString());
  });

  it('a chunk one byte off its signature: SignatureDoesNotMatch with the string to sign and the signature provided', () => {
    const s = signer();
    const first = s.chunk(data);
    const forged = Buffer.from(data);
    forged[forged.length - 1]! ^= 1;
    const body = `${data.length.toString(16)};chunk-signature=${first}\r\n${forged.toString('latin1')}\r\n0;chunk-signature=${s.chunk(Buffer.alloc(0))}\r\n\r\n`;
    const err = refusal(() => decode(body, { signing }));
    expect(err.code).toBe('SignatureDoesNotMatch');
    expect(err.message).toBe('The chunk signature we calculated does not match the signature you provided.');
    expect(err.fields['SignatureProvided']).toBe(first);
    expect(String(err.fields['StringToSign']).split('\n')).toEqual([
      'AWS4-HMAC-SHA256-PAYLOAD',
      signing.amzDate,
      signing.scope,
      signing.seedSignature,
      'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
      expect.stringMatching(/^[0-9a-f]{64}$/),
    ]);
  });

  it('the final (empty) chunk is signed too: a wrong one fails', () => {
    const s = signer();
    const first = s.chunk(data);
    const body = `${data.length.toString(16)};chunk-signature=${first}\r\n${data.toString('latin1')}\r\n0;chunk-signature=${'0'.repeat(64)}\r\n\r\n`;
    expect(refusal(() => decode(body, { signing })).code).toBe('SignatureDoesNotMatch');
  });

  it('a missing chunk-signature says so', () => {
    const err = refusal(() => decode('0;other=1\r\n\r\n', { signing }));
    expect(err.code).toBe('SignatureDoesNotMatch');
    expect(err.message).toBe('Missing or malformed chunk-signature in a signed aws-chunked body.');
    expect(refusal(() => decode('0;chunk-signature\r\n\r\n', { signing })).message).toBe('Missing or malformed chunk-signature in a signed aws-chunked body.');
  });
});

describe('trailer signatures', () => {
  const data = Buffer.from('payload');
  function body(trailers: string, signatureOf: (s: ReturnType<typeof signer>) => string): string {
    const s = signer();
    const chunk = s.chunk(data);
    const last = s.chunk(Buffer.alloc(0));
    return `${data.length.toString(16)};chunk-signature=${chunk}\r\n${data.toString('latin1')}\r\n0;chunk-signature=${last}\r\n${trailers}x-amz-trailer-signature:${signatureOf(s)}\r\n\r\n`;
  }

  it('a trailer value one byte off its signature fails, in words, with the string to sign', () => {
    const sent = body('x-amz-checksum-crc32:AAAAAB==\r\n', (s) => s.trailer('x-amz-checksum-crc32:AAAAAA==\n'));
    const err = refusal(() => decode(sent, { signing, signedTrailer: true }));
    expect(err.code).toBe('SignatureDoesNotMatch');
    expect(err.message).toBe('The trailer signature we calculated does not match the signature you provided.');
    expect(String(err.fields['StringToSign']).split('\n').slice(0, 3)).toEqual(['AWS4-HMAC-SHA256-TRAILER', signing.amzDate, signing.scope]);
  });

  it('signed over the trailer lines as sent, each ending in LF', () => {
    const sent = body('x-amz-checksum-crc32:AAAAAA==\r\n', (s) => s.trailer('x-amz-checksum-crc32:AAAAAA==\n'));
    expect(decode(sent, { signing, signedTrailer: true }).trailers.get('x-amz-checksum-crc32')).toBe('AAAAAA==');
  });

  it('a malformed trailer signature says so', () => {
    const sent = body('', () => 'zz');
    expect(refusal(() => decode(sent, { signing, signedTrailer: true })).message).toBe('Missing or malformed x-amz-trailer-signature in a signed aws-chunked body.');
  });

  it('signedTrailer without signing is a programming error, refused at construction', () => {
    expect(() => new AwsChunkedParser({ signedTrailer: true })).toThrow('signedTrailer needs signing');
  });
});
