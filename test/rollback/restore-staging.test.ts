/**
 * A rollback's restores are staged on disk before the changeset engine takes
 * them (src/rollback/restore.ts, commitRestores; src/changesets/intent.ts):
 * when staging fails before the hand-over — here the second restore's goal
 * larger than a changeset may hold (MAX_TOTAL_BYTES, EntityTooLarge) — the
 * bodies already staged are discarded, not left in the data dir's
 * changesets/ for every failed rollback to grow, and nothing is written.
 * In-process: casket's own services and changeset directory.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MAX_TOTAL_BYTES, type ChangesetEngine } from '../../src/changesets/commit.js';
import { ChangesetDir } from '../../src/changesets/intent.js';
import type { KeyHistory } from '../../src/rollback/plan.js';
import { commitRestores } from '../../src/rollback/restore.js';
import type { WriteLogEntry } from '../../src/state/types.js';
import type { InProcessCasket } from '../helpers/in-process.js';
import { content, inProcessWithBucket } from './helpers.js';

const bucket = 'staging';
const stops: Array<() => Promise<void>> = [];
let c: InProcessCasket;
let person: Awaited<ReturnType<typeof inProcessWithBucket>>['person'];

beforeAll(async () => {
  const made = await inProcessWithBucket(bucket, stops, ['alice']);
  c = made.c;
  person = made.person;
});
afterAll(async () => {
  for (const s of stops.splice(0).reverse()) await s();
});

function history(key: string, etag: string): KeyHistory {
  const e: WriteLogEntry = { at: new Date(), bucket, key, operation: 'PutObject', agent: 'alice', newETag: etag };
  return { bucket, key, goal: null, agentLast: etag, first: e, last: e, writes: 1 };
}

it('a restore whose staging fails leaves no staged body behind and writes nothing', async () => {
  const a = await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'a.txt', Body: 'a1' }));
  const b = await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'b.txt', Body: 'b1' }));
  // The data dir's changesets/, as casket's engine has it (src/server.ts).
  const root = join(c.dataDir, 'changesets');
  const engine: ChangesetEngine = { dir: new ChangesetDir(root) };
  const admin = { ...c.admin, admin: true };
  const outcome = await commitRestores(c.casket.services, engine, admin, 'rollback:alice', [
    { h: history('a.txt', a.ETag!.replace(/"/g, '')), content: Buffer.from('a0') },
    { h: history('b.txt', b.ETag!.replace(/"/g, '')), content: Buffer.alloc(MAX_TOTAL_BYTES + 1) },
  ]);
  expect(outcome).toEqual({ failed: 'EntityTooLarge' });
  // The first restore's body was staged, then discarded with its directory.
  expect(existsSync(root) ? readdirSync(root) : []).toEqual([]);
  expect((await content(person, bucket, 'a.txt'))?.body.toString()).toBe('a1');
  expect((await content(person, bucket, 'b.txt'))?.body.toString()).toBe('b1');
});
