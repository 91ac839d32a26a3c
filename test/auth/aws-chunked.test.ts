import { describe, expect, it } from 'vitest';
import { AwsChunkedParser, type AwsChunkedOptions } from '../../src/auth/aws-chunked.js';
import { signingKeyFor, type ChunkSigning } from '../../src/auth/sigv4.js';
import { S3Error, type S3ErrorCode } from '../../src/vocabulary/errors.js';
import { chunkSigner, encodeChunked } from './helpers.js';

/** Feeds pieces to a fresh parser; returns decoded bytes and trailers, or throws. */
function decode(pieces: Buffer[], options: AwsChunkedOptions = {}): { data: Buffer; trailers: Map<string, string> } {
  const parser = new AwsChunkedParser(options);
  const out: Buffer[] = [];
  for (const p of pieces) parser.feed(p, (b) => out.push(Buffer.from(b)));
  parser.end();
  return { data: Buffer.concat(out), trailers: new Map(parser.trailers) };
}

function expectCode(fn: () => unknown, code: S3ErrorCode): S3Error {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(S3Error);
    expect((e as S3Error).code).toBe(code);
    return e as S3Error;
  }
  throw new Error(`expected ${code}`);
}

// The AWS documentation's examples: 66560 bytes of 'a' in chunks of 65536, 1024, 0,
// signed with the documentation's example key on 20130524 in us-east-1.
const AWS_SIGNING = {
  signingKey: signingKeyFor('wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', '20130524', 'us-east-1', 's3'),
  amzDate: '20130524T000000Z',
  scope: '20130524/us-east-1/s3/aws4_request',
};
const AWS_DATA = Buffer.alloc(66560, 'a');

function awsBody(signatures: readonly [string, string, string], tail: string): Buffer {
  return Buffer.concat([
    Buffer.from(`10000;chunk-signature=${signatures[0]}\r\n`),
    AWS_DATA.subarray(0, 65536),
    Buffer.from(`\r\n400;chunk-signature=${signatures[1]}\r\n`),
    AWS_DATA.subarray(65536),
    Buffer.from(`\r\n0;chunk-signature=${signatures[2]}\r\n${tail}`),
  ]);
}

// https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-streaming.html (Example: PUT Object)
const STREAMING_EXAMPLE: ChunkSigning = { ...AWS_SIGNING, seedSignature: '4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9' };
const STREAMING_BODY = awsBody(
  [
    'ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648',
    '0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497',
    'b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9',
  ],
  '\r\n',
);
// https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-streaming-trailers.html
const TRAILER_EXAMPLE: ChunkSigning = { ...AWS_SIGNING, seedSignature: '106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e' };
const TRAILER_TAIL = 'x-amz-checksum-crc32c:sOO8/Q==\r\nx-amz-trailer-signature:d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435\r\n';
const TRAILER_BODY = awsBody(
  [
    'b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2',
    '1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7',
    '2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992',
  ],
  `${TRAILER_TAIL}\r\n`,
);

describe('aws-chunked: AWS documented vectors', () => {
  it('signed chunks decode and verify, signature by signature', () => {
    const { data, trailers } = decode([STREAMING_BODY], { signing: STREAMING_EXAMPLE });
    expect(data.equals(AWS_DATA)).toBe(true);
    expect(trailers.size).toBe(0);
  });

  it('signed chunks with a signed trailer verify, with or without the closing empty line', () => {
    for (const body of [TRAILER_BODY, TRAILER_BODY.subarray(0, -2)]) {
      const { data, trailers } = decode([body], { signing: TRAILER_EXAMPLE, signedTrailer: true });
      expect(data.equals(AWS_DATA)).toBe(true);
      expect(trailers.get('x-amz-checksum-crc32c')).toBe('sOO8/Q==');
    }
  });

  it('a flipped data byte, a wrong seed, a swapped chunk order all fail with SignatureDoesNotMatch', () => {
    const flipped = Buffer.from(STREAMING_BODY);
    flipped[200] = 'b'.charCodeAt(0);
    expectCode(() => decode([flipped], { signing: STREAMING_EXAMPLE }), 'SignatureDoesNotMatch');
    expectCode(() => decode([STREAMING_BODY], { signing: TRAILER_EXAMPLE }), 'SignatureDoesNotMatch');
    const wrongTrailerSig = Buffer.from(TRAILER_BODY.toString('latin1').replace('trailer-signature:d81f', 'trailer-signature:d81e'), 'latin1');
    expectCode(() => decode([wrongTrailerSig], { signing: TRAILER_EXAMPLE, signedTrailer: true }), 'SignatureDoesNotMatch');
    const wrongTrailerValue = Buffer.from(TRAILER_BODY.toString('latin1').replace('sOO8/Q==', 'sOO8/R=='), 'latin1');
    expectCode(() => decode([wrongTrailerValue], { signing: TRAILER_EXAMPLE, signedTrailer: true }), 'SignatureDoesNotMatch');
  });

  it('the verified bytes are identical at every split point in the framing (two pieces)', () => {
    const points = [
      ...Array.from({ length: 100 }, (_, i) => i),
      ...Array.from({ length: 200 }, (_, i) => 65536 + i),
      ...Array.from({ length: 260 }, (_, i) => TRAILER_BODY.length - i),
    ];
    for (const at of points) {
      const { data, trailers } = decode([TRAILER_BODY.subarray(0, at), TRAILER_BODY.subarray(at)], { signing: TRAILER_EXAMPLE, signedTrailer: true });
      expect(data.length).toBe(AWS_DATA.length);
      expect(trailers.get('x-amz-checksum-crc32c')).toBe('sOO8/Q==');
    }
  });
});

describe('aws-chunked: crafted bodies', () => {
  const signing: ChunkSigning = {
    signingKey: signingKeyFor('secret', '20260301', 'us-east-1', 's3'),
    amzDate: '20260301T120000Z',
    scope: '20260301/us-east-1/s3/aws4_request',
    seedSignature: 'a'.repeat(64),
  };
  const data = Buffer.from(Array.from({ length: 300 }, (_, i) => (i * 7) & 0xff));

  function signedBody(trailers = 'x-amz-checksum-crc32:AAAAAA==\r\n'): Buffer {
    const s = chunkSigner(signing.signingKey, signing.amzDate, signing.scope, signing.seedSignature);
    const body = encodeChunked(data, 64, { signatureFor: (c) => s.chunk(c), finalLine: false });
    const lines = trailers.replace(/\r\n/g, '\n');
    return Buffer.concat([body, Buffer.from(`${trailers}x-amz-trailer-signature:${s.trailer(lines)}\r\n\r\n`)]);
  }

  it('split at EVERY byte boundary decodes identically and verifies', () => {
    const body = signedBody();
    for (let at = 0; at <= body.length; at++) {
      const { data: out, trailers } = decode([body.subarray(0, at), body.subarray(at)], { signing, signedTrailer: true });
      expect(out.equals(data)).toBe(true);
      expect(trailers.get('x-amz-checksum-crc32')).toBe('AAAAAA==');
    }
    // And byte by byte.
    const pieces = Array.from(body, (b) => Buffer.from([b]));
    expect(decode(pieces, { signing, signedTrailer: true }).data.equals(data)).toBe(true);
  });

  it('the unsigned trailer form SDKs send, with and without the final empty line, and empty bodies', () => {
    const sdk = Buffer.concat([Buffer.from('b\r\nhello world\r\n0\r\nx-amz-checksum-crc32:DUoRhQ==\r\n')]);
    for (const body of [Buffer.concat([sdk, Buffer.from('\r\n')]), sdk]) {
      for (let at = 0; at <= body.length; at++) {
        const r = decode([body.subarray(0, at), body.subarray(at)]);
        expect(r.data.toString()).toBe('hello world');
        expect(r.trailers.get('x-amz-checksum-crc32')).toBe('DUoRhQ==');
      }
    }
    expect(decode([Buffer.from('0\r\n\r\n')]).data.length).toBe(0);
    expect(decode([Buffer.from('0\r\n')]).data.length).toBe(0);
  });

  it('trailer names are case-insensitive; values are trimmed', () => {
    const r = decode([Buffer.from('3\r\nabc\r\n0\r\nX-Amz-Checksum-CRC32 :  NSRBwg== \r\n\r\n')]);
    expect(r.trailers.get('x-amz-checksum-crc32')).toBe('NSRBwg==');
  });

  it('chunk-signature is ignored when not verifying, required when verifying', () => {
    expect(decode([Buffer.from(`3;chunk-signature=${'0'.repeat(64)}\r\nabc\r\n0\r\n\r\n`)]).data.toString()).toBe('abc');
    expectCode(() => decode([Buffer.from('3\r\nabc\r\n0\r\n\r\n')], { signing }), 'SignatureDoesNotMatch');
    expectCode(() => decode([Buffer.from('3;chunk-signature=zz\r\nabc\r\n0\r\n\r\n')], { signing }), 'SignatureDoesNotMatch');
  });

  it('signed trailer mode requires the trailer signature', () => {
    const s = chunkSigner(signing.signingKey, signing.amzDate, signing.scope, signing.seedSignature);
    const body = encodeChunked(data, 100, { signatureFor: (c) => s.chunk(c), trailers: 'x-amz-checksum-crc32:AAAAAA==\r\n' });
    expectCode(() => decode([body], { signing, signedTrailer: true }), 'SignatureDoesNotMatch');
    // Trailers after the signature are not covered by it.
    const good = signedBody().toString('latin1');
    const extra = good.replace(/\r\n\r\n$/, '\r\nx-amz-meta-late:1\r\n\r\n');
    expectCode(() => decode([Buffer.from(extra, 'latin1')], { signing, signedTrailer: true }), 'IncompleteBody');
  });

  it.each([
    ['invalid hex size', 'zz\r\nabc\r\n0\r\n\r\n'],
    ['empty size', '\r\nabc\r\n0\r\n\r\n'],
    ['size line without CR', '3\nabc\r\n0\r\n\r\n'],
    ['data longer than its size', '3\r\nabcd\r\n0\r\n\r\n'],
    ['data not followed by CRLF', '3\r\nabcXY0\r\n\r\n'],
    ['truncated in data', '5\r\nabc'],
    ['truncated in a size line', '3\r\nabc\r\n0'],
    ['truncated before the final chunk', '3\r\nabc\r\n'],
    ['truncated inside a trailer line', '3\r\nabc\r\n0\r\nx-amz-checksum-crc32:NSRB'],
    ['data after the final chunk', '3\r\nabc\r\n0\r\n\r\nmore'],
    ['trailer line without a colon', '3\r\nabc\r\n0\r\nnot a header\r\n\r\n'],
    ['repeated trailer', '0\r\nx-amz-checksum-crc32:AAAAAA==\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n'],
    ['chunk over 16 MiB', '1000001\r\n'],
    ['size line over 4 KiB', `3;${'x'.repeat(5000)}\r\nabc\r\n0\r\n\r\n`],
  ])('broken framing: %s → IncompleteBody', (_label, body) => {
    const err = expectCode(() => decode([Buffer.from(body)]), 'IncompleteBody');
    expect(err.message).toMatch(/^The request body terminated unexpectedly/);
  });

  it('trailers may not exceed 16 KiB', () => {
    const lines = Array.from({ length: 40 }, (_, i) => `x-amz-meta-${i}:${'v'.repeat(500)}\r\n`).join('');
    expectCode(() => decode([Buffer.from(`0\r\n${lines}\r\n`)]), 'IncompleteBody');
  });

  it('extra CR/LF after the end is tolerated', () => {
    expect(decode([Buffer.from('3\r\nabc\r\n0\r\n\r\n\r\n')]).data.toString()).toBe('abc');
  });
});
