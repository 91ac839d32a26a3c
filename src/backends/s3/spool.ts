/**
 * Receiving a verified request body whole before it goes upstream, for the
 * bodies that cannot stream (objects.ts says which: no length known up
 * front, a write whose condition casket checks itself, a refused write's
 * probe; multipart.ts: UploadPart of no length up front or ≤ 64 KiB, and
 * UploadPartCopy). Why: casket sends upstreams plain
 * bodies with Content-Length (never aws-chunked: Ceph RGW 16 rejects it with
 * trailers, measured), and a write casket checks itself holds the key's lock
 * exclusively, never across a client's upload. Receiving first also means a
 * client that disconnects mid-upload, or whose body fails a
 * signature/checksum check, causes no upstream request at all.
 *
 * Small bodies (≤ `inlineLimit`, 64 KiB) stay in memory, as on the embedded
 * store; larger ones go to a file under the data dir through stream.pipeline
 * with backpressure, so memory stays bounded. The caller must always call
 * `discard()` (finally).
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Payload, PayloadDigest } from '../types.js';

/** Bodies up to this size are kept in memory rather than spooled to a file. */
export const INLINE_LIMIT = 64 * 1024;

export interface Spooled {
  /** The bytes: in memory (small) or in a file. */
  body: { data: Buffer } | { file: string };
  digest: PayloadDigest;
  discard(): Promise<void>;
}

export class Spool {
  constructor(
    private readonly dir: string,
    private readonly inlineLimit = INLINE_LIMIT,
  ) {
    // Files left by a previous process (crash) are garbage.
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
  }

  /** Reads the payload to its end, in memory or into a fresh file; rejects (file removed) when the payload fails any check. */
  async receive(payload: Payload): Promise<Spooled> {
    const source = payload.stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    const pending: Buffer[] = [];
    let size = 0;
    try {
      for (;;) {
        const next = await source.next();
        if (next.done) return { body: { data: Buffer.concat(pending, size) }, digest: payload.digest(), discard: async () => {} };
        pending.push(next.value);
        size += next.value.length;
        if (size > this.inlineLimit) break;
      }
    } catch (e) {
      payload.stream.destroy();
      throw e;
    }
    const file = join(this.dir, `${Date.now().toString(36)}-${randomBytes(8).toString('hex')}`);
    const discard = () => unlink(file).catch(() => {});
    async function* all(): AsyncGenerator<Buffer> {
      yield* pending.splice(0);
      for (;;) {
        const next = await source.next();
        if (next.done) return;
        yield next.value;
      }
    }
    try {
      await pipeline(all, createWriteStream(file, { flags: 'wx' }));
      return { body: { file }, digest: payload.digest(), discard };
    } catch (e) {
      payload.stream.destroy();
      await discard();
      throw e;
    }
  }

  /** Number of files currently spooled (tests). */
  count(): number {
    return readdirSync(this.dir).length;
  }
}
