/**
 * Test helpers for the embedded store: Payloads built from bytes (hashed as
 * they stream past, like auth/payload.ts does for real requests, and able to
 * fail mid-way like a body whose signature check fails), temp data
 * directories, and small readers.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import type { Payload, PayloadDigest } from '../../../src/backends/types.js';

export interface TestPayloadOptions {
  /** Compute MD5 too (UploadPart needs it). */
  md5?: boolean;
  /** Bytes per chunk pushed (default 64 KiB). */
  chunkSize?: number;
  /** Fail the stream after this many bytes, as a failed integrity check does. */
  failAfter?: number;
}

export class PayloadCheckFailed extends Error {}

export function payloadOf(data: Buffer | string, options: TestPayloadOptions = {}): Payload {
  const bytes = typeof data === 'string' ? Buffer.from(data) : data;
  const chunkSize = options.chunkSize ?? 64 * 1024;
  let offset = 0;
  const source = new Readable({
    read() {
      if (options.failAfter !== undefined && offset >= options.failAfter) {
        this.destroy(new PayloadCheckFailed('checksum mismatch (test)'));
        return;
      }
      if (offset >= bytes.length) {
        this.push(null);
        return;
      }
      const limit = options.failAfter !== undefined ? Math.min(bytes.length, options.failAfter) : bytes.length;
      const end = Math.min(limit, offset + chunkSize);
      const chunk = bytes.subarray(offset, end);
      offset = end;
      this.push(chunk);
    },
  });
  return hashingPayload(source, options.md5 ?? false);
}

/** Wraps any byte stream as a Payload whose digest is computed as the bytes pass. */
export function hashingPayload(source: Readable, md5: boolean): Payload {
  const sha256 = createHash('sha256');
  const md5Hash = md5 ? createHash('md5') : undefined;
  let size = 0;
  let digest: PayloadDigest | undefined;
  const stream = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      sha256.update(chunk);
      md5Hash?.update(chunk);
      size += chunk.length;
      callback(null, chunk);
    },
    flush(callback) {
      digest = { sha256: sha256.digest(), size, ...(md5Hash && { md5: md5Hash.digest() }) };
      callback();
    },
  });
  source.on('error', (e) => stream.destroy(e));
  source.pipe(stream);
  return {
    stream,
    digest() {
      if (!digest) throw new Error('digest() before the payload ended');
      return digest;
    },
  };
}

export function sha256Hex(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

export function md5Hex(data: Buffer | string): string {
  return createHash('md5').update(data).digest('hex');
}

export async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Deterministic pseudo-random bytes (fast, no crypto needed). */
export function bytes(size: number, seed = 1): Buffer {
  const out = Buffer.allocUnsafe(size);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

export function tempDataDir(): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'casket-fs-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Every file under dataDir/blobs (blob files and anything left half-written). */
export function blobFiles(dataDir: string): string[] {
  const root = join(dataDir, 'blobs');
  return readdirSync(root).flatMap((dir) => readdirSync(join(root, dir)).map((name) => join(dir, name)));
}

export const PUT_DEFAULTS = { condition: { type: 'none' as const }, headers: {}, metadata: {} };

/** Byte equality without vitest's element-wise deep equality (slow on large buffers). */
export function sameBytes(actual: Buffer, expected: Buffer | string): boolean {
  return actual.equals(typeof expected === 'string' ? Buffer.from(expected) : expected);
}
