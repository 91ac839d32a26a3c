/**
 * The embedded store: casket's default backend, a real object store on local
 * disk (docs/design.md §1). `openFsBackend({ dataDir })` opens or creates it.
 *
 * On disk, under dataDir:
 *   casket.db, casket.db-wal   SQLite (WAL): buckets, objects (metadata, and
 *                              the bodies of small objects), multipart uploads
 *                              and parts. See schema.ts.
 *   blobs/<xx>/<id>            one file per large body or multipart part,
 *                              named by a random id. See blobs.ts.
 *
 * Crash safety, in one paragraph: bodies are written to fresh files that no
 * row references; a write becomes visible only through one SQLite transaction
 * that checks its CommitCondition and points the object's row at the new body;
 * files a transaction stops referencing are unlinked only after that
 * transaction is durable and no reader holds them; on open, every file no row
 * references is deleted. After kill -9 at any point, each object is therefore
 * either its old or its new version, whole, and nothing half-written is
 * listed. Power loss (fsync on) additionally keeps every file a durable row
 * points at, and loses at most the last ~second of acknowledged writes
 * (durability.ts).
 *
 * One process owns a data directory at a time (an exclusive SQLite lock);
 * opening one that is in use throws DataDirInUse.
 *
 * All database work is synchronous (src/sqlite.ts) and short: prepared
 * statements, index seeks, no body bytes on the event loop except inline
 * bodies. File I/O is asynchronous; with many concurrent large writes or
 * fsyncs, raising UV_THREADPOOL_SIZE (default 4) before startup helps.
 */
import { join } from 'node:path';
import type {
  Backend,
  BucketInfo,
  CompletedPart,
  CompleteOptions,
  DeleteOptions,
  DeleteResult,
  ListObjectsParams,
  ListObjectsResult,
  ListPartsParams,
  ListPartsResult,
  ListUploadsParams,
  ListUploadsResult,
  ListVersionsParams,
  ListVersionsResult,
  MultipartUploadInfo,
  ObjectHeaders,
  ObjectInfo,
  ObjectReader,
  PartInfo,
  Payload,
  PutObjectOptions,
  ExpiredObject,
  UploadChecksum,
  VersioningStatus,
} from '../types.js';
import { BlobStore } from './blobs.js';
import { Buckets } from './buckets.js';
import type { CorsRule } from '../../vocabulary/cors.js';
import { WalDurability } from './durability.js';
import { Multipart } from './multipart.js';
import { AbandonedUploads, type Abandoned } from './abandoned-uploads.js';
import { ExpiringObjects } from './expiring-objects.js';
import { expirationHeader, expiringRule, type LifecycleRule } from '../../vocabulary/lifecycle.js';
import { Objects } from './objects.js';
import { BlobReaper } from './reaper.js';
import { openDatabase } from './schema.js';
import { VersionListing } from './version-listing.js';
import { requireVersionIdForm } from './versioning.js';

export { DataDirInUse } from './schema.js';
export { multipartETag } from '../../vocabulary/etag.js';

export interface FsBackendOptions {
  dataDir: string;
  /**
   * fdatasync each blob file and fsync its directory before the commit that
   * references it, and sync the WAL in the background (default true). Off:
   * safe against process crashes only.
   */
  fsync?: boolean;
  /** Smallest size of every part but the last in CompleteMultipartUpload (default 5 MiB, as S3). */
  minPartSize?: number;
  /** Bodies up to this many bytes are stored in the database row, not in a file (default 64 KiB; -1: never). */
  inlineThreshold?: number;
  /** How long an ObjectReader nobody opens keeps its version's blobs from being unlinked (default 60 s). */
  readerLeaseMs?: number;
  /** With fsync on, the most time between a commit and the WAL sync that makes it durable (default 1000 ms). */
  walSyncIntervalMs?: number;
  /** A multipart upload with no part for this long is aborted (abandoned-uploads.ts); 0: only lifecycle rules abort. Default 7 days. */
  multipartAbandonAfterMs?: number;
  /** Told of the uploads each sweep aborted (and of a sweep that failed). */
  onAbandoned?: (aborted: Abandoned[], error?: unknown) => void;
}

export const DEFAULT_MULTIPART_ABANDON_AFTER_MS = 7 * 24 * 60 * 60 * 1000;
/** Lifecycle rules count in days: an hour between sweeps is ample; a short idle limit is swept four times per period. */
const MAX_SWEEP_INTERVAL_MS = 60 * 60 * 1000;

/** What the garbage collection at open found. */
export interface Recovery {
  /** Blob files no row referenced (left by a crash), now deleted. */
  orphansRemoved: number;
  /** Blob files rows reference that are missing: should be 0; anything else means outside damage. */
  missingBlobs: number;
}

export const DEFAULT_MIN_PART_SIZE = 5 * 1024 * 1024;
export const DEFAULT_INLINE_THRESHOLD = 64 * 1024;

export function openFsBackend(options: FsBackendOptions): FsBackend {
  return FsBackend.open(options);
}

export class FsBackend implements Backend {
  private closing: Promise<void> | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  private expire: ((judge: () => ExpiredObject[]) => Promise<void>) | undefined;

  private constructor(
    readonly dataDir: string,
    readonly recovery: Recovery,
    private readonly parts: {
      db: ReturnType<typeof openDatabase>;
      blobs: BlobStore;
      reaper: BlobReaper;
      durability: WalDurability;
      buckets: Buckets;
      objects: Objects;
      multipart: Multipart;
      versionListing: VersionListing;
      abandoned: AbandonedUploads;
      expiring: ExpiringObjects;
    },
    private readonly abandonAfterMs: number,
    private readonly onAbandoned: FsBackendOptions['onAbandoned'],
  ) {
    const every = Math.min(MAX_SWEEP_INTERVAL_MS, Math.max(1000, abandonAfterMs / 4 || MAX_SWEEP_INTERVAL_MS));
    // At start (an upload abandoned while casket was down), then periodically.
    this.sweepTimer = setTimeout(function sweep(this: FsBackend) {
      void this.sweepAbandonedUploads().finally(() => {
        if (this.closing === undefined) this.sweepTimer = setTimeout(sweep.bind(this), every).unref();
      });
    }.bind(this), 0).unref();
  }

  /**
   * Aborts the uploads lifecycle rules or the idle limit say to
   * (abandoned-uploads.ts), then hands the objects Expiration rules say are
   * due to the expirer (expiring-objects.ts); runs by itself, callable for tests.
   */
  sweepAbandonedUploads(now = Date.now()): Promise<void> {
    this.sweeping ??= this.parts.abandoned.reap(now, this.abandonAfterMs).then(
      (aborted) => this.onAbandoned?.(aborted),
      (e: unknown) => this.onAbandoned?.([], e),
    ).then(async () => {
      // After the sweep of uploads, in the same turn of the timer: one sweeper, one interval (--multipart-abandon-after).
      if (this.expire !== undefined && this.closing === undefined) await this.expire(() => this.parts.expiring.due(now));
    }).finally(() => {
      this.sweeping = undefined;
    });
    return this.sweeping;
  }

  /** Set once the guarded write path exists (server.ts); sweeps from then on expire objects too, the first one at once. */
  setExpirer(expire: (judge: () => ExpiredObject[]) => Promise<void>): void {
    this.expire = expire;
    void (this.sweeping ?? Promise.resolve()).then(() => this.sweepAbandonedUploads());
  }

  objectExpiration(info: ObjectInfo): string | undefined {
    if (info.noncurrent) return undefined;
    const rules = this.parts.abandoned.lifecycle(info.bucket);
    const due = rules && expiringRule(rules, { key: info.key, size: info.size, lastModifiedMs: info.lastModified.getTime() });
    return due ? expirationHeader(due) : undefined;
  }

  async getBucketLifecycle(bucket: string): Promise<LifecycleRule[] | null> {
    return this.parts.abandoned.lifecycle(bucket);
  }

  async putBucketLifecycle(bucket: string, rules: LifecycleRule[] | null): Promise<void> {
    this.parts.abandoned.setLifecycle(bucket, rules);
    this.parts.durability.committed();
  }

  /** Bytes held by the parts of uploads not completed (the metric casket_multipart_incomplete_bytes). */
  incompleteUploadBytes(): number {
    return this.parts.abandoned.bytes();
  }

  static open(options: FsBackendOptions): FsBackend {
    const fsync = options.fsync ?? true;
    const blobs = BlobStore.openSync(join(options.dataDir, 'blobs'), fsync);
    const dbFile = join(options.dataDir, 'casket.db');
    const db = openDatabase(dbFile);
    try {
      const recovery = collectGarbage(db, blobs);
      const durability = new WalDurability(`${dbFile}-wal`, fsync, options.walSyncIntervalMs ?? 1000);
      const reaper = new BlobReaper(blobs, durability);
      const buckets = new Buckets(db);
      const store = {
        db,
        buckets,
        blobs,
        reaper,
        durability,
        inlineLimit: options.inlineThreshold ?? DEFAULT_INLINE_THRESHOLD,
        readerLeaseMs: options.readerLeaseMs ?? 60_000,
      };
      const objects = new Objects(store);
      const multipart = new Multipart(store, objects, options.minPartSize ?? DEFAULT_MIN_PART_SIZE);
      const abandoned = new AbandonedUploads(db, multipart);
      return new FsBackend(
        options.dataDir,
        recovery,
        { db, blobs, reaper, durability, buckets, objects, multipart, versionListing: new VersionListing(db), abandoned, expiring: new ExpiringObjects(db) },
        options.multipartAbandonAfterMs ?? DEFAULT_MULTIPART_ABANDON_AFTER_MS,
        options.onAbandoned,
      );
    } catch (e) {
      db.close();
      throw e;
    }
  }

  async listBuckets(): Promise<BucketInfo[]> {
    return this.parts.buckets.list();
  }

  async createBucket(bucket: string): Promise<'created' | 'exists'> {
    const outcome = this.parts.buckets.create(bucket);
    if (outcome === 'created') this.parts.durability.committed();
    return outcome;
  }

  async getBucketCors(bucket: string): Promise<CorsRule[] | null> {
    return this.parts.buckets.cors(bucket);
  }

  async putBucketCors(bucket: string, rules: CorsRule[] | null): Promise<void> {
    this.parts.buckets.setCors(bucket, rules);
  }

  async headBucket(bucket: string): Promise<BucketInfo> {
    return this.parts.buckets.head(bucket);
  }

  async deleteBucket(bucket: string): Promise<void> {
    const released = this.parts.buckets.delete(bucket);
    this.parts.durability.committed();
    this.parts.reaper.condemn(released);
  }

  async getBucketVersioning(bucket: string): Promise<VersioningStatus | undefined> {
    return this.parts.buckets.versioning(bucket);
  }

  async putBucketVersioning(bucket: string, status: VersioningStatus): Promise<void> {
    this.parts.buckets.setVersioning(bucket, status);
    this.parts.durability.committed();
  }

  async headObject(bucket: string, key: string, versionId?: string): Promise<ObjectInfo | null> {
    return this.parts.objects.head(bucket, key, versionId);
  }

  async getObject(bucket: string, key: string, versionId?: string): Promise<ObjectReader | null> {
    return this.parts.objects.get(bucket, key, versionId);
  }

  async putObject(bucket: string, key: string, payload: Payload, options: PutObjectOptions): Promise<ObjectInfo> {
    return this.parts.objects.put(bucket, key, payload, options);
  }

  async deleteObject(bucket: string, key: string, options: DeleteOptions): Promise<DeleteResult> {
    const result = await this.parts.objects.delete(bucket, key, options);
    // A bucket that never had versioning answers no version id (API_DeleteObject).
    if (this.parts.buckets.versioning(bucket) === undefined && result.versionId === 'null' && options.versionId === undefined) delete result.versionId;
    return result;
  }

  async listObjectVersions(bucket: string, params: ListVersionsParams): Promise<ListVersionsResult> {
    this.parts.buckets.require(bucket);
    if (params.versionIdMarker) requireVersionIdForm(params.versionIdMarker);
    return this.parts.versionListing.list(bucket, params, this.parts.objects);
  }

  async currentDeleteMarker(bucket: string, key: string): Promise<string | undefined> {
    return this.parts.objects.currentDeleteMarker(bucket, key);
  }

  async listObjects(bucket: string, params: ListObjectsParams): Promise<ListObjectsResult> {
    return this.parts.objects.list(bucket, params);
  }

  async createMultipartUpload(bucket: string, key: string, headers: ObjectHeaders, metadata: Record<string, string>, _writer?: string, checksum?: UploadChecksum): Promise<MultipartUploadInfo> {
    return this.parts.multipart.createUpload(bucket, key, headers, metadata, checksum);
  }

  uploadPart(bucket: string, key: string, uploadId: string, partNumber: number, payload: Payload): Promise<PartInfo> {
    return this.parts.multipart.uploadPart(bucket, key, uploadId, partNumber, payload);
  }

  async completeMultipartUpload(bucket: string, key: string, uploadId: string, parts: CompletedPart[], options: CompleteOptions): Promise<ObjectInfo> {
    return this.parts.multipart.completeUpload(bucket, key, uploadId, parts, options);
  }

  abortMultipartUpload(bucket: string, key: string, uploadId: string): Promise<void> {
    return this.parts.multipart.abortUpload(bucket, key, uploadId);
  }

  async listParts(bucket: string, key: string, uploadId: string, params: ListPartsParams): Promise<ListPartsResult> {
    return this.parts.multipart.listParts(bucket, key, uploadId, params);
  }

  async listMultipartUploads(bucket: string, params: ListUploadsParams): Promise<ListUploadsResult> {
    return this.parts.multipart.listUploads(bucket, params);
  }

  /** Resolves when every blob released so far is unlinked (or waits for its readers). For tests and shutdown. */
  flushDeletes(): Promise<void> {
    return this.parts.reaper.flush();
  }

  /**
   * Finishes pending deletions, syncs the WAL, closes the database. Streams
   * already open keep reading (their descriptors keep the data); requests
   * after close fail.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      clearTimeout(this.sweepTimer);
      await this.sweeping;
      const { reaper, durability, blobs, db } = this.parts;
      await reaper.flush();
      await durability.close();
      await blobs.close();
      db.close();
    })();
    return this.closing;
  }
}

/** Deletes every blob file no row references; see blobs.ts for why that is all recovery needs. */
function collectGarbage(db: ReturnType<typeof openDatabase>, blobs: BlobStore): Recovery {
  const referenced = new Set<string>();
  // Noncurrent versions hold their blobs as current ones do (versioning.ts).
  for (const table of ['objects', 'versions']) {
    for (const row of db.prepare<[], { blobs: string }>(`SELECT blobs FROM ${table} WHERE blobs IS NOT NULL`).iterate()) {
      for (const id of JSON.parse(row.blobs) as string[]) referenced.add(id);
    }
  }
  for (const row of db.prepare<[], { blob: string }>('SELECT blob FROM parts').iterate()) referenced.add(row.blob);
  const { orphansRemoved, missing } = blobs.collectGarbageSync(referenced);
  return { orphansRemoved, missingBlobs: missing };
}
