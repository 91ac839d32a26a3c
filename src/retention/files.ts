/**
 * Retained versions as files in the data dir (`<data-dir>/retained/<sha256>`),
 * for one casket: the embedded store, or an upstream without a shared Redis.
 * The index (size and last touch of each file, oldest first) is kept in
 * memory and rebuilt from the files' mtimes at start, so the order survives
 * restarts without a database. Written whole to a temporary name and
 * renamed: a crash leaves a complete file or none.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { readFile, rename, rm, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isContentETag, sha256Hex, type Retention, type RetentionLimits } from './types.js';

interface Entry {
  size: number;
  at: number;
}

export class FileRetention implements Retention {
  /** Insertion order is touch order: the first entry is the oldest. */
  private readonly index = new Map<string, Entry>();
  private total = 0;

  constructor(private readonly dir: string, private readonly limits: RetentionLimits) {
    mkdirSync(dir, { recursive: true });
    const found: Array<[string, Entry]> = [];
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (!isContentETag(name)) {
        rmSync(path, { force: true }); // a temporary file of a write a crash cut short
        continue;
      }
      const s = statSync(path);
      found.push([name, { size: s.size, at: s.mtimeMs }]);
    }
    for (const [name, entry] of found.sort((a, b) => a[1].at - b[1].at)) {
      this.index.set(name, entry);
      this.total += entry.size;
    }
  }

  private expired(entry: Entry, now: number): boolean {
    return entry.at < now - this.limits.ttlMs;
  }

  async keep(sha256: string, content: Buffer): Promise<void> {
    if (await this.touch(sha256)) return;
    if (sha256Hex(content) !== sha256 || content.length > this.limits.maxBytes) return;
    const tmp = join(this.dir, `.tmp-${randomBytes(6).toString('hex')}`);
    await writeFile(tmp, content);
    await rename(tmp, join(this.dir, sha256));
    if (!this.index.has(sha256)) this.total += content.length;
    this.index.delete(sha256);
    this.index.set(sha256, { size: content.length, at: Date.now() });
    await this.evict();
  }

  async touch(sha256: string): Promise<boolean> {
    const entry = this.index.get(sha256);
    const now = Date.now();
    if (!entry || this.expired(entry, now)) return false;
    this.index.delete(sha256);
    this.index.set(sha256, { size: entry.size, at: now });
    const seconds = now / 1000;
    await utimes(join(this.dir, sha256), seconds, seconds).catch(() => {});
    return true;
  }

  async get(sha256: string): Promise<Buffer | undefined> {
    const entry = this.index.get(sha256);
    if (!entry || this.expired(entry, Date.now())) return undefined;
    return readFile(join(this.dir, sha256)).catch(() => undefined);
  }

  async bytes(): Promise<number> {
    await this.evict();
    return this.total;
  }

  /** Drops expired content, then the oldest until the budget holds. */
  private async evict(): Promise<void> {
    const now = Date.now();
    const drop: string[] = [];
    for (const [sha, entry] of this.index) {
      if (this.total <= this.limits.maxBytes && !this.expired(entry, now)) break;
      this.index.delete(sha);
      this.total -= entry.size;
      drop.push(sha);
    }
    await Promise.all(drop.map((sha) => rm(join(this.dir, sha), { force: true })));
  }

  async close(): Promise<void> {}
}
