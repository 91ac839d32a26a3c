/**
 * The shape of `objects` and `uploads` rows as src/sqlite.ts returns them,
 * and their conversion to the Backend's ObjectInfo / MultipartUploadInfo.
 * Headers and x-amz-meta-* are stored as JSON (NULL when empty, the common
 * case, so nothing is parsed for them); every conversion returns fresh
 * objects, so callers may mutate what they get.
 */
import { decodeChecksum, decodeUploadChecksum } from '../multipart-checksum.js';
import type { MultipartUploadInfo, ObjectHeaders, ObjectInfo } from '../types.js';

/** Every `objects` column but the inline body. */
export const OBJECT_COLUMNS = 'key, version_id, etag, size, last_modified, writer, headers, metadata, part_sizes, checksum, part_checksums, blobs';

export interface ObjectRow {
  key: string;
  /** `null` for the null version (docs/design.md §10). */
  version_id: string;
  etag: string;
  size: number;
  last_modified: number;
  writer: string | null;
  headers: string | null;
  metadata: string | null;
  /** JSON number[]: part sizes of a multipart object. */
  part_sizes: string | null;
  /** `<algorithm> <type> <base64>` (multipart-checksum.ts encodeChecksum). */
  checksum: string | null;
  /** JSON string[]: base64 checksums of a multipart object's parts. */
  part_checksums: string | null;
  /** JSON string[]: blob ids holding the body, in order; NULL when the body is inline. */
  blobs: string | null;
}

export interface ObjectRowWithBody extends ObjectRow {
  body: Buffer | null;
}

export const UPLOAD_COLUMNS = 'upload_id, key, initiated, headers, metadata, checksum';

export interface UploadRow {
  upload_id: string;
  key: string;
  initiated: number;
  headers: string | null;
  metadata: string | null;
  /** `<algorithm> <type>` from x-amz-checksum-algorithm / -type. */
  checksum: string | null;
}

export function objectInfo(bucket: string, row: ObjectRow): ObjectInfo {
  const info: ObjectInfo = {
    bucket,
    key: row.key,
    etag: row.etag,
    size: row.size,
    lastModified: new Date(row.last_modified),
    headers: row.headers === null ? {} : (JSON.parse(row.headers) as ObjectHeaders),
    metadata: row.metadata === null ? {} : (JSON.parse(row.metadata) as Record<string, string>),
  };
  if (row.part_sizes !== null) info.partSizes = JSON.parse(row.part_sizes) as number[];
  if (row.writer !== null) info.writer = row.writer;
  const checksum = decodeChecksum(row.checksum);
  if (checksum) info.checksum = checksum;
  if (row.part_checksums !== null) info.partChecksums = JSON.parse(row.part_checksums) as string[];
  info.versionId = row.version_id;
  return info;
}


export function uploadInfo(bucket: string, row: UploadRow): MultipartUploadInfo {
  const checksum = decodeUploadChecksum(row.checksum);
  return {
    bucket,
    key: row.key,
    uploadId: row.upload_id,
    initiated: new Date(row.initiated),
    headers: row.headers === null ? {} : (JSON.parse(row.headers) as ObjectHeaders),
    metadata: row.metadata === null ? {} : (JSON.parse(row.metadata) as Record<string, string>),
    ...(checksum && { checksum }),
  };
}

/** The blob ids a row's body lives in (none when inline). */
export function blobIds(row: Pick<ObjectRow, 'blobs'> | undefined): string[] {
  return row?.blobs ? (JSON.parse(row.blobs) as string[]) : [];
}

const HEADER_FIELDS = ['contentType', 'contentEncoding', 'contentDisposition', 'contentLanguage', 'cacheControl', 'expires'] as const;

/** JSON of the defined standard headers, or null when there are none. */
export function encodeHeaders(headers: ObjectHeaders): string | null {
  const kept: ObjectHeaders = {};
  let any = false;
  for (const field of HEADER_FIELDS) {
    const value = headers[field];
    if (value !== undefined) {
      kept[field] = value;
      any = true;
    }
  }
  return any ? JSON.stringify(kept) : null;
}

export function encodeMetadata(metadata: Record<string, string>): string | null {
  return Object.keys(metadata).length === 0 ? null : JSON.stringify(metadata);
}
