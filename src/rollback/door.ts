/**
 * How the rollback reads and writes: S3 requests run in-process through
 * s3/in-process.ts, as the MCP tools' do — the same guard, compare-and-swap
 * at commit, read stamps, write log and retention as a request from the
 * wire, never a second compare-and-swap (docs/design.md §10).
 *
 * The caller is the admin who asked for the rollback, acting as the agent
 * `rollback:<agent>` (plan.ts): the write log names both, so a restore is
 * told apart from the agent's own writes and can itself be rolled back.
 */
import { Readable } from 'node:stream';
import type { Credential } from '../auth/credentials.js';
import type { Services } from '../s3/context.js';
import type { HandleOptions } from '../s3/handle.js';
import { callInProcess, readBody } from '../s3/in-process.js';
import type { S3Call as AnyS3Call } from '../vocabulary/s3-call.js';

/** What a rollback asks: reads, restores and removals. */
export type S3Call = AnyS3Call & { method: 'GET' | 'PUT' | 'DELETE' };

export interface S3Reply {
  status: number;
  headers: Record<string, string>;
  /** Absent on a failure, and past the `keep` bytes the caller asked for. */
  body?: Buffer;
  /** The S3 error code of a failure. */
  code?: string;
}

/**
 * `stamp`: the read counts as the rollback agent's full read (default true).
 * `keep`: the most body bytes held in memory (default all); a longer body is
 * still read to its end.
 */
export type RollbackDoor = (call: S3Call, read?: { stamp?: boolean; keep?: number }) => Promise<S3Reply>;

/** A door for `admin` acting as agent `actingAs`. */
export function openRollbackDoor(services: Services, options: HandleOptions, admin: Credential, actingAs: string): RollbackDoor {
  // Bound to the rollback's agent name: resolveAgent (guard/identity.ts) takes it as the request's agent.
  const credential: Credential = { ...admin, agent: actingAs };
  return async (call, read) => {
    const outcome = await callInProcess(services, options, credential, { userAgent: 'casket-rollback' }, call);
    const res = outcome.response;
    if (outcome.error) {
      if (res.body instanceof Readable) res.body.destroy();
      if (outcome.internal) services.log.error({ err: outcome.internal, requestId: outcome.requestId, bucket: call.bucket, key: call.key }, 'rollback: request failed');
      return { status: res.status, headers: res.headers, code: outcome.error.code };
    }
    // Read to its end even past `keep`, so the read is a full one.
    const content = await readBody(res.body, read?.keep ?? Number.POSITIVE_INFINITY, 'drain');
    // The read stamp: a read the restore stands on counts as the rollback agent's full read (docs/design.md §4).
    if (read?.stamp !== false) await res.onFinish?.(true);
    return { status: res.status, headers: res.headers, ...(content && { body: content }) };
  };
}
