/**
 * The whole of one version in memory, for the callers that need its bytes at
 * once (a pre-image kept for rollback, a version read back for a diff) and
 * only ever for objects under a size limit they check first. The reader is
 * released after, as backends/types.ts ObjectReader asks.
 */
import type { ObjectReader } from './types.js';

export async function readWhole(reader: ObjectReader): Promise<Buffer> {
  try {
    if (reader.inline) return reader.inline();
    const chunks: Buffer[] = [];
    for await (const chunk of reader.open()) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  } finally {
    reader.release?.();
  }
}
