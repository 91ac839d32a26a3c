/**
 * The key gate of caskets that share Redis (--state redis): the semantics of
 * locks.ts KeyGate — a changeset holds its keys exclusively, a single write
 * holds its key shared for its check and commit, a read waits while a
 * changeset holds its key — kept in Redis, so a changeset committing through
 * one casket is isolated from reads and writes through every other (issue 39).
 *
 * Layout, under `casket:gate:` and <id> = JSON [bucket, key]:
 *   x:<id>   string: the changeset that holds (or is taking) the key, PX lease
 *   s:<id>   zset: single writes holding the key shared, scored by the (Redis
 *            server's) time their lease ends; PEXPIRE lease on every touch
 *
 * Each step is one Lua script (atomic: "While executing the script, all server
 * activities are blocked", https://redis.io/docs/latest/develop/interact/programmability/eval-intro/),
 * timed by the server's TIME so caskets' clocks need not agree (Redis 7
 * replicates scripts by their effects, so TIME is allowed in a script that writes).
 *
 *   - exclusive: SET x:<id> to the changeset id unless another holds it, then
 *     wait until no unexpired shared hold is left in s:<id>. The claim is made
 *     first, so new single writes and reads wait from then on (no writer
 *     starvation). Keys are taken in sorted order: no deadlock between
 *     changesets, and a single write holds one key and waits for nothing
 *     while it holds it.
 *   - shared: ZADD to s:<id> unless x:<id> exists; released by ZREM.
 *   - settled (GetObject, HeadObject): EXISTS x:<id>, polled until it is gone.
 *
 * Leases: every hold lasts LEASE_MS (10 s) from its last renewal and is
 * renewed every LEASE_MS / 4 while held, so a casket killed while it holds
 * keys frees them within 10 s. Waits poll (5 ms, doubling to 50 ms) and are
 * bounded like KeyGate's: 10 s, then 503 SlowDown, holding nothing.
 *
 * Fencing: a changeset's hold knows when it last had every lease confirmed;
 * before each entry is written, `fence()` throws LeaseLost unless that was
 * less than the lease ago (minus a margin), measured on this process's
 * monotonic clock — no round trip. A holder stalled past its lease writes no
 * further entry; and every entry is committed under If-Match of the version
 * checked (commit.ts), so a write that slipped in after a lapse refuses the
 * entry rather than being overwritten.
 *
 * Redis down: a changeset cannot take its keys and is answered 503, nothing
 * written. Reads and single writes go ahead unchecked (logged once per
 * outage), as docs/design.md §4 has them do while the state store is away (a
 * person's write is still checked atomically by the backend; an agent's is
 * refused 503 for want of its read stamp): the price is isolation from a
 * changeset that was already applying through another casket when Redis went
 * down — its renewals fail, so it stops within its lease (fence), and a single
 * write that lands on one of its keys meanwhile refuses that entry (If-Match):
 * the changeset answers 500 and its intent is kept.
 *
 * Cost when no changeset is anywhere: a read adds one EXISTS (median 45 µs on
 * 127.0.0.1); a single write one script call before its check (80 µs with
 * its release) and one ZREM after, not waited for by the answer.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from '../log.js';
import { closeRedis, openRedis, type RedisTarget } from '../state/redis-connection.js';
import { stateUnavailable } from '../state/unavailable.js';
import { S3Error } from '../vocabulary/errors.js';
import { DEFAULT_WAIT_MS, LeaseLost, type ExclusiveHold, type Gate } from './locks.js';

/** How long a hold lasts without renewal: a killed casket's keys are free again after at most this. */
export const LEASE_MS = 10_000;

/** Lua: milliseconds on the server's clock. */
const NOW = `local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/** KEYS x, s. ARGV token, leaseMs, renew ('1': only if still held). 1 held, 0 not (a changeset holds the key, or a renewal found it lapsed). */
const SHARED = `
${NOW}
if ARGV[3] == '1' then
  if not redis.call('ZSCORE', KEYS[2], ARGV[1]) then return 0 end
elseif redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1
`;

/** KEYS x, s. ARGV token, leaseMs. -1: another changeset holds the key; else the shared holds still in (0: held). */
const EXCLUSIVE = `
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return -1 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
${NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
return redis.call('ZCARD', KEYS[2])
`;

/** KEYS every x. ARGV token, leaseMs. How many were still this token's (and are renewed). */
const RENEW = `
local n = 0
for _, k in ipairs(KEYS) do
  if redis.call('GET', k) == ARGV[1] then
    redis.call('PEXPIRE', k, ARGV[2])
    n = n + 1
  end
end
return n
`;

/** KEYS every x. ARGV token. Deletes those still this token's. */
const RELEASE = `
for _, k in ipairs(KEYS) do
  if redis.call('GET', k) == ARGV[1] then redis.call('DEL', k) end
end
return 0
`;

interface Scripts {
  gateShared(x: string, s: string, token: string, leaseMs: number, renew: string): Promise<number>;
  gateExclusive(x: string, s: string, token: string, leaseMs: number): Promise<number>;
  gateRenew(...keysAndArgs: Array<string | number>): Promise<number>;
  gateRelease(...keysAndArgs: Array<string | number>): Promise<number>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function slowDown(what: string, waitMs: number): S3Error {
  return new S3Error('SlowDown', `${what} waited ${waitMs} ms for a changeset on the same key to finish: try again.`);
}

export interface RedisGateOptions {
  leaseMs?: number;
  waitMs?: number;
  prefix?: string;
}

export class RedisKeyGate implements Gate {
  private readonly leaseMs: number;
  private readonly waitMs: number;
  private readonly prefix: string;
  /** Reads and writes let through unchecked while Redis does not answer: logged once until it answers again. */
  private outage = false;

  private constructor(private readonly redis: Redis & Scripts, private readonly log: Logger, options: RedisGateOptions) {
    this.leaseMs = options.leaseMs ?? LEASE_MS;
    this.waitMs = options.waitMs ?? DEFAULT_WAIT_MS;
    this.prefix = options.prefix ?? 'casket:gate:';
  }

  /** Its own connection (redis-connection.ts: Sentinel, no replay): a poll never queues behind the state store's commands. */
  static async connect(target: RedisTarget, log: Logger, options: RedisGateOptions = {}): Promise<RedisKeyGate> {
    const redis = await openRedis(target);
    redis.defineCommand('gateShared', { numberOfKeys: 2, lua: SHARED });
    redis.defineCommand('gateExclusive', { numberOfKeys: 2, lua: EXCLUSIVE });
    redis.defineCommand('gateRenew', { lua: RENEW });
    redis.defineCommand('gateRelease', { lua: RELEASE });
    return new RedisKeyGate(redis as Redis & Scripts, log, options);
  }

  private x(bucket: string, key: string): string {
    return `${this.prefix}x:${JSON.stringify([bucket, key])}`;
  }

  private s(bucket: string, key: string): string {
    return `${this.prefix}s:${JSON.stringify([bucket, key])}`;
  }

  /** Polls `ready` (5 ms, doubling to 50 ms) until it holds or waitMs passed (then SlowDown). */
  private async poll(ready: () => Promise<boolean>, what: string): Promise<void> {
    const deadline = performance.now() + this.waitMs;
    for (let pause = 5; !(await ready()); pause = Math.min(pause * 2, 50)) {
      if (performance.now() >= deadline) throw slowDown(what, this.waitMs);
      await sleep(pause);
    }
  }

  async shared(bucket: string, key: string): Promise<() => void> {
    const x = this.x(bucket, key);
    const s = this.s(bucket, key);
    const token = randomUUID();
    try {
      await this.poll(async () => (await this.redis.gateShared(x, s, token, this.leaseMs, '0')) === 1, 'The write');
    } catch (e) {
      if (e instanceof S3Error) throw e;
      // Redis does not answer: the write goes ahead unchecked (see the file comment).
      this.unchecked(e);
      return () => {};
    }
    this.answering();
    // A long write (a large body streaming) keeps its hold.
    const renewal = setInterval(() => void this.redis.gateShared(x, s, token, this.leaseMs, '1').catch(() => {}), this.leaseMs / 4).unref();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      clearInterval(renewal);
      // Not waited for: the answer does not depend on it, and a ZREM lost to an outage expires with the lease.
      void this.redis.zrem(s, token).catch(() => {});
    };
  }

  async settled(bucket: string, key: string): Promise<void> {
    const x = this.x(bucket, key);
    try {
      await this.poll(async () => (await this.redis.exists(x)) === 0, 'The read');
      this.answering();
    } catch (e) {
      if (e instanceof S3Error) throw e;
      this.unchecked(e);
    }
  }

  private unchecked(err: unknown): void {
    if (!this.outage) this.log.warn({ err }, 'changeset gate: Redis does not answer; reads and single writes go ahead without waiting for changesets until it does');
    this.outage = true;
  }

  private answering(): void {
    if (this.outage) this.log.info('changeset gate: Redis answers again');
    this.outage = false;
  }

  async exclusive(keys: ReadonlyArray<{ bucket: string; key: string }>, owner: string): Promise<ExclusiveHold> {
    const ids = [...new Set(keys.map((k) => JSON.stringify([k.bucket, k.key])))].sort();
    const taken: string[] = [];
    /** When the last renewal that found every lease still ours was sent (monotonic). */
    let confirmedAt = -Infinity;
    let lost = false;
    let released = false;
    const renew = async () => {
      if (taken.length === 0) return;
      const sent = performance.now();
      const count = taken.length;
      try {
        const n = await this.redis.gateRenew(count, ...taken, owner, this.leaseMs);
        if (n === count) confirmedAt = sent;
        else lost = true;
      } catch {
        // Not confirmed: fence() stops writing once the lease may have lapsed.
      }
    };
    const renewal = setInterval(() => void renew(), this.leaseMs / 4).unref();
    const release = () => {
      if (released) return;
      released = true;
      clearInterval(renewal);
      if (taken.length > 0) void this.redis.gateRelease(taken.length, ...taken, owner).catch(() => {});
    };
    try {
      for (const id of ids) {
        const [bucket, key] = JSON.parse(id) as [string, string];
        const x = this.x(bucket, key);
        const s = this.s(bucket, key);
        let claimed = false;
        await this.poll(async () => {
          const left = await this.redis.gateExclusive(x, s, owner, this.leaseMs);
          if (left >= 0 && !claimed) {
            claimed = true;
            taken.push(x);
          }
          return left === 0;
        }, 'The changeset');
      }
      // Taken one after another: renew all now, so the first is not older than the last.
      await renew();
      if (lost || confirmedAt === -Infinity) throw new Error('the changeset\'s leases could not be confirmed');
    } catch (e) {
      release();
      if (e instanceof S3Error) throw e;
      throw stateUnavailable(e);
    }
    // A margin for the time between this check and the write reaching the backend.
    const margin = Math.min(2000, this.leaseMs / 4);
    return {
      release,
      fence: () => {
        if (lost || released || performance.now() - confirmedAt > this.leaseMs - margin) throw new LeaseLost(owner);
      },
    };
  }

  async close(): Promise<void> {
    await closeRedis(this.redis);
  }
}
