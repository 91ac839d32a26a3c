/**
 * Multipart uploads nobody will finish, on the embedded store. A client that
 * dies mid-upload leaves its parts on disk for ever unless something aborts
 * the upload; AWS users have two answers and casket gives both:
 * - the bucket's lifecycle rule AbortIncompleteMultipartUpload
 *   (vocabulary/lifecycle.ts): an upload initiated DaysAfterInitiation days
 *   ago, under the rule's prefix, is aborted;
 * - a store-wide default (--multipart-abandon-after): an upload with no part
 *   uploaded for that long is aborted, so a data dir nobody configured still
 *   does not fill up with orphans. Idle means: since initiation or the last
 *   part that completed, whichever is later.
 * An aborted upload goes through Multipart.abortUpload, as an
 * AbortMultipartUpload request would: its parts are handed to the blob reaper
 * after the commit, and it is gone from ListMultipartUploads.
 */
import type { Database, Statement } from '../../sqlite.js';
import { S3Error } from '../../vocabulary/errors.js';
import { abortingRule, type LifecycleRule } from '../../vocabulary/lifecycle.js';
import type { Multipart } from './multipart.js';

interface UploadActivity {
  upload_id: string;
  bucket: string;
  key: string;
  initiated: number;
  last_part: number | null;
}

export interface Abandoned {
  bucket: string;
  key: string;
  uploadId: string;
  /** The lifecycle rule's ID (or '' for a rule without one), or 'idle' for the store-wide default. */
  why: string;
}

export class AbandonedUploads {
  private readonly selectLifecycle: Statement<[string], { lifecycle: string | null }>;
  private readonly updateLifecycle: Statement<[string | null, string]>;
  private readonly selectRules: Statement<[], { name: string; lifecycle: string }>;
  private readonly selectActivity: Statement<[], UploadActivity>;
  private readonly selectBytes: Statement<[], { bytes: number | null }>;

  constructor(
    db: Database,
    private readonly multipart: Multipart,
  ) {
    this.selectLifecycle = db.prepare('SELECT lifecycle FROM buckets WHERE name = ?');
    this.updateLifecycle = db.prepare('UPDATE buckets SET lifecycle = ? WHERE name = ?');
    this.selectRules = db.prepare('SELECT name, lifecycle FROM buckets WHERE lifecycle IS NOT NULL');
    this.selectActivity = db.prepare(
      'SELECT u.upload_id, u.bucket, u.key, u.initiated, MAX(p.last_modified) AS last_part FROM uploads u LEFT JOIN parts p ON p.upload_id = u.upload_id GROUP BY u.upload_id',
    );
    this.selectBytes = db.prepare('SELECT SUM(size) AS bytes FROM parts');
  }

  /** The bucket's lifecycle rules; null when it has none. */
  lifecycle(bucket: string): LifecycleRule[] | null {
    const row = this.selectLifecycle.get(bucket);
    if (row === undefined) throw new S3Error('NoSuchBucket', { fields: { BucketName: bucket } });
    return row.lifecycle === null ? null : (JSON.parse(row.lifecycle) as LifecycleRule[]);
  }

  /** Replaces the bucket's lifecycle rules (null: deletes them). */
  setLifecycle(bucket: string, rules: LifecycleRule[] | null): void {
    if (this.updateLifecycle.run(rules === null ? null : JSON.stringify(rules), bucket).changes === 0) throw new S3Error('NoSuchBucket', { fields: { BucketName: bucket } });
  }

  /** Bytes the parts of incomplete uploads hold on disk. */
  bytes(): number {
    return this.selectBytes.get()?.bytes ?? 0;
  }

  /** Aborts every upload a lifecycle rule or the idle limit (0: none) says to, as of `now`. */
  async reap(now: number, idleLimitMs: number): Promise<Abandoned[]> {
    const rules = new Map(this.selectRules.all().map((r) => [r.name, JSON.parse(r.lifecycle) as LifecycleRule[]]));
    const aborted: Abandoned[] = [];
    for (const u of this.selectActivity.all()) {
      const rule = abortingRule(rules.get(u.bucket) ?? [], u.key, u.initiated, now);
      const idle = idleLimitMs > 0 && now - Math.max(u.initiated, u.last_part ?? 0) >= idleLimitMs;
      if (rule === undefined && !idle) continue;
      try {
        await this.multipart.abortUpload(u.bucket, u.key, u.upload_id);
      } catch (e) {
        // Completed or aborted by its client meanwhile: nothing left to do.
        if ((e as S3Error).code === 'NoSuchUpload' || (e as S3Error).code === 'NoSuchBucket') continue;
        throw e;
      }
      aborted.push({ bucket: u.bucket, key: u.key, uploadId: u.upload_id, why: rule ? (rule.id ?? '') : 'idle' });
    }
    return aborted;
  }
}
