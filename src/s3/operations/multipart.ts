/**
 * Multipart upload (https://docs.aws.amazon.com/AmazonS3/latest/userguide/mpuoverview.html):
 * CreateMultipartUpload, UploadPart, UploadPartCopy, CompleteMultipartUpload,
 * AbortMultipartUpload, ListParts, ListMultipartUploads. Part ETags are the
 * MD5 of the part, as in S3 (s3cmd and rclone check them); the object ETag is
 * casket's `<sha256 of part digests>-<N>`. CompleteMultipartUpload is the
 * guarded write: If-Match / If-None-Match and the agent rules apply to it.
 * Flexible checksums (checksum-headers.ts): the upload's algorithm and type,
 * per-part checksums, and the object's COMPOSITE or FULL_OBJECT checksum.
 */
import { S3Error } from '../../vocabulary/errors.js';
import { formatETag, unquoteETag } from '../../vocabulary/etag.js';
import type { Handler, RequestContext } from '../context.js';
import { requireBucket, requireKey } from '../context.js';
import { copyPayload, copySourceVersionHeader, openCopySource, parseCopySourceRange } from '../copy-source.js';
import { encryptionFrom, encryptionHeaders, madeVersionHeader, metadataFrom, objectHeadersFrom } from '../object-headers.js';
import { emptyResponse, xmlDate, xmlResponse } from '../respond.js';
import { guardedWrite, writeConditionsFrom } from '../write.js';
import { readXmlBody } from '../../vocabulary/xml.js';
import { OWNER } from './buckets.js';
import { parseMaxKeys } from './list-objects.js';
import { declaredLength, declaredSha256, requireLength } from './put-object.js';
import type { CompletedPart, MultipartUploadInfo } from '../../backends/types.js';
import { checksumElements, completeChecksumFrom, partChecksumElements, partChecksumFromXml, uploadChecksumFrom, uploadChecksumHeaders } from '../checksum-headers.js';
import { checksumHeaderName, DISPLAY_NAMES } from '../../vocabulary/checksums.js';

function uploadId(ctx: RequestContext): string {
  const id = ctx.query.get('uploadId');
  if (!id) throw new S3Error('NoSuchUpload');
  return id;
}

function partNumber(ctx: RequestContext): number {
  const raw = ctx.query.get('partNumber') ?? '';
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < 1 || n > 10000) throw new S3Error('InvalidArgument', { message: 'Part number must be an integer between 1 and 10000, inclusive', fields: { ArgumentName: 'partNumber', ArgumentValue: raw } });
  return n;
}

/** The upload must exist before a part's body is accepted (and 100-continue sent). */
async function requireUpload(ctx: RequestContext, backend: Parameters<Handler>[1]['backend']): Promise<{ bucket: string; key: string; id: string; upload: MultipartUploadInfo }> {
  const { bucket, key } = requireKey(ctx);
  const id = uploadId(ctx);
  const { upload } = await backend.listParts(bucket, key, id, { partNumberMarker: 0, maxParts: 0 });
  return { bucket, key, id, upload };
}

export const CreateMultipartUpload: Handler = async (ctx, { backend }) => {
  const { bucket, key } = requireKey(ctx);
  const checksum = uploadChecksumFrom(ctx.headers);
  const upload = await backend.createMultipartUpload(bucket, key, objectHeadersFrom(ctx.headers, backend.forward !== undefined), metadataFrom(ctx.headers), ctx.agent, checksum);
  return xmlResponse('InitiateMultipartUploadResult', { Bucket: bucket, Key: key, UploadId: upload.uploadId }, 200, { ...uploadChecksumHeaders(checksum), ...encryptionHeaders(encryptionFrom(ctx.headers)) });
};

export const UploadPart: Handler = async (ctx, { backend }) => {
  requireLength(ctx);
  const n = partNumber(ctx);
  const { bucket, key, id, upload } = await requireUpload(ctx, backend);
  // What is known before the body, as for PutObject: an upstream backend streams a part of known length through.
  const length = declaredLength(ctx);
  const declared = declaredSha256(ctx);
  // An upload created with a checksum algorithm: every part gets one (computed when the part carried none).
  const payload = ctx.payload({ md5: true, ...(upload.checksum && { checksum: upload.checksum.algorithm }) });
  const part = await backend.uploadPart(bucket, key, id, n, payload, { ...(length !== undefined && { contentLength: length }), ...(declared !== undefined && { declaredSha256: declared }) });
  return emptyResponse(200, { etag: `"${part.etag}"`, ...(part.checksum && { [checksumHeaderName(part.checksum.algorithm)]: part.checksum.value }) });
};

export const UploadPartCopy: Handler = async (ctx, { backend }) => {
  const n = partNumber(ctx);
  const { bucket, key, id, upload } = await requireUpload(ctx, backend);
  const source = await openCopySource(backend, ctx.headers);
  let part;
  try {
    const range = parseCopySourceRange(ctx.headers['x-amz-copy-source-range'], source.reader.info.size);
    part = await backend.uploadPart(bucket, key, id, n, copyPayload(source, range, true, upload.checksum?.algorithm));
  } finally {
    source.reader.release?.();
  }
  return xmlResponse('CopyPartResult', { LastModified: xmlDate(part.lastModified), ETag: `"${part.etag}"`, ...partChecksumElements(part.checksum) }, 200, copySourceVersionHeader(source));
};

function parseParts(doc: Record<string, unknown>): CompletedPart[] {
  const root = doc.CompleteMultipartUpload as { Part?: Array<{ PartNumber?: unknown; ETag?: unknown } & Record<string, unknown>> } | undefined;
  if (!root || typeof root !== 'object' || !root.Part || root.Part.length === 0) throw new S3Error('MalformedXML');
  return root.Part.map((p) => {
    const n = Number(p.PartNumber);
    if (typeof p.PartNumber !== 'string' || !Number.isInteger(n) || typeof p.ETag !== 'string') throw new S3Error('MalformedXML');
    const checksum = partChecksumFromXml(p);
    return { partNumber: n, etag: unquoteETag(p.ETag), ...(checksum && { checksum }) };
  });
}

export const CompleteMultipartUpload: Handler = async (ctx, services) => {
  const { bucket, key } = requireKey(ctx);
  const id = uploadId(ctx);
  // An x-amz-checksum-* header here names the object's checksum, not the XML body's.
  const parts = parseParts(await readXmlBody(ctx.payload({ ignoreChecksumHeaders: true }).stream));
  const expectedChecksum = completeChecksumFrom(ctx.headers);
  const info = await guardedWrite({
    ctx,
    services,
    bucket,
    key,
    operation: 'CompleteMultipartUpload',
    conditions: writeConditionsFrom(ctx.headers),
    bodyComing: false,
    selfIdentifying: true,
    commit: (permit) => services.backend.completeMultipartUpload(bucket, key, id, parts, { ...permit, ...(ctx.agent !== undefined && { writer: ctx.agent }), ...(expectedChecksum && { expectedChecksum }) }),
    written: (info) => info,
    landed: (current) => current!,
  });
  return xmlResponse('CompleteMultipartUploadResult', {
    Location: `/${encodeURIComponent(bucket)}/${key.split('/').map(encodeURIComponent).join('/')}`,
    Bucket: bucket,
    Key: key,
    ETag: formatETag(info.etag, ctx.etagSuffix),
    ...checksumElements(info.checksum),
  }, 200, { ...madeVersionHeader(info), ...encryptionHeaders(info.headers) });
};

export const AbortMultipartUpload: Handler = async (ctx, { backend }) => {
  const { bucket, key } = requireKey(ctx);
  await backend.abortMultipartUpload(bucket, key, uploadId(ctx));
  return emptyResponse(204);
};

export const ListParts: Handler = async (ctx, { backend }) => {
  const { bucket, key } = requireKey(ctx);
  const id = uploadId(ctx);
  const marker = Number(ctx.query.get('part-number-marker') ?? '0');
  if (!Number.isInteger(marker) || marker < 0) throw new S3Error('InvalidArgument', { message: 'part-number-marker must be a non-negative integer', fields: { ArgumentName: 'part-number-marker' } });
  const maxParts = parseMaxKeys(ctx.query.get('max-parts'), 'max-parts');
  const result = await backend.listParts(bucket, key, id, { partNumberMarker: marker, maxParts });
  return xmlResponse('ListPartsResult', {
    Bucket: bucket,
    Key: key,
    UploadId: id,
    Initiator: OWNER,
    Owner: OWNER,
    StorageClass: 'STANDARD',
    ...(result.upload.checksum && { ChecksumAlgorithm: DISPLAY_NAMES[result.upload.checksum.algorithm], ChecksumType: result.upload.checksum.type }),
    PartNumberMarker: marker,
    NextPartNumberMarker: result.nextPartNumberMarker,
    MaxParts: maxParts,
    IsTruncated: result.isTruncated,
    Part: result.parts.map((p) => ({ PartNumber: p.partNumber, LastModified: xmlDate(p.lastModified), ETag: `"${p.etag}"`, Size: p.size, ...partChecksumElements(p.checksum) })),
  });
};

export const ListMultipartUploads: Handler = async (ctx, { backend }) => {
  const bucket = requireBucket(ctx);
  const maxUploads = parseMaxKeys(ctx.query.get('max-uploads'), 'max-uploads');
  const prefix = ctx.query.get('prefix') ?? '';
  const delimiter = ctx.query.get('delimiter') || undefined;
  const keyMarker = ctx.query.get('key-marker') || undefined;
  const uploadIdMarker = ctx.query.get('upload-id-marker') || undefined;
  const result = await backend.listMultipartUploads(bucket, { prefix, delimiter, keyMarker, uploadIdMarker, maxUploads });
  return xmlResponse('ListMultipartUploadsResult', {
    Bucket: bucket,
    KeyMarker: keyMarker ?? '',
    UploadIdMarker: uploadIdMarker ?? '',
    NextKeyMarker: result.nextKeyMarker,
    NextUploadIdMarker: result.nextUploadIdMarker,
    Prefix: prefix,
    Delimiter: delimiter,
    MaxUploads: maxUploads,
    IsTruncated: result.isTruncated,
    Upload: result.uploads.map((u) => ({
      Key: u.key,
      UploadId: u.uploadId,
      Initiator: OWNER,
      Owner: OWNER,
      StorageClass: 'STANDARD',
      Initiated: xmlDate(u.initiated),
      ...(u.checksum && { ChecksumAlgorithm: DISPLAY_NAMES[u.checksum.algorithm], ChecksumType: u.checksum.type }),
    })),
    CommonPrefixes: result.commonPrefixes.map((p) => ({ Prefix: p })),
  });
};
