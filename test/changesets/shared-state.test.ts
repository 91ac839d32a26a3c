/**
 * Changesets on several caskets sharing Redis (issue 39): the key gate is
 * kept in Redis (src/changesets/shared-gate.ts), so a changeset committing
 * through one casket is isolated from reads and writes through the others.
 * The caskets share one upstream (moto, or CASKET_TEST_UPSTREAM's): the
 * embedded store is one process's.
 *
 *   - the race of test/helpers/changeset-race.ts, each writer through its own
 *     casket, the single writer through a third, readers on all of them (one
 *     of them changing casket from key to key), judged by the history checker;
 *   - a casket killed (-9) after 7 of the 10 entries of a changeset: its keys
 *     stay held — a read through another casket waits — until its lease
 *     lapses (shortened to LEASE_MS here by CASKET_TEST_GATE_LEASE_MS), and
 *     the casket restarted on its data dir finishes the changeset.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { commit } from '../helpers/changeset.js';
import { raceChangesets } from '../helpers/changeset-race.js';
import { bytes, sdk } from '../helpers/clients.js';
import { sha256hex } from '../helpers/raw.js';
import { hasRedis, startRedis, type RunningRedis } from '../helpers/redis.js';
import { need } from '../helpers/tools.js';
import { startUpstream, upstreamKindFromEnv, type Upstream } from '../helpers/upstream.js';

/** Rounds per writer: 25 (moto on 2 shared cores: about 25 s), or CASKET_CHANGESET_RACE_ROUNDS (the acceptance's 50 passed, 49 s at load 10). */
const ROUNDS = Number(process.env.CASKET_CHANGESET_RACE_ROUNDS ?? 25);
const LEASE_MS = 3000;

describe.runIf(need('redis-server', hasRedis()))('changesets on caskets sharing Redis', () => {
  let redis: RunningRedis;
  let upstream: Upstream;
  const running: RunningCasket[] = [];
  const casket = async (more: { env?: Record<string, string>; dataDir?: string } = {}) => {
    const c = await startCasket({ args: ['--state', 'redis', '--redis-url', redis.url], upstream, ...(running[0] && { credentialsOf: running[0] }), ...more });
    running.push(c);
    return c;
  };
  beforeAll(async () => {
    redis = await startRedis();
    upstream = await startUpstream(upstreamKindFromEnv() ?? 'moto');
  });
  afterAll(async () => {
    for (const c of running) await c.stop();
    await upstream?.stop();
    await redis?.stop();
  });

  it('two writers through two caskets, a single writer through a third, readers on all: every acknowledged changeset whole, no reader saw a mix', async () => {
    const [a, b, c] = [await casket(), await casket(), await casket()];
    const via = (x: RunningCasket) => ({ url: x.url, cred: x.admin });
    const all = [a, b, c].map(via);
    const r = await raceChangesets({
      bucket: 'shared-race',
      rounds: ROUNDS,
      writers: { a: via(a), b: via(b) },
      single: via(c),
      readers: [() => via(a), () => via(b), (i) => all[i % 3]!],
    });
    console.log(`three caskets + Redis + ${upstream.kind}: ${r.changesets} changesets acknowledged, ${r.refused} refused; ${r.passes} reader passes`);
    expect(r.problems.slice(0, 10)).toEqual([]);
    expect(r.changesets).toBeGreaterThan(ROUNDS / 2);
  }, 300_000);

  it('a casket killed -9 mid-changeset: its keys are released after the lease, and it finishes the changeset when it restarts', async () => {
    const bucket = 'shared-kill';
    // More entries than are applied at once (8, commit.ts): the kill after 7 leaves the last ones unapplied.
    const keys = Array.from({ length: 20 }, (_, i) => `f${i}`);
    const dying = await casket({ env: { CASKET_TEST_CHANGESET_KILL_AFTER: '7', CASKET_TEST_GATE_LEASE_MS: String(LEASE_MS) } });
    const other = await casket();
    const s3 = sdk(other.url, other.admin);
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    for (const Key of keys) await s3.send(new PutObjectCommand({ Bucket: bucket, Key, Body: `old ${Key}` }));
    const read = async (Key: string) => (await bytes((await s3.send(new GetObjectCommand({ Bucket: bucket, Key }))).Body)).toString();

    await expect(commit(dying.url, dying.admin, bucket, keys.map((key) => ({ key, body: `new ${key}`, 'if-match': `"${sha256hex(`old ${key}`)}"` })))).rejects.toThrow();
    await new Promise<void>((resolve) => (dying.proc.exitCode !== null || dying.proc.signalCode !== null ? resolve() : dying.proc.once('exit', () => resolve())));
    expect(dying.proc.signalCode).toBe('SIGKILL');

    // Held by the dead casket: the read through the other waits until the lease lapses (renewed every LEASE_MS / 4), then is answered.
    const asked = Date.now();
    const unapplied = await read('f19');
    const waited = Date.now() - asked;
    expect(waited).toBeGreaterThan(LEASE_MS / 2);
    expect(waited).toBeLessThan(10_000);
    // The documented gap until it comes back: some entries landed, the last not.
    expect(unapplied).toBe('old f19');

    const again = await casket({ dataDir: dying.dataDir });
    expect(await Promise.all(keys.map(read))).toEqual(keys.map((k) => `new ${k}`));
    const staging = join(again.dataDir, 'changesets');
    expect(existsSync(staging) ? readdirSync(staging) : []).toEqual([]);
  }, 120_000);
});
