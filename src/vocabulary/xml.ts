/**
 * S3 XML in and out, through fast-xml-parser (escaping, entities and
 * well-formedness are its job, not ours). Responses follow the shapes in
 * https://docs.aws.amazon.com/AmazonS3/latest/API/ — element order matters to
 * some clients, and objects keep insertion order, so builders list elements
 * in the documented order.
 */
import { XMLBuilder, XMLParser, XMLValidator } from 'fast-xml-parser';
import type { Readable } from 'node:stream';
import { S3Error } from './errors.js';

export const S3_XMLNS = 'http://s3.amazonaws.com/doc/2006-03-01/';

const builder = new XMLBuilder({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  suppressEmptyNode: false,
  suppressBooleanAttributes: false,
  processEntities: true,
});

export type XmlValue = string | number | boolean | undefined | XmlObject | XmlValue[];
export interface XmlObject {
  [name: string]: XmlValue;
}

/** `{ Root: {...} }` → `<?xml ...?><Root xmlns="...">...</Root>`. Undefined children are left out. */
export function toXml(rootName: string, body: XmlObject, xmlns = true): string {
  const root: XmlObject = xmlns ? { '@_xmlns': S3_XMLNS, ...body } : body;
  return `<?xml version="1.0" encoding="UTF-8"?>\n${builder.build({ [rootName]: root }) as string}`;
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
