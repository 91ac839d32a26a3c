/**
 * The part list of CompleteMultipartUpload
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_CompleteMultipartUpload.html),
 * read the same way by every backend: part numbers in ascending order
 * (a smaller one after a larger → InvalidPartOrder), and a part number
 * listed more than once names one part. That happens when a part is uploaded
 * twice concurrently and the client lists every answer it got (Ceph's
 * s3-tests, test_multipart_resend_first_finishes_last): the part stored is
 * the upload that finished last, and it must carry one of the ETags listed
 * for its number (else InvalidPart).
 */
import { S3Error } from '../vocabulary/errors.js';
import type { CompletedPart } from './types.js';

export interface RequestedPart {
  partNumber: number;
  /** Every ETag listed for this part number, as the client sent them (unquoted). */
  etags: string[];
  /** Every entry listed for this part number (their checksums, when named). */
  listed: CompletedPart[];
}

export function requestedParts(parts: CompletedPart[]): RequestedPart[] {
  if (parts.length === 0) throw new S3Error('MalformedXML', 'You must specify at least one part');
  const out: RequestedPart[] = [];
  for (const p of parts) {
    const last = out.at(-1);
    if (last !== undefined && p.partNumber < last.partNumber) throw new S3Error('InvalidPartOrder');
    if (last !== undefined && p.partNumber === last.partNumber) {
      last.etags.push(p.etag);
      last.listed.push(p);
    } else out.push({ partNumber: p.partNumber, etags: [p.etag], listed: [p] });
  }
  return out;
}
