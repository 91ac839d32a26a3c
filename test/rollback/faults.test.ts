/**
 * Rollback under faults (docs/design.md §10): writers running during a
 * rollback lose nothing (judged by the history checker of
 * test/linearizability, helpers/history.ts); kill -9 of casket in the middle
 * of a rollback leaves every key restored or untouched, and a rerun finishes
 * the job; a version held nowhere is reported unrecoverable and its key left
 * alone, and --keep-pre-images is what holds it on an unversioned bucket.
 * Same upstreams as rollback.test.ts (CASKET_TEST_UPSTREAM).
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { bytes, sdk } from '../helpers/clients.js';
import { checkChain, type AckedWrite } from '../helpers/history.js';
import { raw } from '../helpers/raw.js';
import { hasRedis, startRedis } from '../helpers/redis.js';
import { need } from '../helpers/tools.js';
import type { RollbackAnswer } from '../../src/rollback/plan.js';
import { upstreamKindFromEnv } from '../helpers/upstream.js';
import { agentPut, cliRollback, content, keysOf } from './helpers.js';

/** Fewer keys in front of an upstream (each request a round trip there): the suite stays at seconds. */
const upstream = upstreamKindFromEnv() !== undefined;

const cleanup: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
});

async function casketFor(args: string[], env: Record<string, string> = {}): Promise<{ casket: RunningCasket; admin: S3Client; alice: S3Client; person: S3Client; bucket: string }> {
  const casket = await startCasket({ agents: ['alice'], keys: { person: {} }, args, env });
  const admin = sdk(casket.url, casket.admin);
  const alice = sdk(casket.url, casket.agents.alice!, { agentHeader: 'alice' });
  const person = sdk(casket.url, casket.keys.person!);
  const bucket = `rollback-faults-${randomBytes(3).toString('hex')}`;
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  cleanup.push(async () => {
    for (const c of [admin, alice, person]) c.destroy();
    await casket.stop();
  });
  return { casket, admin, alice, person, bucket };
}

/** POST /_casket/rollback, signed by the admin: the answer. */
async function rollback(casket: Pick<RunningCasket, 'url' | 'admin'>, request: Record<string, unknown>): Promise<RollbackAnswer> {
  const res = await raw(casket.url, casket.admin, { method: 'POST', path: '/_casket/rollback', headers: { 'content-type': 'application/json' }, body: JSON.stringify(request) });
  if (res.status !== 200) throw new Error(`rollback answered ${res.status}: ${res.body}`);
  return JSON.parse(res.body) as RollbackAnswer;
}

describe('rollback under faults', () => {
  it('writers running during the rollback lose nothing: each counter\'s acknowledged writes form one chain', async () => {
    const { casket, admin, alice, person, bucket } = await casketFor(['--keep-pre-images', 'true']);
    const counters = ['a-counter-0', 'a-counter-1', 'a-counter-2'];
    const fillers = Array.from({ length: upstream ? 10 : 20 }, (_, i) => `z-filler-${String(i).padStart(2, '0')}`);
    for (const k of [...counters, ...fillers]) await person.send(new PutObjectCommand({ Bucket: bucket, Key: k, Body: counters.includes(k) ? '5' : `a person's ${k}` }));
    const since = new Date().toISOString();
    // alice's bad write: each counter from 5 back to 4; the rollback puts 5 back — the very bytes a writer's next increment writes.
    const initial = new Map<string, { etag: string; value: number }>();
    for (const k of counters) initial.set(k, { etag: await agentPut(alice, bucket, k, '4'), value: 4 });
    for (const k of fillers) await agentPut(alice, bucket, k, `alice's ${k}`);

    const acks = new Map<string, AckedWrite[]>(counters.map((k) => [k, []]));
    let rollbackDone = false;
    const writer = async (k: string, name: string, delay: number) => {
      // Reads retry as SDKs do by default (moto answers an occasional GET racing a PUT of the same key with 500); writes are made once.
      const reader = sdk(casket.url, casket.keys.person!, { retries: 3 });
      const client = sdk(casket.url, casket.keys.person!);
      // Staggered starts, so that the rollback wins some counters and loses others.
      await new Promise((r) => setTimeout(r, delay));
      // Until the rollback has finished, and a few increments after.
      for (let after = 0; !rollbackDone || after < 3; after += rollbackDone ? 1 : 0) {
        const got = await reader.send(new GetObjectCommand({ Bucket: bucket, Key: k }));
        const n = Number((await bytes(got.Body)).toString());
        try {
          const put = await client.send(new PutObjectCommand({ Bucket: bucket, Key: k, Body: String(n + 1), IfMatch: got.ETag! }));
          acks.get(k)!.push({ writer: name, from: got.ETag!, to: put.ETag!, value: n + 1 });
        } catch (e) {
          if ((e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode !== 412) throw e;
        }
      }
      client.destroy();
      reader.destroy();
    };
    const writers = counters.flatMap((k, i) => [0, 1, 2].map((w) => writer(k, `${k}/w${w}`, [0, 30, 80][i]!)));
    const began = Date.now();
    const answer = await rollback(casket, { agent: 'alice', since, bucket });
    const took = Date.now() - began;
    rollbackDone = true;
    await Promise.all(writers);

    const won = counters.filter((k) => answer.restored.some((r) => r.key === k)).length;
    console.log(`rollback among writers (${took} ms): ${won} of ${counters.length} counters restored by the rollback, the others left to the writers; ${[...acks.values()].flat().length} increments acknowledged`);
    expect(keysOf(answer.restored).filter((k) => k.startsWith('z-'))).toEqual(fillers);
    for (const k of fillers) expect((await content(admin, bucket, k))?.body.toString()).toBe(`a person's ${k}`);
    for (const k of counters) {
      const restored = answer.restored.find((r) => r.key === k);
      const history = [...acks.get(k)!];
      // A restore that landed is one more write of the history: alice's 4 → 5.
      if (restored) history.push({ writer: 'rollback', from: restored.from!, to: restored.to!, value: 5 });
      else expect([...keysOf(answer.conflicts), ...keysOf(answer.unchanged)]).toContain(k);
      const final = (await content(admin, bucket, k))!;
      const verdict = checkChain(initial.get(k)!, history, { etag: final.etag, value: Number(final.body.toString()) });
      expect(verdict.problems, k).toEqual([]);
      expect(verdict.writes).toBeGreaterThan(3);
    }
  });

  it('kill -9 in the middle of a rollback leaves every key restored or untouched, and a rerun finishes it', async () => {
    const { casket, alice, person, bucket } = await casketFor(['--keep-pre-images', 'true']);
    const keys = Array.from({ length: upstream ? 40 : 120 }, (_, i) => `k${String(i).padStart(3, '0')}`);
    for (const k of keys) await person.send(new PutObjectCommand({ Bucket: bucket, Key: k, Body: `before ${k}` }));
    const since = new Date().toISOString();
    for (const k of keys) await agentPut(alice, bucket, k, `alice ${k}`);
    const admin = sdk(casket.url, casket.admin);
    // The rollback goes through the keys in order: once the first is back, kill casket.
    const inFlight = rollback(casket, { agent: 'alice', since, bucket }).then(
      () => 'finished',
      () => 'cut off',
    );
    for (let i = 0; i < 5000 && (await content(admin, bucket, keys[0]!))?.body.toString() !== `before ${keys[0]}`; i++);
    await casket.kill();
    expect(await inFlight).toBe('cut off');
    admin.destroy();

    const again = await casket.restart();
    cleanup.push(() => again.stop());
    const reader = sdk(again.url, again.admin);
    let restored = 0;
    for (const k of keys) {
      const now = (await content(reader, bucket, k))?.body.toString();
      expect([`before ${k}`, `alice ${k}`], k).toContain(now);
      if (now === `before ${k}`) restored++;
    }
    // In the middle: some keys restored, not all.
    expect(restored).toBeGreaterThan(0);
    expect(restored).toBeLessThan(keys.length);
    const rerun = await cliRollback(again, ['--agent', 'alice', '--since', since, '--bucket', bucket, '--json']);
    expect(rerun.code).toBe(0);
    expect(rerun.answer!.unchanged.length + rerun.answer!.restored.length).toBe(keys.length);
    expect(rerun.answer!.restored.length).toBe(keys.length - restored);
    for (const k of keys) expect((await content(reader, bucket, k))?.body.toString()).toBe(`before ${k}`);
    reader.destroy();
  });

  it('a version held nowhere is unrecoverable and its key untouched; --keep-pre-images holds it', async () => {
    // No retention of the versions agents read: only pre-images could hold the version alice replaced.
    const { casket, alice, person, bucket } = await casketFor(['--retain-max-size', '0']);
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'plain', Body: 'before' }));
    const since = new Date().toISOString();
    await agentPut(alice, bucket, 'plain', 'after');
    const answer = await rollback(casket, { agent: 'alice', since, bucket });
    expect(keysOf(answer.unrecoverable)).toEqual(['plain']);
    expect(answer.restored).toEqual([]);
    const admin = sdk(casket.url, casket.admin);
    expect((await content(admin, bucket, 'plain'))?.body.toString()).toBe('after');
    admin.destroy();

    const kept = await casket.restart(['--keep-pre-images', 'true']);
    cleanup.push(() => kept.stop());
    const agent = sdk(kept.url, kept.agents.alice!, { agentHeader: 'alice' });
    const people = sdk(kept.url, kept.keys.person!);
    await people.send(new PutObjectCommand({ Bucket: bucket, Key: 'kept', Body: 'before' }));
    const since2 = new Date().toISOString();
    await agentPut(agent, bucket, 'kept', 'after');
    const second = await rollback(kept, { agent: 'alice', since: since2, bucket });
    expect(second.restored).toMatchObject([{ key: 'kept', action: 'put', source: 'pre-image' }]);
    expect((await content(people, bucket, 'kept'))?.body.toString()).toBe('before');
    agent.destroy();
    people.destroy();
  });

  it('an overwrite the log cannot name the replaced version of (--guard off) is not taken for a creation: unrecoverable, not deleted', async () => {
    const { casket, alice, person, bucket } = await casketFor(['--guard', 'off']);
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'kept', Body: 'a person wrote this' }));
    const since = new Date().toISOString();
    // No condition at all: under --guard off casket lets an agent write blind, and cannot log what it replaced.
    await alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'kept', Body: 'alice, blind' }));
    const answer = await rollback(casket, { agent: 'alice', since, bucket });
    expect(answer.unrecoverable).toMatchObject([{ key: 'kept', goalETag: null }]);
    expect(answer.restored).toEqual([]);
    expect((await content(person, bucket, 'kept'))?.body.toString()).toBe('alice, blind');
  });

  it.runIf(need('redis-server', hasRedis()))('with --state redis: the window is read from Redis\'s write log, the pre-images kept in Redis', async () => {
    const redis = await startRedis();
    cleanup.push(() => redis.stop());
    // The Redis URL through the environment, as README advises (a URL may hold a password).
    const { casket, alice, person, bucket } = await casketFor(['--state', 'redis', '--retain-max-size', '0', '--keep-pre-images', 'true'], { CASKET_REDIS_URL: redis.url });
    for (const k of ['one', 'two']) await person.send(new PutObjectCommand({ Bucket: bucket, Key: k, Body: `before ${k}` }));
    await agentPut(alice, bucket, 'one', 'alice, before the window');
    const since = new Date().toISOString();
    await agentPut(alice, bucket, 'two', 'alice, in the window');
    const answer = await rollback(casket, { agent: 'alice', since, bucket });
    expect(answer.restored).toMatchObject([{ key: 'two', action: 'put', source: 'pre-image' }]);
    expect((await content(person, bucket, 'one'))?.body.toString()).toBe('alice, before the window');
    expect((await content(person, bucket, 'two'))?.body.toString()).toBe('before two');
  });
});
