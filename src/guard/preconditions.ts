/**
 * Preconditions as pure functions (STYLE habit 4): no I/O, a truth-table test
 * in test/guard/preconditions.test.ts. The backend applies the resulting
 * CommitCondition atomically with the write.
 *
 * Reads follow RFC 9110 §13.2.2 as S3 applies it
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html):
 * If-Match, else If-Unmodified-Since → 412; If-None-Match, else
 * If-Modified-Since → 304. Writes follow
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html:
 * If-Match on a missing key → 404 NoSuchKey, If-None-Match only as `*`.
 */
import { etagMatches, expandETag } from '../vocabulary/etag.js';
import type { CommitCondition } from '../backends/types.js';

export interface CurrentVersion {
  etag: string;
  lastModified: Date;
}

export interface ReadConditions {
  ifMatch?: string[] | '*';
  ifNoneMatch?: string[] | '*';
  ifModifiedSince?: Date;
  ifUnmodifiedSince?: Date;
}

export type ReadVerdict = 'ok' | 'not-modified' | 'precondition-failed';

function anyMatches(list: string[] | '*', current: CurrentVersion | null): boolean {
  if (!current) return false;
  return list === '*' || list.some((value) => etagMatches(value, current.etag));
}

/** HTTP dates have second precision: compare whole seconds. */
function seconds(date: Date): number {
  return Math.floor(date.getTime() / 1000);
}

export function evaluateRead(current: CurrentVersion, c: ReadConditions): ReadVerdict {
  if (c.ifMatch !== undefined) {
    if (!anyMatches(c.ifMatch, current)) return 'precondition-failed';
  } else if (c.ifUnmodifiedSince && seconds(current.lastModified) > seconds(c.ifUnmodifiedSince)) {
    return 'precondition-failed';
  }
  if (c.ifNoneMatch !== undefined) {
    if (anyMatches(c.ifNoneMatch, current)) return 'not-modified';
  } else if (c.ifModifiedSince && seconds(current.lastModified) <= seconds(c.ifModifiedSince)) {
    return 'not-modified';
  }
  return 'ok';
}

export interface WriteConditions {
  ifMatch?: string[] | '*';
  ifNoneMatch?: string[] | '*';
}

export type WriteVerdict =
  | { ok: true; condition: CommitCondition }
  | { ok: false; failure: 'no-such-key' | 'precondition-failed' | 'not-implemented'; condition: 'If-Match' | 'If-None-Match' };

/**
 * Checks explicit write conditions against the current version and returns the
 * CommitCondition the backend must re-check atomically at commit.
 */
export function evaluateWrite(current: CurrentVersion | null, c: WriteConditions): WriteVerdict {
  if (c.ifNoneMatch !== undefined && c.ifNoneMatch !== '*') return { ok: false, failure: 'not-implemented', condition: 'If-None-Match' };
  if (c.ifMatch !== undefined) {
    if (!current) return { ok: false, failure: 'no-such-key', condition: 'If-Match' };
    if (!anyMatches(c.ifMatch, current)) return { ok: false, failure: 'precondition-failed', condition: 'If-Match' };
  }
  if (c.ifNoneMatch === '*' && current) return { ok: false, failure: 'precondition-failed', condition: 'If-None-Match' };
  return { ok: true, condition: commitConditionFor(c) };
}

export function commitConditionFor(c: WriteConditions): CommitCondition {
  if (c.ifMatch !== undefined) {
    return { type: 'if-match', etags: c.ifMatch === '*' ? '*' : c.ifMatch.flatMap(expandETag) };
  }
  if (c.ifNoneMatch === '*') return { type: 'if-none-match' };
  return { type: 'none' };
}

export function hasWriteCondition(c: WriteConditions): boolean {
  return c.ifMatch !== undefined || c.ifNoneMatch !== undefined;
}
