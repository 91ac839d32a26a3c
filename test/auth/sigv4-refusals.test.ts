/**
 * What a client is told when SigV4 (src/auth/sigv4.ts) refuses it: the S3
 * error Code, the message S3 words it with, and the fields of the error body
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html), at
 * the edges of each rule — the clock skew and a presigned URL's lifetime to
 * the millisecond. Requests are signed by @smithy/signature-v4.
 */
import { describe, expect, it } from 'vitest';
import { verifySigV4 } from '../../src/auth/sigv4.js';
import { ALICE, expectS3Error, lookup, presign, signHeader } from './helpers.js';

const NOW = new Date('2026-03-01T12:00:00Z');
const at = (ms: number) => new Date(NOW.getTime() + ms);
const MINUTES_15 = 15 * 60_000;

async function withAuthorization(replace: (auth: string) => string) {
  const req = await signHeader(ALICE, { path: '/b/k' }, { signingDate: NOW });
  return { ...req, headers: { ...req.headers, authorization: replace(req.headers['authorization']!) } };
}

describe('Authorization header: AuthorizationHeaderMalformed says which part is wrong', () => {
  it.each<[string, (auth: string) => string, string]>([
    ['a component without "="', (a) => a.replace('SignedHeaders=', 'SignedHeaders '), 'The authorization header is malformed; unexpected component "SignedHeaders".'],
    ['a component that starts with "="', (a) => `${a}, =x`, 'The authorization header is malformed; unexpected component "=x".'],
    ['a component given twice', (a) => `${a}, Signature=00`, 'The authorization header is malformed; duplicate Signature.'],
    ['no Credential', (a) => a.replace('Credential=', 'Credentials='), 'The authorization header is malformed; missing Credential.'],
    ['no SignedHeaders', (a) => a.replace('SignedHeaders=', 'Headers='), 'The authorization header is malformed; missing SignedHeaders.'],
    ['no Signature', (a) => a.replace('Signature=', 'Sig='), 'The authorization header is malformed; missing Signature.'],
    ['a scope of four parts', (a) => a.replace('/us-east-1/', '/'), 'The authorization header is malformed; the credential is mal-formed; expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".'],
    ['an empty region', (a) => a.replace('/us-east-1/', '//'), 'the credential is mal-formed'],
    ['a date of letters', (a) => a.replace('/20260301/', '/2026030x/'), 'the credential is mal-formed'],
    ['another service', (a) => a.replace('/s3/', '/sts/'), 'The authorization header is malformed; incorrect service "sts". This endpoint belongs to "s3".'],
    ['an empty signed header name', (a) => a.replace('SignedHeaders=host;', 'SignedHeaders=host;;'), 'The authorization header is malformed; SignedHeaders is malformed.'],
    ['a scope dated another day', (a) => a.replace('/20260301/', '/20260302/'), 'The authorization header is malformed; Invalid credential date. Date is not the same as X-Amz-Date.'],
  ])('%s', async (_name, replace, message) => {
    const req = await withAuthorization(replace);
    expectS3Error(() => verifySigV4(req, lookup, NOW), 'AuthorizationHeaderMalformed', message.startsWith('The') ? new RegExp(`^${escape(message)}$`) : message);
  });

  it('another algorithm is InvalidRequest, naming the one supported', async () => {
    const req = await withAuthorization((a) => a.replace('AWS4-HMAC-SHA256', 'AWS4-HMAC-SHA512'));
    expectS3Error(() => verifySigV4(req, lookup, NOW), 'InvalidRequest', 'The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.');
  });

  it('an unknown key is InvalidAccessKeyId naming the key', async () => {
    const req = await withAuthorization((a) => a.replace('AKIDALICE', 'AKIDNOBODY'));
    expect(expectS3Error(() => verifySigV4(req, lookup, NOW), 'InvalidAccessKeyId').fields).toEqual({ AWSAccessKeyId: 'AKIDNOBODY' });
  });
});

describe('Authorization header: the request time', () => {
  it('exactly 15 minutes either way passes; one millisecond more is RequestTimeTooSkewed with the server time', async () => {
    const req = await signHeader(ALICE, { path: '/b/k' }, { signingDate: NOW });
    expect(verifySigV4(req, lookup, at(MINUTES_15))).not.toBeNull();
    expect(verifySigV4(req, lookup, at(-MINUTES_15))).not.toBeNull();
    const err = expectS3Error(() => verifySigV4(req, lookup, at(MINUTES_15 + 1)), 'RequestTimeTooSkewed');
    expect(err.fields['ServerTime']).toBe('2026-03-01T12:15:00.001Z');
    expectS3Error(() => verifySigV4(req, lookup, at(-MINUTES_15 - 1)), 'RequestTimeTooSkewed');
  });

  it('without x-amz-date, the Date header dates the request (and is what RequestTime shows)', async () => {
    const date = 'Sun, 01 Mar 2026 12:00:00 GMT';
    const req = await signHeader(ALICE, { path: '/b/k' }, { signingDate: NOW });
    // Signed with x-amz-date (smithy always sends it), received with Date instead:
    // the request is dated, so the signature is what fails.
    const { 'x-amz-date': _, ...rest } = req.headers;
    const headers = { ...rest, date };
    expectS3Error(() => verifySigV4({ ...req, headers }, lookup, NOW), 'SignatureDoesNotMatch');
    const err = expectS3Error(() => verifySigV4({ ...req, headers }, lookup, at(MINUTES_15 + 1000)), 'RequestTimeTooSkewed');
    expect(err.fields['RequestTime']).toBe(date);
    expectS3Error(() => verifySigV4({ ...req, headers: { ...headers, date: 'yesterday' } }, lookup, NOW), 'AccessDenied', 'AWS authentication requires a valid Date or x-amz-date header');
  });

  it.each(['20260229T120000Z', '20260301T250000Z', '20261301T120000Z', '2026-03-01T12:00:00Z'])('x-amz-date %s is no date: AccessDenied', async (value) => {
    const req = await signHeader(ALICE, { path: '/b/k' }, { signingDate: NOW });
    expectS3Error(() => verifySigV4({ ...req, headers: { ...req.headers, 'x-amz-date': value } }, lookup, NOW), 'AccessDenied', 'AWS authentication requires a valid Date or x-amz-date header');
  });

  it('x-amz-date with spaces around it is the same date', async () => {
    const req = await signHeader(ALICE, { path: '/b/k' }, { signingDate: NOW });
    // The canonical header value is trimmed too, so the signature still holds.
    expect(verifySigV4({ ...req, headers: { ...req.headers, 'x-amz-date': ` ${req.headers['x-amz-date']} ` } }, lookup, NOW)).not.toBeNull();
  });
});

describe('SignatureDoesNotMatch carries what S3 shows a client to debug with', () => {
  it('the canonical request, the string to sign, the signature provided and the key', async () => {
    const req = await signHeader({ ...ALICE, secretAccessKey: 'wrong' }, { path: '/b/k' }, { signingDate: NOW });
    const provided = /Signature=(\w+)/.exec(req.headers['authorization']!)![1]!;
    const err = expectS3Error(() => verifySigV4(req, lookup, NOW), 'SignatureDoesNotMatch');
    expect(err.fields['SignatureProvided']).toBe(provided);
    expect(err.fields['AWSAccessKeyId']).toBe('AKIDALICE');
    expect(String(err.fields['CanonicalRequest']).split('\n').slice(0, 3)).toEqual(['GET', '/b/k', '']);
    expect(String(err.fields['StringToSign']).split('\n').slice(0, 3)).toEqual(['AWS4-HMAC-SHA256', '20260301T120000Z', '20260301/us-east-1/s3/aws4_request']);
  });

  it('a signature in upper-case hex is the same signature', async () => {
    const req = await signHeader(ALICE, { path: '/b/k' }, { signingDate: NOW });
    const upper = req.headers['authorization']!.replace(/Signature=(\w+)/, (_m, s: string) => `Signature=${s.toUpperCase()}`);
    expect(verifySigV4({ ...req, headers: { ...req.headers, authorization: upper } }, lookup, NOW)).not.toBeNull();
  });

  it('a signature one hex digit short is SignatureDoesNotMatch, not an exception', async () => {
    const req = await withAuthorization((a) => a.replace(/Signature=(\w+)\w/, 'Signature=$1'));
    expectS3Error(() => verifySigV4(req, lookup, NOW), 'SignatureDoesNotMatch');
  });
});

describe('presigned URLs: refusals and the edges of their lifetime', () => {
  it('a missing parameter names all six', async () => {
    const req = await presign(ALICE, { path: '/b/k' }, { signingDate: NOW });
    for (const name of ['X-Amz-Algorithm', 'X-Amz-Credential', 'X-Amz-Date', 'X-Amz-Expires', 'X-Amz-SignedHeaders']) {
      const rawQuery = req.rawQuery.replace(new RegExp(`&?${name}=[^&]+`), '');
      expectS3Error(
        () => verifySigV4({ ...req, rawQuery }, lookup, NOW),
        'AuthorizationQueryParametersError',
        'Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.',
      );
    }
  });

  it.each<[string, (q: string) => string, string]>([
    ['another algorithm', (q) => q.replace('X-Amz-Algorithm=AWS4-HMAC-SHA256', 'X-Amz-Algorithm=AWS4-HMAC-SHA1'), 'X-Amz-Algorithm only supports "AWS4-HMAC-SHA256"'],
    ['a date that is not ISO 8601 basic', (q) => q.replace(/X-Amz-Date=\w+/, 'X-Amz-Date=20260301'), 'X-Amz-Date must be in the ISO8601 Long Format "yyyyMMdd\'T\'HHmmss\'Z\'"'],
    ['a scope dated another day', (q) => q.replace('%2F20260301%2F', '%2F20260302%2F'), 'Invalid credential date "20260302". This date is not the same as X-Amz-Date: "20260301".'],
    ['a malformed credential', (q) => q.replace('%2Faws4_request', '%2Faws4'), 'Error parsing the X-Amz-Credential parameter; the credential is mal-formed; expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".'],
    ['an empty signed header name', (q) => q.replace('X-Amz-SignedHeaders=host', 'X-Amz-SignedHeaders=host%3B'), 'SignedHeaders is malformed.'],
  ])('%s → AuthorizationQueryParametersError', async (_name, change, message) => {
    const req = await presign(ALICE, { path: '/b/k' }, { signingDate: NOW });
    const rawQuery = change(req.rawQuery);
    expect(rawQuery).not.toBe(req.rawQuery);
    expectS3Error(() => verifySigV4({ ...req, rawQuery }, lookup, NOW), 'AuthorizationQueryParametersError', message);
  });

  it('an unknown key is InvalidAccessKeyId naming the key', async () => {
    const req = await presign({ accessKeyId: 'AKIDNOBODY', secretAccessKey: 'x' }, { path: '/b/k' }, { signingDate: NOW });
    expect(expectS3Error(() => verifySigV4(req, lookup, NOW), 'InvalidAccessKeyId').fields).toEqual({ AWSAccessKeyId: 'AKIDNOBODY' });
  });

  it('valid through its last millisecond; the next one it has expired, and says when', async () => {
    const req = await presign(ALICE, { path: '/b/k' }, { signingDate: NOW, expiresIn: 60 });
    expect(verifySigV4(req, lookup, at(60_000))).not.toBeNull();
    const err = expectS3Error(() => verifySigV4(req, lookup, at(60_001)), 'AccessDenied', /^Request has expired$/);
    expect(err.fields).toEqual({ 'X-Amz-Expires': '60', Expires: '2026-03-01T12:01:00.000Z', ServerTime: '2026-03-01T12:01:00.001Z' });
  });

  it('dated up to 15 minutes ahead is accepted (clock tolerance); one millisecond more is not valid yet', async () => {
    const req = await presign(ALICE, { path: '/b/k' }, { signingDate: at(MINUTES_15) });
    expect(verifySigV4(req, lookup, NOW)).not.toBeNull();
    expectS3Error(() => verifySigV4(req, lookup, at(-1)), 'AccessDenied', /^Request is not valid yet$/);
  });

  it('X-Amz-Expires above a week says so in S3’s words', async () => {
    const req = await presign(ALICE, { path: '/b/k' }, { signingDate: NOW });
    const rawQuery = req.rawQuery.replace(/X-Amz-Expires=\d+/, 'X-Amz-Expires=604801');
    expectS3Error(() => verifySigV4({ ...req, rawQuery }, lookup, NOW), 'AccessDenied', /^X-Amz-Expires must be less than a week \(in seconds\); that is, the given X-Amz-Expires must be less than 604800 seconds$/);
  });

  it('a URL valid for exactly a week verifies at the end of the week', async () => {
    const req = await presign(ALICE, { path: '/b/k' }, { signingDate: NOW, expiresIn: 604_800 });
    expect(verifySigV4(req, lookup, at(604_800_000))).not.toBeNull();
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
