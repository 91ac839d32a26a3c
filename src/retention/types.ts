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
 * A version is kept as a version OF ONE KEY: under (bucket, key, ETag), never
 * by its ETag alone. An ETag is no secret (a listing shows it to any key that
 * may list the bucket), so a lookup by ETag alone would hand the bytes of
 * `secret/payroll.txt` to a key that may read only `pub/mine.txt` and names
 * the payroll's ETag as a version of its own file (docs/design.md §14; AWS
 * likewise serves a version id only with the key it belongs to:
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/RetrievingObjectVersions.html).
 * Every way in that keeps a version knows which key it is a version of (an
 * agent's read or write of that key, a merge of it, the pre-image of a write
 * to it); every way in that reads one names that key, and an ETag that was
 * never kept for it is answered as one nobody kept. The same content under
 * two keys is kept twice: the budget pays for that, not the access check.
 *
 * Known gaps: content is keyed by its SHA-256, which is the casket ETag of
 * single-part objects only; multipart objects (ETag `<sha>-N`) are not kept.
 * A version stays while the budget allows, not only while some agent's stamp
 * names it. A copy (CopyObject) does not keep its source's bytes for the
 * destination key: a diff from the copied version is "not retained" there.
 */
import { createHash } from 'node:crypto';

export interface RetentionLimits {
  /** The most bytes kept in all; the oldest touched go first. */
  maxBytes: number;
  /** Content not touched for this long is gone (the stamp TTL). */
  ttlMs: number;
}

/** A version of one key: `etag` is the hex SHA-256 of its content (unquoted). */
export interface VersionOf {
  bucket: string;
  key: string;
  etag: string;
}

export interface Retention {
  /** Keeps `content` as version `v` (when `v.etag` is its hex SHA-256), or refreshes its age when already kept. */
  keep(v: VersionOf, content: Buffer): Promise<void>;
  /** Refreshes the age of a kept version; false when it is not kept (for this key). */
  touch(v: VersionOf): Promise<boolean>;
  /** The content of `v`, only when it was kept as a version of that very key. */
  get(v: VersionOf): Promise<Buffer | undefined>;
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

/**
 * The name a version is stored under: its ETag, a dot, and the SHA-256 of
 * `bucket/key` (a bucket name has no `/`, so the pair is unambiguous). The
 * ETag leads so an operator can tell a file's version; the key is hashed so
 * any key fits a file name.
 */
export function retainedName(v: VersionOf): string {
  return `${v.etag}.${createHash('sha256').update(`${v.bucket}/${v.key}`).digest('hex')}`;
}

/** A name retainedName made (anything else in a retention folder is a leftover). */
export function isRetainedName(name: string): boolean {
  return /^[0-9a-f]{64}\.[0-9a-f]{64}$/.test(name);
}
