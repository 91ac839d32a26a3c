/**
 * A write the guard refuses as it arrives — an agent's, by casket's own
 * rules — whose body is still received (no Expect: 100-continue) is
 * committed under a condition nothing satisfies, only to learn whether its
 * bytes are the current ones (s3/write.ts). When that probe fails for
 * another reason — here the body does not match its Content-MD5 (RFC 1864),
 * which S3 answers 400 BadDigest — the refusal stands: the agent hears why
 * its write cannot land (with the current ETag), not a complaint about bytes
 * that were never going to be written.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cred } from '../helpers/casket.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { raw, xmlField } from '../helpers/raw.js';
import { etagOf } from '../helpers/suite.js';

const bucket = 'probed';
let casket: InProcessCasket;

beforeAll(async () => {
  casket = await startInProcess({ agents: ['alice'] });
  await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}` });
});
afterAll(async () => {
  await casket?.stop();
});

const put = (who: Cred, key: string, body: string, headers: Record<string, string> = {}) =>
  // UNSIGNED-PAYLOAD: casket knows the body's SHA-256 only once it has read the body.
  raw(casket.url, who, { method: 'PUT', path: `/${bucket}/${key}`, headers, body, payloadHash: 'UNSIGNED-PAYLOAD' });
const md5 = (s: string) => createHash('md5').update(s).digest('base64');
const content = async (key: string) => (await raw(casket.url, casket.admin, { method: 'GET', path: `/${bucket}/${key}` })).body;

describe('a refused write whose body fails its Content-MD5', () => {
  it("an agent's write without If-Match: still 428 PreconditionRequired with the current ETag; nothing written", async () => {
    await put(casket.admin, 'doc', 'one');
    const r = await put(casket.agents.alice!, 'doc', 'two', { 'content-md5': md5('not two') });
    expect([r.status, xmlField(r.body, 'Code'), r.headers.etag], r.body).toEqual([428, 'PreconditionRequired', etagOf('one')]);
    expect(await content('doc')).toBe('one');
  });

  it("an agent's If-Match on a version it never read: still 412 not-read; nothing written", async () => {
    const v1 = (await put(casket.admin, 'unread', 'one')).headers.etag as string;
    const r = await put(casket.agents.alice!, 'unread', 'two', { 'if-match': v1, 'content-md5': md5('not two') });
    expect([r.status, xmlField(r.body, 'Reason'), r.headers.etag], r.body).toEqual([412, 'not-read', v1]);
    expect(await content('unread')).toBe('one');
  });

  it('the same body on a write that may land: 400 BadDigest, nothing written', async () => {
    // The other half: the Content-MD5 is checked, and a write that may land is refused for it.
    const v1 = (await put(casket.admin, 'held', 'one')).headers.etag as string;
    const r = await put(casket.admin, 'held', 'three', { 'if-match': v1, 'content-md5': md5('not three') });
    expect([r.status, xmlField(r.body, 'Code')], r.body).toEqual([400, 'BadDigest']);
    expect(await content('held')).toBe('one');
  });
});
