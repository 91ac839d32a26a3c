/**
 * Signature Version 2 (src/auth/sigv2.ts): which requests are read as V2 at
 * all, and the details of what V2 signs that the AWS page's examples leave
 * untouched — the resource's path candidates, sub-resource order, amz header
 * values, the bytes of the string to sign, and the payload hash it passes on.
 * Signatures are computed here as the page defines them:
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/RESTAuthentication.html
 */
import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isSigV2, verifySigV2 } from '../../src/auth/sigv2.js';
import type { SignedRequest } from '../../src/auth/sigv4.js';
import { verifySignature } from '../../src/auth/verify.js';
import { S3Error } from '../../src/vocabulary/errors.js';
import { ALICE, expectS3Error, lookup, presign, sigv2Signed } from './helpers.js';

const NOW = new Date('2026-03-01T12:00:00Z');
const date = NOW.toUTCString();
const EXPIRES = NOW.getTime() / 1000 + 60;

function sign(stringToSign: string): string {
  return createHmac('sha1', ALICE.secretAccessKey).update(Buffer.from(stringToSign, 'utf8')).digest('base64');
}

const signed = sigv2Signed;

/** A presigned URL (Expires in the Date position) with `extra` query parameters besides the three of V2. */
function presigned(stringToSign: string, extra: string, over: Partial<SignedRequest> = {}): SignedRequest {
  const sig = encodeURIComponent(sign(stringToSign));
  return { method: 'GET', rawPath: '/b/k', rawQuery: `AWSAccessKeyId=${ALICE.accessKeyId}&Expires=${EXPIRES}${extra}&Signature=${sig}`, headers: { host: '127.0.0.1' }, ...over };
}

describe('which requests are Signature Version 2', () => {
  it('an Authorization of another scheme that merely mentions "AWS " is not V2: InvalidRequest asks for AWS4-HMAC-SHA256', () => {
    const req = signed(`GET\n\n\n${date}\n/b/k`, { headers: { authorization: `Token AWS ${ALICE.accessKeyId}:${sign(`GET\n\n\n${date}\n/b/k`)}` } });
    expectS3Error(() => verifySignature(req, lookup, { now: NOW }), 'InvalidRequest', /Please use AWS4-HMAC-SHA256/);
  });

  it('whitespace around the Authorization value is not part of the scheme or the key', () => {
    const req = signed(`GET\n\n\n${date}\n/b/k`);
    req.headers['authorization'] = ` ${req.headers['authorization']!}\t`;
    expect(verifySignature(req, lookup, { now: NOW })!.credential.agent).toBe('alice');
  });

  // A query naming one V2 parameter is a V2 attempt, however incomplete: the
  // client reads what is missing rather than being served as anonymous.
  it.each([
    ['Signature first, no AWSAccessKeyId', 'Signature=c2ln&Expires=1'],
    ['AWSAccessKeyId first, no Signature', `AWSAccessKeyId=${ALICE.accessKeyId}&Expires=1`],
    ['a valueless Signature last', 'Expires=1&Signature'],
  ])('%s → AccessDenied naming the three parameters', (_name, rawQuery) => {
    const req: SignedRequest = { method: 'GET', rawPath: '/b/k', rawQuery, headers: { host: '127.0.0.1' } };
    expectS3Error(() => verifySignature(req, lookup, { now: NOW }), 'AccessDenied', /requires the Signature, Expires and AWSAccessKeyId parameters/);
  });

  // An Authorization header besides a V2 query parameter is two mechanisms at once:
  // not verified as V2 (sigv4.ts answers for it).
  it.each(['Signature=c2ln', 'prefix=a&Signature'])('Authorization: AWS with the query %j is refused, not verified as V2', (rawQuery) => {
    const req = signed(`GET\n\n\n${date}\n/b/k`, { rawQuery });
    expect(isSigV2(req)).toBe(false);
    expect(() => verifySignature(req, lookup, { now: NOW })).toThrow(S3Error);
  });

  it.each(['Signature', 'AWSAccessKeyId'])('a SigV4 presigned URL that also signs a "%s" parameter verifies as SigV4', async (name) => {
    const req = await presign(ALICE, { path: '/b/k', query: { [name]: 'kept' } }, { signingDate: NOW });
    const result = verifySignature(req, lookup, { now: NOW })!;
    expect(result.presigned).toBe(true);
    expect(result.credential.agent).toBe('alice');
  });

  // Only X-Amz-Signature / X-Amz-Algorithm themselves make a URL SigV4; an
  // x-amz-* parameter (a header botocore hoisted into the query) that only
  // begins or ends like one is signed among the amz headers.
  it.each(['x-amz-meta-x-amz-signature', 'x-amz-signature-version'])('a V2 presigned URL carrying %s verifies as V2', (name) => {
    const req = presigned(`GET\n\n\n${EXPIRES}\n${name}:1\n/b/k`, `&${name}=1`);
    const result = verifySignature(req, lookup, { now: NOW })!;
    expect(result.presigned).toBe(true);
    expect(result.signedHeaders).toEqual([name]);
  });
});

describe('refusals', () => {
  it('an Expires with anything after its digits → AccessDenied, not a URL that never expires', () => {
    const req: SignedRequest = { method: 'GET', rawPath: '/b/k', rawQuery: `AWSAccessKeyId=${ALICE.accessKeyId}&Expires=${EXPIRES}x&Signature=c2ln`, headers: { host: '127.0.0.1' } };
    expectS3Error(() => verifySigV2(req, lookup, { now: NOW }), 'AccessDenied', `Invalid date (should be seconds since epoch): ${EXPIRES}x`);
  });

  it('a signature that is not a 20-byte HMAC-SHA1 (a SigV4 hex signature) → SignatureDoesNotMatch', () => {
    const req = signed('', { headers: { authorization: `AWS ${ALICE.accessKeyId}:${'ab'.repeat(32)}` } });
    expect(expectS3Error(() => verifySigV2(req, lookup, { now: NOW }), 'SignatureDoesNotMatch').status).toBe(403);
  });
});

describe('the payload hash a V2 request declares', () => {
  const hash = createHash('sha256').update('').digest('hex');
  it.each([
    ['UNSIGNED-PAYLOAD', { payloadMode: 'unsigned' }],
    [` ${hash.toUpperCase()} `, { payloadMode: 'literal', declaredSha256: hash }],
  ])('x-amz-content-sha256 %j verifies and is passed on', (value, expected) => {
    const req = signed(`PUT\n\n\n${date}\nx-amz-content-sha256:${value.trim()}\n/b/k`, { method: 'PUT', headers: { 'x-amz-content-sha256': value } });
    expect(verifySigV2(req, lookup, { now: NOW })).toMatchObject(expected);
  });

  it('65 hex digits are no SHA-256 → InvalidRequest', () => {
    const value = `0${hash}`;
    const req = signed(`PUT\n\n\n${date}\nx-amz-content-sha256:${value}\n/b/k`, { method: 'PUT', headers: { 'x-amz-content-sha256': value } });
    expectS3Error(() => verifySigV2(req, lookup, { now: NOW }), 'InvalidRequest', `x-amz-content-sha256 ${value} needs a request signed with AWS4-HMAC-SHA256.`);
  });
});

describe('amz headers and the bytes signed', () => {
  // botocore's HmacV1 canonical_custom_headers strips each value.
  it('a presigned x-amz-* parameter is signed without the spaces around its value', () => {
    const req = presigned(`PUT\n\n\n${EXPIRES}\nx-amz-meta-a:v w\n/b/k`, '&x-amz-meta-a=%20v%20w%20', { method: 'PUT' });
    expect(verifySigV2(req, lookup, { now: NOW })).toBeTruthy();
  });

  it('a presigned x-amz-* parameter without "=" is signed with an empty value', () => {
    const req = presigned(`PUT\n\n\n${EXPIRES}\nx-amz-meta-flag:\n/b/k`, '&x-amz-meta-flag', { method: 'PUT' });
    expect(verifySigV2(req, lookup, { now: NOW }).signedHeaders).toEqual(['x-amz-meta-flag']);
  });

  it('an "=" left unencoded inside a value belongs to the value', () => {
    const rawQuery = 'response-content-disposition=attachment;filename=a.txt';
    const req = signed(`GET\n\n\n${date}\n/b/k?response-content-disposition=attachment;filename=a.txt`, { rawQuery });
    expect(verifySigV2(req, lookup, { now: NOW })).toBeTruthy();
  });

  // The AWS page: unfold by replacing the folding whitespace, new-line included, with one space.
  it('a header folded with a bare LF is signed unfolded', () => {
    const req = signed(`GET\n\n\n${date}\nx-amz-meta-note:a b\n/b/k`, { headers: { 'x-amz-meta-note': 'a\n  b' } });
    expect(verifySigV2(req, lookup, { now: NOW })).toBeTruthy();
  });

  it('UTF-8 metadata, received as Node byte string, is signed as the bytes sent', () => {
    const received = Buffer.from('café', 'utf8').toString('latin1');
    const req = signed(`PUT\n\n\n${date}\nx-amz-meta-note:café\n/b/k`, { method: 'PUT', headers: { 'x-amz-meta-note': received } });
    expect(verifySigV2(req, lookup, { now: NOW })).toBeTruthy();
  });
});

describe('the CanonicalizedResource', () => {
  it('an empty request path is signed as "/"', () => {
    const req = signed(`GET\n\n\n${date}\n`, { rawPath: '' });
    const err = expectS3Error(() => verifySigV2(req, lookup, { now: NOW }), 'SignatureDoesNotMatch');
    expect(err.fields['StringToSign']).toBe(`GET\n\n\n${date}\n/`);
    expect(verifySigV2(signed(`GET\n\n\n${date}\n/`, { rawPath: '' }), lookup, { now: NOW })).toBeTruthy();
  });

  it('a path signed as received or normalised ("%7E" as "~") verifies', () => {
    for (const resource of ['/b/%7Efile', '/b/~file']) {
      expect(verifySigV2(signed(`GET\n\n\n${date}\n${resource}`, { rawPath: '/b/%7Efile' }), lookup, { now: NOW })).toBeTruthy();
    }
  });

  it('a path-style bucket of any length may sign "/bucket/"', () => {
    expect(verifySigV2(signed(`GET\n\n\n${date}\n/photos/`, { rawPath: '/photos' }), lookup, { now: NOW })).toBeTruthy();
  });

  it.each<[string, Partial<SignedRequest> & { headers?: Record<string, string> }]>([
    ['a path-style object', { rawPath: '/b/k' }],
    ['a virtual-hosted object', { rawPath: '/k', headers: { host: 'b.s3.local' } }],
  ])('only a bucket may add the trailing "/": %s signed as "/b/k/" → SignatureDoesNotMatch', (_name, over) => {
    expectS3Error(() => verifySigV2(signed(`GET\n\n\n${date}\n/b/k/`, over), lookup, { domain: 's3.local', now: NOW }), 'SignatureDoesNotMatch');
  });

  // addressing.ts cuts only a trailing ":port" too: the bucket signed is the bucket routed to.
  it('only a trailing ":port" is cut from Host', () => {
    const req = signed(`GET\n\n\n${date}\n/b:1/k`, { rawPath: '/k', headers: { host: 'b:1.s3.local' } });
    expect(verifySigV2(req, lookup, { domain: 's3.local', now: NOW })).toBeTruthy();
  });

  // botocore sorts the sub-resources by name, stably.
  it.each([
    ['in reverse order', 'uploadId=x&partNumber=1', '?partNumber=1&uploadId=x'],
    ['not in the order the AWS page lists them', 'versionId=2&response-content-type=a', '?response-content-type=a&versionId=2'],
    ['already in order', 'partNumber=1&uploadId=x', '?partNumber=1&uploadId=x'],
    ['a repeated name in query order', 'versionId=2&acl&versionId=1', '?acl&versionId=2&versionId=1'],
  ])('sub-resources are signed sorted by name: %s', (_name, rawQuery, suffix) => {
    expect(verifySigV2(signed(`GET\n\n\n${date}\n/b/k${suffix}`, { rawQuery }), lookup, { now: NOW })).toBeTruthy();
  });
});
