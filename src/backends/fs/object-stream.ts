/**
 * ObjectReader: the bytes of exactly one version of an object.
 *
 * Inline bodies were read with the row, so they are that version by
 * construction. File-backed bodies (one blob, or one per part of a multipart
 * object, streamed across in order, with no copy made at completion) are
 * protected by pins (reaper.ts): the reader pins its blobs in the same tick
 * its row was read, so an overwrite or delete committed afterwards cannot get
 * them unlinked.
 * - The reader itself holds a pin for `leaseMs` (default 60 s): `open()` may
 *   be called any time within it, any number of times. `release()` drops it
 *   at once (the caller will not open it, or not again); the lease frees a
 *   reader whose caller never says.
 * - Each stream `open()` returns holds its own pin until it closes (ends,
 *   fails, or is destroyed), however long the client takes to read it.
 * A blob that turns out shorter than its row says fails the stream rather than
 * ending it early: a truncated body must not pass for a whole one.
 */
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { S3Error } from '../../vocabulary/errors.js';
import type { ByteRange, ObjectInfo, ObjectReader } from '../types.js';
import type { BlobStore } from './blobs.js';
import type { BlobReaper } from './reaper.js';

/** Read size per syscall and per stream buffer: large enough for throughput, small enough per reader. */
const READ_CHUNK = 256 * 1024;

/** Inclusive bounds of the bytes to send; throws InvalidRange for a range outside the object. */
function bounds(range: ByteRange | undefined, size: number): { start: number; end: number } {
  if (range === undefined) return { start: 0, end: size - 1 };
  const { start, end } = range;
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || start > end || end >= size) {
    throw new S3Error('InvalidRange', { fields: { RangeRequested: `bytes=${start}-${end}`, ActualObjectSize: size } });
  }
  return { start, end };
}

export function inlineReader(info: ObjectInfo, body: Buffer): ObjectReader {
  return {
    info,
    inline(range) {
      const { start, end } = bounds(range, body.length);
      return body.subarray(start, end + 1);
    },
    open(range) {
      const { start, end } = bounds(range, body.length);
      const slice = body.subarray(start, end + 1);
      return new Readable({
        read() {
          if (slice.length > 0) this.push(slice);
          this.push(null);
        },
      });
    },
  };
}

export function blobReader(
  info: ObjectInfo,
  ids: readonly string[],
  sizes: readonly number[],
  blobs: BlobStore,
  reaper: BlobReaper,
  leaseMs: number,
): ObjectReader {
  reaper.pin(ids);
  let leased = true;
  const release = () => {
    if (!leased) return;
    leased = false;
    clearTimeout(lease);
    reaper.unpin(ids);
  };
  const lease = setTimeout(release, leaseMs).unref();
  const paths = ids.map((id) => blobs.path(id));
  return {
    info,
    release,
    open(range) {
      const { start, end } = bounds(range, info.size);
      reaper.pin(ids);
      const stream = Readable.from(segments(paths, sizes, start, end), { objectMode: false, highWaterMark: READ_CHUNK });
      stream.once('close', () => reaper.unpin(ids));
      return stream;
    },
  };
}

async function* segments(paths: readonly string[], sizes: readonly number[], start: number, end: number): AsyncGenerator<Buffer> {
  let offset = 0;
  for (let i = 0; i < paths.length && offset <= end; i++) {
    const size = sizes[i]!;
    const first = offset;
    offset += size;
    if (size === 0 || offset - 1 < start) continue;
    const from = Math.max(start, first) - first;
    const to = Math.min(end, offset - 1) - first;
    let missing = to - from + 1;
    for await (const chunk of createReadStream(paths[i]!, { start: from, end: to, highWaterMark: READ_CHUNK })) {
      missing -= (chunk as Buffer).length;
      yield chunk as Buffer;
    }
    if (missing !== 0) throw new Error(`casket: blob ${paths[i]} holds fewer bytes than its object records`);
  }
}
