/**
 * The one way casket opens a Redis connection (the state store and the
 * retained versions share it): to one server by URL, or to whichever server
 * Redis Sentinel names as the primary of a group (docs/design.md §11).
 *
 * Sentinel (https://redis.io/docs/latest/operate/oss_and_stack/management/sentinel/):
 * the client asks the sentinels for the group's primary ("Sentinel client
 * implementation"), connects, and checks with INFO that the server it reached
 * is a primary (ioredis does this on every connect, `role: 'master'`). After a
 * failover the old connection drops (the primary died) or answers `READONLY`
 * (the old primary, demoted to a replica): either way the client reconnects
 * and asks the sentinels again, so casket follows the new primary without a
 * restart. ioredis's optional `failoverDetector` (a subscription to the
 * sentinels' `+switch-master`) stays off: with it on, all three caskets of
 * test/linearizability/failover.test.ts were once left with an ended client
 * ("Connection is closed.") for over 30 s after a failover, the symptom of
 * https://github.com/redis/ioredis/issues/1683; off, the dropped connection
 * or READONLY is what moves casket, and a client that ends by itself anyway
 * is connected again (`openRedis`) — casket never needs a restart to write.
 *
 * Safe to replay: nothing is ever replayed. No offline queue (a command made
 * while disconnected fails at once), no retry of a command whose connection
 * dropped, no resend of unanswered commands after a reconnect. A resent
 * compare-and-swap or stamp merge could apply twice or land after newer
 * changes; the caller has already answered without it (503 before a commit,
 * or a logged, tolerated failure after one). A `READONLY` answer — a primary
 * demoted under casket's feet — reconnects (to the new primary, via the
 * sentinels) and fails that one command, never resends it.
 *
 * Error messages name host:port only: a URL may carry a password.
 *
 * Why ioredis, though it is now maintained on a best-effort basis and points
 * new work to node-redis: what this file relies on — no offline queue, no
 * resend of unanswered commands after a reconnect, a reconnect without resend
 * on a chosen error, Sentinel with a role check — are named, documented
 * options here, and the no-replay property is what makes a reconnect safe.
 * node-redis 5 has Sentinel too; moving means proving the same of its
 * reconnect and its automatic pipelining first. Speed did not decide it: on
 * these 2 shared cores the same loop measured anywhere from 0.9x to 4.5x
 * between the two from run to run (commit message).
 */
import { Redis, type RedisOptions } from 'ioredis';

/** Where Redis is: one server, or a Sentinel-monitored group. Passwords never in messages. */
export type RedisTarget =
  | { url: string }
  | { sentinels: Array<{ host: string; port: number }>; name: string; password?: string; sentinelPassword?: string };

/**
 * Replication casket waits for before it acknowledges a state change (see
 * state/redis.ts, `durable`): `replicas` 0 waits for none.
 */
export interface Replication {
  replicas: number;
  timeoutMs: number;
}

/** Connect and command timeouts: a down Redis must never hang a request. */
export const TIMEOUT_MS = 3000;

/** host:port only: a URL may carry a password that has no place in an error message. */
export function describeTarget(target: RedisTarget): string {
  if ('sentinels' in target) return `the primary of Sentinel group "${target.name}" (sentinels ${target.sentinels.map((s) => `${s.host}:${s.port}`).join(', ')})`;
  try {
    const { hostname, port } = new URL(target.url);
    return `${hostname}:${port || '6379'}`;
  } catch {
    return 'the configured Redis';
  }
}

const reconnectDelay = (attempt: number) => Math.min(attempt * 200, 2000);

function options(target: RedisTarget): RedisOptions {
  const common: RedisOptions = {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    // Stryker disable next-line BooleanLiteral: with maxRetriesPerRequest 0 every close already rejects the unanswered commands (ioredis flushQueue empties the queue it would resend), so true resends nothing either; kept so the no-resend rule does not hang on that one setting
    autoResendUnfulfilledCommands: false,
    connectTimeout: TIMEOUT_MS,
    commandTimeout: TIMEOUT_MS,
    retryStrategy: reconnectDelay,
    // 1: reconnect and fail the command (2 would resend it: never, see above).
    reconnectOnError: (error) => (error.message.startsWith('READONLY') ? 1 : false),
  };
  if (!('sentinels' in target)) return common;
  return {
    ...common,
    sentinels: target.sentinels,
    name: target.name,
    role: 'master',
    // Absent ones stay undefined, which ioredis fills from its defaults (null: no AUTH).
    password: target.password,
    sentinelPassword: target.sentinelPassword,
    sentinelRetryStrategy: reconnectDelay,
    sentinelCommandTimeout: TIMEOUT_MS,
  };
}

/** A connected client, or an error naming where (never how) it tried to connect. */
export async function openRedis(target: RedisTarget): Promise<Redis> {
  const redis = 'sentinels' in target ? new Redis(options(target)) : new Redis(target.url, options(target));
  // Without a listener ioredis prints every reconnection error to stderr;
  // the failures that matter reach callers as rejected commands.
  redis.on('error', () => {});
  try {
    // Bounded: with no sentinel reachable ioredis retries for ever, and a
    // casket that neither starts nor exits helps nobody.
    let timer: NodeJS.Timeout | undefined;
    // Stryker disable next-line StringLiteral: the cause's text reaches no one: cli.ts prints the message above (and, with debug, its stack, which leaves the cause out)
    const gaveUp = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('no answer')), 3 * TIMEOUT_MS)));
    await Promise.race([redis.connect(), gaveUp]).finally(() => clearTimeout(timer));
  } catch (error) {
    redis.disconnect();
    throw new Error(`cannot connect to Redis at ${describeTarget(target)}`, { cause: error });
  }
  // 'end': ioredis gave up reconnecting. Unless casket closed it, start over
  // (commands meanwhile fail at once, as during any outage: 503).
  redis.on('end', () => {
    if (!closed.has(redis)) setTimeout(() => void redis.connect().catch(() => {}), 1000).unref();
  });
  return redis;
}

const closed = new WeakSet<Redis>();

/** Closes a client from openRedis for good: QUIT, or a plain disconnect when Redis is gone. */
export async function closeRedis(redis: Redis): Promise<void> {
  closed.add(redis);
  try {
    await redis.quit();
  } catch {
    // Already disconnected (Redis down): nothing left to flush.
    redis.disconnect();
  }
}

/** Fewer replicas than asked confirmed a state change in time (WAIT). */
export class ReplicationNotConfirmed extends Error {
  constructor(asked: number, confirmed: number, timeoutMs: number) {
    super(`${confirmed} of ${asked} Redis replicas confirmed the state change within ${timeoutMs} ms`);
    this.name = 'ReplicationNotConfirmed';
  }
}

/**
 * Resolves once `replication.replicas` replicas hold every write this
 * connection sent before it: WAIT, sent right behind those writes on the same
 * connection (https://redis.io/docs/latest/commands/wait/: "all the previous
 * write commands sent in the context of the current connection"). Throws
 * ReplicationNotConfirmed when fewer answer within the timeout.
 */
export async function confirmReplicated(redis: Redis, replication: Replication): Promise<void> {
  if (replication.replicas === 0) return;
  const confirmed = await redis.wait(replication.replicas, replication.timeoutMs);
  if (confirmed < replication.replicas) throw new ReplicationNotConfirmed(replication.replicas, confirmed, replication.timeoutMs);
}
