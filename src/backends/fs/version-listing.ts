/**
 * ListObjectVersions of the embedded store
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectVersions.html):
 * keys in order, each key's versions newest first — its current row in
 * `objects` (IsLatest), then its `versions` rows by descending id — with
 * prefix, delimiter (one common prefix counts as one entry), max-keys, and
 * paging by key-marker / version-id-marker. Built on the same lazy listing as
 * ListObjects (listing.ts): the two tables are merged as they are read, so a
 * page costs what it shows.
 *
 * Resuming after (key, version): the rest of that key's versions older than
 * the marker, then the keys after it. A version-id marker the key does not
 * have resumes after the whole key.
 */
import type { Database, Statement } from '../../sqlite.js';
import type { ListVersionsParams, ListVersionsResult, ObjectInfo, VersionEntry } from '../types.js';
import { listPage, seekAfter, type Scan, type Seek } from './listing.js';
import { OBJECT_COLUMNS, type ObjectRow } from './rows.js';
import type { VersionRow } from './versioning.js';

/** A row of the merged scan: a current one (id Infinity) or a `versions` one. */
type ListedRow = VersionRow & { current: boolean; isLatest: boolean };

const CURRENT_ID = Number.MAX_SAFE_INTEGER;

export class VersionListing {
  private readonly currentScans: Record<'>' | '>=', { bounded: Statement<[string, string, string], ObjectRow>; open: Statement<[string, string], ObjectRow> }>;
  private readonly versionScans: Record<'>' | '>=', { bounded: Statement<[string, string, string], VersionRow>; open: Statement<[string, string], VersionRow> }>;
  private readonly olderOfKey: Statement<[string, string, number], VersionRow>;
  private readonly selectCurrent: Statement<[string, string], ObjectRow>;
  private readonly selectVersionId: Statement<[string, string, string], { id: number }>;

  constructor(db: Database) {
    const scan = (table: string, columns: string, order: string, op: string, bounded: boolean) =>
      `SELECT ${columns} FROM ${table} WHERE bucket = ? AND key ${op} ?${bounded ? ' AND key < ?' : ''} ORDER BY ${order}`;
    const versionColumns = `id, delete_marker, ${OBJECT_COLUMNS}`;
    this.currentScans = {
      '>': { bounded: db.prepare(scan('objects', OBJECT_COLUMNS, 'key', '>', true)), open: db.prepare(scan('objects', OBJECT_COLUMNS, 'key', '>', false)) },
      '>=': { bounded: db.prepare(scan('objects', OBJECT_COLUMNS, 'key', '>=', true)), open: db.prepare(scan('objects', OBJECT_COLUMNS, 'key', '>=', false)) },
    };
    this.versionScans = {
      '>': { bounded: db.prepare(scan('versions', versionColumns, 'key, id DESC', '>', true)), open: db.prepare(scan('versions', versionColumns, 'key, id DESC', '>', false)) },
      '>=': { bounded: db.prepare(scan('versions', versionColumns, 'key, id DESC', '>=', true)), open: db.prepare(scan('versions', versionColumns, 'key, id DESC', '>=', false)) },
    };
    this.olderOfKey = db.prepare(`SELECT ${versionColumns} FROM versions WHERE bucket = ? AND key = ? AND id < ? ORDER BY id DESC`);
    this.selectCurrent = db.prepare(`SELECT ${OBJECT_COLUMNS} FROM objects WHERE bucket = ? AND key = ?`);
    this.selectVersionId = db.prepare('SELECT id FROM versions WHERE bucket = ? AND key = ? AND version_id = ?');
  }

  list(bucket: string, params: ListVersionsParams, rows: { info(bucket: string, row: ObjectRow): ObjectInfo }): ListVersionsResult {
    const pageParams = { prefix: params.prefix, delimiter: params.delimiter, max: params.maxKeys };
    const keyMarker = params.keyMarker || undefined;
    // After (key, version): that key's older versions first, then the keys after it.
    let resumeWithin: { key: string; id: number } | undefined;
    if (keyMarker !== undefined && params.versionIdMarker) {
      const id = this.selectCurrent.get(bucket, keyMarker)?.version_id === params.versionIdMarker ? CURRENT_ID : this.selectVersionId.get(bucket, keyMarker, params.versionIdMarker)?.id;
      if (id !== undefined && keyMarker.startsWith(params.prefix)) resumeWithin = { key: keyMarker, id };
    }
    const scan: Scan<ListedRow> = (seek: Seek, upper) => this.merged(bucket, seek, upper, resumeWithin);
    const page = listPage(scan, pageParams, resumeWithin ? { from: 'after-key', key: keyMarker! } : seekAfter(keyMarker, pageParams));
    const entries: VersionEntry[] = [];
    for (const row of page.rows) {
      const entry: VersionEntry = { key: row.key, versionId: row.version_id, isLatest: row.isLatest, lastModified: new Date(row.last_modified) };
      if (row.delete_marker) {
        if (row.writer !== null) entry.writer = row.writer;
      } else entry.info = rows.info(bucket, row);
      entries.push(entry);
    }
    const result: ListVersionsResult = { entries, commonPrefixes: page.commonPrefixes, isTruncated: page.isTruncated };
    if (page.last) {
      if ('row' in page.last) {
        result.nextKeyMarker = page.last.row.key;
        result.nextVersionIdMarker = page.last.row.version_id;
      } else result.nextKeyMarker = page.last.commonPrefix;
    }
    return result;
  }

  /**
   * Current and noncurrent rows from `seek`, in listing order, each marked
   * IsLatest: a current row always is; a noncurrent one when its key has no
   * current row and it is the key's newest (a delete marker hiding the key).
   * The first scan of a page resumed inside a key yields that key's older
   * versions first (none of them latest).
   */
  private *merged(bucket: string, seek: Seek, upper: string | undefined, resumeWithin: { key: string; id: number } | undefined): Generator<ListedRow> {
    if (resumeWithin && seek.from === 'after-key' && seek.key === resumeWithin.key) {
      for (const row of this.olderOfKey.iterate(bucket, resumeWithin.key, resumeWithin.id)) yield { ...row, current: false, isLatest: false };
    }
    const op = seek.from === 'after-key' ? '>' : '>=';
    const run = <R>(s: { bounded: Statement<[string, string, string], R>; open: Statement<[string, string], R> }) =>
      (upper === undefined ? s.open.iterate(bucket, seek.key) : s.bounded.iterate(bucket, seek.key, upper))[Symbol.iterator]();
    const currents = run(this.currentScans[op]);
    const olds = run(this.versionScans[op]);
    let c = currents.next();
    let o = olds.next();
    let lastKey: string | undefined;
    try {
      while (!c.done || !o.done) {
        // Same key: the current row first (it is the newest); otherwise the smaller key (memcmp order, as SQLite's BINARY).
        const takeCurrent = !c.done && (o.done || Buffer.compare(Buffer.from(c.value.key), Buffer.from(o.value.key)) <= 0);
        if (takeCurrent) {
          const row = c.value as ObjectRow;
          lastKey = row.key;
          c = currents.next();
          yield { ...row, id: CURRENT_ID, delete_marker: 0, current: true, isLatest: true };
        } else {
          const row = o.value as VersionRow;
          const first = row.key !== lastKey;
          lastKey = row.key;
          o = olds.next();
          yield { ...row, current: false, isLatest: first };
        }
      }
    } finally {
      currents.return?.();
      olds.return?.();
    }
  }
}
