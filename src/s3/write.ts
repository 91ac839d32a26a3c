/**
 * The one path every guarded write takes (PutObject, CopyObject,
 * CompleteMultipartUpload, DeleteObject, each key of DeleteObjects):
 * read the current version, ask the guard, commit under the condition it
 * returns (the backend re-checks it atomically), record the write.
 */
import { ConditionFailed, type CommitCondition, type ObjectInfo } from '../backends/types.js';
import type { WriteConditions } from '../guard/preconditions.js';
import { Refusal } from '../guard/refusal.js';
import type { WritePermit } from '../guard/guard.js';
import { parseETagList } from '../vocabulary/etag.js';
import type { RequestContext, Services } from './context.js';

export function writeConditionsFrom(headers: Record<string, string>): WriteConditions {
  const c: WriteConditions = {};
  if (headers['if-match'] !== undefined) c.ifMatch = parseETagList(headers['if-match']);
  if (headers['if-none-match'] !== undefined) c.ifNoneMatch = parseETagList(headers['if-none-match']);
  return c;
}

/** A condition no version satisfies: with sameContentWins, "only if the content is already there". */
const ONLY_SAME_CONTENT: CommitCondition = { type: 'if-match', etags: [] };

/** Refusals a retried write of identical content must not be told (DESIGN §3). */
const VERSION_REFUSALS = new Set(['precondition-failed', 'precondition-required', 'partial-read', 'stale-read', 'not-read']);

export interface GuardedWrite<T> {
  ctx: RequestContext;
  services: Services;
  bucket: string;
  key: string;
  operation: string;
  conditions: WriteConditions;
  declaredSha256?: string;
  /**
   * Whether the body will reach casket even if the write is refused (no
   * `Expect: 100-continue`): then a refusal whose content might be identical
   * is decided at commit, once the SHA-256 is known.
   */
  bodyComing: boolean;
  /** Check explicit conditions before the body is sent (the client asked: Expect: 100-continue). */
  early?: boolean;
  commit(permit: WritePermit): Promise<T>;
  written(result: T): ObjectInfo | null;
  /** The version the commit replaced, when the commit reports it (DeleteObject does). */
  replaced?(result: T): ObjectInfo | null;
}

export async function guardedWrite<T>(w: GuardedWrite<T>): Promise<T> {
  const { backend, guard } = w.services;
  // The current version is read only when something needs it — an early
  // refusal, the explanation of a refusal — never on the happy path: the
  // backend checks the condition atomically at commit, and upstream each
  // read is a HEAD (most of what casket added to a small PUT, measured with
  // scripts/bench.mjs).
  let read: Promise<ObjectInfo | null> | undefined;
  const current = () => (read ??= backend.headObject(w.bucket, w.key));
  let permit: WritePermit;
  let refusal: Refusal | undefined;
  try {
    permit = await guard.checkWrite({
      bucket: w.bucket,
      key: w.key,
      agent: w.ctx.agent,
      current,
      conditions: w.conditions,
      ...(w.declaredSha256 !== undefined && { declaredSha256: w.declaredSha256 }),
      ...(w.early !== undefined && { early: w.early }),
    });
  } catch (e) {
    if (!(e instanceof Refusal) || !w.bodyComing || !e.current || !VERSION_REFUSALS.has(e.reason)) throw e;
    refusal = e;
    permit = { condition: ONLY_SAME_CONTENT, sameContentWins: true };
  }
  let result: T;
  try {
    result = await w.commit(permit);
  } catch (e) {
    if (!(e instanceof ConditionFailed)) throw e;
    if (refusal) throw new Refusal(refusal.reason, w.bucket, w.key, e.current, refusal.lastSeenETag);
    throw guard.conflict(w.bucket, w.key, e.current, w.conditions, permit);
  }
  const written = w.written(result);
  const previousETag = (read && (await read)?.etag) ?? w.replaced?.(result)?.etag ?? replacedUnder(permit);
  await guard.recordWrite(
    {
      bucket: w.bucket,
      key: w.key,
      operation: w.operation,
      ...(w.ctx.agent !== undefined && { agent: w.ctx.agent }),
      ...(w.ctx.accessKey !== undefined && { accessKey: w.ctx.accessKey }),
      ...(previousETag !== undefined && { previousETag }),
      ...(written && { newETag: written.etag }),
    },
    written,
  );
  return result;
}

/**
 * The version a committed If-Match replaced, for the write log: the one ETag
 * it named. A value named in the `-1` client form stands for the plain
 * SHA-256 (expandETag lists it last).
 */
function replacedUnder(permit: WritePermit): string | undefined {
  const c = permit.condition;
  if (c.type !== 'if-match' || c.etags === '*' || c.etags.length === 0) return undefined;
  const values = new Set(c.etags.map((e) => e.replace(/-1$/, '')));
  return values.size === 1 ? c.etags[c.etags.length - 1] : undefined;
}
