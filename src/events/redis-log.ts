/**
 * The event log of `--state redis` (log.ts): one Redis Stream,
 * `<prefix>events` (https://redis.io/docs/latest/develop/data-types/streams/).
 * Every casket XADDs its events to it and reads them all back, so each
 * casket's /_casket/events carries every casket's events, in the one order
 * the stream gave them — the same order on every casket, and so for every
 * key. Ids are the stream's (`<ms>-<n>`), so a Last-Event-ID from one
 * casket resumes on any other. A blocking XREAD on a connection of its own
 * wakes local readers when another casket appends.
 *
 * Known gap: an event is appended just after its commit, so two caskets
 * committing the same key within the same instant may append in the other
 * order than they committed; `casket.previousETag` lets a reader chain the
 * versions exactly. Appends do not WAIT for replicas (--redis-min-replicas):
 * a failover may lose the last events, never a write.
 */
import type { Redis } from 'ioredis';
import { closeRedis, openRedis, type RedisTarget } from '../state/redis-connection.js';
import { AppendSignal, MAX_EVENTS, type EventLog, type EventPage } from './log.js';
import { LoggedEvent, type StoredRecord } from './record.js';

/** Below the connection's command timeout (state/redis-connection.ts): a block longer than that would be cut off as an error. */
const BLOCK_MS = 2000;

/** Takes the lease, or renews it when `holder` has it already: one step, so two caskets never both hold it. */
const LEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0`;

type StreamId = [bigint, bigint];

function parseId(id: string): StreamId {
  const [ms, n] = id.split('-');
  // Stryker disable next-line StringLiteral: BigInt('') is 0n, as BigInt('0') is
  return [BigInt(ms ?? '0'), BigInt(n ?? '0')];
}

function before(a: string, b: string): boolean {
  const [x, y] = [parseId(a), parseId(b)];
  return x[0] < y[0] || (x[0] === y[0] && x[1] < y[1]);
}

/** `<ms>-<n>` as a fixed-width hex sequencer. */
function sequencer(id: string): string {
  const [ms, n] = parseId(id);
  return ms.toString(16).toUpperCase().padStart(12, '0') + n.toString(16).toUpperCase().padStart(8, '0');
}

/** XINFO STREAM's flat [name, value, …] reply as a map. */
function info(reply: unknown[]): Map<string, unknown> {
  const m = new Map<string, unknown>();
  // Stryker disable next-line EqualityOperator,ArithmeticOperator: the reply is name, value pairs (an even length), so a step past the last pair only sets a name "undefined" nobody reads
  for (let i = 0; i + 1 < reply.length; i += 2) m.set(String(reply[i]), reply[i + 1]);
  return m;
}

export class RedisEventLog implements EventLog {
  private readonly signal = new AppendSignal();
  private reader: Redis | undefined;
  private closed = false;
  private following = false;
  private readonly key: string;

  private constructor(private readonly redis: Redis, private readonly target: RedisTarget, private readonly prefix: string, private readonly maxEvents: number) {
    this.key = `${prefix}events`;
  }

  static async connect(target: RedisTarget, options: { prefix?: string; maxEvents?: number } = {}): Promise<RedisEventLog> {
    return new RedisEventLog(await openRedis(target), target, options.prefix ?? 'casket:', options.maxEvents ?? MAX_EVENTS);
  }

  async append(record: StoredRecord): Promise<void> {
    // MAXLEN ~: trimmed by whole macro nodes, cheap, keeping at least maxEvents. One field, r: read() takes
    // its value (XADD takes at least one field and value, so every entry has one).
    await this.redis.xadd(this.key, 'MAXLEN', '~', String(this.maxEvents), '*', 'r', JSON.stringify(record));
    this.signal.emit();
  }

  /**
   * From XINFO STREAM (Redis 7): the last id the stream gave, the newest id
   * XDEL deleted, the oldest id it keeps (undefined when it keeps none), and
   * whether it ever dropped an entry; none when the stream does not exist yet.
   */
  private async bounds(): Promise<{ last: string; deleted: string; first: string | undefined; dropped: boolean } | undefined> {
    try {
      const m = info((await this.redis.call('XINFO', 'STREAM', this.key)) as unknown[]);
      const length = Number(m.get('length'));
      return {
        last: String(m.get('last-generated-id')),
        deleted: String(m.get('max-deleted-entry-id') ?? '0-0'),
        first: length > 0 ? String(m.get('recorded-first-entry-id')) : undefined,
        dropped: Number(m.get('entries-added')) > length,
      };
    } catch (e) {
      if (e instanceof Error && /no such key/i.test(e.message)) return undefined;
      throw e;
    }
  }

  async read(after: string, limit: number): Promise<EventPage> {
    const [bounds, rows] = await Promise.all([this.bounds(), this.redis.xrange(this.key, `(${after}`, '+', 'COUNT', limit)]);
    if (!bounds) return { events: [], lost: after !== '0-0' };
    // Events were missed by a cursor ahead of anything this stream gave (another Redis), behind what XDEL
    // deleted, or behind what MAXLEN trimmed — which moves the oldest entry but not max-deleted-entry-id
    // (XINFO STREAM: https://redis.io/docs/latest/commands/xinfo-stream/). Ids are not consecutive, so a
    // cursor before the oldest kept entry of a stream that dropped some is told `lost` even in the one case
    // where it missed nothing (its own entry was exactly the last one trimmed): the stream cannot tell.
    const lost = before(bounds.last, after) || before(after, bounds.deleted) || (bounds.dropped && before(after, bounds.first ?? bounds.last));
    const events = rows.map(([id, fields]) => new LoggedEvent(id, fields[1]!, sequencer(id)));
    return { events, lost };
  }

  async head(): Promise<string> {
    return (await this.bounds())?.last ?? '0-0';
  }

  validId(id: string): boolean {
    return /^\d{1,15}-\d{1,15}$/.test(id);
  }

  onAppend(listener: () => void): () => void {
    const off = this.signal.on(listener);
    void this.follow();
    return off;
  }

  /** Wakes local readers when any casket appends: XREAD BLOCK from the newest id seen. */
  private async follow(): Promise<void> {
    if (this.following || this.closed) return;
    this.following = true;
    let last: string | undefined;
    while (!this.closed) {
      if (!this.reader || last === undefined) {
        try {
          this.reader ??= await openRedis(this.target);
          last = await this.head();
        } catch {
          // Redis is down: try again shortly; readers meanwhile wait on their heartbeat.
          await new Promise((resolve) => setTimeout(resolve, 1000).unref());
          continue;
        }
      }
      try {
        const reply = (await this.reader.call('XREAD', 'COUNT', '1000', 'BLOCK', String(BLOCK_MS), 'STREAMS', this.key, last)) as Array<[string, Array<[string, string[]]>]> | null;
        const entries = reply?.[0]?.[1] ?? [];
        if (entries.length > 0) {
          last = entries[entries.length - 1]![0];
          this.signal.emit();
        }
      } catch {
        if (this.closed) return;
        this.signal.emit();
        await new Promise((resolve) => setTimeout(resolve, 500).unref());
      }
    }
  }

  async getCursor(target: string): Promise<string | undefined> {
    return (await this.redis.get(`${this.prefix}webhook-cursor:${target}`)) ?? undefined;
  }

  async setCursor(target: string, id: string): Promise<void> {
    await this.redis.set(`${this.prefix}webhook-cursor:${target}`, id);
  }

  async lease(target: string, holder: string, ms: number): Promise<boolean> {
    return (await this.redis.eval(LEASE, 1, `${this.prefix}webhook-lease:${target}`, holder, String(ms))) === 1;
  }

  async close(): Promise<void> {
    this.closed = true;
    const reader = this.reader;
    this.reader = undefined;
    if (reader) {
      // closeRedis marks it closed for good: a bare disconnect() is an outage to openRedis, which connected it
      // again a second later and held that connection open for ever. Its QUIT would wait out the follower's
      // blocking XREAD (up to BLOCK_MS), so the connection is cut at once.
      void closeRedis(reader);
      reader.disconnect();
    }
    await closeRedis(this.redis);
  }
}
