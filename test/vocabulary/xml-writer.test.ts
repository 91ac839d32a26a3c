/**
 * casket writes its XML responses itself (src/vocabulary/xml.ts) where it
 * used fast-xml-parser's XMLBuilder; clients must not see a byte change.
 * The builder, with the options casket gave it, is the reference: the same
 * trees — random ones, with every character XML escapes, attributes, #text,
 * repeated and empty elements — must come out the same.
 */
import { XMLBuilder } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { S3_XMLNS, parseXml, toXml, type XmlObject, type XmlValue } from '../../src/vocabulary/xml.js';
import { prng } from '../helpers/prng.js';

const reference = new XMLBuilder({ ignoreAttributes: false, attributeNamePrefix: '@_', suppressEmptyNode: false, suppressBooleanAttributes: false, processEntities: true });
const referenceXml = (root: string, body: XmlObject) => `<?xml version="1.0" encoding="UTF-8"?>\n${reference.build({ [root]: { '@_xmlns': S3_XMLNS, ...body } }) as string}`;


const ALPHABET = ['a', 'Z', '0', ' ', '/', '&', '<', '>', '"', "'", '&amp;', ';', '#', '\u0001', '\t', '\n', 'é', '漢', '🙂', '%20', ']]>'];
const NAMES = ['Key', 'ETag', 'Size', 'Contents', 'Prefix', 'Owner', 'ID', 'Grant'];

function tree(random: () => number, depth: number): XmlObject {
  const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const text = () => Array.from({ length: Math.floor(random() * 6) }, () => pick(ALPHABET)).join('');
  const leaf = (): XmlValue => pick<() => XmlValue>([text, text, () => Math.floor(random() * 1e6) - 5, () => random() < 0.5, () => undefined, () => ''])();
  const value = (): XmlValue => {
    const r = random();
    if (depth > 0 && r < 0.25) return tree(random, depth - 1);
    if (depth > 0 && r < 0.4) return Array.from({ length: Math.floor(random() * 3) }, () => (random() < 0.5 ? tree(random, depth - 1) : leaf()));
    return leaf();
  };
  const out: XmlObject = {};
  for (let i = Math.floor(random() * 5); i > 0; i--) {
    const r = random();
    if (r < 0.15) out[`@_${pick(['xsi:type', 'id', 'x'])}`] = pick<() => XmlValue>([text, () => 7, () => undefined])();
    else if (r < 0.22) out['#text'] = leaf();
    else out[pick(NAMES)] = value();
  }
  return out;
}

describe('the XML writer', () => {
  it('writes what fast-xml-parser’s XMLBuilder wrote for 2,000 random trees, escapes and all', () => {
    for (let seed = 1; seed <= 2_000; seed++) {
      const body = tree(prng(seed), 3);
      expect({ seed, xml: toXml('ListBucketResult', body) }).toEqual({ seed, xml: referenceXml('ListBucketResult', body) });
    }
  });

  it('a listing page of keys with XML’s special characters parses back to the same keys', () => {
    const keys = ['a&b', '<tag>', 'quote"s', "it's", 'x]]>y', 'plain/key.txt', 'dir/ü 漢 🙂'];
    const xml = toXml('ListBucketResult', { Name: 'b', Contents: keys.map((Key) => ({ Key, Size: 1 })) });
    expect(xml.startsWith(`<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="${S3_XMLNS}"><Name>b</Name><Contents><Key>a&amp;b</Key>`)).toBe(true);
    const parsed = parseXml(xml) as { ListBucketResult: { Contents: Array<{ Key: string }> } };
    expect(parsed.ListBucketResult.Contents.map((c) => c.Key)).toEqual(keys);
  });

  it('leaves out undefined children and attributes, and writes an empty element for an empty string, object or #text', () => {
    expect(toXml('E', { A: undefined, B: '', C: {}, D: [], F: { '@_x': undefined, '#text': '' } }, false)).toBe('<?xml version="1.0" encoding="UTF-8"?>\n<E><B></B><C></C><F></F></E>');
  });
});
