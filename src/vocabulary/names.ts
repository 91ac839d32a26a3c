/**
 * S3's naming rules, one copy for every layer: bucket names per
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html,
 * keys of 1..1024 UTF-8 bytes per
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html,
 * and the order S3 lists keys in: UTF-8 binary order (= code point order).
 * JavaScript's `<` on strings compares UTF-16 code units, which differs
 * (U+E000..U+FFFF sort after U+10000.. in UTF-16, before in UTF-8): never use
 * it on keys; use `compareKeys`. Both backends check names themselves, so
 * clients get the same answers whatever an upstream would tolerate.
 */
import { S3Error } from './errors.js';

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
