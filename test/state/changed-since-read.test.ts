/**
 * The store side of "changed since you read" (src/changes/since-read.ts,
 * docs/design.md §12) on every StateStore: a key the agent read whole and
 * someone else wrote is told once; again when it changes again; never for
 * its own write or after it read the new version; and the cursor is shared —
 * a reminder told through one Redis handle (one casket) is not told again
 * through another.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { changedSinceRead } from '../../src/changes/since-read.js';
import { MemoryStateStore } from '../../src/state/memory.js';
import { RedisStateStore } from '../../src/state/redis.js';
import { SqliteStateStore } from '../../src/state/sqlite.js';
import type { StateLimits, StateStore } from '../../src/state/types.js';
import { hasRedis, startRedis, type RunningRedis } from '../helpers/redis.js';
import { need } from '../helpers/tools.js';

const LIMITS: StateLimits = { ttlMs: 60_000, maxEntries: 1000 };
const haveRedis = need('redis-server', hasRedis());
let redis: RunningRedis | undefined;
const opened: StateStore[] = [];
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'casket-reminders-'));
  if (haveRedis) redis = await startRedis();
});
afterAll(async () => {
  for (const s of opened) await s.close();
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Two handles on one state: the same object, or two Redis connections (two caskets). */
const stores: Array<{ name: string; available: boolean; open(): Promise<[StateStore, StateStore]> }> = [
  { name: 'memory', available: true, open: async () => { const s = new MemoryStateStore(LIMITS); return [s, s]; } },
  { name: 'sqlite', available: true, open: async () => { const s = new SqliteStateStore(join(dir, `${randomBytes(4).toString('hex')}.db`), LIMITS); opened.push(s); return [s, s]; } },
  {
    name: 'redis',
    available: haveRedis,
    open: async () => {
      const prefix = `casket-test-${randomBytes(4).toString('hex')}:`;
      const one = await RedisStateStore.connect(redis!.url, LIMITS, { prefix });
      const two = await RedisStateStore.connect(redis!.url, LIMITS, { prefix });
      opened.push(one, two);
      return [one, two];
    },
  },
];

async function write(store: StateStore, agent: string, key: string, from: string, to: string) {
  await store.appendWriteLog({ at: new Date(), bucket: 'b', key, operation: 'PutObject', agent, previousETag: from, newETag: to });
  await store.recordWrite(agent, 'b', key, to, 10);
}

describe.each(stores)('$name: changedSinceRead', ({ available, open }) => {
  it.runIf(available)("tells a whole read's change once, again on the next change, never the writer, not after a re-read, across handles", async () => {
    const [one, two] = await open();
    await write(one, 'setup', 'plan.md', '', 'v1');
    await write(one, 'setup', 'skimmed.md', '', 'w1');
    expect(await changedSinceRead(one, 'ann')).toEqual([]);
    await one.recordRead('ann', 'b', 'plan.md', { etag: 'v1', size: 10, start: 0, end: 10 });
    // A partial read is no copy to rely on: no reminder for it.
    await one.recordRead('ann', 'b', 'skimmed.md', { etag: 'w1', size: 10, start: 0, end: 4 });
    await write(two, 'ben', 'plan.md', 'v1', 'v2');
    await write(two, 'ben', 'skimmed.md', 'w1', 'w2');

    const told = await changedSinceRead(one, 'ann');
    expect(told.map((c) => [c.key, c.readETag, c.etag, c.changedBy])).toEqual([['plan.md', 'v1', 'v2', 'ben']]);
    expect(await changedSinceRead(two, 'ann')).toEqual([]);
    expect(await changedSinceRead(one, 'ben')).toEqual([]);

    await write(two, 'ben', 'plan.md', 'v2', 'v3');
    expect((await changedSinceRead(two, 'ann')).map((c) => [c.key, c.readETag, c.etag])).toEqual([['plan.md', 'v1', 'v3']]);

    await write(two, 'ben', 'plan.md', 'v3', 'v4');
    await one.recordRead('ann', 'b', 'plan.md', { etag: 'v4', size: 10, start: 0, end: 10 });
    expect(await changedSinceRead(one, 'ann')).toEqual([]);
  });

  // A look that finds nothing is not made again while nothing it read has changed (since-read.ts,
  // quietLooks): a stamp of an older version recorded after the write (a GET served before the write,
  // its stamp recorded after it) must still be told at the next look.
  it.runIf(available)('a stamp recorded after the write it predates is told at the next look, however many looks found nothing before', async () => {
    const [one, two] = await open();
    await write(one, 'setup', 'notes.md', '', 'n1');
    expect(await changedSinceRead(one, 'cat')).toEqual([]);
    await write(two, 'dan', 'notes.md', 'n1', 'n2');
    for (let i = 0; i < 3; i++) expect(await changedSinceRead(one, 'cat')).toEqual([]);
    await one.recordRead('cat', 'b', 'notes.md', { etag: 'n1', size: 10, start: 0, end: 10 });
    expect((await changedSinceRead(one, 'cat')).map((c) => [c.key, c.readETag, c.etag, c.changedBy])).toEqual([['notes.md', 'n1', 'n2', 'dan']]);
    expect(await changedSinceRead(two, 'cat')).toEqual([]);
  });
});
