/**
 * The source of CopyObject and UploadPartCopy: `x-amz-copy-source` (URL-encoded
 * `bucket/key`, optional leading slash, optional `?versionId=`), its
 * conditions, and `x-amz-copy-source-range` (API_UploadPartCopy). The bytes
 * are re-read through a Payload so the destination gets its own SHA-256/MD5
 * in the same single pass as any upload.
 */
import { createPayload } from '../auth/payload.js';
import { asCopySource } from '../backends/customer-key.js';
import type { Backend, ByteRange, ObjectReader, Payload } from '../backends/types.js';
import type { ChecksumAlgorithm } from '../vocabulary/checksums.js';
import { S3Error } from '../vocabulary/errors.js';
import { checkCopySourceConditions } from './read-conditions.js';

export interface CopySource {
  bucket: string;
  key: string;
  /** The version `?versionId=` named, if any. */
  versionId?: string;
  reader: ObjectReader;
}

/** The bucket and key `x-amz-copy-source` names (policies check read access on it before anything is opened). */
export function parseCopySource(headers: Record<string, string>): { bucket: string; key: string; versionId?: string } {
  const raw = headers['x-amz-copy-source'] ?? '';
  const [path = '', query = ''] = raw.split('?', 2);
  const trimmed = path.startsWith('/') ? path.slice(1) : path;
  const slash = trimmed.indexOf('/');
  if (slash <= 0 || slash === trimmed.length - 1) throw new S3Error('InvalidArgument', { message: 'Copy Source must mention the source bucket and key: sourcebucket/sourcekey', fields: { ArgumentName: 'x-amz-copy-source', ArgumentValue: raw } });
  let bucket: string;
  let key: string;
  try {
    bucket = decodeURIComponent(trimmed.slice(0, slash));
    key = decodeURIComponent(trimmed.slice(slash + 1));
  } catch {
    throw new S3Error('InvalidArgument', { message: 'Invalid copy source encoding', fields: { ArgumentName: 'x-amz-copy-source', ArgumentValue: raw } });
  }
  // A version of the source (docs/design.md §10): copying an older version is how one is restored.
  const versionId = new URLSearchParams(query).get('versionId');
  return { bucket, key, ...(versionId !== null && { versionId }) };
}

export async function openCopySource(backend: Backend, headers: Record<string, string>): Promise<CopySource> {
  const { bucket, key, versionId } = parseCopySource(headers);
  // Read with the copy-source key, if any: the request's own key is the destination's (API_CopyObject).
  const reader = await asCopySource(() => backend.getObject(bucket, key, versionId));
  if (!reader) throw new S3Error('NoSuchKey', { fields: { Key: key } });
  try {
    checkCopySourceConditions(reader.info, headers);
  } catch (e) {
    reader.release?.();
    throw e;
  }
  return { bucket, key, ...(versionId !== undefined && { versionId }), reader };
}

/** `x-amz-copy-source-version-id`: the version of a versioned source that was copied (API_CopyObject). */
export function copySourceVersionHeader(source: CopySource): Record<string, string> {
  const id = source.reader.info.versionId ?? source.versionId;
  return id !== undefined ? { 'x-amz-copy-source-version-id': id } : {};
}

/** `bytes=first-last`, both required and inside the object (API_UploadPartCopy). */
export function parseCopySourceRange(header: string | undefined, size: number): ByteRange | undefined {
  if (header === undefined) return undefined;
  const m = /^bytes=(\d+)-(\d+)$/.exec(header.trim());
  if (!m || Number(m[2]) < Number(m[1])) throw new S3Error('InvalidArgument', { message: 'The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy', fields: { ArgumentName: 'x-amz-copy-source-range', ArgumentValue: header } });
  const start = Number(m[1]);
  const end = Number(m[2]);
  if (end >= size) throw new S3Error('InvalidRange', { fields: { RangeRequested: header, ActualObjectSize: size } });
  return { start, end };
}

/** The source bytes as a Payload: trusted (already stored), hashed as they pass. */
export function copyPayload(source: CopySource, range: ByteRange | undefined, md5 = false, checksum?: ChecksumAlgorithm): Payload {
  const length = range ? range.end - range.start + 1 : source.reader.info.size;
  return createPayload(source.reader.open(range), { auth: null, headers: { 'content-length': String(length) }, md5, ...(checksum && { checksum }) });
}
