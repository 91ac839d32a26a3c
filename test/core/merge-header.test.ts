/**
 * `x-casket-merge: text` changes what is written (s3/merge-write.ts), so
 * casket accepts it only signed and only with its one value: a proxy in
 * between must not be able to turn a plain write into a merge, and a typo
 * must not pass as a plain write the client believes merged.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { raw, send, signRequest, xmlField } from '../helpers/raw.js';
import { etagOf } from '../helpers/suite.js';

const bucket = 'merge';
let casket: InProcessCasket;
let base: string;

beforeAll(async () => {
  casket = await startInProcess();
  await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}` });
  base = (await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}/notes`, body: 'base\n' })).headers.etag as string;
});
afterAll(async () => {
  await casket?.stop();
});

async function current(): Promise<string | undefined> {
  return (await raw(casket.url, casket.admin, { method: 'HEAD', path: `/${bucket}/notes` })).headers.etag as string | undefined;
}

describe('x-casket-merge', () => {
  it('sent but not signed: 400 InvalidRequest, nothing written', async () => {
    const put = { method: 'PUT', path: `/${bucket}/notes`, headers: { 'if-match': base }, body: 'unsigned merge\n' };
    const { headers, path } = await signRequest(casket.url, casket.admin, put);
    // Added after signing: what a proxy between the client and casket could do.
    const r = await send(casket.url, 'PUT', path, { ...headers, 'x-casket-merge': 'text' }, put.body);
    expect([r.status, xmlField(r.body, 'Code')], r.body).toEqual([400, 'InvalidRequest']);
    expect(await current()).toBe(base);
  });

  it('signed with a value other than "text": 400 InvalidArgument naming the header, nothing written', async () => {
    const r = await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}/notes`, headers: { 'if-match': base, 'x-casket-merge': 'binary' }, body: 'binary merge\n' });
    expect([r.status, xmlField(r.body, 'Code'), xmlField(r.body, 'ArgumentName')], r.body).toEqual([400, 'InvalidArgument', 'x-casket-merge']);
    expect(await current()).toBe(base);
  });

  it('signed, "text" in any case: an ordinary write while the base is current', async () => {
    const r = await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}/notes`, headers: { 'if-match': base, 'x-casket-merge': ' Text ' }, body: 'signed merge\n' });
    expect(r.status, r.body).toBe(200);
    expect(await current()).toBe(etagOf('signed merge\n'));
  });
});
