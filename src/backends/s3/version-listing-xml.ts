/**
 * The upstream's ListObjectVersions answer (ListVersionsResult,
 * https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectVersions.html)
 * read in one pass over its bytes (listing-scan.ts, the scanner ListObjectsV2
 * pages go through): each <Version>'s and <DeleteMarker>'s Key, VersionId,
 * IsLatest, LastModified, ETag, Size and Owner, <CommonPrefixes>,
 * IsTruncated, NextKeyMarker and NextVersionIdMarker, with the spans of each
 * entry's bytes the answer copies through (s3/operations/version-entries.ts).
 * undefined for anything but the plain form: parse it in full instead.
 */
import type { VersionSpans } from '../types.js';
import { scanPage, type ListedObject } from './listing-scan.js';

export interface UpstreamVersionListing {
  Version: ListedObject[];
  DeleteMarker: ListedObject[];
  CommonPrefixes: Array<{ Prefix?: string }>;
  IsTruncated?: string;
  NextKeyMarker?: string;
  NextVersionIdMarker?: string;
}

/** A scanned page, and for each Version and DeleteMarker the spans of its bytes. */
export interface ScannedVersionListing extends UpstreamVersionListing {
  versionSpans: VersionSpans[];
  deleteMarkerSpans: VersionSpans[];
}

/** A ListVersionsResult in the plain form, or undefined: parse it in full instead. */
export function scanVersionListing(input: Buffer | string): ScannedVersionListing | undefined {
  const page = typeof input === 'string' ? Buffer.from(input, 'utf8') : input;
  const scan = scanPage(page, 'ListVersionsResult', ['Version', 'DeleteMarker'], ['IsTruncated', 'NextKeyMarker', 'NextVersionIdMarker']);
  if (scan === undefined) return undefined;
  const versions = scan.entries.Version!;
  const markers = scan.entries.DeleteMarker!;
  return { Version: versions.objects, DeleteMarker: markers.objects, CommonPrefixes: scan.CommonPrefixes, ...scan.leaves, versionSpans: versions.spans, deleteMarkerSpans: markers.spans };
}
