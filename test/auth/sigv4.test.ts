import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { staticCredentials } from '../../src/auth/credentials.js';
import { signedRequestFromNode, verifySigV4, type SignedRequest } from '../../src/auth/sigv4.js';
import { S3Error } from '../../src/vocabulary/errors.js';
import { ALICE, BOB, expectS3Error, lookup, presign, signHeader, strictEncode } from './helpers.js';

const NOW = new Date('2026-03-01T12:00:00Z');
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

describe('verifySigV4: AWS documented examples', () => {
  const awsLookup = staticCredentials([{ accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' }]);
  const at = new Date('2013-05-24T00:00:00Z');

  it('GET Object (sig-v4-header-based-auth example)', () => {
    const req: SignedRequest = {
      method: 'GET',
      rawPath: '/test.txt',
      rawQuery: '',
      headers: {
        host: 'examplebucket.s3.amazonaws.com',
        range: 'bytes=0-9',
        'x-amz-content-sha256': EMPTY_SHA256,
        'x-amz-date': '20130524T000000Z',
        authorization:
          'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41',
      },
    };
    const result = verifySigV4(req, awsLookup, at)!;
    expect(result.payloadMode).toBe('literal');
    expect(result.declaredSha256).toBe(EMPTY_SHA256);
    expect(result.presigned).toBe(false);
  });

  it('presigned GET (sigv4-query-string-auth example)', () => {
    const req: SignedRequest = {
      method: 'GET',
      rawPath: '/test.txt',
      rawQuery:
        'X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404',
      headers: { host: 'examplebucket.s3.amazonaws.com' },
    };
    const result = verifySigV4(req, awsLookup, at)!;
    expect(result.presigned).toBe(true);
    expect(result.payloadMode).toBe('unsigned');
    // Expires after 86400 s.
    expectS3Error(() => verifySigV4(req, awsLookup, new Date(at.getTime() + 86_401_000)), 'AccessDenied', 'Request has expired');
  });

  it('chunked upload seed signature (sigv4-streaming example)', () => {
    const req: SignedRequest = {
      method: 'PUT',
      rawPath: '/examplebucket/chunkObject.txt',
      rawQuery: '',
      headers: {
        host: 's3.amazonaws.com',
        'x-amz-date': '20130524T000000Z',
        'x-amz-storage-class': 'REDUCED_REDUNDANCY',
        'x-amz-content-sha256': 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD',
        'content-encoding': 'aws-chunked',
        'x-amz-decoded-content-length': '66560',
        'content-length': '66824',
        authorization:
          'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class,Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9',
      },
    };
    const result = verifySigV4(req, awsLookup, at)!;
    expect(result.payloadMode).toBe('streaming-signed');
    expect(result.chunkSigning?.seedSignature).toBe('4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9');
    expect(result.chunkSigning?.scope).toBe('20130524/us-east-1/s3/aws4_request');
    expect(result.chunkSigning?.amzDate).toBe('20130524T000000Z');
  });
});

describe('verifySigV4: header auth cross-checked with @smithy/signature-v4', () => {
  it('verifies a simple GET and returns the credential', async () => {
    const req = await signHeader(ALICE, { path: '/bucket/key.txt' }, { signingDate: NOW });
    const result = verifySigV4(req, lookup, NOW)!;
    expect(result.credential).toBe(ALICE);
    expect(result.payloadMode).toBe('literal');
    expect(result.signedHeaders).toContain('host');
    expect(result.region).toBe('us-east-1');
  });

  it('accepts any region in the scope', async () => {
    const req = await signHeader(BOB, { path: '/b/k' }, { signingDate: NOW, region: 'eu-central-1' });
    expect(verifySigV4(req, lookup, NOW)!.region).toBe('eu-central-1');
  });

  it.each([
    ['spaces', 'my dir/a file.txt'],
    ['unicode', 'données/ünïcødé/日本語.txt'],
    ['reserved characters', "a+b=c&d?e#f;g:h@i$j,k'l(m)n*o!p~q"],
    ['percent and tilde', '100%/~user/%41'],
    ['double slash and dots', 'a//b/./c/../d'],
  ])('keys with %s', async (_label, key) => {
    const path = `/bucket/${strictEncode(key, true)}`;
    const req = await signHeader(ALICE, { method: 'PUT', path }, { signingDate: NOW });
    expect(verifySigV4(req, lookup, NOW)!.credential).toBe(ALICE);
  });

  it('normalises the received path: lowercase percent-escapes, escaped unreserved characters', async () => {
    const req = await signHeader(ALICE, { path: '/bucket/%C3%BC-~x' }, { signingDate: NOW });
    expect(verifySigV4({ ...req, rawPath: '/bucket/%c3%bc-%7E%78' }, lookup, NOW)).not.toBeNull();
  });

  it('falls back to the raw path for clients that sign it unnormalised', async () => {
    // A client sends (and signs) a literal '+' and '=' unencoded.
    const req = await signHeader(ALICE, { path: '/bucket/a+b=c' }, { signingDate: NOW });
    expect(req.rawPath).toBe('/bucket/a+b=c');
    expect(verifySigV4(req, lookup, NOW)).not.toBeNull();
  });

  it('query parameters: encoded values, empty values, repeated and sorted', async () => {
    const query = { 'list-type': '2', prefix: 'a b/ü+c', delimiter: '/', 'encoding-type': 'url', uploads: '' };
    const req = await signHeader(ALICE, { path: '/bucket', query }, { signingDate: NOW });
    expect(verifySigV4(req, lookup, NOW)).not.toBeNull();
    // The same query sent in another order, '?uploads' without '=': same canonical query.
    const reordered = { ...req, rawQuery: 'uploads&prefix=a%20b%2F%C3%BC%2Bc&encoding-type=url&delimiter=%2F&list-type=2' };
    expect(verifySigV4(reordered, lookup, NOW)).not.toBeNull();
    // '+' in a query is a literal plus, not a space: sent as '+' it means the same as %2B.
    const plus = { ...req, rawQuery: req.rawQuery.replace('%2Bc', '+c') };
    expect(verifySigV4(plus, lookup, NOW)).not.toBeNull();
    // Changing a value breaks it.
    expectS3Error(() => verifySigV4({ ...req, rawQuery: req.rawQuery.replace('list-type=2', 'list-type=1') }, lookup, NOW), 'SignatureDoesNotMatch');
  });

  it('repeated headers are joined with commas, as SigV4 canonicalises them', async () => {
    const req = await signHeader(ALICE, { method: 'PUT', path: '/b/k', headers: { 'x-amz-meta-tags': 'one,two' } }, { signingDate: NOW });
    const raw = Object.entries(req.headers).flatMap(([k, v]) => (k === 'x-amz-meta-tags' ? [] : [k, v]));
    raw.push('X-Amz-Meta-Tags', 'one', 'x-amz-meta-tags', ' two ');
    const received = signedRequestFromNode('PUT', '/b/k', raw);
    expect(received.headers['x-amz-meta-tags']).toBe('one,two');
    expect(verifySigV4(received, lookup, NOW)).not.toBeNull();
  });

  it('header values: runs of whitespace collapse, ends trimmed', async () => {
    const req = await signHeader(ALICE, { method: 'PUT', path: '/b/k', headers: { 'x-amz-meta-note': '  a   lot \t of   space  ' } }, { signingDate: NOW });
    expect(verifySigV4({ ...req, headers: { ...req.headers, 'x-amz-meta-note': 'a lot of space' } }, lookup, NOW)).not.toBeNull();
  });

  it('non-ASCII header values as Node delivers them (latin1 strings of the UTF-8 bytes)', async () => {
    const value = 'café ☕';
    const req = await signHeader(ALICE, { method: 'PUT', path: '/b/k', headers: { 'x-amz-meta-drink': value } }, { signingDate: NOW });
    const onTheWire = Buffer.from(value, 'utf8').toString('latin1');
    expect(verifySigV4({ ...req, headers: { ...req.headers, 'x-amz-meta-drink': onTheWire } }, lookup, NOW)).not.toBeNull();
  });

  it('wrong secret → SignatureDoesNotMatch with the string to sign', async () => {
    const req = await signHeader({ ...ALICE, secretAccessKey: 'not-the-secret' }, { path: '/b/k' }, { signingDate: NOW });
    const err = expectS3Error(() => verifySigV4(req, lookup, NOW), 'SignatureDoesNotMatch');
    expect(err.fields['StringToSign']).toMatch(/^AWS4-HMAC-SHA256\n/);
    expect(err.fields['AWSAccessKeyId']).toBe('AKIDALICE');
  });

  it('unknown access key → InvalidAccessKeyId', async () => {
    const req = await signHeader({ accessKeyId: 'AKIDNOBODY', secretAccessKey: 'x' }, { path: '/b/k' }, { signingDate: NOW });
    expectS3Error(() => verifySigV4(req, lookup, NOW), 'InvalidAccessKeyId');
  });

  it('tampered signed header, path, method or payload hash → SignatureDoesNotMatch', async () => {
    const req = await signHeader(ALICE, { method: 'PUT', path: '/b/k', headers: { 'x-amz-meta-a': '1', 'if-match': '"abc"' } }, { signingDate: NOW });
    expect(verifySigV4(req, lookup, NOW)).not.toBeNull();
    for (const tampered of [
      { ...req, headers: { ...req.headers, 'x-amz-meta-a': '2' } },
      { ...req, headers: { ...req.headers, 'if-match': '*' } },
      { ...req, headers: { ...req.headers, host: 'elsewhere:9000' } },
      { ...req, headers: { ...req.headers, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' } },
      { ...req, rawPath: '/b/other' },
      { ...req, method: 'DELETE' },
      { ...req, rawQuery: 'acl' },
    ]) {
      expectS3Error(() => verifySigV4(tampered, lookup, NOW), 'SignatureDoesNotMatch');
    }
  });

  it('unsigned headers may change freely', async () => {
    const req = await signHeader(ALICE, { path: '/b/k', headers: { 'x-agent-id': 'alice', 'user-agent': 'sdk' } }, { signingDate: NOW, unsignableHeaders: new Set(['x-agent-id']) });
    expect(req.headers['authorization']).not.toContain('x-agent-id');
    const changed = { ...req, headers: { ...req.headers, 'x-agent-id': 'mallory', 'x-forwarded-for': '1.2.3.4' } };
    const result = verifySigV4(changed, lookup, NOW)!;
    expect(result.signedHeaders).not.toContain('x-agent-id');
  });

  it('clock skew: 14 minutes pass, 16 minutes → RequestTimeTooSkewed', async () => {
    const minutes = (m: number) => new Date(NOW.getTime() + m * 60_000);
    expect(verifySigV4(await signHeader(ALICE, { path: '/b/k' }, { signingDate: minutes(-14) }), lookup, NOW)).not.toBeNull();
    expect(verifySigV4(await signHeader(ALICE, { path: '/b/k' }, { signingDate: minutes(14) }), lookup, NOW)).not.toBeNull();
    for (const m of [-16, 16]) {
      const req = await signHeader(ALICE, { path: '/b/k' }, { signingDate: minutes(m) });
      const err = expectS3Error(() => verifySigV4(req, lookup, NOW), 'RequestTimeTooSkewed');
      expect(err.fields['MaxAllowedSkewMilliseconds']).toBe(900_000);
      expect(err.fields['RequestTime']).toBe(req.headers['x-amz-date']);
    }
  });

  it('scope date must be the x-amz-date day', async () => {
    const req = await signHeader(ALICE, { path: '/b/k' }, { signingDate: NOW });
    const auth = req.headers['authorization']!.replace('/20260301/', '/20260228/');
    expectS3Error(() => verifySigV4({ ...req, headers: { ...req.headers, authorization: auth } }, lookup, NOW), 'AuthorizationHeaderMalformed', /Invalid credential date/);
  });

  it('x-amz-date missing or invalid → AccessDenied', async () => {
    const req = await signHeader(ALICE, { path: '/b/k' }, { signingDate: NOW });
    const { 'x-amz-date': _, ...noDate } = req.headers;
    expectS3Error(() => verifySigV4({ ...req, headers: noDate }, lookup, NOW), 'AccessDenied', /x-amz-date/);
    expectS3Error(() => verifySigV4({ ...req, headers: { ...req.headers, 'x-amz-date': '20260230T120000Z' } }, lookup, NOW), 'AccessDenied');
  });

  it('malformed Authorization headers → AuthorizationHeaderMalformed', async () => {
    const req = await signHeader(ALICE, { path: '/b/k' }, { signingDate: NOW });
    const auth = req.headers['authorization']!;
    for (const bad of [
      'AWS4-HMAC-SHA256',
      auth.replace(/Signature=\w+/, ''),
      auth.replace('SignedHeaders=', 'Signedheaders='),
      auth.replace('/aws4_request', '/aws4_requests'),
      auth.replace('/20260301/', '/2026031/'),
      auth.replace('Credential=AKIDALICE/', 'Credential='),
      auth.replace('/s3/', '/ec2/'),
    ]) {
      expectS3Error(() => verifySigV4({ ...req, headers: { ...req.headers, authorization: bad } }, lookup, NOW), 'AuthorizationHeaderMalformed');
    }
  });

  it('Authorization header spacing is tolerated', async () => {
    const req = await signHeader(ALICE, { path: '/b/k' }, { signingDate: NOW });
    const auth = req.headers['authorization']!;
    for (const variant of [auth.replace(/, /g, ','), auth.replace(/, /g, ' ,  '), `  ${auth.replace('AWS4-HMAC-SHA256 ', 'AWS4-HMAC-SHA256   ')}  `]) {
      expect(verifySigV4({ ...req, headers: { ...req.headers, authorization: variant } }, lookup, NOW)).not.toBeNull();
    }
  });

  it('host must be signed', async () => {
    const req = await signHeader(ALICE, { path: '/b/k' }, { signingDate: NOW });
    const auth = req.headers['authorization']!.replace('SignedHeaders=host;', 'SignedHeaders=');
    const err = expectS3Error(() => verifySigV4({ ...req, headers: { ...req.headers, authorization: auth } }, lookup, NOW), 'AccessDenied');
    expect(err.fields['HeadersNotSigned']).toBe('host');
  });

  it('x-amz-content-sha256: required, and one of the known values', async () => {
    const req = await signHeader(ALICE, { path: '/b/k' }, { signingDate: NOW });
    const { 'x-amz-content-sha256': _, ...without } = req.headers;
    expectS3Error(() => verifySigV4({ ...req, headers: without }, lookup, NOW), 'InvalidRequest', /x-amz-content-sha256/);
    const bad = await signHeader(ALICE, { path: '/b/k', headers: { 'x-amz-content-sha256': 'STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD' } }, { signingDate: NOW });
    expectS3Error(() => verifySigV4(bad, lookup, NOW), 'InvalidArgument', /x-amz-content-sha256 must be/);
  });

  it.each([
    ['UNSIGNED-PAYLOAD', 'unsigned'],
    ['STREAMING-AWS4-HMAC-SHA256-PAYLOAD', 'streaming-signed'],
    ['STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER', 'streaming-signed-trailer'],
    ['STREAMING-UNSIGNED-PAYLOAD-TRAILER', 'streaming-unsigned-trailer'],
    [createHash('sha256').update('x').digest('hex').toUpperCase(), 'literal'],
  ] as const)('payload mode of %s', async (value, mode) => {
    const req = await signHeader(ALICE, { method: 'PUT', path: '/b/k', headers: { 'x-amz-content-sha256': value } }, { signingDate: NOW });
    const result = verifySigV4(req, lookup, NOW)!;
    expect(result.payloadMode).toBe(mode);
    expect(result.chunkSigning !== undefined).toBe(mode.startsWith('streaming-signed'));
    if (mode === 'literal') expect(result.declaredSha256).toBe(value.toLowerCase());
    if (result.chunkSigning) {
      expect(result.chunkSigning.seedSignature).toBe(/Signature=(\w+)/.exec(req.headers['authorization']!)![1]);
      expect(result.chunkSigning.scope).toBe('20260301/us-east-1/s3/aws4_request');
    }
  });

  it('anonymous requests return null; SigV2 and other schemes are refused', () => {
    const base: SignedRequest = { method: 'GET', rawPath: '/b/k', rawQuery: '', headers: { host: 'h' } };
    expect(verifySigV4(base, lookup, NOW)).toBeNull();
    expectS3Error(() => verifySigV4({ ...base, headers: { host: 'h', authorization: 'AWS AKIDALICE:c2lnbmF0dXJl' } }, lookup, NOW), 'InvalidRequest', /AWS4-HMAC-SHA256/);
    expectS3Error(() => verifySigV4({ ...base, headers: { host: 'h', authorization: 'AWS4-ECDSA-P256-SHA256 Credential=x' } }, lookup, NOW), 'InvalidRequest');
    expectS3Error(() => verifySigV4({ ...base, rawQuery: 'AWSAccessKeyId=AKIDALICE&Expires=1&Signature=abc' }, lookup, NOW), 'InvalidRequest');
  });

  it('caches signing keys without mixing secrets up', async () => {
    for (let i = 0; i < 300; i++) {
      const cred = { accessKeyId: `AK${i}`, secretAccessKey: `secret-${i}` };
      const req = await signHeader(cred, { path: '/b/k' }, { signingDate: NOW });
      expect(verifySigV4(req, (id) => (id === cred.accessKeyId ? cred : undefined), NOW)).not.toBeNull();
      // Same key ID, rotated secret: the old signature must fail.
      expectS3Error(() => verifySigV4(req, () => ({ ...cred, secretAccessKey: 'rotated' }), NOW), 'SignatureDoesNotMatch');
    }
  });
});

describe('verifySigV4: presigned URLs cross-checked with @smithy/signature-v4', () => {
  it('verifies a presigned GET, with extra query parameters', async () => {
    const req = await presign(ALICE, { path: `/bucket/${strictEncode('dir/ü b.txt', true)}`, query: { 'response-content-type': 'text/plain; charset=utf-8' } }, { signingDate: NOW, expiresIn: 600 });
    const result = verifySigV4(req, lookup, NOW)!;
    expect(result.presigned).toBe(true);
    expect(result.payloadMode).toBe('unsigned');
    expect(result.credential).toBe(ALICE);
  });

  it('presigned PUT with x-amz-content-sha256 UNSIGNED-PAYLOAD hoisted into the query (as the S3 presigner does)', async () => {
    const req = await presign(ALICE, { method: 'PUT', path: '/b/k', headers: { 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' } }, { signingDate: NOW });
    expect(req.rawQuery.toLowerCase()).toContain('x-amz-content-sha256=unsigned-payload');
    expect(verifySigV4(req, lookup, NOW)!.payloadMode).toBe('unsigned');
  });

  it('presigned URL with a signed header: the header must be sent unchanged', async () => {
    const req = await presign(ALICE, { method: 'PUT', path: '/b/k', headers: { 'content-type': 'image/png' } }, { signingDate: NOW });
    expect(verifySigV4(req, lookup, NOW)).not.toBeNull();
    expectS3Error(() => verifySigV4({ ...req, headers: { ...req.headers, 'content-type': 'text/html' } }, lookup, NOW), 'SignatureDoesNotMatch');
  });

  it('expiry: valid until X-Amz-Date + X-Amz-Expires, then AccessDenied "Request has expired"', async () => {
    const req = await presign(ALICE, { path: '/b/k' }, { signingDate: NOW, expiresIn: 60 });
    expect(verifySigV4(req, lookup, new Date(NOW.getTime() + 60_000))).not.toBeNull();
    const err = expectS3Error(() => verifySigV4(req, lookup, new Date(NOW.getTime() + 61_000)), 'AccessDenied', 'Request has expired');
    expect(err.fields['X-Amz-Expires']).toBe('60');
  });

  it('a URL dated in the future beyond the skew → AccessDenied "Request is not valid yet"', async () => {
    const req = await presign(ALICE, { path: '/b/k' }, { signingDate: new Date(NOW.getTime() + 20 * 60_000) });
    expectS3Error(() => verifySigV4(req, lookup, NOW), 'AccessDenied', 'Request is not valid yet');
    const soon = await presign(ALICE, { path: '/b/k' }, { signingDate: new Date(NOW.getTime() + 10 * 60_000) });
    expect(verifySigV4(soon, lookup, NOW)).not.toBeNull();
  });

  it('X-Amz-Expires out of range (0, > 604800, negative, not a number) → 403 AccessDenied, as AWS', async () => {
    const req = await presign(ALICE, { path: '/b/k' }, { signingDate: NOW });
    const withExpires = (value: string) => ({ ...req, rawQuery: req.rawQuery.replace(/X-Amz-Expires=\d+/, `X-Amz-Expires=${value}`) });
    expectS3Error(() => verifySigV4(withExpires('0'), lookup, NOW), 'AccessDenied', 'Request has expired');
    expectS3Error(() => verifySigV4(withExpires('604801'), lookup, NOW), 'AccessDenied', /less than 604800 seconds/);
    expectS3Error(() => verifySigV4(withExpires('-5'), lookup, NOW), 'AccessDenied', 'X-Amz-Expires must be non-negative');
    expectS3Error(() => verifySigV4(withExpires('soon'), lookup, NOW), 'AccessDenied', 'X-Amz-Expires should be a number');
    // 604800 itself is allowed.
    expectS3Error(() => verifySigV4(withExpires('604800'), lookup, NOW), 'SignatureDoesNotMatch');
  });

  it('missing parameters, bad algorithm, bad date → AuthorizationQueryParametersError', async () => {
    const req = await presign(ALICE, { path: '/b/k' }, { signingDate: NOW });
    for (const q of [
      req.rawQuery.replace(/&?X-Amz-Credential=[^&]+/, ''),
      req.rawQuery.replace('X-Amz-Algorithm=AWS4-HMAC-SHA256', 'X-Amz-Algorithm=AWS4-HMAC-SHA1'),
      req.rawQuery.replace(/X-Amz-Date=\w+/, 'X-Amz-Date=yesterday'),
      req.rawQuery.replace('%2F20260301%2F', '%2F20260302%2F'),
    ]) {
      expectS3Error(() => verifySigV4({ ...req, rawQuery: q }, lookup, NOW), 'AuthorizationQueryParametersError');
    }
  });

  it('tampered query or signature → SignatureDoesNotMatch', async () => {
    const req = await presign(ALICE, { path: '/b/k', query: { partNumber: '1' } }, { signingDate: NOW });
    expectS3Error(() => verifySigV4({ ...req, rawQuery: req.rawQuery.replace('partNumber=1', 'partNumber=2') }, lookup, NOW), 'SignatureDoesNotMatch');
    expectS3Error(() => verifySigV4({ ...req, rawQuery: `${req.rawQuery}&extra=1` }, lookup, NOW), 'SignatureDoesNotMatch');
    expectS3Error(() => verifySigV4({ ...req, rawQuery: req.rawQuery.replace(/X-Amz-Signature=\w/, 'X-Amz-Signature=0') }, lookup, NOW), 'SignatureDoesNotMatch');
    expectS3Error(() => verifySigV4({ ...req, rawPath: '/b/other' }, lookup, NOW), 'SignatureDoesNotMatch');
  });

  it('Authorization header and query signature together → InvalidArgument', async () => {
    const req = await presign(ALICE, { path: '/b/k' }, { signingDate: NOW });
    const header = await signHeader(ALICE, { path: '/b/k' }, { signingDate: NOW });
    expectS3Error(
      () => verifySigV4({ ...req, headers: { ...req.headers, authorization: header.headers['authorization']! } }, lookup, NOW),
      'InvalidArgument',
      /Only one auth mechanism allowed/,
    );
  });
});
