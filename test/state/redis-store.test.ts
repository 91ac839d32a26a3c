/**
 * What the Redis state store (src/state/redis.ts) and its connection
 * (src/state/redis-connection.ts) promise beyond the contract every store
 * keeps (state-store.test.ts) and the connection cases of
 * redis-connection.test.ts: keys that stay under casket's prefix, Redis's
 * errors reported rather than swallowed, write-log paging and time bounds to
 * the millisecond, credentials forgotten on time even before Redis drops
 * them, and a connection that retries a down Redis at a measured pace, fails
 * commands at once meanwhile, prints nothing, and leaves nothing behind.
 *
 * Against a real redis-server on a loopback port (optional on a user's
 * machine, required in CI: test/helpers/tools.ts). Times of day are pinned
 * by stubbing Date.now, the clock the store reads, where a bound to the
 * millisecond is the point; Redis keeps its own clock, and every TTL it is
 * given here is minutes long.
 */
import { randomBytes } from 'node:crypto';
import { Redis, type RedisKey } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { closeRedis, openRedis } from '../../src/state/redis-connection.js';
import { RedisStateStore } from '../../src/state/redis.js';
import { LOG_ORDER_SLACK_MS, SESSION_GRACE_MS, type SessionRecord, type StateLimits, type WriteLogEntry } from '../../src/state/types.js';
import { until } from '../helpers/poll.js';
import { hasRedis, startRedis, type RunningRedis } from '../helpers/redis.js';
import { need } from '../helpers/tools.js';

const haveRedis = need('redis-server', hasRedis());

const LIMITS: StateLimits = { ttlMs: 60_000, maxEntries: 1000 };

let server: RunningRedis | undefined;
let raw: Redis;
const toClose: RedisStateStore[] = [];

const fresh = () => `casket-surv-${randomBytes(4).toString('hex')}:`;

async function store(options: { prefix?: string; limits?: StateLimits; url?: string } = {}): Promise<RedisStateStore> {
  const opened = await RedisStateStore.connect(options.url ?? server!.url, options.limits ?? LIMITS, options.prefix === undefined ? {} : { prefix: options.prefix });
  toClose.push(opened);
  return opened;
}

const session = (id: string, expiresAt: number): SessionRecord => ({ accessKeyId: id, secretAccessKey: 's', sessionToken: 't', agent: 'alice', sessionName: 'run', expiresAt, issuedBy: 'ADMIN', policies: [] });

/** Calls of `command` the server has answered since its last CONFIG RESETSTAT (INFO commandstats). */
async function calls(command: string): Promise<number> {
  const match = new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(await raw.info('commandstats'));
  return match ? Number(match[1]) : 0;
}

/** The ids of the clients connected to the server (CLIENT LIST). */
async function clientIds(): Promise<Set<string>> {
  return new Set([...String(await raw.client('LIST')).matchAll(/^id=(\d+)/gm)].map((m) => m[1]!));
}

beforeAll(async () => {
  // Without redis-server, need() above has thrown in CI; elsewhere every describe below is skipped.
  if (haveRedis) {
    server = await startRedis();
    raw = new Redis(server.url);
  }
});

afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(toClose.splice(0).map((s) => s.close()));
});

afterAll(async () => {
  raw?.disconnect();
  await server?.stop();
});

describe.skipIf(!haveRedis)('every key under the prefix', () => {
  // An operator who shares one Redis between caskets (or with other programs)
  // confines each with an ACL key pattern (https://redis.io/docs/latest/operate/oss_and_stack/management/security/acl/#key-permissions):
  // a key outside the prefix is refused with NOPERM, so it fails the request that touched it.
  it.each([
    { given: 'a prefix of its own', prefix: fresh() as string | undefined, pattern: '' },
    { given: 'no prefix (the default, casket:)', prefix: undefined, pattern: 'casket:' },
  ])('given $given, a casket confined by a Redis ACL to the keys under it does everything it does', async ({ prefix, pattern }) => {
    const confined = prefix ?? pattern;
    const user = `casket-${randomBytes(3).toString('hex')}`;
    await raw.call('ACL', 'SETUSER', user, 'on', '>pw', `~${confined}*`, '+@all');
    const url = `redis://${user}:pw@127.0.0.1:${server!.port}`;
    // maxEntries 2: the third stamp evicts the first, which the script does under the prefix too.
    const state = await store({ url, limits: { ttlMs: 60_000, maxEntries: 2 }, ...(prefix !== undefined && { prefix }) });
    await state.recordRead('alice', 'b', 'k1', { etag: 'v1', size: 10, start: 0, end: 5 });
    await state.recordWrite('alice', 'b', 'k2', 'v1', 10);
    await state.recordWrite('alice', 'b', 'k3', 'v1', 10);
    await state.forgetStamp('alice', 'b', 'k3');
    expect((await state.listStamps('alice')).map((e) => e.key)).toEqual(['k2']);
    expect(await state.getStamp('alice', 'b', 'k1')).toBeUndefined();
    await state.appendWriteLog({ at: new Date(), bucket: 'b', key: 'k2', operation: 'PutObject', agent: 'alice', newETag: 'v1' });
    expect((await state.listWriteLog({ limit: 10 })).map((e) => e.key)).toEqual(['k2']);
    expect(await state.lastWrite('b', 'k2')).toMatchObject({ newETag: 'v1' });
    await state.putIndexedETag('b', 'k2', 'up', 'sha');
    expect(await state.getIndexedETag('b', 'k2', 'up')).toBe('sha');
    await state.recordCommittedWrite({ stamp: { agent: 'alice', made: { etag: 'v2', size: 3 } }, log: { at: new Date(), bucket: 'b', key: 'k4', operation: 'PutObject', agent: 'alice', newETag: 'v2' }, index: [{ bucket: 'b', key: 'k4', upstreamETag: 'up4', value: 'v2' }] });
    await state.recordCommittedWrite({ log: { at: new Date(), bucket: 'b', key: 'k5', operation: 'PutObject' }, index: [] });
    expect(await state.getIndexedETag('b', 'k4', 'up4')).toBe('v2');
    await state.putPartDigest('upload', { partNumber: 1, sha256: 'sha', md5: 'md5', size: 1 });
    expect(await state.getPartDigests('upload')).toHaveLength(1);
    await state.deletePartDigests('upload');
    await state.putSession(session('ASIACONFINED', Date.now() + 600_000));
    expect(await state.revokeSession('ASIACONFINED')).toBe(true);
    expect((await state.listSessions('alice')).map((s) => s.accessKeyId)).toEqual(['ASIACONFINED']);
  });
});

describe.skipIf(!haveRedis)('a committed write recorded in one script (recordCommittedWrite)', () => {
  it('records what the separate calls did: the index entries, the stamp, the log entry and the last write; a delete drops the stamp', async () => {
    const prefix = fresh();
    const state = await store({ prefix });
    await raw.config('RESETSTAT');
    const at = new Date();
    await state.recordCommittedWrite({
      stamp: { agent: 'alice', made: { etag: 'v1', size: 7 } },
      log: { at, bucket: 'b', key: 'k', operation: 'PutObject', agent: 'alice', newETag: 'v1' },
      index: [{ bucket: 'b', key: 'k', upstreamETag: 'up1', value: 'v1' }, { bucket: 'b', key: 'k', upstreamETag: 'up1#checksum', value: '{"checksum":"x"}' }],
    });
    // One command from casket: the script (EVAL the first time, EVALSHA after).
    expect((await calls('eval')) + (await calls('evalsha'))).toBe(1);
    expect(await calls('multi')).toBe(0);
    expect(await state.getStamp('alice', 'b', 'k')).toMatchObject({ etag: 'v1', size: 7, full: true, covered: [[0, 7]] });
    expect((await state.listStamps('alice')).map((e) => e.key)).toEqual(['k']);
    expect(await state.getIndexedETag('b', 'k', 'up1')).toBe('v1');
    expect(await state.getIndexedETag('b', 'k', 'up1#checksum')).toBe('{"checksum":"x"}');
    expect(await state.lastWrite('b', 'k')).toMatchObject({ newETag: 'v1', agent: 'alice', at });
    // Each index entry expires with the store's TTL, as putIndexedETag's.
    expect(await raw.pttl(`${prefix}etag-index:${JSON.stringify(['b', 'k', 'up1'])}`)).toBeGreaterThan(LIMITS.ttlMs - 5_000);
    await state.recordCommittedWrite({ stamp: { agent: 'alice', made: null }, log: { at: new Date(), bucket: 'b', key: 'k', operation: 'DeleteObject', agent: 'alice', previousETag: 'v1' }, index: [] });
    expect(await state.getStamp('alice', 'b', 'k')).toBeUndefined();
    expect(await state.listStamps('alice')).toEqual([]);
    // A person's write: no stamp anywhere, the log still newest first.
    await state.recordCommittedWrite({ log: { at: new Date(), bucket: 'b', key: 'j', operation: 'PutObject', newETag: 'v2' }, index: [] });
    expect((await state.listWriteLog({ limit: 10 })).map((e) => `${e.operation} ${e.key}`)).toEqual(['PutObject j', 'DeleteObject k', 'PutObject k']);
    expect(await raw.keys(`${prefix}stamp:*`)).toEqual([]);
  });
});

describe.skipIf(!haveRedis)('a command Redis refuses is an error, never a silent success', () => {
  // Another program's key in casket's space (WRONGTYPE): inside MULTI, Redis
  // runs the other commands and reports the failed one in EXEC's answer
  // (https://redis.io/docs/latest/develop/interact/transactions/#errors-inside-a-transaction).
  it('a write-log entry Redis could not append fails the append (the write is answered 503, not logged as made)', async () => {
    const prefix = fresh();
    await raw.set(`${prefix}write-log`, 'not a list');
    const state = await store({ prefix });
    await expect(state.appendWriteLog({ at: new Date(), bucket: 'b', key: 'k', operation: 'PutObject' })).rejects.toThrow(/WRONGTYPE/);
  });

  it("listing an agent's stamps reports Redis's own error for a stamp it cannot read", async () => {
    const prefix = fresh();
    const state = await store({ prefix });
    await state.recordWrite('alice', 'b', 'k', 'v1', 1);
    await raw.del(`${prefix}stamp:${JSON.stringify(['alice', 'b', 'k'])}`);
    await raw.set(`${prefix}stamp:${JSON.stringify(['alice', 'b', 'k'])}`, 'not a hash');
    await expect(state.listStamps('alice')).rejects.toThrow(/WRONGTYPE/);
  });
});

describe.skipIf(!haveRedis)('write-log paging and time bounds', () => {
  const entry = (key: string, at: number): WriteLogEntry => ({ at: new Date(at), bucket: 'b', key, operation: 'PutObject', agent: 'alice', newETag: `e-${key}` });

  it('a cursor is short and URL-safe: the entry\'s index, a dot, a 16-character base64url digest', async () => {
    // The console and admin API hand it out as `before=` in a query string.
    const state = await store({ prefix: fresh() });
    for (const key of ['k1', 'k2', 'k3']) await state.appendWriteLog(entry(key, Date.now()));
    const cursors = (await state.listWriteLog({ limit: 10 })).map((e) => e.cursor);
    expect(cursors).toHaveLength(3);
    for (const [i, cursor] of cursors.entries()) expect(cursor).toMatch(new RegExp(`^${i}\\.[A-Za-z0-9_-]{16}$`));
  });

  it('entries alike in every field (one write logged twice in a millisecond) are each paged once', async () => {
    const state = await store({ prefix: fresh() });
    const at = Date.now();
    // Newest first: twin, other, twin, first. The cursor names the older twin by content, and its index tells it from the newer.
    for (const e of [entry('first', at), entry('twin', at), entry('other', at), entry('twin', at)]) await state.appendWriteLog(e);
    const page1 = await state.listWriteLog({ limit: 3 });
    expect(page1.map((e) => e.key)).toEqual(['twin', 'other', 'twin']);
    expect((await state.listWriteLog({ limit: 3, before: page1[2]!.cursor! })).map((e) => e.key)).toEqual(['first']);
  });

  it('an entry exactly the TTL old is still listed; a millisecond older is not', async () => {
    const state = await store({ prefix: fresh() });
    const now = Date.now();
    await state.appendWriteLog(entry('older', now - LIMITS.ttlMs - 1));
    await state.appendWriteLog(entry('at-ttl', now - LIMITS.ttlMs));
    vi.spyOn(Date, 'now').mockReturnValue(now);
    expect((await state.listWriteLog({ limit: 10 })).map((e) => e.key)).toEqual(['at-ttl']);
  });

  it('since: an entry appended out of order by exactly the slack does not hide an older entry inside the window', async () => {
    // Entries are stamped when a write starts and appended when it ends, so the
    // log is in time order only to within LOG_ORDER_SLACK_MS (src/state/types.ts).
    const state = await store({ prefix: fresh(), limits: { ttlMs: 10 * 60_000, maxEntries: 1000 } });
    const since = Date.now() - 1000;
    await state.appendWriteLog(entry('in-window', since));
    await state.appendWriteLog(entry('slow-write', since - LOG_ORDER_SLACK_MS));
    expect((await state.listWriteLog({ since: new Date(since), limit: 10 })).map((e) => e.key)).toEqual(['in-window']);
  });

  it('since: the read stops at the first entry older than the window by more than the slack, however long the log behind it', async () => {
    // What a rollback lists (src/rollback/apply.ts): the last minutes of a log kept for an hour.
    const state = await store({ prefix: fresh(), limits: { ttlMs: 60 * 60_000, maxEntries: 5000 } });
    const now = Date.now();
    const n = 1200; // more than two of the store's 500-entry pages
    for (let i = 0; i < n; i++) await state.appendWriteLog(entry(`k${i}`, now - (n - i) * 1000));
    await raw.config('RESETSTAT');
    const listed = await state.listWriteLog({ since: new Date(now - 100_000), limit: 5000 });
    expect(listed.map((e) => e.key)).toEqual(Array.from({ length: 100 }, (_, i) => `k${n - 1 - i}`));
    expect(await calls('lrange')).toBe(1);
  });
});

describe.skipIf(!haveRedis)('STS sessions, to the millisecond', () => {
  it('a credential whose grace ends this very millisecond is forgotten, not an error', async () => {
    const state = await store({ prefix: fresh() });
    const now = Date.now();
    vi.spyOn(Date, 'now').mockReturnValue(now);
    // Its key would live 0 ms: Redis refuses SET … PX 0, so there is nothing to set.
    await state.putSession(session('ASIAZERO', now - SESSION_GRACE_MS));
    expect(await state.getSession('ASIAZERO')).toBeUndefined();
  });

  it('known up to SESSION_GRACE_MS past its expiry, that millisecond included, then not, though Redis still holds the key', async () => {
    // PX expiry is Redis's clock, to about a millisecond; casket checks the bound itself.
    const state = await store({ prefix: fresh() });
    const expiresAt = Date.now() + 60_000;
    await state.putSession(session('ASIAEDGE', expiresAt));
    const clock = vi.spyOn(Date, 'now').mockReturnValue(expiresAt + SESSION_GRACE_MS);
    expect(await state.getSession('ASIAEDGE')).toMatchObject({ accessKeyId: 'ASIAEDGE' });
    expect((await state.listSessions('alice')).map((s) => s.accessKeyId)).toEqual(['ASIAEDGE']);
    clock.mockReturnValue(expiresAt + SESSION_GRACE_MS + 1);
    expect(await state.getSession('ASIAEDGE')).toBeUndefined();
    expect(await state.listSessions('alice')).toEqual([]);
  });

  it('a credential that expires between revocation\'s read and its write is reported not revoked, and stays gone', async () => {
    const prefix = fresh();
    const state = await store({ prefix });
    await state.putSession(session('ASIARACE', Date.now() + 600_000));
    // The store's own connection: its GET answers, then Redis drops the key, as PX would.
    const connection = (state as unknown as { redis: Redis }).redis;
    const get = connection.get.bind(connection);
    vi.spyOn(connection, 'get').mockImplementation(async (key: RedisKey) => {
      const value = await get(key);
      await raw.del(key);
      return value;
    });
    expect(await state.revokeSession('ASIARACE')).toBe(false);
    expect(await raw.exists(`${prefix}session:ASIARACE`)).toBe(0);
  });
});

describe.skipIf(!haveRedis)('the connection', () => {
  it('closing the store ends its connection to Redis', async () => {
    const before = await clientIds();
    const state = await RedisStateStore.connect(server!.url, LIMITS, { prefix: fresh() });
    const mine = [...(await clientIds())].filter((id) => !before.has(id));
    expect(mine).toHaveLength(1);
    await state.close();
    await until(async () => !(await clientIds()).has(mine[0]!), 'the closed store to leave');
  });

  it('with no replicas asked (the default), a state change sends no WAIT', async () => {
    const state = await store({ prefix: fresh() });
    await raw.config('RESETSTAT');
    await state.recordWrite('alice', 'b', 'k', 'v1', 1);
    await state.appendWriteLog({ at: new Date(), bucket: 'b', key: 'k', operation: 'PutObject' });
    expect(await calls('wait')).toBe(0);
  });

  it('opening and closing leaves no timer behind to keep the process alive (a one-shot command exits at once)', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    const redis = await openRedis({ url: server!.url });
    await closeRedis(redis);
    await until(() => redis.status === 'end', 'the client to end');
    expect(timers()).toBeLessThanOrEqual(before);
  });

  describe('while Redis is down', () => {
    let down: RunningRedis;
    let redis: Redis;
    let delays: number[];
    beforeAll(async () => {
      down = await startRedis();
    });
    afterAll(async () => {
      await down?.stop();
    });
    afterEach(async () => {
      await closeRedis(redis);
      await down.start();
    });
    const goDown = async () => {
      redis = await openRedis({ url: down.url });
      delays = [];
      redis.on('reconnecting', (delay: number) => delays.push(delay));
      await down.stop();
    };

    it('casket tries again after 200 ms, then 400, then 600: never in a tight loop, never seconds at first', async () => {
      await goDown();
      await until(() => delays.length >= 3, 'three reconnection attempts');
      expect(delays.slice(0, 3)).toEqual([200, 400, 600]);
    });

    it('a command fails at once, without waiting for the next reconnection attempt', async () => {
      await goDown();
      await until(() => delays.length >= 2, 'a reconnection attempt 400 ms away');
      const started = Date.now();
      await expect(redis.get('k')).rejects.toThrow();
      expect(Date.now() - started).toBeLessThan(150);
    });

    it('nothing is printed: the failures reach callers as rejected commands', async () => {
      const printed = vi.spyOn(console, 'error').mockImplementation(() => {});
      await goDown();
      await until(() => delays.length >= 3, 'failed reconnection attempts');
      expect(printed).not.toHaveBeenCalled();
    });
  });
});
