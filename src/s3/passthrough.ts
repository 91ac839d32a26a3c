/**
 * What passes through to an upstream besides the bytes (issue 44): Object
 * Lock, tags and ACLs. In front of an upstream, every sub-resource casket
 * does not model is forwarded after auth (operations/unmodeled.ts), the
 * modeled stand-ins (GetBucketPolicy, GetBucketTagging, the ACL operations)
 * are forwarded too, and a write's lock, tagging and ACL headers go up with
 * it (object-headers.ts passedThroughFrom); GET/HEAD answer the upstream's
 * x-amz-object-lock-* and x-amz-tagging-count. casket changes one thing:
 * the ETag, its SHA-256 (docs/design.md §2).
 *
 * The embedded store keeps no lock: a write asking for one is refused with
 * 501 NotImplemented, never accepted unlocked (a retention a client believes
 * it has and does not is the worst kind of silent drop).
 */
import type { Backend } from '../backends/types.js';
import { S3Error } from '../vocabulary/errors.js';
import { readXmlBody } from '../vocabulary/xml.js';
import type { AccessCheck } from './access.js';
import { objectResource } from './actions.js';

const LOCK_PREFIX = 'x-amz-object-lock-';
export const BUCKET_LOCK_HEADER = 'x-amz-bucket-object-lock-enabled';

/** The embedded store refuses a write or a CreateBucket that asks for Object Lock. */
export function refuseObjectLock(headers: Record<string, string>, upstream: boolean): void {
  if (upstream) return;
  const asked = Object.keys(headers).find((name) => name.startsWith(LOCK_PREFIX) || (name === BUCKET_LOCK_HEADER && headers[name]!.toLowerCase() === 'true'));
  if (asked === undefined) return;
  throw new S3Error('NotImplemented', `casket's embedded store does not implement Object Lock (${asked}): refused rather than stored unlocked. Put casket in front of an upstream that does.`);
}

/**
 * A copy's tags (API_CopyObject x-amz-tagging-directive): REPLACE takes the
 * request's x-amz-tagging; COPY (the default) the source's, read from the
 * upstream — casket writes the copy itself (GET + guarded PUT), so the
 * upstream never copies them. Reading them needs s3:GetObjectTagging (or the
 * version form) on the source, as AWS requires. undefined: no tags.
 */
export async function copyTagging(
  headers: Record<string, string>,
  source: { bucket: string; key: string; versionId?: string; taggingCount?: string },
  backend: Backend,
  access: AccessCheck,
): Promise<string | undefined> {
  const directive = (headers['x-amz-tagging-directive'] ?? 'COPY').toUpperCase();
  if (directive !== 'COPY' && directive !== 'REPLACE') throw new S3Error('InvalidArgument', { message: 'Unknown tagging directive.', fields: { ArgumentName: 'x-amz-tagging-directive', ArgumentValue: directive } });
  if (directive === 'REPLACE') return headers['x-amz-tagging'];
  if (!backend.forward || Number(source.taggingCount ?? '0') === 0) return undefined;
  access.authorize({ action: source.versionId !== undefined ? 's3:GetObjectVersionTagging' : 's3:GetObjectTagging', resource: objectResource(source.bucket, source.key) });
  const res = await backend.forward({ method: 'GET', bucket: source.bucket, key: source.key, query: { tagging: '', ...(source.versionId !== undefined && { versionId: source.versionId }) }, headers: {} });
  if (res.status >= 300) {
    res.body.destroy();
    throw new S3Error('InternalError', `The upstream answered ${res.status} to reading the copy source's tags.`);
  }
  const doc = await readXmlBody(res.body);
  const tagSet = (doc.Tagging as { TagSet?: { Tag?: unknown } } | undefined)?.TagSet?.Tag;
  const tags = (Array.isArray(tagSet) ? tagSet : tagSet !== undefined ? [tagSet] : []) as Array<{ Key?: string; Value?: string }>;
  if (tags.length === 0) return undefined;
  return tags.map((t) => `${encodeURIComponent(t.Key ?? '')}=${encodeURIComponent(t.Value ?? '')}`).join('&');
}
