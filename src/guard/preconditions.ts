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
 * If-Match on a missing key → 404 NoSuchKey. If-None-Match: "etag" (AWS
 * answers 501 to it) is honoured as Ceph RGW and MinIO honour it — write
 * unless the current version is one of those — so a user of RGW loses
 * nothing through casket (docs/design.md §3).
 */
import { etagMatches, expandETag } from '../vocabulary/etag.js';
import type { CommitCondition, VersionCondition } from '../backends/types.js';

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
  /** DeleteObject `x-amz-if-match-size` (DeleteObjects `<Size>`): an existing key must have this size. */
  ifMatchSize?: number;
  /** DeleteObject `x-amz-if-match-last-modified-time` (DeleteObjects `<LastModifiedTime>`), whole seconds. */
  ifMatchLastModifiedTime?: Date;
}

export type WriteConditionName = 'If-Match' | 'If-None-Match' | 'x-amz-if-match-size' | 'x-amz-if-match-last-modified-time';

export type WriteVerdict =
  | { ok: true; condition: CommitCondition }
  | { ok: false; failure: 'no-such-key' | 'precondition-failed'; condition: WriteConditionName };

/** The current version as a write's conditions see it; size only for x-amz-if-match-size. */
export interface CurrentVersionFacts extends CurrentVersion {
  size?: number;
}

/**
 * Checks explicit write conditions against the current version and returns the
 * CommitCondition the backend must re-check atomically at commit.
 */
export function evaluateWrite(current: CurrentVersionFacts | null, c: WriteConditions): WriteVerdict {
  if (c.ifMatch !== undefined) {
    if (!current) return { ok: false, failure: 'no-such-key', condition: 'If-Match' };
    if (!anyMatches(c.ifMatch, current)) return { ok: false, failure: 'precondition-failed', condition: 'If-Match' };
  }
  if (c.ifNoneMatch !== undefined && anyMatches(c.ifNoneMatch, current)) return { ok: false, failure: 'precondition-failed', condition: 'If-None-Match' };
  // Conditional deletes (AWS, 2024): a key that does not exist satisfies them (204).
  if (current && c.ifMatchSize !== undefined && current.size !== c.ifMatchSize) return { ok: false, failure: 'precondition-failed', condition: 'x-amz-if-match-size' };
  if (current && c.ifMatchLastModifiedTime !== undefined && seconds(current.lastModified) !== seconds(c.ifMatchLastModifiedTime)) {
    return { ok: false, failure: 'precondition-failed', condition: 'x-amz-if-match-last-modified-time' };
  }
  return { ok: true, condition: commitConditionFor(c) };
}

export function commitConditionFor(c: WriteConditions): CommitCondition {
  const version = versionConditionFor(c);
  if (c.ifMatch !== undefined) {
    return { type: 'if-match', etags: c.ifMatch === '*' ? '*' : c.ifMatch.flatMap(expandETag), ...version };
  }
  if (c.ifNoneMatch === '*') return { type: 'if-none-match', ...version };
  if (c.ifNoneMatch !== undefined) return { type: 'if-none-match', etags: c.ifNoneMatch.flatMap(expandETag), ...version };
  return { type: 'none', ...version };
}

/** The size / last-modified part of a CommitCondition (empty when the request named neither). */
export function versionConditionFor(c: WriteConditions): VersionCondition {
  return {
    ...(c.ifMatchSize !== undefined && { size: c.ifMatchSize }),
    // Stryker disable next-line ConditionalExpression: a lastModified left undefined is no time condition to every reader (conditionHolds, backends/s3/commit.ts test it against undefined)
    ...(c.ifMatchLastModifiedTime !== undefined && { lastModified: c.ifMatchLastModifiedTime }),
  };
}

/**
 * Whether the write names a version by ETag (If-Match / If-None-Match). A size
 * or modification time does not: it does not prove the agent saw the content,
 * so an agent still needs If-Match (docs/design.md §4).
 */
export function hasWriteCondition(c: WriteConditions): boolean {
  return c.ifMatch !== undefined || c.ifNoneMatch !== undefined;
}
