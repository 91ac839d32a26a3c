/**
 * Writes that wait on `Expect: 100-continue` (RFC 9110 §10.1.1; boto3 and
 * awscli send it on every PUT) through the guarded write (s3/write.ts) in
 * this process: a failed condition is refused before the body is sent, and
 * says up front when the signed payload hash is already the current content;
 * an exact retry is still recognised — casket asks for the body to tell.
 */
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cred } from '../helpers/casket.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { raw, sha256hex, signRequest, xmlField } from '../helpers/raw.js';
import { etagOf } from '../helpers/suite.js';

const bucket = 'continue';
let casket: InProcessCasket;

beforeAll(async () => {
  casket = await startInProcess({ agents: ['alice'] });
  await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}` });
});
afterAll(async () => {
  await casket?.stop();
});

interface Outcome {
  status: number;
  /** casket answered 100 Continue: it asked for the body. */
  continued: boolean;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * A PUT of `body` with `Expect: 100-continue` that sends the body only if
 * casket says continue, signed with `payloadHash` (default: the body's
 * SHA-256, as the SDKs sign a body they hold).
 */
async function putExpecting(who: Cred, key: string, body: Buffer | string, headers: Record<string, string> = {}, payloadHash?: string): Promise<Outcome> {
  const data = Buffer.from(body);
  const signed = await signRequest(casket.url, who, {
    method: 'PUT',
    path: `/${bucket}/${key}`,
    payloadHash: payloadHash ?? sha256hex(data),
    headers: { 'content-length': String(data.length), expect: '100-continue', ...headers },
  });
  const u = new URL(casket.url);
  return new Promise((resolve, reject) => {
    let continued = false;
    const req = httpRequest({ host: u.hostname, port: u.port, method: 'PUT', path: `/${bucket}/${key}`, headers: signed.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, continued, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('continue', () => {
      continued = true;
      req.end(data);
    });
    req.on('error', reject);
    // Never send the body unless casket says continue.
    req.flushHeaders();
  });
}

const put = async (who: Cred, key: string, body: string, headers: Record<string, string> = {}) => raw(casket.url, who, { method: 'PUT', path: `/${bucket}/${key}`, headers, body });
const content = async (key: string) => (await raw(casket.url, casket.admin, { method: 'GET', path: `/${bucket}/${key}` })).body;

describe('Expect: 100-continue and a failed condition', () => {
  it('If-Match on a replaced version: 412 before the body is sent; the version stays', async () => {
    const v1 = (await put(casket.admin, 'stale', 'one')).headers.etag as string;
    await put(casket.admin, 'stale', 'two');
    const r = await putExpecting(casket.admin, 'stale', randomBytes(64 * 1024), { 'if-match': v1 });
    expect([r.status, r.continued, xmlField(r.body, 'Code'), r.headers.etag], r.body).toEqual([412, false, 'PreconditionFailed', etagOf('two')]);
    expect(r.headers['x-casket-identical-content']).toBeUndefined();
    expect(await content('stale')).toBe('two');
  });

  it('a signed payload hash that is the current content: 412 identical, said before the body is sent', async () => {
    const v1 = (await put(casket.admin, 'same', 'one')).headers.etag as string;
    await put(casket.admin, 'same', 'two');
    const r = await putExpecting(casket.admin, 'same', 'two', { 'if-match': v1 });
    expect([r.status, r.continued, r.headers['x-casket-identical-content'], xmlField(r.body, 'IdenticalContent')], r.body).toEqual([412, false, 'true', 'true']);
  });

  it('If-None-Match: * on an existing key whose bytes are sent again: 412 identical, no body asked for', async () => {
    await put(casket.admin, 'exists', 'here');
    const r = await putExpecting(casket.admin, 'exists', 'here', { 'if-none-match': '*' });
    expect([r.status, r.continued, xmlField(r.body, 'Condition'), r.headers['x-casket-identical-content']], r.body).toEqual([412, false, 'If-None-Match', 'true']);
  });

  it('If-Match on a key that does not exist: 404 NoSuchKey before the body, not identical to an absent key', async () => {
    const r = await putExpecting(casket.admin, 'never', 'x', { 'if-match': etagOf('x') });
    expect([r.status, r.continued, xmlField(r.body, 'Code'), r.headers['x-casket-identical-content']], r.body).toEqual([404, false, 'NoSuchKey', undefined]);
  });

  it("an agent's unconditional write: 428 before the body is sent", async () => {
    await put(casket.admin, 'agent', 'one');
    const r = await putExpecting(casket.agents.alice!, 'agent', 'by alice');
    expect([r.status, r.continued, xmlField(r.body, 'Code')], r.body).toEqual([428, false, 'PreconditionRequired']);
    expect(await content('agent')).toBe('one');
  });

  it('a condition that holds: 100 Continue, and the body is written', async () => {
    const v1 = (await put(casket.admin, 'fresh', 'one')).headers.etag as string;
    const r = await putExpecting(casket.admin, 'fresh', 'two', { 'if-match': v1 });
    expect([r.status, r.continued, r.headers.etag], r.body).toEqual([200, true, etagOf('two')]);
    expect(await content('fresh')).toBe('two');
  });
});

describe('Expect: 100-continue and the write log', () => {
  it('the version read to check the condition early is the one the log says was replaced', async () => {
    // If-None-Match naming another version says nothing of what is replaced:
    // only the version casket read before asking for the body does.
    const v1 = (await put(casket.admin, 'logged', 'one')).headers.etag as string;
    const r = await putExpecting(casket.admin, 'logged', 'two', { 'if-none-match': etagOf('other') });
    expect([r.status, r.continued], r.body).toEqual([200, true]);
    const [entry] = await casket.casket.services.state.listWriteLog({ bucket, key: 'logged', limit: 1 });
    expect(entry).toMatchObject({ operation: 'PutObject', previousETag: v1.slice(1, -1), newETag: etagOf('two').slice(1, -1) });
  });
});

describe('Expect: 100-continue and an exact retry', () => {
  it('the same key and invocation id after the first attempt landed: casket asks for the body and answers 200 as the first time', async () => {
    const v1 = (await put(casket.admin, 'retry', 'one')).headers.etag as string;
    const call = () => putExpecting(casket.admin, 'retry', 'two', { 'if-match': v1, 'amz-sdk-invocation-id': 'inv-continue' }, 'UNSIGNED-PAYLOAD');
    expect((await call()).status).toBe(200);
    const again = await call();
    expect([again.status, again.continued, again.headers.etag], again.body).toEqual([200, true, etagOf('two')]);
  });

  it('the same invocation id with other bytes is a conflict: 412', async () => {
    const v1 = (await put(casket.admin, 'retry-other', 'one')).headers.etag as string;
    const headers = { 'if-match': v1, 'amz-sdk-invocation-id': 'inv-other' };
    expect((await putExpecting(casket.admin, 'retry-other', 'two', headers, 'UNSIGNED-PAYLOAD')).status).toBe(200);
    const r = await putExpecting(casket.admin, 'retry-other', 'three', headers, 'UNSIGNED-PAYLOAD');
    expect([r.status, xmlField(r.body, 'Code')], r.body).toEqual([412, 'PreconditionFailed']);
    expect(await content('retry-other')).toBe('two');
  });
});
