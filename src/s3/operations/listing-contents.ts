/**
 * A ListObjects / ListObjectsV2 answer written as bytes: the envelope from
 * the XML writer (vocabulary/xml.ts), each <Contents> entry either written
 * from its values or, when the upstream's page is at hand
 * (ListObjectsResult.listed), with its Key, LastModified, Size and Owner
 * copied from the page's bytes — they are exactly the bytes the writer would
 * give (backends/s3/listing-xml.ts checks) — and only the ETag, the checksum
 * and StorageClass written anew. Every answer is byte for byte the one the
 * writer gives for the same values (test/s3/listing-contents.test.ts); it
 * costs a copy of the page instead of a string built, measured and encoded
 * again per request (issue 42 item 2; docs/performance.md).
 */
import type { ListedSpans, ListObjectsResult, ObjectInfo } from '../../backends/types.js';
import { DISPLAY_NAMES } from '../../vocabulary/checksums.js';
import { formatETag } from '../../vocabulary/etag.js';
import { escapeXml, toXmlAround, xmlElement, type XmlObject } from '../../vocabulary/xml.js';
import { xmlDate } from '../respond.js';
import { OWNER } from './buckets.js';

export interface ContentsOptions {
  /** encoding-type=url's encoder, or undefined: keys as they are. */
  encode?: (s: string) => string;
  /** Whether entries name their owner (v1 always, v2 with fetch-owner=true). */
  owner: boolean;
  etagSuffix: boolean;
}

/** One <Contents> entry's children, written from its values. */
export function contentsEntry(o: ObjectInfo, options: ContentsOptions): XmlObject {
  return {
    Key: options.encode ? options.encode(o.key) : o.key,
    LastModified: xmlDate(o.lastModified),
    ETag: formatETag(o.etag, options.etagSuffix),
    ...(o.checksum && { ChecksumAlgorithm: DISPLAY_NAMES[o.checksum.algorithm], ChecksumType: o.checksum.type }),
    Size: o.size,
    // In front of an upstream, its owner of the key, as its GetObjectAcl (forwarded) names it.
    ...(options.owner && { Owner: o.owner ?? OWNER }),
    StorageClass: 'STANDARD',
  };
}

/** A growing buffer of bytes. */
export class Bytes {
  buf: Buffer;
  at = 0;
  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(size);
  }
  private room(n: number): void {
    if (this.at + n <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.at + n));
    this.buf.copy(bigger, 0, 0, this.at);
    this.buf = bigger;
  }
  text(s: string): void {
    this.room(s.length * 3);
    this.at += this.buf.write(s, this.at, 'utf8');
  }
  /** Text known to be ASCII (an ETag), byte by byte: cheaper than Buffer.write for a few dozen characters. */
  ascii(s: string): void {
    this.room(s.length);
    const buf = this.buf;
    let at = this.at;
    for (let i = 0; i < s.length; i++) buf[at++] = s.charCodeAt(i);
    this.at = at;
  }
  /** Text of letters, digits and `-` only, byte by byte; false (with bytes written past `at`, to be dropped) at any other character. */
  token(s: string): boolean {
    this.room(s.length);
    const buf = this.buf;
    let at = this.at;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (!((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c === 0x2d)) return false;
      buf[at++] = c;
    }
    this.at = at;
    return true;
  }
  bytes(from: Uint8Array): void {
    this.room(from.length);
    this.buf.set(from, this.at);
    this.at += from.length;
  }
  copy(from: Buffer, start: number, end: number): void {
    this.room(end - start);
    this.at += from.copy(this.buf, this.at, start, end);
  }
  done(): Buffer {
    return this.buf.subarray(0, this.at);
  }
}

/** The fixed parts of an entry, encoded once. */
const T = {
  contentsKey: Buffer.from('<Contents><Key>'),
  keyLastModified: Buffer.from('</Key><LastModified>'),
  lastModifiedETag: Buffer.from('</LastModified><ETag>&quot;'),
  etagEnd: Buffer.from('&quot;</ETag>'),
  size: Buffer.from('<Size>'),
  sizeEnd: Buffer.from('</Size>'),
  sizeOwner: Buffer.from('</Size><Owner>'),
  ownerEnd: Buffer.from('</Owner>'),
  storageClassEnd: Buffer.from('<StorageClass>STANDARD</StorageClass></Contents>'),
};

/** A quoted ETag of printable ASCII with nothing the writer escapes inside its quotes (casket's: hex, maybe `-N`). */
const ASCII_ETAG = /^"[\x20-\x21\x23-\x25\x28-\x3b\x3d\x3f-\x7e]*"$/;

/** The text of casket's ETag element between its `&quot;`s, as the writer escapes formatETag's quoted form. */
export function etagText(out: Bytes, etag: string, etagSuffix: boolean): void {
  // casket's own ETags (hex, maybe `-N`) are written as they are, checked as they are copied.
  const at = out.at;
  if (out.token(etag)) {
    if (etagSuffix && !etag.includes('-')) out.ascii('-1');
    return;
  }
  out.at = at;
  // formatETag quoted: `"` is the one character of it the writer escapes.
  const quoted = formatETag(etag, etagSuffix);
  if (ASCII_ETAG.test(quoted)) out.ascii(quoted.slice(1, -1));
  else out.text(escapeXml(quoted).slice(6, -6));
}

function copyable(s: ListedSpans | undefined, options: ContentsOptions): s is ListedSpans {
  return s !== undefined && (options.encode !== undefined || s.key >= 0) && s.lastModified >= 0 && s.size >= 0;
}

/**
 * The answer's bytes: `head` (the envelope before the entries), every
 * object's <Contents>, then `tail` (common prefixes and the end tag), as
 * toXml would write root { ...before, Contents, ...after }.
 */
export function listingXml(rootName: string, before: XmlObject, result: ListObjectsResult, after: XmlObject, options: ContentsOptions): Buffer {
  const { head, tail } = toXmlAround(rootName, before, after);
  const page = result.listed?.page;
  const out = new Bytes(head.length * 3 + tail.length * 3 + (page?.length ?? 0) + result.objects.length * 160);
  out.text(head);
  for (const [i, o] of result.objects.entries()) {
    const s = result.listed?.spans[i];
    if (page === undefined || !copyable(s, options)) {
      out.text(xmlElement('Contents', contentsEntry(o, options)));
      continue;
    }
    out.bytes(T.contentsKey);
    if (options.encode) out.text(escapeXml(options.encode(o.key)));
    else out.copy(page, s.key, s.keyEnd);
    out.bytes(T.keyLastModified);
    out.copy(page, s.lastModified, s.lastModifiedEnd);
    out.bytes(T.lastModifiedETag);
    etagText(out, o.etag, options.etagSuffix);
    out.bytes(T.etagEnd);
    if (o.checksum) out.text(xmlElement('ChecksumAlgorithm', DISPLAY_NAMES[o.checksum.algorithm]) + xmlElement('ChecksumType', o.checksum.type));
    out.bytes(T.size);
    out.copy(page, s.size, s.sizeEnd);
    if (!options.owner) {
      out.bytes(T.sizeEnd);
    } else if (s.owner >= 0) {
      out.bytes(T.sizeOwner);
      out.copy(page, s.owner, s.ownerEnd);
      out.bytes(T.ownerEnd);
    } else {
      out.text(`</Size>${xmlElement('Owner', o.owner ?? OWNER)}`);
    }
    out.bytes(T.storageClassEnd);
  }
  out.text(tail);
  return out.done();
}
