/**
 * ListObjects against a model: keys in UTF-8 binary order (not JavaScript's
 * UTF-16 order), prefix, delimiter roll-up with common prefixes counted as one
 * entry, exclusive `after`, maxKeys (0 → empty, not truncated), and
 * pagination by `nextAfter` that visits every entry exactly once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openFsBackend, type FsBackend } from '../../../src/backends/fs/index.js';
import { prefixSuccessor } from '../../../src/backends/fs/key-range.js';
import { listPage, seekAfter, type Scan } from '../../../src/backends/fs/listing.js';
import type { ListObjectsParams } from '../../../src/backends/types.js';
import { payloadOf, PUT_DEFAULTS, tempDataDir } from './helpers.js';

const utf8 = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** The listing semantics, the slow and obvious way. */
function model(keys: string[], { prefix, delimiter, after: given, maxKeys }: ListObjectsParams) {
  const after = given === '' ? undefined : given; // an empty marker is no marker
  const entries: Array<{ key: string } | { prefix: string }> = [];
  const seen = new Set<string>();
  const afterAt = after !== undefined && delimiter !== undefined && after.startsWith(prefix) ? after.indexOf(delimiter, prefix.length) : -1;
  const afterIsCommonPrefix = afterAt >= 0 && afterAt === after!.length - delimiter!.length;
  for (const key of [...keys].sort(utf8)) {
    if (!key.startsWith(prefix)) continue;
    if (after !== undefined && utf8(key, after) <= 0) continue;
    if (afterIsCommonPrefix && key.startsWith(after!)) continue;
    const at = delimiter ? key.indexOf(delimiter, prefix.length) : -1;
    if (at < 0) {
      entries.push({ key });
      continue;
    }
    const cp = key.slice(0, at + delimiter!.length);
    if (!seen.has(cp)) {
      seen.add(cp);
      entries.push({ prefix: cp });
    }
  }
  const page = entries.slice(0, maxKeys);
  return {
    keys: page.flatMap((e) => ('key' in e ? [e.key] : [])),
    commonPrefixes: page.flatMap((e) => ('prefix' in e ? [e.prefix] : [])),
    isTruncated: maxKeys > 0 && entries.length > maxKeys,
    last: page.length > 0 ? (e => ('key' in e ? e.key : e.prefix))(page[page.length - 1]!) : undefined,
  };
}

const ALPHABET = ['a', 'b', '/', 'é', '\uE000', '\uFFFD', '\u{1F600}', '-', '.', 'A', ' '];

function randomKeys(count: number): string[] {
  let x = 12345;
  const next = () => {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    return x;
  };
  const keys = new Set<string>();
  while (keys.size < count) {
    const length = 1 + (next() % 6);
    let key = '';
    for (let i = 0; i < length; i++) key += ALPHABET[next() % ALPHABET.length];
    keys.add(key);
  }
  return [...keys];
}

let temp: ReturnType<typeof tempDataDir>;
let store: FsBackend;
const KEYS = [...randomKeys(400), 'dir/', 'dir/a', 'dir/b/c', 'dir//x', '\u{10FFFF}', '\u{10FFFF}/x', '\uD7FF/a', '\uD7FFb'];

beforeAll(async () => {
  temp = tempDataDir();
  store = openFsBackend({ dataDir: temp.dir, fsync: false });
  await store.createBucket('bkt');
  for (const key of KEYS) await store.putObject('bkt', key, payloadOf(key), PUT_DEFAULTS);
});
afterAll(async () => {
  await store.close();
  temp.cleanup();
});

async function list(params: ListObjectsParams) {
  const r = await store.listObjects('bkt', params);
  return { keys: r.objects.map((o) => o.key), commonPrefixes: r.commonPrefixes, isTruncated: r.isTruncated, last: r.nextAfter };
}

describe('ListObjects', () => {
  it('lists keys in UTF-8 binary order, which is not JavaScript string order', async () => {
    const keys = (await list({ prefix: '', maxKeys: 1000 })).keys;
    expect(keys).toEqual([...KEYS].sort(utf8));
    // U+E000 and U+FFFD sort before U+1F600 in UTF-8 (and after it in UTF-16).
    const order = ['\uE000', '\uFFFD', '\u{1F600}'].map((c) => keys.indexOf(c)).filter((i) => i >= 0);
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(keys.length).toBe(KEYS.length);
  });

  it('carries ETag and size for each key', async () => {
    const r = await store.listObjects('bkt', { prefix: 'dir/', maxKeys: 10 });
    for (const o of r.objects) expect(o.size).toBe(Buffer.byteLength(o.key));
  });

  const prefixes = ['', 'a', 'a/', 'é', '\u{1F600}', 'dir/', 'zz', '\u{10FFFF}', '\uD7FF'];
  const delimiters = [undefined, '/', 'é', '/a', '\u{1F600}'];
  const sizes = [0, 1, 2, 3, 7, 1000];

  it('matches the model for every prefix × delimiter × maxKeys × after', async () => {
    let cases = 0;
    for (const prefix of prefixes) {
      for (const delimiter of delimiters) {
        const full = model(KEYS, { prefix, delimiter, maxKeys: 10_000 });
        const afters = [undefined, '', 'a', ...full.keys.slice(0, 3), ...full.commonPrefixes.slice(0, 3)];
        for (const maxKeys of sizes) {
          for (const after of afters) {
            const params: ListObjectsParams = { prefix, maxKeys, ...(delimiter !== undefined && { delimiter }), ...(after !== undefined && { after }) };
            const expected = model(KEYS, params);
            const actual = await list(params);
            expect({ ...actual, last: actual.isTruncated ? actual.last : undefined }, JSON.stringify(params)).toEqual({
              ...expected,
              last: expected.isTruncated ? expected.last : undefined,
            });
            cases++;
          }
        }
      }
    }
    expect(cases).toBeGreaterThan(1000);
  });

  it('pages through everything by nextAfter, each entry exactly once', async () => {
    for (const prefix of prefixes) {
      for (const delimiter of delimiters) {
        for (const maxKeys of [1, 3, 50]) {
          const full = model(KEYS, { prefix, delimiter, maxKeys: 10_000 });
          const keys: string[] = [];
          const commonPrefixes: string[] = [];
          let after: string | undefined;
          for (let pages = 0; ; pages++) {
            expect(pages).toBeLessThan(1000);
            const r = await store.listObjects('bkt', { prefix, maxKeys, ...(delimiter !== undefined && { delimiter }), ...(after !== undefined && { after }) });
            keys.push(...r.objects.map((o) => o.key));
            commonPrefixes.push(...r.commonPrefixes);
            expect(r.objects.length + r.commonPrefixes.length).toBeLessThanOrEqual(maxKeys);
            if (!r.isTruncated) break;
            expect(r.nextAfter).toBeDefined();
            after = r.nextAfter;
          }
          expect(keys).toEqual(full.keys);
          expect(commonPrefixes).toEqual(full.commonPrefixes);
        }
      }
    }
  });

  it('answers maxKeys 0 with an empty page that is not truncated', async () => {
    expect(await list({ prefix: '', maxKeys: 0 })).toEqual({ keys: [], commonPrefixes: [], isTruncated: false, last: undefined });
  });

  it('rolls a large directory up into one entry', async () => {
    const temp2 = tempDataDir();
    const s = openFsBackend({ dataDir: temp2.dir, fsync: false });
    try {
      await s.createBucket('bkt');
      for (let i = 0; i < 2000; i++) await s.putObject('bkt', `big/${String(i).padStart(5, '0')}`, payloadOf('x'), PUT_DEFAULTS);
      await s.putObject('bkt', 'after', payloadOf('x'), PUT_DEFAULTS);
      await s.putObject('bkt', 'before', payloadOf('x'), PUT_DEFAULTS);
      const page1 = await s.listObjects('bkt', { prefix: '', delimiter: '/', maxKeys: 2 });
      expect(page1.objects.map((o) => o.key)).toEqual(['after', 'before']);
      expect(page1.commonPrefixes).toEqual([]);
      expect(page1.isTruncated).toBe(true);
      const page2 = await s.listObjects('bkt', { prefix: '', delimiter: '/', maxKeys: 2, after: page1.nextAfter! });
      expect(page2).toMatchObject({ objects: [], commonPrefixes: ['big/'], isTruncated: false });
      const whole = await s.listObjects('bkt', { prefix: '', delimiter: '/', maxKeys: 1000 });
      expect(whole).toMatchObject({ commonPrefixes: ['big/'], isTruncated: false });
      expect(whole.objects.map((o) => o.key)).toEqual(['after', 'before']);
    } finally {
      await s.close();
      temp2.cleanup();
    }
  });
});

describe('listPage', () => {
  /** A lazy scan over sorted keys that counts the rows it hands out (the index reads). */
  function countingScan(keys: string[]) {
    const sorted = [...keys].sort(utf8);
    const counter = { rows: 0, seeks: 0 };
    const scan: Scan<{ key: string }> = function* (seek, upper) {
      counter.seeks++;
      const from = sorted.findIndex((k) => (seek.from === 'at-key' ? utf8(k, seek.key) >= 0 : utf8(k, seek.key) > 0));
      for (let i = from < 0 ? sorted.length : from; i < sorted.length && (upper === undefined || utf8(sorted[i]!, upper) < 0); i++) {
        counter.rows++;
        yield { key: sorted[i]! };
      }
    };
    return { scan, counter };
  }

  it('seeks past a rolled-up directory instead of reading the keys under it', () => {
    const keys = ['after', 'before', 'zeta', ...Array.from({ length: 2000 }, (_, i) => `big/${String(i).padStart(5, '0')}`)];
    const { scan, counter } = countingScan(keys);
    const params = { prefix: '', delimiter: '/', max: 1000 };
    const page = listPage(scan, params, seekAfter(undefined, params));
    expect(page.rows.map((r) => r.key)).toEqual(['after', 'before', 'zeta']);
    expect(page.commonPrefixes).toEqual(['big/']);
    // after, before, big/00000 (rolled up, then a seek to 'big0'), zeta: 4 rows, not 2003.
    expect(counter).toEqual({ rows: 4, seeks: 2 });
  });
});

describe('prefixSuccessor', () => {
  it('bounds exactly the strings that start with the prefix', () => {
    expect(prefixSuccessor('')).toBeUndefined();
    expect(prefixSuccessor('a/')).toBe('a0');
    expect(prefixSuccessor('\uD7FF')).toBe('\uE000');
    expect(prefixSuccessor('a\u{10FFFF}')).toBe('b');
    expect(prefixSuccessor('\u{10FFFF}\u{10FFFF}')).toBeUndefined();
    for (const prefix of ['a', 'é', '\u{1F600}', 'x\u{10FFFF}']) {
      const upper = prefixSuccessor(prefix)!;
      for (const key of KEYS.concat([prefix + '\u{10FFFF}', prefix + '\u{10FFFF}z'])) {
        const inRange = utf8(key, prefix) >= 0 && utf8(key, upper) < 0;
        expect(inRange, key).toBe(key.startsWith(prefix));
      }
    }
  });
});
