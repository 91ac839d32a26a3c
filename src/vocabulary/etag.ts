/**
 * ETags on the wire (docs/design.md §2). Inside casket an ETag is unquoted: the
 * SHA-256 of the content (64 hex) or `<sha256 of part digests>-<N>`. On the
 * wire it is quoted (RFC 9110 §8.8.3), and for clients that take a dash-less
 * ETag for an MD5 (s3cmd 2.3.0, AWS SDK for Java v1 — README "Clients") a plain
 * ETag is shown as `"<sha256>-1"`. Conditions may name either form.
 */
import { createHash } from 'node:crypto';

export const SHA256_HEX = /^[0-9a-f]{64}$/;

/** The ETag as this client should see it, quoted. */
export function formatETag(etag: string, suffixed: boolean): string {
  return suffixed && !etag.includes('-') ? `"${etag}-1"` : `"${etag}"`;
}

/** Strips quotes and a weak-validator prefix: `W/"abc"` → `abc`. */
export function unquoteETag(value: string): string {
  let v = value.trim();
  if (v.startsWith('W/')) v = v.slice(2);
  if (v.length >= 2 && v.startsWith('"') && v.endsWith('"')) v = v.slice(1, -1);
  return v.toLowerCase();
}

/**
 * The list form of If-Match / If-None-Match (RFC 9110 §13.1.1): `*` or
 * comma-separated entity tags, quoted or not (S3 accepts both).
 */
export function parseETagList(header: string): string[] | '*' {
  const trimmed = header.trim();
  if (trimmed === '*') return '*';
  return trimmed
    .split(',')
    .map((part) => unquoteETag(part))
    .filter((part) => part.length > 0);
}

/** Every stored ETag a condition value may stand for (`X-1` is also plain X shown suffixed). */
export function expandETag(value: string): string[] {
  const m = /^([0-9a-f]{64})-1$/.exec(value);
  return m ? [value, m[1]!] : [value];
}

/** Whether a condition value names the stored ETag `current`. */
export function etagMatches(value: string, current: string): boolean {
  return value === current || (!current.includes('-') && value === `${current}-1`);
}

/**
 * The ETag of an object made by multipart upload: the SHA-256 of the
 * concatenated 32-byte part digests followed by `-<part count>` (the shape of
 * S3's MD5-of-MD5s ETag, with SHA-256). Every backend computes it this way.
 */
export function multipartETag(partDigests: readonly Buffer[]): string {
  const hash = createHash('sha256');
  for (const digest of partDigests) hash.update(digest);
  return `${hash.digest('hex')}-${partDigests.length}`;
}
