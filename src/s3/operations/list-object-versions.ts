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
 */
import { S3Error } from '../../vocabulary/errors.js';
import { formatETag } from '../../vocabulary/etag.js';
import type { Handler } from '../context.js';
import { requireBucket } from '../context.js';
import { xmlDate, xmlResponse } from '../respond.js';
import { OWNER } from './buckets.js';
import { encoder, parseMaxKeys } from './list-objects.js';

/** The one version an object of an unversioned bucket has. */
const NULL_VERSION = 'null';

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
  if (result) {
    return xmlResponse('ListVersionsResult', {
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
      // S3 lists versions and markers apart, each in listing order; clients merge them by key.
      Version: result.entries.filter((e) => e.info).map((e) => ({
        Key: enc(e.key),
        VersionId: e.versionId,
        IsLatest: e.isLatest,
        LastModified: xmlDate(e.lastModified),
        ETag: formatETag(e.info!.etag, ctx.etagSuffix),
        Size: e.info!.size,
        Owner: e.owner ?? OWNER,
        StorageClass: 'STANDARD',
      })),
      DeleteMarker: result.entries.filter((e) => !e.info).map((e) => ({
        Key: enc(e.key),
        VersionId: e.versionId,
        IsLatest: e.isLatest,
        LastModified: xmlDate(e.lastModified),
        Owner: e.owner ?? OWNER,
      })),
      CommonPrefixes: result.commonPrefixes.map((p) => ({ Prefix: enc(p) })),
    });
  }
  if (versionIdMarker !== '' && versionIdMarker !== NULL_VERSION) {
    throw new S3Error('InvalidArgument', { message: 'Invalid version id specified', fields: { ArgumentName: 'version-id-marker', ArgumentValue: versionIdMarker } });
  }
  // Each key has one version, so "after key K's null version" is "after K".
  const listed = await backend.listObjects(bucket, { prefix, delimiter, after: keyMarker || undefined, maxKeys });
  const next = listed.isTruncated ? listed.nextAfter : undefined;
  const nextIsPrefix = next !== undefined && listed.commonPrefixes.includes(next);
  return xmlResponse('ListVersionsResult', {
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
    Version: listed.objects.map((o) => ({
      Key: enc(o.key),
      VersionId: NULL_VERSION,
      IsLatest: true,
      LastModified: xmlDate(o.lastModified),
      ETag: formatETag(o.etag, ctx.etagSuffix),
      Size: o.size,
      Owner: OWNER,
      StorageClass: 'STANDARD',
    })),
    CommonPrefixes: listed.commonPrefixes.map((p) => ({ Prefix: enc(p) })),
  });
};
