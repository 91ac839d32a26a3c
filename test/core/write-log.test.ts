/**
 * What the guarded write (s3/write.ts) records and answers besides the
 * commit, through casket's HTTP front in this process: the write log entry
 * (writer, access key, invocation id, the version replaced, the new one);
 * a 412 whose bytes are already current says so; an agent's stale 412
 * links the diff from the version it read.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cred } from '../helpers/casket.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { until } from '../helpers/poll.js';
import { raw } from '../helpers/raw.js';
import { etagOf } from '../helpers/suite.js';

const bucket = 'logged';
let casket: InProcessCasket;
let alice: Cred;
let bob: Cred;

beforeAll(async () => {
  casket = await startInProcess({ agents: ['alice', 'bob'] });
  ({ alice, bob } = casket.agents as { alice: Cred; bob: Cred });
  await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}` });
});
afterAll(async () => {
  await casket?.stop();
});

const put = (who: Cred, key: string, body: string, headers: Record<string, string> = {}) => raw(casket.url, who, { method: 'PUT', path: `/${bucket}/${key}`, headers, body });
const newest = async (key: string) => (await casket.casket.services.state.listWriteLog({ bucket, key, limit: 1 }))[0];

/** `who` reads `key` whole; casket records the read (and keeps the version) after the response. */
async function read(who: Cred, agent: string, key: string): Promise<string> {
  const r = await raw(casket.url, who, { method: 'GET', path: `/${bucket}/${key}` });
  const etag = (r.headers.etag as string).slice(1, -1);
  await until(async () => (await casket.casket.services.state.getStamp(agent, bucket, key))?.etag === etag && (await casket.casket.services.retainer!.get({ bucket, key, etag })) !== undefined, `${agent}'s read of ${key} to be recorded`);
  return r.headers.etag as string;
}

describe('the write log', () => {
  it('names the agent, its access key, the invocation, the version replaced and the new one', async () => {
    const v1 = (await put(casket.admin, 'k', 'one')).headers.etag as string;
    expect(await newest('k')).toMatchObject({ operation: 'PutObject', accessKey: casket.admin.accessKeyId, newETag: etagOf('one').slice(1, -1) });
    expect((await newest('k'))?.agent).toBeUndefined();
    expect((await newest('k'))?.previousETag).toBeUndefined();
    await read(alice, 'alice', 'k');
    expect((await put(alice, 'k', 'two', { 'if-match': v1, 'amz-sdk-invocation-id': 'inv-log' })).status).toBe(200);
    const entry = await newest('k');
    expect(entry).toMatchObject({ agent: 'alice', accessKey: alice.accessKeyId, invocationId: 'inv-log', previousETag: v1.slice(1, -1), newETag: etagOf('two').slice(1, -1) });
  });

  it('an exact retry is answered as the first call and adds nothing to the log', async () => {
    const v1 = (await put(casket.admin, 'retried', 'one')).headers.etag as string;
    const call = () => put(casket.admin, 'retried', 'two', { 'if-match': v1, 'amz-sdk-invocation-id': 'inv-twice' });
    expect((await call()).headers.etag).toBe(etagOf('two'));
    const logged = await casket.casket.services.state.listWriteLog({ bucket, key: 'retried', limit: 10 });
    const again = await call();
    expect([again.status, again.headers.etag]).toEqual([200, etagOf('two')]);
    expect(await casket.casket.services.state.listWriteLog({ bucket, key: 'retried', limit: 10 })).toEqual(logged);
  });
});

describe('refusals that explain themselves', () => {
  it('a 412 whose bytes are already current says the content is identical; other bytes do not', async () => {
    const v1 = (await put(casket.admin, 'same', 'one')).headers.etag as string;
    await put(casket.admin, 'same', 'two');
    const same = await put(casket.admin, 'same', 'two', { 'if-match': v1 });
    expect([same.status, same.headers['x-casket-identical-content']]).toEqual([412, 'true']);
    const other = await put(casket.admin, 'same', 'three', { 'if-match': v1 });
    expect([other.status, other.headers['x-casket-identical-content']]).toEqual([412, undefined]);
  });

  it("an agent's stale write links the diff from the version it read to the current one", async () => {
    const v1 = (await put(casket.admin, 'stale.md', 'line 1\nline 2\n')).headers.etag as string;
    await read(alice, 'alice', 'stale.md');
    await read(bob, 'bob', 'stale.md');
    const v2 = (await put(alice, 'stale.md', 'line 1\nline 2 by alice\n', { 'if-match': v1 })).headers.etag as string;
    const refused = await put(bob, 'stale.md', 'line 1 by bob\nline 2\n', { 'if-match': v1 });
    expect(refused.status).toBe(412);
    // Sorted, as SigV4 canonicalizes a query (links are signed as they stand).
    const link = `/_casket/diff?bucket=${bucket}&from=${v1.slice(1, -1)}&key=stale.md&to=${v2.slice(1, -1)}`;
    expect(refused.headers['x-casket-diff']).toBe(link);
    const diff = await raw(casket.url, bob, { method: 'GET', path: link });
    expect(diff.body).toContain('-line 2\n+line 2 by alice\n');
  });
});
