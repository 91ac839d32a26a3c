/**
 * CopyObject (https://docs.aws.amazon.com/AmazonS3/latest/API/API_CopyObject.html):
 * x-amz-metadata-directive COPY (default) or REPLACE, x-amz-copy-source-if-*
 * on the source, If-Match / If-None-Match and the agent rules on the
 * destination. The copy is a guarded write of the source's bytes, so the
 * destination ETag is the SHA-256 of its content like any other object.
 * The copy has a full-object checksum of the algorithm x-amz-checksum-algorithm
 * names, else of the source's algorithm (as S3 copies keep it).
 *
 * Two ways, the same guarded write (s3/write.ts): in front of an upstream that
 * pins a copy's source and enforces its destination condition (capability
 * probe, backends/s3/capabilities.ts), ONE upstream CopyObject after a look
 * at the source (copyUpstream); everywhere else casket reads the source and
 * writes its bytes (copyBytes).
 */
import { CopySourceChanged, type ObjectHeaders, type ObjectInfo } from '../../backends/types.js';
import { parseChecksumAlgorithmName, type ChecksumAlgorithm } from '../../vocabulary/checksums.js';
import { S3Error } from '../../vocabulary/errors.js';
import { formatETag } from '../../vocabulary/etag.js';
import type { Handler, RequestContext, Services } from '../context.js';
import { requireKey } from '../context.js';
import { checksumElements } from '../checksum-headers.js';
import { copyPayload, openCopySource, parseCopySource } from '../copy-source.js';
import { checkCopySourceConditions } from '../read-conditions.js';
import { encryptionFrom, encryptionHeaders, madeVersionHeader, metadataFrom, objectHeadersFrom, passedThroughFrom, withoutEncryption } from '../object-headers.js';
import { copyTagging } from '../passthrough.js';
import { xmlDate, xmlResponse, type S3Response } from '../respond.js';
import { guardedWrite, writeConditionsFrom } from '../write.js';

function copyChecksum(headers: Record<string, string>, source: ObjectInfo): ChecksumAlgorithm | undefined {
  const named = headers['x-amz-checksum-algorithm'];
  if (named === undefined) return source.checksum?.algorithm;
  const algorithm = parseChecksumAlgorithmName(named);
  if (algorithm === undefined) throw new S3Error('InvalidRequest', 'Checksum algorithm provided is unsupported.');
  return algorithm;
}

/** CopyObject's limit for one request (API_CopyObject): larger sources are copied by casket. */
const MAX_COPY_SIZE = 5 * 1024 ** 3;

export const CopyObject: Handler = async (ctx, services) => {
  const { bucket, key } = requireKey(ctx);
  const named = parseCopySource(ctx.headers);
  const directive = (ctx.headers['x-amz-metadata-directive'] ?? 'COPY').toUpperCase();
  if (directive !== 'COPY' && directive !== 'REPLACE') throw new S3Error('InvalidArgument', { message: 'Unknown metadata directive.', fields: { ArgumentName: 'x-amz-metadata-directive', ArgumentValue: directive } });
  // Copying an older version onto its own key changes the object: allowed (docs/design.md §10).
  if (directive === 'COPY' && named.bucket === bucket && named.key === key && named.versionId === undefined) {
    throw new S3Error('InvalidRequest', "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.");
  }
  // An agent's write always carries a condition (the guard derives it); anyone else's only when sent.
  const conditioned = ctx.agent !== undefined || ctx.headers['if-match'] !== undefined || ctx.headers['if-none-match'] !== undefined;
  if (named.versionId === undefined && (await services.backend.copiesInOneRequest?.(bucket, conditioned))) {
    const made = await copyUpstream(ctx, services, bucket, key, named, directive);
    if (made) return made;
  }
  return copyBytes(ctx, services, bucket, key, directive);
};

/** The destination's headers and metadata (encryption, lock and ACL are the copy request's own; tags: passthrough.ts). */
function destinationOf(ctx: RequestContext, src: ObjectInfo, directive: string, upstream: boolean): { headers: ObjectHeaders; metadata: Record<string, string> } {
  const headers = directive === 'REPLACE' ? objectHeadersFrom(ctx.headers, upstream) : { ...withoutEncryption(src.headers), ...encryptionFrom(ctx.headers), ...(upstream && passedThroughFrom(ctx.headers)) };
  delete headers.tagging;
  return { headers, metadata: directive === 'REPLACE' ? metadataFrom(ctx.headers) : src.metadata };
}

function copied(ctx: RequestContext, info: ObjectInfo, source: { versionId?: string; info: ObjectInfo }): S3Response {
  const version = source.info.versionId ?? source.versionId;
  return xmlResponse('CopyObjectResult', { LastModified: xmlDate(info.lastModified), ETag: formatETag(info.etag, ctx.etagSuffix), ...checksumElements(info.checksum) }, 200, { ...madeVersionHeader(info), ...(version !== undefined && { 'x-amz-copy-source-version-id': version }), ...encryptionHeaders(info.headers) });
}

/**
 * The upstream copies (backends/s3/copy.ts): the source is looked at (its
 * casket ETag, headers, metadata), never read, and the copy is the same
 * guarded write as any other. undefined: this way does not fit the source
 * (a multipart source, whose SHA-256 casket does not know; a checksum to
 * compute; over 5 GiB), or the source changed before the upstream copied it
 * — then casket copies the bytes.
 */
async function copyUpstream(ctx: RequestContext, services: Services, bucket: string, key: string, named: { bucket: string; key: string }, directive: string): Promise<S3Response | undefined> {
  const src = await services.backend.headObject(named.bucket, named.key);
  if (!src) throw new S3Error('NoSuchKey', { fields: { Key: named.key } });
  checkCopySourceConditions(src, ctx.headers);
  const algorithm = copyChecksum(ctx.headers, src);
  const checksum = src.checksum?.type === 'FULL_OBJECT' && src.checksum.algorithm === algorithm ? src.checksum : undefined;
  if (src.etag.includes('-') || src.size > MAX_COPY_SIZE || (algorithm !== undefined && checksum === undefined)) return undefined;
  const { headers, metadata } = destinationOf(ctx, src, directive, true);
  const tagging = await copyTagging(ctx.headers, { ...named, ...(src.headers.taggingCount !== undefined && { taggingCount: src.headers.taggingCount }) }, services.backend, ctx.access);
  if (tagging !== undefined) headers.tagging = tagging;
  try {
    const info = await guardedWrite<ObjectInfo>({
      ctx,
      services,
      bucket,
      key,
      operation: 'CopyObject',
      conditions: writeConditionsFrom(ctx.headers),
      declaredSha256: src.etag,
      // Refused, the commit still learns whether the destination already holds these bytes (no upstream write).
      bodyComing: true,
      commit: (permit) => services.backend.copyObject!({ bucket: named.bucket, key: named.key, info: src }, bucket, key, { ...permit, headers, metadata, ...(ctx.agent !== undefined && { writer: ctx.agent }), ...(checksum && { checksum }) }),
      written: (info) => info,
      landed: (current) => current!,
    });
    return copied(ctx, info, { info: src });
  } catch (e) {
    if (e instanceof CopySourceChanged) return undefined;
    throw e;
  }
}

/** casket copies: the source's bytes read (one GET) and written by a guarded PutObject. */
async function copyBytes(ctx: RequestContext, services: Services, bucket: string, key: string, directive: string): Promise<S3Response> {
  const source = await openCopySource(services.backend, ctx.headers);
  const src = source.reader.info;
  const upstream = services.backend.forward !== undefined;
  const { headers, metadata } = destinationOf(ctx, src, directive, upstream);
  const tagging = upstream
    ? await copyTagging(ctx.headers, { ...source, ...(src.headers.taggingCount !== undefined && { taggingCount: src.headers.taggingCount }) }, services.backend, ctx.access).catch((e: unknown) => {
        source.reader.release?.();
        throw e;
      })
    : undefined;
  if (tagging !== undefined) headers.tagging = tagging;
  const info = await guardedWrite<ObjectInfo>({
    ctx,
    services,
    bucket,
    key,
    operation: 'CopyObject',
    conditions: writeConditionsFrom(ctx.headers),
    // A single-part source's ETag is the SHA-256 of what the destination will hold.
    ...(!src.etag.includes('-') && { declaredSha256: src.etag }),
    bodyComing: true,
    commit: (permit) =>
      services.backend.putObject(bucket, key, copyPayload(source, undefined, false, copyChecksum(ctx.headers, src)), {
        ...permit,
        headers,
        metadata,
        ...(ctx.agent !== undefined && { writer: ctx.agent }),
        ...(!src.etag.includes('-') && { declaredSha256: src.etag }),
        contentLength: src.size,
        // The source's full-object checksum of the same algorithm is the copy's: known before the bytes.
        ...(src.checksum?.type === 'FULL_OBJECT' && src.checksum.algorithm === copyChecksum(ctx.headers, src) && { declaredChecksum: { algorithm: src.checksum.algorithm, value: src.checksum.value } }),
      }),
    written: (info) => info,
    landed: (current) => current!,
  }).finally(() => source.reader.release?.());
  return copied(ctx, info, { ...(source.versionId !== undefined && { versionId: source.versionId }), info: src });
}
