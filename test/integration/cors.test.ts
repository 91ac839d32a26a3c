/**
 * CORS as AWS S3 does it (https://docs.aws.amazon.com/AmazonS3/latest/userguide/cors.html):
 * Put/Get/DeleteBucketCors through the JS SDK (kept by the embedded store,
 * forwarded to moto or Ceph RGW with CASKET_TEST_UPSTREAM), a preflight
 * OPTIONS answered from the bucket's rules without a signature, and
 * Access-Control-* headers on actual responses, errors included.
 */
import { DeleteBucketCorsCommand, GetBucketCorsCommand, PutBucketCorsCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { failure } from '../helpers/clients.js';
import { errorCode, raw, send } from '../helpers/raw.js';
import { casketWithBucket } from '../helpers/suite.js';

const t = casketWithBucket('cors');
const bucket = t.bucket;

const RULES = [
  { AllowedMethods: ['GET', 'HEAD'], AllowedOrigins: ['https://*.example.com'], AllowedHeaders: ['x-amz-*', 'content-type'], ExposeHeaders: ['ETag'], MaxAgeSeconds: 600 },
  { AllowedMethods: ['PUT'], AllowedOrigins: ['https://editor.example.org'] },
];

function preflight(path: string, headers: Record<string, string>) {
  return send(t.casket.url, 'OPTIONS', path, { host: new URL(t.casket.url).host, ...headers });
}

describe('Put/Get/DeleteBucketCors', () => {
  it('none → 404 NoSuchCORSConfiguration; put, read back, delete; a bad rule is 400 and stores nothing', async () => {
    expect(await failure(t.s3.send(new GetBucketCorsCommand({ Bucket: bucket })))).toMatchObject({ name: 'NoSuchCORSConfiguration', status: 404 });
    const bad = await failure(t.s3.send(new PutBucketCorsCommand({ Bucket: bucket, CORSConfiguration: { CORSRules: [{ AllowedMethods: ['PATCH'], AllowedOrigins: ['*'] }] } })));
    expect(bad).toMatchObject({ name: 'InvalidRequest', status: 400 });
    expect(await failure(t.s3.send(new GetBucketCorsCommand({ Bucket: bucket })))).toMatchObject({ status: 404 });

    await t.s3.send(new PutBucketCorsCommand({ Bucket: bucket, CORSConfiguration: { CORSRules: RULES } }));
    const got = await t.s3.send(new GetBucketCorsCommand({ Bucket: bucket }));
    expect(got.CORSRules?.map((r) => [r.AllowedMethods, r.AllowedOrigins])).toEqual(RULES.map((r) => [r.AllowedMethods, r.AllowedOrigins]));
    expect(got.CORSRules?.[0]).toMatchObject({ ExposeHeaders: ['ETag'], MaxAgeSeconds: 600 });

    await t.s3.send(new DeleteBucketCorsCommand({ Bucket: bucket }));
    expect(await failure(t.s3.send(new GetBucketCorsCommand({ Bucket: bucket })))).toMatchObject({ status: 404 });
    // No rules: a preflight is refused.
    const refused = await preflight(`/${bucket}/k`, { origin: 'https://app.example.com', 'access-control-request-method': 'GET' });
    expect([refused.status, errorCode(refused.body)]).toEqual([403, 'AccessForbidden']);
  });
});

describe('with rules', () => {
  it('a preflight is answered from the first matching rule, unsigned; 400 without Origin or method, 403 when nothing matches', async () => {
    await t.s3.send(new PutBucketCorsCommand({ Bucket: bucket, CORSConfiguration: { CORSRules: RULES } }));
    const ok = await preflight(`/${bucket}/k`, { origin: 'https://app.example.com', 'access-control-request-method': 'GET', 'access-control-request-headers': 'X-Amz-Date, Content-Type' });
    expect(ok.status).toBe(200);
    expect(ok.headers).toMatchObject({
      'access-control-allow-origin': 'https://app.example.com',
      'access-control-allow-methods': 'GET, HEAD',
      'access-control-allow-headers': 'x-amz-date, content-type',
      'access-control-expose-headers': 'ETag',
      'access-control-max-age': '600',
    });
    const put = await preflight(`/${bucket}/k`, { origin: 'https://editor.example.org', 'access-control-request-method': 'PUT' });
    expect([put.status, put.headers['access-control-allow-methods']]).toEqual([200, 'PUT']);

    const cases: Array<[Record<string, string>, number, string]> = [
      [{ 'access-control-request-method': 'GET' }, 400, 'BadRequest'],
      [{ origin: 'https://app.example.com' }, 400, 'BadRequest'],
      [{ origin: 'https://example.com', 'access-control-request-method': 'GET' }, 403, 'AccessForbidden'],
      [{ origin: 'https://app.example.com', 'access-control-request-method': 'DELETE' }, 403, 'AccessForbidden'],
      [{ origin: 'https://app.example.com', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' }, 403, 'AccessForbidden'],
    ];
    for (const [headers, status, code] of cases) {
      const r = await preflight(`/${bucket}/k`, headers);
      expect([headers, r.status, errorCode(r.body), r.headers['access-control-allow-origin']]).toEqual([headers, status, code, undefined]);
    }
  });

  it('an actual request with Origin gets the matching rule’s headers, a 404 too; without a match or Origin, none', async () => {
    await t.s3.send(new PutBucketCorsCommand({ Bucket: bucket, CORSConfiguration: { CORSRules: RULES } }));
    await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'page.html', Body: '<p>hi</p>' }));
    const got = await raw(t.casket.url, t.casket.admin, { method: 'GET', path: `/${bucket}/page.html`, headers: { origin: 'https://app.example.com' } });
    expect(got.status).toBe(200);
    expect(got.headers).toMatchObject({ 'access-control-allow-origin': 'https://app.example.com', 'access-control-allow-methods': 'GET, HEAD', 'access-control-expose-headers': 'ETag' });
    const missing = await raw(t.casket.url, t.casket.admin, { method: 'GET', path: `/${bucket}/absent`, headers: { origin: 'https://app.example.com' } });
    expect([missing.status, missing.headers['access-control-allow-origin']]).toEqual([404, 'https://app.example.com']);
    const other = await raw(t.casket.url, t.casket.admin, { method: 'GET', path: `/${bucket}/page.html`, headers: { origin: 'https://evil.test' } });
    expect([other.status, other.headers['access-control-allow-origin']]).toEqual([200, undefined]);
    const plain = await raw(t.casket.url, t.casket.admin, { method: 'GET', path: `/${bucket}/page.html` });
    expect(plain.headers['access-control-allow-origin']).toBeUndefined();
  });
});
