/**
 * The Range header of GetObject: one byte range (RFC 9110 §14.1.2). S3 serves
 * a single range; a header it cannot parse, or with several ranges, is
 * ignored and the whole object is served, as the RFC allows. A range that
 * starts past the end is 416 InvalidRange.
 */
import type { ByteRange } from '../backends/types.js';
import { S3Error } from '../vocabulary/errors.js';

export function parseRange(header: string | undefined, size: number): ByteRange | undefined {
  if (header === undefined) return undefined;
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!m) return undefined;
  const [, first, last] = m as unknown as [string, string, string];
  const unsatisfiable = () => new S3Error('InvalidRange', { fields: { RangeRequested: header, ActualObjectSize: size }, headers: { 'content-range': `bytes */${size}` } });
  if (first === '') {
    if (last === '') return undefined;
    const suffix = Number(last);
    if (suffix === 0 || size === 0) throw unsatisfiable();
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(first);
  const end = last === '' ? size - 1 : Number(last);
  if (last !== '' && end < start) return undefined;
  if (start >= size) throw unsatisfiable();
  return { start, end: Math.min(end, size - 1) };
}
