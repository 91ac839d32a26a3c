/**
 * What a refused write tells its client beyond the status, through the
 * guarded write (s3/write.ts) in this process: whether the current content
 * is byte-for-byte what was sent even when the body's hash was not signed
 * (UNSIGNED-PAYLOAD: casket learns it from the body); whether a refused
 * delete found the key already gone; the access key of the person who wrote
 * the current version; the diff link from what an agent last read — and
 * none where there is nothing to diff. An exact retry of a conditional
 * delete is answered as the first call.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cred } from '../helpers/casket.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { until } from '../helpers/poll.js';
import { raw, xmlField } from '../helpers/raw.js';
import { etagOf } from '../helpers/suite.js';

const bucket = 'refusals';
let casket: InProcessCasket;
let alice: Cred;
let carol: Cred;

beforeAll(async () => {
  casket = await startInProcess({ agents: ['alice'], keys: ['carol'] });
  alice = casket.agents.alice!;
  carol = casket.keys.carol!;
  await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}` });
});
afterAll(async () => {
  await casket?.stop();
});

const put = (who: Cred, key: string, body: string, headers: Record<string, string> = {}, payloadHash?: string) =>
  raw(casket.url, who, { method: 'PUT', path: `/${bucket}/${key}`, headers, body, ...(payloadHash !== undefined && { payloadHash }) });
const del = (who: Cred, key: string, headers: Record<string, string> = {}) => raw(casket.url, who, { method: 'DELETE', path: `/${bucket}/${key}`, headers });
const head = async (key: string) => (await raw(casket.url, casket.admin, { method: 'HEAD', path: `/${bucket}/${key}` })).headers.etag;

/** alice reads `key` whole (or `range` of it); casket records the read, and keeps the version, after the response. */
async function read(key: string, range?: string): Promise<string> {
  const r = await raw(casket.url, alice, { method: 'GET', path: `/${bucket}/${key}`, headers: range ? { range } : {} });
  const etag = (r.headers.etag as string).slice(1, -1);
  await until(async () => (await casket.casket.services.state.getStamp('alice', bucket, key))?.etag === etag, `alice's read of ${key} to be recorded`);
  if (!range) await until(async () => (await casket.casket.services.retainer!.get({ bucket, key, etag })) !== undefined, `the version of ${key} alice read to be kept`);
  return r.headers.etag as string;
}

describe('identical content, learnt from an unsigned body', () => {
  it('a stale If-Match whose bytes are current: 412 identical; other bytes: 412 without', async () => {
    const v1 = (await put(casket.admin, 'unsigned', 'one')).headers.etag as string;
    await put(casket.admin, 'unsigned', 'two');
    const same = await put(casket.admin, 'unsigned', 'two', { 'if-match': v1 }, 'UNSIGNED-PAYLOAD');
    expect([same.status, same.headers['x-casket-identical-content'], xmlField(same.body, 'IdenticalContent')], same.body).toEqual([412, 'true', 'true']);
    const other = await put(casket.admin, 'unsigned', 'three', { 'if-match': v1 }, 'UNSIGNED-PAYLOAD');
    expect([other.status, other.headers['x-casket-identical-content']], other.body).toEqual([412, undefined]);
    expect(await head('unsigned')).toBe(etagOf('two'));
  });

  it("an agent's write refused as it arrives (by the guard's own rule) still reads the unsigned body to say it is identical", async () => {
    // alice never read the key: If-Match on it is not-read, decided before the body.
    const current = (await put(carol, 'agent-unsigned', 'two')).headers.etag as string;
    const same = await put(alice, 'agent-unsigned', 'two', { 'if-match': current }, 'UNSIGNED-PAYLOAD');
    expect([same.status, xmlField(same.body, 'Reason'), same.headers['x-casket-identical-content']], same.body).toEqual([412, 'not-read', 'true']);
    const other = await put(alice, 'agent-unsigned', 'three', { 'if-match': current }, 'UNSIGNED-PAYLOAD');
    expect([other.status, xmlField(other.body, 'Reason'), other.headers['x-casket-identical-content']], other.body).toEqual([412, 'not-read', undefined]);
  });

  it('an exact retry with an unsigned body is answered as the first call', async () => {
    const v1 = (await put(casket.admin, 'unsigned-retry', 'one')).headers.etag as string;
    const call = () => put(casket.admin, 'unsigned-retry', 'two', { 'if-match': v1, 'amz-sdk-invocation-id': 'inv-unsigned' }, 'UNSIGNED-PAYLOAD');
    expect((await call()).status).toBe(200);
    const again = await call();
    expect([again.status, again.headers.etag], again.body).toEqual([200, etagOf('two')]);
  });
});

describe('conditional deletes', () => {
  it('an exact retry of a DeleteObject with If-Match: 204 again; another invocation: 404 NoSuchKey, the key already gone', async () => {
    const v1 = (await put(casket.admin, 'gone', 'one')).headers.etag as string;
    const call = (invocation: string) => del(casket.admin, 'gone', { 'if-match': v1, 'amz-sdk-invocation-id': invocation });
    expect((await call('inv-del')).status).toBe(204);
    expect((await call('inv-del')).status).toBe(204);
    const other = await call('inv-del-2');
    expect([other.status, xmlField(other.body, 'Code'), other.headers['x-casket-identical-content']], other.body).toEqual([404, 'NoSuchKey', 'true']);
  });

  it("an agent's exact retry of its conditional delete: 204 again, though its read stamp went with the key", async () => {
    await put(casket.admin, 'agent-gone', 'one');
    const v1 = await read('agent-gone');
    const call = (invocation: string) => del(alice, 'agent-gone', { 'if-match': v1, 'amz-sdk-invocation-id': invocation });
    expect((await call('inv-agent-del')).status).toBe(204);
    // The key is gone: so is alice's read of it (a later write needs a new read).
    expect(await casket.casket.services.state.getStamp('alice', bucket, 'agent-gone')).toBeUndefined();
    const again = await call('inv-agent-del');
    expect(again.status, again.body).toBe(204);
    const other = await call('inv-agent-del-2');
    expect([other.status, xmlField(other.body, 'Code'), other.headers['x-casket-identical-content']], other.body).toEqual([404, 'NoSuchKey', 'true']);
  });

  it('a stale If-Match on a key that exists: 412, not identical (the key is not gone)', async () => {
    const v1 = (await put(casket.admin, 'kept', 'one')).headers.etag as string;
    await put(casket.admin, 'kept', 'two');
    const r = await del(casket.admin, 'kept', { 'if-match': v1 });
    expect([r.status, r.headers['x-casket-identical-content'], r.headers.etag], r.body).toEqual([412, undefined, etagOf('two')]);
    expect(await head('kept')).toBe(etagOf('two'));
  });
});

describe('who wrote the current version', () => {
  it("a person's version: the 412 names its access key, as the write log does", async () => {
    await put(casket.admin, 'person', 'one');
    const v1 = await read('person');
    await put(carol, 'person', 'by carol');
    const r = await put(alice, 'person', 'by alice', { 'if-match': v1 });
    expect([r.status, r.headers['x-casket-writer-access-key'], xmlField(r.body, 'LastWriterAccessKey')], r.body).toEqual([412, carol.accessKeyId, carol.accessKeyId]);
    expect(r.headers['x-casket-writer']).toBeUndefined();
  });

  it("an agent's version: named by its agent, not by an access key", async () => {
    await put(casket.admin, 'by-agent', 'one');
    const v1 = await read('by-agent');
    expect((await put(alice, 'by-agent', 'by alice', { 'if-match': v1 })).status).toBe(200);
    const r = await put(carol, 'by-agent', 'by carol', { 'if-match': v1 });
    expect([r.status, r.headers['x-casket-writer'], r.headers['x-casket-writer-access-key']], r.body).toEqual([412, 'alice', undefined]);
  });
});

describe('the diff link', () => {
  it("an agent's unconditional write after a person changed what it read: 428 linking the diff from its read", async () => {
    await put(casket.admin, 'moved.md', 'line 1\n');
    const v1 = await read('moved.md');
    const v2 = (await put(carol, 'moved.md', 'line 1 by carol\n')).headers.etag as string;
    const r = await put(alice, 'moved.md', 'line 1 by alice\n');
    expect([r.status, xmlField(r.body, 'Code')], r.body).toEqual([428, 'PreconditionRequired']);
    expect(r.headers['x-casket-diff']).toBe(`/_casket/diff?bucket=${bucket}&from=${v1.slice(1, -1)}&key=moved.md&to=${v2.slice(1, -1)}`);
  });

  it('nothing to diff: none on a 428 for the version the agent read, nor after the key was deleted (and no 500)', async () => {
    await put(casket.admin, 'unchanged.md', 'line 1\n');
    await read('unchanged.md');
    const r = await put(alice, 'unchanged.md', 'line 1 by alice\n');
    expect([r.status, r.headers['x-casket-diff']], r.body).toEqual([428, undefined]);
    await del(casket.admin, 'unchanged.md');
    const after = await put(alice, 'unchanged.md', 'line 1 by alice\n');
    expect([after.status, xmlField(after.body, 'Code'), after.headers['x-casket-diff']], after.body).toEqual([428, 'PreconditionRequired', undefined]);
  });

  it('a partial read of the current version: 412 partial-read, no diff (the agent saw that version)', async () => {
    await put(casket.admin, 'part.md', '0123456789');
    const v = await read('part.md', 'bytes=0-4');
    const r = await put(alice, 'part.md', 'by alice', { 'if-match': v });
    expect([r.status, xmlField(r.body, 'Reason'), r.headers['x-casket-diff']], r.body).toEqual([412, 'partial-read', undefined]);
  });
});
