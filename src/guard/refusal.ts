/**
 * A write the guard refuses, with everything an agent needs to recover
 * (docs/design.md §3–4): the current version, who wrote it, a machine-readable reason
 * and a sentence an LLM can act on. s3/refusal-error.ts renders it as S3 XML.
 */
import type { ObjectInfo } from '../backends/types.js';

export type RefusalReason =
  /** An explicit If-Match / If-None-Match did not hold (plain S3 semantics). */
  | 'precondition-failed'
  /** If-Match named a key that does not exist. */
  | 'no-such-key'
  /** An agent wrote without If-Match / If-None-Match. */
  | 'precondition-required'
  /** The agent's latest read of the current version did not cover all of it. */
  | 'partial-read'
  /** The agent last read (or wrote) a different version than the one it names. */
  | 'stale-read'
  /** Read-stamp policy: the agent never read this key, which exists. */
  | 'not-read'
  /** A write asking to be merged (x-casket-merge: text) changed lines the current version changed too. */
  | 'merge-conflict';

/** The request header whose condition failed, as S3 names it in the error's `<Condition>`. */
export type ConditionHeader = 'If-Match' | 'If-None-Match' | 'x-amz-if-match-size' | 'x-amz-if-match-last-modified-time';

export interface RefusalDetails {
  /** Which condition failed; If-Match unless said otherwise. */
  condition?: ConditionHeader;
  /**
   * The current content is byte-for-byte what the refused write sent (its
   * SHA-256 equals the current ETag; for a delete, the key is already gone).
   * Still a refusal (docs/design.md §3), but the client can tell its own landed
   * earlier attempt from somebody else's conflicting write.
   */
  identical?: boolean;
  /** Path of the diff from the version the agent last saw to the current one (docs/design.md §6). */
  diff?: string;
  /**
   * The access key id of the request without an agent that wrote the current
   * version, from the write log (s3/write.ts asks it only once a write is
   * refused): a person's version is named by its key, as the write log names it.
   */
  writerAccessKey?: string;
  /** Path of the merge with conflict markers, for a merge-conflict. */
  merge?: string;
  /** Already counted and logged (Guard.report): a refusal is counted once, however many layers it passes. */
  counted?: boolean;
}

export class Refusal extends Error {
  constructor(
    readonly reason: RefusalReason,
    readonly bucket: string,
    readonly key: string,
    readonly current: ObjectInfo | null,
    /** The version the agent last read or wrote, for stale/partial reads. */
    readonly lastSeenETag?: string,
    readonly details: RefusalDetails = {},
  ) {
    super(reason);
    this.name = 'Refusal';
  }

  /** The same refusal, against the version current now and with more details. */
  with(current: ObjectInfo | null, details: RefusalDetails): Refusal {
    return new Refusal(this.reason, this.bucket, this.key, current, this.lastSeenETag, { ...this.details, ...details });
  }
}
