/**
 * Retention of the versions agents saw (docs/design.md §6): the content of
 * small objects that an agent read in full or wrote, kept content-addressed by
 * SHA-256 so casket can show what changed since (a diff) and merge an edit
 * made on an older version (three-way). Within a byte budget and the stamp
 * TTL, oldest touched evicted first.
 *
 * Implementations: files.ts (a folder in the data dir: the embedded store,
 * or one casket in front of an upstream) and redis.ts (--state redis: every
 * replica sharing the Redis sees the same retained versions).
 *
 * Retained content is casket's own: it is never listed, never served as the
 * object, only read back by /_casket/diff and the merge of a write.
 *
 * Known gaps: content is keyed by its SHA-256, which is the casket ETag of
 * single-part objects only; multipart objects (ETag `<sha>-N`) are not kept.
 * A version stays while the budget allows, not only while some agent's stamp
 * names it.
 */
import { createHash } from 'node:crypto';

export interface RetentionLimits {
  /** The most bytes kept in all; the oldest touched go first. */
  maxBytes: number;
  /** Content not touched for this long is gone (the stamp TTL). */
  ttlMs: number;
}

export interface Retention {
  /** Keeps `content` under `sha256` (its hex SHA-256), or refreshes its age when already kept. */
  keep(sha256: string, content: Buffer): Promise<void>;
  /** Refreshes the age of kept content; false when it is not kept. */
  touch(sha256: string): Promise<boolean>;
  get(sha256: string): Promise<Buffer | undefined>;
  /** Bytes kept now (the budget figure in the metrics). */
  bytes(): Promise<number>;
  close(): Promise<void>;
}

export function sha256Hex(content: Buffer): string {
  return createHash('sha256').update(content).digest('hex');
}

/** A casket ETag that is the SHA-256 of the content (not a multipart `-N` one). */
export function isContentETag(etag: string): boolean {
  return /^[0-9a-f]{64}$/.test(etag);
}
