/**
 * The guard: decides whether a write may go ahead and under which
 * CommitCondition the backend must commit it (docs/design.md §3–4), and keeps read
 * stamps up to date. It works on plain values; the HTTP layer reads the
 * current version, calls `checkWrite`, and hands the condition to the backend,
 * which re-checks it atomically at commit.
 *
 * Order of rules, for a write:
 *   1. Explicit If-Match / If-None-Match, as S3: 404 / 412 / 501. A failed
 *      condition is a refusal whatever the bytes (docs/design.md §3); the one success
 *      without a write, an exact retry, is recognised by s3/write.ts.
 *   2. Agents only: no condition → 428 (or, under the read-stamp policy, the
 *      condition is derived from the agent's last full read); If-Match on a key
 *      the agent never read in full (no read, or only HEAD or a listing) → 412
 *      not-read; a partial latest read of the current version → 412
 *      partial-read; a last full read of another version → 412 stale-read.
 *      Creating (If-None-Match: *) needs no read.
 * Modes: enforce refuses; observe counts and logs what it would refuse —
 * except the refusals S3 itself makes (rule 1), which every mode makes; off
 * applies only plain S3 semantics.
 */
import { conditionHolds } from '../backends/commit-condition.js';
import type { CommitCondition, ObjectInfo } from '../backends/types.js';
import type { IndexEntry, StateStore, WriteLogEntry } from '../state/types.js';
import { expandETag } from '../vocabulary/etag.js';
import { commitConditionFor, evaluateWrite, hasWriteCondition, versionConditionFor, type WriteConditions } from './preconditions.js';
import { Refusal, type RefusalReason } from './refusal.js';

export type GuardMode = 'enforce' | 'observe' | 'off';

export type AgentWritePolicy = 'require' | 'read-stamp';

export interface GuardOptions {
  mode: GuardMode;
  agentWrites: AgentWritePolicy;
  /** Called for every refusal, enforced or (observe mode) not. */
  onRefusal?: (reason: RefusalReason, enforced: boolean, context: RefusalContext) => void;
}

/** Who asked, for a refusal answered (report): the event stream tells it (src/events/). */
export interface RefusalRequest {
  accessKey?: string;
  requestId?: string;
  operation?: string;
}

export interface RefusalContext extends RefusalRequest {
  agent?: string;
  bucket: string;
  key: string;
  /** The refusal answered (report only; absent for observe mode's would-be refusals). */
  refusal?: Refusal;
}

export interface WriteRequest {
  bucket: string;
  key: string;
  agent?: string;
  /**
   * The current version, read on demand (memoised by the caller): the happy
   * path of a conditional write never needs it — the backend checks the
   * condition atomically at commit — so an upstream HEAD is paid only to
   * explain a refusal or to refuse early.
   */
  current: () => Promise<ObjectInfo | null>;
  conditions: WriteConditions;
  /** Evaluate explicit conditions now, before the body is sent (Expect: 100-continue). */
  early?: boolean;
}

export interface WritePermit {
  condition: CommitCondition;
  /** Why a failure of `condition` at commit refuses the write, when the guard derived it (read-stamp policy). */
  conflictReason?: RefusalReason;
  /** The version the agent last read, for the refusal's message. */
  lastSeenETag?: string;
}

/** What the agent rules decide without the current version: a condition, or a refusal to explain. */
type AgentDecision = { permit: WritePermit } | { refuse: RefusalReason; lastSeenETag?: string };

/**
 * The longest a write waits for its agent's reads of the same key still being
 * answered: enough for a read's last bytes and its record; a download that
 * runs longer (a large object the agent also writes meanwhile) does not hold
 * the write, which is judged on what is recorded by then.
 */
const READ_WAIT_MS = 5_000;

/** JSON, so no agent, bucket or key can run into the next. */
function readId(agent: string, bucket: string, key: string): string {
  return JSON.stringify([agent, bucket, key]);
}

export class Guard {
  /** Reads being answered to an agent and not yet recorded, by agent, bucket and key (readDelivering). */
  private readonly delivering = new Map<string, Set<Promise<void>>>();

  constructor(private readonly state: StateStore, private readonly options: GuardOptions) {}

  /**
   * A GetObject is being answered to `agent`. Its read is recorded once the
   * last byte has gone (onFinish), and a client holding that byte may write
   * before the record lands: boto3's download_file does, its conditional
   * PutObject right after its last ranged GET, and under load casket judged
   * that write on the stamps without the last range (a 412 partial-read for
   * a whole read). A write by the same agent to the same key waits for such
   * reads (at most READ_WAIT_MS) before it is judged. Returns the function to
   * call once the read is recorded, or not to be (the response was cut).
   * One casket's reads only: with several on Redis, a write that reaches
   * another casket first is judged on what is recorded.
   */
  readDelivering(agent: string, bucket: string, key: string): () => void {
    const id = readId(agent, bucket, key);
    let done!: () => void;
    const read = new Promise<void>((resolve) => (done = resolve));
    const reads = this.delivering.get(id) ?? new Set();
    reads.add(read);
    this.delivering.set(id, reads);
    return () => {
      done();
      reads.delete(read);
      if (reads.size === 0 && this.delivering.get(id) === reads) this.delivering.delete(id);
    };
  }

  private async readsRecorded(agent: string, bucket: string, key: string): Promise<void> {
    const reads = this.delivering.get(readId(agent, bucket, key));
    if (!reads) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(reads), new Promise<void>((resolve) => (timer = setTimeout(resolve, READ_WAIT_MS)))]);
    clearTimeout(timer);
  }

  get mode(): GuardMode {
    return this.options.mode;
  }

  async checkWrite(w: WriteRequest): Promise<WritePermit> {
    const { conditions } = w;
    const plain: WritePermit = { condition: commitConditionFor(conditions) };
    if (w.agent && this.options.mode !== 'off') {
      const decision = await this.agentRules(w as WriteRequest & { agent: string });
      // A size / modification-time condition (conditional deletes) holds at
      // commit on top of whatever the agent rules derived.
      if ('permit' in decision) return this.early(w, { ...decision.permit, condition: { ...decision.permit.condition, ...versionConditionFor(conditions) } });
      const { refusal, byS3 } = await this.explain(w, decision.refuse, decision.lastSeenETag);
      // A refusal S3 itself would make is made in every mode (observe only
      // watches casket's own rules): counted as enforced.
      const enforced = byS3 || this.options.mode === 'enforce';
      // An enforced refusal is counted where it is answered (report): it may
      // still become a 200, as an exact retry (s3/write.ts).
      if (enforced) throw refusal;
      this.options.onRefusal?.(refusal.reason, false, { agent: w.agent, bucket: w.bucket, key: w.key });
      return this.early(w, plain);
    }
    return this.early(w, plain);
  }

  /**
   * With `early` (the client waits on Expect: 100-continue), the permit's
   * condition is checked now against the current version, so a doomed upload
   * is refused before its body is sent. The commit checks it again, atomically.
   */
  private async early(w: WriteRequest, permit: WritePermit): Promise<WritePermit> {
    if (!w.early || permit.condition.type === 'none') return permit;
    const current = await w.current();
    if (conditionHolds(permit.condition, current?.etag ?? null, current ?? undefined)) return permit;
    throw this.conflict(w.bucket, w.key, current, w.conditions, permit);
  }

  /**
   * Turns an agent-rule refusal into the refusal to send, with the current
   * version: the S3 refusal when an explicit condition fails (plain S3
   * semantics first, `byS3`); else the agent rule's.
   */
  private async explain(w: WriteRequest, reason: RefusalReason, lastSeenETag: string | undefined): Promise<{ refusal: Refusal; byS3: boolean }> {
    const current = await w.current();
    const verdict = evaluateWrite(current, w.conditions);
    if (!verdict.ok) return { refusal: new Refusal(verdict.failure, w.bucket, w.key, current, undefined, { condition: verdict.condition }), byS3: true };
    // A partial read of a version that is no longer current is a stale one
    // (a partial-read refusal always names the version read: the agent's stamp).
    const why = reason === 'partial-read' && current?.etag !== lastSeenETag ? 'stale-read' : reason;
    return { refusal: new Refusal(why, w.bucket, w.key, current, lastSeenETag), byS3: false };
  }

  private async agentRules(w: WriteRequest & { agent: string }): Promise<AgentDecision> {
    const { conditions } = w;
    await this.readsRecorded(w.agent, w.bucket, w.key);
    const stamp = await this.state.getStamp(w.agent, w.bucket, w.key);
    const seen = stamp ? { lastSeenETag: stamp.etag } : {};
    if (!hasWriteCondition(conditions)) {
      if (this.options.agentWrites === 'require') return { refuse: 'precondition-required', ...seen };
      // Read-stamp policy: condition the write on what the agent last read whole,
      // or make it create-only when the agent never read the key.
      if (!stamp) return { permit: { condition: { type: 'if-none-match' }, conflictReason: 'not-read' } };
      if (!stamp.full) return { refuse: 'partial-read', ...seen };
      return { permit: { condition: { type: 'if-match', etags: [stamp.etag] }, conflictReason: 'stale-read', ...seen } };
    }
    const permit: WritePermit = { condition: commitConditionFor(conditions) };
    if (conditions.ifMatch === undefined && Array.isArray(conditions.ifNoneMatch)) {
      // If-None-Match: "etag" says which version the write must not replace,
      // not that the agent saw the one it does replace: it creates where the
      // agent read nothing, and otherwise replaces only what the agent last
      // read whole — which must itself not be a version the list names.
      if (!stamp) return { permit: { condition: { type: 'if-none-match' }, conflictReason: 'not-read' } };
      if (conditions.ifNoneMatch.flatMap(expandETag).includes(stamp.etag)) return { refuse: 'stale-read', ...seen };
      if (!stamp.full) return { refuse: 'partial-read', ...seen };
      return { permit: { condition: { type: 'if-match', etags: [stamp.etag] }, conflictReason: 'stale-read', ...seen } };
    }
    if (conditions.ifMatch === undefined) return { permit };
    // If-Match replaces (or deletes) what is there: only what the agent has
    // read in full, never an ETag taken from a HEAD or a listing (a blind
    // overwrite of content it never saw).
    if (!stamp) return { refuse: 'not-read' };
    // The commit succeeds only if the current version is one the If-Match
    // names, so the agent's stamp can be judged against those names alone.
    // If-Match: * on an absent key names no ETag (undefined), which no stamp is.
    const named = conditions.ifMatch === '*' ? [(await w.current())?.etag] : conditions.ifMatch.flatMap(expandETag);
    if (!named.includes(stamp.etag)) return { refuse: 'stale-read', ...seen };
    if (!stamp.full) return { refuse: 'partial-read', ...seen };
    return { permit };
  }

  /**
   * A refusal decided past the guard's rules — a conflict at commit, a
   * person's failed condition, a merge conflict — counted and logged like
   * the others, once: the S3 layer reports every refusal it answers with,
   * and one the guard already counted is not counted again.
   */
  report(refusal: Refusal, agent?: string, request: RefusalRequest = {}): void {
    if (refusal.details.counted) return;
    refusal.details.counted = true;
    this.options.onRefusal?.(refusal.reason, true, { ...request, ...(agent !== undefined && { agent }), bucket: refusal.bucket, key: refusal.key, refusal });
  }

  /** A write lost at commit time: the current version did not satisfy the permit's condition. */
  conflict(bucket: string, key: string, current: ObjectInfo | null, conditions: WriteConditions, permit?: WritePermit): Refusal {
    if (!current && conditions.ifMatch !== undefined) return new Refusal('no-such-key', bucket, key, null);
    // An explicit condition the version current now fails is S3's own
    // refusal, named after that condition (If-Match, x-amz-if-match-size...);
    // its no-such-key (If-Match, no key) was answered just above.
    const verdict = evaluateWrite(current, conditions);
    if (!verdict.ok) return new Refusal('precondition-failed', bucket, key, current, permit?.lastSeenETag, { condition: verdict.condition });
    const reason = permit?.conflictReason ?? (hasWriteCondition(conditions) ? 'precondition-failed' : 'stale-read');
    const condition = permit?.condition.type === 'if-none-match' ? 'If-None-Match' : 'If-Match';
    return new Refusal(reason, bucket, key, current, permit?.lastSeenETag, { condition });
  }

  /**
   * Whether the current version (`current`, null: the key is absent) was made
   * by this very request before: the same access key and the same
   * `amz-sdk-invocation-id`, which AWS SDKs keep across their automatic
   * retries (docs/design.md §3, exact retries). A state store that cannot answer
   * answers no: the retry is refused like any other failed condition.
   */
  async madeBy(bucket: string, key: string, current: ObjectInfo | null, accessKey: string | undefined, invocationId: string | undefined): Promise<boolean> {
    if (accessKey === undefined || invocationId === undefined) return false;
    const last = await this.state.lastWrite(bucket, key).catch(() => undefined);
    return last !== undefined && last.accessKey === accessKey && last.invocationId === invocationId && (last.newETag ?? null) === (current?.etag ?? null);
  }

  /** Bytes [start, end) of `info` were delivered to the agent (complete: to the last byte asked for). */
  async recordRead(agent: string, info: ObjectInfo, start: number, end: number, complete: boolean): Promise<void> {
    await this.state.recordRead(agent, info.bucket, info.key, { etag: info.etag, size: info.size, start, end: complete ? end : start });
  }

  /**
   * `index`: ETag-index entries the backend handed over (WriteOptions.index),
   * recorded with the rest in one step where the store has it
   * (StateStore.recordCommittedWrite; redis: one script, one round trip).
   */
  async recordWrite(entry: Omit<WriteLogEntry, 'at'>, written: ObjectInfo | null, index: IndexEntry[] = []): Promise<void> {
    if (this.state.recordCommittedWrite) {
      const stamp = entry.agent ? { agent: entry.agent, made: written && { etag: written.etag, size: written.size } } : undefined;
      await this.state.recordCommittedWrite({ ...(stamp && { stamp }), log: { at: new Date(), ...entry }, index });
      return;
    }
    for (const e of index) await this.state.putIndexedETag(e.bucket, e.key, e.upstreamETag, e.value);
    if (entry.agent) {
      if (written) await this.state.recordWrite(entry.agent, entry.bucket, entry.key, written.etag, written.size);
      else await this.state.forgetStamp(entry.agent, entry.bucket, entry.key);
    }
    await this.state.appendWriteLog({ at: new Date(), ...entry });
  }
}
