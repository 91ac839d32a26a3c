/**
 * Retained versions as files in the data dir
 * (`<data-dir>/retained/<sha256>.<sha256 of bucket/key>`, types.ts retainedName),
 * for one casket: the embedded store, or an upstream without a shared Redis.
 * The index (size and last touch of each file, oldest first) is kept in
 * memory and rebuilt from the files' mtimes at start, so the order survives
 * restarts without a database. Written whole to a temporary name and
 * renamed: a crash leaves a complete file or none.
 *
 * A touch (every read of a kept version) moves the entry in memory at once,
 * but reaches the file's mtime only every TOUCH_FLUSH_MS and at close: a
 * utimes per GET was a tenth of a small read's CPU (--cpu-prof, issue 42),
 * and a hot file read a thousand times a second needs its mtime set once.
 * A crash forgets at most that much of the touch order, never a version.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { readFile, rename, rm, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isRetainedName, retainedName, sha256Hex, type Retention, type RetentionLimits, type VersionOf } from './types.js';

interface Entry {
  size: number;
  at: number;
}

/** How often touched versions' mtimes are written (and at close). */
const TOUCH_FLUSH_MS = 5_000;

export class FileRetention implements Retention {
  /** Insertion order is touch order: the first entry is the oldest. */
  private readonly index = new Map<string, Entry>();
  private total = 0;
  /** Touched since their mtimes were last written: name → epoch ms of the touch. */
  private readonly touched = new Map<string, number>();
  private readonly flusher: NodeJS.Timeout;

  constructor(private readonly dir: string, private readonly limits: RetentionLimits) {
    mkdirSync(dir, { recursive: true });
    const found: Array<[string, Entry]> = [];
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (!isRetainedName(name)) {
        // A temporary file of a write a crash cut short, or a version kept by
        // its ETag alone (before versions were kept per key): bound to no key,
        // it may never be served.
        rmSync(path, { force: true });
        continue;
      }
      const s = statSync(path);
      found.push([name, { size: s.size, at: s.mtimeMs }]);
    }
    for (const [name, entry] of found.sort((a, b) => a[1].at - b[1].at)) {
      this.index.set(name, entry);
      this.total += entry.size;
    }
    this.flusher = setInterval(() => void this.flushTouches(), TOUCH_FLUSH_MS);
    this.flusher.unref();
  }

  /** Writes the touched versions' mtimes; a version evicted since is skipped (its file is gone). */
  private async flushTouches(): Promise<void> {
    const due = [...this.touched];
    this.touched.clear();
    await Promise.all(
      due.map(([name, at]) => (this.index.has(name) ? utimes(join(this.dir, name), at / 1000, at / 1000).catch(() => {}) : undefined)),
    );
  }

  private expired(entry: Entry, now: number): boolean {
    return entry.at < now - this.limits.ttlMs;
  }

  async keep(v: VersionOf, content: Buffer): Promise<void> {
    if (await this.touch(v)) return;
    if (sha256Hex(content) !== v.etag || content.length > this.limits.maxBytes) return;
    const name = retainedName(v);
    const tmp = join(this.dir, `.tmp-${randomBytes(6).toString('hex')}`);
    await writeFile(tmp, content);
    await rename(tmp, join(this.dir, name));
    if (!this.index.has(name)) this.total += content.length;
    this.index.delete(name);
    this.touched.delete(name);
    this.index.set(name, { size: content.length, at: Date.now() });
    await this.evict();
  }

  async touch(v: VersionOf): Promise<boolean> {
    const name = retainedName(v);
    const entry = this.index.get(name);
    const now = Date.now();
    if (!entry || this.expired(entry, now)) return false;
    this.index.delete(name);
    this.index.set(name, { size: entry.size, at: now });
    this.touched.set(name, now);
    return true;
  }

  async get(v: VersionOf): Promise<Buffer | undefined> {
    const name = retainedName(v);
    const entry = this.index.get(name);
    if (!entry || this.expired(entry, Date.now())) return undefined;
    return readFile(join(this.dir, name)).catch(() => undefined);
  }

  async bytes(): Promise<number> {
    await this.evict();
    return this.total;
  }

  /** Drops expired content, then the oldest until the budget holds. */
  private async evict(): Promise<void> {
    const now = Date.now();
    const drop: string[] = [];
    for (const [name, entry] of this.index) {
      if (this.total <= this.limits.maxBytes && !this.expired(entry, now)) break;
      this.index.delete(name);
      this.total -= entry.size;
      drop.push(name);
    }
    await Promise.all(drop.map((name) => rm(join(this.dir, name), { force: true })));
  }

  async close(): Promise<void> {
    clearInterval(this.flusher);
    await this.flushTouches();
  }
}
