/**
 * Copies the bytes of a body as they stream past, up to a limit, so casket
 * can keep the version an agent read or wrote (docs/design.md §6) without reading it
 * twice and without holding more than --retain-max-size: a body that grows
 * past the limit stops being copied. Backpressure and errors go through
 * (stream.pipeline): a failing source fails the copy the consumer reads.
 */
import { Transform, pipeline, type Readable } from 'node:stream';

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
  pipeline(source, copy, () => {});
  return { stream: copy, captured: () => (ended && !over ? Buffer.concat(chunks, size) : undefined) };
}
