/**
 * Buckets of the embedded store: a row each in `buckets`. A bucket has no
 * directory of its own (bodies live in shared blob directories), so creating
 * and deleting one is a single row change. DeleteBucket refuses while objects
 * or in-progress remain, as S3 does (BucketNotEmpty); in-progress multipart uploads do not
 * keep it alive: DeleteBucket aborts them in the same transaction, as AWS S3
 * does (https://docs.aws.amazon.com/AmazonS3/latest/API/API_DeleteBucket.html:
 * "All objects ... must be deleted before the bucket itself can be deleted";
 * pending uploads are not objects).
 * Writes re-check that their bucket exists inside their commit transaction,
 * so an upload racing a DeleteBucket fails with NoSuchBucket instead of
 * leaving an object in a bucket that is gone.
 */
import type { Database, Statement } from '../../sqlite.js';
import { S3Error } from '../../vocabulary/errors.js';
import type { BucketInfo, VersioningStatus } from '../types.js';
import { validateBucketName } from '../../vocabulary/names.js';
import type { CorsRule } from '../../vocabulary/cors.js';

interface BucketRow {
  name: string;
  created: number;
  versioning: VersioningStatus | null;
}

export class Buckets {
  private readonly selectAll: Statement<[], BucketRow>;
  private readonly selectOne: Statement<[string], BucketRow>;
  private readonly insert: Statement<[string, number]>;
  private readonly remove: Statement<[string]>;
  private readonly hasObjects: Statement<[string, string], unknown>;
  private readonly uploadBlobs: Statement<[string], { blob: string }>;
  private readonly dropParts: Statement<[string]>;
  private readonly dropUploads: Statement<[string]>;
  private readonly deleteBucket: (name: string) => string[];
  private readonly selectCors: Statement<[string], { cors: string | null }>;
  private readonly updateCors: Statement<[string | null, string]>;
  private readonly updateVersioning: Statement<[string, string]>;
  /**
   * Each bucket's versioning state, read on every object answer (whether it
   * carries a version id): kept in memory, which is sound because one
   * process owns the data directory and every change goes through here.
   */
  private readonly versioningCache = new Map<string, VersioningStatus | null>();

  constructor(db: Database) {
    this.selectAll = db.prepare('SELECT name, created FROM buckets ORDER BY name');
    this.selectOne = db.prepare('SELECT name, created, versioning FROM buckets WHERE name = ?');
    this.updateVersioning = db.prepare('UPDATE buckets SET versioning = ? WHERE name = ?');
    this.insert = db.prepare('INSERT OR IGNORE INTO buckets (name, created) VALUES (?, ?)');
    this.remove = db.prepare('DELETE FROM buckets WHERE name = ?');
    this.selectCors = db.prepare('SELECT cors FROM buckets WHERE name = ?');
    this.updateCors = db.prepare('UPDATE buckets SET cors = ? WHERE name = ?');
    // Noncurrent versions and delete markers keep a bucket alive too, as in S3.
    this.hasObjects = db.prepare('SELECT 1 FROM objects WHERE bucket = ? UNION ALL SELECT 1 FROM versions WHERE bucket = ? LIMIT 1');
    const ofBucket = 'SELECT upload_id FROM uploads WHERE bucket = ?';
    this.uploadBlobs = db.prepare(`SELECT blob FROM parts WHERE upload_id IN (${ofBucket})`);
    this.dropParts = db.prepare(`DELETE FROM parts WHERE upload_id IN (${ofBucket})`);
    this.dropUploads = db.prepare('DELETE FROM uploads WHERE bucket = ?');
    this.deleteBucket = db.transaction((name: string): string[] => {
      this.require(name);
      if (this.hasObjects.get(name, name) !== undefined) throw new S3Error('BucketNotEmpty', { fields: { BucketName: name } });
      const released = this.uploadBlobs.all(name).map((p) => p.blob);
      this.dropParts.run(name);
      this.dropUploads.run(name);
      this.remove.run(name);
      this.versioningCache.delete(name);
      return released;
    });
  }

  list(): BucketInfo[] {
    return this.selectAll.all().map(toInfo);
  }

  create(name: string): 'created' | 'exists' {
    validateBucketName(name);
    this.versioningCache.delete(name);
    return this.insert.run(name, Date.now()).changes === 1 ? 'created' : 'exists';
  }

  head(name: string): BucketInfo {
    return toInfo(this.require(name));
  }

  /** Deletes the bucket and aborts its uploads; resolves the part blobs to condemn once committed. */
  delete(name: string): string[] {
    return this.deleteBucket(name);
  }

  /** The bucket's CORS rules; null when it has none. */
  cors(name: string): CorsRule[] | null {
    const row = this.selectCors.get(name);
    if (row === undefined) throw new S3Error('NoSuchBucket', { fields: { BucketName: name } });
    return row.cors === null ? null : (JSON.parse(row.cors) as CorsRule[]);
  }

  /** Replaces the bucket's CORS rules (null: deletes them). */
  setCors(name: string, rules: CorsRule[] | null): void {
    if (this.updateCors.run(rules === null ? null : JSON.stringify(rules), name).changes === 0) throw new S3Error('NoSuchBucket', { fields: { BucketName: name } });
  }

  /** The bucket's versioning state (undefined: never set); throws NoSuchBucket. */
  versioning(name: string): VersioningStatus | undefined {
    let status = this.versioningCache.get(name);
    if (status === undefined) {
      status = this.require(name).versioning;
      this.versioningCache.set(name, status);
    }
    return status ?? undefined;
  }

  /** PutBucketVersioning: once set, a bucket is Enabled or Suspended, never unversioned again (as in S3). */
  setVersioning(name: string, status: VersioningStatus): void {
    if (this.updateVersioning.run(status, name).changes === 0) throw new S3Error('NoSuchBucket', { fields: { BucketName: name } });
    this.versioningCache.set(name, status);
  }

  /** Throws NoSuchBucket unless the bucket exists. Safe inside a transaction. */
  require(name: string): BucketRow {
    const row = this.selectOne.get(name);
    if (row === undefined) throw new S3Error('NoSuchBucket', { fields: { BucketName: name } });
    return row;
  }
}

function toInfo(row: BucketRow): BucketInfo {
  return { name: row.name, creationDate: new Date(row.created) };
}
