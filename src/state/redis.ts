/**
 * Redis state store, for several casket replicas sharing one view of who read
 * what (docs/design.md §4). boto3, awscli and rclone download a large object as ~10
 * concurrent Range GETs, and behind a load balancer those land on different
 * replicas: each replica merges its range into the same stamp at once.
 *
 * Why a Lua script, not WATCH/MULTI: the ranged GETs of one download all
 * contend on the same stamp key by design, so optimistic WATCH/MULTI would
 * abort and retry under exactly the common load (n concurrent merges cost
 * O(n²) round trips). A script runs as one step: "Redis guarantees the
 * script's atomic execution. While executing the script, all server activities
 * are blocked during its entire runtime"
 * (https://redis.io/docs/latest/develop/interact/programmability/eval-intro/).
 * So the read-merge-write of a stamp, its expiry and the entry-cap trim happen
 * in one round trip with nothing interleaved. ioredis `defineCommand` sends it
 * with EVALSHA and falls back to EVAL when the server has not cached it yet
 * (a restart, a failover, a fresh replica).
 *
 * The merge in Lua is a port of read-coverage.ts: intervals [start, end)
 * sorted and merged (touching intervals join), full when one interval covers
 * [0, size) or size is 0, and a read of another ETag starts fresh. Keep the
 * two in step; the contract suite in test/state runs both.
 *
 * Layout, under a prefix (default `casket:`) so several caskets can share one
 * Redis:
 *   stamp:<id>          hash etag/size/full/covered/at, PEXPIRE ttl on every touch
 *   stamps              zset <id> by touch order (a counter, so ties in the same
 *                       millisecond keep their order): the entry cap trims its head
 *   stamps:seq          that counter
 *   agent:<agent>       zset <id> by touch time: listStamps without SCAN
 *   write-log           list of JSON entries, newest first, LPUSH + LTRIM to maxEntries
 *   last-write:<json>   string, PX ttl: the newest write-log entry of JSON [bucket, key]
 *   etag-index:<json>   string, PX ttl: one key per (bucket, key, upstream ETag), so
 *                       each entry expires on its own (hash fields expire only in 7.4+)
 *   parts:<uploadId>    hash `<partNumber> <md5>` -> `<seq> <JSON digest>`, and `seq`
 *                       the counter that orders the digests of one part number
 *                       (PUT_PART_DIGEST); PEXPIRE ttl on every put. Older caskets
 *                       wrote `<partNumber>` -> `<JSON digest>`: read as oldest.
 *   session:<accessKey> string, JSON SessionRecord, PX until SESSION_GRACE_MS past
 *                       its expiry (STS credentials every replica honours)
 *   console-revoked:<id> string, PX until the console session's own expiry: a
 *                       logout every replica honours (console/session.ts)
 * where <id> = JSON [agent, bucket, key], unambiguous whatever the names hold.
 *
 * Known gaps: the stamp script also deletes the stamps it evicts and removes
 * them from their agents' sets, keys it derives rather than receives in KEYS.
 * The EVAL page asks scripts not to do that; it works on a standalone Redis or
 * Sentinel, and on Redis Cluster only when every key shares one hash slot: use
 * a prefix with a hash tag, such as `{casket}:`. The ETag index is bounded by
 * its TTL only, not by maxEntries.
 *
 * A down Redis must not hang a request: no offline queue (commands fail at
 * once while disconnected), no retry or resend after a reconnect, and connect and command
 * timeouts, so every call settles within a few seconds (redis-connection.ts,
 * which also follows a Sentinel group's primary through a failover).
 *
 * Durability across a failover (docs/design.md §11). Redis replicates asynchronously:
 * a primary answers a write before any replica has it, and a failover then
 * promotes a replica without it ("Redis uses asynchronous replication … the
 * master will not wait every time for a command to be processed by the
 * replicas", https://redis.io/docs/latest/operate/oss_and_stack/management/replication/).
 * So with `replication.replicas` > 0, every state change is followed on the
 * same connection by WAIT (https://redis.io/docs/latest/commands/wait/) and
 * counts as made only once that many replicas hold it; fewer in time is an
 * error like Redis being down (503 before a commit, state/unavailable.ts).
 * And the read that precedes an agent's commit — its read stamp, `getStamp`,
 * guard/guard.ts — waits too: a write goes ahead only while a replica has
 * confirmed everything this casket recorded, its read stamps included, so
 * during an election, or with no replica in sync, an agent's write is refused
 * before it reaches the backend. Sentinel promotes the replica with the
 * largest replication offset ("replica selection", sentinel page), which holds
 * every change WAIT confirmed on any replica. WAIT does not make Redis
 * strongly consistent (the WAIT page says so); what it buys is that an
 * acknowledged change is on a second machine before the answer leaves.
 */
import { createHash } from 'node:crypto';
import { type ChainableCommander, type Redis } from 'ioredis';
import { compareKeys } from '../vocabulary/names.js';
import { closeRedis, confirmReplicated, openRedis, type RedisTarget, type Replication } from './redis-connection.js';
import { SESSION_GRACE_MS, type CommittedWrite, type OAuthGrant, type SessionRecord } from './types.js';
import { inWindow, LOG_ORDER_SLACK_MS, type PartDigest, type ReadEvent, type ReadStamp, type StampEntry, type StateLimits, type StateStore, type WriteLogEntry, type WriteLogQuery } from './types.js';

/**
 * touch(): a stamp's read-merge-write, its expiry and the entry-cap trim.
 * Keys: stamp key, stamps zset, stamps counter, agent zset. mode 'read'
 * merges [rstart, rend), 'write' sets a full stamp. Returns the stamp as
 * { etag, size, full ('1'/'0'), covered, at }.
 */
const TOUCH = `
-- Lua 5.1 prints large numbers as 1.7e+12; byte offsets and epoch ms need all digits.
local function int(n) return string.format('%.0f', n) end

local function touch(stampKey, byTouch, seqKey, ofAgent, id, mode, etag, size, rstart, rend, now, ttl, cap, prefix)

local intervals = {}
if mode == 'read' then
  -- An expired stamp is already gone (PEXPIRE), so it starts fresh like another version.
  local previous = redis.call('HMGET', stampKey, 'etag', 'covered')
  if previous[1] == etag and previous[2] then
    for s, e in string.gmatch(previous[2], '(%d+)-(%d+)') do
      intervals[#intervals + 1] = { tonumber(s), tonumber(e) }
    end
  end
  if rend > rstart then intervals[#intervals + 1] = { rstart, rend } end
end

table.sort(intervals, function(a, b) return a[1] < b[1] end)
local merged = {}
for _, interval in ipairs(intervals) do
  local last = merged[#merged]
  if last and interval[1] <= last[2] then
    if interval[2] > last[2] then last[2] = interval[2] end
  else
    merged[#merged + 1] = { interval[1], interval[2] }
  end
end

local full = mode == 'write' or size == 0 or (#merged == 1 and merged[1][1] <= 0 and merged[1][2] >= size)
if full then merged = { { 0, size } } end
local parts = {}
for i, interval in ipairs(merged) do parts[i] = int(interval[1]) .. '-' .. int(interval[2]) end
local covered = table.concat(parts, ',')
local fullFlag = full and '1' or '0'

redis.call('HSET', stampKey, 'etag', etag, 'size', int(size), 'full', fullFlag, 'covered', covered, 'at', int(now))
redis.call('PEXPIRE', stampKey, ttl)

local seq = redis.call('INCR', seqKey)
redis.call('ZADD', byTouch, seq, id)
redis.call('PEXPIRE', byTouch, ttl)
redis.call('PEXPIRE', seqKey, ttl)
redis.call('ZADD', ofAgent, int(now), id)
redis.call('ZREMRANGEBYSCORE', ofAgent, '-inf', '(' .. int(now - tonumber(ttl)))
redis.call('PEXPIRE', ofAgent, ttl)

-- Entry cap: forget the least recently touched stamps (some may have expired already).
local over = redis.call('ZCARD', byTouch) - cap
if over > 0 then
  local evicted = redis.call('ZRANGE', byTouch, 0, over - 1)
  for _, old in ipairs(evicted) do
    redis.call('DEL', prefix .. 'stamp:' .. old)
    redis.call('ZREM', prefix .. 'agent:' .. cjson.decode(old)[1], old)
  end
  redis.call('ZREMRANGEBYRANK', byTouch, 0, over - 1)
end

return { etag, int(size), fullFlag, covered, int(now) }
end
`;

/**
 * KEYS: stamp key, stamps zset, stamps counter, agent zset.
 * ARGV: id, mode ('read' merges, 'write' sets a full stamp), etag, size, start,
 * end, now, ttlMs, maxEntries, prefix.
 */
const TOUCH_STAMP = `${TOUCH}
return touch(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], ARGV[2], ARGV[3],
  tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8], tonumber(ARGV[9]), ARGV[10])
`;

/**
 * Everything a committed write records, as one script (issue 42: one round
 * trip per write, not one per record; StateStore.recordCommittedWrite).
 * KEYS: write log, the key's last-write, stamp key, stamps zset, stamps
 * counter, agent zset (the four stamp keys unused, yet named, without an
 * agent), then one key per ETag-index entry.
 * ARGV: stamp ('write', 'forget' or 'none'), id, etag, size, now, ttlMs,
 * maxEntries, prefix, the log entry's JSON, then each index entry's value.
 */
const RECORD_WRITE = `${TOUCH}
local ttl, cap = ARGV[6], tonumber(ARGV[7])
for i = 7, #KEYS do
  redis.call('SET', KEYS[i], ARGV[i + 3], 'PX', ttl)
end
if ARGV[1] == 'write' then
  touch(KEYS[3], KEYS[4], KEYS[5], KEYS[6], ARGV[2], 'write', ARGV[3], tonumber(ARGV[4]), 0, tonumber(ARGV[4]), tonumber(ARGV[5]), ttl, cap, ARGV[8])
elseif ARGV[1] == 'forget' then
  redis.call('DEL', KEYS[3])
  redis.call('ZREM', KEYS[4], ARGV[2])
  redis.call('ZREM', KEYS[6], ARGV[2])
end
redis.call('LPUSH', KEYS[1], ARGV[9])
redis.call('LTRIM', KEYS[1], 0, cap - 1)
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('SET', KEYS[2], ARGV[9], 'PX', ttl)
`;

/**
 * KEYS: the upload's parts hash. ARGV: field `<partNumber> <md5>`, JSON
 * digest, ttlMs. One step, so the counter orders the digests as recorded.
 */
const PUT_PART_DIGEST = `
local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
redis.call('HSET', KEYS[1], ARGV[1], seq .. ' ' .. ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
`;

/**
 * swapOAuthSecret: compare the grant's secretHash and replace it in one
 * step, so two replicas redeeming the same refresh token cannot both win.
 * KEYS[1] grant; ARGV expected, next, usedAt, expiresAt (epoch ms).
 */
const SWAP_OAUTH_SECRET = `
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local g = cjson.decode(raw)
if g.secretHash ~= ARGV[1] then return 0 end
g.secretHash = ARGV[2]
g.pendingCode = false
g.lastUsedAt = tonumber(ARGV[3])
g.expiresAt = tonumber(ARGV[4])
local ttl = tonumber(ARGV[4]) - tonumber(ARGV[3])
if ttl < 1 then ttl = 1 end
redis.call('SET', KEYS[1], cjson.encode(g), 'PX', ttl)
return 1
`;

interface Scripts {
  touchStamp(...keysAndArgs: Array<string | number>): Promise<string[]>;
  recordWrite(numberOfKeys: number, ...keysAndArgs: Array<string | number>): Promise<unknown>;
  putPartDigest(...keysAndArgs: Array<string | number>): Promise<unknown>;
  swapOAuthSecret(...keysAndArgs: Array<string | number>): Promise<number>;
}

/** A write-log entry as JSON in Redis: the time as epoch ms. */
type StoredLogEntry = Omit<WriteLogEntry, 'at'> & { at: number };

/** Names one write-log entry in a paging cursor (listWriteLog): its time and content make it unique in practice. */
function logDigest(row: string): string {
  return createHash('sha256').update(row).digest('base64url').slice(0, 16);
}

/**
 * MULTI reports a failed command inside its result, not as a rejection. EXEC
 * answers null only when a WATCHed key changed, and casket watches none.
 */
async function exec(transaction: ChainableCommander): Promise<void> {
  for (const [error] of (await transaction.exec())!) if (error) throw error;
}

function parseCovered(text: string): Array<[number, number]> {
  if (text === '') return [];
  return text.split(',').map((pair) => {
    const [start, end] = pair.split('-');
    return [Number(start), Number(end)];
  });
}

function toStamp(fields: Record<string, string>): ReadStamp | undefined {
  if (fields.etag === undefined) return undefined;
  // TOUCH_STAMP sets all five fields in one HSET: a stamp with an etag has the rest.
  return { etag: fields.etag, size: Number(fields.size), full: fields.full === '1', covered: parseCovered(fields.covered!), at: Number(fields.at) };
}

export class RedisStateStore implements StateStore {
  private constructor(
    private readonly redis: Redis & Scripts,
    private readonly limits: StateLimits,
    private readonly prefix: string,
    private readonly replication: Replication,
  ) {}

  static async connect(target: string | RedisTarget, limits: StateLimits, options: { prefix?: string; replication?: Replication } = {}): Promise<RedisStateStore> {
    const redis = await openRedis(typeof target === 'string' ? { url: target } : target);
    redis.defineCommand('touchStamp', { numberOfKeys: 4, lua: TOUCH_STAMP });
    redis.defineCommand('putPartDigest', { numberOfKeys: 1, lua: PUT_PART_DIGEST });
    // The number of keys varies (one per index entry): given with each call.
    redis.defineCommand('recordWrite', { lua: RECORD_WRITE });
    redis.defineCommand('swapOAuthSecret', { numberOfKeys: 1, lua: SWAP_OAUTH_SECRET });
    return new RedisStateStore(redis as Redis & Scripts, limits, options.prefix ?? 'casket:', options.replication ?? { replicas: 0, timeoutMs: 0 });
  }

  /**
   * `change` (a plain command or MULTI, already sent), then WAIT right
   * behind it on the same connection: both leave together, so the wait costs
   * the replica's acknowledgement and no round trip of casket's own.
   */
  private async durable<T>(change: Promise<T>): Promise<T> {
    const [result] = await Promise.all([change, confirmReplicated(this.redis, this.replication)]);
    return result;
  }

  /**
   * A script, then WAIT once it has been answered. Not pipelined: a script
   * the server has not cached (a fresh primary, just after a failover) fails
   * EVALSHA and is sent again as EVAL after that answer, and a WAIT sent
   * before it would cover nothing of it.
   */
  private async durableScript<T>(script: Promise<T>): Promise<T> {
    const result = await script;
    await confirmReplicated(this.redis, this.replication);
    return result;
  }

  private id(agent: string, bucket: string, key: string): string {
    return JSON.stringify([agent, bucket, key]);
  }

  private async touch(mode: 'read' | 'write', agent: string, bucket: string, key: string, etag: string, size: number, start: number, end: number): Promise<ReadStamp> {
    const id = this.id(agent, bucket, key);
    const p = this.prefix;
    const [storedETag, storedSize, full, covered, at] = await this.durableScript(this.redis.touchStamp(
      `${p}stamp:${id}`, `${p}stamps`, `${p}stamps:seq`, `${p}agent:${agent}`,
      id, mode, etag, size, start, end, Date.now(), this.limits.ttlMs, this.limits.maxEntries, p,
    ));
    return { etag: storedETag!, size: Number(storedSize), full: full === '1', covered: parseCovered(covered!), at: Number(at) };
  }

  async recordRead(agent: string, bucket: string, key: string, read: ReadEvent): Promise<ReadStamp> {
    return this.touch('read', agent, bucket, key, read.etag, read.size, read.start, read.end);
  }

  async recordWrite(agent: string, bucket: string, key: string, etag: string, size: number): Promise<void> {
    await this.touch('write', agent, bucket, key, etag, size, 0, size);
  }

  /**
   * The stamp an agent's write is judged by, before its commit: WAIT too
   * (see the file comment), so no agent write is let through while what this
   * casket recorded is on no replica.
   */
  async getStamp(agent: string, bucket: string, key: string): Promise<ReadStamp | undefined> {
    return toStamp(await this.durable(this.redis.hgetall(`${this.prefix}stamp:${this.id(agent, bucket, key)}`)));
  }

  async listStamps(agent: string): Promise<StampEntry[]> {
    const ids = await this.redis.zrangebyscore(`${this.prefix}agent:${agent}`, Date.now() - this.limits.ttlMs, '+inf');
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.hgetall(`${this.prefix}stamp:${id}`);
    // A pipeline (no MULTI) answers one reply per command, and an empty one [] without a round trip.
    const replies = (await pipeline.exec())!;
    const out: StampEntry[] = [];
    ids.forEach((id, i) => {
      const [error, fields] = replies[i]!;
      if (error) throw error;
      const stamp = toStamp(fields as Record<string, string>);
      // Missing: expired or evicted since the agent set was last trimmed.
      if (!stamp) return;
      const [, bucket, key] = JSON.parse(id) as [string, string, string];
      out.push({ bucket, key, stamp });
    });
    // In the order S3 and the other stores list keys: UTF-8 binary, not JavaScript's UTF-16 `<`.
    return out.sort((x, y) => compareKeys(x.bucket, y.bucket) || compareKeys(x.key, y.key));
  }

  async forgetStamp(agent: string, bucket: string, key: string): Promise<void> {
    const id = this.id(agent, bucket, key);
    const p = this.prefix;
    await this.durable(exec(this.redis.multi().del(`${p}stamp:${id}`).zrem(`${p}stamps`, id).zrem(`${p}agent:${agent}`, id)));
  }

  async recordCommittedWrite(write: CommittedWrite): Promise<void> {
    const p = this.prefix;
    const { log, stamp, index } = write;
    const agent = stamp?.agent ?? '';
    const id = this.id(agent, log.bucket, log.key);
    const stored: StoredLogEntry = { ...log, at: log.at.getTime() };
    const keys = [
      `${p}write-log`,
      `${p}last-write:${JSON.stringify([log.bucket, log.key])}`,
      `${p}stamp:${id}`, `${p}stamps`, `${p}stamps:seq`, `${p}agent:${agent}`,
      ...index.map((e) => this.indexKey(e.bucket, e.key, e.upstreamETag)),
    ];
    const mode = !stamp ? 'none' : stamp.made ? 'write' : 'forget';
    await this.durableScript(this.redis.recordWrite(
      keys.length, ...keys,
      mode, id, stamp?.made?.etag ?? '', stamp?.made?.size ?? 0, Date.now(), this.limits.ttlMs, this.limits.maxEntries, p, JSON.stringify(stored),
      ...index.map((e) => e.value),
    ));
  }

  async appendWriteLog(entry: WriteLogEntry): Promise<void> {
    const stored: StoredLogEntry = { ...entry, at: entry.at.getTime() };
    const log = `${this.prefix}write-log`;
    const json = JSON.stringify(stored);
    const last = `${this.prefix}last-write:${JSON.stringify([entry.bucket, entry.key])}`;
    await this.durable(exec(this.redis.multi().lpush(log, json).ltrim(log, 0, this.limits.maxEntries - 1).pexpire(log, this.limits.ttlMs).set(last, json, 'PX', this.limits.ttlMs)));
  }

  async lastWrite(bucket: string, key: string): Promise<WriteLogEntry | undefined> {
    const json = await this.redis.get(`${this.prefix}last-write:${JSON.stringify([bucket, key])}`);
    if (json === null) return undefined;
    const e = JSON.parse(json) as StoredLogEntry;
    return { ...e, at: new Date(e.at) };
  }

  async listWriteLog(q: WriteLogQuery): Promise<WriteLogEntry[]> {
    const cutoff = Date.now() - this.limits.ttlMs;
    const log = `${this.prefix}write-log`;
    const out: WriteLogEntry[] = [];
    // Unfiltered, a page of the limit is all the answer needs (the reminders of
    // src/changes/since-read.ts ask on every agent call); filtered, big pages.
    const page = q.bucket === undefined && q.key === undefined && q.prefix === undefined && q.agent === undefined ? Math.min(500, Math.max(q.limit, 1)) : 500;
    // The list is pushed at its head, so an entry's index only grows: a
    // cursor is `<index when listed>.<digest of the entry>`, and the next page
    // looks for that entry from that index on, then reads past it.
    let start = 0;
    let anchor: string | undefined;
    if (q.before !== undefined) {
      const [index, digest] = q.before.split('.');
      start = Number(index) || 0;
      // Stryker disable next-line StringLiteral: a cursor without '.' lists nothing: no 16-character base64url digest equals this string, whatever it is
      anchor = digest ?? '';
    }
    // Newest first; filters applied here, so read pages until the limit is met,
    // the TTL is passed or the list ends.
    // Stryker disable next-line EqualityOperator: `<` and `<=` differ only at limit 0, which no caller asks for (admin.ts and console/api.ts clamp it to at least 1, the rest pass constants); the loop returns at the limit itself
    for (let offset = start; out.length < q.limit; offset += page) {
      const rows = await this.redis.lrange(log, offset, offset + page - 1);
      for (const [i, row] of rows.entries()) {
        if (anchor !== undefined) {
          if (logDigest(row) === anchor) anchor = undefined;
          continue;
        }
        const e = JSON.parse(row) as StoredLogEntry;
        if (e.at < cutoff || (q.since !== undefined && e.at < q.since.getTime() - LOG_ORDER_SLACK_MS)) return out;
        if ((q.bucket === undefined || e.bucket === q.bucket) && (q.key === undefined || e.key === q.key) && (q.prefix === undefined || e.key.startsWith(q.prefix)) && (q.agent === undefined || e.agent === q.agent) && inWindow(e, q)) {
          out.push({ ...e, at: new Date(e.at), cursor: `${offset + i}.${logDigest(row)}` });
          if (out.length >= q.limit) return out;
        }
      }
      if (rows.length < page) break;
    }
    return out;
  }

  private indexKey(bucket: string, key: string, upstreamETag: string): string {
    return `${this.prefix}etag-index:${JSON.stringify([bucket, key, upstreamETag])}`;
  }

  async getIndexedETag(bucket: string, key: string, upstreamETag: string): Promise<string | undefined> {
    return (await this.redis.get(this.indexKey(bucket, key, upstreamETag))) ?? undefined;
  }

  async getIndexedETags(bucket: string, entries: ReadonlyArray<readonly [key: string, upstreamETag: string]>): Promise<Array<string | undefined>> {
    if (entries.length === 0) return [];
    // One MGET, one round trip (a Cluster needs a hash-tagged prefix, as above).
    const values = await this.redis.mget(...entries.map(([key, upstreamETag]) => this.indexKey(bucket, key, upstreamETag)));
    return values.map((v) => v ?? undefined);
  }

  async putIndexedETag(bucket: string, key: string, upstreamETag: string, etag: string): Promise<void> {
    await this.durable(this.redis.set(this.indexKey(bucket, key, upstreamETag), etag, 'PX', this.limits.ttlMs));
  }

  async putPartDigest(uploadId: string, part: PartDigest): Promise<void> {
    const { partNumber, ...digest } = part;
    await this.durableScript(this.redis.putPartDigest(`${this.prefix}parts:${uploadId}`, `${partNumber} ${part.md5}`, JSON.stringify(digest), this.limits.ttlMs));
  }

  async getPartDigests(uploadId: string): Promise<PartDigest[]> {
    const fields = await this.redis.hgetall(`${this.prefix}parts:${uploadId}`);
    const recorded: Array<{ seq: number; part: PartDigest }> = [];
    for (const [field, value] of Object.entries(fields)) {
      if (field === 'seq') continue; // the counter; every other field starts with a part number
      // `<seq> <JSON>`; an older casket's plain `<JSON>` is older than any.
      const space = value.indexOf(' ');
      const [seq, json]: [number, string] = value.startsWith('{') ? [0, value] : [Number(value.slice(0, space)), value.slice(space + 1)];
      const digest = JSON.parse(json) as Omit<PartDigest, 'partNumber'>;
      recorded.push({ seq, part: { partNumber: parseInt(field, 10), ...digest } });
    }
    return recorded.sort((a, b) => a.part.partNumber - b.part.partNumber || a.seq - b.seq).map((r) => r.part);
  }

  async deletePartDigests(uploadId: string): Promise<void> {
    await this.durable(this.redis.del(`${this.prefix}parts:${uploadId}`));
  }

  async putSession(session: SessionRecord): Promise<void> {
    const ttl = session.expiresAt + SESSION_GRACE_MS - Date.now();
    const key = `${this.prefix}session:${session.accessKeyId}`;
    if (ttl <= 0) await this.durable(this.redis.del(key));
    else await this.durable(this.redis.set(key, JSON.stringify(session), 'PX', ttl));
  }

  async getSession(accessKeyId: string): Promise<SessionRecord | undefined> {
    const json = await this.redis.get(`${this.prefix}session:${accessKeyId}`);
    const s = json === null ? undefined : (JSON.parse(json) as SessionRecord);
    // PX expiry is lazy to within a millisecond or so: the bound is checked here too.
    return s && s.expiresAt + SESSION_GRACE_MS >= Date.now() ? s : undefined;
  }

  async listSessions(agent: string): Promise<SessionRecord[]> {
    // SCAN, not an index: sessions are few and live hours, and this is an operator's page, not a request path.
    const out: SessionRecord[] = [];
    // Redis answers cursors as strings; the first is the number 0 (sent as "0").
    let cursor: string | number = 0;
    do {
      const [next, keys]: [string, string[]] = await this.redis.scan(cursor, 'MATCH', `${this.prefix}session:*`, 'COUNT', 1000);
      cursor = next;
      const values = keys.length ? await this.redis.mget(...keys) : [];
      for (const json of values) {
        const s = json === null ? undefined : (JSON.parse(json) as SessionRecord);
        if (s?.agent === agent && s.expiresAt + SESSION_GRACE_MS >= Date.now()) out.push(s);
      }
    } while (cursor !== '0');
    return out.sort((a, b) => a.expiresAt - b.expiresAt);
  }

  async revokeSession(accessKeyId: string): Promise<boolean> {
    // Revocations only ever set the flag: a concurrent one writes the same record, KEEPTTL keeps its bound.
    const key = `${this.prefix}session:${accessKeyId}`;
    const json = await this.redis.get(key);
    if (json === null) return false;
    const set = await this.durable(this.redis.set(key, JSON.stringify({ ...(JSON.parse(json) as SessionRecord), revoked: true }), 'KEEPTTL', 'XX'));
    return set === 'OK';
  }

  async revokeConsoleSession(id: string, untilMs: number): Promise<void> {
    const ttl = untilMs - Date.now();
    if (ttl > 0) await this.durable(this.redis.set(`${this.prefix}console-revoked:${id}`, '1', 'PX', ttl));
  }

  async consoleSessionRevoked(id: string): Promise<boolean> {
    return (await this.redis.exists(`${this.prefix}console-revoked:${id}`)) === 1;
  }

  async getReminderCursor(agent: string): Promise<string | undefined> {
    return (await this.redis.get(`${this.prefix}reminder-cursor:${agent}`)) ?? undefined;
  }

  async putReminderCursor(agent: string, cursor: string): Promise<void> {
    // Not waited on by replicas: a cursor lost in a failover repeats a reminder, it never hides one.
    await this.redis.set(`${this.prefix}reminder-cursor:${agent}`, cursor, 'PX', this.limits.ttlMs);
  }

  async putOAuthGrant(grant: OAuthGrant): Promise<void> {
    const ttl = Math.max(1, grant.expiresAt - Date.now());
    await this.durable(exec(this.redis.multi().set(`${this.prefix}oauth-grant:${grant.id}`, JSON.stringify(grant), 'PX', ttl).sadd(`${this.prefix}oauth-grants`, grant.id)));
  }

  async getOAuthGrant(id: string): Promise<OAuthGrant | undefined> {
    const raw = await this.redis.get(`${this.prefix}oauth-grant:${id}`);
    return raw ? (JSON.parse(raw) as OAuthGrant) : undefined;
  }

  async listOAuthGrants(): Promise<OAuthGrant[]> {
    const ids = await this.redis.smembers(`${this.prefix}oauth-grants`);
    if (ids.length === 0) return [];
    const raws = await this.redis.mget(ids.map((id) => `${this.prefix}oauth-grant:${id}`));
    // Ids whose grant expired are dropped from the set as they are found.
    const gone = ids.filter((_, i) => !raws[i]);
    if (gone.length > 0) await this.redis.srem(`${this.prefix}oauth-grants`, ...gone);
    return raws.filter((r): r is string => Boolean(r)).map((r) => JSON.parse(r) as OAuthGrant).sort((a, b) => a.id.localeCompare(b.id));
  }

  async deleteOAuthGrant(id: string): Promise<boolean> {
    const deleted = await this.durable(this.redis.del(`${this.prefix}oauth-grant:${id}`));
    await this.redis.srem(`${this.prefix}oauth-grants`, id);
    return deleted > 0;
  }

  async swapOAuthSecret(id: string, expected: string, next: string, usedAt: number, expiresAt: number): Promise<boolean> {
    return (await this.durableScript(this.redis.swapOAuthSecret(`${this.prefix}oauth-grant:${id}`, expected, next, usedAt, expiresAt))) === 1;
  }

  async close(): Promise<void> {
    await closeRedis(this.redis);
  }
}
