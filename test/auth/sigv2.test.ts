/**
 * Signature Version 2 verification against the examples of AWS's
 * "Signing and authenticating REST requests" page
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/RESTAuthentication.html,
 * johnsmith bucket, example key AKIAIOSFODNN7EXAMPLE), and its refusals.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { staticCredentials } from '../../src/auth/credentials.js';
import { isSigV2, verifySigV2 } from '../../src/auth/sigv2.js';
import type { SignedRequest } from '../../src/auth/sigv4.js';
import { verifySignature } from '../../src/auth/verify.js';
import { S3Error } from '../../src/vocabulary/errors.js';
import { ALICE, expectS3Error, lookup } from './helpers.js';

const awsLookup = staticCredentials([{ accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', agent: 'doc-agent' }]);
const DOMAIN = { domain: 's3.amazonaws.com' };

function docRequest(method: string, path: string, date: string, signature: string, headers: Record<string, string> = {}): SignedRequest {
  const q = path.indexOf('?');
  return {
    method,
    rawPath: q < 0 ? path : path.slice(0, q),
    rawQuery: q < 0 ? '' : path.slice(q + 1),
    headers: { host: 'johnsmith.s3.amazonaws.com', date, authorization: `AWS AKIAIOSFODNN7EXAMPLE:${signature}`, ...headers },
  };
}

describe('verifySigV2: the AWS page examples (virtual-hosted johnsmith.s3.amazonaws.com)', () => {
  it('Object GET', () => {
    const date = 'Tue, 27 Mar 2007 19:36:42 +0000';
    const result = verifySigV2(docRequest('GET', '/photos/puppy.jpg', date, 'bWq2s1WEIj+Ydj0vQ697zp+IXMU='), awsLookup, { ...DOMAIN, now: new Date(date) });
    expect(result.credential.agent).toBe('doc-agent');
    expect(result.payloadMode).toBe('unsigned');
    expect(result.presigned).toBe(false);
  });

  it('Object PUT (Content-Type signed)', () => {
    const date = 'Tue, 27 Mar 2007 21:15:45 +0000';
    const req = docRequest('PUT', '/photos/puppy.jpg', date, 'MyyxeRY7whkBe+bq8fHCL/2kKUg=', { 'content-type': 'image/jpeg', 'content-length': '94328' });
    expect(verifySigV2(req, awsLookup, { ...DOMAIN, now: new Date(date) }).credential.accessKeyId).toBe('AKIAIOSFODNN7EXAMPLE');
    // Another Content-Type than the one signed does not verify.
    expectS3Error(() => verifySigV2({ ...req, headers: { ...req.headers, 'content-type': 'image/png' } }, awsLookup, { ...DOMAIN, now: new Date(date) }), 'SignatureDoesNotMatch');
  });

  it('List (query parameters that are not sub-resources are not signed)', () => {
    const date = 'Tue, 27 Mar 2007 19:42:41 +0000';
    const req = docRequest('GET', '/?prefix=photos&max-keys=50&marker=puppy', date, 'htDYFYduRNen8P9ZfE/s9SuKy0U=', { 'user-agent': 'Mozilla/5.0' });
    expect(verifySigV2(req, awsLookup, { ...DOMAIN, now: new Date(date) })).toBeTruthy();
  });

  it('Fetch (?acl sub-resource signed)', () => {
    const date = 'Tue, 27 Mar 2007 19:44:46 +0000';
    const req = docRequest('GET', '/?acl', date, 'c2WLPFtWHVgbEmeEG93a4cG37dM=');
    expect(verifySigV2(req, awsLookup, { ...DOMAIN, now: new Date(date) })).toBeTruthy();
    // Without ?acl the resource differs.
    expectS3Error(() => verifySigV2({ ...req, rawQuery: '' }, awsLookup, { ...DOMAIN, now: new Date(date) }), 'SignatureDoesNotMatch');
  });

  it('Delete (x-amz-date overrides Date)', () => {
    const amzDate = 'Tue, 27 Mar 2007 21:20:26 +0000';
    const req = docRequest('DELETE', '/photos/puppy.jpg', 'Tue, 27 Mar 2007 21:20:27 +0000', 'lx3byBScXR6KzyMaifNkardMwNk=', { 'x-amz-date': amzDate, 'user-agent': 'dotnet' });
    expect(verifySigV2(req, awsLookup, { ...DOMAIN, now: new Date(amzDate) })).toBeTruthy();
  });

  it('Upload (Content-MD5, repeated and mixed-case x-amz-meta-* headers), path style', () => {
    const date = 'Tue, 27 Mar 2007 21:06:08 +0000';
    const req: SignedRequest = {
      method: 'PUT',
      rawPath: '/static.johnsmith.net/db-backup.dat.gz',
      rawQuery: '',
      headers: {
        host: '127.0.0.1:8080',
        date,
        'x-amz-acl': 'public-read',
        'content-type': 'application/x-download',
        'content-md5': '4gJE4saaMU4BqNR0kLY+lw==',
        'x-amz-meta-reviewedby': 'joe@johnsmith.net,jane@johnsmith.net',
        'x-amz-meta-filechecksum': '0x02661779',
        'x-amz-meta-checksumalgorithm': 'crc32',
        'content-disposition': 'attachment; filename=database.dat',
        'content-encoding': 'gzip',
        'content-length': '5913339',
        authorization: 'AWS AKIAIOSFODNN7EXAMPLE:ilyl83RwaSoYIEdixDQcA4OnAnc=',
      },
    };
    const result = verifySigV2(req, awsLookup, { now: new Date(date) });
    expect(result.signedHeaders).toEqual(['content-md5', 'content-type', 'date', 'x-amz-acl', 'x-amz-meta-checksumalgorithm', 'x-amz-meta-filechecksum', 'x-amz-meta-reviewedby']);
  });

  it('Query string authentication (Expires in the Date position)', () => {
    const req: SignedRequest = {
      method: 'GET',
      rawPath: '/photos/puppy.jpg',
      rawQuery: 'AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D&Expires=1175139620',
      headers: { host: 'johnsmith.s3.amazonaws.com' },
    };
    const before = new Date(1175139620 * 1000 - 60_000);
    const result = verifySignature(req, awsLookup, { ...DOMAIN, now: before })!;
    expect(result.presigned).toBe(true);
    expect(result.credential.agent).toBe('doc-agent');
    const err = expectS3Error(() => verifySigV2(req, awsLookup, { ...DOMAIN, now: new Date(1175139621 * 1000) }), 'AccessDenied', 'Request has expired');
    expect(err.status).toBe(403);
  });
});

// --- Signing our own requests, as botocore's HmacV1Auth does ---------------------

const NOW = new Date('2026-03-01T12:00:00Z');

function sign(secret: string, stringToSign: string): string {
  return createHmac('sha1', secret).update(Buffer.from(stringToSign, 'utf8')).digest('base64');
}

describe('verifySigV2: refusals and leniencies', () => {
  const date = NOW.toUTCString();
  const headerRequest = (stringToSign: string, headers: Record<string, string> = {}, path = '/b/k'): SignedRequest => {
    const q = path.indexOf('?');
    return {
      method: 'GET',
      rawPath: q < 0 ? path : path.slice(0, q),
      rawQuery: q < 0 ? '' : path.slice(q + 1),
      headers: { host: '127.0.0.1', date, authorization: `AWS ${ALICE.accessKeyId}:${sign(ALICE.secretAccessKey, stringToSign)}`, ...headers },
    };
  };

  it('a wrong secret → SignatureDoesNotMatch with the StringToSign; an unknown key → InvalidAccessKeyId', () => {
    const req = headerRequest(`GET\n\n\n${date}\n/b/k`);
    expect(verifySigV2(req, lookup, { now: NOW }).credential.agent).toBe('alice');
    const forged = { ...req, headers: { ...req.headers, authorization: `AWS ${ALICE.accessKeyId}:${sign('not-the-secret', `GET\n\n\n${date}\n/b/k`)}` } };
    const err = expectS3Error(() => verifySigV2(forged, lookup, { now: NOW }), 'SignatureDoesNotMatch');
    expect(err.status).toBe(403);
    expect(err.fields['StringToSign']).toBe(`GET\n\n\n${date}\n/b/k`);
    expectS3Error(() => verifySigV2({ ...req, headers: { ...req.headers, authorization: 'AWS NOSUCHKEY:abc=' } }, lookup, { now: NOW }), 'InvalidAccessKeyId');
  });

  it('constant-time comparison of equal-length digests: a one-bit change fails', () => {
    const req = headerRequest(`GET\n\n\n${date}\n/b/k`);
    const sig = req.headers['authorization']!.split(':')[1]!;
    const flipped = Buffer.from(sig, 'base64');
    flipped[0]! ^= 1;
    expectS3Error(() => verifySigV2({ ...req, headers: { ...req.headers, authorization: `AWS ${ALICE.accessKeyId}:${flipped.toString('base64')}` } }, lookup, { now: NOW }), 'SignatureDoesNotMatch');
  });

  it('the clock: 20 minutes off → RequestTimeTooSkewed; no date at all → AccessDenied', () => {
    const old = new Date(NOW.getTime() - 20 * 60_000).toUTCString();
    expectS3Error(() => verifySigV2(headerRequest(`GET\n\n\n${old}\n/b/k`, { date: old }), lookup, { now: NOW }), 'RequestTimeTooSkewed');
    const req = headerRequest(`GET\n\n\n\n/b/k`);
    delete req.headers['date'];
    expectS3Error(() => verifySigV2(req, lookup, { now: NOW }), 'AccessDenied', /Date or x-amz-date/);
  });

  it('a date before the epoch is no valid date: AccessDenied, not RequestTimeTooSkewed (as S3 and Ceph RGW, s3-tests *_bad_date_before_epoch_aws2)', () => {
    const epochless = 'Tue, 07 Jul 1950 21:53:04 GMT';
    expectS3Error(() => verifySigV2(headerRequest(`GET\n\n\n${epochless}\n/b/k`, { date: epochless }), lookup, { now: NOW }), 'AccessDenied', /Date or x-amz-date/);
    // Before today but after the epoch stays a skew.
    const old = 'Tue, 07 Jul 2010 21:53:04 GMT';
    expectS3Error(() => verifySigV2(headerRequest(`GET\n\n\n${old}\n/b/k`, { date: old }), lookup, { now: NOW }), 'RequestTimeTooSkewed');
  });

  it('x-amz-date with an empty Date position (the rule s3cmd follows)', () => {
    const req = headerRequest(`GET\n\n\n\nx-amz-date:${date}\n/b/k`, { 'x-amz-date': date });
    delete req.headers['date'];
    expect(verifySigV2(req, lookup, { now: NOW })).toBeTruthy();
  });

  it('sub-resources: sorted, values decoded; response-* overrides and tagging (botocore) signed; other parameters not', () => {
    const sts = `GET\n\n\n${date}\n/b/k?response-content-disposition=attachment; filename="a b.txt"&tagging&versionId=3/L4kqtJl`;
    const req = headerRequest(sts, {}, '/b/k?versionId=3%2FL4kqtJl&tagging&response-content-disposition=attachment%3B%20filename%3D%22a%20b.txt%22&max-keys=3');
    expect(verifySigV2(req, lookup, { now: NOW })).toBeTruthy();
    // s3cmd and the AWS page do not sign tagging: that list is tried too.
    const narrow = headerRequest(`GET\n\n\n${date}\n/b/k?uploadId=x`, {}, '/b/k?tagging&uploadId=x');
    expect(verifySigV2(narrow, lookup, { now: NOW })).toBeTruthy();
  });

  it('a path-style bucket request may sign "/bucket/" (botocore) or "/bucket"', () => {
    expect(verifySigV2(headerRequest(`GET\n\n\n${date}\n/b/`, {}, '/b'), lookup, { now: NOW })).toBeTruthy();
    expect(verifySigV2(headerRequest(`GET\n\n\n${date}\n/b`, {}, '/b'), lookup, { now: NOW })).toBeTruthy();
  });

  it('virtual-hosted style signs the bucket before the path', () => {
    const req = { ...headerRequest(`GET\n\n\n${date}\n/b/k`, {}, '/k'), headers: { ...headerRequest(`GET\n\n\n${date}\n/b/k`).headers, host: 'b.s3.local:9000' } };
    expect(verifySigV2(req, lookup, { domain: 's3.local', now: NOW })).toBeTruthy();
    expectS3Error(() => verifySigV2(req, lookup, { now: NOW }), 'SignatureDoesNotMatch');
  });

  it('presigned: missing parameters, a non-numeric or past Expires → 403 AccessDenied', () => {
    const expires = Math.floor(NOW.getTime() / 1000) + 60;
    const sig = encodeURIComponent(sign(ALICE.secretAccessKey, `GET\n\n\n${expires}\n/b/k`));
    const req: SignedRequest = { method: 'GET', rawPath: '/b/k', rawQuery: `AWSAccessKeyId=${ALICE.accessKeyId}&Expires=${expires}&Signature=${sig}`, headers: { host: '127.0.0.1' } };
    expect(verifySignature(req, lookup, { now: NOW })!.credential.agent).toBe('alice');
    expectS3Error(() => verifySignature(req, lookup, { now: new Date((expires + 1) * 1000) }), 'AccessDenied', 'Request has expired');
    expectS3Error(() => verifySignature({ ...req, rawQuery: `AWSAccessKeyId=${ALICE.accessKeyId}&Signature=${sig}` }, lookup, { now: NOW }), 'AccessDenied', /requires the Signature, Expires and AWSAccessKeyId/);
    expectS3Error(() => verifySignature({ ...req, rawQuery: `AWSAccessKeyId=${ALICE.accessKeyId}&Expires=soon&Signature=${sig}` }, lookup, { now: NOW }), 'AccessDenied', /seconds since epoch/);
    expectS3Error(() => verifySignature({ ...req, rawPath: '/b/other' }, lookup, { now: NOW }), 'SignatureDoesNotMatch');
  });

  it('presigned with x-amz-* and content-type hoisted into the query (botocore) verifies', () => {
    const expires = Math.floor(NOW.getTime() / 1000) + 60;
    const sig = encodeURIComponent(sign(ALICE.secretAccessKey, `PUT\n\ntext/plain\n${expires}\nx-amz-meta-a:1\n/b/k`));
    const req: SignedRequest = { method: 'PUT', rawPath: '/b/k', rawQuery: `AWSAccessKeyId=${ALICE.accessKeyId}&Expires=${expires}&content-type=text%2Fplain&x-amz-meta-a=1&Signature=${sig}`, headers: { host: '127.0.0.1' } };
    expect(verifySignature(req, lookup, { now: NOW })).toBeTruthy();
  });

  it('dispatch: V2 forms go to sigv2, V4 to sigv4, both at once → InvalidArgument', () => {
    expect(isSigV2({ method: 'GET', rawPath: '/', rawQuery: '', headers: { authorization: 'AWS a:b' } })).toBe(true);
    expect(isSigV2({ method: 'GET', rawPath: '/', rawQuery: '', headers: { authorization: 'AWS4-HMAC-SHA256 Credential=a' } })).toBe(false);
    expect(isSigV2({ method: 'GET', rawPath: '/', rawQuery: 'AWSAccessKeyId=a&Signature=b&Expires=1', headers: {} })).toBe(true);
    expect(isSigV2({ method: 'GET', rawPath: '/', rawQuery: 'X-Amz-Signature=a', headers: {} })).toBe(false);
    expect(isSigV2({ method: 'GET', rawPath: '/', rawQuery: 'X-Amz-Signature=a', headers: { authorization: 'AWS a:b' } })).toBe(false);
    expect(isSigV2({ method: 'GET', rawPath: '/', rawQuery: 'list-type=2&prefix=Signature', headers: {} })).toBe(false);
    expect(verifySignature({ method: 'GET', rawPath: '/', rawQuery: '', headers: {} }, lookup)).toBeNull();
    expectS3Error(() => verifySignature({ method: 'GET', rawPath: '/', rawQuery: 'AWSAccessKeyId=a&Signature=b&Expires=1', headers: { authorization: 'AWS a:b' } }, lookup), 'InvalidArgument');
  });

  it('a literal x-amz-content-sha256 is kept for the payload check; signed streaming needs SigV4', () => {
    const hash = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
    const req = headerRequest(`GET\n\n\n${date}\nx-amz-content-sha256:${hash}\n/b/k`, { 'x-amz-content-sha256': hash });
    expect(verifySigV2(req, lookup, { now: NOW })).toMatchObject({ payloadMode: 'literal', declaredSha256: hash });
    const streaming = headerRequest(`GET\n\n\n${date}\nx-amz-content-sha256:STREAMING-AWS4-HMAC-SHA256-PAYLOAD\n/b/k`, { 'x-amz-content-sha256': 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD' });
    expectS3Error(() => verifySigV2(streaming, lookup, { now: NOW }), 'InvalidRequest');
  });
});
