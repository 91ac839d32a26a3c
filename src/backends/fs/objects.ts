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
import {
  ConditionFailed,
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

/** A new version, as the `objects` upsert binds it. */
export interface NewObjectRow extends ObjectRow {
  bucket: string;
  body: Buffer | null;
}

export interface CommitResult {
  info: ObjectInfo | null;
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
  private readonly commitDelete: (bucket: string, key: string, options: WriteOptions) => CommitResult;

  constructor(private readonly store: StoreParts) {
    const { db } = store;
    this.selectRow = db.prepare(`SELECT ${OBJECT_COLUMNS} FROM objects WHERE bucket = ? AND key = ?`);
    this.selectRowWithBody = db.prepare(`SELECT ${OBJECT_COLUMNS}, body FROM objects WHERE bucket = ? AND key = ?`);
    this.upsertRow = db.prepare(`
      INSERT INTO objects (bucket, key, etag, size, last_modified, writer, headers, metadata, part_sizes, checksum, part_checksums, blobs, body)
      VALUES (@bucket, @key, @etag, @size, @last_modified, @writer, @headers, @metadata, @part_sizes, @checksum, @part_checksums, @blobs, @body)
      ON CONFLICT (bucket, key) DO UPDATE SET
        etag = excluded.etag, size = excluded.size, last_modified = excluded.last_modified,
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
    this.commitDelete = db.transaction((bucket: string, key: string, options: WriteOptions): CommitResult => {
      store.buckets.require(bucket);
      const current = this.selectRow.get(bucket, key);
      if (!conditionHolds(options.condition, current?.etag ?? null, current && facts(current))) throw new ConditionFailed(current ? objectInfo(bucket, current) : null, null);
      if (current === undefined) return { info: null, released: [], changed: false };
      this.deleteRow.run(bucket, key);
      return { info: objectInfo(bucket, current), released: blobIds(current), changed: true };
    });
  }

  head(bucket: string, key: string): ObjectInfo | null {
    validateKey(key);
    const row = this.selectRow.get(bucket, key);
    if (row === undefined) {
      this.store.buckets.require(bucket);
      return null;
    }
    return objectInfo(bucket, row);
  }

  get(bucket: string, key: string): ObjectReader | null {
    validateKey(key);
    const row = this.selectRowWithBody.get(bucket, key);
    if (row === undefined) {
      this.store.buckets.require(bucket);
      return null;
    }
    const info = objectInfo(bucket, row);
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

  async delete(bucket: string, key: string, options: WriteOptions): Promise<ObjectInfo | null> {
    validateKey(key);
    const result = this.commitDelete(bucket, key, options);
    this.settle(result);
    return result.info;
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
      objects: page.rows.map((row) => objectInfo(bucket, row)),
      commonPrefixes: page.commonPrefixes,
      isTruncated: page.isTruncated,
    };
    if (page.last) result.nextAfter = 'row' in page.last ? page.last.row.key : page.last.commonPrefix;
    return result;
  }

  /**
   * Inside a transaction: check `options.condition` against the current
   * version of `row.bucket/row.key` and, if it holds, make `row` current.
   */
  replace(row: NewObjectRow, options: WriteOptions): CommitResult {
    this.store.buckets.require(row.bucket);
    const current = this.selectRow.get(row.bucket, row.key);
    if (!conditionHolds(options.condition, current?.etag ?? null, current && facts(current))) throw new ConditionFailed(current ? objectInfo(row.bucket, current) : null, row.etag);
    this.upsertRow.run(row);
    return { info: objectInfo(row.bucket, row), released: blobIds(current), changed: true };
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
