/**
 * What a rollback answers at its edges (docs/design.md §10), each as its
 * user would see it: who wrote a conflicting version when it is another
 * agent, a diff cut at --diff-max-bytes, a read the backend fails for a
 * moment (retried, as SDKs retry a 500) or for good (the key reported, left
 * as it is), and an overwrite the write log cannot name the replaced version
 * of. In-process casket (helpers/in-process.ts): the backend is made to fail
 * from inside, and `npm run mutate:rooms` sees these tests.
 */
import { CreateBucketCommand, DeleteBucketCommand, DeleteObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { sdk } from '../helpers/clients.js';
import type { InProcessCasket } from '../helpers/in-process.js';
import { captureLog } from '../helpers/faults.js';
import { raw } from '../helpers/raw.js';
import type { RollbackAnswer } from '../../src/rollback/plan.js';
import { S3Error } from '../../src/vocabulary/errors.js';
import { agentDelete, agentPut, content, keysOf, inProcessWithBucket, postRollback } from './helpers.js';

const bucket = 'edges';
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
});

interface Setup {
  c: InProcessCasket;
  admin: S3Client;
  alice: S3Client;
  bob: S3Client;
  person: S3Client;
}

async function setup(flags: Record<string, string> = {}): Promise<Setup> {
  const { c, admin, agents, person } = await inProcessWithBucket(bucket, stops, ['alice', 'bob'], flags);
  return { c, admin, alice: agents.alice!, bob: agents.bob!, person };
}

const rollback = postRollback;

const text = async (s3: S3Client, key: string) => (await content(s3, bucket, key))?.body.toString() ?? null;

describe('rollback at its edges', () => {
  it('a key another agent wrote since is a conflict naming that agent, with the diff from alice\'s version to bob\'s', async () => {
    const { c, alice, bob, person } = await setup();
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'plan.md', Body: 'step one\n' }));
    const since = new Date().toISOString();
    await agentPut(alice, bucket, 'plan.md', 'step one\nalice: step two\n');
    await agentPut(bob, bucket, 'plan.md', 'step one\nalice: step two\nbob: step three\n');
    const answer = await rollback(c, { agent: 'alice', since, bucket });
    expect(answer.restored).toEqual([]);
    expect(answer.conflicts).toHaveLength(1);
    const [k] = answer.conflicts;
    expect(k).toMatchObject({ key: 'plan.md', currentWriter: 'bob', diffContentType: expect.stringMatching(/^text\//) });
    expect(k!.diffTruncated).toBeUndefined();
    expect(k!.diff).toContain('+bob: step three');
    // Its header names each side: alice's version, and bob's as bob's.
    expect(k!.diff).toContain(`--- a/${bucket}/plan.md\t${k!.agentETag} (written by agent "alice")\n+++ b/${bucket}/plan.md\t${k!.currentETag} (written by agent "bob")\n`);
    expect(await text(person, 'plan.md')).toBe('step one\nalice: step two\nbob: step three\n');
  });

  it('a diff longer than --diff-max-bytes is cut, and says so', async () => {
    const { c, alice, person } = await setup({ diffMaxBytes: '300' });
    const lines = (who: string) => Array.from({ length: 60 }, (_, i) => `${who} line ${i}\n`).join('');
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'long.txt', Body: lines('first') }));
    const since = new Date().toISOString();
    await agentPut(alice, bucket, 'long.txt', lines('alice'));
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'long.txt', Body: lines('person') }));
    const answer = await rollback(c, { agent: 'alice', since, bucket });
    expect(answer.conflicts).toMatchObject([{ key: 'long.txt', diffTruncated: true }]);
    expect(Buffer.byteLength(answer.conflicts[0]!.diff!)).toBeLessThanOrEqual(400);
  });

  it('a key a person deleted since is a conflict naming the person; one alice deleted and a person wrote again, a diff from "deleted"', async () => {
    const { c, alice, person } = await setup();
    for (const k of ['gone', 'back']) await person.send(new PutObjectCommand({ Bucket: bucket, Key: k, Body: `${k}: the person's text\n` }));
    const since = new Date().toISOString();
    await agentPut(alice, bucket, 'gone', "gone: alice's text\n");
    await agentDelete(alice, bucket, 'back');
    await person.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'gone' }));
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'back', Body: 'back: written again\n' }));
    const answer = await rollback(c, { agent: 'alice', since, bucket });
    expect(answer.restored).toEqual([]);
    const [back, gone] = answer.conflicts;
    expect(gone).toMatchObject({ key: 'gone', currentETag: null, currentWriter: c.keys.person!.accessKeyId });
    expect(gone!.diff).toContain(`+++ b/${bucket}/gone\t"deleted" (deleted)\n`);
    expect(gone!.diff).toContain("-gone: alice's text");
    expect(back).toMatchObject({ key: 'back', agentETag: null, currentWriter: c.keys.person!.accessKeyId });
    expect(back!.diff).toContain(`--- a/${bucket}/back\t"deleted" (deleted)\n`);
    expect(back!.diff).toContain('+back: written again');
    expect(back!.diff).toContain(`+++ b/${bucket}/back\t${back!.currentETag} (written by access key "${c.keys.person!.accessKeyId}")\n`);
    expect(await text(person, 'gone')).toBeNull();
    expect(await text(person, 'back')).toBe('back: written again\n');
  });

  it('until ends the window: a write after it is not undone, and the answer says the window', async () => {
    const { c, alice, person } = await setup();
    for (const k of ['early', 'late']) await person.send(new PutObjectCommand({ Bucket: bucket, Key: k, Body: `${k}: before` }));
    const since = new Date().toISOString();
    await agentPut(alice, bucket, 'early', 'early: alice');
    await new Promise((r) => setTimeout(r, 5));
    const until = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 5));
    await agentPut(alice, bucket, 'late', 'late: alice');
    const answer = await rollback(c, { agent: 'alice', since, until, bucket });
    expect(answer).toMatchObject({ agent: 'alice', since, until, dryRun: false });
    expect(keysOf(answer.restored)).toEqual(['early']);
    expect([await text(person, 'early'), await text(person, 'late')]).toEqual(['early: before', 'late: alice']);
  });

  it('a dry run reads as nobody: it leaves the rollback agent no read stamps, and writes nothing', async () => {
    const { c, alice, person } = await setup();
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'dry', Body: 'before' }));
    const since = new Date().toISOString();
    await agentPut(alice, bucket, 'dry', 'after');
    const answer = await rollback(c, { agent: 'alice', since, bucket, dryRun: true });
    expect(answer).toMatchObject({ dryRun: true, restored: [{ key: 'dry', action: 'put', source: 'retained' }] });
    const stamps = await raw(c.url, c.admin, { method: 'GET', path: `/_casket/agents/${encodeURIComponent('rollback:alice')}/stamps` });
    expect(stamps.status).toBe(200);
    expect(stamps.body).not.toContain('dry');
    expect(await text(person, 'dry')).toBe('after');
  });

  it('a key whose bucket is gone is unrecoverable, with S3\'s reason (NoSuchBucket)', async () => {
    const { c, alice, person } = await setup();
    const admin = sdk(c.url, c.admin);
    stops.push(async () => admin.destroy());
    await admin.send(new CreateBucketCommand({ Bucket: 'short-lived' }));
    await person.send(new PutObjectCommand({ Bucket: 'short-lived', Key: 'k', Body: 'before' }));
    const since = new Date().toISOString();
    await agentPut(alice, 'short-lived', 'k', 'after');
    await admin.send(new DeleteObjectCommand({ Bucket: 'short-lived', Key: 'k' }));
    await admin.send(new DeleteBucketCommand({ Bucket: 'short-lived' }));
    const answer = await rollback(c, { agent: 'alice', since });
    expect(answer.conflicts).toEqual([]);
    expect(answer.unrecoverable).toMatchObject([{ bucket: 'short-lived', key: 'k', reason: 'the current version could not be read (NoSuchBucket); nothing written' }]);
  });

  it('a current version larger than a diff is made of (1 MiB) is not held: the conflict comes without a diff', async () => {
    const { c, alice, person } = await setup();
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'big.txt', Body: 'small\n' }));
    const since = new Date().toISOString();
    await agentPut(alice, bucket, 'big.txt', 'alice, small\n');
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'big.txt', Body: 'x'.repeat(1024 * 1024 + 1) }));
    const answer = await rollback(c, { agent: 'alice', since, bucket });
    expect(answer.conflicts).toHaveLength(1);
    expect(answer.conflicts[0]).toMatchObject({ key: 'big.txt', currentETag: expect.stringMatching(/^"[0-9a-f]{64}"$/) });
    expect(answer.conflicts[0]!.diff).toBeUndefined();
  });

  it('a read that fails inside casket (not an S3 error) is logged for the operator with its key, and the key is unrecoverable', async () => {
    const { c, alice, person } = await setup();
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'broken', Body: 'before' }));
    const since = new Date().toISOString();
    await agentPut(alice, bucket, 'broken', 'after');
    const { backend, log } = c.casket.services;
    const getObject = backend.getObject.bind(backend);
    backend.getObject = async (b, k, v) => (k === 'broken' ? Promise.reject(new Error('disk on fire')) : getObject(b, k, v));
    const { logged, restore } = captureLog(log, 'error');
    try {
      const answer = await rollback(c, { agent: 'alice', since, bucket });
      expect(answer.unrecoverable).toMatchObject([{ key: 'broken', reason: 'the current version could not be read (InternalError); nothing written' }]);
    } finally {
      restore();
      backend.getObject = getObject;
    }
    const mine = logged.filter(([, msg]) => msg === 'rollback: request failed');
    expect(mine.length).toBeGreaterThan(0);
    expect(mine[0]![0]).toMatchObject({ bucket, key: 'broken', err: expect.objectContaining({ message: 'disk on fire' }) });
    expect(await text(person, 'broken')).toBe('after');
  });

  it('a restore the backend fails before it is decided (503 SlowDown) is unrecoverable with the reason, the key untouched; a rerun restores it', async () => {
    const { c, alice, person } = await setup();
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'busy', Body: 'before' }));
    const since = new Date().toISOString();
    await agentPut(alice, bucket, 'busy', 'after');
    // The changeset engine looks at the key's current version before deciding to write (src/changesets/commit.ts).
    const backend = c.casket.services.backend;
    const headObject = backend.headObject.bind(backend);
    backend.headObject = async (b, k, v) => (k === 'busy' ? Promise.reject(new S3Error('SlowDown')) : headObject(b, k, v));
    let answer: RollbackAnswer;
    try {
      answer = await rollback(c, { agent: 'alice', since, bucket });
    } finally {
      backend.headObject = headObject;
    }
    expect(answer.restored).toEqual([]);
    expect(answer.unrecoverable).toMatchObject([{ key: 'busy', reason: 'the restore failed (SlowDown); nothing written, run the rollback again' }]);
    expect(await text(person, 'busy')).toBe('after');
    const again = await rollback(c, { agent: 'alice', since, bucket });
    expect(keysOf(again.restored)).toEqual(['busy']);
    expect(await text(person, 'busy')).toBe('before');
  });

  it('a restore the backend fails after the engine decided it still lands: the engine retries it (its staged bytes kept)', async () => {
    const { c, alice, person } = await setup();
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'landing', Body: 'before' }));
    const since = new Date().toISOString();
    await agentPut(alice, bucket, 'landing', 'after');
    const backend = c.casket.services.backend;
    const putObject = backend.putObject.bind(backend);
    let failed = 0;
    backend.putObject = async (b, k, p, o) => (k === 'landing' && failed++ === 0 ? Promise.reject(new S3Error('SlowDown')) : putObject(b, k, p, o));
    const answer = await rollback(c, { agent: 'alice', since, bucket });
    expect(failed).toBe(1);
    // Decided, so it lands: the answer says restored, not "nothing written, run the rollback again".
    expect(keysOf(answer.restored)).toEqual(['landing']);
    expect(answer.unrecoverable).toEqual([]);
    // The engine tries a decided changeset again a second later (src/changesets/commit.ts, finishLater).
    let now: string | null = null;
    for (let i = 0; i < 50 && now !== 'before'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      now = await text(person, 'landing');
    }
    expect(now).toBe('before');
  });

  it('an answer S3 gives by design (404 NoSuchKey for a key alice deleted) is not logged as a failed request', async () => {
    const { c, alice, person } = await setup();
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'deleted', Body: 'before' }));
    const since = new Date().toISOString();
    await agentDelete(alice, bucket, 'deleted');
    const { log } = c.casket.services;
    const messages: unknown[] = [];
    const error = log.error.bind(log);
    log.error = ((obj: unknown, msg?: unknown) => {
      messages.push(msg);
      return error(obj as never, msg as never);
    }) as typeof log.error;
    try {
      const answer = await rollback(c, { agent: 'alice', since, bucket });
      expect(keysOf(answer.restored)).toEqual(['deleted']);
    } finally {
      log.error = error;
    }
    expect(messages).not.toContain('rollback: request failed');
    expect(await text(person, 'deleted')).toBe('before');
  });

  describe('a read the backend fails (500)', () => {
    /** The next `times` reads of `key` from the backend fail with InternalError (HTTP 500). */
    function failReads(c: InProcessCasket, key: string, times: number): () => number {
      const backend = c.casket.services.backend;
      const getObject = backend.getObject.bind(backend);
      let failed = 0;
      backend.getObject = async (b, k, v) => {
        if (k === key && failed < times) {
          failed++;
          throw new S3Error('InternalError');
        }
        return getObject(b, k, v);
      };
      return () => failed;
    }

    it('twice is retried: the key is restored', async () => {
      const { c, alice, person } = await setup();
      await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'flaky', Body: 'before' }));
      const since = new Date().toISOString();
      await agentPut(alice, bucket, 'flaky', 'after');
      const failed = failReads(c, 'flaky', 2);
      const answer = await rollback(c, { agent: 'alice', since, bucket });
      expect(failed()).toBe(2);
      expect(keysOf(answer.restored)).toEqual(['flaky']);
      expect(await text(person, 'flaky')).toBe('before');
    });

    it('three times is given up: the key is unrecoverable with the reason, and left as it is', async () => {
      const { c, alice, person } = await setup();
      await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'down', Body: 'before' }));
      const since = new Date().toISOString();
      await agentPut(alice, bucket, 'down', 'after');
      const failed = failReads(c, 'down', 3);
      const answer = await rollback(c, { agent: 'alice', since, bucket });
      expect(failed()).toBe(3);
      expect(answer.restored).toEqual([]);
      expect(answer.unrecoverable).toEqual([{ bucket, key: 'down', goalETag: expect.stringMatching(/^"[0-9a-f]{64}"$/), reason: 'the current version could not be read (InternalError); nothing written' }]);
      expect(await text(person, 'down')).toBe('after');
    });
  });

  it('an overwrite the log cannot name the replaced version of (--guard off) is unrecoverable, not deleted; a creation is deleted', async () => {
    const { c, alice, person } = await setup({ guard: 'off' });
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'kept', Body: 'a person wrote this' }));
    const since = new Date().toISOString();
    // No condition at all: under --guard off casket lets an agent write blind, and cannot log what it replaced.
    await alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'kept', Body: 'alice, blind' }));
    await alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'new', Body: 'alice made this', IfNoneMatch: '*' }));
    const answer = await rollback(c, { agent: 'alice', since, bucket });
    expect(answer.unrecoverable).toMatchObject([{ key: 'kept', goalETag: null, reason: expect.stringContaining('does not say which version') }]);
    expect(answer.restored).toMatchObject([{ key: 'new', action: 'delete', to: null }]);
    expect(await text(person, 'kept')).toBe('alice, blind');
    expect(await text(person, 'new')).toBeNull();
  });

  it('so is one made in the very millisecond of the write it replaced: the log\'s entry before alice\'s, not an earlier time, is what came before', async () => {
    const { c, alice, person } = await setup({ guard: 'off' });
    // One instant for both writes (the clock does not move under fake Date): the person's entry is not earlier than alice's.
    vi.useFakeTimers({ toFake: ['Date'] });
    let since: string;
    try {
      await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'same-instant', Body: 'a person wrote this' }));
      since = new Date().toISOString();
      await alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'same-instant', Body: 'alice, blind' }));
    } finally {
      vi.useRealTimers();
    }
    const log = await c.casket.services.state.listWriteLog({ bucket, key: 'same-instant', limit: 10 });
    expect(log.map((e) => e.at.getTime())).toEqual([Date.parse(since), Date.parse(since)]);
    const answer = await rollback(c, { agent: 'alice', since, bucket });
    expect(answer.unrecoverable).toMatchObject([{ key: 'same-instant', goalETag: null }]);
    expect(answer.restored).toEqual([]);
    expect(await text(person, 'same-instant')).toBe('alice, blind');
  });
});
