/**
 * The Retention contract (src/retention/types.ts), run against both stores:
 * content kept as a version of one key under its SHA-256 only when it hashes
 * to it, read back whole for that key and for no other,
 * the oldest touched evicted first past the byte budget, gone past the TTL,
 * the bytes figure in step — and, for Redis, shared by two connections (two
 * replicas) without double counting.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { FileRetention } from '../../src/retention/files.js';
import { RedisRetention } from '../../src/retention/redis.js';
import { retainedName, sha256Hex, type Retention, type RetentionLimits, type VersionOf } from '../../src/retention/types.js';
import { clockPast } from '../helpers/poll.js';
import { hasRedis, startRedis, type RunningRedis } from '../helpers/redis.js';
import { need } from '../helpers/tools.js';

const blob = (n: number, size = 100) => Buffer.alloc(size, n);
/** Version `content` of bucket `b`, key `k` (default: one key for all). */
const v = (content: Buffer, k = 'doc.txt', b = 'notes'): VersionOf => ({ bucket: b, key: k, etag: sha256Hex(content) });

let redis: RunningRedis | undefined;
const haveRedis = need('redis-server', hasRedis());
const dirs: string[] = [];
let prefixes = 0;

beforeAll(async () => {
  if (haveRedis) redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const kinds: Array<[string, (limits: RetentionLimits) => Promise<Retention>]> = [
  ['files', async (limits) => {
    const dir = mkdtempSync(join(tmpdir(), 'casket-retention-'));
    dirs.push(dir);
    return new FileRetention(dir, limits);
  }],
  ...(haveRedis ? [['redis', async (limits: RetentionLimits) => RedisRetention.connect(redis!.url, limits, { prefix: `t${++prefixes}:` })] as [string, (limits: RetentionLimits) => Promise<Retention>]] : []),
];

describe.each(kinds)('%s retention', (_kind, open) => {
  it('keeps content under its SHA-256, and only there', async () => {
    const r = await open({ maxBytes: 10_000, ttlMs: 60_000 });
    await r.keep(v(blob(1)), blob(1));
    await r.keep(v(blob(2)), blob(3)); // a hash that is not the content's: not kept
    expect(await r.get(v(blob(1)))).toEqual(blob(1));
    expect(await r.get(v(blob(2)))).toBeUndefined();
    expect(await r.touch(v(blob(1)))).toBe(true);
    expect(await r.touch(v(blob(9)))).toBe(false);
    expect(await r.bytes()).toBe(100);
    await r.keep(v(blob(1)), blob(1));
    expect(await r.bytes()).toBe(100);
    await r.close();
  });

  it('keeps a version for its key only: the same ETag named for another key, or bucket, is not kept there', async () => {
    const r = await open({ maxBytes: 10_000, ttlMs: 60_000 });
    await r.keep(v(blob(1), 'payroll.txt', 'secret'), blob(1));
    expect(await r.get(v(blob(1), 'payroll.txt', 'secret'))).toEqual(blob(1));
    for (const other of [v(blob(1), 'mine.txt', 'pub'), v(blob(1), 'payroll.txt', 'pub'), v(blob(1), 'mine.txt', 'secret'), v(blob(1), 'secret/payroll.txt', 'pub')]) {
      expect(await r.get(other), JSON.stringify(other)).toBeUndefined();
      expect(await r.touch(other), JSON.stringify(other)).toBe(false);
    }
    // The same bytes kept for a second key: each key has its own, and the budget pays for both.
    await r.keep(v(blob(1), 'mine.txt', 'pub'), blob(1));
    expect(await r.get(v(blob(1), 'mine.txt', 'pub'))).toEqual(blob(1));
    expect(await r.bytes()).toBe(200);
    await r.close();
  });

  it('evicts the oldest touched first past the budget', async () => {
    const r = await open({ maxBytes: 350, ttlMs: 60_000 });
    for (const n of [1, 2, 3]) await r.keep(v(blob(n)), blob(n));
    await r.touch(v(blob(1))); // 2 is now the oldest
    await r.keep(v(blob(4)), blob(4));
    expect(await r.get(v(blob(2)))).toBeUndefined();
    for (const n of [1, 3, 4]) expect(await r.get(v(blob(n)))).toEqual(blob(n));
    expect(await r.bytes()).toBe(300);
    // Larger than the whole budget: never kept.
    await r.keep(v(blob(5, 400)), blob(5, 400));
    expect(await r.get(v(blob(5, 400)))).toBeUndefined();
    expect(await r.bytes()).toBeLessThanOrEqual(350);
    await r.close();
  });

  it('keeps touch order within one millisecond: the one touched first is evicted first', async () => {
    // All in one millisecond (as on a fast machine): the order must come
    // from the touches, not from the content hashes that tie-break a zset.
    const frozen = vi.spyOn(Date, 'now').mockReturnValue(Date.now());
    try {
      for (const order of [[11, 12, 13], [13, 12, 11], [12, 11, 13]]) {
        const r = await open({ maxBytes: 350, ttlMs: 60_000 });
        for (const n of order) await r.keep(v(blob(n)), blob(n));
        await r.touch(v(blob(order[0]!))); // order[1] is now the oldest
        await r.keep(v(blob(14)), blob(14));
        expect(await r.get(v(blob(order[1]!))), `kept ${order.join(',')}, touched ${order[0]}`).toBeUndefined();
        for (const n of [order[0]!, order[2]!, 14]) expect(await r.get(v(blob(n))), `kept ${order.join(',')}: ${n}`).toEqual(blob(n));
        await r.close();
      }
    } finally {
      frozen.mockRestore();
    }
  });

  it('forgets content past the TTL', async () => {
    const r = await open({ maxBytes: 10_000, ttlMs: 200 });
    await r.keep(v(blob(7)), blob(7));
    expect(await r.get(v(blob(7)))).toEqual(blob(7));
    await clockPast(Date.now() + 250);
    expect(await r.get(v(blob(7)))).toBeUndefined();
    expect(await r.touch(v(blob(7)))).toBe(false);
    expect(await r.bytes()).toBe(0);
    await r.close();
  });
});

describe('files retention', () => {
  it('survives a restart, oldest first still, and leaves no temporary files nor versions kept by ETag alone', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'casket-retention-'));
    dirs.push(dir);
    const first = new FileRetention(dir, { maxBytes: 350, ttlMs: 60_000 });
    for (const n of [1, 2, 3]) {
      await first.keep(v(blob(n)), blob(n));
      await clockPast(Date.now() + 20); // distinct mtimes
    }
    // A version an older casket kept by its ETag alone: bound to no key, never to be served.
    writeFileSync(join(dir, sha256Hex(blob(9))), blob(9));
    const again = new FileRetention(dir, { maxBytes: 350, ttlMs: 60_000 });
    expect(await again.bytes()).toBe(300);
    await again.keep(v(blob(4)), blob(4));
    expect(await again.get(v(blob(1)))).toBeUndefined();
    expect(await again.get(v(blob(3)))).toEqual(blob(3));
    expect(readdirSync(dir).sort()).toEqual([2, 3, 4].map((n) => retainedName(v(blob(n)))).sort());
  });

  it('keeps the touch order across a clean restart: a version read just before the stop is not the first evicted after it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'casket-retention-'));
    dirs.push(dir);
    const first = new FileRetention(dir, { maxBytes: 350, ttlMs: 60_000 });
    for (const n of [1, 2, 3]) {
      await first.keep(v(blob(n)), blob(n));
      await clockPast(Date.now() + 20); // distinct mtimes
    }
    expect(await first.touch(v(blob(1)))).toBe(true); // 2 is now the oldest
    await first.close();
    const again = new FileRetention(dir, { maxBytes: 350, ttlMs: 60_000 });
    await again.keep(v(blob(4)), blob(4));
    expect(await again.get(v(blob(2)))).toBeUndefined();
    expect(await again.get(v(blob(1)))).toEqual(blob(1));
    await again.close();
  });
});

describe.runIf(haveRedis)('redis retention shared by two replicas', () => {
  it('both see what either kept; the budget counts each version once', async () => {
    const prefix = `shared${++prefixes}:`;
    const one = await RedisRetention.connect(redis!.url, { maxBytes: 1000, ttlMs: 60_000 }, { prefix });
    const two = await RedisRetention.connect(redis!.url, { maxBytes: 1000, ttlMs: 60_000 }, { prefix });
    await Promise.all([one.keep(v(blob(1)), blob(1)), two.keep(v(blob(1)), blob(1))]);
    await two.keep(v(blob(2)), blob(2));
    expect(await one.get(v(blob(2)))).toEqual(blob(2));
    expect(await two.get(v(blob(1)))).toEqual(blob(1));
    expect(await one.bytes()).toBe(200);
    await one.close();
    await two.close();
  });
});
