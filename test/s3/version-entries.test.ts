/**
 * ListObjectVersions in front of an upstream copies each entry's Key,
 * VersionId, LastModified, Size and Owner from the upstream's bytes
 * (src/backends/s3/version-listing-xml.ts reads the ListVersionsResult page,
 * src/s3/operations/version-entries.ts writes the answer), and a bucket that
 * never had versioning copies them from its ListObjectsV2 page. Clients must
 * not see a byte change: for pages in the forms upstreams send (compact,
 * pretty-printed, AWS's with checksums) with keys, version ids, owners, sizes
 * and dates of every awkward kind, the answer must be exactly what the XML
 * writer gives for the same values — and the scanner must read exactly what
 * the full parser reads, or give up.
 */
import { describe, expect, it } from 'vitest';
import { parseUpstreamXml, rootOf } from '../../src/backends/s3/client.js';
import { scanListing } from '../../src/backends/s3/listing-xml.js';
import { scanVersionListing, type UpstreamVersionListing } from '../../src/backends/s3/version-listing-xml.js';
import type { ListObjectsResult, ListVersionsResult, ObjectInfo, VersionEntry } from '../../src/backends/types.js';
import { nullVersions, versionEntry, versionsXml, type VersionsOptions } from '../../src/s3/operations/version-entries.js';
import { listingURLEncode } from '../../src/vocabulary/url-encoding.js';
import { toXml } from '../../src/vocabulary/xml.js';
import { prng } from '../helpers/prng.js';

/** Key text as upstreams write it: escaped (`&amp;`), numeric references (Go's `&#34;`, `&#xD;`), raw `"'>`, non-ASCII. */
const KEY_PARTS = ['a', 'dir/', ' ', '+', '%', '&amp;', '&lt;', '&gt;', '&quot;', '&apos;', '"', "'", '>', '&#34;', '&#xD;', '&#10;', 'é', '漢', '🙂', '~'];
const VERSION_IDS = ['null', '3sL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY', 'Rb5jvUPeWdfl-3Pd', 'a&amp;b', '&#65;x', '"q"'];
const DATES = ['2026-11-25T19:39:42.067Z', '2026-02-28T23:59:59.999Z', '2024-02-29T00:00:00.000Z', '2026-11-25T19:39:42Z', '2026-11-25T19:39:42.067+00:00'];
const SIZES = ['0', '17', '5368709120', '007'];
const OWNERS = ['<Owner><ID>u1</ID><DisplayName>User One</DisplayName></Owner>', '<Owner><ID>u&amp;2</ID><DisplayName>x</DisplayName></Owner>', '<Owner><ID>u3</ID></Owner>', '<Owner><DisplayName>d</DisplayName><ID>u4</ID></Owner>', ''];
const STYLES = ['rgw', 'pretty', 'aws', 'moto'] as const;
type Style = (typeof STYLES)[number];

/** A ListVersionsResult page as an upstream writes it: versions and delete markers interleaved in key order. */
function versionPage(random: () => number, style: Style, n: number): string {
  const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const nl = style === 'pretty' ? '\n  ' : '';
  // moto writes the empty markers self-closing, and its ETags' quotes raw.
  const markers = style === 'moto' ? '<Prefix/><KeyMarker/><VersionIdMarker/>' : '<Prefix></Prefix><KeyMarker></KeyMarker><VersionIdMarker></VersionIdMarker>';
  let out = `<?xml version="1.0" encoding="UTF-8"?>${nl}<ListVersionsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${nl}<Name>b</Name>${markers}<MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated><NextKeyMarker>k&amp;</NextKeyMarker><NextVersionIdMarker>v1</NextVersionIdMarker>`;
  for (let i = 0; i < n; i++) {
    const key = `k${i}/` + Array.from({ length: 1 + Math.floor(random() * 5) }, () => pick(KEY_PARTS)).join('');
    const head = [`<Key>${key}</Key>`, `<VersionId>${pick(VERSION_IDS)}</VersionId>`, `<IsLatest>${random() < 0.5}</IsLatest>`, `<LastModified>${pick(DATES)}</LastModified>`];
    if (random() < 0.25) {
      out += `${nl}<DeleteMarker>${[...head, pick(OWNERS)].join(nl)}${nl}</DeleteMarker>`;
      continue;
    }
    const quote = style === 'moto' ? '"' : '&quot;';
    const fields = [...head, `<ETag>${quote}${Math.floor(random() * 1e9).toString(16)}${quote}</ETag>`];
    if (style === 'aws') fields.push('<ChecksumAlgorithm>CRC32</ChecksumAlgorithm>');
    fields.push(`<Size>${pick(SIZES)}</Size>`, '<StorageClass>STANDARD</StorageClass>', pick(OWNERS));
    if (style === 'rgw') fields.push('<Type>Normal</Type>');
    out += `${nl}<Version>${fields.join(nl)}${nl}</Version>`;
  }
  return `${out}${nl}<CommonPrefixes><Prefix>p/</Prefix></CommonPrefixes></ListVersionsResult>`;
}

/** A ListObjectsV2 page (a bucket that never had versioning is listed from one). */
function objectsPage(random: () => number, style: Style, n: number): string {
  const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const nl = style === 'pretty' ? '\n  ' : '';
  let out = `<?xml version="1.0" encoding="UTF-8"?>${nl}<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><IsTruncated>false</IsTruncated>`;
  for (let i = 0; i < n; i++) {
    const key = `k${i}/` + Array.from({ length: 1 + Math.floor(random() * 5) }, () => pick(KEY_PARTS)).join('');
    out += `${nl}<Contents><Key>${key}</Key><LastModified>${pick(DATES)}</LastModified><ETag>&quot;ab&quot;</ETag><Size>${pick(SIZES)}</Size>${pick(OWNERS)}<StorageClass>STANDARD</StorageClass></Contents>`;
  }
  return `${out}</ListBucketResult>`;
}

const casketETag = (random: () => number) => (random() < 0.2 ? `${'c'.repeat(64)}-2` : 'a'.repeat(64));

/** What backends/s3/version-reads.ts makes of a scanned page, with casket's own ETags. */
function versionsResult(text: string, random: () => number): ListVersionsResult {
  const scanned = scanVersionListing(text)!;
  const entry = (v: (typeof scanned.Version)[number], info: boolean): VersionEntry => ({
    key: v.Key!,
    versionId: v.VersionId!,
    isLatest: v.IsLatest === 'true',
    lastModified: new Date(v.LastModified!),
    ...(typeof v.Owner?.ID === 'string' && { owner: { ID: v.Owner.ID, DisplayName: v.Owner.DisplayName ?? '' } }),
    ...(info && { info: { bucket: 'b', key: v.Key!, etag: casketETag(random), size: Number(v.Size), lastModified: new Date(v.LastModified!), headers: {}, metadata: {} } as ObjectInfo }),
  });
  const entries = [...scanned.Version.map((v) => entry(v, true)), ...scanned.DeleteMarker.map((m) => entry(m, false))];
  // A version casket had to HEAD (not indexed) comes without spans: written from its values.
  const spans = [...scanned.versionSpans, ...scanned.deleteMarkerSpans].map((s) => (random() < 0.1 ? undefined : s));
  return { entries, commonPrefixes: ['p/'], isTruncated: true, listed: { page: Buffer.from(text), spans } };
}

/** What backends/s3/listing.ts makes of a scanned ListObjectsV2 page. */
function objectsResult(text: string, random: () => number): ListObjectsResult {
  const scanned = scanListing(text)!;
  const objects: ObjectInfo[] = scanned.Contents.map((c) => ({ bucket: 'b', key: c.Key!, etag: casketETag(random), size: Number(c.Size), lastModified: new Date(c.LastModified!), headers: {}, metadata: {}, ...(typeof c.Owner?.ID === 'string' && { owner: { ID: c.Owner.ID, DisplayName: c.Owner.DisplayName ?? '' } }) }));
  return { objects, commonPrefixes: [], isTruncated: false, listed: { page: Buffer.from(text), spans: scanned.spans.map((s) => (random() < 0.1 ? undefined : s)) } };
}

const before = { Name: 'b', Prefix: '', KeyMarker: '', VersionIdMarker: '', MaxKeys: 1000, IsTruncated: true };

/** The answer as the XML writer gives it for the same values: every Version, then every DeleteMarker. */
function written(result: ListVersionsResult, after: Record<string, unknown>, options: VersionsOptions): string {
  const Version = result.entries.filter((e) => e.info).map((e) => versionEntry(e, options));
  const DeleteMarker = result.entries.filter((e) => !e.info).map((e) => versionEntry(e, options));
  return toXml('ListVersionsResult', { ...before, Version, DeleteMarker, ...(after as object) });
}

describe('a version listing written from the upstream page', () => {
  it('is byte for byte what the XML writer gives for the same values, in every upstream form and client option', () => {
    for (let seed = 1; seed <= 60; seed++) {
      const random = prng(seed);
      const style = STYLES[seed % STYLES.length]!;
      const listed = versionsResult(versionPage(random, style, 20), random);
      const options: VersionsOptions = { etagSuffix: seed % 5 === 0, ...(seed % 2 && { encode: listingURLEncode }) };
      const after = { CommonPrefixes: [{ Prefix: 'p/' }] };
      const got = versionsXml(before, listed, after, options).toString('utf8');
      expect({ seed, style, got }).toEqual({ seed, style, got: written(listed, after, options) });
    }
  });

  it('is byte for byte the writer\'s for a bucket that never had versioning, listed from its ListObjectsV2 page', () => {
    for (let seed = 1; seed <= 30; seed++) {
      const random = prng(seed);
      const style = STYLES[seed % STYLES.length]!;
      const listed = nullVersions(objectsResult(objectsPage(random, style, 20), random));
      const options: VersionsOptions = { etagSuffix: seed % 5 === 0, ...(seed % 2 && { encode: listingURLEncode }) };
      const got = versionsXml(before, listed, {}, options).toString('utf8');
      expect({ seed, style, got }).toEqual({ seed, style, got: written(listed, {}, options) });
      // Every object once, its null version, with casket's owner (never the upstream's).
      expect(got.match(/<VersionId>null<\/VersionId><IsLatest>true<\/IsLatest>/g)).toHaveLength(20);
      expect(got).not.toContain('<ID>u1</ID>');
    }
  });

  it('copies the upstream bytes of plain entries, and never the upstream ETag', () => {
    const listed = versionsResult(versionPage(prng(7), 'rgw', 60), prng(8));
    const spans = listed.listed!.spans.filter((s) => s !== undefined);
    expect(spans.filter((s) => s.key >= 0 && s.versionId >= 0).length).toBeGreaterThan(2);
    expect(spans.filter((s) => s.lastModified >= 0 && s.owner >= 0).length).toBeGreaterThan(2);
    const answer = versionsXml(before, listed, {}, { etagSuffix: false }).toString('utf8');
    expect(answer).not.toMatch(/<ETag>&quot;[0-9a-f]{1,8}&quot;<\/ETag>/);
    expect(answer.match(/<ETag>/g)).toHaveLength(listed.entries.filter((e) => e.info).length);
  });
});

/** What the full parser reads of the fields casket uses. */
function full(text: string): UpstreamVersionListing {
  const r = rootOf<Record<string, unknown>>(parseUpstreamXml(text));
  const many = (x: unknown) => (x === undefined ? [] : Array.isArray(x) ? x : [x]) as Array<Record<string, unknown>>;
  const fields = (v: Record<string, unknown>) => Object.fromEntries(['Key', 'VersionId', 'IsLatest', 'LastModified', 'ETag', 'Size', 'Owner'].filter((k) => v[k] !== undefined).map((k) => [k, v[k]]));
  const leaves = Object.fromEntries(['IsTruncated', 'NextKeyMarker', 'NextVersionIdMarker'].filter((k) => r[k] !== undefined).map((k) => [k, r[k]]));
  return { Version: many(r.Version).map(fields), DeleteMarker: many(r.DeleteMarker).map(fields), CommonPrefixes: many(r.CommonPrefixes) as Array<{ Prefix?: string }>, ...leaves };
}

describe('scanVersionListing', () => {
  it('reads what the full parser reads, over random pages without character references', () => {
    for (let seed = 1; seed <= 30; seed++) {
      const text = versionPage(prng(seed), STYLES[seed % STYLES.length]!, 15).replace(/&#[0-9a-fA-FxX]+;/g, '');
      const { versionSpans, deleteMarkerSpans, ...scanned } = scanVersionListing(text)!;
      expect({ seed, scanned }).toEqual({ seed, scanned: full(text) });
      expect(versionSpans.length + deleteMarkerSpans.length).toBe(15);
    }
  });

  it('gives up on anything but the plain form', () => {
    const head = '<?xml version="1.0" encoding="UTF-8"?><ListVersionsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name>';
    expect(scanVersionListing(`${head}<Version><Key>k</Key><VersionId>v</VersionId></Version></ListVersionsResult>`)).toBeDefined();
    expect(scanVersionListing('<Error><Code>InternalError</Code></Error>')).toBeUndefined();
    expect(scanVersionListing(`${head}<Version><Key><![CDATA[k]]></Key></Version></ListVersionsResult>`)).toBeUndefined();
    expect(scanVersionListing(`${head}<!-- c --><Version><Key>k</Key></Version></ListVersionsResult>`)).toBeUndefined();
    expect(scanVersionListing(`${head}<Version><Key a="1">k</Key></Version></ListVersionsResult>`)).toBeUndefined();
    expect(scanVersionListing(`${head}<s3:Version><s3:Key>k</s3:Key></s3:Version></ListVersionsResult>`)).toBeUndefined();
    expect(scanVersionListing(`${head}<Version><Key>k</Key><VersionId/></Version></ListVersionsResult>`)).toBeUndefined();
    expect(scanVersionListing(`${head}<CommonPrefixes><Prefix/></CommonPrefixes></ListVersionsResult>`)).toBeUndefined();
    // A self-closing child of the root reads as the full parser reads it: empty, which no field casket reads takes for a value.
    const moto = `${head}<IsTruncated/><KeyMarker/><Version><Key>k</Key></Version></ListVersionsResult>`;
    const { versionSpans, deleteMarkerSpans, ...scanned } = scanVersionListing(moto)!;
    expect(scanned).toEqual({ ...full(moto), IsTruncated: undefined });
    expect(full(moto).IsTruncated).toBe('');
    expect(scanVersionListing(`${head}<DeleteMarker><Key>k</Key></ListVersionsResult>`)).toBeUndefined();
  });
});
