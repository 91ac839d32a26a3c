/**
 * The opt-in merge (x-casket-merge: text, s3/merge-write.ts) at its edges,
 * with casket in this process and --retain-max-size 200: a body of exactly
 * the limit still merges, a larger one sent chunked (its length known only
 * at its end) is written as an ordinary PutObject; the current version is
 * read from the store when no agent's read kept it; what a merge wrote is
 * kept, so the next edit from it merges too; a conflict names the person who
 * wrote the current version and links the diff; the header must be signed
 * and say "text".
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cred } from '../helpers/casket.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { until } from '../helpers/poll.js';
import { raw, send, signRequest, xmlField } from '../helpers/raw.js';
import { etagOf } from '../helpers/suite.js';
import { subscribe, type Rec, type Subscription } from '../events/sse.js';

const LIMIT = 200;
const bucket = 'edges';
let casket: InProcessCasket;
let alice: Cred;
let bob: Cred;
let carol: Cred;
let stream: Subscription;

beforeAll(async () => {
  casket = await startInProcess({ agents: ['alice', 'bob'], keys: ['carol'], flags: { retainMaxSize: String(LIMIT) } });
  ({ alice, bob } = casket.agents as { alice: Cred; bob: Cred });
  carol = casket.keys.carol!;
  await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}` });
  stream = await subscribe(casket.url, casket.admin);
});
afterAll(async () => {
  stream?.close();
  await casket?.stop();
});

/** Ten lines of 19 characters and a newline: 200 bytes, the limit; `line(i, tag)` keeps that length. */
const line = (i: number, tag = 'base') => `line ${i} ${tag}`.padEnd(19, '.') + '\n';
const lines = (edits: Record<number, string> = {}) => Array.from({ length: 10 }, (_, i) => line(i, edits[i])).join('');

const put = (who: Cred, key: string, body: string | Buffer, headers: Record<string, string> = {}) => raw(casket.url, who, { method: 'PUT', path: `/${bucket}/${key}`, headers, body });
const merge = (who: Cred, key: string, base: string, body: string | Buffer) => put(who, key, body, { 'if-match': base, 'x-casket-merge': 'text' });
const get = async (key: string) => (await raw(casket.url, casket.admin, { method: 'GET', path: `/${bucket}/${key}` })).body;
const kept = async (key: string, etag: string) => (await casket.casket.services.retainer!.get({ bucket, key, etag: etag.slice(1, -1) })) !== undefined;

/** `who` reads `key` whole; casket keeps the version it read (after the response). */
async function read(who: Cred, key: string): Promise<string> {
  const etag = (await raw(casket.url, who, { method: 'GET', path: `/${bucket}/${key}` })).headers.etag as string;
  await until(() => kept(key, etag), `the version of ${key} read to be kept`);
  return etag;
}

describe('the size limit', () => {
  it('a body, a base and a current version of exactly --retain-max-size bytes merge', async () => {
    expect(lines().length).toBe(LIMIT);
    await put(casket.admin, 'full.txt', lines());
    const base = await read(alice, 'full.txt');
    await read(bob, 'full.txt');
    expect((await put(alice, 'full.txt', lines({ 1: 'alice' }), { 'if-match': base })).status).toBe(200);
    const b = await merge(bob, 'full.txt', base, lines({ 8: 'bob' }));
    expect([b.status, b.headers['x-casket-merged']], b.body).toEqual([200, etagOf(lines({ 1: 'alice' }))]);
    expect(await get('full.txt')).toBe(lines({ 1: 'alice', 8: 'bob' }));
  });

  it('a chunked body larger than the limit is an ordinary write: it lands when its If-Match holds', async () => {
    const v1 = (await put(casket.admin, 'large.txt', 'small\n')).headers.etag as string;
    const body = [Buffer.from('a'.repeat(150)), Buffer.from('b'.repeat(150)), Buffer.from('c'.repeat(150))];
    const r = await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}/large.txt`, headers: { 'if-match': v1, 'x-casket-merge': 'text', 'transfer-encoding': 'chunked' }, body });
    expect([r.status, r.headers.etag, r.headers['x-casket-merged']], r.body).toEqual([200, etagOf(Buffer.concat(body)), undefined]);
    expect(await get('large.txt')).toBe(Buffer.concat(body).toString());
  });

  it('a current version larger than the limit is not merged with: the ordinary 412', async () => {
    await put(casket.admin, 'grown.txt', lines());
    const base = await read(bob, 'grown.txt');
    await put(carol, 'grown.txt', lines({ 0: 'carol' }) + 'and more lines, past the limit\n');
    const b = await merge(bob, 'grown.txt', base, lines({ 9: 'bob' }));
    expect([b.status, xmlField(b.body, 'Reason'), b.headers['x-casket-merged']], b.body).toEqual([412, 'precondition-failed', undefined]);
  });

  it('a chunked body larger than the limit is not merged, though its base is kept: the ordinary 412', async () => {
    await put(casket.admin, 'over.txt', lines());
    const base = await read(bob, 'over.txt');
    await put(carol, 'over.txt', lines({ 0: 'carol' }));
    const body = [Buffer.from(lines({ 9: 'bob' })), Buffer.from('one more line\n')];
    const r = await raw(casket.url, bob, { method: 'PUT', path: `/${bucket}/over.txt`, headers: { 'if-match': base, 'x-casket-merge': 'text', 'transfer-encoding': 'chunked' }, body });
    expect([r.status, xmlField(r.body, 'Code'), r.headers['x-casket-merged']], r.body).toEqual([412, 'PreconditionFailed', undefined]);
    expect(await get('over.txt')).toBe(lines({ 0: 'carol' }));
  });

  it("a chunked body larger than the limit on a replaced base: the ordinary 412, nothing written", async () => {
    const v1 = (await put(casket.admin, 'large-stale.txt', 'one\n')).headers.etag as string;
    await put(casket.admin, 'large-stale.txt', 'two\n');
    const body = [Buffer.from('x'.repeat(150)), Buffer.from('y'.repeat(150))];
    const r = await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}/large-stale.txt`, headers: { 'if-match': v1, 'x-casket-merge': 'text', 'transfer-encoding': 'chunked' }, body });
    expect([r.status, xmlField(r.body, 'Code'), r.headers['x-casket-merged']], r.body).toEqual([412, 'PreconditionFailed', undefined]);
    expect(await get('large-stale.txt')).toBe('two\n');
  });
});

describe('where the versions come from', () => {
  it("the current version a person wrote (no agent's read kept it) is read from the store, and merged with", async () => {
    await put(casket.admin, 'person.txt', lines());
    const base = await read(bob, 'person.txt');
    await put(carol, 'person.txt', lines({ 2: 'carol' }));
    expect(await kept('person.txt', etagOf(lines({ 2: 'carol' })))).toBe(false);
    const b = await merge(bob, 'person.txt', base, lines({ 7: 'bob' }));
    expect([b.status, b.headers['x-casket-merged']], b.body).toEqual([200, etagOf(lines({ 2: 'carol' }))]);
    expect(await get('person.txt')).toBe(lines({ 2: 'carol', 7: 'bob' }));
  });

  it("what an agent's merge request wrote, and what a merge made, are kept: the next edit from either merges", async () => {
    await put(casket.admin, 'chain.txt', lines());
    const base = await read(alice, 'chain.txt');
    // alice's edit lands as sent (its base is current): casket keeps it, after the answer.
    const a1 = await merge(alice, 'chain.txt', base, lines({ 0: 'a1' }));
    expect([a1.status, a1.headers['x-casket-merged']]).toEqual([200, undefined]);
    await until(() => kept('chain.txt', a1.headers.etag as string), "alice's write to be kept");
    await put(carol, 'chain.txt', lines({ 0: 'a1', 5: 'carol' }));
    // alice edits from her own write, which carol has since changed: merged.
    const a2 = await merge(alice, 'chain.txt', a1.headers.etag as string, lines({ 0: 'a1', 9: 'a2' }));
    expect([a2.status, a2.headers['x-casket-merged']], a2.body).toEqual([200, etagOf(lines({ 0: 'a1', 5: 'carol' }))]);
    expect(a2.headers.etag).toBe(etagOf(lines({ 0: 'a1', 5: 'carol', 9: 'a2' })));
    await until(() => kept('chain.txt', a2.headers.etag as string), 'the merged version to be kept');
    await put(carol, 'chain.txt', lines({ 0: 'a1', 5: 'carol', 9: 'a2', 3: 'carol' }));
    // and from the merged version, which casket kept when it wrote it.
    const a3 = await merge(alice, 'chain.txt', a2.headers.etag as string, lines({ 0: 'a1', 5: 'carol', 9: 'a2', 6: 'a3' }));
    expect([a3.status, a3.headers['x-casket-merged']], a3.body).toEqual([200, etagOf(lines({ 0: 'a1', 5: 'carol', 9: 'a2', 3: 'carol' }))]);
    expect(await get('chain.txt')).toBe(lines({ 0: 'a1', 3: 'carol', 5: 'carol', 6: 'a3', 9: 'a2' }));
  });

  it('a merged write is the agent\'s, recorded as merged: the event says so and names the version merged with', async () => {
    await put(casket.admin, 'evented.txt', lines());
    const base = await read(bob, 'evented.txt');
    const theirs = (await put(carol, 'evented.txt', lines({ 4: 'carol' }))).headers.etag as string;
    expect((await merge(bob, 'evented.txt', base, lines({ 6: 'bob' }))).status).toBe(200);
    const mine = (all: Rec[]) => all.filter((r) => r.s3.object.key === 'evented.txt');
    const records = mine(await stream.until((all) => mine(all).length >= 3));
    expect(records.map((r) => r.eventName)).toEqual(['s3:ObjectCreated:Put', 's3:ObjectCreated:Put', 's3:ObjectCreated:Put']);
    expect(records[2]!.casket).toEqual({ operation: 'PutObject', agent: 'bob', accessKey: bob.accessKeyId, previousETag: theirs.slice(1, -1), merged: true });
    expect(records[1]!.casket.merged).toBeUndefined();
    const entry = (await casket.casket.services.state.listWriteLog({ bucket, key: 'evented.txt', limit: 1 }))[0];
    expect(entry).toMatchObject({ agent: 'bob', previousETag: theirs.slice(1, -1), newETag: etagOf(lines({ 4: 'carol', 6: 'bob' })).slice(1, -1) });
    expect((await casket.casket.services.state.getStamp('bob', bucket, 'evented.txt'))?.etag).toBe(entry!.newETag);
  });
});

describe('what is not merged', () => {
  it('an edit that is byte-for-byte the current version: the 412 that says so, not a merge of a change with itself', async () => {
    await put(casket.admin, 'twice.txt', lines());
    const base = await read(bob, 'twice.txt');
    await put(carol, 'twice.txt', lines({ 1: 'same' }));
    const b = await merge(bob, 'twice.txt', base, lines({ 1: 'same' }));
    expect([b.status, b.headers['x-casket-identical-content'], b.headers['x-casket-merged']], b.body).toEqual([412, 'true', undefined]);
  });

  it('a base named in the "-1" form is the same version: merged', async () => {
    await put(casket.admin, 'dash.txt', lines());
    const base = await read(bob, 'dash.txt');
    await put(carol, 'dash.txt', lines({ 0: 'carol' }));
    const b = await merge(bob, 'dash.txt', `"${base.slice(1, -1)}-1"`, lines({ 9: 'bob' }));
    expect([b.status, b.headers['x-casket-merged']], b.body).toEqual([200, etagOf(lines({ 0: 'carol' }))]);
    expect(await get('dash.txt')).toBe(lines({ 0: 'carol', 9: 'bob' }));
  });
});

describe('a merge conflict', () => {
  it("names the person who wrote the current version and links the diff from the base; it is a WriteRefused event", async () => {
    await put(casket.admin, 'clash.txt', lines());
    const base = await read(bob, 'clash.txt');
    const theirs = (await put(carol, 'clash.txt', lines({ 3: 'carol' }))).headers.etag as string;
    const b = await merge(bob, 'clash.txt', base, lines({ 3: 'bob' }));
    expect([b.status, xmlField(b.body, 'Reason'), b.headers['x-casket-writer-access-key']], b.body).toEqual([412, 'merge-conflict', carol.accessKeyId]);
    expect(b.headers['x-casket-diff']).toBe(`/_casket/diff?bucket=${bucket}&from=${base.slice(1, -1)}&key=clash.txt&to=${theirs.slice(1, -1)}`);
    expect(b.headers['x-casket-merge-conflict']).toBe(
      `/_casket/merge?base=${base.slice(1, -1)}&bucket=${bucket}&current=${theirs.slice(1, -1)}&key=clash.txt&sent=${etagOf(lines({ 3: 'bob' })).slice(1, -1)}`,
    );
    const refused = (await stream.until((all) => all.some((r) => r.s3.object.key === 'clash.txt' && r.eventName === 'casket:WriteRefused'))).filter((r) => r.s3.object.key === 'clash.txt' && r.eventName === 'casket:WriteRefused');
    expect(refused.map((r) => [r.casket.reason, r.casket.agent, r.casket.status, r.casket.operation, r.casket.accessKey])).toEqual([['merge-conflict', 'bob', 412, 'PutObject', bob.accessKeyId]]);
    expect(await get('clash.txt')).toBe(lines({ 3: 'carol' }));
  });

  it("an agent's version current: named by the agent", async () => {
    await put(casket.admin, 'agents.txt', lines());
    const base = await read(alice, 'agents.txt');
    await read(bob, 'agents.txt');
    expect((await put(alice, 'agents.txt', lines({ 5: 'alice' }), { 'if-match': base })).status).toBe(200);
    const b = await merge(bob, 'agents.txt', base, lines({ 5: 'bob' }));
    expect([b.status, xmlField(b.body, 'Reason'), b.headers['x-casket-writer']], b.body).toEqual([412, 'merge-conflict', 'alice']);
  });
});

describe('the header', () => {
  it('" Text " is "text": a merge', async () => {
    await put(casket.admin, 'case.txt', lines());
    const base = await read(bob, 'case.txt');
    await put(carol, 'case.txt', lines({ 0: 'carol' }));
    const b = await put(bob, 'case.txt', lines({ 9: 'bob' }), { 'if-match': base, 'x-casket-merge': ' Text ' });
    expect([b.status, b.headers['x-casket-merged']], b.body).toEqual([200, etagOf(lines({ 0: 'carol' }))]);
  });

  it('needs If-Match naming exactly one version: If-Match: * or two ETags is 400 InvalidRequest, nothing written', async () => {
    const v1 = (await put(casket.admin, 'one-base.txt', 'one\n')).headers.etag as string;
    for (const ifMatch of ['*', `${v1}, ${etagOf('other')}`]) {
      const r = await put(casket.admin, 'one-base.txt', 'two\n', { 'if-match': ifMatch, 'x-casket-merge': 'text' });
      expect([ifMatch, r.status, xmlField(r.body, 'Code'), xmlField(r.body, 'Message')], r.body).toEqual([ifMatch, 400, 'InvalidRequest', 'x-casket-merge: text needs If-Match naming the one version your edit started from.']);
    }
    expect(await get('one-base.txt')).toBe('one\n');
  });

  it('any other value: 400 InvalidArgument naming the header and the value', async () => {
    const r = await put(casket.admin, 'case.txt', 'x', { 'if-match': etagOf('x'), 'x-casket-merge': 'json' });
    expect([r.status, xmlField(r.body, 'Code'), xmlField(r.body, 'ArgumentName'), xmlField(r.body, 'ArgumentValue'), xmlField(r.body, 'Message')], r.body).toEqual([
      400,
      'InvalidArgument',
      'x-casket-merge',
      'json',
      'x-casket-merge accepts only "text".',
    ]);
  });

  it('sent unsigned: 400 InvalidRequest (it changes what is written), and nothing is written', async () => {
    const v1 = (await put(casket.admin, 'unsigned.txt', 'one\n')).headers.etag as string;
    const signed = await signRequest(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}/unsigned.txt`, headers: { 'if-match': v1 }, body: 'two\n' });
    const r = await send(casket.url, 'PUT', `/${bucket}/unsigned.txt`, { ...signed.headers, 'x-casket-merge': 'text' }, 'two\n');
    expect([r.status, xmlField(r.body, 'Code'), xmlField(r.body, 'Message')], r.body).toEqual([400, 'InvalidRequest', 'Sign the x-casket-merge header: it changes what is written.']);
    expect(await get('unsigned.txt')).toBe('one\n');
  });
});
