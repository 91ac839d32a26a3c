/**
 * The commit-time check of a write's CommitCondition (backends/types.ts), as a
 * pure function. The store calls it inside the same synchronous SQLite
 * transaction that applies the write, so nothing can change the current
 * version between the check and the commit (DESIGN §3: "two concurrent writes
 * conditioned on the same ETag: exactly one succeeds").
 *
 * Truth table (current = the committed version's ETag, or null when absent):
 *
 *   condition              | absent | etag ∈ list | etag ∉ list
 *   none                   | write  | write       | write
 *   if-match '*'           | fail   | write       | write
 *   if-match [list]        | fail   | write       | fail
 *   if-none-match          | write  | fail        | fail
 *
 * A failure turns into 'same-content' when `sameContentWins` is set and the
 * new content is already the current version: for a put, the new SHA-256
 * equals the current ETag; for a delete (new content: none), the key is
 * already absent. The caller then succeeds without writing.
 */
import type { CommitCondition } from './types.js';

export type CommitOutcome = 'write' | 'fail' | 'same-content';

export function conditionHolds(condition: CommitCondition, currentETag: string | null): boolean {
  switch (condition.type) {
    case 'none':
      return true;
    case 'if-match':
      return currentETag !== null && (condition.etags === '*' || condition.etags.includes(currentETag));
    case 'if-none-match':
      return currentETag === null;
  }
}

/**
 * @param newETag the ETag the write would create, or null for a delete.
 */
export function evaluateCommit(
  condition: CommitCondition,
  currentETag: string | null,
  newETag: string | null,
  sameContentWins: boolean | undefined,
): CommitOutcome {
  if (conditionHolds(condition, currentETag)) return 'write';
  return sameContentWins && currentETag === newETag ? 'same-content' : 'fail';
}
