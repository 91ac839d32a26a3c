/**
 * Blob files: where object and part bodies live on disk, how a body is
 * received, made durable, read back, and garbage-collected.
 *
 * Layout: `<dataDir>/blobs/<xx>/<id>`, where `id` is 32 random hex digits and
 * `xx` its first two (256 fan-out directories, so no directory grows huge).
 * A blob file is written once, never modified, and named by nothing but its
 * random id: no object key ever becomes part of a path, so no key can escape
 * the data directory.
 *
 * Crash-safety argument. A blob is written straight to its final, unique name
 * and is invisible until a database row references it; the row is committed
 * only after the file is complete (and, with fsync on, after fdatasync of the
 * file and fsync of its directory, so the file and its name are durable
 * before any durable row can point at it). So:
 * - a crash while receiving leaves a file no row references: `collectGarbage`
 *   removes it on the next open;
 * - a crash after the commit leaves a complete, referenced file;
 * - a blob a commit stopped referencing is unlinked only later, by the reaper
 *   (reaper.ts), after the commit is durable and no reader holds it; a crash
 *   before that leaves an unreferenced file, removed on the next open.
 * An object therefore reads as its old or its new version, never torn.
 *
 * Small bodies (≤ `inlineLimit`, default 64 KiB) are not written to files at
 * all: they are kept in memory while they arrive and committed inline in the
 * object's row, in the same transaction as its metadata. That is as crash-safe
 * (one transaction) and spares a file create, two fsyncs and an unlink per
 * small write, which dominate the cost of a 4 KiB PutObject. Larger bodies
 * spill to a file as soon as they pass the limit, so memory stays bounded.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync, unlinkSync } from 'node:fs';
import { open, rm, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { Coalesced } from './coalesced.js';

/** Bytes gathered before one write(v) call: few syscalls, bounded memory. */
const WRITE_BATCH = 256 * 1024;
/** IOV_MAX on Linux: more buffers than this would be split by libuv anyway. */
const MAX_BATCH_BUFFERS = 1024;
const FANOUT_DIRS = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
const BLOB_ID = /^[0-9a-f]{32}$/;

export type ReceivedBody =
  | { kind: 'inline'; data: Buffer; size: number }
  | { kind: 'file'; id: string; size: number };

export class BlobStore {
  private readonly dirSyncs = new Map<string, Coalesced>();
  private readonly dirHandles = new Map<string, Promise<FileHandle>>();

  private constructor(
    readonly root: string,
    readonly fsync: boolean,
  ) {}

  /** Creates `root` and its fan-out directories if needed (synchronously: this runs once, at open). */
  static openSync(root: string, fsync: boolean): BlobStore {
    mkdirSync(root, { recursive: true });
    const present = new Set(readdirSync(root));
    for (const dir of FANOUT_DIRS) if (!present.has(dir)) mkdirSync(join(root, dir));
    return new BlobStore(root, fsync);
  }

  path(id: string): string {
    return join(this.root, id.slice(0, 2), id);
  }

  /**
   * Consumes `stream` (pulling one chunk at a time: backpressure), keeping it
   * in memory while it is at most `inlineLimit` bytes and writing it to a new
   * blob file once it is larger (`inlineLimit < 0`: always a file). On a
   * stream or write error the partial file is removed and the error rethrown.
   */
  async receive(stream: Readable, inlineLimit: number): Promise<ReceivedBody> {
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    let size = 0;
    let id: string | undefined;
    let file: FileHandle | undefined;
    try {
      for await (const chunk of stream) {
        const buffer = toBuffer(chunk);
        if (buffer.length === 0) continue;
        size += buffer.length;
        pending.push(buffer);
        pendingBytes += buffer.length;
        if (file === undefined) {
          if (size <= inlineLimit) continue;
          id = newBlobId();
          file = await open(this.path(id), 'wx', 0o644);
        }
        if (pendingBytes >= WRITE_BATCH || pending.length >= MAX_BATCH_BUFFERS) {
          await writeAll(file, pending);
          pending = [];
          pendingBytes = 0;
        }
      }
      if (file === undefined && size <= inlineLimit) {
        return { kind: 'inline', data: Buffer.concat(pending, size), size };
      }
      if (file === undefined) {
        // An empty body with inlineLimit < 0 (parts are always files).
        id = newBlobId();
        file = await open(this.path(id), 'wx', 0o644);
      }
      if (pendingBytes > 0) await writeAll(file, pending);
      if (this.fsync) await file.datasync();
      const closing = file;
      file = undefined;
      await closing.close();
      if (this.fsync) await this.syncDirectory(id!.slice(0, 2));
      return { kind: 'file', id: id!, size };
    } catch (e) {
      await file?.close().catch(() => {});
      if (id !== undefined) await this.remove(id);
      throw e;
    }
  }

  /** Unlinks a blob; a missing one is not an error (it is the goal). */
  async remove(id: string): Promise<void> {
    await rm(this.path(id), { force: true }).catch(() => {});
  }

  /**
   * Removes every file under the fan-out directories that `referenced` does
   * not name (blobs left by a crash mid-write or before the reaper ran).
   * Runs at open, before any request, so no write can be in flight.
   */
  collectGarbageSync(referenced: ReadonlySet<string>): { orphansRemoved: number; missing: number } {
    let orphansRemoved = 0;
    let present = 0;
    for (const dir of FANOUT_DIRS) {
      for (const name of readdirSync(join(this.root, dir))) {
        if (BLOB_ID.test(name) && name.startsWith(dir) && referenced.has(name)) {
          present++;
          continue;
        }
        const path = join(this.root, dir, name);
        try {
          unlinkSync(path);
        } catch {
          rmSync(path, { recursive: true, force: true });
        }
        orphansRemoved++;
      }
    }
    return { orphansRemoved, missing: referenced.size - present };
  }

  /** fsync of a fan-out directory, coalesced across concurrent writers. */
  private syncDirectory(dir: string): Promise<void> {
    let sync = this.dirSyncs.get(dir);
    if (sync === undefined) {
      sync = new Coalesced(async () => (await this.directoryHandle(dir)).sync());
      this.dirSyncs.set(dir, sync);
    }
    return sync.run();
  }

  /** Directory handles stay open (at most 256): an fsync then costs one syscall, not three. */
  private directoryHandle(dir: string): Promise<FileHandle> {
    let handle = this.dirHandles.get(dir);
    if (handle === undefined) {
      handle = open(join(this.root, dir), 'r');
      handle.catch(() => this.dirHandles.delete(dir));
      this.dirHandles.set(dir, handle);
    }
    return handle;
  }

  async close(): Promise<void> {
    const handles = [...this.dirHandles.values()];
    this.dirHandles.clear();
    await Promise.all(handles.map((h) => h.then((fh) => fh.close()).catch(() => {})));
  }
}

export function newBlobId(): string {
  return randomUUID().replaceAll('-', '');
}

function toBuffer(chunk: unknown): Buffer {
  if (Buffer.isBuffer(chunk)) return chunk;
  if (chunk instanceof Uint8Array) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  if (typeof chunk === 'string') return Buffer.from(chunk, 'utf8');
  throw new TypeError('payload stream yielded a chunk that is not bytes');
}

async function writeAll(file: FileHandle, buffers: Buffer[]): Promise<void> {
  let rest = buffers;
  while (rest.length > 0) {
    let { bytesWritten } = await file.writev(rest);
    // A short write (rare on regular files): drop what was written and go on.
    const next: Buffer[] = [];
    for (const b of rest) {
      if (bytesWritten >= b.length) {
        bytesWritten -= b.length;
      } else {
        next.push(bytesWritten > 0 ? b.subarray(bytesWritten) : b);
        bytesWritten = 0;
      }
    }
    rest = next;
  }
}
