/**
 * Key-range arithmetic for listing the embedded store. SQLite's BINARY
 * collation on UTF-8 TEXT is memcmp, i.e. S3's listing order (s3/names.ts).
 * The embedded store never derives a file name from a key (bodies live in
 * randomly named blob files), so '..', '/', NUL or anything else in a key can
 * never reach the file system.
 */

/**
 * The least string greater than every string that starts with `prefix`, or
 * undefined when there is none (empty prefix, or one made only of U+10FFFF).
 * So `key >= prefix AND key < prefixSuccessor(prefix)` is exactly "key starts
 * with prefix", as an index range. Incrementing the last code point (skipping
 * the surrogate block, which has no UTF-8 form) keeps the bound valid UTF-8,
 * which a byte-level increment would not.
 */
export function prefixSuccessor(prefix: string): string | undefined {
  const codePoints = Array.from(prefix);
  while (codePoints.length > 0) {
    const last = codePoints.pop()!.codePointAt(0)!;
    if (last < 0x10ffff) {
      codePoints.push(String.fromCodePoint(last + 1 === 0xd800 ? 0xe000 : last + 1));
      return codePoints.join('');
    }
  }
  return undefined;
}

/**
 * The common prefix `key` rolls up into under `delimiter`, or undefined:
 * everything up to and including the first delimiter after `prefix`.
 */
export function commonPrefixOf(key: string, prefix: string, delimiter: string | undefined): string | undefined {
  if (!delimiter) return undefined;
  const at = key.indexOf(delimiter, prefix.length);
  return at < 0 ? undefined : key.slice(0, at + delimiter.length);
}
