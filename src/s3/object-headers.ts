/**
 * Object representation headers in and out: the standard ones S3 stores with
 * an object (Content-Type, Content-Encoding, Content-Disposition,
 * Content-Language, Cache-Control, Expires), user metadata (x-amz-meta-*,
 * at most 2 KB as in S3), and the response-* query overrides of GetObject.
 * Values are kept as the bytes received (Node hands header values over as
 * latin1, one char per byte, and writes them back the same way), so a UTF-8
 * value comes back byte-exact; clients that read headers as latin1 (Node,
 * Python's http.client) decode it themselves
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html).
 */
import { ANSWERED_HEADER_NAMES, ENCRYPTION_HEADER_NAMES, LOCK_HEADER_NAMES, OBJECT_HEADER_NAMES, WRITE_ONLY_HEADER_NAMES, type Backend, type ObjectHeaders, type ObjectInfo } from '../backends/types.js';
import { formatETag } from '../vocabulary/etag.js';
import { S3Error } from '../vocabulary/errors.js';
import { httpDate } from './respond.js';

const STORED = OBJECT_HEADER_NAMES;

/** S3's limit on user metadata: names and values, UTF-8 bytes. */
const MAX_METADATA_BYTES = 2048;

/** S3 answers this Content-Type for objects stored without one. */
export const DEFAULT_CONTENT_TYPE = 'binary/octet-stream';

/**
 * A write's representation and encryption headers; `upstream`: also its
 * Object Lock, tags and ACL, which only an upstream keeps (issue 44; the
 * embedded store refuses a lock, src/s3/passthrough.ts).
 */
export function objectHeadersFrom(headers: Record<string, string>, upstream = false): ObjectHeaders {
  const out: ObjectHeaders = {};
  for (const [field, name] of STORED) {
    let value = headers[name];
    if (value === undefined) continue;
    // aws-chunked is a transfer detail of SigV4 streaming, not the object's encoding.
    if (name === 'content-encoding') {
      value = value.split(',').map((v) => v.trim()).filter((v) => v !== '' && v.toLowerCase() !== 'aws-chunked').join(', ');
      if (value === '') continue;
    }
    out[field] = value;
  }
  return { ...out, ...encryptionFrom(headers), ...(upstream && passedThroughFrom(headers)) };
}

/** The Object Lock, tagging and ACL request headers of a write (a copy's own, never its source's). */
export function passedThroughFrom(headers: Record<string, string>): ObjectHeaders {
  const out: ObjectHeaders = {};
  for (const [field, name] of [...LOCK_HEADER_NAMES, ...WRITE_ONLY_HEADER_NAMES]) if (headers[name] !== undefined) out[field] = headers[name];
  return out;
}

/** The SSE-S3 / SSE-KMS request headers (a copy's own, never its source's). */
export function encryptionFrom(headers: Record<string, string>): ObjectHeaders {
  const out: ObjectHeaders = {};
  for (const [field, name] of ENCRYPTION_HEADER_NAMES) if (headers[name] !== undefined) out[field] = headers[name];
  return out;
}

/**
 * A source's headers less its encryption, lock, tags and ACL: a copy is
 * encrypted, locked and granted as its own request asks, and tagged as its
 * x-amz-tagging-directive says (API_CopyObject).
 */
export function withoutEncryption(headers: ObjectHeaders): ObjectHeaders {
  const out = { ...headers };
  for (const [field] of [...ENCRYPTION_HEADER_NAMES, ...ANSWERED_HEADER_NAMES, ...WRITE_ONLY_HEADER_NAMES]) delete out[field];
  return out;
}

/** The encryption headers an answer carries for a version (PutObject, CopyObject, GetObject, HeadObject). */
export function encryptionHeaders(headers: ObjectHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [field, name] of ENCRYPTION_HEADER_NAMES) if (headers[field] !== undefined) out[name] = headers[field]!;
  return out;
}

export function metadataFrom(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  let bytes = 0;
  for (const [name, value] of Object.entries(headers)) {
    if (!name.startsWith('x-amz-meta-')) continue;
    const short = name.slice('x-amz-meta-'.length);
    out[short] = value;
    // Header values are byte strings (one char per received byte).
    bytes += Buffer.byteLength(short, 'latin1') + Buffer.byteLength(value, 'latin1');
  }
  if (bytes > MAX_METADATA_BYTES) throw new S3Error('MetadataTooLarge');
  return out;
}

/** Headers GetObject and HeadObject answer for a version. */
export function objectResponseHeaders(info: ObjectInfo, etagSuffix: boolean, query?: URLSearchParams): Record<string, string> {
  const h: Record<string, string> = {
    etag: formatETag(info.etag, etagSuffix),
    'last-modified': httpDate(info.lastModified),
    'accept-ranges': 'bytes',
    'content-type': info.headers.contentType ?? DEFAULT_CONTENT_TYPE,
  };
  for (const [field, name] of STORED) {
    const value = info.headers[field];
    if (value !== undefined && name !== 'content-type') h[name] = value;
  }
  Object.assign(h, encryptionHeaders(info.headers));
  for (const [field, name] of ANSWERED_HEADER_NAMES) if (info.headers[field] !== undefined) h[name] = info.headers[field]!;
  for (const [name, value] of Object.entries(info.metadata)) h[`x-amz-meta-${name}`] = value;
  if (info.writer) h['x-casket-writer'] = info.writer;
  Object.assign(h, versionHeader(info));
  if (query) {
    for (const [, name] of STORED) {
      const override = query.get(`response-${name}`);
      if (override !== null) h[name] = override;
    }
  }
  return h;
}

/** `x-amz-version-id` of a version a read returns, when its bucket is versioned (docs/design.md §10). */
export function versionHeader(info: Pick<ObjectInfo, 'versionId'> | null | undefined): Record<string, string> {
  return info?.versionId !== undefined ? { 'x-amz-version-id': info.versionId } : {};
}

/**
 * `x-amz-version-id` of a version a write made: none for the null version
 * (a write in a Suspended bucket), as S3 answers — a client reads a version
 * id in a PutObject answer as "this bucket keeps versions".
 */
export function madeVersionHeader(info: Pick<ObjectInfo, 'versionId'>): Record<string, string> {
  return info.versionId !== undefined && info.versionId !== 'null' ? { 'x-amz-version-id': info.versionId } : {};
}

/**
 * x-amz-expiration as the embedded store's own Expiration rules give it
 * (API_GetObject, API_HeadObject, API_PutObject: `expiry-date="…",
 * rule-id="…"`); in front of an upstream the upstream's answer is passed on
 * instead (ObjectHeaders.expiration).
 */
export function lifecycleExpirationHeader(backend: Pick<Backend, 'objectExpiration'>, info: ObjectInfo): Record<string, string> {
  const value = backend.objectExpiration?.(info);
  return value !== undefined ? { 'x-amz-expiration': value } : {};
}
