/**
 * Bucket names, object keys, and the key-range arithmetic listing needs.
 *
 * Bucket names follow the general-purpose bucket rules of
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html.
 * Keys are any well-formed Unicode string of 1..1024 UTF-8 bytes
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html).
 * The embedded store never derives a file name from a key (bodies live in
 * randomly named blob files), so '..', '/', NUL or anything else in a key can
 * never reach the file system.
 *
 * Ordering: S3 lists keys in UTF-8 binary order. SQLite's BINARY collation on
 * UTF-8 TEXT is memcmp, i.e. the same order, which is also Unicode code point
 * order. JavaScript's `<` on strings compares UTF-16 code units, which differs
 * (U+E000..U+FFFF sort after U+10000.. in UTF-16, before in UTF-8): never use
 * it on keys; use `compareKeys`.
 */
import { S3Error } from '../../s3/errors.js';

export const MAX_KEY_BYTES = 1024;

const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const IP_ADDRESS = /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;
const RESERVED_PREFIXES = ['xn--', 'sthree-', 'amzn-s3-demo-'];
const RESERVED_SUFFIXES = ['-s3alias', '--ol-s3', '.mrap', '--x-s3', '--table-s3'];

export function isValidBucketName(name: string): boolean {
  return (
    BUCKET_NAME.test(name) &&
    !IP_ADDRESS.test(name) &&
    !name.includes('..') &&
    !name.includes('.-') &&
    !name.includes('-.') &&
    !RESERVED_PREFIXES.some((p) => name.startsWith(p)) &&
    !RESERVED_SUFFIXES.some((s) => name.endsWith(s))
  );
}

export function validateBucketName(name: string): void {
  if (!isValidBucketName(name)) throw new S3Error('InvalidBucketName', { fields: { BucketName: name } });
}

/** With the `u` flag a surrogate class matches only unpaired surrogates: text that has no UTF-8 form. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

export function validateKey(key: string): void {
  if (key.length === 0) throw new S3Error('InvalidArgument', 'Object key must not be empty');
  if (LONE_SURROGATE.test(key)) throw new S3Error('InvalidArgument', 'Object key is not valid Unicode');
  // More than 1024 UTF-16 units is more than 1024 bytes (each unit encodes to at least one): no need to encode it.
  if (key.length > MAX_KEY_BYTES || Buffer.byteLength(key, 'utf8') > MAX_KEY_BYTES) {
    throw new S3Error('KeyTooLongError', { fields: { Size: Buffer.byteLength(key, 'utf8'), MaxSizeAllowed: MAX_KEY_BYTES } });
  }
}

/** UTF-8 binary order (= code point order), the order SQLite and S3 list keys in. */
export function compareKeys(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

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
