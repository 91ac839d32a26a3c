/**
 * What a rollback answers at its edges (docs/design.md §10), each as its
 * user would see it: who wrote a conflicting version when it is another
 * agent, a diff cut at --diff-max-bytes, a read the backend fails for a
 * moment (retried, as SDKs retry a 500) or for good (the key reported, left
 * as it is), and an overwrite the write log cannot name the replaced version
 * of. In-process casket (helpers/in-process.ts): the backend is made to fail
 * from inside, and `npm run mutate:rooms` sees these tests.
 */
import { CreateBucketCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterEach, describe, expect, it } from 'vitest';
import { sdk } from '../helpers/clients.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { raw } from '../helpers/raw.js';
import type { RollbackAnswer } from '../../src/rollback/plan.js';
import { S3Error } from '../../src/vocabulary/errors.js';
import { agentPut, content, keysOf } from './helpers.js';

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
  const c = await startInProcess({ agents: ['alice', 'bob'], keys: ['person'], flags });
  stops.push(() => c.stop());
  const admin = sdk(c.url, c.admin);
  const alice = sdk(c.url, c.agents.alice!, { agentHeader: 'alice' });
  const bob = sdk(c.url, c.agents.bob!, { agentHeader: 'bob' });
  const person = sdk(c.url, c.keys.person!);
  stops.push(async () => [admin, alice, bob, person].forEach((x) => x.destroy()));
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  return { c, admin, alice, bob, person };
}

async function rollback(c: InProcessCasket, request: Record<string, unknown>): Promise<RollbackAnswer> {
  const res = await raw(c.url, c.admin, { method: 'POST', path: '/_casket/rollback', headers: { 'content-type': 'application/json' }, body: JSON.stringify(request) });
  if (res.status !== 200) throw new Error(`rollback answered ${res.status}: ${res.body}`);
  return JSON.parse(res.body) as RollbackAnswer;
}

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
});
