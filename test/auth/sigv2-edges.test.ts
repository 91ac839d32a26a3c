/**
 * Signature Version 2 (src/auth/sigv2.ts) at its edges: the error a client
 * reads for a malformed header, the clock and a presigned URL's Expires to the
 * millisecond, what SignatureDoesNotMatch carries, and which host names carry
 * a virtual-hosted bucket. Signatures are computed here as the AWS page
 * defines them, https://docs.aws.amazon.com/AmazonS3/latest/userguide/RESTAuthentication.html
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { verifySigV2 } from '../../src/auth/sigv2.js';
import type { SignedRequest } from '../../src/auth/sigv4.js';
import { ALICE, expectS3Error, lookup, sigv2Signed } from './helpers.js';

const NOW = new Date('2026-03-01T12:00:00Z');
const date = NOW.toUTCString();
const at = (ms: number) => new Date(NOW.getTime() + ms);

function sign(stringToSign: string, secret = ALICE.secretAccessKey): string {
  return createHmac('sha1', secret).update(Buffer.from(stringToSign, 'utf8')).digest('base64');
}

const signed = sigv2Signed;

describe('a malformed Authorization header', () => {
  it.each(['AWS AKIDALICE', 'AWS :c2ln', 'AWS AKIDALICE:'])('%s → InvalidArgument naming the header', (authorization) => {
    const err = expectS3Error(
      () => verifySigV2({ method: 'GET', rawPath: '/b/k', rawQuery: '', headers: { host: 'h', date, authorization } }, lookup, { now: NOW }),
      'InvalidArgument',
      "Authorization header is invalid -- one and only one ' ' (space) required",
    );
    expect(err.fields).toEqual({ ArgumentName: 'Authorization', ArgumentValue: authorization });
  });

  it('an unknown key → InvalidAccessKeyId naming it', () => {
    const req = signed(`GET\n\n\n${date}\n/b/k`, { headers: { authorization: 'AWS AKIDNOBODY:c2ln' } });
    expect(expectS3Error(() => verifySigV2(req, lookup, { now: NOW }), 'InvalidAccessKeyId').fields).toEqual({ AWSAccessKeyId: 'AKIDNOBODY' });
  });
});

describe('the clock', () => {
  it('exactly 15 minutes off passes; one millisecond more is RequestTimeTooSkewed, with both times', () => {
    const req = signed(`GET\n\n\n${date}\n/b/k`);
    expect(verifySigV2(req, lookup, { now: at(15 * 60_000) })).toBeTruthy();
    expect(verifySigV2(req, lookup, { now: at(-15 * 60_000) })).toBeTruthy();
    const err = expectS3Error(() => verifySigV2(req, lookup, { now: at(15 * 60_000 + 1) }), 'RequestTimeTooSkewed');
    expect(err.fields).toEqual({ RequestTime: date, ServerTime: '2026-03-01T12:15:00.001Z', MaxAllowedSkewMilliseconds: 900_000 });
  });

  it('a presigned URL is valid through the second its Expires names, then expired with the times', () => {
    const expires = NOW.getTime() / 1000 + 60;
    const sig = encodeURIComponent(sign(`GET\n\n\n${expires}\n/b/k`));
    const req: SignedRequest = { method: 'GET', rawPath: '/b/k', rawQuery: `AWSAccessKeyId=${ALICE.accessKeyId}&Expires=${expires}&Signature=${sig}`, headers: { host: '127.0.0.1' } };
    expect(verifySigV2(req, lookup, { now: at(60_000) }).presigned).toBe(true);
    const err = expectS3Error(() => verifySigV2(req, lookup, { now: at(60_001) }), 'AccessDenied', /^Request has expired$/);
    expect(err.fields).toEqual({ Expires: '2026-03-01T12:01:00.000Z', ServerTime: '2026-03-01T12:01:00.001Z' });
  });

  it('a presigned Expires that is not seconds says what it got', () => {
    const req: SignedRequest = { method: 'GET', rawPath: '/b/k', rawQuery: `AWSAccessKeyId=${ALICE.accessKeyId}&Expires=-5&Signature=abc`, headers: { host: 'h' } };
    expectS3Error(() => verifySigV2(req, lookup, { now: NOW }), 'AccessDenied', /^Invalid date \(should be seconds since epoch\): -5$/);
    expectS3Error(() => verifySigV2({ ...req, rawQuery: `Expires=1&Signature=abc` }, lookup, { now: NOW }), 'AccessDenied', /^Query-string authentication requires the Signature, Expires and AWSAccessKeyId parameters$/);
  });
});

describe('what is signed', () => {
  it('SignatureDoesNotMatch carries the string to sign, its bytes in hex, the signature and the key', () => {
    const req = signed('something else');
    const err = expectS3Error(() => verifySigV2(req, lookup, { now: NOW }), 'SignatureDoesNotMatch');
    const expected = `GET\n\n\n${date}\n/b/k`;
    expect(err.fields['StringToSign']).toBe(expected);
    expect(err.fields['StringToSignBytes']).toBe([...Buffer.from(expected)].map((b) => b.toString(16).padStart(2, '0')).join(' '));
    expect(err.fields['SignatureProvided']).toBe(sign('something else'));
    expect(err.fields['AWSAccessKeyId']).toBe('AKIDALICE');
  });

  it('the method is signed upper-case', () => {
    expect(verifySigV2(signed(`GET\n\n\n${date}\n/b/k`, { method: 'get' }), lookup, { now: NOW })).toBeTruthy();
  });

  it('an amz header folded over lines is signed unfolded', () => {
    const req = signed(`GET\n\n\n${date}\nx-amz-meta-note:a b\n/b/k`, { headers: { 'x-amz-meta-note': 'a\r\n  b' } });
    expect(verifySigV2(req, lookup, { now: NOW })).toBeTruthy();
  });

  it('x-amz-date signed both in the Date position and among the amz headers (some clients) verifies', () => {
    const req = signed(`GET\n\n\n${date}\nx-amz-date:${date}\n/b/k`, { headers: { 'x-amz-date': date } });
    delete req.headers['date'];
    expect(verifySigV2(req, lookup, { now: NOW })).toBeTruthy();
  });

  it('a presigned URL: an x-amz-* header sent wins over the same name in the query', () => {
    const expires = NOW.getTime() / 1000 + 60;
    const sig = encodeURIComponent(sign(`PUT\n\n\n${expires}\nx-amz-meta-a:header\n/b/k`));
    const req: SignedRequest = {
      method: 'PUT',
      rawPath: '/b/k',
      rawQuery: `AWSAccessKeyId=${ALICE.accessKeyId}&Expires=${expires}&x-amz-meta-a=query&Signature=${sig}`,
      headers: { host: '127.0.0.1', 'x-amz-meta-a': 'header' },
    };
    const result = verifySigV2(req, lookup, { now: NOW });
    expect(result.signedHeaders).toEqual(['x-amz-meta-a']);
    expect(result.region).toBe('us-east-1');
  });

  it('a sub-resource given with "=" and no value is signed with its "="', () => {
    const req = signed(`GET\n\n\n${date}\n/b/k?versionId=`, { rawQuery: 'versionId=' });
    expect(verifySigV2(req, lookup, { now: NOW })).toBeTruthy();
    expectS3Error(() => verifySigV2(signed(`GET\n\n\n${date}\n/b/k?versionId`, { rawQuery: 'versionId=' }), lookup, { now: NOW }), 'SignatureDoesNotMatch');
  });

  it('STREAMING-UNSIGNED-PAYLOAD-TRAILER is allowed; signed streaming is refused in words', () => {
    const trailer = signed(`PUT\n\n\n${date}\nx-amz-content-sha256:STREAMING-UNSIGNED-PAYLOAD-TRAILER\n/b/k`, { method: 'PUT', headers: { 'x-amz-content-sha256': 'STREAMING-UNSIGNED-PAYLOAD-TRAILER' } });
    expect(verifySigV2(trailer, lookup, { now: NOW }).payloadMode).toBe('streaming-unsigned-trailer');
    const streaming = signed(`PUT\n\n\n${date}\nx-amz-content-sha256:STREAMING-AWS4-HMAC-SHA256-PAYLOAD\n/b/k`, { method: 'PUT', headers: { 'x-amz-content-sha256': 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD' } });
    expectS3Error(() => verifySigV2(streaming, lookup, { now: NOW }), 'InvalidRequest', 'x-amz-content-sha256 STREAMING-AWS4-HMAC-SHA256-PAYLOAD needs a request signed with AWS4-HMAC-SHA256.');
  });
});

describe('virtual-hosted buckets', () => {
  const domain = 's3.local';
  it.each<[string, string, string]>([
    ['an upper-case host with a port names the bucket', 'B.S3.LOCAL:9000', '/b/k'],
    ['the domain itself names no bucket', 's3.local:9000', '/k'],
    ['a host that merely ends in the domain names no bucket', 'bs3.local', '/k'],
  ])('%s', (_name, host, resource) => {
    const req = signed(`GET\n\n\n${date}\n${resource}`, { rawPath: '/k', headers: { host } });
    expect(verifySigV2(req, lookup, { domain, now: NOW })).toBeTruthy();
  });
});
