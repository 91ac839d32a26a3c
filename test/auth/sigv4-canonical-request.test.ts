/**
 * SigV4 details the other sigv4 tests leave open: which query parameters make
 * a request presigned (or SigV2), credential scopes at their edges, the forms
 * X-Amz-Expires and x-amz-content-sha256 may take, and the canonical request's
 * finer rules (empty path, raw bytes in the path, empty or repeated query
 * names, header values folded or spaced). Requests are signed by
 * @smithy/signature-v4 where it can express them, and by a raw signer where it
 * cannot (a presigned X-Amz-SignedHeaders with spaces in it).
 */
import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Credential } from '../../src/auth/credentials.js';
import { signedRequestFromNode, verifySigV4, type SignedRequest } from '../../src/auth/sigv4.js';
import { ALICE, expectS3Error, lookup, presign, signer, signHeader, strictEncode, toQueryString } from './helpers.js';

const NOW = new Date('2026-03-01T12:00:00Z');
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** Signs with smithy's header auth, query and path exactly as given, and returns what casket would receive. */
async function signWith(input: { path: string; query?: Record<string, string | string[]>; headers?: Record<string, string> }): Promise<SignedRequest> {
  const host = 'casket.test:9000';
  const headers = { host, 'x-amz-content-sha256': EMPTY_SHA256, ...(input.headers ?? {}) };
  const signed = await signer(ALICE).sign({ method: 'GET', protocol: 'http:', hostname: host, path: input.path, query: input.query ?? {}, headers }, { signingDate: NOW });
  const qs = toQueryString(input.query ?? {});
  return signedRequestFromNode('GET', qs ? `${signed.path}?${qs}` : signed.path, Object.entries(signed.headers as Record<string, string>).flat());
}

/**
 * A raw SigV4 signer over a canonical request written out by hand, for what
 * SDK signers will not produce. Key derivation and string to sign as in
 * https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html
 */
function rawSignature(credential: Credential, amzDate: string, canonicalRequest: string): string {
  const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data).digest();
  const date = amzDate.slice(0, 8);
  const key = hmac(hmac(hmac(hmac(`AWS4${credential.secretAccessKey}`, date), 'us-east-1'), 's3'), 'aws4_request');
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, `${date}/us-east-1/s3/aws4_request`, sha256(canonicalRequest)].join('\n');
  return hmac(key, stringToSign).toString('hex');
}

describe('which auth a request carries', () => {
  it('X-Amz-Algorithm alone makes a request presigned: the other parameters are then required', () => {
    const req: SignedRequest = { method: 'GET', rawPath: '/b/k', rawQuery: 'X-Amz-Algorithm=AWS4-HMAC-SHA256', headers: { host: 'h' } };
    expectS3Error(() => verifySigV4(req, lookup, NOW), 'AuthorizationQueryParametersError', /requires the X-Amz-Algorithm, X-Amz-Credential/);
  });

  it('X-Amz-Algorithm beside an Authorization header is two mechanisms: InvalidArgument', async () => {
    const req = await signWith({ path: '/b/k', query: { 'X-Amz-Algorithm': 'AWS4-HMAC-SHA256' } });
    expectS3Error(() => verifySigV4(req, lookup, NOW), 'InvalidArgument', /Only one auth mechanism allowed/);
  });

  // SigV2 query auth needs both AWSAccessKeyId and Signature; either alone is
  // an ordinary query parameter (an anonymous request, or part of a signed one).
  it.each([['Signature'], ['AWSAccessKeyId']])('a lone %s query parameter is no SigV2 request', async (name) => {
    const anonymous: SignedRequest = { method: 'GET', rawPath: '/b/k', rawQuery: `${name}=x`, headers: { host: 'h' } };
    expect(verifySigV4(anonymous, lookup, NOW)).toBeNull();
    const signed = await signWith({ path: '/b/k', query: { [name]: 'x' } });
    expect(verifySigV4(signed, lookup, NOW)?.credential).toBe(ALICE);
  });
});

describe('credential scope', () => {
  it('an access key ID may itself contain "/": the scope is the last four components', async () => {
    const slashed: Credential = { accessKeyId: 'TEAM/AKID', secretAccessKey: 'team-secret' };
    const req = await signHeader(slashed, { path: '/b/k' }, { signingDate: NOW });
    expect(req.headers['authorization']).toContain('Credential=TEAM/AKID/20260301/');
    expect(verifySigV4(req, (id) => (id === 'TEAM/AKID' ? slashed : undefined), NOW)?.credential).toBe(slashed);
  });

  it.each<[string, (auth: string) => string]>([
    ['no access key before the date', (a) => a.replace('Credential=AKIDALICE/', 'Credential=/')],
    ['a date of nine digits (extra digit first)', (a) => a.replace('/20260301/', '/120260301/')],
    ['a date of nine digits (extra digit last)', (a) => a.replace('/20260301/', '/202603011/')],
  ])('%s → AuthorizationHeaderMalformed, the credential is mal-formed', async (_name, change) => {
    const req = await signHeader(ALICE, { path: '/b/k' }, { signingDate: NOW });
    const authorization = change(req.headers['authorization']!);
    expect(authorization).not.toBe(req.headers['authorization']);
    expectS3Error(() => verifySigV4({ ...req, headers: { ...req.headers, authorization } }, lookup, NOW), 'AuthorizationHeaderMalformed', /the credential is mal-formed; expecting/);
  });
});

describe('presigned X-Amz-Expires: a negative number, or no number at all (403 AccessDenied, as AWS)', () => {
  it.each([
    ['-15', 'X-Amz-Expires must be non-negative'],
    ['1-5', 'X-Amz-Expires should be a number'],
    ['-5x', 'X-Amz-Expires should be a number'],
    ['x5', 'X-Amz-Expires should be a number'],
    ['5x', 'X-Amz-Expires should be a number'],
  ])('X-Amz-Expires=%s → %s', async (value, message) => {
    const req = await presign(ALICE, { path: '/b/k' }, { signingDate: NOW });
    const rawQuery = req.rawQuery.replace(/X-Amz-Expires=\d+/, `X-Amz-Expires=${value}`);
    expectS3Error(() => verifySigV4({ ...req, rawQuery }, lookup, NOW), 'AccessDenied', new RegExp(`^${message}$`));
  });
});

describe('presigned URLs: the payload hash they declare', () => {
  const presignAs = async (headers: Record<string, string>, query: Record<string, string>, options: { unhoistableHeaders?: Set<string> } = {}) => {
    const host = 'casket.test:9000';
    const signed = await signer(ALICE).presign({ method: 'PUT', protocol: 'http:', hostname: host, path: '/b/k', query, headers: { host, ...headers } }, { signingDate: NOW, expiresIn: 600, ...options });
    return signedRequestFromNode('PUT', `${signed.path}?${toQueryString(signed.query ?? {})}`, Object.entries(signed.headers as Record<string, string>).flat());
  };

  it('x-amz-content-sha256 sent as a signed header (not hoisted into the query) is the declared hash', async () => {
    const hash = sha256('the body');
    const req = await presignAs({ 'x-amz-content-sha256': hash }, {}, { unhoistableHeaders: new Set(['x-amz-content-sha256']) });
    expect(req.headers['x-amz-content-sha256']).toBe(hash);
    expect(req.rawQuery).not.toMatch(/(^|&)x-amz-content-sha256=/i);
    const result = verifySigV4(req, lookup, NOW)!;
    expect(result.payloadMode).toBe('literal');
    expect(result.declaredSha256).toBe(hash);
  });

  it.each([
    ['as it is', EMPTY_SHA256],
    ['with a space before it', ` ${EMPTY_SHA256}`],
  ])('X-Amz-Content-Sha256 in the query %s is the declared hash', async (_name, value) => {
    // No header and no body: smithy signs the empty body's hash, which the query names.
    const req = await presignAs({}, { 'X-Amz-Content-Sha256': value });
    expect(req.headers['x-amz-content-sha256']).toBeUndefined();
    const result = verifySigV4(req, lookup, NOW)!;
    expect(result.payloadMode).toBe('literal');
    expect(result.declaredSha256).toBe(EMPTY_SHA256);
  });

  it('an UNSIGNED-PAYLOAD URL declares no hash at all', async () => {
    const req = await presign(ALICE, { path: '/b/k' }, { signingDate: NOW });
    const result = verifySigV4(req, lookup, NOW)!;
    expect(result.payloadMode).toBe('unsigned');
    expect(result).not.toHaveProperty('declaredSha256');
  });
});

describe('SignedHeaders', () => {
  it('host left unsigned is AccessDenied in S3’s words, naming host', async () => {
    const req = await signHeader(ALICE, { path: '/b/k' }, { signingDate: NOW });
    const authorization = req.headers['authorization']!.replace('SignedHeaders=host;', 'SignedHeaders=');
    const err = expectS3Error(() => verifySigV4({ ...req, headers: { ...req.headers, authorization } }, lookup, NOW), 'AccessDenied', /^There were headers present in the request which were not signed$/);
    expect(err.fields).toEqual({ HeadersNotSigned: 'host' });
  });

  it('presigned X-Amz-SignedHeaders names are read trimmed: "host; x-amz-meta-a" signs host and x-amz-meta-a', () => {
    const amzDate = '20260301T120000Z';
    const query = [
      'X-Amz-Algorithm=AWS4-HMAC-SHA256',
      'X-Amz-Credential=AKIDALICE%2F20260301%2Fus-east-1%2Fs3%2Faws4_request',
      `X-Amz-Date=${amzDate}`,
      'X-Amz-Expires=600',
      'X-Amz-SignedHeaders=host%3B%20x-amz-meta-a',
    ].join('&');
    const canonicalRequest = ['GET', '/b/k', query, 'host:casket.test', 'x-amz-meta-a:1', '', 'host;x-amz-meta-a', 'UNSIGNED-PAYLOAD'].join('\n');
    const req: SignedRequest = {
      method: 'GET',
      rawPath: '/b/k',
      rawQuery: `${query}&X-Amz-Signature=${rawSignature(ALICE, amzDate, canonicalRequest)}`,
      headers: { host: 'casket.test', 'x-amz-meta-a': '1' },
    };
    expect(verifySigV4(req, lookup, NOW)?.signedHeaders).toEqual(['host', 'x-amz-meta-a']);
    // The header is covered: another value breaks the signature.
    expectS3Error(() => verifySigV4({ ...req, headers: { ...req.headers, 'x-amz-meta-a': '2' } }, lookup, NOW), 'SignatureDoesNotMatch');
  });
});

describe('canonical headers', () => {
  it('a header signed with an empty value verifies when it arrives dropped (some proxies drop empty headers)', async () => {
    const req = await signHeader(ALICE, { path: '/b/k', headers: { 'x-amz-meta-note': '' } }, { signingDate: NOW });
    expect(req.headers['authorization']).toContain('x-amz-meta-note');
    const { 'x-amz-meta-note': _, ...dropped } = req.headers;
    expect(verifySigV4({ ...req, headers: dropped }, lookup, NOW)).not.toBeNull();
  });

  // "Trimall": sequential spaces become one, and a folded line break counts as
  // a space (sig-v4-header-based-auth.html, CanonicalHeaders).
  it.each([
    ['runs of spaces and tabs', 'a   lot \t of    space'],
    ['a line break', 'first\nsecond'],
    ['a folded line', 'first\r\n second'],
  ])('a value received with %s is signed collapsed to single spaces', async (_name, value) => {
    const req = await signHeader(ALICE, { path: '/b/k', headers: { 'x-amz-meta-note': value } }, { signingDate: NOW });
    expect(req.headers['x-amz-meta-note']).toBe(value);
    expect(verifySigV4(req, lookup, NOW)).not.toBeNull();
  });
});

describe('canonical URI', () => {
  // "If the absolute path is empty, use a forward slash character (/)"
  // (sig-v4-header-based-auth.html, CanonicalURI).
  it('a request target that is only a query has the path "/"', async () => {
    const signed = await signWith({ path: '/', query: { 'list-type': '2' } });
    const raw = Object.entries(signed.headers).flat();
    const received = signedRequestFromNode('GET', '?list-type=2', raw);
    expect(received).toMatchObject({ rawPath: '', rawQuery: 'list-type=2' });
    expect(verifySigV4(received, lookup, NOW)?.credential).toBe(ALICE);
  });

  it('a signature over an empty canonical URI, rather than "/", is SignatureDoesNotMatch', () => {
    const amzDate = '20260301T120000Z';
    const headers = { host: 'casket.test', 'x-amz-content-sha256': EMPTY_SHA256, 'x-amz-date': amzDate };
    const signedHeaders = 'host;x-amz-content-sha256;x-amz-date';
    const canonicalRequest = ['GET', '', '', ...Object.entries(headers).map(([k, v]) => `${k}:${v}`), '', signedHeaders, EMPTY_SHA256].join('\n');
    const authorization = `AWS4-HMAC-SHA256 Credential=AKIDALICE/20260301/us-east-1/s3/aws4_request, SignedHeaders=${signedHeaders}, Signature=${rawSignature(ALICE, amzDate, canonicalRequest)}`;
    const req: SignedRequest = { method: 'GET', rawPath: '', rawQuery: '', headers: { ...headers, authorization } };
    // The same request signed over "/" verifies.
    const slash = canonicalRequest.replace('GET\n\n', 'GET\n/\n');
    const good = { ...req, headers: { ...req.headers, authorization: authorization.replace(/Signature=\w+/, `Signature=${rawSignature(ALICE, amzDate, slash)}`) } };
    expect(verifySigV4(good, lookup, NOW)?.credential).toBe(ALICE);
    const err = expectS3Error(() => verifySigV4(req, lookup, NOW), 'SignatureDoesNotMatch');
    expect(String(err.fields['CanonicalRequest']).split('\n')[1]).toBe('/');
  });

  it('raw bytes in the path (latin1 from Node, one character per byte) are signed as those bytes', async () => {
    // A client sends "ü" as its UTF-8 bytes and a 0xFF byte unescaped, and signs them escaped.
    const req = await signHeader(ALICE, { path: '/b/%C3%BC%FF' }, { signingDate: NOW });
    const received = { ...req, rawPath: '/b/\u00c3\u00bc\u00ff' };
    expect(verifySigV4(received, lookup, NOW)?.credential).toBe(ALICE);
  });

  it.each(['100%', '%4g', '50%A'])('a "%%" not followed by two hex digits is a literal percent sign: /b/%s', async (name) => {
    const req = await signHeader(ALICE, { path: `/b/${strictEncode(name)}` }, { signingDate: NOW });
    expect(verifySigV4({ ...req, rawPath: `/b/${name}` }, lookup, NOW)?.credential).toBe(ALICE);
  });

  it.each([
    ['characters beyond U+00FF', '日本'],
    ['a character outside the BMP', '😀x'],
    ['U+FFFF', '\uffffz'],
  ])('a path given as Unicode text with %s is signed as its UTF-8 bytes', async (_name, text) => {
    // In-process callers may hand over real Unicode rather than Node's latin1 (see percentDecode).
    const req = await signHeader(ALICE, { path: `/b/${strictEncode(text)}` }, { signingDate: NOW });
    expect(verifySigV4({ ...req, rawPath: `/b/${text}` }, lookup, NOW)?.credential).toBe(ALICE);
  });
});

describe('canonical query', () => {
  it('a parameter name holding "/" is signed with the slash escaped', async () => {
    const req = await signWith({ path: '/b', query: { 'a/b': '1' } });
    expect(req.rawQuery).toBe('a%2Fb=1');
    expect(verifySigV4(req, lookup, NOW)).not.toBeNull();
  });

  it('a parameter with an empty name ("?=v") is signed as "=v"', async () => {
    const req = await signWith({ path: '/b', query: { '': 'v' } });
    expect(req.rawQuery).toBe('=v');
    expect(verifySigV4(req, lookup, NOW)).not.toBeNull();
  });

  // "Parameters with duplicate names should be sorted by value"
  // (sig-v4-header-based-auth.html, CanonicalQueryString).
  it.each(['tag=1&tag=2&tag=3', 'tag=3&tag=2&tag=1', 'tag=2&tag=3&tag=1', 'tag=1&tag=3&tag=2&x=0'])('a repeated name is sorted by value, whatever order it arrives in: %s', async (rawQuery) => {
    const req = await signWith({ path: '/b', query: { tag: ['2', '1', '3'], ...(rawQuery.endsWith('x=0') && { x: '0' }) } });
    expect(verifySigV4({ ...req, rawQuery }, lookup, NOW)).not.toBeNull();
  });
});

describe('request dates', () => {
  it.each(['20260301T115960Z', '20260301T126000Z', '20260301T120099Z'])('x-amz-date %s rolls over (a 60th second or minute) and is no date: AccessDenied', async (value) => {
    const req = await signHeader(ALICE, { path: '/b/k' }, { signingDate: NOW });
    expectS3Error(() => verifySigV4({ ...req, headers: { ...req.headers, 'x-amz-date': value } }, lookup, NOW), 'AccessDenied', 'AWS authentication requires a valid Date or x-amz-date header');
  });

  it('a request dated by its Date header signs that time in ISO 8601 basic format', async () => {
    const req = await signHeader(ALICE, { path: '/b/k' }, { signingDate: NOW });
    const { 'x-amz-date': _, ...rest } = req.headers;
    const err = expectS3Error(() => verifySigV4({ ...req, headers: { ...rest, date: 'Sun, 01 Mar 2026 12:00:00 GMT' } }, lookup, NOW), 'SignatureDoesNotMatch');
    expect(String(err.fields['StringToSign']).split('\n')[1]).toBe('20260301T120000Z');
  });
});
