/**
 * What the request path asks of retention (docs/design.md §6): which versions are
 * kept (small, single-part), keeping them after the response without
 * delaying it, and reading them back. A retention store that fails degrades
 * to "not kept" — a refusal without a diff, a merge not made — never to an
 * error of the request: what it holds is a convenience, not the object.
 *
 * Every version is a version of one key (types.ts): kept and read back by
 * (bucket, key, ETag), so naming an ETag never reaches another key's bytes.
 */
import { underCustomerKey } from '../backends/customer-key.js';
import { isContentETag, retainedName, type Retention, type VersionOf } from './types.js';

export type { VersionOf };

export interface RetainerLog {
  warn(obj: object, msg: string): void;
}

export class Retainer {
  /**
   * Keeps still being written, by retainedName. A read of one waits for it: a merge
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

  /** Keeps `content` as version `v` in the background (its hash is checked by the store). */
  keep(v: VersionOf, content: Buffer | undefined): void {
    if (!content || !this.eligible(v.etag, content.length) || underCustomerKey()) return;
    const name = retainedName(v);
    const done: Promise<void> = this.kept(v, content).finally(() => {
      if (this.keeping.get(name) === done) this.keeping.delete(name);
    });
    this.keeping.set(name, done);
  }

  /** Keeps `content` as version `v`, resolving once it is kept (or could not be: never rejects). */
  async kept(v: VersionOf, content: Buffer | undefined): Promise<void> {
    // Bytes read or written under a customer key (SSE-C) are never kept: what
    // is kept is served later, to callers without that key (diffs, merges,
    // rollback) — and it would sit here unencrypted.
    if (!content || !this.eligible(v.etag, content.length) || underCustomerKey()) return;
    // The error's message only: a Redis client's error carries the command it
    // failed on, whose arguments are the object's content.
    await this.store.keep(v, content).catch((err: unknown) => this.log.warn({ error: err instanceof Error ? err.message : String(err), bucket: v.bucket, key: v.key, etag: v.etag }, 'retention: version not kept'));
  }

  /** Refreshes a kept version's age: true when it is kept as a version of that key. */
  async touch(v: VersionOf): Promise<boolean> {
    if (!isContentETag(v.etag)) return false;
    await this.keeping.get(retainedName(v));
    return this.store.touch(v).catch(() => false);
  }

  /**
   * The content of `v`, only when it was kept as a version of that very key.
   * Not an access check: the caller checks first that whoever asks may read
   * v.bucket/v.key (agent-changes.ts retainedFor).
   */
  async get(v: VersionOf): Promise<Buffer | undefined> {
    if (!isContentETag(v.etag)) return undefined;
    await this.keeping.get(retainedName(v));
    return this.store.get(v).catch((err: unknown) => {
      this.log.warn({ err, bucket: v.bucket, key: v.key, etag: v.etag }, 'retention: version not read');
      return undefined;
    });
  }
}
