/**
 * The one path every guarded write takes (PutObject, CopyObject,
 * CompleteMultipartUpload, DeleteObject, each key of DeleteObjects):
 * read the current version, ask the guard, commit under the condition it
 * returns (the backend re-checks it atomically), record the write. A
 * refusal to an agent links the diff from the version it last saw to the
 * current one, when that version is retained (docs/design.md §6).
 */
import { ConditionFailed, type CommitCondition, type ObjectInfo } from '../backends/types.js';
import type { WriteConditions } from '../guard/preconditions.js';
import { Refusal } from '../guard/refusal.js';
import type { WritePermit } from '../guard/guard.js';
import { parseETagList } from '../vocabulary/etag.js';
import { canonicalQuery } from '../vocabulary/url-encoding.js';
import type { RequestContext, Services, WriteNotice } from './context.js';
import { keepPreImage } from './pre-image.js';

export function writeConditionsFrom(headers: Record<string, string>): WriteConditions {
  const c: WriteConditions = {};
  if (headers['if-match'] !== undefined) c.ifMatch = parseETagList(headers['if-match']);
  if (headers['if-none-match'] !== undefined) c.ifNoneMatch = parseETagList(headers['if-none-match']);
  return c;
}

/**
 * A condition no version satisfies: the commit of a refused write, made only
 * to learn what it would have written (its SHA-256, after the body) or
 * whether the backend already made it (a completed upload) — never to write.
 */
const NOTHING_HOLDS: CommitCondition = { type: 'if-match', etags: [] };

/** Refusals that name a version: the refused write may be an exact retry, or carry the current bytes. */
const VERSION_REFUSALS = new Set(['precondition-failed', 'precondition-required', 'partial-read', 'stale-read', 'not-read']);

/** The header AWS SDKs keep across their automatic retries of one call (JS v3, botocore, Go v2, Java v2). */
const INVOCATION_ID = 'amz-sdk-invocation-id';

export interface GuardedWrite<T> {
  ctx: RequestContext;
  services: Services;
  bucket: string;
  key: string;
  operation: string;
  conditions: WriteConditions;
  /** SHA-256 hex of the new content when known before the body (signed payload hash, checksum header, copy source). */
  declaredSha256?: string;
  /** The write deletes the key (its "content" is the key being absent). */
  deletes?: boolean;
  /**
   * Whether the body will reach casket even if the write is refused (no
   * `Expect: 100-continue`): then a refused write is still received, to tell
   * the client whether the current content is what it sent.
   */
  bodyComing: boolean;
  /** The backend recognises a repeat of this write by itself (CompleteMultipartUpload: its upload id). */
  selfIdentifying?: boolean;
  /** Check explicit conditions before the body is sent (the client asked: Expect: 100-continue). */
  early?: boolean;
  commit(permit: WritePermit): Promise<T>;
  written(result: T): ObjectInfo | null;
  /** The version the commit replaced, when the commit reports it (DeleteObject does). */
  replaced?(result: T): ObjectInfo | null;
  /** The version id the commit made when it is not `written`'s (a delete marker). */
  madeVersion?(result: T): string | undefined;
  /** The answer to an exact retry of the write that made `current` (docs/design.md §3). */
  landed(current: ObjectInfo | null): T;
  /**
   * false: the agent rules were applied already, to the edit this write
   * merges (s3/merge-write.ts); only the explicit conditions are checked, and
   * the write is still recorded as the agent's.
   */
  agentRules?: false;
  /**
   * The write is an entry of this changeset (src/changesets/commit.ts), which
   * holds the key already: it does not wait on the gate, and its write-log
   * entry and event carry the id.
   */
  changeset?: string;
}

/** Refusals that link a diff from the agent's last-seen version (docs/design.md §6). */
const DIFF_REFUSALS = new Set(['precondition-failed', 'precondition-required', 'partial-read', 'stale-read']);

/** The path of the diff between two versions of a key (served by agent-changes.ts). */
export function diffPath(bucket: string, key: string, from: string, to: string): string {
  return `/_casket/diff?${canonicalQuery({ bucket, key, from, to })}`;
}

/**
 * The refusal, with a link to what changed since the agent last saw the key
 * when casket kept that version. Degrades to the refusal as it was when the
 * state or retention store cannot tell.
 */
async function withDiff(r: Refusal, services: Services, agent: string | undefined): Promise<Refusal> {
  const { retainer, state } = services;
  if (!agent || !retainer || !r.current || r.details.diff || !DIFF_REFUSALS.has(r.reason)) return r;
  const from = r.lastSeenETag ?? (await state.getStamp(agent, r.bucket, r.key).catch(() => undefined))?.etag;
  if (from === undefined || from === r.current.etag || !(await retainer.touch({ bucket: r.bucket, key: r.key, etag: from }))) return r;
  return new Refusal(r.reason, r.bucket, r.key, r.current, from, { ...r.details, diff: diffPath(r.bucket, r.key, from, r.current.etag) });
}

/**
 * The refusal, naming the access key that wrote the current version when no
 * agent did and the write log's newest entry for the key made that very
 * version — so a 412 names a person's write as GET /_casket/writes does.
 * Asked only here, once a write is refused: the happy path pays nothing. A
 * state store that cannot answer leaves the refusal as it was, a 412 and not
 * a 503 (the refusal does not depend on it).
 */
async function withWriter(r: Refusal, services: Services): Promise<Refusal> {
  if (!r.current || r.current.writer || r.details.writerAccessKey) return r;
  const last = await services.state.lastWrite(r.bucket, r.key).catch(() => undefined);
  if (!last || last.agent !== undefined || last.newETag !== r.current.etag) return r;
  // Stryker disable next-line ConditionalExpression: a writerAccessKey left undefined names nobody, as an absent one does (every reader tests it for truth)
  if (last.accessKey === undefined) return r;
  return r.with(r.current, { writerAccessKey: last.accessKey });
}

/**
 * docs/design.md §3: a failed condition is a refusal whatever the bytes — with one
 * exception, an exact retry of the write that made the current version (the
 * same access key and `amz-sdk-invocation-id`), which gets that version's
 * answer and writes nothing. A refusal whose bytes equal the current ones
 * says so (`identical`), so a client without an invocation id can still tell
 * its own landed attempt from a conflict.
 */
export async function guardedWrite<T>(w: GuardedWrite<T>): Promise<T> {
  // Ordered before or after any changeset on this key, never between its
  // check and its last entry (src/changesets/locks.ts): one Map lookup when
  // no changeset holds the key.
  const release = w.changeset === undefined ? await w.services.gate?.shared(w.bucket, w.key) : undefined;
  try {
    return await guardedWriteOnce(w);
  } catch (e) {
    if (e instanceof Refusal) throw await explainRefusal(e, w.services, w.ctx.agent);
    throw e;
  } finally {
    release?.();
  }
}

/**
 * A refusal as every write path answers it: with the writer of the current
 * version and the diff since the agent's read (withWriter, withDiff). A
 * changeset explains each refused entry with it (src/changesets/commit.ts).
 */
export async function explainRefusal(r: Refusal, services: Services, agent: string | undefined): Promise<Refusal> {
  return withDiff(await withWriter(r, services), services, agent);
}

async function guardedWriteOnce<T>(w: GuardedWrite<T>): Promise<T> {
  const { backend, guard } = w.services;
  // The current version is read only when something needs it — an early
  // refusal, the explanation of a refusal — never on the happy path: the
  // backend checks the condition atomically at commit, and upstream each
  // read is a HEAD (most of what casket added to a small PUT, measured with
  // scripts/bench.mjs).
  let read: Promise<ObjectInfo | null> | undefined;
  const current = () => (read ??= backend.headObject(w.bucket, w.key));
  const invocationId = w.ctx.headers[INVOCATION_ID];
  const madeByThisCall = (version: ObjectInfo | null) => guard.madeBy(w.bucket, w.key, version, w.ctx.accessKey, invocationId);
  let permit: WritePermit;
  let refusal: Refusal | undefined;
  try {
    permit = await guard.checkWrite({
      bucket: w.bucket,
      key: w.key,
      agent: w.agentRules === false ? undefined : w.ctx.agent,
      current,
      conditions: w.conditions,
      ...(w.early !== undefined && { early: w.early }),
    });
  } catch (e) {
    if (!(e instanceof Refusal)) throw e;
    const namesVersion = VERSION_REFUSALS.has(e.reason);
    // Commit anyway, under a condition nothing satisfies, when that can tell
    // an exact retry or identical bytes from a conflict: the body is on its
    // way regardless, the backend knows its own completed upload, or this
    // very call made the current version (then the body is asked for). The
    // guard refuses only for a version or for no-such-key (a key absent).
    const probe = (namesVersion && (w.bodyComing || w.selfIdentifying)) || (await madeByThisCall(e.current));
    if (!probe) throw identicalUpFront(e, w);
    refusal = e;
    permit = { condition: NOTHING_HOLDS };
  }
  // The version an agent's write replaces, kept before the commit for rollback (--keep-pre-images).
  if (!refusal && w.services.preImages && w.ctx.agent !== undefined && !createOnly(permit)) await keepPreImage(w.services, w.bucket, w.key);
  let result: T;
  try {
    result = await w.commit(permit);
  } catch (e) {
    if (!(e instanceof ConditionFailed)) {
      // The probe of a refused write failed otherwise (e.g. a condition the
      // upstream cannot make atomic): the refusal stands.
      if (refusal) throw identicalUpFront(refusal, w);
      throw e;
    }
    const attempted = e.attemptedETag !== undefined ? e.attemptedETag : w.deletes ? null : w.declaredSha256;
    // An undefined attempt (no declared SHA-256) equals no ETag and no absence (null).
    const identical = attempted === (e.current?.etag ?? null);
    if (identical && (await madeByThisCall(e.current))) {
      await w.services.events?.publish(notice(w, 'exact-retry', e.current?.etag, e.current?.size));
      return w.landed(e.current);
    }
    const refused = refusal ?? guard.conflict(w.bucket, w.key, e.current, w.conditions, permit);
    throw refused.with(e.current, identical ? { identical } : {});
  }
  // A probe that succeeded is a completion the backend had already made: nothing changed, nothing to log.
  if (refusal) {
    const made = w.written(result);
    await w.services.events?.publish(notice(w, 'exact-retry', made?.etag, made?.size));
    return result;
  }
  const written = w.written(result);
  const versionId = w.madeVersion?.(result) ?? written?.versionId;
  // Stryker disable next-line ArrowFunction: null or undefined, `?.etag` is undefined either way
  const previousETag = (read && (await read.catch(() => null))?.etag) ?? w.replaced?.(result)?.etag ?? replacedUnder(permit);
  // The object is committed: a state store that fails now costs the writer's
  // stamp (it re-reads before its next write) and a write-log entry, never
  // the answer (README, "When the state store is down").
  await guard
    .recordWrite(
      {
        bucket: w.bucket,
        key: w.key,
        operation: w.operation,
        // A field left undefined is absent from every store's record (JSON drops it).
        agent: w.ctx.agent,
        accessKey: w.ctx.accessKey,
        invocationId,
        ...(w.changeset !== undefined && { changeset: w.changeset }),
        previousETag,
        ...(written && { newETag: written.etag }),
        versionId,
      },
      written,
    )
    .catch((error: unknown) => w.services.log.error({ err: error, bucket: w.bucket, key: w.key, requestId: w.ctx.requestId }, 'write committed, but not recorded in the state store'));
  // Only now, after the commit: an event is never told of a write that did not land (docs/design.md §9).
  await w.services.events?.publish({
    ...notice(w, 'written', written?.etag, written?.size),
    previousETag,
    versionId,
    // A delete that made a version made a delete marker (API_DeleteObject, versioned bucket).
    ...(w.deletes && versionId !== undefined && { deleteMarker: true }),
    ...(w.agentRules === false && w.changeset === undefined && { merged: true }),
    ...(w.changeset !== undefined && { changeset: w.changeset }),
  });
  return result;
}

/** What the event stream is told of this write (src/events/). */
function notice<T>(w: GuardedWrite<T>, kind: WriteNotice['kind'], etag: string | undefined, size: number | undefined): WriteNotice {
  return {
    kind,
    operation: w.operation,
    bucket: w.bucket,
    key: w.key,
    requestId: w.ctx.requestId,
    // Undefined fields are absent from the stored record (JSON drops them).
    agent: w.ctx.agent,
    accessKey: w.ctx.accessKey,
    etag,
    size,
  };
}

/**
 * A refusal decided before the body (the guard's: it names a version, or the
 * key's absence): identical when the declared SHA-256 (or, for a delete, the
 * key's absence) already is current.
 */
function identicalUpFront<T>(r: Refusal, w: GuardedWrite<T>): Refusal {
  const attempted = w.deletes ? null : w.declaredSha256;
  return attempted === (r.current?.etag ?? null) ? r.with(r.current, { identical: true }) : r;
}

/** A create-only write (If-None-Match: *) replaces nothing: there is no pre-image to keep. */
function createOnly(permit: WritePermit): boolean {
  const c = permit.condition;
  return c.type === 'if-none-match' && c.etags === undefined;
}

/**
 * The version a committed If-Match replaced, for the write log: the one ETag
 * it named. A value named in the `-1` client form stands for the plain
 * SHA-256 (expandETag lists it last).
 */
function replacedUnder(permit: WritePermit): string | undefined {
  const c = permit.condition;
  if (c.type !== 'if-match' || c.etags === '*') return undefined;
  const values = new Set(c.etags.map((e) => e.replace(/-1$/, '')));
  return values.size === 1 ? c.etags[c.etags.length - 1] : undefined;
}
