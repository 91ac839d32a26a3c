/**
 * A state store that cannot answer — Redis stopped or unreachable, SQLite
 * locked, full or read-only — fails the request that needs it with 503
 * ServiceUnavailable and `Retry-After` (AWS's answer for "try again shortly",
 * https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html), not
 * with a 500 (docs/design.md §4).
 *
 * Why this is safe: every agent write asks the store for the agent's read
 * stamp before it commits (guard/guard.ts), so an unreachable store refuses
 * the write before anything reaches the backend — an outage can delay a write,
 * never make one without its check. What the store is asked after a commit
 * (the writer's new stamp, the write log) and for a read (the reader's stamp)
 * is best effort: s3/write.ts and the read handlers log the failure and answer
 * with what the backend did. A lost stamp costs the agent a re-read; it never
 * lets a write through (a missing stamp refuses, docs/design.md §4 "Unread keys").
 */
import { S3Error } from '../vocabulary/errors.js';
import type { StateStore } from './types.js';

/**
 * Seconds a client should wait before retrying: ioredis reconnects within
 * about a second, and a Sentinel failover elects a new primary within a few
 * (the SDKs back off further on each retry).
 */
const RETRY_AFTER = '1';

/**
 * The client is told what happened, not the Redis or SQLite client's own
 * words ("Stream isn't writeable and enableOfflineQueue options is false"):
 * those describe casket's internals. The cause stays on the error for the log.
 */
export function stateUnavailable(cause: unknown): S3Error {
  const error = new S3Error('ServiceUnavailable', {
    message: "casket's state store is unavailable, or could not confirm the change on a replica; nothing was written. Retry shortly.",
    headers: { 'retry-after': RETRY_AFTER },
  });
  (error as Error).cause = cause;
  return error;
}

/** Wraps every method of `store` so that its failures surface as stateUnavailable. */
export function failingAsUnavailable(store: StateStore): StateStore {
  return new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown;
      if (typeof value !== 'function' || name === 'close') return value;
      return async (...args: unknown[]) => {
        try {
          return await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        } catch (e) {
          throw e instanceof S3Error ? e : stateUnavailable(e);
        }
      };
    },
  });
}
