/**
 * A ListObjectVersions answer written as bytes: the envelope from the XML
 * writer (vocabulary/xml.ts), every <Version> then every <DeleteMarker>
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectVersions.html),
 * each either written from its values or, when the upstream's page is at hand
 * (ListVersionsResult.listed, from backends/s3/version-listing-xml.ts; or a
 * ListObjectsV2 page for a bucket that never had versioning), with its Key,
 * VersionId, LastModified, Size and Owner copied from the page's bytes where
 * they are exactly the bytes the writer would give, and casket's ETag written.
 * Every answer is byte for byte the one the writer gives for the same values
 * (test/s3/version-entries.test.ts); issue 42 item 2.
 */
import type { ListObjectsResult, ListVersionsResult, VersionEntry, VersionSpans } from '../../backends/types.js';
import { formatETag } from '../../vocabulary/etag.js';
import { escapeXml, toXmlAround, xmlElement, type XmlObject } from '../../vocabulary/xml.js';
import { xmlDate } from '../respond.js';
import { OWNER } from './buckets.js';
import { Bytes, etagText } from './listing-contents.js';

export interface VersionsOptions {
  /** encoding-type=url's encoder, or undefined: keys as they are. */
  encode?: (s: string) => string;
  etagSuffix: boolean;
}

/** One <Version> (an entry with info) or <DeleteMarker>'s children, written from its values. */
export function versionEntry(e: VersionEntry, options: VersionsOptions): XmlObject {
  const head = { Key: options.encode ? options.encode(e.key) : e.key, VersionId: e.versionId, IsLatest: e.isLatest, LastModified: xmlDate(e.lastModified) };
  if (!e.info) return { ...head, Owner: e.owner ?? OWNER };
  return { ...head, ETag: formatETag(e.info.etag, options.etagSuffix), Size: e.info.size, Owner: e.owner ?? OWNER, StorageClass: 'STANDARD' };
}

const T = {
  key: Buffer.from('<Key>'),
  keyVersionId: Buffer.from('</Key><VersionId>'),
  versionIdLatest: Buffer.from('</VersionId><IsLatest>true</IsLatest><LastModified>'),
  versionIdNotLatest: Buffer.from('</VersionId><IsLatest>false</IsLatest><LastModified>'),
  lastModifiedETag: Buffer.from('</LastModified><ETag>&quot;'),
  etagSize: Buffer.from('&quot;</ETag><Size>'),
  sizeOwner: Buffer.from('</Size><Owner>'),
  lastModifiedOwner: Buffer.from('</LastModified><Owner>'),
  ownerEnd: Buffer.from('</Owner>'),
  storageClass: Buffer.from('<StorageClass>STANDARD</StorageClass>'),
};
const START = { Version: Buffer.from('<Version>'), DeleteMarker: Buffer.from('<DeleteMarker>') };
const END = { Version: Buffer.from('</Version>'), DeleteMarker: Buffer.from('</DeleteMarker>') };

/** Text copied from the page when its span is set, else the value escaped. */
function field(out: Bytes, page: Buffer, start: number, end: number, value: () => string): void {
  if (start >= 0) out.copy(page, start, end);
  else out.text(escapeXml(value()));
}

function write(out: Bytes, name: 'Version' | 'DeleteMarker', e: VersionEntry, page: Buffer | undefined, s: VersionSpans | undefined, options: VersionsOptions): void {
  if (page === undefined || s === undefined || s.lastModified < 0 || (name === 'Version' && s.size < 0)) {
    out.text(xmlElement(name, versionEntry(e, options)));
    return;
  }
  out.bytes(START[name]);
  out.bytes(T.key);
  if (options.encode) out.text(escapeXml(options.encode(e.key)));
  else field(out, page, s.key, s.keyEnd, () => e.key);
  out.bytes(T.keyVersionId);
  field(out, page, s.versionId, s.versionIdEnd, () => e.versionId);
  out.bytes(e.isLatest ? T.versionIdLatest : T.versionIdNotLatest);
  out.copy(page, s.lastModified, s.lastModifiedEnd);
  if (name === 'Version') {
    out.bytes(T.lastModifiedETag);
    etagText(out, e.info!.etag, options.etagSuffix);
    out.bytes(T.etagSize);
    out.copy(page, s.size, s.sizeEnd);
    out.bytes(T.sizeOwner);
  } else {
    out.bytes(T.lastModifiedOwner);
  }
  // The span is set only when the page's <Owner> is exactly what the writer gives for e.owner.
  if (s.owner >= 0 && e.owner !== undefined) out.copy(page, s.owner, s.ownerEnd);
  else out.text(xmlElement('Owner', e.owner ?? OWNER).slice('<Owner>'.length, -'</Owner>'.length));
  out.bytes(T.ownerEnd);
  if (name === 'Version') out.bytes(T.storageClass);
  out.bytes(END[name]);
}

/**
 * The answer's bytes: `head` (the envelope before the entries), every
 * version, every delete marker, then `after` (common prefixes and the end
 * tag), as toXml would write ListVersionsResult { ...before, Version, DeleteMarker, ...after }.
 */
export function versionsXml(before: XmlObject, result: ListVersionsResult, after: XmlObject, options: VersionsOptions): Buffer {
  const { head, tail } = toXmlAround('ListVersionsResult', before, after);
  const page = result.listed?.page;
  const out = new Bytes(head.length * 3 + tail.length * 3 + (page?.length ?? 0) + result.entries.length * 200);
  out.text(head);
  for (const name of ['Version', 'DeleteMarker'] as const) {
    for (const [i, e] of result.entries.entries()) {
      if ((e.info !== undefined) === (name === 'Version')) write(out, name, e, page, result.listed?.spans[i], options);
    }
  }
  out.text(tail);
  return out.done();
}

/** The one version an object of an unversioned bucket has. */
export const NULL_VERSION = 'null';

/**
 * A bucket that never had versioning, as S3 lists it: each object once, its
 * null version, latest. The ListObjectsV2 page's spans go along (its Key,
 * LastModified, Size); VersionId and Owner are casket's own (null, OWNER), written.
 */
export function nullVersions(listed: ListObjectsResult): ListVersionsResult {
  return {
    entries: listed.objects.map((o) => ({ key: o.key, versionId: NULL_VERSION, isLatest: true, lastModified: o.lastModified, info: o })),
    commonPrefixes: listed.commonPrefixes,
    isTruncated: listed.isTruncated,
    ...(listed.listed && { listed: { page: listed.listed.page, spans: listed.listed.spans.map((s) => s && { ...s, versionId: -1, versionIdEnd: -1, owner: -1, ownerEnd: -1 }) } }),
  };
}
