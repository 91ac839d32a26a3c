/**
 * S3 versioning in the embedded store (docs/design.md §10), as AWS has it
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/Versioning.html):
 * the noncurrent versions and delete markers of each key, in the `versions`
 * table (schema.ts migration 4). A key's current version, when it is not a
 * delete marker, stays its one row in `objects`, so every read, condition and
 * ListObjects works on `objects` alone, exactly as in an unversioned bucket.
 *
 * The order of a key's versions is the order they were made: a `versions`
 * rowid is one more than the greatest there, and a version enters `versions`
 * only when it stops being current — at that moment it is newer than every
 * version already there (the one a removal makes current again is the
 * newest of them). So "newest first" is `ORDER BY id DESC`, and the current
 * row in `objects`, when there is one, is newer than all of them.
 *
 * Every method here runs inside the caller's write transaction (objects.ts):
 * the version a write hides is moved by one INSERT…SELECT (blob ids and
 * inline body with it, no bytes through JavaScript), and the change is whole
 * or absent after a crash like any other commit. Blobs stay referenced while
 * any version row names them; only a version removed for good releases them.
 *
 * The null version (https://docs.aws.amazon.com/AmazonS3/latest/userguide/AddingObjectstoVersionSuspendedBuckets.html):
 * objects written while a bucket was never versioned or is Suspended have the
 * id `null`; a write in a Suspended bucket replaces the key's null version
 * (current or not), and versions made while Enabled stay.
 */
import { randomBytes } from 'node:crypto';
import type { Database, Statement } from '../../sqlite.js';
import { S3Error } from '../../vocabulary/errors.js';
import { OBJECT_COLUMNS, blobIds, type ObjectRow, type ObjectRowWithBody } from './rows.js';

export const NULL_VERSION = 'null';

/** A row of `versions`. */
export interface VersionRow extends ObjectRow {
  id: number;
  delete_marker: number;
}

/** AWS version ids are opaque strings of 32 URL-safe characters; these are random ones of that form. */
export function newVersionId(): string {
  return randomBytes(24).toString('base64url');
}

/**
 * A version id the store could have made (`null`, or one of newVersionId's);
 * anything else is refused as AWS refuses it: 400 InvalidArgument "Invalid
 * version id specified" (DeleteObjects: NoSuchVersion in the <Error>).
 */
export function requireVersionIdForm(versionId: string): void {
  if (versionId !== NULL_VERSION && !/^[A-Za-z0-9_-]{32}$/.test(versionId)) {
    throw new S3Error('InvalidArgument', { message: 'Invalid version id specified', fields: { ArgumentName: 'versionId', ArgumentValue: versionId } });
  }
}

const COPY_COLUMNS = 'bucket, key, version_id, etag, size, last_modified, writer, headers, metadata, part_sizes, checksum, part_checksums, blobs, body';

export class History {
  private readonly demoteCurrent: Statement<[string, string]>;
  private readonly dropCurrent: Statement<[string, string]>;
  private readonly insertMarker: Statement<[string, string, string, number, string | null]>;
  private readonly selectByVersion: Statement<[string, string, string], VersionRow>;
  private readonly selectByVersionWithBody: Statement<[string, string, string], VersionRow & ObjectRowWithBody>;
  private readonly selectNewest: Statement<[string, string], VersionRow>;
  private readonly removeById: Statement<[number]>;
  private readonly promoteById: Statement<[number]>;

  constructor(db: Database) {
    this.demoteCurrent = db.prepare(`INSERT INTO versions (${COPY_COLUMNS}, delete_marker) SELECT ${COPY_COLUMNS}, 0 FROM objects WHERE bucket = ? AND key = ?`);
    this.dropCurrent = db.prepare('DELETE FROM objects WHERE bucket = ? AND key = ?');
    this.insertMarker = db.prepare(`INSERT INTO versions (bucket, key, version_id, delete_marker, etag, size, last_modified, writer) VALUES (?, ?, ?, 1, '', 0, ?, ?)`);
    const versionColumns = `id, delete_marker, ${OBJECT_COLUMNS}`;
    this.selectByVersion = db.prepare(`SELECT ${versionColumns} FROM versions WHERE bucket = ? AND key = ? AND version_id = ?`);
    this.selectByVersionWithBody = db.prepare(`SELECT ${versionColumns}, body FROM versions WHERE bucket = ? AND key = ? AND version_id = ?`);
    this.selectNewest = db.prepare(`SELECT ${versionColumns} FROM versions WHERE bucket = ? AND key = ? ORDER BY id DESC LIMIT 1`);
    this.removeById = db.prepare('DELETE FROM versions WHERE id = ?');
    this.promoteById = db.prepare(`INSERT INTO objects (${COPY_COLUMNS}) SELECT ${COPY_COLUMNS} FROM versions WHERE id = ?`);
  }

  /** The noncurrent version or delete marker `versionId` of a key. */
  find(bucket: string, key: string, versionId: string): VersionRow | undefined {
    return this.selectByVersion.get(bucket, key, versionId);
  }

  findWithBody(bucket: string, key: string, versionId: string): (VersionRow & ObjectRowWithBody) | undefined {
    return this.selectByVersionWithBody.get(bucket, key, versionId);
  }

  /** The key's newest noncurrent entry: its current version when `objects` has none and it is a delete marker. */
  newest(bucket: string, key: string): VersionRow | undefined {
    return this.selectNewest.get(bucket, key);
  }

  /** The current version (in `objects`) becomes noncurrent, keeping its id and body. */
  demote(bucket: string, key: string): void {
    this.demoteCurrent.run(bucket, key);
    this.dropCurrent.run(bucket, key);
  }

  /** Makes a delete marker the key's newest version. */
  addMarker(bucket: string, key: string, versionId: string, at: number, writer: string | null): void {
    this.insertMarker.run(bucket, key, versionId, at, writer);
  }

  /** Removes a noncurrent entry for good; resolves the blob ids it held. */
  remove(row: VersionRow): string[] {
    this.removeById.run(row.id);
    return row.delete_marker ? [] : blobIds(row);
  }

  /** Removes the key's noncurrent null version, if any (a Suspended bucket's write replaces it). */
  removeNull(bucket: string, key: string): string[] {
    const row = this.find(bucket, key, NULL_VERSION);
    return row ? this.remove(row) : [];
  }

  /**
   * After the current version was removed by id: the newest remaining entry
   * becomes current — back into `objects` if it is a version; a delete
   * marker stays where it is and hides the key.
   */
  promoteNewest(bucket: string, key: string): void {
    const newest = this.newest(bucket, key);
    if (newest === undefined || newest.delete_marker) return;
    this.promoteById.run(newest.id);
    this.removeById.run(newest.id);
  }
}
