/**
 * Name checks the `s3` backend makes before asking the upstream, so clients
 * get the same answers as from the embedded store whatever the upstream
 * tolerates (Ceph RGW and moto accept some names AWS refuses):
 * general-purpose bucket naming rules,
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html,
 * and keys of 1..1024 UTF-8 bytes,
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html.
 * Same rules as backends/fs/names.ts (kept apart so neither backend imports
 * the other's internals).
 */
import { S3Error } from '../../s3/errors.js';

const MAX_KEY_BYTES = 1024;
const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const IP_ADDRESS = /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;
const RESERVED_PREFIXES = ['xn--', 'sthree-', 'amzn-s3-demo-'];
const RESERVED_SUFFIXES = ['-s3alias', '--ol-s3', '.mrap', '--x-s3', '--table-s3'];

export function validateBucketName(name: string): void {
  const ok =
    BUCKET_NAME.test(name) &&
    !IP_ADDRESS.test(name) &&
    !name.includes('..') &&
    !name.includes('.-') &&
    !name.includes('-.') &&
    !RESERVED_PREFIXES.some((p) => name.startsWith(p)) &&
    !RESERVED_SUFFIXES.some((s) => name.endsWith(s));
  if (!ok) throw new S3Error('InvalidBucketName', { fields: { BucketName: name } });
}

const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

export function validateKey(key: string): void {
  if (key.length === 0) throw new S3Error('InvalidArgument', 'Object key must not be empty');
  if (LONE_SURROGATE.test(key)) throw new S3Error('InvalidArgument', 'Object key is not valid Unicode');
  if (key.length > MAX_KEY_BYTES || Buffer.byteLength(key, 'utf8') > MAX_KEY_BYTES) {
    throw new S3Error('KeyTooLongError', { fields: { Size: Buffer.byteLength(key, 'utf8'), MaxSizeAllowed: MAX_KEY_BYTES } });
  }
}

/** UTF-8 byte order (= code point order), the order S3 lists keys in; JavaScript's `<` compares UTF-16 units. */
export function compareKeys(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}
