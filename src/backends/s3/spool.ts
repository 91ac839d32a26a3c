/**
 * Spooling a verified request body to a temporary file before it goes
 * upstream. Why: casket sends upstreams plain bodies with Content-Length and a
 * literal `x-amz-content-sha256` (Ceph RGW 16 rejects aws-chunked with
 * trailers, measured), and the SHA-256 is known only once the client's body
 * has been read and verified to the end. Spooling also means a client that
 * disconnects mid-upload, or whose body fails a signature/checksum check,
 * causes no upstream request at all: nothing is left behind upstream.
 *
 * Memory stays bounded: stream.pipeline with backpressure into a file under
 * the data dir. The caller must always call `discard()` (finally).
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Payload, PayloadDigest } from '../types.js';

export interface Spooled {
  file: string;
  digest: PayloadDigest;
  discard(): Promise<void>;
}

export class Spool {
  constructor(private readonly dir: string) {
    // Files left by a previous process (crash) are garbage.
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
  }

  /** Reads the payload to its end into a fresh file; rejects (file removed) when the payload fails any check. */
  async receive(payload: Payload): Promise<Spooled> {
    const file = join(this.dir, `${Date.now().toString(36)}-${randomBytes(8).toString('hex')}`);
    const discard = () => unlink(file).catch(() => {});
    try {
      await pipeline(payload.stream, createWriteStream(file, { flags: 'wx' }));
      return { file, digest: payload.digest(), discard };
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
