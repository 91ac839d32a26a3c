/**
 * Crash safety of a changeset (issue 39, item 3), on the embedded store and
 * in front of an upstream (moto, or CASKET_TEST_UPSTREAM's): casket is SIGKILLed at several points of a 20-file changeset — just before
 * its decision, right after it, after 7 entries, after all 20 but before its
 * intent is removed — by the test-only hook CASKET_TEST_CHANGESET_KILL_AFTER
 * (src/changesets/commit.ts). A casket started again on the same data dir
 * must show every key old (killed before the decision) or every key new
 * (after it), never a mix, and must leave no staged changeset behind.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { commit } from '../helpers/changeset.js';
import { bytes, sdk } from '../helpers/clients.js';
import { sha256hex } from '../helpers/raw.js';
import { startUpstream, upstreamKindFromEnv, type Upstream } from '../helpers/upstream.js';

const FILES = 20;
const bucket = 'crash';
const keys = Array.from({ length: FILES }, (_, i) => `f/${String(i).padStart(2, '0')}.txt`);
const running: RunningCasket[] = [];
let upstream: Upstream | undefined;
afterAll(async () => {
  for (const c of running) await c.stop();
  await upstream?.stop();
});

async function contents(c: RunningCasket): Promise<string[]> {
  const s3 = sdk(c.url, c.admin);
  return Promise.all(keys.map(async (Key) => (await bytes((await s3.send(new GetObjectCommand({ Bucket: bucket, Key }))).Body)).toString()));
}

for (const backend of ['embedded store', 'upstream'] as const) {
  describe(`kill -9 during a 20-file changeset, ${backend}`, () => {
    // Under CASKET_TEST_UPSTREAM every casket is in front of an upstream: the
    // restarted one must find the same one, so both variants share it.
    const up = async () => (backend === 'upstream' || upstreamKindFromEnv() ? { upstream: (upstream ??= await startUpstream(upstreamKindFromEnv() ?? 'moto')) } : {});
    for (const [point, killAfter, expected] of [
      ['just before the decision', -1, 'old'],
      ['right after the decision', 0, 'new'],
      ['after 7 of 20 entries', 7, 'new'],
      ['after all 20 entries, before the intent is removed', FILES, 'new'],
    ] as const) {
      it(`killed ${point}: after restart every key is ${expected}`, async () => {
        const first = await startCasket({ env: { CASKET_TEST_CHANGESET_KILL_AFTER: String(killAfter) }, ...(await up()) });
        running.push(first);
        const s3 = sdk(first.url, first.admin);
        await s3.send(new CreateBucketCommand({ Bucket: bucket })).catch((e: { name?: string }) => {
          // In front of one upstream for every kill point: the bucket stays.
          if (e.name !== 'BucketAlreadyOwnedByYou') throw e;
        });
        for (const Key of keys) await s3.send(new PutObjectCommand({ Bucket: bucket, Key, Body: `old ${Key}\n` }));
        const answer = commit(first.url, first.admin, bucket, keys.map((key) => ({ key, body: `new ${key}\n`, 'if-match': `"${sha256hex(`old ${key}\n`)}"` })));
        await expect(answer).rejects.toThrow();
        await new Promise<void>((resolve) => (first.proc.exitCode !== null || first.proc.signalCode !== null ? resolve() : first.proc.once('exit', () => resolve())));
        expect(first.proc.signalCode).toBe('SIGKILL');
        const again = await startCasket({ dataDir: first.dataDir, credentialsOf: first, ...(await up()) });
        running.push(again);
        expect(await contents(again)).toEqual(keys.map((k) => `${expected} ${k}\n`));
        const staging = join(first.dataDir, 'changesets');
        expect(existsSync(staging) ? readdirSync(staging) : []).toEqual([]);
      });
    }
  });
}
