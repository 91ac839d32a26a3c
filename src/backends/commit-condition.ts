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
 * A failure is a failure whatever the new content is: a write conditioned on a
 * version that is no longer current loses even when its bytes equal the
 * current ones (two agents that both read "10" and both write "11" made two
 * increments — DESIGN §3). The one success without a write, an exact retry, is
 * recognised above the backend (s3/write.ts), from who made the current version.
 */
import type { CommitCondition } from './types.js';

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
