/**
 * Retained versions in Redis (--state redis): every casket sharing the Redis
 * sees the same retained versions, so a refusal from one replica links a
 * diff another serves.
 *
 * Layout, under the state store's prefix (default `casket:`):
 *   retained:<name>     string, the content of a version of one key; <name>
 *                       is types.ts retainedName: `<sha256>.<sha256 of bucket/key>`
 *   retained            zset <name> by last touch (epoch ms, ties broken in
 *                       touch order: STAMP): oldest first
 *   retained:bytes      the bytes kept, kept in step by the scripts
 * Keep and touch are Lua scripts, one atomic step each (as in
 * state/redis.ts): add, expire past the TTL, and evict the oldest while over
 * the budget, with nothing interleaved — so replicas never double-count.
 * Known gap: as in state/redis.ts, the scripts touch keys they derive (the
 * blobs); on Redis Cluster use a prefix with a hash tag.
 *
 * Entries of a casket that kept versions by their ETag alone (members
 * without a dot) are never read, and leave with the TTL and the budget.
 *
 * With Sentinel it follows the primary like the state store
 * (state/redis-connection.ts) but waits for no replica: a retained version
 * lost in a failover costs a diff link on a later refusal, never a decision.
 */
import type { Redis } from 'ioredis';
import { closeRedis, openRedis, type RedisTarget } from '../state/redis-connection.js';
import { retainedName, sha256Hex, type Retention, type RetentionLimits, type VersionOf } from './types.js';

/**
 * A touch's score: its time, but always after every earlier touch's — two
 * touches in one millisecond would otherwise tie, and a zset orders ties by
 * member, not by when they came (the eviction order would be the hashes').
 * A thousandth of a millisecond apart is still exact at epoch-ms scale.
 */
const STAMP = `
local function stamp(z, now)
  local top = redis.call('ZRANGE', z, -1, -1, 'WITHSCORES')
  if #top == 2 and tonumber(top[2]) >= now then return tonumber(top[2]) + 0.001 end
  return now
end
`;

/** Drops everything older than the TTL, then the oldest until the total is within the budget. */
const EVICT = `
local function int(n) return string.format('%.0f', n) end
local function drop(member)
  local size = redis.call('STRLEN', prefix .. member)
  redis.call('DEL', prefix .. member)
  redis.call('ZREM', z, member)
  redis.call('DECRBY', total, size)
end
for _, member in ipairs(redis.call('ZRANGEBYSCORE', z, '-inf', '(' .. int(now - ttl))) do drop(member) end
while tonumber(redis.call('GET', total) or '0') > max do
  local head = redis.call('ZRANGE', z, 0, 0)
  if #head == 0 then redis.call('SET', total, 0) break end
  drop(head[1])
end
`;

/** KEYS: zset, total. ARGV: blob prefix, name (retainedName), content, now, ttl, max. */
const KEEP = `
local z, total = KEYS[1], KEYS[2]
local prefix, name, content = ARGV[1], ARGV[2], ARGV[3]
local now, ttl, max = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
${STAMP}
if not redis.call('ZSCORE', z, name) then
  redis.call('SET', prefix .. name, content)
  redis.call('INCRBY', total, #content)
end
redis.call('ZADD', z, stamp(z, now), name)
${EVICT}
return 1
`;

/** KEYS: zset, total. ARGV: blob prefix, name (retainedName), now, ttl, max. Returns 1 when kept. */
const TOUCH = `
local z, total = KEYS[1], KEYS[2]
local prefix, name = ARGV[1], ARGV[2]
local now, ttl, max = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
${STAMP}
${EVICT}
if name == '' or not redis.call('ZSCORE', z, name) then return 0 end
redis.call('ZADD', z, stamp(z, now), name)
return 1
`;

interface Scripts {
  keepRetained(...args: Array<string | number | Buffer>): Promise<number>;
  touchRetained(...args: Array<string | number>): Promise<number>;
}

export class RedisRetention implements Retention {
  private constructor(private readonly redis: Redis & Scripts, private readonly limits: RetentionLimits, private readonly prefix: string) {}

  static async connect(target: string | RedisTarget, limits: RetentionLimits, options: { prefix?: string } = {}): Promise<RedisRetention> {
    // Its own connection, with the same fail-fast, never-replay settings as the state store.
    const redis = await openRedis(typeof target === 'string' ? { url: target } : target);
    redis.defineCommand('keepRetained', { numberOfKeys: 2, lua: KEEP });
    redis.defineCommand('touchRetained', { numberOfKeys: 2, lua: TOUCH });
    return new RedisRetention(redis as Redis & Scripts, limits, `${options.prefix ?? 'casket:'}retained`);
  }

  private keys(): [string, string, string] {
    return [this.prefix, `${this.prefix}:bytes`, `${this.prefix}:`];
  }

  async keep(v: VersionOf, content: Buffer): Promise<void> {
    if (await this.touch(v)) return;
    if (sha256Hex(content) !== v.etag || content.length > this.limits.maxBytes) return;
    const [z, total, blobs] = this.keys();
    await this.redis.keepRetained(z, total, blobs, retainedName(v), content, Date.now(), this.limits.ttlMs, this.limits.maxBytes);
  }

  async touch(v: VersionOf): Promise<boolean> {
    return this.touchName(retainedName(v));
  }

  /** '' touches nothing: it only expires and evicts. */
  private async touchName(name: string): Promise<boolean> {
    const [z, total, blobs] = this.keys();
    return (await this.redis.touchRetained(z, total, blobs, name, Date.now(), this.limits.ttlMs, this.limits.maxBytes)) === 1;
  }

  async get(v: VersionOf): Promise<Buffer | undefined> {
    const [z, , blobs] = this.keys();
    const name = retainedName(v);
    const [score, content] = await Promise.all([this.redis.zscore(z, name), this.redis.getBuffer(blobs + name)]);
    if (score === null || content === null || Number(score) < Date.now() - this.limits.ttlMs) return undefined;
    return content;
  }

  async bytes(): Promise<number> {
    await this.touchName('');
    return Number((await this.redis.get(`${this.prefix}:bytes`)) ?? 0);
  }

  async close(): Promise<void> {
    await closeRedis(this.redis);
  }
}
