/**
 * Smaller differences from AWS S3 that clients notice:
 * - a presigned SigV4 URL with X-Amz-Expires out of range (0, > 604800,
 *   negative, not a number) or expired → 403 AccessDenied, not 400;
 * - `Expect:` values other than `100-continue` are ignored, not 417;
 * - `Transfer-Encoding: chunked` uploads without Content-Length (`curl -T -`)
 *   are accepted for PutObject and UploadPart, with their digests checked;
 * - user metadata with non-ASCII UTF-8 values round-trips byte-exact
 *   (PutObject, CopyObject REPLACE, multipart), as sent on the wire, through
 *   the JS SDK and boto3 too.
 */
import { CompleteMultipartUploadCommand, CopyObjectCommand, CreateMultipartUploadCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, UploadPartCommand } from '@aws-sdk/client-s3';
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { presign } from '../auth/helpers.js';
import { bytes, sdk } from '../helpers/clients.js';
import { cleanEnv, hasPythonModule, python3 } from '../helpers/cli-tools.js';
import { errorCode, raw, send, signRequest, xmlField } from '../helpers/raw.js';
import { casketWithBucket, etagOf } from '../helpers/suite.js';
import { hasCommand, need } from '../helpers/tools.js';

const t = casketWithBucket('parity');
const bucket = t.bucket;
const UA = { 'user-agent': 'casket-tests' };

describe('presigned SigV4 URLs: X-Amz-Expires out of range or expired → 403 AccessDenied', () => {
  it('0, 604801, -5, "soon" and a past expiry are each 403 AccessDenied with AWS wording; 604800 works', async () => {
    await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'presigned.txt', Body: 'p' }));
    const host = new URL(t.casket.url).host;
    const url = async (expiresIn: number, signingDate = new Date()) => {
      const p = await presign(t.casket.admin, { method: 'GET', host, path: `/${bucket}/presigned.txt` }, { expiresIn, signingDate });
      return `${p.rawPath}?${p.rawQuery}`;
    };
    const week = await url(604800);
    const ok = await send(t.casket.url, 'GET', week, { host, ...UA });
    expect([ok.status, ok.body]).toEqual([200, 'p']);

    const cases: [string, string][] = [
      ['0', 'Request has expired'],
      ['604801', 'X-Amz-Expires must be less than a week (in seconds); that is, the given X-Amz-Expires must be less than 604800 seconds'],
      ['-5', 'X-Amz-Expires must be non-negative'],
      ['soon', 'X-Amz-Expires should be a number'],
    ];
    for (const [value, message] of cases) {
      const r = await send(t.casket.url, 'GET', week.replace('X-Amz-Expires=604800', `X-Amz-Expires=${value}`), { host, ...UA });
      expect([r.status, errorCode(r.body), xmlField(r.body, 'Message')], `X-Amz-Expires=${value}: ${r.body}`).toEqual([403, 'AccessDenied', message]);
    }
    const expired = await send(t.casket.url, 'GET', await url(60, new Date(Date.now() - 120_000)), { host, ...UA });
    expect([expired.status, errorCode(expired.body), xmlField(expired.body, 'Message')]).toEqual([403, 'AccessDenied', 'Request has expired']);
  });
});

describe('Expect', () => {
  it('an Expect value other than 100-continue is ignored: PUT and GET answer 200, not 417', async () => {
    const put = await raw(t.casket.url, t.casket.admin, { method: 'PUT', path: `/${bucket}/expect.txt`, headers: { expect: 'something-else' }, body: 'expected' });
    expect([put.status, put.headers.etag], put.body).toEqual([200, etagOf('expected')]);
    const get = await raw(t.casket.url, t.casket.admin, { method: 'GET', path: `/${bucket}/expect.txt`, headers: { expect: 'x-casket=1' } });
    expect([get.status, get.body]).toEqual([200, 'expected']);
  });
});

describe('Content-Encoding naming aws-chunked beside a literal payload hash', () => {
  it('frames nothing: the body is stored as sent and aws-chunked is dropped from the stored Content-Encoding, as AWS does', async () => {
    const cases: Array<[string, string | undefined]> = [
      ['gzip, aws-chunked', 'gzip'],
      ['aws-chunked, gzip', 'gzip'],
      ['aws-chunked', undefined],
      ['deflate, gzip', 'deflate, gzip'],
    ];
    for (const [sent, stored] of cases) {
      // The JS SDK signs a Buffer body with its literal SHA-256.
      const put = await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'encoded', Body: Buffer.from('plain bytes'), ContentEncoding: sent }));
      expect(put.ETag, sent).toBe(etagOf('plain bytes'));
      const head = await t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'encoded' }));
      expect([sent, head.ContentEncoding, head.ContentLength]).toEqual([sent, stored, 11]);
    }
  });
});

describe('Transfer-Encoding: chunked without Content-Length', () => {
  const pieces = [randomBytes(70_000), randomBytes(1), randomBytes(40_000)];
  const whole = Buffer.concat(pieces);

  it('PutObject: a signed body is stored and its hash verified; a wrong Content-MD5 → 400 BadDigest, nothing written', async () => {
    const put = await raw(t.casket.url, t.casket.admin, { method: 'PUT', path: `/${bucket}/chunked.bin`, headers: { 'transfer-encoding': 'chunked' }, body: pieces });
    expect([put.status, put.headers.etag], put.body).toEqual([200, etagOf(whole)]);
    const get = await t.s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'chunked.bin' }));
    expect((await bytes(get.Body)).equals(whole)).toBe(true);
    expect(get.ContentLength).toBe(whole.length);

    const forged = await raw(t.casket.url, t.casket.admin, { method: 'PUT', path: `/${bucket}/chunked.bin`, headers: { 'transfer-encoding': 'chunked' }, body: pieces, payloadHash: createHash('sha256').update('other').digest('hex') });
    expect([forged.status, errorCode(forged.body)]).toEqual([400, 'XAmzContentSHA256Mismatch']);
    const badMd5 = await raw(t.casket.url, t.casket.admin, {
      method: 'PUT',
      path: `/${bucket}/chunked-md5.bin`,
      headers: { 'transfer-encoding': 'chunked', 'content-md5': createHash('md5').update('other').digest('base64') },
      body: pieces,
      payloadHash: 'UNSIGNED-PAYLOAD',
    });
    expect([badMd5.status, errorCode(badMd5.body)]).toEqual([400, 'BadDigest']);
    const absent = await raw(t.casket.url, t.casket.admin, { method: 'HEAD', path: `/${bucket}/chunked-md5.bin` });
    expect(absent.status).toBe(404);
    const kept = await t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'chunked.bin' }));
    expect(kept.ETag, 'the forged upload replaced nothing').toBe(etagOf(whole));
  });

  it('UploadPart: a chunked part is accepted, its MD5 part ETag right, and the upload completes', async () => {
    const key = 'chunked-multipart.bin';
    const { UploadId } = await t.s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
    const part = await raw(t.casket.url, t.casket.admin, { method: 'PUT', path: `/${bucket}/${key}?partNumber=1&uploadId=${encodeURIComponent(UploadId!)}`, headers: { 'transfer-encoding': 'chunked' }, body: pieces });
    expect([part.status, part.headers.etag], part.body).toEqual([200, `"${createHash('md5').update(whole).digest('hex')}"`]);
    const done = await t.s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.headers.etag as string }] } }));
    const digest = createHash('sha256').update(createHash('sha256').update(whole).digest()).digest('hex');
    expect(done.ETag).toBe(`"${digest}-1"`);
    const get = await t.s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    expect((await bytes(get.Body)).equals(whole)).toBe(true);
  });

  it.runIf(need('curl', hasCommand('curl')))('curl -T - (stdin, chunked) uploads, and curl downloads it back', () => {
    const data = `from curl's stdin ${randomBytes(8).toString('hex')}\n`;
    const { accessKeyId, secretAccessKey } = t.casket.admin;
    const common = ['-sS', '--fail-with-body', '--aws-sigv4', 'aws:amz:us-east-1:s3', '--user', `${accessKeyId}:${secretAccessKey}`, '-H', 'x-amz-content-sha256: UNSIGNED-PAYLOAD'];
    const url = `${t.casket.url}/${bucket}/curl.txt`;
    execFileSync('curl', [...common, '-T', '-', url], { input: data, encoding: 'utf8', env: cleanEnv() });
    expect(execFileSync('curl', [...common, url], { encoding: 'utf8', env: cleanEnv() })).toBe(data);
  });
});

describe('user metadata with non-ASCII UTF-8 values', () => {
  const VALUE = 'café ☕ 日本 — 𝄞';

  /**
   * Sends one request over a socket, header bytes exactly as given (Node's
   * http client refuses characters above U+00FF in a header), and returns the
   * response head's x-amz-meta-* values as raw bytes.
   */
  async function rawExchange(method: string, path: string, headers: Record<string, string>, body = ''): Promise<{ status: number; meta: Record<string, Buffer>; body: string }> {
    const u = new URL(t.casket.url);
    const signed = await signRequest(t.casket.url, t.casket.admin, { method, path, headers, body });
    const head = [`${method} ${path} HTTP/1.1`, ...Object.entries(signed.headers).map(([k, v]) => `${k}: ${v}`), 'connection: close', '', ''].join('\r\n');
    const received = await new Promise<Buffer>((resolve, reject) => {
      // write, not end: a half-closed socket is a client that went away. `connection: close` ends it.
      const socket = connect(Number(u.port), u.hostname, () => socket.write(Buffer.concat([Buffer.from(head, 'utf8'), Buffer.from(body)])));
      const chunks: Buffer[] = [];
      socket.on('data', (c: Buffer) => chunks.push(c));
      socket.on('end', () => resolve(Buffer.concat(chunks)));
      socket.on('error', reject);
    });
    const end = received.indexOf('\r\n\r\n');
    const lines = received.subarray(0, end).toString('latin1').split('\r\n');
    const meta: Record<string, Buffer> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).toLowerCase();
      if (name.startsWith('x-amz-meta-')) meta[name.slice('x-amz-meta-'.length)] = Buffer.from(line.slice(colon + 1).trim(), 'latin1');
    }
    return { status: Number(lines[0]!.split(' ')[1]), meta, body: received.subarray(end + 4).toString('utf8') };
  }

  it('PutObject: GET and HEAD answer the very bytes sent (UTF-8, 2 to 4 bytes a character)', async () => {
    const put = await rawExchange('PUT', `/${bucket}/utf8.txt`, { 'x-amz-meta-title': VALUE, 'x-amz-meta-plain': 'ascii' }, 'body');
    expect(put.status).toBe(200);
    for (const method of ['GET', 'HEAD']) {
      const r = await rawExchange(method, `/${bucket}/utf8.txt`, {});
      expect(r.status).toBe(200);
      expect(r.meta.title?.toString('hex'), `${method} x-amz-meta-title`).toBe(Buffer.from(VALUE, 'utf8').toString('hex'));
      expect(r.meta.plain?.toString()).toBe('ascii');
    }
  });

  it('casket answers the bytes; through an upstream the value is kept there as an RFC 2047 encoded word (ASCII)', async () => {
    await rawExchange('PUT', `/${bucket}/utf8-upstream.txt`, { 'x-amz-meta-title': VALUE }, 'u');
    expect((await rawExchange('HEAD', `/${bucket}/utf8-upstream.txt`, {})).meta.title?.toString('utf8')).toBe(VALUE);
    const upstream = t.casket.upstream;
    if (upstream) {
      // RGW signs raw header bytes, moto (like AWS) their latin1-to-UTF-8: only ASCII satisfies both.
      const direct = sdk(upstream.url, { accessKeyId: upstream.accessKey, secretAccessKey: upstream.secretKey });
      const stored = (await direct.send(new HeadObjectCommand({ Bucket: bucket, Key: 'utf8-upstream.txt' }))).Metadata?.title;
      direct.destroy();
      expect(stored).toBe(`=?UTF-8?B?${Buffer.from(VALUE).toString('base64')}?=`);
    }
  });

  it('CopyObject (COPY and REPLACE) and multipart keep the bytes too', async () => {
    await rawExchange('PUT', `/${bucket}/utf8-src.txt`, { 'x-amz-meta-title': VALUE }, 'src');
    const copied = await rawExchange('PUT', `/${bucket}/utf8-copy.txt`, { 'x-amz-copy-source': `/${bucket}/utf8-src.txt` });
    expect(copied.status).toBe(200);
    expect((await rawExchange('HEAD', `/${bucket}/utf8-copy.txt`, {})).meta.title?.toString('utf8')).toBe(VALUE);
    const replaced = await rawExchange('PUT', `/${bucket}/utf8-replaced.txt`, { 'x-amz-copy-source': `/${bucket}/utf8-src.txt`, 'x-amz-metadata-directive': 'REPLACE', 'x-amz-meta-other': 'ünïcödé' });
    expect(replaced.status).toBe(200);
    const head = await rawExchange('HEAD', `/${bucket}/utf8-replaced.txt`, {});
    expect([head.meta.title, head.meta.other?.toString('utf8')]).toEqual([undefined, 'ünïcödé']);

    const created = await rawExchange('POST', `/${bucket}/utf8-multipart.bin?uploads`, { 'x-amz-meta-title': VALUE });
    expect(created.status).toBe(200);
    const uploadId = xmlField(created.body, 'UploadId')!;
    const part = await t.s3.send(new UploadPartCommand({ Bucket: bucket, Key: 'utf8-multipart.bin', UploadId: uploadId, PartNumber: 1, Body: 'part' }));
    await t.s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: 'utf8-multipart.bin', UploadId: uploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag! }] } }));
    expect((await rawExchange('HEAD', `/${bucket}/utf8-multipart.bin`, {})).meta.title?.toString('utf8')).toBe(VALUE);
  });

  it('the JS SDK (which sends UTF-8 and reads headers as latin1) gets back the bytes it sent', async () => {
    // Node's client accepts only characters up to U+00FF in a header value.
    await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'sdk-utf8.txt', Body: 'x', Metadata: { name: 'café é' } }));
    const head = await t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'sdk-utf8.txt' }));
    expect(Buffer.from(head.Metadata!.name!, 'latin1').toString('utf8')).toBe('café é');
    await t.s3.send(new CopyObjectCommand({ Bucket: bucket, Key: 'sdk-utf8-copy.txt', CopySource: `${bucket}/sdk-utf8.txt` }));
    const copy = await t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'sdk-utf8-copy.txt' }));
    expect(copy.Metadata).toEqual(head.Metadata);
  });

  it.runIf(need('boto3 (python3)', hasPythonModule('boto3')))('boto3 (its metadata check bypassed, as a header) gets back the bytes it sent', () => {
    // boto3 refuses non-ASCII Metadata= itself, and signs a header as UTF-8
    // but sends str headers as latin-1: users who need it add the UTF-8 bytes
    // after signing (casket, like S3, lets x-amz-meta-* go unsigned).
    const script = `
import json, sys, boto3
s = json.loads(sys.argv[1])
c = boto3.client("s3", endpoint_url=s["endpoint"], region_name="us-east-1", aws_access_key_id=s["key"], aws_secret_access_key=s["secret"])
def add(request, **_):
    request.headers["x-amz-meta-title"] = s["value"].encode("utf-8")
c.meta.events.register("before-send.s3.PutObject", add)
c.put_object(Bucket=s["bucket"], Key="boto3-utf8.txt", Body=b"x")
m = c.head_object(Bucket=s["bucket"], Key="boto3-utf8.txt")["Metadata"]["title"]
print(json.dumps(m.encode("latin-1").decode("utf-8")))
`;
    const settings = { endpoint: t.casket.url, key: t.casket.admin.accessKeyId, secret: t.casket.admin.secretAccessKey, bucket, value: VALUE };
    const out = execFileSync(python3(), ['-c', script, JSON.stringify(settings)], { env: cleanEnv({ AWS_CONFIG_FILE: '/dev/null', AWS_SHARED_CREDENTIALS_FILE: '/dev/null' }), encoding: 'utf8' });
    expect(JSON.parse(out)).toBe(VALUE);
  });
});
