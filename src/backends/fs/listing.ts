/**
 * Paged listing with prefix and delimiter, shared by ListObjects and
 * ListMultipartUploads
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectsV2.html,
 * https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListMultipartUploads.html).
 *
 * Rows come from an index range scan in key order (UTF-8 binary order, as
 * S3), read lazily: the scan stops as soon as the page is full and one more
 * entry proves it truncated. Keys under `prefix` that contain `delimiter`
 * after it roll up into one common prefix, which counts as one entry toward
 * the page size, as in S3. After emitting a common prefix the scan does not
 * walk the keys under it: it seeks past them (`key >= prefixSuccessor(cp)`),
 * so a "directory" of a million keys costs one index seek.
 *
 * A page's cursor (`nextAfter`) is its last key or common prefix. A cursor
 * that is itself a common prefix resumes after every key under it, so the
 * next page never repeats it.
 */
import { compareKeys } from '../../vocabulary/names.js';
import { commonPrefixOf, prefixSuccessor } from './key-range.js';

/** Where a scan starts, within (bucket, prefix). */
export type Seek =
  | { from: 'after-key'; key: string }
  | { from: 'at-key'; key: string }
  /** (key, uploadId) > (key, uploadId): multipart upload listings. */
  | { from: 'after-upload'; key: string; uploadId: string };

/** Rows in key order from `seek`, strictly below `upper` when given. Must be lazy. */
export type Scan<Row> = (seek: Seek, upper: string | undefined) => Iterable<Row>;

export interface Page<Row> {
  rows: Row[];
  commonPrefixes: string[];
  isTruncated: boolean;
  /** Set when truncated: the last entry, a row or a common prefix. */
  last?: { row: Row } | { commonPrefix: string };
}

export interface PageParams {
  prefix: string;
  delimiter?: string | undefined;
  max: number;
}

/**
 * The first seek for a page resuming after `key` (exclusive), or undefined
 * when nothing can follow it. Clamped to `prefix`, since a cursor before the
 * prefix must not start the scan outside it.
 */
export function seekAfter(key: string | undefined, { prefix, delimiter }: PageParams): Seek | undefined {
  if (!key) return { from: 'at-key', key: prefix };
  if (key.startsWith(prefix) && commonPrefixOf(key, prefix, delimiter) === key) {
    const next = prefixSuccessor(key);
    return next === undefined ? undefined : { from: 'at-key', key: next };
  }
  return compareKeys(key, prefix) >= 0 ? { from: 'after-key', key } : { from: 'at-key', key: prefix };
}

export function listPage<Row extends { key: string }>(scan: Scan<Row>, params: PageParams, first: Seek | undefined): Page<Row> {
  const { prefix, delimiter, max } = params;
  const page: Page<Row> = { rows: [], commonPrefixes: [], isTruncated: false };
  // S3 answers max-keys=0 with an empty page that is not truncated.
  if (max <= 0 || first === undefined) return page;
  const upper = prefixSuccessor(prefix);
  let last: Page<Row>['last'];
  let count = 0;
  let seek: Seek | undefined = first;
  scanning: while (seek !== undefined) {
    const current: Seek = seek;
    seek = undefined;
    for (const row of scan(current, upper)) {
      if (count === max) {
        page.isTruncated = true;
        page.last = last;
        break scanning;
      }
      count++;
      const commonPrefix = commonPrefixOf(row.key, prefix, delimiter);
      if (commonPrefix === undefined) {
        page.rows.push(row);
        last = { row };
        continue;
      }
      page.commonPrefixes.push(commonPrefix);
      last = { commonPrefix };
      const next = prefixSuccessor(commonPrefix);
      if (next !== undefined) seek = { from: 'at-key', key: next };
      // Leaving the loop ends this lazy scan; the next one seeks past the common prefix.
      break;
    }
  }
  return page;
}
