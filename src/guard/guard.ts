/**
 * The guard: decides whether a write may go ahead and under which
 * CommitCondition the backend must commit it (DESIGN §3–4), and keeps read
 * stamps up to date. It works on plain values; the HTTP layer reads the
 * current version, calls `checkWrite`, and hands the condition to the backend,
 * which re-checks it atomically at commit.
 *
 * Order of rules, for a write:
 *   1. A retried write whose declared SHA-256 is already the current version
 *      succeeds (before any agent rule).
 *   2. Explicit If-Match / If-None-Match, as S3: 404 / 412 / 501.
 *   3. Agents only: no condition → 428 (or, under the read-stamp policy, the
 *      condition is derived from the agent's last full read); a partial latest
 *      read of the current version → 412 partial-read; a last full read of
 *      another version → 412 stale-read.
 * Modes: enforce refuses; observe counts and logs what it would refuse; off
 * applies only plain S3 semantics.
 */
import type { CommitCondition, ObjectInfo } from '../backends/types.js';
import type { StateStore, WriteLogEntry } from '../state/types.js';
import { commitConditionFor, evaluateWrite, hasWriteCondition, type WriteConditions } from './preconditions.js';
import { Refusal, type RefusalReason } from './refusal.js';

export type GuardMode = 'enforce' | 'observe' | 'off';
export type AgentWritePolicy = 'require' | 'read-stamp';

export interface GuardOptions {
  mode: GuardMode;
  agentWrites: AgentWritePolicy;
  /** Called for every refusal, enforced or (observe mode) not. */
  onRefusal?: (reason: RefusalReason, enforced: boolean, context: { agent?: string; bucket: string; key: string }) => void;
}

export interface WriteRequest {
  bucket: string;
  key: string;
  agent?: string;
  current: ObjectInfo | null;
  conditions: WriteConditions;
  /** SHA-256 hex of the new content when declared before the body (signed payload hash, x-amz-checksum-sha256). */
  declaredSha256?: string;
}

export interface WritePermit {
  condition: CommitCondition;
  sameContentWins: boolean;
}

export class Guard {
  constructor(private readonly state: StateStore, private readonly options: GuardOptions) {}

  get mode(): GuardMode {
    return this.options.mode;
  }

  async checkWrite(w: WriteRequest): Promise<WritePermit> {
    const { current, conditions } = w;
    // 1. Idempotent retry: the content is already there.
    if (w.declaredSha256 && current && current.etag === w.declaredSha256) {
      return { condition: commitConditionFor(conditions), sameContentWins: true };
    }
    // 2. Explicit conditions: plain S3 semantics for everyone, in every mode.
    const verdict = evaluateWrite(current, conditions);
    if (!verdict.ok) throw new Refusal(verdict.failure, w.bucket, w.key, current);
    if (!w.agent || this.options.mode === 'off') return { condition: verdict.condition, sameContentWins: true };

    // 3. Agent rules.
    const derived = await this.agentRules(w as WriteRequest & { agent: string });
    if (derived instanceof Refusal) {
      const enforced = this.options.mode === 'enforce';
      this.options.onRefusal?.(derived.reason, enforced, { agent: w.agent, bucket: w.bucket, key: w.key });
      if (enforced) throw derived;
      return { condition: verdict.condition, sameContentWins: true };
    }
    return { condition: derived, sameContentWins: true };
  }

  private async agentRules(w: WriteRequest & { agent: string }): Promise<CommitCondition | Refusal> {
    const { current, conditions } = w;
    const stamp = await this.state.getStamp(w.agent, w.bucket, w.key);
    const refuse = (reason: RefusalReason) => new Refusal(reason, w.bucket, w.key, current, stamp?.etag);

    if (!hasWriteCondition(conditions)) {
      if (this.options.agentWrites === 'require') return refuse('precondition-required');
      // Read-stamp policy: condition the write on what the agent last read whole,
      // or make it create-only when the agent never read the key.
      if (!stamp) return current ? refuse('not-read') : { type: 'if-none-match' };
      if (!stamp.full) return refuse('partial-read');
      if (!current || current.etag !== stamp.etag) return refuse('stale-read');
      return { type: 'if-match', etags: [stamp.etag] };
    }
    // If-None-Match: * creates; evaluateWrite has already checked the key is absent.
    if (conditions.ifMatch === undefined || !current) return commitConditionFor(conditions);
    if (stamp && stamp.etag === current.etag && !stamp.full) return refuse('partial-read');
    if (stamp && stamp.etag !== current.etag) return refuse('stale-read');
    return commitConditionFor(conditions);
  }

  /** A write lost at commit time (the version changed after checkWrite): the same 412 as any other. */
  conflict(bucket: string, key: string, current: ObjectInfo | null, conditions: WriteConditions): Refusal {
    if (!current && conditions.ifMatch !== undefined) return new Refusal('no-such-key', bucket, key, null);
    return new Refusal(hasWriteCondition(conditions) ? 'precondition-failed' : 'stale-read', bucket, key, current);
  }

  /** Bytes [start, end) of `info` were delivered to the agent (complete: to the last byte asked for). */
  async recordRead(agent: string, info: ObjectInfo, start: number, end: number, complete: boolean): Promise<void> {
    await this.state.recordRead(agent, info.bucket, info.key, { etag: info.etag, size: info.size, start, end: complete ? end : start });
  }

  async recordWrite(entry: Omit<WriteLogEntry, 'at'>, written: ObjectInfo | null): Promise<void> {
    if (entry.agent) {
      if (written) await this.state.recordWrite(entry.agent, entry.bucket, entry.key, written.etag, written.size);
      else await this.state.forgetStamp(entry.agent, entry.bucket, entry.key);
    }
    await this.state.appendWriteLog({ at: new Date(), ...entry });
  }
}
