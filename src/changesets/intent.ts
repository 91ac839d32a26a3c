/**
 * A changeset on disk, in `<data dir>/changesets/<id>/`: its staged bodies
 * (`0`, `1`, … one file per put entry, written before any lock is taken) and,
 * once every condition held, `intent.json` — the decision point. A directory
 * without an intent is a changeset that never decided (prepared): recovery
 * discards it. One with an intent is committing: recovery applies what is
 * left of it (recover.ts). The intent is written to a temporary name and
 * renamed, so it is there whole or not at all (rename(2) is atomic).
 *
 * Like the embedded store's own commits (backends/fs/durability.ts, fsync
 * off), this survives kill -9 of casket, not an OS crash.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

export interface IntentEntry {
  bucket: string;
  key: string;
  /** The version the entry replaces (null: the key is absent), checked under the locks. */
  expected: string | null;
  /** The new version's SHA-256 ETag; null: the entry deletes the key. */
  etag: string | null;
  /** The staged body's file name in the changeset's directory (put entries). */
  body?: string;
  size?: number;
  contentType?: string;
}

export interface Intent {
  id: string;
  state: 'committing';
  at: number;
  agent?: string;
  accessKey?: string;
  entries: IntentEntry[];
}

export interface StagedBody {
  file: string;
  sha256: string;
  size: number;
}

export const INTENT = 'intent.json';

export class ChangesetDir {
  constructor(readonly root: string) {}

  newId(): string {
    return randomUUID();
  }

  path(id: string, file?: string): string {
    return file === undefined ? join(this.root, id) : join(this.root, id, file);
  }

  /** Streams one body to its staging file, hashing it on the way; `limit` bytes at most (then throws `tooLarge()`). */
  async stage(id: string, n: number, body: Readable, limit: number, tooLarge: () => Error): Promise<StagedBody> {
    await mkdir(this.path(id), { recursive: true });
    const file = String(n);
    const hash = createHash('sha256');
    let size = 0;
    const counted = new Transform({
      transform(chunk: Buffer, _enc, done) {
        size += chunk.length;
        if (size > limit) return done(tooLarge());
        hash.update(chunk);
        done(null, chunk);
      },
    });
    await pipeline(body, counted, createWriteStream(this.path(id, file)));
    return { file, sha256: hash.digest('hex'), size };
  }

  /** The decision point: once this resolves, the changeset lands whole, now or at recovery. */
  async decide(intent: Intent): Promise<void> {
    // A changeset of deletes only staged no body: its directory starts here.
    await mkdir(this.path(intent.id), { recursive: true });
    const tmp = this.path(intent.id, `${INTENT}.tmp`);
    await writeFile(tmp, JSON.stringify(intent));
    await rename(tmp, this.path(intent.id, INTENT));
  }

  async discard(id: string): Promise<void> {
    await rm(this.path(id), { recursive: true, force: true });
  }

  /** Every changeset directory: its intent when it decided, undefined when it did not. */
  async pending(): Promise<Array<{ id: string; intent?: Intent }>> {
    const ids = await readdir(this.root).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') return [] as string[];
      throw e;
    });
    const out: Array<{ id: string; intent?: Intent }> = [];
    for (const id of ids) {
      const text = await readFile(this.path(id, INTENT), 'utf8').catch(() => undefined);
      out.push(text === undefined ? { id } : { id, intent: JSON.parse(text) as Intent });
    }
    return out;
  }
}
