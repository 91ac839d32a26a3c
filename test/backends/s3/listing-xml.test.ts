/**
 * The scanned ListObjectsV2 answer (src/backends/s3/listing-xml.ts) must read
 * exactly what the full XML parser reads from the documents upstreams send —
 * keys with escaped and non-ASCII characters, owners, common prefixes, truncation —
 * and give up (undefined: parsed in full) on anything else.
 */
import { describe, expect, it } from 'vitest';
import { parseUpstreamXml, rootOf } from '../../../src/backends/s3/client.js';
import { scanListing, unescapeXml, type UpstreamListing } from '../../../src/backends/s3/listing-xml.js';

const HEAD = '<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>p/</Prefix><MaxKeys>1000</MaxKeys>';
const entry = (key: string, etag = '&quot;d41d8cd98f00b204e9800998ecf8427e&quot;') =>
  `<Contents><Key>${key}</Key><LastModified>2026-11-25T19:39:42.067Z</LastModified><ETag>${etag}</ETag><Size>17</Size><Owner><ID>test</ID><DisplayName>t</DisplayName></Owner><StorageClass>STANDARD</StorageClass></Contents>`;

/** What the full parser reads of the fields casket uses. */
function full(text: string): UpstreamListing {
  const r = rootOf<UpstreamListing>(parseUpstreamXml(text));
  const contents = (r.Contents ?? []).map(({ Key, ETag, Size, LastModified, Owner }) => ({ Key, ETag, Size, LastModified, ...(Owner && { Owner }) }));
  return { Contents: contents, CommonPrefixes: r.CommonPrefixes ?? [], ...(r.IsTruncated !== undefined && { IsTruncated: r.IsTruncated }) };
}

describe('scanListing', () => {
  it('reads what the full parser reads: escaped, numeric and non-ASCII keys, prefixes, truncation', () => {
    const text = `${HEAD}<IsTruncated>true</IsTruncated>${entry('p/a&amp;b &lt;c&gt; &quot;d&quot; &apos;e&apos;')}${entry('p/ünï cødé ☃ 𝄞')}${entry('p/x', '&quot;0123-2&quot;')}<CommonPrefixes><Prefix>p/dir/</Prefix></CommonPrefixes><CommonPrefixes><Prefix>p/d&amp;r/</Prefix></CommonPrefixes><KeyCount>5</KeyCount></ListBucketResult>`;
    const { spans, ...scanned } = scanListing(text)!;
    expect(scanned).toEqual(full(text));
    expect(spans).toHaveLength(3);
    expect(scanned!.Contents.map((c) => c.Key)).toEqual(['p/a&b <c> "d" \'e\'', 'p/ünï cødé ☃ 𝄞', 'p/x']);
    expect(scanned!.Contents[2]!.ETag).toBe('"0123-2"');
    expect(scanned!.Contents[0]!.Owner).toEqual({ ID: 'test', DisplayName: 't' });
    expect(scanned!.IsTruncated).toBe('true');
    expect(scanned!.CommonPrefixes).toEqual([{ Prefix: 'p/dir/' }, { Prefix: 'p/d&r/' }]);
  });

  it('replaces character references, as XML 1.0 §4.1 says (the full parser leaves them as they are)', () => {
    const text = `${HEAD}<IsTruncated>false</IsTruncated>${entry('p/line&#xD;feed&#10;tab&#9;')}</ListBucketResult>`;
    expect(scanListing(text)!.Contents[0]!.Key).toBe('p/line\rfeed\ntab\t');
  });

  it('reads an empty page', () => {
    const text = `${HEAD}<IsTruncated>false</IsTruncated><KeyCount>0</KeyCount></ListBucketResult>`;
    expect(scanListing(text)).toEqual({ Contents: [], CommonPrefixes: [], IsTruncated: 'false', spans: [] });
  });

  it('gives up on anything but the plain form', () => {
    expect(scanListing('<Error><Code>InternalError</Code></Error>')).toBeUndefined();
    expect(scanListing(`${HEAD}${entry('p/<![CDATA[x]]>')}</ListBucketResult>`)).toBeUndefined();
    expect(scanListing(`${HEAD}<s3:Contents><s3:Key>k</s3:Key></s3:Contents></ListBucketResult>`)).toBeUndefined();
    expect(scanListing(`${HEAD}<Contents><Key type="x">k</Key></Contents></ListBucketResult>`)).toBeUndefined();
    expect(scanListing(`${HEAD}<Contents><Key>k&nbsp;</Key></Contents></ListBucketResult>`)).toBeUndefined();
    expect(scanListing(`${HEAD}<Contents><Key>k</Key></ListBucketResult>`)).toBeUndefined();
    // Markup inside a field: not plain text.
    expect(scanListing(`${HEAD}<Contents><Key><K>k</K></Key></Contents></ListBucketResult>`)).toBeUndefined();
  });

  it('unescapes only the references XML defines', () => {
    expect(unescapeXml('a&amp;b')).toBe('a&b');
    expect(unescapeXml('&#x1F600;&#65;')).toBe('😀A');
    expect(unescapeXml('a&b')).toBeUndefined();
    expect(unescapeXml('&#x110000;')).toBeUndefined();
  });
});
