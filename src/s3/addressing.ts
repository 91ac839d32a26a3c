/**
 * Bucket and key from a request: path style (`/bucket/key`) always, and
 * virtual-hosted style (`bucket.<domain>/key`) when a domain is configured
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/VirtualHosting.html).
 * The key is the percent-decoded path; `+` is a literal plus in a path.
 */
import { S3Error } from '../vocabulary/errors.js';
import { MAX_KEY_BYTES } from '../vocabulary/names.js';

export interface Target {
  bucket?: string;
  key?: string;
}


function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new S3Error('InvalidURI');
  }
}

export function resolveTarget(rawPath: string, host: string | undefined, domain: string | undefined): Target {
  let bucket: string | undefined;
  let rest: string;
  const hostname = host?.replace(/:\d+$/, '').toLowerCase();
  if (domain && hostname && hostname !== domain && hostname.endsWith(`.${domain}`)) {
    bucket = hostname.slice(0, -(domain.length + 1));
    rest = rawPath.slice(1);
  } else {
    const path = rawPath.slice(1);
    const slash = path.indexOf('/');
    if (slash < 0) {
      bucket = path === '' ? undefined : decode(path);
      return { bucket };
    }
    bucket = decode(path.slice(0, slash));
    rest = path.slice(slash + 1);
  }
  if (rest === '') return { bucket };
  const key = decode(rest);
  if (Buffer.byteLength(key) > MAX_KEY_BYTES) throw new S3Error('KeyTooLongError');
  return { bucket, key };
}
