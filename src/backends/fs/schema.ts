/**
 * The embedded store's SQLite database: connection settings, DDL, and
 * migrations keyed by `PRAGMA user_version`.
 *
 * Settings and why:
 * - `locking_mode = EXCLUSIVE`, taken before WAL is enabled and held for the
 *   life of the connection: one process owns a data directory. The store keeps
 *   state the database does not (blobs being written, readers' pins on
 *   replaced blobs) and garbage-collects unreferenced blob files on open,
 *   which is only safe when no other process is writing there. A second
 *   process fails fast instead of corrupting it. (It also means SQLite keeps
 *   the WAL index in heap memory: no -shm file.)
 * - `journal_mode = WAL`: a commit appends to the log, readers never block.
 * - `synchronous = NORMAL`: a commit is not fsynced; the WAL is synced at
 *   checkpoints. A committed transaction therefore survives a process crash
 *   (kill -9: the data is in the OS page cache), and after power loss or an OS
 *   crash the database is consistent but may have rolled back the most recent
 *   commits. The store bounds that window itself (durability.ts):
 *   with fsync on it syncs the WAL in the background within a second of a
 *   commit, and before it unlinks any blob a commit stopped referencing, so a
 *   rolled-back row never points at a deleted file. FULL would put an fsync on
 *   the event loop in every commit (src/sqlite.ts is synchronous).
 * - `busy_timeout`: only matters for the lock at open, which we want to fail
 *   fast; afterwards nothing else can hold the database.
 *
 * Tables (keys are TEXT in UTF-8 with BINARY collation: memcmp order, which is
 * the order S3 lists keys in):
 * - buckets(name, created)
 * - objects: one row per key: ETag, size, mtime (ms), writer, headers and
 *   x-amz-meta-* as JSON, and the body: either inline (`body`, small objects)
 *   or a JSON array of blob file ids (`blobs`) with `part_sizes` for
 *   multipart objects. Body last, so reading the other columns never touches
 *   its overflow pages.
 * - uploads: in-progress multipart uploads; `upload_id` sorts by initiation
 *   time (see multipart.ts), so (bucket, key, upload_id) is S3's listing order.
 * - parts: one row per (upload, part number), pointing at its blob file.
 * - completed_uploads: recently completed upload ids and the ETag they made,
 *   so a retried CompleteMultipartUpload (lost response) succeeds.
 *
 * Migration 2 (flexible checksums): `objects.checksum` (`<algorithm> <type>
 * <base64>`, see backends/multipart-checksum.ts) and `objects.part_checksums`
 * (JSON base64[] of a multipart object's parts), placed before the body
 * columns — so the table is rebuilt once rather than ALTERed (an added column
 * would land after `body`, and reading it would walk an inline body's overflow
 * pages); `uploads.checksum` (`<algorithm> <type>`) and `parts.checksum`
 * (`<algorithm> <base64>`) are added in place.
 *
 * Migration 3 (CORS): `buckets.cors`, the bucket's CORS rules as JSON
 * (vocabulary/cors.ts), NULL when it has none.
 *
 * Migration 4 (S3 versioning, docs/design.md §10): `buckets.versioning`
 * ('Enabled' / 'Suspended', NULL while never set); `objects.version_id`, the
 * current version's id (`null` for the null version: every object of an
 * older data dir becomes its key's null version), placed before the body
 * columns, so `objects` is rebuilt once more; and `versions`, the noncurrent
 * versions and delete markers (versioning.ts): the same columns plus
 * `delete_marker`, its rowid the order versions were made in (newer greater).
 * `objects` stays one row per key holding its current version when that is
 * not a delete marker, so reads, conditions and ListObjects never look at
 * history.
 *
 * Migration 5 (multipart clean-up): `buckets.lifecycle`, the bucket's
 * AbortIncompleteMultipartUpload rules as JSON (vocabulary/lifecycle.ts),
 * NULL when it has none (abandoned-uploads.ts enforces them).
 */
import { isBusy, openSqlite, type Database } from '../../sqlite.js';

const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE buckets (
    name TEXT PRIMARY KEY,
    created INTEGER NOT NULL
  ) WITHOUT ROWID;

  CREATE TABLE objects (
    id INTEGER PRIMARY KEY,
    bucket TEXT NOT NULL,
    key TEXT NOT NULL,
    etag TEXT NOT NULL,
    size INTEGER NOT NULL,
    last_modified INTEGER NOT NULL,
    writer TEXT,
    headers TEXT,
    metadata TEXT,
    part_sizes TEXT,
    blobs TEXT,
    body BLOB
  );
  CREATE UNIQUE INDEX objects_by_key ON objects (bucket, key);

  CREATE TABLE uploads (
    upload_id TEXT PRIMARY KEY,
    bucket TEXT NOT NULL,
    key TEXT NOT NULL,
    initiated INTEGER NOT NULL,
    headers TEXT,
    metadata TEXT
  ) WITHOUT ROWID;
  CREATE INDEX uploads_by_key ON uploads (bucket, key, upload_id);

  CREATE TABLE parts (
    upload_id TEXT NOT NULL,
    part_number INTEGER NOT NULL,
    etag TEXT NOT NULL,
    sha256 BLOB NOT NULL,
    size INTEGER NOT NULL,
    last_modified INTEGER NOT NULL,
    blob TEXT NOT NULL,
    PRIMARY KEY (upload_id, part_number)
  ) WITHOUT ROWID;

  CREATE TABLE completed_uploads (
    upload_id TEXT PRIMARY KEY,
    bucket TEXT NOT NULL,
    key TEXT NOT NULL,
    etag TEXT NOT NULL,
    completed INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE INDEX completed_uploads_by_time ON completed_uploads (completed);
  `,
  `
  CREATE TABLE objects_v2 (
    id INTEGER PRIMARY KEY,
    bucket TEXT NOT NULL,
    key TEXT NOT NULL,
    etag TEXT NOT NULL,
    size INTEGER NOT NULL,
    last_modified INTEGER NOT NULL,
    writer TEXT,
    headers TEXT,
    metadata TEXT,
    part_sizes TEXT,
    checksum TEXT,
    part_checksums TEXT,
    blobs TEXT,
    body BLOB
  );
  INSERT INTO objects_v2 (id, bucket, key, etag, size, last_modified, writer, headers, metadata, part_sizes, blobs, body)
    SELECT id, bucket, key, etag, size, last_modified, writer, headers, metadata, part_sizes, blobs, body FROM objects;
  DROP TABLE objects;
  ALTER TABLE objects_v2 RENAME TO objects;
  CREATE UNIQUE INDEX objects_by_key ON objects (bucket, key);
  ALTER TABLE uploads ADD COLUMN checksum TEXT;
  ALTER TABLE parts ADD COLUMN checksum TEXT;
  `,
  `
  ALTER TABLE buckets ADD COLUMN cors TEXT;
  `,
  `
  ALTER TABLE buckets ADD COLUMN versioning TEXT;
  CREATE TABLE objects_v4 (
    id INTEGER PRIMARY KEY,
    bucket TEXT NOT NULL,
    key TEXT NOT NULL,
    version_id TEXT NOT NULL,
    etag TEXT NOT NULL,
    size INTEGER NOT NULL,
    last_modified INTEGER NOT NULL,
    writer TEXT,
    headers TEXT,
    metadata TEXT,
    part_sizes TEXT,
    checksum TEXT,
    part_checksums TEXT,
    blobs TEXT,
    body BLOB
  );
  INSERT INTO objects_v4 (id, bucket, key, version_id, etag, size, last_modified, writer, headers, metadata, part_sizes, checksum, part_checksums, blobs, body)
    SELECT id, bucket, key, 'null', etag, size, last_modified, writer, headers, metadata, part_sizes, checksum, part_checksums, blobs, body FROM objects;
  DROP TABLE objects;
  ALTER TABLE objects_v4 RENAME TO objects;
  CREATE UNIQUE INDEX objects_by_key ON objects (bucket, key);
  CREATE TABLE versions (
    id INTEGER PRIMARY KEY,
    bucket TEXT NOT NULL,
    key TEXT NOT NULL,
    version_id TEXT NOT NULL,
    delete_marker INTEGER NOT NULL,
    etag TEXT NOT NULL,
    size INTEGER NOT NULL,
    last_modified INTEGER NOT NULL,
    writer TEXT,
    headers TEXT,
    metadata TEXT,
    part_sizes TEXT,
    checksum TEXT,
    part_checksums TEXT,
    blobs TEXT,
    body BLOB
  );
  CREATE UNIQUE INDEX versions_by_id ON versions (bucket, key, version_id);
  CREATE INDEX versions_by_key ON versions (bucket, key, id);
  `,
  `
  ALTER TABLE buckets ADD COLUMN lifecycle TEXT;
  `,
];

export class DataDirInUse extends Error {
  constructor(file: string, options: { cause: unknown }) {
    super(`casket: ${file} is in use by another process`, options);
    this.name = 'DataDirInUse';
  }
}

export function openDatabase(file: string): Database {
  const db = openSqlite(file);
  try {
    db.pragma('busy_timeout = 0');
    db.pragma('locking_mode = EXCLUSIVE');
    try {
      // The first write takes the exclusive lock; in EXCLUSIVE mode it is never released.
      db.exec('BEGIN EXCLUSIVE; COMMIT');
    } catch (e) {
      if (isBusy(e)) throw new DataDirInUse(file, { cause: e });
      throw e;
    }
    const mode = db.pragma('journal_mode = WAL', { simple: true });
    if (mode !== 'wal') throw new Error(`casket: cannot put ${file} in WAL mode (got ${String(mode)})`);
    db.pragma('synchronous = NORMAL');
    db.pragma('busy_timeout = 5000');
    db.pragma('cache_size = -32768'); // 32 MiB
    db.pragma('journal_size_limit = 67108864'); // truncate the WAL back to 64 MiB after checkpoints
    migrate(db, file);
    return db;
  } catch (e) {
    db.close();
    throw e;
  }
}

function migrate(db: Database, file: string): void {
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version > MIGRATIONS.length) {
    throw new Error(`casket: ${file} has schema version ${version}; this casket knows up to ${MIGRATIONS.length}`);
  }
  for (let v = version; v < MIGRATIONS.length; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v]!);
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
}
