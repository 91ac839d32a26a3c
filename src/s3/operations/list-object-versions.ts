/**
 * ListObjectVersions (https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectVersions.html).
 * The embedded store lists every version and delete marker it keeps
 * (docs/design.md §10; backends/fs/version-listing.ts): <Version> and
 * <DeleteMarker> entries in key order, newest first, IsLatest, paged by
 * key-marker / version-id-marker.
 *
 * A backend without versions of its own lists as S3 does for a bucket that
 * never had versioning enabled: every object once, as a <Version> with
 * VersionId `null` and IsLatest true, no delete markers. Cleanup tools
 * (`aws s3api list-object-versions`, boto3's bucket.object_versions,
 * `rclone purge`) list versions before deleting them with VersionId=null.
 *
 * Built on the object listing (Backend.listObjects), so ETags are casket's
 * SHA-256 ones. Paging:
 * key-marker (keys after it), version-id-marker (only `null`, only with a
 * key-marker: after that key's one version), NextKeyMarker /
 * NextVersionIdMarker when truncated; prefix, delimiter + CommonPrefixes,
 * max-keys (at most 1000), encoding-type=url (keys, Prefix, Delimiter,
 * KeyMarker, NextKeyMarker, common prefixes).
 *
 * In front of an upstream, a bucket with versioning Enabled or Suspended lists
 * the upstream's own versions with every ETag rewritten to casket's
 * (backends/s3/version-reads.ts); one that never had versioning lists as above,
 * from ListObjectsV2, so no upstream quirk of its version listing shows.
 * Either way the entries are written by version-entries.ts, copying the
 * upstream page's bytes where they are exactly the writer's.
 */
import type { ListVersionsResult } from '../../backends/types.js';
import { S3Error } from '../../vocabulary/errors.js';
import type { XmlObject } from '../../vocabulary/xml.js';
import type { Handler } from '../context.js';
import type { S3Response } from '../respond.js';
import { requireBucket } from '../context.js';
import { encoder, parseMaxKeys } from './list-objects.js';
import { NULL_VERSION, nullVersions, versionsXml, type VersionsOptions } from './version-entries.js';

export const ListObjectVersions: Handler = async (ctx, { backend }) => {
  const bucket = requireBucket(ctx);
  const enc = encoder(ctx);
  const maxKeys = parseMaxKeys(ctx.query.get('max-keys'));
  const prefix = ctx.query.get('prefix') ?? '';
  const delimiter = ctx.query.get('delimiter') || undefined;
  const keyMarker = ctx.query.get('key-marker') ?? '';
  const versionIdMarker = ctx.query.get('version-id-marker') ?? '';
  if (versionIdMarker !== '' && keyMarker === '') {
    throw new S3Error('InvalidArgument', { message: 'A version-id marker cannot be specified without a key marker.', fields: { ArgumentName: 'version-id-marker', ArgumentValue: versionIdMarker } });
  }
  const result = await backend.listObjectVersions?.(bucket, { prefix, ...(delimiter !== undefined && { delimiter }), keyMarker, versionIdMarker, maxKeys });
  const encode = ctx.query.get('encoding-type') === null ? undefined : enc;
  const options = { ...(encode && { encode }), etagSuffix: ctx.etagSuffix };
  if (result) {
    return answer({
      Name: bucket,
      Prefix: enc(prefix),
      KeyMarker: enc(keyMarker),
      VersionIdMarker: versionIdMarker,
      NextKeyMarker: result.nextKeyMarker !== undefined ? enc(result.nextKeyMarker) : undefined,
      NextVersionIdMarker: result.nextVersionIdMarker,
      MaxKeys: maxKeys,
      Delimiter: delimiter !== undefined ? enc(delimiter) : undefined,
      IsTruncated: result.isTruncated,
      EncodingType: ctx.query.get('encoding-type') ?? undefined,
    }, result, enc, options);
  }
  if (versionIdMarker !== '' && versionIdMarker !== NULL_VERSION) {
    throw new S3Error('InvalidArgument', { message: 'Invalid version id specified', fields: { ArgumentName: 'version-id-marker', ArgumentValue: versionIdMarker } });
  }
  // Each key has one version, so "after key K's null version" is "after K".
  const listed = await backend.listObjects(bucket, { prefix, delimiter, after: keyMarker || undefined, maxKeys });
  const next = listed.isTruncated ? listed.nextAfter : undefined;
  const nextIsPrefix = next !== undefined && listed.commonPrefixes.includes(next);
  const versions = nullVersions(listed);
  return answer({
    Name: bucket,
    Prefix: enc(prefix),
    KeyMarker: enc(keyMarker),
    VersionIdMarker: versionIdMarker,
    NextKeyMarker: next !== undefined ? enc(next) : undefined,
    NextVersionIdMarker: next !== undefined && !nextIsPrefix ? NULL_VERSION : undefined,
    MaxKeys: maxKeys,
    Delimiter: delimiter !== undefined ? enc(delimiter) : undefined,
    IsTruncated: listed.isTruncated,
    EncodingType: ctx.query.get('encoding-type') ?? undefined,
  }, versions, enc, options);
};

/** The ListVersionsResult: `before`, the versions and delete markers (version-entries.ts), the common prefixes. */
function answer(before: XmlObject, result: ListVersionsResult, enc: (s: string) => string, options: VersionsOptions): S3Response {
  const body = versionsXml(before, result, { CommonPrefixes: result.commonPrefixes.map((p) => ({ Prefix: enc(p) })) }, options);
  return { status: 200, headers: { 'content-type': 'application/xml' }, body };
}
