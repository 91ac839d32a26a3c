/**
 * aws-chunked (src/auth/aws-chunked.ts) where the wire allows more than one
 * spelling: chunk extensions with optional whitespace (RFC 9112 §7.1.1,
 * `chunk-ext = *( BWS ";" BWS name [ BWS "=" BWS value ] )`), chunk sizes
 * that are almost hex, limits reached by a body that arrives in many reads,
 * and trailer lines as they are signed.
 * Wire form and signatures: https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-streaming.html
 * and https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-streaming-trailers.html
 */
import { describe, expect, it } from 'vitest';
import { AwsChunkedParser, MAX_CHUNK_LINE, MAX_TRAILER_BYTES, type AwsChunkedOptions } from '../../src/auth/aws-chunked.js';
import { chunkSigner, chunkSigningFor, expectS3Error } from './helpers.js';

/** Feeds the pieces (latin1 strings) to a fresh parser; returns data and trailers, or throws. */
function decode(pieces: Array<string | Buffer>, options: AwsChunkedOptions = {}): { data: string; trailers: Map<string, string> } {
  const parser = new AwsChunkedParser(options);
  const out: Buffer[] = [];
  for (const piece of pieces) parser.feed(typeof piece === 'string' ? Buffer.from(piece, 'latin1') : piece, (b) => out.push(Buffer.from(b)));
  parser.end();
  return { data: Buffer.concat(out).toString('latin1'), trailers: new Map(parser.trailers) };
}

const signing = chunkSigningFor('c'.repeat(64));
const signer = () => chunkSigner(signing.signingKey, signing.amzDate, signing.scope, signing.seedSignature);

describe('chunk extensions', () => {
  /** A signed one-chunk body whose first size line reads `3<extensions(signature)>`. */
  function signedBody(extensions: (signature: string) => string): string {
    const s = signer();
    const first = s.chunk(Buffer.from('abc'));
    return `3${extensions(first)}\r\nabc\r\n0;chunk-signature=${s.chunk(Buffer.alloc(0))}\r\n\r\n`;
  }

  it.each([
    ['an unknown extension after the signature', (sig: string) => `;chunk-signature=${sig};foo=bar`],
    ['whitespace around ";" and "="', (sig: string) => ` ; chunk-signature = ${sig} `],
  ])('%s: the chunk verifies', (_label, extensions) => {
    expect(decode([signedBody(extensions)], { signing }).data).toBe('abc');
  });

  it('a chunk-signature with an "=" inside is malformed, not read around: SignatureDoesNotMatch', () => {
    const err = expectS3Error(
      () => decode([signedBody((sig) => `;chunk-signature=${sig.slice(0, 32)}=${sig.slice(32)}`)], { signing }),
      'SignatureDoesNotMatch',
    );
    expect(err.message).toBe('Missing or malformed chunk-signature in a signed aws-chunked body.');
  });
});

describe('chunk sizes that are almost hex: IncompleteBody', () => {
  it.each([
    ['0x3', 'a 0x prefix'],
    ['3z', 'a trailing non-hex character'],
    ['00000000000000003', '17 hex digits'],
  ])('%s (%s)', (size) => {
    expectS3Error(() => decode([`${size}\r\nabc\r\n0\r\n\r\n`]), 'IncompleteBody', `invalid chunk size "${size}"`);
  });

  it('16 hex digits are still a size', () => {
    expect(decode(['0000000000000003\r\nabc\r\n0\r\n\r\n']).data).toBe('abc');
  });
});

describe('limits hold however the body is split into reads', () => {
  it('a size line longer than 4 KiB is refused when it arrives in two reads without its LF', () => {
    const line = `3;${'x'.repeat(MAX_CHUNK_LINE + 100)}\r\n`;
    const body = `${line}abc\r\n0\r\n\r\n`;
    expectS3Error(() => decode([body.slice(0, 3000), body.slice(3000)]), 'IncompleteBody', 'line longer than 4 KiB');
  });

  /** Trailers of exactly `total` bytes, every line with its CR LF and the closing empty line counted. */
  function trailers(total: number): string {
    const line = (i: number, length: number) => `x-amz-meta-${i}:${'v'.repeat(length - 13)}\r\n`;
    const last = total - 4 * (3500 + 2) - 2 - 2;
    return `${[0, 1, 2, 3].map((i) => line(i, 3500)).join('')}${line(4, last)}\r\n`;
  }
  /** Splits `text` into reads: each read ends just before the byte `at` says. */
  function splitWhere(text: string, at: (index: number) => boolean): string[] {
    const pieces: string[] = [];
    let start = 0;
    for (let i = 1; i < text.length; i++) {
      if (at(i)) {
        pieces.push(text.slice(start, i));
        start = i;
      }
    }
    pieces.push(text.slice(start));
    return pieces;
  }
  const splits: Array<[string, (body: string) => string[]]> = [
    ['in one read', (body) => [body]],
    ['in reads that end mid-line', (body) => splitWhere(body, (i) => i % 1000 === 0)],
    ['in reads that each start with the LF of a CR LF', (body) => splitWhere(body, (i) => body[i] === '\n')],
  ];

  it.each(splits)('16 KiB of trailers in all is accepted, one byte more refused, %s', (_label, split) => {
    expect(decode(split(`0\r\n${trailers(MAX_TRAILER_BYTES)}`)).trailers.size).toBe(5);
    expectS3Error(() => decode(split(`0\r\n${trailers(MAX_TRAILER_BYTES + 1)}`)), 'IncompleteBody', 'trailers longer than 16 KiB');
  });
});

describe('trailer lines', () => {
  it('a line without a colon is a malformed trailing header, even without whitespace', () => {
    expectS3Error(() => decode(['3\r\nabc\r\n0\r\nx-amz-checksum-crc32\r\n\r\n']), 'IncompleteBody', 'malformed trailing header');
  });

  it('a bare LF ends a trailer line (the leniency the module documents), never a size line', () => {
    const r = decode(['3\r\nabc\r\n0\r\nx-amz-checksum-crc32:NSRBwg==\n\n']);
    expect(r.trailers.get('x-amz-checksum-crc32')).toBe('NSRBwg==');
    expectS3Error(() => decode(['3\nabc\r\n0\r\n\r\n']), 'IncompleteBody', 'chunk size line not terminated by CRLF');
  });

  /** A signed body whose trailer section is `sent`, signed over `signedLines`. */
  function signedTrailerBody(sent: Buffer, signedLines: string): Buffer {
    const s = signer();
    const head = `3;chunk-signature=${s.chunk(Buffer.from('abc'))}\r\nabc\r\n0;chunk-signature=${s.chunk(Buffer.alloc(0))}\r\n`;
    return Buffer.concat([Buffer.from(head), sent, Buffer.from(`x-amz-trailer-signature:${s.trailer(signedLines)}\r\n\r\n`)]);
  }

  it('the trailer signature covers a line without its trailing whitespace', () => {
    const body = signedTrailerBody(Buffer.from('x-amz-checksum-crc32:NSRBwg==  \r\n'), 'x-amz-checksum-crc32:NSRBwg==\n');
    expect(decode([body], { signing, signedTrailer: true }).trailers.get('x-amz-checksum-crc32')).toBe('NSRBwg==');
  });

  it('the trailer signature covers every trailer line, each ending in LF, in the order sent', () => {
    const sent = 'x-amz-checksum-crc32:NSRBwg==\r\nx-amz-meta-agent:alice\r\n';
    const body = signedTrailerBody(Buffer.from(sent), 'x-amz-checksum-crc32:NSRBwg==\nx-amz-meta-agent:alice\n');
    expect(decode([body], { signing, signedTrailer: true }).trailers.get('x-amz-meta-agent')).toBe('alice');
    const swapped = signedTrailerBody(Buffer.from(sent), 'x-amz-meta-agent:alice\nx-amz-checksum-crc32:NSRBwg==\n');
    expectS3Error(() => decode([swapped], { signing, signedTrailer: true }), 'SignatureDoesNotMatch', 'The trailer signature we calculated does not match the signature you provided.');
  });

  it('the trailer signature covers the bytes as sent, non-ASCII ones included', () => {
    // The signer hashes the UTF-8 bytes it sends; casket must hash those same bytes.
    const line = 'x-amz-meta-note:café\n';
    const body = signedTrailerBody(Buffer.from(line.replace('\n', '\r\n'), 'utf8'), line);
    expect(decode([body], { signing, signedTrailer: true }).trailers.get('x-amz-meta-note')).toBe(Buffer.from('café', 'utf8').toString('latin1'));
  });
});
