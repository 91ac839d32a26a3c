/**
 * A changeset rollback at its edges (src/rollback/changeset.ts; docs/operating.md
 * "A changeset as a unit"), each as its user would see it: who may be named
 * with --agent, a bucket that does not hold the changeset, the keys in order
 * whatever order the commit named them, a key that cannot be read, the write
 * log failing a dry run, a write between the plan and the commit on keys
 * other than the first, the commit itself failing, and with no --since the
 * log searched from the changeset's earliest entry.
 *
 * In-process casket (helpers/in-process.ts): the backend, the state store and
 * the retention store are made to fail or step in from inside, as
 * changeset.test.ts and edges.test.ts do.
 */
import { CreateBucketCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commit } from '../helpers/changeset.js';
import { sdk } from '../helpers/clients.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { raw } from '../helpers/raw.js';
import { S3Error } from '../../src/vocabulary/errors.js';
import { content, keysOf, postRollback, writingBeforeCommit } from './helpers.js';

const bucket = 'unit-edges';
let c: InProcessCasket;
let admin: S3Client;
let alice: S3Client;
let person: S3Client;

beforeAll(async () => {
  c = await startInProcess({ agents: ['alice'], keys: ['person'] });
  admin = sdk(c.url, c.admin);
  alice = sdk(c.url, c.agents.alice!);
  person = sdk(c.url, c.keys.person!);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
});
afterAll(async () => {
  for (const x of [admin, alice, person]) x?.destroy();
  await c?.stop();
});

/** A person writes each key; alice reads each whole, then commits a changeset changing them, in the order given. Their versions: */
async function aliceChangeset(dir: string, names: string[]): Promise<{ id: string; before: Record<string, string>; alices: Record<string, string> }> {
  const before: Record<string, string> = {};
  for (const n of names) {
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: `${dir}/${n}`, Body: `${n}0` }));
    before[n] = (await content(alice, bucket, `${dir}/${n}`))!.etag;
  }
  const r = await commit(c.url, c.agents.alice!, bucket, names.map((n) => ({ key: `${dir}/${n}`, body: `${n}1`, 'if-match': before[n]! })));
  expect(r.status, JSON.stringify(r.json)).toBe(200);
  const alices: Record<string, string> = {};
  for (const n of names) alices[n] = (await content(admin, bucket, `${dir}/${n}`))!.etag;
  return { id: r.json.changeset!, before, alices };
}

const text = async (key: string) => (await content(admin, bucket, key))?.body.toString() ?? null;

describe('casket rollback --changeset, at its edges', () => {
  it('--agent naming who wrote it is taken; the keys come in order whatever order the commit named them', async () => {
    const { id } = await aliceChangeset('named', ['b', 'c', 'a']);
    const answer = await postRollback(c, { changeset: id, agent: 'alice', dryRun: true });
    expect(answer.agent).toBe('alice');
    expect(keysOf(answer.restored)).toEqual(['named/a', 'named/b', 'named/c']);
  });

  it('with no --since, the answer searched the log from the changeset\'s earliest entry, whatever order the log lists them in', async () => {
    // Entries written straight into the state store, as a store shared by
    // several caskets (or a clock stepped back) may hold them: the earliest
    // is neither the first nor the last listed.
    const now = Date.now();
    const times = [now - 2000, now - 5000, now - 1000];
    for (const [i, at] of times.entries()) await c.casket.services.state.appendWriteLog({ at: new Date(at), bucket, key: `earliest/${i}.txt`, operation: 'PutObject', agent: 'alice', newETag: `${i}`.repeat(64), changeset: 'cs-earliest' });
    const answer = await postRollback(c, { changeset: 'cs-earliest', dryRun: true });
    expect(answer.since).toBe(new Date(now - 5000).toISOString());
  });

  it('a bucket that does not hold the changeset: no entry of it, a clear error', async () => {
    const { id } = await aliceChangeset('other-bucket', ['a']);
    await admin.send(new CreateBucketCommand({ Bucket: 'unit-edges-other' }));
    const res = await raw(c.url, c.admin, { method: 'POST', path: '/_casket/rollback', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ changeset: id, bucket: 'unit-edges-other' }) });
    expect(res.status, res.body).toBe(400);
    expect(res.body).toContain(`no entry of changeset ${id}`);
    expect(await text('other-bucket/a')).toBe('a1');
  });

  it('a key that cannot be read is unrecoverable, saying why; the others are not restored', async () => {
    const { id } = await aliceChangeset('unread', ['a', 'b', 'c']);
    const backend = c.casket.services.backend;
    const getObject = backend.getObject.bind(backend);
    backend.getObject = async (b, k, v) => (k === 'unread/b' ? Promise.reject(new S3Error('InternalError')) : getObject(b, k, v));
    try {
      const answer = await postRollback(c, { changeset: id });
      expect(answer.unrecoverable).toMatchObject([{ key: 'unread/b', reason: 'the current version could not be read (InternalError)' }]);
      expect(answer.restored).toEqual([]);
      expect(keysOf(answer.notRestored!)).toEqual(['unread/a', 'unread/c']);
    } finally {
      backend.getObject = getObject;
    }
    expect([await text('unread/a'), await text('unread/b'), await text('unread/c')]).toEqual(['a1', 'b1', 'c1']);
  });

  it('a dry run calls a key written since a conflict even when the write log cannot say who wrote it last', async () => {
    const { id } = await aliceChangeset('unlogged', ['a', 'b']);
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'unlogged/b', Body: "the person's b" }));
    const state = c.casket.services.state;
    const lastWrite = state.lastWrite.bind(state);
    state.lastWrite = () => Promise.reject(new Error('the state store is down (test)'));
    try {
      const answer = await postRollback(c, { changeset: id, dryRun: true });
      expect(keysOf(answer.conflicts)).toEqual(['unlogged/b']);
      expect(answer.restored).toEqual([]);
    } finally {
      state.lastWrite = lastWrite;
    }
  });

  it('writes between the plan and the commit to keys past the first: each refused key reported with its own versions, read as nobody', async () => {
    const { id, alices } = await aliceChangeset('between', ['a', 'b', 'c']);
    // Asked for c's old bytes (the plan has judged a and b): the person writes b, then c.
    const { answer, stepped } = await writingBeforeCommit(
      c,
      (version) => version.key === 'between/c',
      async () => {
        for (const n of ['b', 'c']) await person.send(new PutObjectCommand({ Bucket: bucket, Key: `between/${n}`, Body: `the person's ${n}` }));
      },
      () => postRollback(c, { changeset: id }),
    );
    expect(stepped).toBe(true);
    expect(answer.restored).toEqual([]);
    const persons = { b: (await content(admin, bucket, 'between/b'))!.etag, c: (await content(admin, bucket, 'between/c'))!.etag };
    const refused = answer.conflicts.map((x) => x.key);
    expect(refused.length).toBeGreaterThan(0);
    for (const x of answer.conflicts) {
      const n = x.key.slice('between/'.length) as 'b' | 'c';
      expect(x).toMatchObject({ agentETag: alices[n], currentETag: persons[n], currentWriter: c.keys.person!.accessKeyId });
    }
    // Every planned key is either refused or not restored, never both.
    expect([...refused, ...keysOf(answer.notRestored!)].sort()).toEqual(['between/a', 'between/b', 'between/c']);
    // The reads that report the refusals are no reads the rollback writes on (docs/design.md §4): its stamps stay on alice's versions.
    for (const n of ['b', 'c'] as const) expect((await c.casket.services.state.getStamp('rollback:alice', bucket, `between/${n}`))?.etag).toBe(alices[n]!.replace(/"/g, ''));
    expect([await text('between/a'), await text('between/b'), await text('between/c')]).toEqual(['a1', "the person's b", "the person's c"]);
  });

  it('the commit failing (the backend answering 503 SlowDown as the engine looks): every key unrecoverable with the reason, nothing written', async () => {
    const { id } = await aliceChangeset('failing', ['a', 'b']);
    const backend = c.casket.services.backend;
    const headObject = backend.headObject.bind(backend);
    backend.headObject = async (b, k, v) => (k === 'failing/a' ? Promise.reject(new S3Error('SlowDown')) : headObject(b, k, v));
    let answer;
    try {
      answer = await postRollback(c, { changeset: id });
    } finally {
      backend.headObject = headObject;
    }
    expect(answer.restored).toEqual([]);
    expect(answer.unrecoverable).toMatchObject(['a', 'b'].map((n) => ({ key: `failing/${n}`, reason: 'the restore failed (SlowDown); nothing written, run the rollback again' })));
    expect([await text('failing/a'), await text('failing/b')]).toEqual(['a1', 'b1']);
  });
});
