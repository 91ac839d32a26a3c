/**
 * validatePayloadHeaders (src/auth/payload.ts): the request headers a body is
 * refused for before a byte of it is read, with the Code and the words S3
 * answers (https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html,
 * .../userguide/checking-object-integrity.html).
 */
import { describe, expect, it } from 'vitest';
import { validatePayloadHeaders } from '../../src/auth/payload.js';
import type { AuthResult } from '../../src/auth/sigv4.js';
import { S3Error } from '../../src/vocabulary/errors.js';
import { ALICE } from './helpers.js';

const UNSIGNED: AuthResult = { credential: ALICE, presigned: false, payloadMode: 'unsigned', signedHeaders: ['host'], region: 'us-east-1' };
const TRAILER: AuthResult = { ...UNSIGNED, payloadMode: 'streaming-unsigned-trailer' };
const chunked = { 'content-encoding': 'aws-chunked', 'x-amz-decoded-content-length': '11' };

function refusal(headers: Record<string, string>, auth: AuthResult | null, maxSize?: number): S3Error {
  try {
    validatePayloadHeaders(headers, auth, maxSize);
  } catch (e) {
    expect(e).toBeInstanceOf(S3Error);
    return e as S3Error;
  }
  throw new Error('expected an S3Error');
}

describe('refused up front, in S3’s words', () => {
  it.each<[string, Record<string, string>, AuthResult | null, string, string]>([
    ['a Content-Length that is not a number', { 'content-length': '1e3' }, UNSIGNED, 'InvalidArgument', 'Invalid content-length header.'],
    ['an x-amz-decoded-content-length that is not a number', { ...chunked, 'x-amz-decoded-content-length': 'eleven' }, TRAILER, 'InvalidArgument', 'Invalid x-amz-decoded-content-length header.'],
    ['aws-chunked without its decoded length', { 'content-encoding': 'aws-chunked' }, TRAILER, 'MissingContentLength', 'You must provide the x-amz-decoded-content-length header with an aws-chunked body.'],
    ['two checksum headers', { 'x-amz-checksum-crc32': 'DUoRhQ==', 'x-amz-checksum-sha1': 'Kq5sNclPz7QV2+lfQIuc6R7oRu0=' }, UNSIGNED, 'InvalidRequest', 'Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.'],
    ['a checksum header and a checksum trailer', { ...chunked, 'x-amz-checksum-crc32': 'DUoRhQ==', 'x-amz-trailer': 'x-amz-checksum-crc32' }, TRAILER, 'InvalidRequest', 'Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.'],
    ['two checksum trailers', { ...chunked, 'x-amz-trailer': 'x-amz-checksum-crc32, x-amz-checksum-crc32c' }, TRAILER, 'InvalidRequest', 'Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.'],
    ['a trailer that is no checksum', { ...chunked, 'x-amz-trailer': 'x-amz-meta-a' }, TRAILER, 'InvalidRequest', 'The value specified in the x-amz-trailer header is not supported'],
    ['a trailer without aws-chunked', { 'x-amz-trailer': 'x-amz-checksum-crc32' }, UNSIGNED, 'InvalidRequest', 'x-amz-trailer is only allowed with an aws-chunked body.'],
    ['x-amz-sdk-checksum-algorithm naming another checksum', { ...chunked, 'x-amz-trailer': 'x-amz-checksum-crc32', 'x-amz-sdk-checksum-algorithm': 'SHA1' }, TRAILER, 'InvalidRequest', 'Value for x-amz-sdk-checksum-algorithm header is invalid.'],
    // API_PutObject, ChecksumAlgorithm: "there must be a corresponding x-amz-checksum-algorithm or x-amz-trailer header sent".
    ['x-amz-sdk-checksum-algorithm with no checksum sent', { 'x-amz-sdk-checksum-algorithm': 'CRC32' }, UNSIGNED, 'InvalidRequest', 'x-amz-sdk-checksum-algorithm specified, but no corresponding x-amz-checksum-* or x-amz-trailer headers were found.'],
    ['an anonymous signed streaming body', { ...chunked, 'x-amz-content-sha256': 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD' }, null, 'AccessDenied', 'A signed streaming payload needs a signed request.'],
    ['an anonymous signed streaming body with trailer', { ...chunked, 'x-amz-content-sha256': 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER' }, null, 'AccessDenied', 'A signed streaming payload needs a signed request.'],
  ])('%s', (_name, headers, auth, code, message) => {
    const err = refusal(headers, auth);
    expect(err.code).toBe(code);
    expect(err.message).toBe(message);
  });

  it('EntityTooLarge names the proposed size and the limit; the limit itself is allowed', () => {
    expect(refusal({ 'content-length': '101' }, UNSIGNED, 100).fields).toEqual({ ProposedSize: 101, MaxSizeAllowed: 100 });
    expect(refusal({ ...chunked, 'x-amz-decoded-content-length': '101' }, TRAILER, 100).fields).toEqual({ ProposedSize: 101, MaxSizeAllowed: 100 });
    expect(() => validatePayloadHeaders({ 'content-length': '100' }, UNSIGNED, 100)).not.toThrow();
  });
});

describe('accepted', () => {
  it.each<[string, Record<string, string>, AuthResult | null]>([
    ['lengths with spaces around them', { 'content-length': ' 11 ' }, UNSIGNED],
    ['an empty x-amz-trailer', { 'x-amz-trailer': ' ' }, UNSIGNED],
    ['aws-chunked among other content codings, any case', { 'content-encoding': 'gzip, AWS-Chunked', 'x-amz-decoded-content-length': '11', 'x-amz-trailer': 'X-Amz-Checksum-CRC32' }, UNSIGNED],
    ['x-amz-sdk-checksum-algorithm agreeing with the trailer', { ...chunked, 'x-amz-trailer': 'x-amz-checksum-crc32', 'x-amz-sdk-checksum-algorithm': 'CRC32' }, TRAILER],
    ['an anonymous unsigned-trailer body', { ...chunked, 'x-amz-content-sha256': 'STREAMING-UNSIGNED-PAYLOAD-TRAILER', 'x-amz-trailer': 'x-amz-checksum-crc32' }, null],
  ])('%s', (_name, headers, auth) => {
    expect(() => validatePayloadHeaders(headers, auth)).not.toThrow();
  });

  it('a literal SHA-256 beside Content-Encoding: aws-chunked frames nothing: Content-Length counts, no decoded length needed', () => {
    const literal: AuthResult = { ...UNSIGNED, payloadMode: 'literal', declaredSha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' };
    expect(() => validatePayloadHeaders({ 'content-encoding': 'aws-chunked', 'content-length': '0' }, literal)).not.toThrow();
  });
});
