/**
 * CopyObject (https://docs.aws.amazon.com/AmazonS3/latest/API/API_CopyObject.html):
 * x-amz-metadata-directive COPY (default) or REPLACE, x-amz-copy-source-if-*
 * on the source, If-Match / If-None-Match and the agent rules on the
 * destination. The copy is a guarded write of the source's bytes, so the
 * destination ETag is the SHA-256 of its content like any other object.
 * The copy has a full-object checksum of the algorithm x-amz-checksum-algorithm
 * names, else of the source's algorithm (as S3 copies keep it).
 */
import type { ObjectInfo } from '../../backends/types.js';
import { parseChecksumAlgorithmName, type ChecksumAlgorithm } from '../../vocabulary/checksums.js';
import { S3Error } from '../../vocabulary/errors.js';
import { formatETag } from '../../vocabulary/etag.js';
import type { Handler } from '../context.js';
import { requireKey } from '../context.js';
import { checksumElements } from '../checksum-headers.js';
import { copyPayload, copySourceVersionHeader, openCopySource } from '../copy-source.js';
import { encryptionFrom, encryptionHeaders, madeVersionHeader, metadataFrom, objectHeadersFrom, passedThroughFrom, withoutEncryption } from '../object-headers.js';
import { copyTagging } from '../passthrough.js';
import { xmlDate, xmlResponse } from '../respond.js';
import { guardedWrite, writeConditionsFrom } from '../write.js';

function copyChecksum(headers: Record<string, string>, source: ObjectInfo): ChecksumAlgorithm | undefined {
  const named = headers['x-amz-checksum-algorithm'];
  if (named === undefined) return source.checksum?.algorithm;
  const algorithm = parseChecksumAlgorithmName(named);
  if (algorithm === undefined) throw new S3Error('InvalidRequest', 'Checksum algorithm provided is unsupported.');
  return algorithm;
}

export const CopyObject: Handler = async (ctx, services) => {
  const { bucket, key } = requireKey(ctx);
  const source = await openCopySource(services.backend, ctx.headers);
  const directive = (ctx.headers['x-amz-metadata-directive'] ?? 'COPY').toUpperCase();
  if (directive !== 'COPY' && directive !== 'REPLACE') throw new S3Error('InvalidArgument', { message: 'Unknown metadata directive.', fields: { ArgumentName: 'x-amz-metadata-directive', ArgumentValue: directive } });
  // Copying an older version onto its own key changes the object: allowed (docs/design.md §10).
  if (directive === 'COPY' && source.bucket === bucket && source.key === key && source.versionId === undefined) {
    throw new S3Error('InvalidRequest', "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.");
  }
  const src = source.reader.info;
  // Encryption, lock and ACL are the copy request's own, never the source's
  // (S3: CopyObject encrypts the target as asked, else by the bucket's default);
  // tags as x-amz-tagging-directive says (passthrough.ts).
  const upstream = services.backend.forward !== undefined;
  const headers = directive === 'REPLACE' ? objectHeadersFrom(ctx.headers, upstream) : { ...withoutEncryption(src.headers), ...encryptionFrom(ctx.headers), ...(upstream && passedThroughFrom(ctx.headers)) };
  delete headers.tagging;
  const tagging = upstream
    ? await copyTagging(ctx.headers, { ...source, ...(src.headers.taggingCount !== undefined && { taggingCount: src.headers.taggingCount }) }, services.backend, ctx.access).catch((e: unknown) => {
        source.reader.release?.();
        throw e;
      })
    : undefined;
  if (tagging !== undefined) headers.tagging = tagging;
  const metadata = directive === 'REPLACE' ? metadataFrom(ctx.headers) : src.metadata;
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
  return xmlResponse('CopyObjectResult', { LastModified: xmlDate(info.lastModified), ETag: formatETag(info.etag, ctx.etagSuffix), ...checksumElements(info.checksum) }, 200, { ...madeVersionHeader(info), ...copySourceVersionHeader(source), ...encryptionHeaders(info.headers) });
};
