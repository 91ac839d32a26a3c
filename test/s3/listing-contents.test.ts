/**
 * A listing in front of an upstream copies each entry's Key, LastModified,
 * Size and Owner from the upstream's bytes (src/backends/s3/listing-xml.ts
 * finds them, src/s3/operations/listing-contents.ts writes the answer).
 * Clients must not see a byte change: for pages in the forms upstreams send
 * (RGW's compact one, a pretty-printed one, AWS's with checksums) with keys,
 * owners, sizes and dates of every awkward kind, the answer must be exactly
 * what the XML writer gives for the same values — with casket's ETag and
 * checksum, encoding-type=url, with and without owners and the `-1` suffix.
 */
import { describe, expect, it } from 'vitest';
import { scanListing } from '../../src/backends/s3/listing-xml.js';
import type { ListObjectsResult, ObjectInfo } from '../../src/backends/types.js';
import { contentsEntry, listingXml, type ContentsOptions } from '../../src/s3/operations/listing-contents.js';
import { listingURLEncode } from '../../src/vocabulary/url-encoding.js';
import { toXml } from '../../src/vocabulary/xml.js';
import { prng } from '../helpers/prng.js';


/** Key text as upstreams write it: escaped (`&amp;`), numeric references (Go's `&#34;`, `&#xD;`), raw `"'>`, non-ASCII. */
const KEY_PARTS = ['a', 'dir/', ' ', '+', '%', '&amp;', '&lt;', '&gt;', '&quot;', '&apos;', '"', "'", '>', '&#34;', '&#xD;', '&#10;', 'é', '漢', '🙂', '~'];
const DATES = ['2026-11-25T19:39:42.067Z', '2026-02-28T23:59:59.999Z', '2024-02-29T00:00:00.000Z', '2026-11-25T19:39:42Z', '2026-11-25T19:39:42.067+00:00'];
const SIZES = ['0', '17', '5368709120', '007'];
const OWNERS = ['<Owner><ID>u1</ID><DisplayName>User One</DisplayName></Owner>', '<Owner><ID>u&amp;2</ID><DisplayName>x</DisplayName></Owner>', '<Owner><ID>u3</ID></Owner>', '<Owner><DisplayName>d</DisplayName><ID>u4</ID></Owner>', ''];
const STYLES = ['rgw', 'pretty', 'aws'] as const;

function page(random: () => number, style: (typeof STYLES)[number], n: number): string {
  const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const nl = style === 'pretty' ? '\n    ' : '';
  let out = `<?xml version="1.0" encoding="UTF-8"?>${nl}<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${nl}<Name>b</Name><Prefix></Prefix><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>`;
  for (let i = 0; i < n; i++) {
    const key = `k${i}/` + Array.from({ length: 1 + Math.floor(random() * 5) }, () => pick(KEY_PARTS)).join('');
    const etag = `&quot;${Math.floor(random() * 1e9).toString(16)}${random() < 0.2 ? '-3' : ''}&quot;`;
    const fields = [`<Key>${key}</Key>`, `<LastModified>${pick(DATES)}</LastModified>`, `<ETag>${etag}</ETag>`];
    if (style === 'aws') fields.push('<ChecksumAlgorithm>CRC32</ChecksumAlgorithm>');
    fields.push(`<Size>${pick(SIZES)}</Size>`, '<StorageClass>STANDARD</StorageClass>', pick(OWNERS));
    if (style === 'rgw') fields.push('<Type>Normal</Type>');
    out += `${nl}<Contents>${fields.join(nl)}${nl}</Contents>`;
  }
  return `${out}${nl}<CommonPrefixes><Prefix>p/</Prefix></CommonPrefixes><KeyCount>${n}</KeyCount></ListBucketResult>`;
}

/** What backends/s3/listing.ts makes of a scanned page, with casket's own ETags and checksums. */
function result(text: string, random: () => number): ListObjectsResult {
  const scanned = scanListing(text)!;
  const objects: ObjectInfo[] = scanned.Contents.map((c) => ({
    bucket: 'b',
    key: c.Key!,
    etag: random() < 0.2 ? `${'c'.repeat(64)}-2` : 'a'.repeat(64),
    size: Number(c.Size),
    lastModified: new Date(c.LastModified!),
    headers: {},
    metadata: {},
    ...(random() < 0.3 && { checksum: { algorithm: 'crc32c', type: 'FULL_OBJECT', value: 'AAAAAA==' } as ObjectInfo['checksum'] }),
    ...(typeof c.Owner?.ID === 'string' && { owner: { ID: c.Owner.ID, DisplayName: c.Owner.DisplayName ?? '' } }),
  }));
  // An entry casket had to HEAD (not indexed) comes without spans: written from its values.
  const spans = scanned.spans.map((s) => (random() < 0.1 ? undefined : s));
  return { objects, commonPrefixes: ['p/'], isTruncated: false, listed: { page: Buffer.from(text), spans } };
}

const before = { Name: 'b', Prefix: '', MaxKeys: 1000, KeyCount: 3, IsTruncated: false };

describe('a listing written from the upstream page', () => {
  it('is byte for byte what the XML writer gives for the same values, in every upstream form and client option', () => {
    for (let seed = 1; seed <= 60; seed++) {
      const random = prng(seed);
      const style = STYLES[seed % STYLES.length]!;
      const text = page(random, style, 20);
      const listed = result(text, random);
      const encode = seed % 2 ? listingURLEncode : undefined;
      const options: ContentsOptions = { owner: seed % 3 !== 0, etagSuffix: seed % 5 === 0, ...(encode && { encode }) };
      const after = { CommonPrefixes: [{ Prefix: 'p/' }] };
      const expected = toXml('ListBucketResult', { ...before, Contents: listed.objects.map((o) => contentsEntry(o, options)), ...after });
      const got = listingXml('ListBucketResult', before, listed, after, options).toString('utf8');
      expect({ seed, style, got }).toEqual({ seed, style, got: expected });
    }
  });

  it('copies the upstream bytes of plain entries rather than writing them again', () => {
    const text = page(prng(7), 'rgw', 50);
    const listed = result(text, prng(8));
    const spans = listed.listed!.spans.filter((s) => s !== undefined);
    // Many keys of this alphabet hold something the writer escapes; the rest, and the dates, sizes and owners, come from the page.
    expect(spans.filter((s) => s.key >= 0).length).toBeGreaterThan(2);
    expect(spans.filter((s) => s.lastModified >= 0 && s.size >= 0 && s.owner >= 0).length).toBeGreaterThan(2);
    const answer = listingXml('ListBucketResult', before, listed, {}, { owner: true, etagSuffix: false }).toString('utf8');
    // Never the upstream's ETag (RGW's MD5): casket's own, on every entry.
    expect(answer).not.toMatch(/<ETag>&quot;[0-9a-f]{1,8}(-3)?&quot;<\/ETag>/);
    expect(answer.match(/<ETag>/g)).toHaveLength(50);
  });
});
