/**
 * The upstream's ListObjectsV2 answer (ListBucketResult,
 * https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectsV2.html)
 * read by scanning for the few elements casket uses — each <Contents>'
 * Key, ETag, Size, LastModified and Owner, each <CommonPrefixes>' Prefix, and
 * IsTruncated — instead of building a document: fast-xml-parser spent
 * ~22 ms of CPU (and most of the garbage collector's time) on one page of
 * 1,000 keys from Ceph RGW (--cpu-prof), three quarters of casket's whole
 * cost for that listing. Text is unescaped as XML 1.0 §4.6 and §4.1 say
 * (the five predefined entities, decimal and hex character references).
 * Anything other than the plain form S3 servers send — an <Error> body,
 * attributes or namespace prefixes on these elements, CDATA — returns
 * undefined, and the caller parses the document in full as before.
 */

export interface ListedObject {
  Key?: string;
  ETag?: string;
  Size?: string;
  LastModified?: string;
  /** With fetch-owner=true: the upstream's owner, as its GetObjectAcl answers it. */
  Owner?: { ID?: string; DisplayName?: string };
}

export interface UpstreamListing {
  Contents: ListedObject[];
  CommonPrefixes: Array<{ Prefix?: string }>;
  IsTruncated?: string;
}

const NAMED: Record<string, string> = { quot: '"', amp: '&', lt: '<', gt: '>', apos: "'" };
const REFERENCE = /&(?:#x([0-9a-fA-F]+)|#([0-9]+)|(quot|amp|lt|gt|apos));/g;

/** XML character data with its entity and character references replaced; undefined when it holds any other '&'. */
export function unescapeXml(text: string): string | undefined {
  if (!text.includes('&')) return text;
  if (text.replace(REFERENCE, '').includes('&')) return undefined;
  let bad = false;
  const out = text.replace(REFERENCE, (_, hex: string | undefined, dec: string | undefined, named: string | undefined) => {
    if (named !== undefined) return NAMED[named]!;
    const code = hex !== undefined ? parseInt(hex, 16) : parseInt(dec!, 10);
    if (!(code >= 0 && code <= 0x10ffff)) bad = true;
    return bad ? '' : String.fromCodePoint(code);
  });
  return bad ? undefined : out;
}

/** The text of the first <name>…</name> in `block`, unescaped; null when absent, undefined when not plain. */
function element(block: string, name: string): string | null | undefined {
  const open = `<${name}>`;
  const start = block.indexOf(open);
  if (start < 0) return null;
  const end = block.indexOf(`</${name}>`, start + open.length);
  if (end < 0) return undefined;
  const raw = block.slice(start + open.length, end);
  if (raw.includes('<')) return undefined;
  return unescapeXml(raw);
}

/** Each `<name>…</name>` block of `text` in order; undefined when one is not closed. */
function blocks(text: string, name: string): string[] | undefined {
  const open = `<${name}>`;
  const close = `</${name}>`;
  const out: string[] = [];
  for (let at = text.indexOf(open); at >= 0; at = text.indexOf(open, at)) {
    const end = text.indexOf(close, at + open.length);
    if (end < 0) return undefined;
    out.push(text.slice(at + open.length, end));
    at = end + close.length;
  }
  return out;
}

/** A ListBucketResult in the plain form, or undefined: parse it in full instead. */
export function scanListing(text: string): UpstreamListing | undefined {
  if (!/<ListBucketResult[\s>]/.test(text) || text.includes('<Error>') || text.includes('<![CDATA[')) return undefined;
  // Attributes or prefixes on an element read here: not the plain form.
  if (/<\/?[A-Za-z0-9_-]+:(?:Contents|Key|ETag|Size|LastModified|Owner|ID|DisplayName|CommonPrefixes|Prefix|IsTruncated)[\s>]|<(?:Contents|Key|ETag|Size|LastModified|Owner|ID|DisplayName|CommonPrefixes|Prefix|IsTruncated)\s[^>]*>/.test(text)) return undefined;
  const contents = blocks(text, 'Contents');
  const prefixes = blocks(text, 'CommonPrefixes');
  if (!contents || !prefixes) return undefined;
  const listing: UpstreamListing = { Contents: [], CommonPrefixes: [] };
  for (const block of contents) {
    const o: ListedObject = {};
    for (const name of ['Key', 'ETag', 'Size', 'LastModified'] as const) {
      const value = element(block, name);
      if (value === undefined) return undefined;
      if (value !== null) o[name] = value;
    }
    const owner = blocks(block, 'Owner');
    if (owner === undefined) return undefined;
    if (owner[0] !== undefined) {
      const id = element(owner[0], 'ID');
      const name = element(owner[0], 'DisplayName');
      if (id === undefined || name === undefined) return undefined;
      o.Owner = { ...(id !== null && { ID: id }), ...(name !== null && { DisplayName: name }) };
    }
    listing.Contents.push(o);
  }
  for (const block of prefixes) {
    const prefix = element(block, 'Prefix');
    if (prefix === undefined) return undefined;
    listing.CommonPrefixes.push(prefix === null ? {} : { Prefix: prefix });
  }
  // No element inside <Contents> is named IsTruncated, and a key cannot hold a raw '<'.
  const truncated = element(text, 'IsTruncated');
  if (truncated === undefined) return undefined;
  if (truncated !== null) listing.IsTruncated = truncated;
  return listing;
}
