/**
 * The upstream's ListObjectsV2 answer (ListBucketResult,
 * https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectsV2.html)
 * read in one pass over its bytes (listing-scan.ts), for the few elements
 * casket uses — each <Contents>' Key, ETag, Size, LastModified and Owner,
 * each <CommonPrefixes>' Prefix, and IsTruncated — with the spans of each
 * entry's bytes the answer copies through (s3/operations/listing-contents.ts);
 * undefined for anything but the plain form: parse it in full instead.
 */
import type { ListedSpans } from '../types.js';
import { scanPage, type ListedObject } from './listing-scan.js';

export { unescapeXml, type ListedObject } from './listing-scan.js';

export interface UpstreamListing {
  Contents: ListedObject[];
  CommonPrefixes: Array<{ Prefix?: string }>;
  IsTruncated?: string;
}

/** A scanned page: the listing, and for each entry of Contents the spans of its bytes that can be copied through. */
export interface ScannedListing extends UpstreamListing {
  spans: ListedSpans[];
}

/** A ListBucketResult in the plain form, or undefined: parse it in full instead. */
export function scanListing(input: Buffer | string): ScannedListing | undefined {
  const page = typeof input === 'string' ? Buffer.from(input, 'utf8') : input;
  const scan = scanPage(page, 'ListBucketResult', ['Contents'], ['IsTruncated']);
  if (scan === undefined) return undefined;
  const { objects, spans } = scan.entries.Contents!;
  return { Contents: objects, CommonPrefixes: scan.CommonPrefixes, ...(scan.leaves.IsTruncated !== undefined && { IsTruncated: scan.leaves.IsTruncated }), spans };
}
