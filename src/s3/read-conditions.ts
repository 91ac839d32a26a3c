/**
 * Conditional GET/HEAD and the x-amz-copy-source-if-* conditions of CopyObject
 * and UploadPartCopy, from headers to the pure evaluation in
 * guard/preconditions.ts. An unparseable date is ignored (RFC 9110 §13.1.3).
 */
import type { ObjectInfo } from '../backends/types.js';
import { evaluateRead, type ReadConditions } from '../guard/preconditions.js';
import { formatETag, parseETagList } from '../vocabulary/etag.js';
import { S3Error } from '../vocabulary/errors.js';
import { httpDate } from './respond.js';

function date(value: string | undefined): Date | undefined {
  if (value === undefined) return undefined;
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? undefined : d;
}

export function readConditionsFrom(headers: Record<string, string>, prefix = ''): ReadConditions {
  const c: ReadConditions = {};
  const get = (name: string) => headers[`${prefix}${name}`];
  if (get('if-match') !== undefined) c.ifMatch = parseETagList(get('if-match')!);
  if (get('if-none-match') !== undefined) c.ifNoneMatch = parseETagList(get('if-none-match')!);
  const modified = date(get('if-modified-since'));
  if (modified) c.ifModifiedSince = modified;
  const unmodified = date(get('if-unmodified-since'));
  if (unmodified) c.ifUnmodifiedSince = unmodified;
  return c;
}

/** GetObject / HeadObject: 412 or 304 as S3 answers them. */
export function checkReadConditions(info: ObjectInfo, headers: Record<string, string>, etagSuffix: boolean): void {
  const verdict = evaluateRead(info, readConditionsFrom(headers));
  if (verdict === 'ok') return;
  const current = { etag: formatETag(info.etag, etagSuffix), 'last-modified': httpDate(info.lastModified) };
  if (verdict === 'not-modified') throw new S3Error('NotModified', { headers: current });
  const condition = headers['if-match'] !== undefined ? 'If-Match' : 'If-Unmodified-Since';
  throw new S3Error('PreconditionFailed', { fields: { Condition: condition, CurrentETag: current.etag }, headers: current });
}

/** CopyObject / UploadPartCopy source conditions: every failure is 412 (API_CopyObject). */
export function checkCopySourceConditions(info: ObjectInfo, headers: Record<string, string>): void {
  const verdict = evaluateRead(info, readConditionsFrom(headers, 'x-amz-copy-source-'));
  if (verdict !== 'ok') throw new S3Error('PreconditionFailed', { fields: { Condition: 'x-amz-copy-source-If-Match' } });
}
