/**
 * CopyObject made by the upstream itself: one request, no byte through
 * casket (https://docs.aws.amazon.com/AmazonS3/latest/API/API_CopyObject.html).
 *
 * casket's ETag is the SHA-256 of the content, and a copy has its source's
 * content — provided the upstream copies exactly the version casket looked
 * at. So the request carries `x-amz-copy-source-if-match` with that
 * version's upstream ETag, and the write's own condition goes on the
 * destination as for any write (commit.ts, kind CopyObject: If-Match /
 * If-None-Match: *, which AWS enforces on CopyObject since 2025-10, and
 * MinIO). Used only where the capability probe found both enforced
 * (Backend.copiesInOneRequest); elsewhere the copy is a GET and a guarded PUT
 * (s3/operations/copy-object.ts).
 *
 * The metadata directive sent is always REPLACE and the tagging directive
 * REPLACE: the destination's headers, metadata and tags are the ones the
 * caller worked out (COPY: the source's, as read), with casket's own
 * (`casket-sha256`, `casket-writer`, `casket-checksum`) for the new version.
 *
 * A 412 is ambiguous (the source pin, or the destination condition): the
 * source is looked at again, and a source that moved on throws
 * CopySourceChanged (the caller copies again from what is current);
 * otherwise the refusal is the destination's, re-evaluated by the commit loop.
 */
import { encodeChecksum } from '../multipart-checksum.js';
import { CopySourceChanged, type CopyObjectOptions, type CopyObjectSource, type ObjectInfo } from '../types.js';
import { unquote } from './capabilities.js';
import { encodeRfc3986, errorFromText, readText, type UpstreamClient, type UpstreamRequest } from './client.js';
import { REFUSED, refusedUpstream, type Committer } from './commit.js';
import { META_CHECKSUM, META_SHA256, META_WRITER, upstreamObjectHeaders, withoutCasketMeta, type ETagResolver, type UpstreamObject } from './etags.js';
import type { Versions } from './versions.js';

export async function copyObject(client: UpstreamClient, etags: ETagResolver, versions: Versions, committer: Committer, source: CopyObjectSource, bucket: string, key: string, options: CopyObjectOptions): Promise<ObjectInfo> {
  const etag = source.info.etag;
  // The version the caller read: remembered by the look it made (a HEAD), else looked at now.
  const pinned = await pinnedSource(versions, source);
  const headers: Record<string, string> = {
    ...upstreamObjectHeaders(options.headers, options.metadata),
    'x-amz-copy-source': `${encodeRfc3986(source.bucket)}/${source.key.split('/').map(encodeRfc3986).join('/')}`,
    'x-amz-copy-source-if-match': `"${pinned.upstreamETag}"`,
    'x-amz-metadata-directive': 'REPLACE',
    'x-amz-tagging-directive': 'REPLACE',
    [`x-amz-meta-${META_SHA256}`]: etag,
    ...(options.writer !== undefined && { [`x-amz-meta-${META_WRITER}`]: options.writer }),
    ...(options.checksum && { [`x-amz-meta-${META_CHECKSUM}`]: encodeChecksum(options.checksum) }),
  };
  return committer.run(bucket, key, 'CopyObject', options, etag, async (condition) => {
    const req: UpstreamRequest = { method: 'PUT', bucket, key, headers: { ...headers, ...condition } };
    const res = await client.send(req);
    const refused = await refusedUpstream(res, req, true);
    const text = refused ? '' : await readText(res);
    // CopyObject may answer 200 with an <Error> body (API_CopyObject).
    const failedInBody = /<Error>[\s\S]*<Code>([^<]*)<\/Code>/.exec(text)?.[1];
    if (refused || failedInBody === 'PreconditionFailed' || failedInBody === 'ConditionalRequestConflict') {
      const now = await versions.current(source.bucket, source.key);
      if (now?.upstreamETag !== pinned.upstreamETag) throw new CopySourceChanged();
      return REFUSED;
    }
    if (failedInBody !== undefined) throw errorFromText(500, text, req);
    const upstreamETag = unquote(/<ETag>([^<]*)<\/ETag>/.exec(text)?.[1]?.replace(/&quot;/g, '"') ?? '');
    const lastModified = /<LastModified>([^<]*)<\/LastModified>/.exec(text)?.[1];
    const info: ObjectInfo = {
      bucket,
      key,
      etag,
      size: source.info.size,
      lastModified: lastModified ? new Date(lastModified) : new Date(),
      headers: options.headers,
      metadata: withoutCasketMeta(options.metadata),
      ...(options.writer !== undefined && { writer: options.writer }),
      ...(options.checksum && { checksum: options.checksum }),
      ...(res.headers['x-amz-version-id'] !== undefined && { versionId: res.headers['x-amz-version-id'] }),
    };
    if (upstreamETag !== '') {
      // As PutObject (objects.ts): the index entry may be lost, never the answer.
      await etags.remember(bucket, key, upstreamETag, etag, undefined, options.checksum && { checksum: options.checksum }, options.index).catch(() => {});
      versions.seen(bucket, key, { info, upstreamETag });
    } else versions.unseen(bucket, key);
    return info;
  });
}

/** The upstream version whose casket ETag the caller read, or CopySourceChanged. */
async function pinnedSource(versions: Versions, source: CopyObjectSource): Promise<UpstreamObject> {
  const seen = versions.lastSeenOf(source.bucket, source.key);
  if (seen?.info.etag === source.info.etag) return seen;
  const now = await versions.current(source.bucket, source.key);
  if (now?.info.etag !== source.info.etag) throw new CopySourceChanged();
  return now;
}
