/**
 * What the request path asks of retention (docs/design.md §6): which versions are
 * kept (small, single-part), keeping them after the response without
 * delaying it, and reading them back. A retention store that fails degrades
 * to "not kept" — a refusal without a diff, a merge not made — never to an
 * error of the request: what it holds is a convenience, not the object.
 */
import { isContentETag, type Retention } from './types.js';

export interface RetainerLog {
  warn(obj: object, msg: string): void;
}

export class Retainer {
  /**
   * Keeps still being written, by ETag. A read of one waits for it: a merge
   * or a diff asked for right after the write that made its base would
   * otherwise find the base not yet kept (the keep runs after the response)
   * and be refused where it would succeed — seen under load in CI.
   */
  private readonly keeping = new Map<string, Promise<void>>();

  constructor(
    readonly store: Retention,
    /** Objects larger than this are never kept (--retain-max-size). */
    readonly maxObjectSize: number,
    private readonly log: RetainerLog,
  ) {}

  /** Whether casket keeps a version of this ETag and size. */
  eligible(etag: string, size: number): boolean {
    return size <= this.maxObjectSize && isContentETag(etag);
  }

  /** Keeps `content` as version `etag` in the background (its hash is checked by the store). */
  keep(etag: string, content: Buffer | undefined): void {
    if (!content || !this.eligible(etag, content.length)) return;
    const done: Promise<void> = this.kept(etag, content).finally(() => {
      if (this.keeping.get(etag) === done) this.keeping.delete(etag);
    });
    this.keeping.set(etag, done);
  }

  /** Keeps `content` as version `etag`, resolving once it is kept (or could not be: never rejects). */
  async kept(etag: string, content: Buffer | undefined): Promise<void> {
    if (!content || !this.eligible(etag, content.length)) return;
    // The error's message only: a Redis client's error carries the command it
    // failed on, whose arguments are the object's content.
    await this.store.keep(etag, content).catch((err: unknown) => this.log.warn({ error: err instanceof Error ? err.message : String(err), etag }, 'retention: version not kept'));
  }

  /** Refreshes a kept version's age: true when it is kept. */
  async touch(etag: string): Promise<boolean> {
    if (!isContentETag(etag)) return false;
    await this.keeping.get(etag);
    return this.store.touch(etag).catch(() => false);
  }

  async get(etag: string): Promise<Buffer | undefined> {
    if (!isContentETag(etag)) return undefined;
    await this.keeping.get(etag);
    return this.store.get(etag).catch((err: unknown) => {
      this.log.warn({ err, etag }, 'retention: version not read');
      return undefined;
    });
  }
}
