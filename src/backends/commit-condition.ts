/**
 * The commit-time check of a write's CommitCondition (backends/types.ts), as a
 * pure function. The store calls it inside the same synchronous SQLite
 * transaction that applies the write, so nothing can change the current
 * version between the check and the commit (docs/design.md §3: "two concurrent writes
 * conditioned on the same ETag: exactly one succeeds").
 *
 * Truth table (current = the committed version's ETag, or null when absent):
 *
 *   condition              | absent | etag ∈ list | etag ∉ list
 *   none                   | write  | write       | write
 *   if-match '*'           | fail   | write       | write
 *   if-match [list]        | fail   | write       | fail
 *   if-none-match          | write  | fail        | fail
 *   if-none-match [list]   | write  | fail        | write
 *
 * and, on top of any row, a size / last-modified condition (conditional
 * deletes, https://docs.aws.amazon.com/AmazonS3/latest/API/API_DeleteObject.html):
 * an existing version must have that size / modification time (compared in
 * whole seconds, the precision of an HTTP date); an absent key satisfies it.
 *
 * A failure is a failure whatever the new content is: a write conditioned on a
 * version that is no longer current loses even when its bytes equal the
 * current ones (two agents that both read "10" and both write "11" made two
 * increments — docs/design.md §3). The one success without a write, an exact retry, is
 * recognised above the backend (s3/write.ts), from who made the current version.
 */
import type { CommitCondition, VersionCondition } from './types.js';

/** What a size / last-modified condition is checked against. */
export interface VersionFacts {
  size: number;
  lastModified: Date;
}

export function conditionHolds(condition: CommitCondition, currentETag: string | null, current?: VersionFacts): boolean {
  if (currentETag !== null && hasVersionCondition(condition)) {
    // Fail closed: a caller that cannot say what the version is cannot pass its condition.
    if (current === undefined) return false;
    if (condition.size !== undefined && current.size !== condition.size) return false;
    if (condition.lastModified !== undefined && seconds(current.lastModified) !== seconds(condition.lastModified)) return false;
  }
  switch (condition.type) {
    case 'none':
      return true;
    case 'if-match':
      return currentETag !== null && (condition.etags === '*' || condition.etags.includes(currentETag));
    case 'if-none-match':
      return currentETag === null || (condition.etags !== undefined && !condition.etags.includes(currentETag));
  }
}

export function hasVersionCondition(condition: VersionCondition): boolean {
  return condition.size !== undefined || condition.lastModified !== undefined;
}

function seconds(date: Date): number {
  return Math.floor(date.getTime() / 1000);
}
