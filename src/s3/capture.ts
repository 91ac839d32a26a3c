/**
 * Copies the bytes of a body as they stream past, up to a limit, so casket
 * can keep the version an agent read or wrote (docs/design.md §6) without reading it
 * twice and without holding more than --retain-max-size: a body that grows
 * past the limit stops being copied. Backpressure and errors go through: a
 * failing source, or one that closes before its end (a client that hangs up
 * mid-upload), fails the copy the consumer reads; a consumer that stops
 * reading ends the source.
 */
import { finished, Transform, type Readable } from 'node:stream';

export interface Capture {
  stream: Readable;
  /** The whole body, when it ended clean within the limit. */
  captured(): Buffer | undefined;
}

export function capture(source: Readable, limit: number): Capture {
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  let ended = false;
  const copy = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      if (!over) {
        size += chunk.length;
        if (size > limit) {
          over = true;
          chunks.length = 0;
        } else chunks.push(chunk);
      }
      callback(null, chunk);
    },
    flush(callback) {
      ended = true;
      callback();
    },
  });
  // pipe and finished rather than stream.pipeline, which does the same with an
  // AbortController it aborts at the end: a DOMException with its stack per
  // body (measured: ~40 µs of an edit_file's CPU, as the response's pipe in server.ts).
  source.pipe(copy);
  finished(source, (err) => {
    if (err) copy.destroy(err);
  });
  finished(copy, (err) => {
    if (err && !source.destroyed) source.destroy();
  });
  return { stream: copy, captured: () => (ended && !over ? Buffer.concat(chunks, size) : undefined) };
}
