/**
 * One contract for every StateStore (src/state/types.ts, docs/design.md §4): memory,
 * sqlite (a temp file) and redis (a real redis-server on a loopback port),
 * asserting what a user of casket would notice — whether an agent's reads
 * count as whole, which stamps it has, what the write log says.
 *
 * Redis is optional on a user's machine (skipped when redis-server is
 * missing) and required in CI (test/helpers/tools.ts). Its "replicas" are
 * separate RedisStateStore connections sharing one prefix.
 *
 * A case an implementation is known to fail is listed in its `gaps` and run
 * with `it.fails`, so the suite stays green while the gap is open and turns
 * red the day it is fixed, asking for the entry to be removed.
 */
import { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openSqlite } from '../../src/sqlite.js';
import { MemoryStateStore } from '../../src/state/memory.js';
import { RedisStateStore } from '../../src/state/redis.js';
import { SqliteStateStore } from '../../src/state/sqlite.js';
import { SESSION_GRACE_MS, type SessionRecord, type StateLimits, type StateStore, type WriteLogEntry } from '../../src/state/types.js';
import { clockPast, until } from '../helpers/poll.js';
import { hasRedis, startRedis, type RunningRedis } from '../helpers/redis.js';
import { need } from '../helpers/tools.js';
import { freePort } from '../helpers/upstream.js';

const haveRedis = need('redis-server', hasRedis());

const LIMITS: StateLimits = { ttlMs: 60_000, maxEntries: 1000 };
const KiB = 1024;
const TiB = 1024 ** 4;

/**
 * A TTL case on shared cores: `run` returns false, asserting nothing, when a
 * stall made the clock unfit for its question (say, the TTL ran out before
 * the first read); it is run again, and five unfit runs in a row fail.
 */
async function timed(run: (attempt: number) => Promise<boolean>): Promise<void> {
  let fit = false;
  for (let attempt = 0; attempt < 5 && !fit; attempt++) fit = await run(attempt);
  expect(fit, 'five runs in a row stalled past the TTL').toBe(true);
}

/** A fresh, empty store; `replica()` opens another handle on the same state (redis: a second connection). */
interface Opened {
  store: StateStore;
  replica(): Promise<StateStore>;
}

interface Implementation {
  name: string;
  available: boolean;
  open(limits: StateLimits): Promise<Opened>;
  /** Contract cases this implementation is known to fail (reported, see the cases). */
  gaps: string[];
}

const toClose: StateStore[] = [];
const tempDirs: string[] = [];
let redis: RunningRedis | undefined;

function tracked<T extends StateStore>(store: T): T {
  toClose.push(store);
  return store;
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'casket-state-'));
  tempDirs.push(dir);
  return dir;
}

const GAP_CAP = 'the entry cap applies as soon as it is exceeded';
const GAP_LOG_CAP = 'the write log keeps at most maxEntries entries';

const implementations: Implementation[] = [
  {
    name: 'memory',
    available: true,
    async open(limits) {
      const store = new MemoryStateStore(limits);
      return { store, replica: async () => store };
    },
    gaps: [],
  },
  {
    name: 'sqlite',
    available: true,
    async open(limits) {
      const store = tracked(new SqliteStateStore(join(tempDir(), 'state.db'), limits));
      return { store, replica: async () => store };
    },
    gaps: [],
  },
  {
    name: 'redis',
    available: haveRedis,
    async open(limits) {
      const prefix = `casket-test-${randomBytes(4).toString('hex')}:`;
      const store = tracked(await RedisStateStore.connect(redis!.url, limits, { prefix }));
      return { store, replica: async () => tracked(await RedisStateStore.connect(redis!.url, limits, { prefix })) };
    },
    gaps: [],
  },
];

beforeAll(async () => {
  if (haveRedis) redis = await startRedis();
});

afterEach(async () => {
  await Promise.all(toClose.splice(0).map((store) => store.close()));
});

afterAll(async () => {
  await redis?.stop();
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

describe.each(implementations)('StateStore contract: $name', (impl) => {
  const open = async (limits: StateLimits = LIMITS) => (await impl.open(limits)).store;
  const caseOf = (name: string) => (impl.gaps.includes(name) ? it.fails : it);

  describe.skipIf(!impl.available)('read stamps', () => {
    it('one whole GET is a full read', async () => {
      const state = await open();
      const stamp = await state.recordRead('a', 'b', 'k', { etag: 'v1', size: 100, start: 0, end: 100 });
      expect(stamp).toMatchObject({ etag: 'v1', size: 100, full: true, covered: [[0, 100]] });
      expect(await state.getStamp('a', 'b', 'k')).toEqual(stamp);
    });

    it('ranged GETs of one version that together cover it make a full read, in any order', async () => {
      const state = await open();
      const size = 10 * KiB;
      const ranges: Array<[number, number]> = [[4 * KiB, 6 * KiB], [0, 2 * KiB], [8 * KiB, size], [6 * KiB, 8 * KiB], [2 * KiB, 4 * KiB]];
      for (const [i, [start, end]] of ranges.entries()) {
        const stamp = await state.recordRead('a', 'b', 'k', { etag: 'v1', size, start, end });
        expect(stamp.full, `after ${i + 1} of ${ranges.length} ranges`).toBe(i === ranges.length - 1);
      }
      expect(await state.getStamp('a', 'b', 'k')).toMatchObject({ etag: 'v1', full: true, covered: [[0, size]] });
    });

    it('overlapping ranges count once; a range beyond the end still covers the tail', async () => {
      const state = await open();
      await state.recordRead('a', 'b', 'k', { etag: 'v1', size: 100, start: 0, end: 60 });
      await state.recordRead('a', 'b', 'k', { etag: 'v1', size: 100, start: 40, end: 80 });
      expect(await state.getStamp('a', 'b', 'k')).toMatchObject({ full: false, covered: [[0, 80]] });
      expect(await state.recordRead('a', 'b', 'k', { etag: 'v1', size: 100, start: 80, end: 150 })).toMatchObject({ full: true, covered: [[0, 100]] });
    });

    it('ranges that leave a gap are a partial read, listing what was delivered', async () => {
      const state = await open();
      await state.recordRead('a', 'b', 'k', { etag: 'v1', size: 100, start: 0, end: 30 });
      await state.recordRead('a', 'b', 'k', { etag: 'v1', size: 100, start: 60, end: 100 });
      await state.recordRead('a', 'b', 'k', { etag: 'v1', size: 100, start: 30, end: 50 });
      expect(await state.getStamp('a', 'b', 'k')).toMatchObject({ etag: 'v1', full: false, covered: [[0, 50], [60, 100]] });
    });

    it('a read from the second byte to the end, or from the start to the last byte but one, is partial', async () => {
      const state = await open();
      // Off by one at either edge: the agent never saw the first or the last byte.
      expect(await state.recordRead('a', 'b', 'head', { etag: 'v1', size: 10, start: 1, end: 10 })).toMatchObject({ full: false, covered: [[1, 10]] });
      expect(await state.recordRead('a', 'b', 'tail', { etag: 'v1', size: 10, start: 0, end: 9 })).toMatchObject({ full: false, covered: [[0, 9]] });
      expect(await state.recordRead('a', 'b', 'head', { etag: 'v1', size: 10, start: 0, end: 1 })).toMatchObject({ full: true, covered: [[0, 10]] });
    });

    it('an aborted download (nothing delivered) is not a full read', async () => {
      const state = await open();
      // guard.ts records an aborted GET as the empty range [start, start).
      expect(await state.recordRead('a', 'b', 'k', { etag: 'v1', size: 100, start: 0, end: 0 })).toMatchObject({ full: false, covered: [] });
    });

    it('reading an empty object is a full read', async () => {
      const state = await open();
      expect(await state.recordRead('a', 'b', 'k', { etag: 'empty', size: 0, start: 0, end: 0 })).toMatchObject({ full: true, covered: [[0, 0]] });
    });

    it('a read of a new version starts over: earlier ranges of the old version do not count', async () => {
      const state = await open();
      await state.recordRead('a', 'b', 'k', { etag: 'v1', size: 100, start: 0, end: 50 });
      const stamp = await state.recordRead('a', 'b', 'k', { etag: 'v2', size: 100, start: 50, end: 100 });
      expect(stamp).toMatchObject({ etag: 'v2', full: false, covered: [[50, 100]] });
      // A full read of v1 does not help v2 either.
      await state.recordRead('a', 'b', 'k', { etag: 'v1', size: 100, start: 0, end: 100 });
      expect(await state.recordRead('a', 'b', 'k', { etag: 'v2', size: 100, start: 0, end: 10 })).toMatchObject({ etag: 'v2', full: false, covered: [[0, 10]] });
    });

    it('offsets of a 5 TiB object are kept exactly', async () => {
      const state = await open();
      const size = 5 * TiB;
      const middle = 2.5 * TiB + 1;
      expect(await state.recordRead('a', 'b', 'big', { etag: 'v1', size, start: middle, end: size })).toMatchObject({ full: false, covered: [[middle, size]] });
      expect(await state.getStamp('a', 'b', 'big')).toMatchObject({ size, covered: [[middle, size]] });
      expect(await state.recordRead('a', 'b', 'big', { etag: 'v1', size, start: 0, end: middle })).toMatchObject({ full: true, size, covered: [[0, size]] });
    });

    it("an agent's own write counts as a full read of what it wrote", async () => {
      const state = await open();
      await state.recordRead('a', 'b', 'k', { etag: 'v1', size: 100, start: 0, end: 10 });
      await state.recordWrite('a', 'b', 'k', 'v2', 42);
      expect(await state.getStamp('a', 'b', 'k')).toMatchObject({ etag: 'v2', size: 42, full: true, covered: [[0, 42]] });
      // ...and a later partial read of that same version keeps it full.
      expect(await state.recordRead('a', 'b', 'k', { etag: 'v2', size: 42, start: 0, end: 5 })).toMatchObject({ full: true });
    });

    it('stamps are per agent, bucket and key', async () => {
      const state = await open();
      await state.recordRead('a', 'b', 'k', { etag: 'v1', size: 10, start: 0, end: 10 });
      expect(await state.getStamp('other-agent', 'b', 'k')).toBeUndefined();
      expect(await state.getStamp('a', 'other-bucket', 'k')).toBeUndefined();
      expect(await state.getStamp('a', 'b', 'other-key')).toBeUndefined();
    });

    it('forgetStamp drops the stamp of a deleted key, and only that one', async () => {
      const state = await open();
      await state.recordWrite('a', 'b', 'gone', 'v1', 10);
      await state.recordWrite('a', 'b', 'kept', 'v1', 10);
      await state.recordWrite('other', 'b', 'gone', 'v1', 10);
      await state.forgetStamp('a', 'b', 'gone');
      expect(await state.getStamp('a', 'b', 'gone')).toBeUndefined();
      expect((await state.listStamps('a')).map((e) => e.key)).toEqual(['kept']);
      expect(await state.getStamp('other', 'b', 'gone')).toBeDefined();
      // Reading it again after the delete starts fresh.
      expect(await state.recordRead('a', 'b', 'gone', { etag: 'v1', size: 10, start: 0, end: 5 })).toMatchObject({ full: false });
    });

    it("listStamps shows one agent's stamps, by bucket and key, and no one else's", async () => {
      const state = await open();
      await state.recordRead('alice', 'photos', 'z.jpg', { etag: 'e1', size: 10, start: 0, end: 10 });
      await state.recordRead('alice', 'docs', 'b/readme.md', { etag: 'e2', size: 10, start: 0, end: 4 });
      await state.recordWrite('alice', 'docs', 'a.txt', 'e3', 3);
      await state.recordRead('bob', 'docs', 'secret.txt', { etag: 'e4', size: 1, start: 0, end: 1 });
      const listed = await state.listStamps('alice');
      expect(listed.map((e) => [e.bucket, e.key, e.stamp.etag, e.stamp.full])).toEqual([
        ['docs', 'a.txt', 'e3', true],
        ['docs', 'b/readme.md', 'e2', false],
        ['photos', 'z.jpg', 'e1', true],
      ]);
      expect((await state.listStamps('bob')).map((e) => e.key)).toEqual(['secret.txt']);
      expect(await state.listStamps('carol')).toEqual([]);
    });

    it('listStamps is ordered by bucket then key, whatever order the stamps were touched in', async () => {
      const state = await open();
      const touched: Array<[string, string]> = [['b', 'm'], ['a', 'z'], ['b', 'c'], ['a', 'a'], ['c', 'k'], ['a', 'm']];
      for (const [bucket, key] of touched) {
        // A millisecond apart: stores that keep stamps by touch time (redis) list them in that order first.
        await clockPast(Date.now());
        await state.recordWrite('alice', bucket, key, 'v', 1);
      }
      expect((await state.listStamps('alice')).map((e) => `${e.bucket}/${e.key}`)).toEqual(['a/a', 'a/m', 'a/z', 'b/c', 'b/m', 'c/k']);
    });

    it("listStamps orders keys as S3 lists them, UTF-8 binary, where JavaScript's UTF-16 order differs", async () => {
      const state = await open();
      // U+FF5E sorts after U+1F511's surrogates (0xD83D...) in UTF-16, before it by code point (src/vocabulary/names.ts).
      for (const key of ['\u{1F511}', '\uFF5E', 'z']) await state.recordWrite('alice', 'b', key, 'v', 1);
      expect((await state.listStamps('alice')).map((e) => e.key)).toEqual(['z', '\uFF5E', '\u{1F511}']);
    });

    it('listStamps lists a key that holds U+0000 whole', async () => {
      const state = await open();
      // validateKey admits it, as S3 does: a store's own separator must not cut it.
      await state.recordWrite('alice', 'b', 'a\u0000x', 'v', 1);
      await state.recordWrite('alice', 'b', 'a\u0000y', 'v', 1);
      expect((await state.listStamps('alice')).map((e) => e.key)).toEqual(['a\u0000x', 'a\u0000y']);
    });

    it('names with separators, quotes and unicode do not collide', async () => {
      const state = await open();
      await state.recordWrite('a:b', 'c', 'd', 'one', 1);
      await state.recordWrite('a', 'b:c', 'd', 'two', 1);
      await state.recordWrite('a', 'b', 'c:d', 'three', 1);
      await state.recordWrite('a', 'b', '"quoted"/ключ/🔑', 'four', 1);
      expect((await state.getStamp('a:b', 'c', 'd'))?.etag).toBe('one');
      expect((await state.getStamp('a', 'b:c', 'd'))?.etag).toBe('two');
      expect((await state.getStamp('a', 'b', 'c:d'))?.etag).toBe('three');
      expect((await state.listStamps('a')).map((e) => [e.bucket, e.key])).toEqual([
        ['b', '"quoted"/ключ/🔑'],
        ['b', 'c:d'],
        ['b:c', 'd'],
      ]);
    });

    it('a stamp returned earlier does not change afterwards', async () => {
      const state = await open();
      const first = await state.recordRead('a', 'b', 'k', { etag: 'v1', size: 100, start: 0, end: 10 });
      await state.recordRead('a', 'b', 'k', { etag: 'v1', size: 100, start: 10, end: 20 });
      expect(first.covered).toEqual([[0, 10]]);
    });

    it('ten concurrent ranged GETs of one version, spread over replicas, end in a full read', async () => {
      const { store, replica } = await impl.open(LIMITS);
      const replicas = [store, await replica()];
      const size = 10 * 1024 * KiB;
      const part = size / 10;
      for (let round = 0; round < 5; round++) {
        const key = `big-${round}`;
        const stamps = await Promise.all(
          Array.from({ length: 10 }, (_, i) => replicas[i % 2]!.recordRead('a', 'b', key, { etag: 'v1', size, start: i * part, end: (i + 1) * part })),
        );
        // Exactly the last merge to run sees the whole object.
        expect(stamps.filter((s) => s.full)).toHaveLength(1);
        for (const r of replicas) expect(await r.getStamp('a', 'b', key)).toMatchObject({ full: true, covered: [[0, size]] });
      }
    });
  });

  describe.skipIf(!impl.available)('bounds', () => {
    it('stamps are forgotten after the TTL, not before', async () => {
      const ttl = 800;
      const state = await open({ ttlMs: ttl, maxEntries: 1000 });
      await timed(async (run) => {
        const started = Date.now();
        await state.recordRead('a', 'b', `k${run}`, { etag: 'v1', size: 100, start: 0, end: 50 });
        await state.recordWrite('a', 'b', `w${run}`, 'v1', 10);
        const kept = await state.getStamp('a', 'b', `k${run}`);
        if (Date.now() >= started + ttl) return false;
        expect(kept).toBeDefined();
        const gone = await until(async () => (await state.getStamp('a', 'b', `k${run}`)) === undefined && (await state.getStamp('a', 'b', `w${run}`)) === undefined, 'the stamps to expire');
        expect(gone).toBeGreaterThanOrEqual(started + ttl);
        expect(await state.listStamps('a')).toEqual([]);
        // The forgotten first half does not combine with a later second half.
        expect(await state.recordRead('a', 'b', `k${run}`, { etag: 'v1', size: 100, start: 50, end: 100 })).toMatchObject({ full: false, covered: [[50, 100]] });
        return true;
      });
    });

    it('each touch restarts the TTL', async () => {
      const ttl = 1500;
      const state = await open({ ttlMs: ttl, maxEntries: 1000 });
      await timed(async (run) => {
        const key = `k${run}`;
        const beforeFirst = Date.now();
        await state.recordRead('a', 'b', key, { etag: 'v1', size: 100, start: 0, end: 10 });
        const afterFirst = Date.now();
        await clockPast(afterFirst + ttl / 3);
        const beforeSecond = Date.now();
        await state.recordRead('a', 'b', key, { etag: 'v1', size: 100, start: 10, end: 20 });
        const afterSecond = Date.now();
        // Past the first touch's TTL: only the second touch can keep the stamp.
        await clockPast(afterFirst + ttl + 50);
        const stamp = await state.getStamp('a', 'b', key);
        // Void when a stall let the first TTL end before the second touch, or the second end before this read.
        if (afterSecond >= beforeFirst + ttl || Date.now() >= beforeSecond + ttl) return false;
        expect(stamp).toMatchObject({ covered: [[0, 20]] });
        return true;
      });
    });

    it('write log entries are forgotten after the TTL, not before', async () => {
      const ttl = 800;
      const state = await open({ ttlMs: ttl, maxEntries: 1000 });
      await timed(async () => {
        const started = Date.now();
        await state.appendWriteLog({ at: new Date(started), bucket: 'b', key: 'k', operation: 'PutObject', agent: 'a', newETag: 'v1' });
        const listed = await state.listWriteLog({ limit: 10 });
        if (Date.now() >= started + ttl) return false;
        expect(listed).toHaveLength(1);
        const gone = await until(async () => (await state.listWriteLog({ limit: 10 })).length === 0, 'the write log to expire');
        expect(gone).toBeGreaterThanOrEqual(started + ttl);
        return true;
      });
    });

    it('lastWrite forgets the newest entry of a key after the TTL, not before', async () => {
      const ttl = 800;
      const state = await open({ ttlMs: ttl, maxEntries: 1000 });
      await timed(async (run) => {
        const started = Date.now();
        await state.appendWriteLog({ at: new Date(started), bucket: 'b', key: `k${run}`, operation: 'PutObject', agent: 'a', invocationId: 'inv', newETag: 'v1' });
        const kept = await state.lastWrite('b', `k${run}`);
        if (Date.now() >= started + ttl) return false;
        // An exact retry within the TTL is still recognised (s3/write.ts)...
        expect(kept).toMatchObject({ invocationId: 'inv', newETag: 'v1' });
        // ...and past it, the key reads as written by no one casket remembers.
        const gone = await until(async () => (await state.lastWrite('b', `k${run}`)) === undefined, 'the last write to expire');
        expect(gone).toBeGreaterThanOrEqual(started + ttl);
        return true;
      });
    });

    it('a write-log entry made longer than the TTL ago is not listed, while newer ones are', async () => {
      const ttl = 60_000;
      const state = await open({ ttlMs: ttl, maxEntries: 1000 });
      // Entries are appended when a write ends, stamped when it started: one can arrive already past the TTL.
      await state.appendWriteLog({ at: new Date(Date.now() - ttl - 5_000), bucket: 'b', key: 'old', operation: 'PutObject' });
      await state.appendWriteLog({ at: new Date(), bucket: 'b', key: 'new', operation: 'PutObject' });
      expect((await state.listWriteLog({ limit: 10 })).map((e) => e.key)).toEqual(['new']);
    });

    it('the ETag index keeps maxEntries entries', async () => {
      const state = await open({ ttlMs: 60_000, maxEntries: 3 });
      for (const n of [1, 2, 3]) await state.putIndexedETag('b', `k${n}`, 'up', `sha-${n}`);
      expect(await Promise.all([1, 2, 3].map((n) => state.getIndexedETag('b', `k${n}`, 'up')))).toEqual(['sha-1', 'sha-2', 'sha-3']);
    });

    it('an expired credential does not take the place of a live one under the entry cap', async () => {
      const state = await open({ ttlMs: 60_000, maxEntries: 2 });
      const record = (id: string, expiresAt: number): SessionRecord => ({ accessKeyId: id, secretAccessKey: 's', sessionToken: 't', agent: 'alice', sessionName: 'run', expiresAt, issuedBy: 'ADMIN', policies: [] });
      // Distinct expiries: the list is soonest to expire first, and a tie (the same millisecond) has no order.
      const now = Date.now();
      await state.putSession(record('ASIALIVE1', now + 900_000));
      await state.putSession(record('ASIAGONE', now - SESSION_GRACE_MS - 1000));
      await state.putSession(record('ASIALIVE2', now + 900_001));
      expect(await state.getSession('ASIALIVE1')).toMatchObject({ accessKeyId: 'ASIALIVE1' });
      expect(await state.getSession('ASIALIVE2')).toMatchObject({ accessKeyId: 'ASIALIVE2' });
      expect((await state.listSessions('alice')).map((s) => s.accessKeyId)).toEqual(['ASIALIVE1', 'ASIALIVE2']);
    });

    caseOf(GAP_CAP)(GAP_CAP, async () => {
      const state = await open({ ttlMs: 60_000, maxEntries: 3 });
      await state.recordWrite('a', 'b', 'k1', 'v', 1);
      await state.recordWrite('a', 'b', 'k2', 'v', 1);
      await state.recordWrite('other', 'b', 'k3', 'v', 1);
      // Touching k1 makes k2 the least recently used.
      await state.recordRead('a', 'b', 'k1', { etag: 'v', size: 1, start: 0, end: 1 });
      await state.recordWrite('a', 'b', 'k4', 'v', 1);
      expect(await state.getStamp('a', 'b', 'k2')).toBeUndefined();
      expect((await state.listStamps('a')).map((e) => e.key)).toEqual(['k1', 'k4']);
      expect(await state.getStamp('other', 'b', 'k3')).toBeDefined();
      await state.recordWrite('a', 'b', 'k5', 'v', 1);
      expect(await state.getStamp('other', 'b', 'k3')).toBeUndefined();
      expect((await state.listStamps('a')).map((e) => e.key)).toEqual(['k1', 'k4', 'k5']);
      expect(await state.listStamps('other')).toEqual([]);
    });

    caseOf(GAP_LOG_CAP)(GAP_LOG_CAP, async () => {
      const state = await open({ ttlMs: 60_000, maxEntries: 3 });
      for (let i = 1; i <= 5; i++) await state.appendWriteLog({ at: new Date(), bucket: 'b', key: `k${i}`, operation: 'PutObject' });
      expect((await state.listWriteLog({ limit: 10 })).map((e) => e.key)).toEqual(['k5', 'k4', 'k3']);
    });
  });

  describe.skipIf(!impl.available)('write log', () => {
    const t0 = Date.now();
    const entries: WriteLogEntry[] = [
      { at: new Date(t0), bucket: 'b1', key: 'x', operation: 'PutObject', agent: 'alice', accessKey: 'AK1', newETag: 'x1' },
      { at: new Date(t0 + 1), bucket: 'b1', key: 'x', operation: 'PutObject', agent: 'bob', previousETag: 'x1', newETag: 'x2' },
      { at: new Date(t0 + 2), bucket: 'b2', key: 'x', operation: 'CopyObject', previousETag: 'y0', newETag: 'y1' },
      { at: new Date(t0 + 3), bucket: 'b1', key: 'y', operation: 'CompleteMultipartUpload', agent: 'alice', newETag: 'z-2' },
      { at: new Date(t0 + 4), bucket: 'b1', key: 'x', operation: 'DeleteObject', agent: 'alice', previousETag: 'x2' },
    ];

    async function logged(): Promise<StateStore> {
      const state = await open();
      for (const e of entries) await state.appendWriteLog(e);
      return state;
    }

    it('lists newest first, with every field as written and absent fields absent', async () => {
      const state = await logged();
      expect((await state.listWriteLog({ limit: 100 })).map(({ cursor: _, ...e }) => e)).toStrictEqual([...entries].reverse());
    });

    it('pages with the cursor of the last entry seen, filters kept, and sees entries appended meanwhile only on page 1', async () => {
      const state = await logged();
      const keys = (list: WriteLogEntry[]) => list.map((e) => `${e.bucket}/${e.key} ${e.operation}`);
      const first = await state.listWriteLog({ limit: 2 });
      expect(keys(first)).toEqual(['b1/x DeleteObject', 'b1/y CompleteMultipartUpload']);
      // A write between two pages must neither repeat nor skip an entry on the next one.
      await state.appendWriteLog({ at: new Date(t0 + 6), bucket: 'b1', key: 'new', operation: 'PutObject', newETag: 'n1' });
      const second = await state.listWriteLog({ limit: 2, before: first[1]!.cursor! });
      expect(keys(second)).toEqual(['b2/x CopyObject', 'b1/x PutObject']);
      const third = await state.listWriteLog({ limit: 2, before: second[1]!.cursor! });
      expect(keys(third)).toEqual(['b1/x PutObject']);
      expect(await state.listWriteLog({ limit: 2, before: third[0]!.cursor! })).toEqual([]);
      const alice = await state.listWriteLog({ agent: 'alice', limit: 1 });
      expect(keys(await state.listWriteLog({ agent: 'alice', limit: 5, before: alice[0]!.cursor! }))).toEqual(['b1/y CompleteMultipartUpload', 'b1/x PutObject']);
    });

    it('a log longer than a page of the store: listed whole, paged, and filtered down to its oldest entries, each once', async () => {
      const state = await open({ ttlMs: 60_000, maxEntries: 5000 });
      const n = 1200;
      // The oldest three in a bucket of their own: a filter must read past everything newer to find them.
      for (let i = 0; i < n; i++) await state.appendWriteLog({ at: new Date(t0 + i), bucket: i < 3 ? 'old' : 'b', key: `k${i}`, operation: 'PutObject' });
      const newestFirst = Array.from({ length: n }, (_, i) => `k${n - 1 - i}`);
      expect((await state.listWriteLog({ limit: 5000 })).map((e) => e.key)).toEqual(newestFirst);
      expect((await state.listWriteLog({ bucket: 'old', limit: 10 })).map((e) => e.key)).toEqual(['k2', 'k1', 'k0']);
      const paged: string[] = [];
      let before: string | undefined;
      for (let page = 0; page < 10; page++) {
        const list = await state.listWriteLog({ limit: 450, ...(before !== undefined && { before }) });
        paged.push(...list.map((e) => e.key));
        if (list.length < 450) break;
        before = list.at(-1)!.cursor!;
      }
      expect(paged).toEqual(newestFirst);
    });

    it('pages the same way once the cap has dropped the oldest entries: the newest maxEntries, each once', async () => {
      const state = await open({ ttlMs: 60_000, maxEntries: 5 });
      for (let i = 1; i <= 8; i++) await state.appendWriteLog({ at: new Date(t0 + i), bucket: 'b', key: `k${i}`, operation: 'PutObject' });
      const pages: string[][] = [];
      let before: string | undefined;
      for (let page = 0; page < 5; page++) {
        const list = await state.listWriteLog({ limit: 2, ...(before !== undefined && { before }) });
        pages.push(list.map((e) => e.key));
        if (list.length < 2) break;
        before = list.at(-1)!.cursor!;
      }
      expect(pages).toEqual([['k8', 'k7'], ['k6', 'k5'], ['k4']]);
    });

    it('filters by key prefix, a % or _ in it taken literally', async () => {
      const state = await logged();
      await state.appendWriteLog({ at: new Date(t0 + 6), bucket: 'b1', key: 'a%b/1', operation: 'PutObject', newETag: 'p1' });
      await state.appendWriteLog({ at: new Date(t0 + 7), bucket: 'b1', key: 'axb/1', operation: 'PutObject', newETag: 'p2' });
      expect((await state.listWriteLog({ prefix: 'a%', limit: 10 })).map((e) => e.key)).toEqual(['a%b/1']);
      expect((await state.listWriteLog({ prefix: 'y', limit: 10 })).map((e) => e.key)).toEqual(['y']);
    });

    it('filters by bucket, key and agent, and together', async () => {
      const state = await logged();
      const ops = async (q: Parameters<StateStore['listWriteLog']>[0]) => (await state.listWriteLog(q)).map((e) => `${e.bucket}/${e.key} ${e.operation}`);
      expect(await ops({ bucket: 'b2', limit: 100 })).toEqual(['b2/x CopyObject']);
      expect(await ops({ key: 'x', limit: 100 })).toEqual(['b1/x DeleteObject', 'b2/x CopyObject', 'b1/x PutObject', 'b1/x PutObject']);
      expect(await ops({ agent: 'alice', limit: 100 })).toEqual(['b1/x DeleteObject', 'b1/y CompleteMultipartUpload', 'b1/x PutObject']);
      expect(await ops({ bucket: 'b1', key: 'x', agent: 'bob', limit: 100 })).toEqual(['b1/x PutObject']);
      expect(await ops({ agent: 'nobody', limit: 100 })).toEqual([]);
    });

    it('lastWrite answers the newest entry of that bucket and key, and nothing for a key never written', async () => {
      const state = await logged();
      // What exact retries (s3/write.ts) and the changes feed (agent-changes.ts) are decided on.
      expect(await state.lastWrite('b1', 'x')).toStrictEqual(entries[4]);
      expect(await state.lastWrite('b2', 'x')).toStrictEqual(entries[2]);
      expect(await state.lastWrite('b1', 'y')).toStrictEqual(entries[3]);
      expect(await state.lastWrite('b2', 'y')).toBeUndefined();
      const later: WriteLogEntry = { at: new Date(t0 + 5), bucket: 'b1', key: 'x', operation: 'PutObject', agent: 'bob', accessKey: 'AK2', invocationId: 'inv-1', newETag: 'x3' };
      await state.appendWriteLog(later);
      expect(await state.lastWrite('b1', 'x')).toStrictEqual(later);
    });

    it('filters by a time window, both ends included (what a rollback reads: src/rollback/)', async () => {
      const state = await logged();
      const ops = async (q: Parameters<StateStore['listWriteLog']>[0]) => (await state.listWriteLog(q)).map((e) => e.at.getTime() - t0);
      expect(await ops({ since: new Date(t0 + 1), until: new Date(t0 + 3), limit: 100 })).toEqual([3, 2, 1]);
      expect(await ops({ agent: 'alice', since: new Date(t0 + 1), limit: 100 })).toEqual([4, 3]);
      expect(await ops({ until: new Date(t0), limit: 100 })).toEqual([0]);
      expect(await ops({ since: new Date(t0 + 5), limit: 100 })).toEqual([]);
    });

    it('returns at most limit entries, the newest', async () => {
      const state = await logged();
      expect((await state.listWriteLog({ limit: 2 })).map((e) => e.operation)).toEqual(['DeleteObject', 'CompleteMultipartUpload']);
      expect((await state.listWriteLog({ agent: 'alice', limit: 1 })).map((e) => e.operation)).toEqual(['DeleteObject']);
    });
  });

  describe.skipIf(!impl.available)('s3 backend state', () => {
    it('ETag index: the SHA-256 ETag of (bucket, key) at an upstream ETag', async () => {
      const state = await open();
      expect(await state.getIndexedETag('b', 'k', 'up1')).toBeUndefined();
      await state.putIndexedETag('b', 'k', 'up1', 'sha-1');
      await state.putIndexedETag('b', 'k', 'up2', 'sha-2');
      expect(await state.getIndexedETag('b', 'k', 'up1')).toBe('sha-1');
      expect(await state.getIndexedETag('b', 'k', 'up2')).toBe('sha-2');
      expect(await state.getIndexedETag('b', 'other', 'up1')).toBeUndefined();
      expect(await state.getIndexedETag('other', 'k', 'up1')).toBeUndefined();
      await state.putIndexedETag('b', 'k', 'up1', 'sha-1b');
      expect(await state.getIndexedETag('b', 'k', 'up1')).toBe('sha-1b');
    });

    it('ETag index, batched: one answer per (key, upstream ETag), in the order asked, as getIndexedETag gives it', async () => {
      const state = await open();
      await state.putIndexedETag('b', 'k1', 'up1', 'sha-1');
      await state.putIndexedETag('b', 'k2', 'up2', 'sha-2');
      await state.putIndexedETag('other', 'k3', 'up3', 'sha-3');
      // A key whose upstream ETag moved (rewritten around casket) is not indexed; nor another bucket's entry.
      const asked = [['k2', 'up2'], ['k1', 'up-new'], ['k3', 'up3'], ['k1', 'up1'], ['odd "key" \u{1F511}', 'up1']] as const;
      expect(await state.getIndexedETags('b', asked)).toEqual(['sha-2', undefined, undefined, 'sha-1', undefined]);
      expect(await Promise.all(asked.map(([k, u]) => state.getIndexedETag('b', k, u)))).toEqual(['sha-2', undefined, undefined, 'sha-1', undefined]);
      expect(await state.getIndexedETags('b', [])).toEqual([]);
      await state.putIndexedETag('b', 'k1', 'up1', 'sha-1b');
      expect(await state.getIndexedETags('b', [['k1', 'up1']])).toEqual(['sha-1b']);
    });

    const part = (partNumber: number, tag: string, md5 = `md5-${tag}`) => ({ partNumber, sha256: `sha-${tag}`, md5, size: partNumber * 100, ...(partNumber === 3 && { checksum: `crc32 ${tag}AAAA==` }) });

    it('part digests: put in any order, read back by part number, every MD5 of a part number kept, deleted', async () => {
      const state = await open();
      await state.putPartDigest('up-1', part(3, 'c'));
      await state.putPartDigest('up-1', part(1, 'a'));
      await state.putPartDigest('up-1', part(10, 'j'));
      await state.putPartDigest('up-1', part(2, 'b'));
      await state.putPartDigest('up-1', part(2, 'b2'));
      await state.putPartDigest('up-2', part(1, 'other'));
      expect(await state.getPartDigests('up-1')).toEqual([part(1, 'a'), part(2, 'b'), part(2, 'b2'), part(3, 'c'), part(10, 'j')]);
      await state.deletePartDigests('up-1');
      expect(await state.getPartDigests('up-1')).toEqual([]);
      expect(await state.getPartDigests('up-2')).toEqual([part(1, 'other')]);
      expect(await state.getPartDigests('never')).toEqual([]);
    });

    it('part digests: several per part number, one per MD5, oldest first; the same MD5 again replaces its entry and is the latest', async () => {
      const opened = await impl.open(LIMITS);
      const state = opened.store;
      // Recorded in an order that is neither by MD5 nor by tag.
      await state.putPartDigest('up', part(2, 'z', 'ffff'));
      await state.putPartDigest('up', part(2, 'y', '0000'));
      await state.putPartDigest('up', part(1, 'a'));
      await state.putPartDigest('up', part(2, 'x', '8888'));
      expect(await state.getPartDigests('up')).toEqual([part(1, 'a'), part(2, 'z', 'ffff'), part(2, 'y', '0000'), part(2, 'x', '8888')]);
      // The first bytes uploaded again (a retry): one entry for that MD5, now the latest.
      await state.putPartDigest('up', part(2, 'z2', 'ffff'));
      expect(await state.getPartDigests('up')).toEqual([part(1, 'a'), part(2, 'y', '0000'), part(2, 'x', '8888'), part(2, 'z2', 'ffff')]);
      // Many at once (concurrent uploads of one part number on replicas): none lost.
      const replica = await opened.replica();
      await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? state : replica).putPartDigest('many', part(7, `t${i}`))));
      expect((await state.getPartDigests('many')).map((d) => d.md5).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `md5-t${i}`).sort());
    });
  });

  describe.skipIf(!impl.available)('STS sessions', () => {
    const session = (id: string, expiresAt: number): SessionRecord => ({
      accessKeyId: id,
      secretAccessKey: `secret-${id}`,
      sessionToken: `token-${id}`,
      agent: 'alice',
      sessionName: 'run-1',
      expiresAt,
      issuedBy: 'ADMIN',
      policies: [{ statements: [{ effect: 'Allow', actions: ['s3:getobject'], resources: ['*'], conditions: [] }] }],
    });

    it('a minted credential is kept, read back whole, and seen by every replica', async () => {
      const { store, replica } = await impl.open(LIMITS);
      const s = session('ASIA1', Date.now() + 900_000);
      await store.putSession(s);
      expect(await store.getSession('ASIA1')).toEqual(s);
      expect(await (await replica()).getSession('ASIA1')).toEqual(s);
      expect(await store.getSession('ASIA2')).toBeUndefined();
    });

    it('lists one agent\'s sessions, soonest to expire first, on every replica', async () => {
      const { store, replica } = await impl.open(LIMITS);
      await store.putSession(session('ASIA5', Date.now() + 900_000));
      await store.putSession(session('ASIA4', Date.now() + 600_000));
      await store.putSession({ ...session('ASIA6', Date.now() + 300_000), agent: 'bob' });
      expect((await store.listSessions('alice')).map((s) => s.accessKeyId)).toEqual(['ASIA4', 'ASIA5']);
      expect((await (await replica()).listSessions('bob')).map((s) => s.accessKeyId)).toEqual(['ASIA6']);
      expect(await store.listSessions('nobody')).toEqual([]);
    });

    it('lists an expired credential while it is still known, and not once it is forgotten', async () => {
      const state = await open();
      await state.putSession(session('ASIA7', Date.now() - 1000));
      await state.putSession(session('ASIA8', Date.now() - SESSION_GRACE_MS - 1000));
      expect((await state.listSessions('alice')).map((s) => s.accessKeyId)).toEqual(['ASIA7']);
    });

    it('revocation marks it for every replica; an unknown key is not revoked', async () => {
      const { store, replica } = await impl.open(LIMITS);
      await store.putSession(session('ASIA3', Date.now() + 900_000));
      const other = await replica();
      expect(await other.revokeSession('ASIA3')).toBe(true);
      expect(await store.getSession('ASIA3')).toMatchObject({ accessKeyId: 'ASIA3', revoked: true });
      expect(await store.revokeSession('ASIA-never')).toBe(false);
    });

    it('an expired credential is still known for a while (to answer ExpiredToken), then forgotten', async () => {
      const state = await open();
      await state.putSession(session('ASIA4', Date.now() - 1000));
      expect(await state.getSession('ASIA4')).toMatchObject({ accessKeyId: 'ASIA4' });
      await state.putSession(session('ASIA5', Date.now() - SESSION_GRACE_MS - 1000));
      expect(await state.getSession('ASIA5')).toBeUndefined();
    });
  });
});

describe('memory', () => {
  // The memory store is bounded by maxEntries in all it keeps (src/state/types.ts);
  // sqlite prunes on its own schedule and redis by TTL alone, so these are its own.
  const record = (id: string): SessionRecord => ({ accessKeyId: id, secretAccessKey: 's', sessionToken: 't', agent: 'alice', sessionName: 'run', expiresAt: Date.now() + 900_000, issuedBy: 'ADMIN', policies: [] });

  it('keeps at most maxEntries sessions, forgetting the oldest first', async () => {
    const state = new MemoryStateStore({ ttlMs: 60_000, maxEntries: 2 });
    for (const id of ['ASIA1', 'ASIA2', 'ASIA3']) await state.putSession(record(id));
    expect(await state.getSession('ASIA1')).toBeUndefined();
    expect((await state.listSessions('alice')).map((s) => s.accessKeyId)).toEqual(['ASIA2', 'ASIA3']);
  });

  it('keeps at most maxEntries ETag index entries, forgetting the least recently put first', async () => {
    const state = new MemoryStateStore({ ttlMs: 60_000, maxEntries: 2 });
    await state.putIndexedETag('b', 'k1', 'up', 'sha-1');
    await state.putIndexedETag('b', 'k2', 'up', 'sha-2');
    await state.putIndexedETag('b', 'k1', 'up', 'sha-1b');
    await state.putIndexedETag('b', 'k3', 'up', 'sha-3');
    expect([await state.getIndexedETag('b', 'k1', 'up'), await state.getIndexedETag('b', 'k2', 'up'), await state.getIndexedETag('b', 'k3', 'up')]).toEqual(['sha-1b', undefined, 'sha-3']);
  });

  it('lastWrite forgets a key once the write log has dropped its entries for the cap', async () => {
    const state = new MemoryStateStore({ ttlMs: 60_000, maxEntries: 2 });
    for (const key of ['k1', 'k2', 'k3']) await state.appendWriteLog({ at: new Date(), bucket: 'b', key, operation: 'PutObject', newETag: `e-${key}` });
    expect(await state.lastWrite('b', 'k1')).toBeUndefined();
    expect((await state.lastWrite('b', 'k3'))?.newETag).toBe('e-k3');
  });
});

describe('sqlite', () => {
  it('stamps, the write log and the ETag index survive close and reopen', async () => {
    const path = join(tempDir(), 'state.db');
    const first = new SqliteStateStore(path, LIMITS);
    await first.recordRead('a', 'b', 'k', { etag: 'v1', size: 100, start: 0, end: 40 });
    await first.recordWrite('a', 'b', 'w', 'v2', 7);
    await first.appendWriteLog({ at: new Date(), bucket: 'b', key: 'w', operation: 'PutObject', agent: 'a', newETag: 'v2' });
    await first.putIndexedETag('b', 'w', 'up', 'v2');
    await first.close();

    const reopened = tracked(new SqliteStateStore(path, LIMITS));
    expect(await reopened.getStamp('a', 'b', 'w')).toMatchObject({ etag: 'v2', full: true });
    // The partial read carries on where it stopped.
    expect(await reopened.recordRead('a', 'b', 'k', { etag: 'v1', size: 100, start: 40, end: 100 })).toMatchObject({ full: true });
    expect((await reopened.listWriteLog({ limit: 10 })).map((e) => e.newETag)).toEqual(['v2']);
    expect(await reopened.getIndexedETag('b', 'w', 'up')).toBe('v2');
  });

  it('write-log and ETag index entries reach the file within a turn, without a close: a restart after a crash finds them', async () => {
    const path = join(tempDir(), 'state.db');
    const running = tracked(new SqliteStateStore(path, LIMITS));
    // What a casket started after a kill -9 reads: the file, through a handle of its own.
    const afterCrash = async () => {
      const store = new SqliteStateStore(path, LIMITS);
      try {
        return { log: (await store.listWriteLog({ limit: 10 })).map((e) => e.newETag), index: await store.getIndexedETag('b', 'k', 'up2') };
      } finally {
        await store.close();
      }
    };
    const turn = () => new Promise((r) => setImmediate(r));
    await running.appendWriteLog({ at: new Date(), bucket: 'b', key: 'k', operation: 'PutObject', newETag: 'e1' });
    await turn();
    expect((await afterCrash()).log).toEqual(['e1']);
    // And every turn after the first.
    await running.appendWriteLog({ at: new Date(), bucket: 'b', key: 'k', operation: 'PutObject', newETag: 'e2' });
    await running.putIndexedETag('b', 'k', 'up2', 'e2');
    await turn();
    expect(await afterCrash()).toEqual({ log: ['e2', 'e1'], index: 'e2' });
  });

  it('a write log an older casket made (no invocation or version id column) keeps working, and records both from then on', async () => {
    const path = join(tempDir(), 'state.db');
    const old = openSqlite(path);
    old.exec(`CREATE TABLE write_log (
  id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, bucket TEXT NOT NULL, key TEXT NOT NULL,
  operation TEXT NOT NULL, agent TEXT, access_key TEXT, previous_etag TEXT, new_etag TEXT
)`);
    old.prepare('INSERT INTO write_log (at, bucket, key, operation, agent, new_etag) VALUES (?, ?, ?, ?, ?, ?)').run(Date.now(), 'b', 'k', 'PutObject', 'alice', 'e1');
    old.close();

    const store = tracked(new SqliteStateStore(path, LIMITS));
    expect(await store.lastWrite('b', 'k')).toMatchObject({ agent: 'alice', newETag: 'e1' });
    // An exact retry is recognised by the invocation id; a rollback names versions by their id.
    await store.appendWriteLog({ at: new Date(), bucket: 'b', key: 'k', operation: 'PutObject', agent: 'alice', previousETag: 'e1', newETag: 'e2', invocationId: 'inv-1', versionId: 'v-2' });
    expect(await store.lastWrite('b', 'k')).toMatchObject({ newETag: 'e2', invocationId: 'inv-1', versionId: 'v-2' });
  });

  it('part digests an older casket recorded (one per part number) are read, as older than any recorded since', async () => {
    const path = join(tempDir(), 'state.db');
    // The schema before digests were kept per MD5, with a row in it.
    const old = openSqlite(path);
    old.exec(`CREATE TABLE part_digests (
  upload_id TEXT NOT NULL, part_number INTEGER NOT NULL, sha256 TEXT NOT NULL, md5 TEXT NOT NULL, size INTEGER NOT NULL, at INTEGER NOT NULL,
  PRIMARY KEY (upload_id, part_number)
) WITHOUT ROWID`);
    old.exec('ALTER TABLE part_digests ADD COLUMN checksum TEXT');
    old.prepare('INSERT INTO part_digests (upload_id, part_number, sha256, md5, size, at, checksum) VALUES (?, ?, ?, ?, ?, ?, ?)').run('up', 1, 'sha-old', 'md5-old', 100, Date.now(), 'crc32 AAAAAA==');
    old.prepare('INSERT INTO part_digests (upload_id, part_number, sha256, md5, size, at, checksum) VALUES (?, ?, ?, ?, ?, ?, ?)').run('up', 2, 'sha-two', 'md5-two', 200, Date.now(), null);
    old.close();

    const store = tracked(new SqliteStateStore(path, LIMITS));
    const older = { partNumber: 1, sha256: 'sha-old', md5: 'md5-old', size: 100, checksum: 'crc32 AAAAAA==' };
    const two = { partNumber: 2, sha256: 'sha-two', md5: 'md5-two', size: 200 };
    expect(await store.getPartDigests('up')).toEqual([older, two]);
    const newer = { partNumber: 1, sha256: 'sha-new', md5: 'md5-new', size: 100 };
    await store.putPartDigest('up', newer);
    expect(await store.getPartDigests('up')).toEqual([older, newer, two]);
    await store.close();
    // And once more after a reopen: nothing doubled, the order kept.
    const reopened = tracked(new SqliteStateStore(path, LIMITS));
    expect(await reopened.getPartDigests('up')).toEqual([older, newer, two]);
  });
});

describe.skipIf(!haveRedis)('redis', () => {
  it('caskets with different prefixes share one Redis without seeing each other', async () => {
    const one = tracked(await RedisStateStore.connect(redis!.url, LIMITS, { prefix: 'team-one:' }));
    const two = tracked(await RedisStateStore.connect(redis!.url, LIMITS, { prefix: 'team-two:' }));
    await one.recordWrite('a', 'b', 'k', 'v1', 1);
    await one.appendWriteLog({ at: new Date(), bucket: 'b', key: 'k', operation: 'PutObject' });
    expect(await two.getStamp('a', 'b', 'k')).toBeUndefined();
    expect(await two.listStamps('a')).toEqual([]);
    expect(await two.listWriteLog({ limit: 10 })).toEqual([]);
    expect(await one.getStamp('a', 'b', 'k')).toBeDefined();
  });

  it("each prefix has its own entry cap: one casket's stamps do not push out another's", async () => {
    const limits = { ttlMs: 60_000, maxEntries: 3 };
    const one = tracked(await RedisStateStore.connect(redis!.url, limits, { prefix: `cap-one-${randomBytes(4).toString('hex')}:` }));
    const two = tracked(await RedisStateStore.connect(redis!.url, limits, { prefix: `cap-two-${randomBytes(4).toString('hex')}:` }));
    for (const k of ['k1', 'k2', 'k3']) await one.recordWrite('alice', 'b', k, 'v', 1);
    for (const k of ['k1', 'k2', 'k3']) await two.recordWrite('bob', 'b', k, 'v', 1);
    expect((await one.listStamps('alice')).map((e) => e.key)).toEqual(['k1', 'k2', 'k3']);
    expect((await two.listStamps('bob')).map((e) => e.key)).toEqual(['k1', 'k2', 'k3']);
  });

  it('part digests an older casket recorded (hash field = part number) are read, as older than any recorded since', async () => {
    const prefix = `casket-old-${randomBytes(4).toString('hex')}:`;
    const raw = new Redis(redis!.url);
    try {
      await raw.hset(`${prefix}parts:up`, '1', JSON.stringify({ sha256: 'sha-old', md5: 'md5-old', size: 100, checksum: 'crc32 AAAAAA==' }), '2', JSON.stringify({ sha256: 'sha-two', md5: 'md5-two', size: 200 }));
    } finally {
      raw.disconnect();
    }
    const store = tracked(await RedisStateStore.connect(redis!.url, LIMITS, { prefix }));
    const older = { partNumber: 1, sha256: 'sha-old', md5: 'md5-old', size: 100, checksum: 'crc32 AAAAAA==' };
    const two = { partNumber: 2, sha256: 'sha-two', md5: 'md5-two', size: 200 };
    expect(await store.getPartDigests('up')).toEqual([older, two]);
    const newer = { partNumber: 1, sha256: 'sha-new', md5: 'md5-new', size: 100 };
    await store.putPartDigest('up', newer);
    expect(await store.getPartDigests('up')).toEqual([older, newer, two]);
  });

  it("a session's key expires SESSION_GRACE_MS after the credential does, and an expired one is not kept", async () => {
    const prefix = `casket-ttl-${randomBytes(4).toString('hex')}:`;
    const store = tracked(await RedisStateStore.connect(redis!.url, LIMITS, { prefix }));
    const expiresAt = Date.now() + 60_000;
    await store.putSession({ accessKeyId: 'ASIATTL', secretAccessKey: 's', sessionToken: 't', agent: 'alice', sessionName: 'run', expiresAt, issuedBy: 'ADMIN', policies: [] });
    await store.putSession({ accessKeyId: 'ASIAOLD', secretAccessKey: 's', sessionToken: 't', agent: 'alice', sessionName: 'run', expiresAt: Date.now() - SESSION_GRACE_MS - 1000, issuedBy: 'ADMIN', policies: [] });
    const raw = new Redis(redis!.url);
    try {
      const pttl = await raw.pttl(`${prefix}session:ASIATTL`);
      // Redis forgets it by itself, on every replica, and no later than that.
      expect(pttl).toBeGreaterThan(0);
      expect(pttl).toBeLessThanOrEqual(expiresAt + SESSION_GRACE_MS - Date.now() + 1000);
      expect(await raw.exists(`${prefix}session:ASIAOLD`)).toBe(0);
    } finally {
      raw.disconnect();
    }
  });

  it("lists an agent's sessions from among many thousands of keys (SCAN reads them a batch at a time)", async () => {
    const prefix = `casket-scan-${randomBytes(4).toString('hex')}:`;
    const raw = new Redis(redis!.url);
    try {
      // ETag index entries, as an s3 backend leaves them: 20,000 keys besides the sessions.
      const pipeline = raw.pipeline();
      for (let i = 0; i < 20_000; i++) pipeline.set(`${prefix}etag-index:["b","k${i}","up"]`, 'sha', 'PX', 60_000);
      await pipeline.exec();
    } finally {
      raw.disconnect();
    }
    const store = tracked(await RedisStateStore.connect(redis!.url, LIMITS, { prefix }));
    const ids = Array.from({ length: 10 }, (_, i) => `ASIASCAN${i}`);
    for (const [i, id] of ids.entries()) await store.putSession({ accessKeyId: id, secretAccessKey: 's', sessionToken: 't', agent: 'alice', sessionName: 'run', expiresAt: Date.now() + 600_000 + i * 1000, issuedBy: 'ADMIN', policies: [] });
    expect((await store.listSessions('alice')).map((s) => s.accessKeyId)).toEqual(ids);
  });

  it('a Redis that is not there rejects connect within seconds', async () => {
    const port = await freePort();
    const started = Date.now();
    await expect(RedisStateStore.connect(`redis://127.0.0.1:${port}`, LIMITS)).rejects.toThrow(/cannot connect to Redis at 127\.0\.0\.1/);
    // Its timeouts are 3 s (src/state/redis.ts); without them it would retry forever.
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('a Redis that goes down rejects calls within seconds instead of hanging them', async () => {
    const doomed = await startRedis();
    try {
      const state = tracked(await RedisStateStore.connect(doomed.url, LIMITS));
      await state.recordWrite('a', 'b', 'k', 'v1', 1);
      await doomed.stop();
      for (const call of [
        () => state.getStamp('a', 'b', 'k'),
        () => state.recordRead('a', 'b', 'k', { etag: 'v1', size: 10, start: 0, end: 10 }),
        () => state.listWriteLog({ limit: 10 }),
      ]) {
        const started = Date.now();
        await expect(call()).rejects.toThrow();
        expect(Date.now() - started).toBeLessThan(10_000);
      }
    } finally {
      await doomed.stop();
    }
  });
});
