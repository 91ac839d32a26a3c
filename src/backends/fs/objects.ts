/**
 * Objects of the embedded store: HeadObject, GetObject, PutObject,
 * DeleteObject, ListObjects, and the row-level helpers CompleteMultipartUpload
 * commits through.
 *
 * A write is "receive, then commit": the body is consumed first (inline in
 * memory or into a fresh blob file, blobs.ts) without touching the database;
 * only once the payload stream ended clean, i.e. every signature, checksum and
 * length check passed, does one synchronous SQLite transaction read
 * the current row, evaluate the CommitCondition against it
 * (backends/commit-condition.ts) and write the new row. Node runs that transaction to
 * completion without yielding, and SQLite makes it atomic on disk, so the
 * check and the write are one step for every other request and for a crash.
 * A body that is refused (stream error, failed condition, same content
 * already there) is discarded; blobs a commit stops referencing go to the
 * reaper (reaper.ts).
 */
import type { Database, Statement } from '../../sqlite.js';
import type { BlobStore, ReceivedBody } from './blobs.js';
import type { Buckets } from './buckets.js';
import { conditionHolds, type VersionFacts } from '../commit-condition.js';
import { encodeChecksum } from '../multipart-checksum.js';
import type { WalDurability } from './durability.js';
import { listPage, seekAfter, type Scan, type Seek } from './listing.js';
import { validateKey } from '../../vocabulary/names.js';
import { blobReader, inlineReader } from './object-stream.js';
import type { BlobReaper } from './reaper.js';
import { blobIds, encodeHeaders, encodeMetadata, OBJECT_COLUMNS, objectInfo, type ObjectRow, type ObjectRowWithBody } from './rows.js';
import { S3Error } from '../../vocabulary/errors.js';
import { History, newVersionId, NULL_VERSION, requireVersionIdForm, type VersionRow } from './versioning.js';
import {
  ConditionFailed,
  type DeleteOptions,
  type DeleteResult,
  type ListObjectsParams,
  type ListObjectsResult,
  type ObjectInfo,
  type ObjectReader,
  type Payload,
  type PutObjectOptions,
  type WriteOptions,
} from '../types.js';

export interface StoreParts {
  db: Database;
  buckets: Buckets;
  blobs: BlobStore;
  reaper: BlobReaper;
  durability: WalDurability;
  /** Bodies up to this many bytes are stored in the row (-1: never). */
  inlineLimit: number;
  readerLeaseMs: number;
}

/** A new version, as the `objects` upsert binds it (its version id is given at commit, from the bucket's versioning). */
export interface NewObjectRow extends Omit<ObjectRow, 'version_id'> {
  bucket: string;
  body: Buffer | null;
}

export interface CommitResult {
  info: ObjectInfo | null;
  /** DeleteObject: the delete marker made, or the version removed by id. */
  deleted?: { versionId: string; deleteMarker: boolean };
  /** Blob ids the commit stopped referencing: condemn them once it returns. */
  released: string[];
  /** Whether the transaction changed the database (false: nothing to delete, or a completion already made). */
  changed: boolean;
}

export class Objects {
  private readonly selectRow: Statement<[string, string], ObjectRow>;
  private readonly selectRowWithBody: Statement<[string, string], ObjectRowWithBody>;
  private readonly upsertRow: Statement<[NewObjectRow]>;
  private readonly deleteRow: Statement<[string, string]>;
  private readonly scans: Record<'>' | '>=', { bounded: Statement<[string, string, string], ObjectRow>; open: Statement<[string, string], ObjectRow> }>;
  private readonly commitPut: (row: NewObjectRow, options: WriteOptions) => CommitResult;
  private readonly commitDelete: (bucket: string, key: string, options: DeleteOptions) => CommitResult;
  readonly history: History;

  constructor(private readonly store: StoreParts) {
    const { db } = store;
    this.history = new History(db);
    this.selectRow = db.prepare(`SELECT ${OBJECT_COLUMNS} FROM objects WHERE bucket = ? AND key = ?`);
    this.selectRowWithBody = db.prepare(`SELECT ${OBJECT_COLUMNS}, body FROM objects WHERE bucket = ? AND key = ?`);
    this.upsertRow = db.prepare(`
      INSERT INTO objects (bucket, key, version_id, etag, size, last_modified, writer, headers, metadata, part_sizes, checksum, part_checksums, blobs, body)
      VALUES (@bucket, @key, @version_id, @etag, @size, @last_modified, @writer, @headers, @metadata, @part_sizes, @checksum, @part_checksums, @blobs, @body)
      ON CONFLICT (bucket, key) DO UPDATE SET
        version_id = excluded.version_id, etag = excluded.etag, size = excluded.size, last_modified = excluded.last_modified,
        writer = excluded.writer, headers = excluded.headers, metadata = excluded.metadata,
        part_sizes = excluded.part_sizes, checksum = excluded.checksum, part_checksums = excluded.part_checksums,
        blobs = excluded.blobs, body = excluded.body`);
    this.deleteRow = db.prepare('DELETE FROM objects WHERE bucket = ? AND key = ?');
    const scan = (op: string, bounded: boolean) =>
      `SELECT ${OBJECT_COLUMNS} FROM objects WHERE bucket = ? AND key ${op} ?${bounded ? ' AND key < ?' : ''} ORDER BY key`;
    this.scans = {
      '>': { bounded: db.prepare(scan('>', true)), open: db.prepare(scan('>', false)) },
      '>=': { bounded: db.prepare(scan('>=', true)), open: db.prepare(scan('>=', false)) },
    };
    this.commitPut = db.transaction((row: NewObjectRow, options: WriteOptions) => this.replace(row, options));
    this.commitDelete = db.transaction((bucket: string, key: string, options: DeleteOptions): CommitResult => {
      const versioning = store.buckets.versioning(bucket);
      const current = this.selectRow.get(bucket, key);
      if (!conditionHolds(options.condition, current?.etag ?? null, current && facts(current))) throw new ConditionFailed(current ? this.info(bucket, current) : null, null);
      if (options.versionId !== undefined) return this.removeVersion(bucket, key, options.versionId, current);
      if (versioning === undefined) {
        if (current === undefined) return { info: null, released: [], changed: false };
        this.deleteRow.run(bucket, key);
        return { info: this.info(bucket, current), released: blobIds(current), changed: true };
      }
      // A versioned bucket hides the key behind a new delete marker, even when it had no current version
      // (API_DeleteObject); Suspended: the marker is the null version, replacing the one there was.
      const released: string[] = [];
      const markerId = versioning === 'Enabled' ? newVersionId() : NULL_VERSION;
      if (versioning === 'Suspended') released.push(...this.history.removeNull(bucket, key));
      if (current !== undefined) {
        if (current.version_id === NULL_VERSION && versioning === 'Suspended') {
          this.deleteRow.run(bucket, key);
          released.push(...blobIds(current));
        } else this.history.demote(bucket, key);
      }
      this.history.addMarker(bucket, key, markerId, Date.now(), options.writer ?? null);
      return { info: current ? this.info(bucket, current) : null, released, changed: true, deleted: { versionId: markerId, deleteMarker: true } };
    });
  }

  /**
   * Inside a transaction: DeleteObject ?versionId= removes that version for
   * good; when it was the current one, the newest remaining becomes current.
   * A version the key does not have is no change (S3 answers 204 as well).
   */
  private removeVersion(bucket: string, key: string, versionId: string, current: ObjectRow | undefined): CommitResult {
    if (current !== undefined && current.version_id === versionId) {
      this.deleteRow.run(bucket, key);
      this.history.promoteNewest(bucket, key);
      return { info: this.info(bucket, current), released: blobIds(current), changed: true, deleted: { versionId, deleteMarker: false } };
    }
    const old = this.history.find(bucket, key, versionId);
    if (old === undefined) return { info: null, released: [], changed: false, deleted: { versionId, deleteMarker: false } };
    const released = this.history.remove(old);
    if (current === undefined) this.history.promoteNewest(bucket, key);
    return { info: null, released, changed: true, deleted: { versionId, deleteMarker: old.delete_marker === 1 } };
  }

  /**
   * A version by id (GetObject / HeadObject ?versionId=): the current row or
   * a noncurrent one; NoSuchVersion when the key has none of that id, 405
   * MethodNotAllowed for a delete marker (API_GetObject: "If the specified
   * version is a delete marker, the response returns a 405 Method Not Allowed
   * error and the Last-Modified: timestamp response header").
   */
  private versionRow<R extends ObjectRow>(bucket: string, key: string, versionId: string, currentRow: R | undefined, old: (VersionRow & R) | undefined): { row: R; noncurrent: boolean } {
    if (currentRow !== undefined && currentRow.version_id === versionId) return { row: currentRow, noncurrent: false };
    if (old === undefined) {
      this.store.buckets.require(bucket);
      throw new S3Error('NoSuchVersion', { fields: { Key: key, VersionId: versionId } });
    }
    if (old.delete_marker) {
      throw new S3Error('MethodNotAllowed', {
        message: 'The specified method is not allowed against this resource.',
        fields: { Method: 'GET', ResourceType: 'DeleteMarker' },
        headers: { 'x-amz-delete-marker': 'true', 'x-amz-version-id': versionId, 'last-modified': new Date(old.last_modified).toUTCString() },
      });
    }
    return { row: old, noncurrent: true };
  }

  /** A row as ObjectInfo; a bucket that never had versioning answers no version id (docs/design.md §10). */
  info(bucket: string, row: ObjectRow): ObjectInfo {
    const info = objectInfo(bucket, row);
    if (row.version_id === NULL_VERSION && this.store.buckets.versioning(bucket) === undefined) delete info.versionId;
    return info;
  }

  /** The delete marker that is the key's current version, if it is one. */
  currentDeleteMarker(bucket: string, key: string): string | undefined {
    if (this.selectRow.get(bucket, key) !== undefined) return undefined;
    const newest = this.history.newest(bucket, key);
    return newest?.delete_marker ? newest.version_id : undefined;
  }

  head(bucket: string, key: string, versionId?: string): ObjectInfo | null {
    validateKey(key);
    if (versionId !== undefined) {
      requireVersionIdForm(versionId);
      const { row, noncurrent } = this.versionRow(bucket, key, versionId, this.selectRow.get(bucket, key), this.history.find(bucket, key, versionId));
      return { ...this.info(bucket, row), ...(noncurrent && { noncurrent }) };
    }
    const row = this.selectRow.get(bucket, key);
    if (row === undefined) {
      this.store.buckets.require(bucket);
      return null;
    }
    return this.info(bucket, row);
  }

  get(bucket: string, key: string, versionId?: string): ObjectReader | null {
    validateKey(key);
    let row = this.selectRowWithBody.get(bucket, key);
    let noncurrent = false;
    if (versionId !== undefined) requireVersionIdForm(versionId);
    if (versionId !== undefined) ({ row, noncurrent } = this.versionRow(bucket, key, versionId, row, row?.version_id === versionId ? undefined : this.history.findWithBody(bucket, key, versionId)));
    if (row === undefined) {
      this.store.buckets.require(bucket);
      return null;
    }
    const info = this.info(bucket, row);
    if (noncurrent) info.noncurrent = true;
    if (row.blobs === null) return inlineReader(info, row.body ?? Buffer.alloc(0));
    const { blobs, reaper, readerLeaseMs } = this.store;
    return blobReader(info, blobIds(row), info.partSizes ?? [info.size], blobs, reaper, readerLeaseMs);
  }

  async put(bucket: string, key: string, payload: Payload, options: PutObjectOptions): Promise<ObjectInfo> {
    validateKey(key);
    this.store.buckets.require(bucket);
    const body = await this.store.blobs.receive(payload.stream, this.store.inlineLimit);
    let result: CommitResult;
    try {
      const digest = payload.digest();
      if (digest.size !== body.size) {
        throw new S3Error('InternalError', `payload digest covers ${digest.size} bytes, the stream delivered ${body.size}`);
      }
      result = this.commitPut(
        {
          bucket,
          key,
          etag: digest.sha256.toString('hex'),
          size: body.size,
          last_modified: Date.now(),
          writer: options.writer ?? null,
          headers: encodeHeaders(options.headers),
          metadata: encodeMetadata(options.metadata),
          part_sizes: null,
          // A single PUT's checksum is of the whole object (S3: PutObject is always FULL_OBJECT).
          checksum: digest.checksum ? encodeChecksum({ algorithm: digest.checksum.algorithm, type: 'FULL_OBJECT', value: digest.checksum.value.toString('base64') }) : null,
          part_checksums: null,
          ...bodyColumns(body),
        },
        options,
      );
    } catch (e) {
      if (body.kind === 'file') await this.store.blobs.remove(body.id);
      throw e;
    }
    this.settle(result);
    return result.info!;
  }

  async delete(bucket: string, key: string, options: DeleteOptions): Promise<DeleteResult> {
    validateKey(key);
    if (options.versionId !== undefined) requireVersionIdForm(options.versionId);
    const result = this.commitDelete(bucket, key, options);
    this.settle(result);
    return { replaced: result.info, ...result.deleted };
  }

  list(bucket: string, params: ListObjectsParams): ListObjectsResult {
    this.store.buckets.require(bucket);
    const scan: Scan<ObjectRow> = (seek: Seek, upper) => {
      const statements = this.scans[seek.from === 'after-key' ? '>' : '>='];
      return upper === undefined ? statements.open.iterate(bucket, seek.key) : statements.bounded.iterate(bucket, seek.key, upper);
    };
    const pageParams = { prefix: params.prefix, delimiter: params.delimiter, max: params.maxKeys };
    const page = listPage(scan, pageParams, seekAfter(params.after, pageParams));
    const result: ListObjectsResult = {
      objects: page.rows.map((row) => this.info(bucket, row)),
      commonPrefixes: page.commonPrefixes,
      isTruncated: page.isTruncated,
    };
    if (page.last) result.nextAfter = 'row' in page.last ? page.last.row.key : page.last.commonPrefix;
    return result;
  }

  /**
   * Inside a transaction: check `options.condition` against the current
   * version of `row.bucket/row.key` and, if it holds, make `row` current —
   * replacing the current version in a bucket that never had versioning,
   * keeping it as noncurrent when Enabled, replacing the null version when
   * Suspended (versioning.ts).
   */
  replace(newRow: NewObjectRow, options: WriteOptions): CommitResult {
    const versioning = this.store.buckets.versioning(newRow.bucket);
    const current = this.selectRow.get(newRow.bucket, newRow.key);
    if (!conditionHolds(options.condition, current?.etag ?? null, current && facts(current))) throw new ConditionFailed(current ? this.info(newRow.bucket, current) : null, newRow.etag);
    const row = { ...newRow, version_id: versioning === 'Enabled' ? newVersionId() : NULL_VERSION };
    const released: string[] = [];
    if (versioning === 'Suspended') released.push(...this.history.removeNull(row.bucket, row.key));
    if (current !== undefined && versioning !== undefined && !(versioning === 'Suspended' && current.version_id === NULL_VERSION)) {
      this.history.demote(row.bucket, row.key);
    } else released.push(...blobIds(current));
    this.upsertRow.run(row);
    return { info: this.info(row.bucket, row), released, changed: true };
  }

  /** After a commit: note it for durability and hand the blobs it released to the reaper. */
  settle(result: CommitResult): void {
    if (!result.changed) return;
    this.store.durability.committed();
    this.store.reaper.condemn(result.released);
  }
}

/** What a size / last-modified condition is checked against, from a row. */
function facts(row: ObjectRow): VersionFacts {
  return { size: row.size, lastModified: new Date(row.last_modified) };
}

function bodyColumns(body: ReceivedBody): Pick<NewObjectRow, 'blobs' | 'body'> {
  return body.kind === 'inline' ? { blobs: null, body: body.data } : { blobs: JSON.stringify([body.id]), body: null };
}
