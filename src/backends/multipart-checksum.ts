/**
 * The checksum of an object made by CompleteMultipartUpload, from its parts'
 * checksums, as AWS S3 makes it ("Using part-level checksums for multipart
 * uploads", https://docs.aws.amazon.com/AmazonS3/latest/userguide/checking-object-integrity.html):
 * - COMPOSITE: the checksum of the concatenated binary part checksums,
 *   base64, `-<part count>`;
 * - FULL_OBJECT: the checksum of the whole content, combined from the part
 *   CRCs and sizes (CRC32, CRC32C, CRC64NVME only).
 * Shared by both backends; pure. Also checks the part checksums a
 * CompleteMultipartUpload request named against the stored ones.
 *
 * Known gap: an upload created without x-amz-checksum-algorithm makes an
 * object without a checksum (AWS S3 adds a CRC64NVME of its own since 2025).
 */
import { CHECKSUM_ALGORITHMS, checksumOf, combineCrcs, compositeChecksum, DISPLAY_NAMES, parseChecksumValue, type ChecksumAlgorithm, type ChecksumType } from '../vocabulary/checksums.js';
import type { RequestedPart } from './completed-parts.js';
import { S3Error } from '../vocabulary/errors.js';
import type { CompletedPart, CompleteOptions, ObjectChecksum, PartChecksum, UploadChecksum } from './types.js';

export interface ChosenPart {
  partNumber: number;
  size: number;
  checksum?: PartChecksum;
}

/** InvalidPart unless each checksum the request named is the stored part's (same algorithm, same value). */
export function checkNamedPartChecksums(uploadId: string, requested: RequestedPart, stored: PartChecksum | undefined): void {
  // A part listed more than once (completed-parts.ts) passes when the stored
  // part carries one of the checksums named for it.
  const named = requested.listed.flatMap((l) => (l.checksum === undefined ? [] : [l.checksum]));
  if (named.length === 0) return;
  if (stored !== undefined && named.some((n) => stored.algorithm === n.algorithm && stored.value === n.value)) return;
  throw new S3Error('InvalidPart', {
    message: 'One or more of the specified parts could not be found.  The part may not have been uploaded, or the specified entity tag may not match the part\'s entity tag.',
    fields: { UploadId: uploadId, PartNumber: requested.partNumber, ETag: requested.etags.at(-1) },
  });
}

/** The object's checksum, or undefined when the upload was created without one; checked against the one the request stated. */
export function multipartChecksum(upload: UploadChecksum | undefined, parts: readonly ChosenPart[], expected?: CompleteOptions['expectedChecksum']): ObjectChecksum | undefined {
  const made = makeChecksum(upload, parts);
  if (expected === undefined) return made;
  if (made === undefined || made.algorithm !== expected.algorithm || (expected.type !== undefined && expected.type !== made.type)) {
    throw new S3Error('InvalidRequest', `The upload was created using ${made ? `the ${DISPLAY_NAMES[made.algorithm]} ${made.type}` : 'no'} checksum; the complete request names ${expected.type ? `${expected.type} ` : ''}${DISPLAY_NAMES[expected.algorithm]}.`);
  }
  if (made.value !== expected.value) throw new S3Error('BadDigest', `The ${DISPLAY_NAMES[made.algorithm]} you specified did not match the calculated checksum.`);
  return made;
}

function makeChecksum(upload: UploadChecksum | undefined, parts: readonly ChosenPart[]): ObjectChecksum | undefined {
  if (upload === undefined) return undefined;
  const { algorithm, type } = upload;
  const digests = parts.map((p) => {
    if (p.checksum === undefined || p.checksum.algorithm !== algorithm) {
      throw new S3Error('InvalidRequest', `The upload was created using a ${DISPLAY_NAMES[algorithm].toLowerCase()} checksum. The complete request must include the checksum for each part. It was missing for part ${p.partNumber} in the request.`);
    }
    return parseChecksumValue(algorithm, p.checksum.value);
  });
  if (type === 'COMPOSITE') return { algorithm, type, value: compositeChecksum(algorithm, digests) };
  const value = parts.length === 0 ? checksumOf(algorithm, Buffer.alloc(0)) : combineCrcs(algorithm, digests.map((d, i) => [d, parts[i]!.size] as const));
  return { algorithm, type, value: value.toString('base64') };
}

/*
 * Compact text forms, as the stores keep them (a column, a header, a
 * state-store value): `<algorithm> <type> <value>` for an object,
 * `<algorithm> <type>` for an upload, `<algorithm> <value>` for a part.
 * Decoders return undefined for anything they did not write.
 */

function algorithmNamed(name: string | undefined): ChecksumAlgorithm | undefined {
  return CHECKSUM_ALGORITHMS.find((a) => a === name);
}

function typeNamed(name: string | undefined): ChecksumType | undefined {
  return name === 'COMPOSITE' || name === 'FULL_OBJECT' ? name : undefined;
}

export function encodeUploadChecksum(c: UploadChecksum): string {
  return `${c.algorithm} ${c.type}`;
}

export function decodeUploadChecksum(text: string | null | undefined): UploadChecksum | undefined {
  const [name, typeName] = (text ?? '').split(' ');
  const algorithm = algorithmNamed(name);
  const type = typeNamed(typeName);
  return algorithm && type ? { algorithm, type } : undefined;
}

export function encodePartChecksum(c: PartChecksum): string {
  return `${c.algorithm} ${c.value}`;
}

export function decodePartChecksum(text: string | null | undefined): PartChecksum | undefined {
  const [name, value] = (text ?? '').split(' ');
  const algorithm = algorithmNamed(name);
  return algorithm && value ? { algorithm, value } : undefined;
}

/** Compact text form of an ObjectChecksum for a metadata column or header: `<algorithm> <type> <value>`. */
export function encodeChecksum(c: ObjectChecksum): string {
  return `${c.algorithm} ${c.type} ${c.value}`;
}

/** The checksum `encodeChecksum` wrote; undefined for anything else (a value written around casket, say). */
export function decodeChecksum(text: string | null | undefined): ObjectChecksum | undefined {
  if (!text) return undefined;
  const [name, typeName, value = ''] = text.split(' ');
  const algorithm = algorithmNamed(name);
  const type = typeNamed(typeName);
  if (algorithm === undefined || type === undefined || !/^[A-Za-z0-9+/]+={0,2}(-\d+)?$/.test(value)) return undefined;
  return { algorithm, type, value };
}
