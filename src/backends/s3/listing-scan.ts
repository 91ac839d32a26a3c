/**
 * The one byte pass over an upstream's listing page that casket reads
 * instead of building a document (issue 42 item 2): ListBucketResult
 * (listing-xml.ts) and ListVersionsResult (version-listing-xml.ts) are the
 * same shape — a root whose children are entries (<Contents>, or <Version>
 * and <DeleteMarker>), <CommonPrefixes> and a few leaves — so one scanner
 * reads both. fast-xml-parser spent ~22 ms of CPU (and most of the garbage
 * collector's time) on one page of 1,000 keys from Ceph RGW (--cpu-prof).
 * The pass works on the bytes rather than a decoded copy of the page, and
 * notes where each entry's Key, VersionId, LastModified, Size and Owner
 * stand in the page when they are written exactly as casket would write
 * them, so the answer copies those bytes through
 * (s3/operations/listing-contents.ts, version-entries.ts).
 *
 * Text is unescaped as XML 1.0 §4.6 and §4.1 say (the five predefined
 * entities, decimal and hex character references). Anything other than the
 * plain form S3 servers send — an <Error> body, CDATA, comments, attributes,
 * namespace prefixes, self-closing tags inside an entry — returns undefined,
 * and the caller parses the document in full. A self-closing child of the
 * root (moto's `<KeyMarker/>`) is passed over: no field read there is one.
 */
import type { VersionSpans } from '../types.js';

/** An entry's fields as the page names them (a <Contents>, a <Version> or a <DeleteMarker>). */
export interface ListedObject {
  Key?: string;
  ETag?: string;
  Size?: string;
  LastModified?: string;
  /** ListVersionsResult only. */
  VersionId?: string;
  IsLatest?: string;
  /** With fetch-owner=true (and in every version listing): the upstream's owner, as its GetObjectAcl answers it. */
  Owner?: { ID?: string; DisplayName?: string };
}

/** The entries of one element name: their fields, and the spans of their bytes that can be copied through. */
export interface ScannedEntries {
  objects: ListedObject[];
  spans: VersionSpans[];
}

/** A scanned page. */
export interface ScannedPage {
  entries: Record<string, ScannedEntries>;
  CommonPrefixes: Array<{ Prefix?: string }>;
  /** The first of each leaf of the root asked for (IsTruncated, NextKeyMarker, …). */
  leaves: Record<string, string>;
  /** While scanning: the last <Owner> whose bytes are copied through. */
  lastOwner?: { start: number; end: number; found: { ID?: string; DisplayName?: string } };
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

const LT = 0x3c;
const GT = 0x3e;
const SLASH = 0x2f;

/** Characters casket's XML writer escapes (vocabulary/xml.ts): text holding none of them is written as it is. */
const ESCAPED = /[&<>"']/;
/** A date as Date.prototype.toISOString writes it (ECMA-262 §21.4.4.36), which is how casket writes LastModified. */
const ISO_DATE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
/** A size as String(Number(size)) writes it. */
const PLAIN_SIZE = /^(?:0|[1-9]\d{0,14})$/;

function isSpace(b: number): boolean {
  return b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
}

/** A byte of a tag name S3 writes (letters, digits, `_ . -`): anything else — an attribute, a prefix, `/>`, `<!` — is not the plain form. */
function isNameByte(b: number): boolean {
  return (b >= 0x61 && b <= 0x7a) || (b >= 0x41 && b <= 0x5a) || (b >= 0x30 && b <= 0x39) || b === 0x5f || b === 0x2e || b === 0x2d;
}

/** The element names read here, matched on the bytes (no string made per tag). */
const NAMES = ['Contents', 'Version', 'DeleteMarker', 'CommonPrefixes', 'IsTruncated', 'NextKeyMarker', 'NextVersionIdMarker', 'Key', 'VersionId', 'IsLatest', 'ETag', 'Size', 'LastModified', 'Owner', 'ID', 'DisplayName', 'Prefix'] as const;
export type Name = (typeof NAMES)[number];
const NAME_BYTES = NAMES.map((n) => Buffer.from(n, 'latin1'));
/** Any other element: passed over whole. */
const OTHER = '*';
/**
 * A self-closing child (`<KeyMarker/>`, as moto writes the markers and
 * Prefix it echoes). Only the root may have one, and the page reads as the
 * full parser reads it: an empty element is an empty string, which no field
 * casket reads of the root takes for a value (IsTruncated not 'true', a
 * marker '' is none, an entry without a Key is dropped).
 */
const EMPTY = '/';

function same(page: Buffer, at: number, name: Uint8Array, from = 0, length = name.length - from): boolean {
  for (let i = 0; i < length; i++) if (page[at + i] !== name[from + i]) return false;
  return true;
}

/**
 * A cursor over the children of one element. next() reads the next child's
 * start tag and returns its name ('' at the parent's end tag, undefined when
 * the markup is not the plain form); text() then reads a leaf's character
 * data up to its end tag, skip() passes a child whole.
 */
class Children {
  /** The current child's name is page[nameStart, open); its content starts at open + 1. */
  open = 0;
  nameStart = 0;
  /** What text() read: page[start, end). */
  start = 0;
  end = 0;
  constructor(private readonly page: Buffer, public at: number) {}

  next(): Name | typeof OTHER | typeof EMPTY | '' | undefined {
    const page = this.page;
    let at = this.at;
    while (at < page.length && isSpace(page[at]!)) at++;
    if (page[at] !== LT) return undefined;
    if (page[at + 1] === SLASH) {
      const gt = page.indexOf(GT, at);
      if (gt < 0) return undefined;
      this.at = gt + 1;
      return '';
    }
    let gt = at + 1;
    while (gt < page.length && isNameByte(page[gt]!)) gt++;
    if (page[gt] === SLASH && page[gt + 1] === GT && gt > at + 1) {
      this.at = gt + 2;
      return EMPTY;
    }
    if (page[gt] !== GT || gt === at + 1) return undefined;
    this.nameStart = at + 1;
    this.open = gt;
    this.at = gt + 1;
    const length = gt - at - 1;
    for (let i = 0; i < NAMES.length; i++) {
      if (NAME_BYTES[i]!.length === length && same(page, at + 1, NAME_BYTES[i]!)) return NAMES[i]!;
    }
    return OTHER;
  }

  /** Reads the current leaf's content, page[start, end), up to its end tag; false when it holds markup. */
  text(): boolean {
    const page = this.page;
    const start = this.open + 1;
    const end = page.indexOf(LT, start);
    if (end < 0 || page[end + 1] !== SLASH) return false;
    const length = this.open - this.nameStart;
    const close = end + 2 + length;
    if (page[close] !== GT || !same(page, end + 2, page, this.nameStart, length)) return false;
    this.start = start;
    this.end = end;
    this.at = close + 1;
    return true;
  }

  /** Passes the current child and everything in it (a child of the same name nested inside is not the plain form S3 sends). */
  skip(): boolean {
    if (this.text()) return true;
    const close = this.page.indexOf(`</${this.page.toString('latin1', this.nameStart, this.open)}>`, this.open + 1, 'latin1');
    if (close < 0) return false;
    this.at = close + this.open - this.nameStart + 3;
    return true;
  }
}

const AMP = 0x26;
const QUOT = Buffer.from('&quot;', 'latin1');
const OWNER_END = Buffer.from('</Owner>', 'latin1');

/** Whether the text decode() read last held a reference (`&…;`): then its bytes are not what the writer gives. */
let referenced = false;

function decode(page: Buffer, start: number, end: number): string | undefined {
  referenced = false;
  for (let i = start; i < end; i++) {
    if (page[i] === AMP) {
      referenced = true;
      return unescapeXml(page.toString('utf8', start, end));
    }
  }
  return page.toString('utf8', start, end);
}

/** An ETag as S3 servers write it, `&quot;…&quot;`, read without a pass of the reference pattern. */
function decodeETag(page: Buffer, start: number, end: number): string | undefined {
  if (end - start >= 12 && same(page, start, QUOT) && same(page, end - 6, QUOT)) {
    let plain = true;
    for (let i = start + 6; i < end - 6; i++) if (page[i] === AMP || page[i]! >= 0x80) plain = false;
    if (plain) return `"${page.toString('latin1', start + 6, end - 6)}"`;
  }
  return decode(page, start, end);
}

/** One entry (<Contents>, <Version>, <DeleteMarker>), its cursor just past the start tag; false when it is not the plain form. */
function entry(page: Buffer, c: Children, into: ScannedEntries, scan: ScannedPage): boolean {
  const o: ListedObject = {};
  const spans: VersionSpans = { key: -1, keyEnd: -1, versionId: -1, versionIdEnd: -1, lastModified: -1, lastModifiedEnd: -1, size: -1, sizeEnd: -1, owner: -1, ownerEnd: -1 };
  const inner = new Children(page, c.at);
  for (let name = inner.next(); name !== ''; name = inner.next()) {
    if (name === undefined || name === EMPTY) return false;
    if (name === 'Owner') {
      if (!owner(page, inner, o, spans, scan)) return false;
      continue;
    }
    if (name !== 'Key' && name !== 'ETag' && name !== 'Size' && name !== 'LastModified' && name !== 'VersionId' && name !== 'IsLatest') {
      // Another element of the entry (StorageClass, RGW's Type, a checksum): not read.
      if (!inner.skip()) return false;
      continue;
    }
    if (!inner.text()) return false;
    // The first of each, as a reader of the document by name would take it.
    if (o[name] !== undefined) continue;
    const { start, end } = inner;
    const value = name === 'ETag' ? decodeETag(page, start, end) : decode(page, start, end);
    if (value === undefined) return false;
    o[name] = value;
    if (name === 'Key' || name === 'VersionId') {
      // `&#xD;` reads as a CR, which the writer writes raw: copied only when the page has no reference in it either.
      if (!referenced && !ESCAPED.test(value)) {
        if (name === 'Key') [spans.key, spans.keyEnd] = [start, end];
        else [spans.versionId, spans.versionIdEnd] = [start, end];
      }
    } else if (name === 'Size') {
      if (PLAIN_SIZE.test(value)) [spans.size, spans.sizeEnd] = [start, end];
    } else if (name === 'LastModified') {
      if (ISO_DATE.test(value) && canonicalDate(value)) [spans.lastModified, spans.lastModifiedEnd] = [start, end];
    }
  }
  c.at = inner.at;
  into.objects.push(o);
  into.spans.push(spans);
  return true;
}

/** Days in each month of a common year; February has 29 in a leap year (the Gregorian rule, as Date counts). */
const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * A date that toISOString writes back the same (not 2026-02-31, which Date
 * moves to March), told by arithmetic on the digits ISO_DATE has checked:
 * making a Date per entry was 5% of a listing's CPU on the days after the
 * 28th (--cpu-prof).
 */
function canonicalDate(value: string): boolean {
  const digit = (at: number) => value.charCodeAt(at) - 48;
  const two = (at: number) => digit(at) * 10 + digit(at + 1);
  const year = two(0) * 100 + two(2);
  const month = two(5);
  const day = two(8);
  if (month < 1 || month > 12 || day < 1 || two(11) > 23 || two(14) > 59 || two(17) > 59) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return day <= MONTH_DAYS[month - 1]! + (month === 2 && leap ? 1 : 0);
}

/** <Owner>: its ID and DisplayName; its bytes are copied through only when they are exactly what casket writes, <ID>…</ID><DisplayName>…</DisplayName>. */
function owner(page: Buffer, c: Children, o: ListedObject, spans: VersionSpans, into: ScannedPage): boolean {
  const start = c.at;
  // Most pages name one owner on every entry: the same bytes as the last plain one, read once.
  const last = into.lastOwner;
  if (last !== undefined) {
    const length = last.end - last.start;
    if (same(page, start, page, last.start, length) && same(page, start + length, OWNER_END)) {
      c.at = start + length + OWNER_END.length;
      if (o.Owner === undefined) {
        o.Owner = last.found;
        [spans.owner, spans.ownerEnd] = [start, start + length];
      }
      return true;
    }
  }
  const inner = new Children(page, c.at);
  const found: { ID?: string; DisplayName?: string } = {};
  const ranges: Array<[string, number, number]> = [];
  let plain = true;
  for (let name = inner.next(); name !== ''; name = inner.next()) {
    if (name === undefined || name === EMPTY) return false;
    if (name !== 'ID' && name !== 'DisplayName') {
      if (!inner.skip()) return false;
      plain = false;
      continue;
    }
    if (!inner.text()) return false;
    const value = decode(page, inner.start, inner.end);
    if (value === undefined) return false;
    if (found[name] === undefined) found[name] = value;
    ranges.push([name, inner.start, inner.end]);
    if (referenced || ESCAPED.test(value)) plain = false;
  }
  const end = inner.at - '</Owner>'.length;
  c.at = inner.at;
  if (o.Owner !== undefined) return true;
  o.Owner = found;
  // Nothing between the tags, not even a space: byte for byte what casket's writer gives for the same owner.
  const [id, name] = ranges;
  if (plain && ranges.length === 2 && id![0] === 'ID' && name![0] === 'DisplayName' && id![1] === start + '<ID>'.length && name![1] === id![2] + '</ID><DisplayName>'.length && end === name![2] + '</DisplayName>'.length) {
    [spans.owner, spans.ownerEnd] = [start, end];
    into.lastOwner = { start, end, found };
  }
  return true;
}


/**
 * A page whose root is `root`, in the plain form, or undefined: parse it in
 * full instead. Children named in `entries` are read as entries, those in
 * `leaves` as text (the first of each), <CommonPrefixes> for their Prefix;
 * any other child is passed over whole.
 */
export function scanPage(page: Buffer, root: string, entries: readonly Name[], leaves: readonly Name[]): ScannedPage | undefined {
  // CDATA, a comment or a declaration (all `<!`) could hide markup inside an element passed over whole: one search of the page for them all.
  if (page.indexOf('<!', 0, 'latin1') >= 0) return undefined;
  let at = page.indexOf(`<${root}`, 0, 'latin1');
  if (at < 0) return undefined;
  const after = page[at + root.length + 1];
  if (after === undefined || !(after === GT || isSpace(after))) return undefined;
  at = page.indexOf(GT, at);
  if (at < 0 || page[at - 1] === SLASH) return undefined;
  const scan: ScannedPage = { entries: {}, CommonPrefixes: [], leaves: {} };
  for (const name of entries) scan.entries[name] = { objects: [], spans: [] };
  const c = new Children(page, at + 1);
  for (let name = c.next(); name !== ''; name = c.next()) {
    if (name === undefined) return undefined;
    if (name === EMPTY) continue;
    const into = name === OTHER ? undefined : scan.entries[name];
    if (into !== undefined) {
      if (!entry(page, c, into, scan)) return undefined;
    } else if (name === 'CommonPrefixes') {
      const inner = new Children(page, c.at);
      let prefix: string | undefined;
      for (let child = inner.next(); child !== ''; child = inner.next()) {
        if (child === undefined || child === EMPTY) return undefined;
        if (child !== 'Prefix') {
          if (!inner.skip()) return undefined;
          continue;
        }
        const value = inner.text() ? decode(page, inner.start, inner.end) : undefined;
        if (value === undefined) return undefined;
        prefix ??= value;
      }
      c.at = inner.at;
      scan.CommonPrefixes.push(prefix === undefined ? {} : { Prefix: prefix });
    } else if (name !== OTHER && leaves.includes(name) && scan.leaves[name] === undefined) {
      const value = c.text() ? decode(page, c.start, c.end) : undefined;
      if (value === undefined) return undefined;
      scan.leaves[name] = value;
    } else if (!c.skip()) {
      return undefined;
    }
  }
  delete scan.lastOwner;
  return scan;
}
