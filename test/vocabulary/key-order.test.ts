/**
 * compareKeys (src/vocabulary/names.ts) is the order S3 lists keys in: UTF-8
 * binary order. It compares UTF-16 code units, moved so that a character
 * from U+10000 (a surrogate pair) sorts after U+E000–U+FFFF, as its UTF-8
 * bytes do; every listing's continuation point depends on it.
 */
import { describe, expect, it } from 'vitest';
import { compareKeys } from '../../src/vocabulary/names.js';

/** Characters from every range where UTF-16 and UTF-8 order could part: ASCII, Latin, CJK, U+E000 and up, astral. */
const ALPHABET = ['a', 'b', 'Z', '/', '0', 'é', 'ÿ', 'Ā', '中', '\u{d7ff}', '\u{e000}', '\u{f8ff}', '\u{fffd}', '\u{ffff}', '𐀀', '𝄞', '😀', '\u{10ffff}'];

function randomKey(random: () => number): string {
  let key = '';
  const length = Math.floor(random() * 5);
  for (let i = 0; i < length; i++) key += ALPHABET[Math.floor(random() * ALPHABET.length)];
  return key;
}

/** A small seeded generator, so a failure can be run again. */
function seeded(seed: number): () => number {
  let s = seed;
  return () => ((s = (s * 1103515245 + 12345) % 2147483648) / 2147483648);
}

describe('compareKeys', () => {
  it('orders keys as their UTF-8 bytes do, across the surrogate and private-use ranges', () => {
    const random = seeded(42);
    for (let i = 0; i < 5000; i++) {
      const a = randomKey(random);
      const b = randomKey(random);
      expect(Math.sign(compareKeys(a, b)), `${JSON.stringify(a)} vs ${JSON.stringify(b)}`).toBe(Buffer.compare(Buffer.from(a), Buffer.from(b)));
    }
  });

  it('puts a character from U+10000 after U+FFFD, where UTF-16 order would put it before', () => {
    expect(compareKeys('k😀', 'k\u{fffd}')).toBe(1);
    expect(compareKeys('k\u{e000}', 'k𝄞')).toBe(-1);
    expect(compareKeys('k', 'k/')).toBe(-1);
    expect(compareKeys('same', 'same')).toBe(0);
  });
});
