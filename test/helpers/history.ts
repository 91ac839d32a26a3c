/**
 * A linearizability check for compare-and-swap histories (so "no lost
 * update" is judged by a checker, not by eye).
 *
 * Writers increment a counter object: read it (version V, value n), write
 * n + 1 conditioned on V. The bytes repeat across writers on purpose — two
 * writers that both read "10" both write "11" — which is exactly where a
 * store that lets identical content succeed loses an increment.
 *
 * Every acknowledged write is recorded as (version it named → version it
 * made). A correct store's acknowledged writes form one chain from the first
 * version to the final one:
 *   - no fork: no two acknowledged writes replaced the same version;
 *   - no gap: each acknowledged write replaced the version the previous one made;
 *   - the final value equals the initial value plus the number of
 *     acknowledged writes, and the chain ends at the version read at the end.
 * A retried request that was acknowledged twice (the same invocation id) is
 * one write.
 */

export interface AckedWrite {
  /** Who wrote (for messages). */
  writer: string;
  /** The request's amz-sdk-invocation-id, when it had one: acks of the same id are one write. */
  invocation?: string;
  /** The version the write was conditioned on (its If-Match, or the read it was derived from). */
  from: string;
  /** The version the write made (the ETag answered). */
  to: string;
  /** The counter value written. */
  value: number;
}

export interface ChainVerdict {
  ok: boolean;
  /** What is wrong, for the assertion message; empty when ok. */
  problems: string[];
  /** Acknowledged writes after merging retries of one invocation. */
  writes: number;
}

/**
 * @param initial the version the counter started at, and its value
 * @param final the version and value read after every writer stopped
 */
export function checkChain(initial: { etag: string; value: number }, acks: AckedWrite[], final: { etag: string; value: number }): ChainVerdict {
  const problems: string[] = [];
  // One write per invocation: a retry acknowledged again must name the same step.
  const byInvocation = new Map<string, AckedWrite>();
  const writes: AckedWrite[] = [];
  for (const ack of acks) {
    if (ack.invocation === undefined) {
      writes.push(ack);
      continue;
    }
    const seen = byInvocation.get(ack.invocation);
    if (seen === undefined) {
      byInvocation.set(ack.invocation, ack);
      writes.push(ack);
    } else if (seen.from !== ack.from || seen.to !== ack.to) {
      problems.push(`invocation ${ack.invocation} acknowledged twice as different writes: ${seen.from}→${seen.to} and ${ack.from}→${ack.to}`);
    }
  }
  const next = new Map<string, AckedWrite>();
  for (const w of writes) {
    const other = next.get(w.from);
    if (other) problems.push(`fork: ${other.writer} and ${w.writer} both replaced ${w.from} (→ ${other.to}, → ${w.to}); one increment is lost`);
    else next.set(w.from, w);
  }
  let at = initial.etag;
  let value = initial.value;
  let steps = 0;
  const visited = new Set<string>([at]);
  for (let w = next.get(at); w !== undefined; w = next.get(at)) {
    if (w.value !== value + 1) problems.push(`${w.writer} wrote ${w.value} over ${value}`);
    at = w.to;
    value = w.value;
    steps++;
    if (visited.has(at)) {
      problems.push(`cycle at ${at}`);
      break;
    }
    visited.add(at);
  }
  if (steps !== writes.length) problems.push(`gap: ${writes.length} acknowledged writes, but the chain from ${initial.etag} has ${steps}`);
  if (at !== final.etag) problems.push(`the chain ends at ${at}, but the final version is ${final.etag}`);
  if (final.value !== initial.value + writes.length) problems.push(`final value ${final.value}, expected ${initial.value} + ${writes.length} acknowledged increments`);
  return { ok: problems.length === 0, problems, writes: writes.length };
}
