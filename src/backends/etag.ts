/**
 * The object ETags every backend computes (DESIGN §2): the SHA-256 of the
 * content, or, for an object made by multipart upload, the SHA-256 of the
 * concatenated 32-byte part digests followed by `-<part count>` (the shape of
 * S3's MD5-of-MD5s ETag, with SHA-256).
 */
import { createHash } from 'node:crypto';

export function multipartETag(partDigests: readonly Buffer[]): string {
  const hash = createHash('sha256');
  for (const digest of partDigests) hash.update(digest);
  return `${hash.digest('hex')}-${partDigests.length}`;
}
