/**
 * ObjectReaders over upstream GETs (backends/types.ts ObjectReader):
 * - inlineReader: a small body already read, served in one write;
 * - heldReader: a GET whose large body waits for open() — the whole object
 *   is handed over as it comes, without a second request — for at most
 *   READER_LEASE_MS, then released (a 304 or 412 never opens it);
 * - openBody: a new GET (whole or ranged) pinned to one version's upstream
 *   ETag with If-Match, so the bytes served are exactly that version's.
 * Backpressure runs through pipe; a reader that goes away cancels the
 * upstream response (undici's rule: always consume or cancel a body).
 */
import { PassThrough, Readable } from 'node:stream';
import { S3Error } from '../../vocabulary/errors.js';
import type { ByteRange, ObjectInfo, ObjectReader } from '../types.js';
import { formatFor, unquote, type Capabilities } from './capabilities.js';
import { errorFrom, type UpstreamClient, type UpstreamResponse } from './client.js';
import type { UpstreamObject } from './etags.js';

/** How long a GET's body waits for open() before it is released (the Backend interface cannot say "never": a 304 or 412 does not open). */
const READER_LEASE_MS = 30_000;

/** A reader over a small body already in memory: served in one write (ObjectReader.inline). */
export function inlineReader(info: ObjectInfo, data: Buffer): ObjectReader {
  const slice = (range?: ByteRange): Buffer => {
    if (range === undefined) return data;
    if (range.start < 0 || range.start > range.end || range.end >= data.length) {
      throw new S3Error('InvalidRange', { fields: { RangeRequested: `bytes=${range.start}-${range.end}`, ActualObjectSize: data.length } });
    }
    return data.subarray(range.start, range.end + 1);
  };
  return { info, inline: slice, open: (range) => Readable.from([slice(range)].filter((b) => b.length > 0)) };
}

/** A reader over a GET response whose body is still to be read (see getObject). */
export function heldReader(client: UpstreamClient, bucket: string, key: string, current: UpstreamObject, res: UpstreamResponse, form: Capabilities['ifMatchPut']): ObjectReader {
  const { info, upstreamETag } = current;
  let held: UpstreamResponse['body'] | undefined = res.body;
  // Until handed over, an upstream failure only marks the body unusable (open() then GETs again).
  const ignore = () => {};
  held.on('error', ignore);
  const release = () => {
    clearTimeout(lease);
    const body = held;
    held = undefined;
    // Unread bytes of a large body: closing the connection is cheaper than reading them.
    if (body && !body.complete) body.destroy();
  };
  const lease = setTimeout(release, READER_LEASE_MS);
  lease.unref();
  return {
    info,
    release,
    open: (range) => {
      const whole = range === undefined || (range.start === 0 && range.end === info.size - 1);
      if (whole && held && !held.destroyed && !held.readableDidRead) {
        clearTimeout(lease);
        const body = held;
        held = undefined;
        body.off('error', ignore);
        return body;
      }
      release();
      return openBody(client, bucket, key, upstreamETag, form, range);
    },
  };
}

/** A Readable of one version's bytes, pinned to its upstream ETag; backpressure through pipe, upstream cancelled if the reader goes away. */
export function openBody(client: UpstreamClient, bucket: string, key: string, upstreamETag: string, form: Capabilities['ifMatchPut'], range?: ByteRange): Readable {
  const out = new PassThrough();
  const headers: Record<string, string> = {};
  if (form) headers['if-match'] = formatFor(form, upstreamETag);
  if (range) headers.range = `bytes=${range.start}-${range.end}`;
  let upstream: UpstreamResponse | undefined;
  out.on('close', () => {
    if (upstream && !upstream.body.complete) upstream.body.destroy();
  });
  client.send({ method: 'GET', bucket, key, headers }).then(
    async (res) => {
      upstream = res;
      if (out.destroyed) return void res.body.destroy();
      if (res.status >= 300 || (res.headers.etag !== undefined && unquote(res.headers.etag) !== upstreamETag)) {
        const error = res.status >= 300 && res.status !== 412 ? await errorFrom(res, { method: 'GET', bucket, key }) : new S3Error('SlowDown', 'The object changed upstream while it was being read; please retry.');
        res.body.destroy();
        out.destroy(error);
        return;
      }
      res.body.on('error', (e) => out.destroy(e));
      res.body.pipe(out);
    },
    (error: unknown) => out.destroy(error as Error),
  );
  return out;
}
