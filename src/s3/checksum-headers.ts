/**
 * Flexible checksums on the wire (https://docs.aws.amazon.com/AmazonS3/latest/userguide/checking-object-integrity.html):
 * - x-amz-checksum-algorithm / x-amz-checksum-type on CreateMultipartUpload
 *   (COMPOSITE is the default, except for CRC64NVME, which is FULL_OBJECT
 *   only; SHA1 and SHA256 are COMPOSITE only), echoed in its answer;
 * - x-amz-checksum-<alg> and x-amz-checksum-type in answers: PutObject,
 *   UploadPart, and GetObject / HeadObject when the request says
 *   `x-amz-checksum-mode: ENABLED` and asks for the whole object (S3 sends
 *   no checksum with a range: it would not describe the bytes sent; with
 *   ?partNumber= of a multipart object, that part's checksum);
 * - Checksum<ALG> elements in CompleteMultipartUpload, ListParts and
 *   ListObjects XML.
 */
import type { CompleteOptions, ObjectChecksum, ObjectInfo, PartChecksum, UploadChecksum } from '../backends/types.js';
import {
  CHECKSUM_ALGORITHMS,
  CHECKSUM_TYPES,
  checksumElementName,
  checksumHeaderName,
  DISPLAY_NAMES,
  parseChecksumAlgorithmName,
  parseChecksumValue,
  type ChecksumType,
} from '../vocabulary/checksums.js';
import { S3Error } from '../vocabulary/errors.js';

/** The checksum CreateMultipartUpload asks for, validated; undefined when it names none. */
export function uploadChecksumFrom(headers: Record<string, string>): UploadChecksum | undefined {
  const name = headers['x-amz-checksum-algorithm'];
  const typeHeader = headers['x-amz-checksum-type'];
  if (name === undefined) {
    if (typeHeader !== undefined) throw new S3Error('InvalidRequest', 'The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header.');
    return undefined;
  }
  const algorithm = parseChecksumAlgorithmName(name);
  if (algorithm === undefined) {
    throw new S3Error('InvalidRequest', `Checksum algorithm provided is unsupported. Please try again with any of the valid types: [${CHECKSUM_ALGORITHMS.map((a) => DISPLAY_NAMES[a]).join(', ')}]`);
  }
  const allowed = CHECKSUM_TYPES[algorithm];
  const type = (typeHeader?.trim().toUpperCase() ?? allowed[0]) as ChecksumType;
  if (type !== 'COMPOSITE' && type !== 'FULL_OBJECT') throw new S3Error('InvalidRequest', 'Value for x-amz-checksum-type header is invalid.');
  if (!allowed.includes(type)) throw new S3Error('InvalidRequest', `The ${DISPLAY_NAMES[algorithm]} checksum algorithm is not supported with the ${type} checksum type.`);
  return { algorithm, type };
}

/** The x-amz-checksum-<alg> header of a request, as sent (the payload checks its form and value). */
export function declaredChecksum(headers: Record<string, string>): PartChecksum | undefined {
  for (const algorithm of CHECKSUM_ALGORITHMS) {
    const value = headers[checksumHeaderName(algorithm)];
    if (value !== undefined) return { algorithm, value: value.trim() };
  }
  return undefined;
}

/** The object checksum a CompleteMultipartUpload states (x-amz-checksum-<alg>, optional x-amz-checksum-type), well formed. */
export function completeChecksumFrom(headers: Record<string, string>): CompleteOptions['expectedChecksum'] {
  const stated = declaredChecksum(headers);
  if (!stated) return undefined;
  // A COMPOSITE value carries its `-N`; only the digest before it must be well formed.
  parseChecksumValue(stated.algorithm, stated.value.replace(/-\d+$/, ''));
  const type = headers['x-amz-checksum-type']?.trim().toUpperCase();
  if (type !== undefined && type !== 'COMPOSITE' && type !== 'FULL_OBJECT') throw new S3Error('InvalidRequest', 'Value for x-amz-checksum-type header is invalid.');
  return { ...stated, ...(type !== undefined && { type: type as ChecksumType }) };
}

/** Headers that announce an upload's checksum (CreateMultipartUpload answer). */
export function uploadChecksumHeaders(c: UploadChecksum | undefined): Record<string, string> {
  return c ? { 'x-amz-checksum-algorithm': DISPLAY_NAMES[c.algorithm], 'x-amz-checksum-type': c.type } : {};
}

/** x-amz-checksum-<alg> and x-amz-checksum-type for an object's checksum. */
export function checksumHeaders(c: ObjectChecksum | undefined): Record<string, string> {
  return c ? { [checksumHeaderName(c.algorithm)]: c.value, 'x-amz-checksum-type': c.type } : {};
}

/**
 * x-amz-checksum-<alg> of part `n` of a multipart object (GetObject /
 * HeadObject ?partNumber=), when known, with the object's x-amz-checksum-type:
 * the GetObject response names ChecksumType beside every checksum it carries
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html#API_GetObject_ResponseSyntax),
 * and ceph/s3-tests test_multipart_use_cksum_helper_* expect it on part reads.
 */
export function partChecksumHeader(info: ObjectInfo, n: number): Record<string, string> {
  const value = info.partChecksums?.[n - 1];
  return info.checksum && value !== undefined ? { [checksumHeaderName(info.checksum.algorithm)]: value, 'x-amz-checksum-type': info.checksum.type } : {};
}

/** Whether a GetObject / HeadObject asked for the object's checksum. */
export function checksumModeEnabled(headers: Record<string, string>): boolean {
  return headers['x-amz-checksum-mode']?.trim().toUpperCase() === 'ENABLED';
}

/** Checksum<ALG> (and ChecksumType) XML elements for an object's checksum. */
export function checksumElements(c: ObjectChecksum | undefined): Record<string, string> {
  return c ? { [checksumElementName(c.algorithm)]: c.value, ChecksumType: c.type } : {};
}

/** The Checksum<ALG> element of a part. */
export function partChecksumElements(c: PartChecksum | undefined): Record<string, string> {
  return c ? { [checksumElementName(c.algorithm)]: c.value } : {};
}

/** A part checksum a CompleteMultipartUpload <Part> names (at most one; the value must be well formed). */
export function partChecksumFromXml(part: Record<string, unknown>): PartChecksum | undefined {
  const named = CHECKSUM_ALGORITHMS.filter((a) => typeof part[checksumElementName(a)] === 'string');
  if (named.length === 0) return undefined;
  if (named.length > 1) throw new S3Error('InvalidRequest', 'Expecting a single checksum per part. Multiple checksum Types are not allowed.');
  const algorithm = named[0]!;
  const value = (part[checksumElementName(algorithm)] as string).trim();
  parseChecksumValue(algorithm, value);
  return { algorithm, value };
}
