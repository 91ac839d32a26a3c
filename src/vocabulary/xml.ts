/**
 * S3 XML in and out. In: fast-xml-parser (validation, entities and
 * well-formedness are its job, not ours). Out: a writer of our own for the
 * one shape casket builds — elements, `@_` attributes, `#text` — whose output
 * is byte for byte what fast-xml-parser's XMLBuilder gives with the options
 * casket used (test/vocabulary/xml-writer.test.ts compares them on random
 * trees): the builder took 5.4 ms of CPU to write a ListObjectsV2 page of
 * 1,000 keys, half of what casket spent on the whole listing (README,
 * Performance). Responses follow the shapes in
 * https://docs.aws.amazon.com/AmazonS3/latest/API/ — element order matters to
 * some clients, and objects keep insertion order, so builders list elements
 * in the documented order.
 */
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import type { Readable } from 'node:stream';
import { S3Error } from './errors.js';

export const S3_XMLNS = 'http://s3.amazonaws.com/doc/2006-03-01/';

export type XmlValue = string | number | boolean | undefined | XmlObject | XmlValue[];
export interface XmlObject {
  [name: string]: XmlValue;
}

/** The five predefined entities (XML 1.0 §4.6), in text and attribute values alike. */
export function escapeXml(text: string): string {
  let out = '';
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    let entity: string;
    switch (text.charCodeAt(i)) {
      case 38: entity = '&amp;'; break;
      case 60: entity = '&lt;'; break;
      case 62: entity = '&gt;'; break;
      case 34: entity = '&quot;'; break;
      case 39: entity = '&apos;'; break;
      default: continue;
    }
    out += text.slice(from, i) + entity;
    from = i + 1;
  }
  return from === 0 ? text : out + text.slice(from);
}

/** `<name …>…</name>` for each value (an array repeats the element; undefined writes nothing). */
export function xmlElement(name: string, value: XmlValue): string {
  if (value === undefined) return '';
  if (Array.isArray(value)) {
    let out = '';
    for (const item of value) out += xmlElement(name, item);
    return out;
  }
  if (typeof value !== 'object') return `<${name}>${escapeXml(String(value))}</${name}>`;
  const [attributes, children] = parts(value);
  return `<${name}${attributes}>${children}</${name}>`;
}

/** An element's attributes (` a="…"`, from `@_` keys) and children, written. */
function parts(value: XmlObject): [string, string] {
  let attributes = '';
  let children = '';
  for (const key in value) {
    const child = value[key];
    if (child === undefined) continue;
    if (key.startsWith('@_')) attributes += ` ${key.slice(2)}="${escapeXml(String(child))}"`;
    else if (key === '#text') children += escapeXml(String(child));
    else children += xmlElement(key, child);
  }
  return [attributes, children];
}

const DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n';

/** `{ Root: {...} }` → `<?xml ...?><Root xmlns="...">...</Root>`. Undefined children are left out. */
export function toXml(rootName: string, body: XmlObject, xmlns = true): string {
  const root: XmlObject = xmlns ? { '@_xmlns': S3_XMLNS, ...body } : body;
  return `${DECLARATION}${xmlElement(rootName, root)}`;
}

/**
 * toXml cut in two where more children go: `head` holds the declaration, the
 * root's start tag and the children of `before`, `tail` the children of
 * `after` and the end tag. A caller writes children of its own between them
 * (a listing's entries copied from an upstream's bytes: s3/operations/listing-contents.ts).
 */
export function toXmlAround(rootName: string, before: XmlObject, after: XmlObject): { head: string; tail: string } {
  const [attributes, children] = parts({ '@_xmlns': S3_XMLNS, ...before });
  return { head: `${DECLARATION}<${rootName}${attributes}>${children}`, tail: `${parts(after)[1]}</${rootName}>` };
}

const parser = new XMLParser({
  ignoreAttributes: true,
  removeNSPrefix: true,
  parseTagValue: false,
  // Text is data: a DeleteObjects key ` x ` is not `x`.
  trimValues: false,
  // Numeric character references (`&#34;`, `&#xA;`) are XML 1.0 §4.1, and Go's
  // encoding/xml writes them (rclone: `<ETag>&#34;...&#34;</ETag>`). The
  // option also decodes a few HTML names (`&nbsp;`), which only malformed XML
  // would contain.
  htmlEntities: true,
  isArray: (name) => name === 'Part' || name === 'Object',
});

/** Most XML a request body may carry: DeleteObjects of 1000 keys of 1024 bytes fits easily. */
export const MAX_XML_BODY = 2 * 1024 * 1024;

/** Reads a small XML request body (bounded) and parses it; MalformedXML when it is not XML. */
export async function readXmlBody(body: Readable, limit = MAX_XML_BODY): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new S3Error('MalformedXML', 'The XML you provided was larger than the maximum allowed.');
    chunks.push(chunk as Buffer);
  }
  return parseXml(Buffer.concat(chunks).toString('utf8'));
}

export function parseXml(text: string): Record<string, unknown> {
  if (text.trim() === '' || XMLValidator.validate(text) !== true) throw new S3Error('MalformedXML');
  return parser.parse(text) as Record<string, unknown>;
}
