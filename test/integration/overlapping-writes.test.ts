/**
 * Two PutObjects of one key from one client, the second started while the
 * first is still sending its body (through casket → Ceph RGW the first
 * once failed after a long wait with 503, because whatever serialized writes
 * to the key was held across the first body, and the second waited for it
 * while the client waited for the second). Whatever orders writes to a key
 * must never wait on a client's own upload: both answer, the second at once,
 * and the object ends as the write that committed last.
 *
 * The first body is 1 MiB with its SHA-256 signed: what the upstream backend
 * streams straight through (src/backends/s3/objects.ts).
 */
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { bytes } from '../helpers/clients.js';
import { raw, signRequest, type RawResponse } from '../helpers/raw.js';
import { casketWithBucket, etagOf } from '../helpers/suite.js';

const t = casketWithBucket('overlap');

/** Sends the request's headers and the first `sent` bytes of its body; `finish()` sends the rest. */
async function startPut(path: string, body: Buffer, sent: number, headers: Record<string, string> = {}) {
  const u = new URL(t.casket.url);
  const signed = await signRequest(t.casket.url, t.casket.admin, { method: 'PUT', path, body, headers });
  let answer!: Promise<RawResponse>;
  const req = request({ host: u.hostname, port: u.port, method: 'PUT', path, headers: signed.headers });
  answer = new Promise((resolve, reject) => {
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
  });
  req.write(body.subarray(0, sent));
  return {
    answer,
    finish() {
      req.end(body.subarray(sent));
      return answer;
    },
  };
}

describe('overlapping PutObjects of one key', () => {
  it('the second answers while the first body is in flight, then the first completes: both 200, the last commit stands', async () => {
    const first = randomBytes(1 << 20);
    const path = `/${t.bucket}/overlap`;
    const put = await startPut(path, first, first.length / 2);
    const second = await raw(t.casket.url, t.casket.admin, { method: 'PUT', path, body: 'second' });
    expect(second.status).toBe(200);
    expect(second.headers.etag).toBe(etagOf('second'));
    const done = await put.finish();
    expect(done.status).toBe(200);
    expect(done.headers.etag).toBe(etagOf(first));
    const got = await t.s3.send(new GetObjectCommand({ Bucket: t.bucket, Key: 'overlap' }));
    expect(got.ETag).toBe(etagOf(first));
    expect((await bytes(got.Body)).equals(first)).toBe(true);
  });

  it('a conditional DeleteObject waiting between them holds up neither: the second PUT answers while the first body is in flight', async () => {
    // On Ceph RGW (If-Match on DELETE not enforced) casket checks that delete
    // itself under the key's exclusive lock, which waits for the first body;
    // the second PUT must not queue behind it, or the client — waiting for
    // the second answer before it finishes the first body — never gets one.
    const v0 = await t.s3.send(new PutObjectCommand({ Bucket: t.bucket, Key: 'overlap-del', Body: 'v0' }));
    const first = randomBytes(1 << 20);
    const path = `/${t.bucket}/overlap-del`;
    const put = await startPut(path, first, first.length / 2);
    const deleting = raw(t.casket.url, t.casket.admin, { method: 'DELETE', path, headers: { 'if-match': v0.ETag! } });
    const second = await raw(t.casket.url, t.casket.admin, { method: 'PUT', path, body: 'second' });
    expect(second.status).toBe(200);
    expect(second.headers.etag).toBe(etagOf('second'));
    const done = await put.finish();
    expect(done.status).toBe(200);
    const deleted = await deleting;
    // The delete named v0: it either ran before both writes committed (204, then they recreated the key) or after (412).
    expect([204, 412]).toContain(deleted.status);
    const head = await raw(t.casket.url, t.casket.admin, { method: 'HEAD', path });
    expect(head.status).toBe(200);
    expect([etagOf(first), etagOf('second')]).toContain(head.headers.etag);
  });

  it('conditioned on the same version, the one that commits first wins; the other gets 412, whichever body was slower', async () => {
    const v1 = await t.s3.send(new PutObjectCommand({ Bucket: t.bucket, Key: 'overlap-cas', Body: 'v1' }));
    const slow = randomBytes(1 << 20);
    const path = `/${t.bucket}/overlap-cas`;
    const put = await startPut(path, slow, 1024, { 'if-match': v1.ETag! });
    const fast = await raw(t.casket.url, t.casket.admin, { method: 'PUT', path, body: 'fast', headers: { 'if-match': v1.ETag! } });
    expect(fast.status).toBe(200);
    const late = await put.finish();
    expect(late.status).toBe(412);
    expect(late.headers.etag).toBe(etagOf('fast'));
    const got = await t.s3.send(new GetObjectCommand({ Bucket: t.bucket, Key: 'overlap-cas' }));
    expect((await bytes(got.Body)).toString()).toBe('fast');
  });
});
