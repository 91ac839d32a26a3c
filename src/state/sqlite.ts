/**
 * The default state store: SQLite (src/sqlite.ts) in the data dir, so a
 * restart does not forget who read what. Every method runs synchronously, so
 * the read-merge-write of a stamp is atomic within the process. Stamps,
 * write-log and ETag-index entries are written to the file once per
 * event-loop turn (flush); what is not written yet is read from memory.
 * Pruning (TTL, entry cap) runs on open and once a minute.
 */
import { openSqlite, type Database, type Statement } from '../sqlite.js';
import { fullStamp, mergeRead, readsWhole } from './read-coverage.js';
import { DEFAULT_STATE_LIMITS, type ReadEvent, type ReadStamp, type PartDigest, SESSION_GRACE_MS, type OAuthGrant, type SessionRecord, type StampEntry, type StateLimits, type StateStore, type WriteLogEntry, type WriteLogQuery } from './types.js';
import { RecentLog } from './recent-log.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS stamps (
  agent TEXT NOT NULL, bucket TEXT NOT NULL, key TEXT NOT NULL,
  etag TEXT NOT NULL, size INTEGER NOT NULL, full INTEGER NOT NULL, covered TEXT NOT NULL, at INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  PRIMARY KEY (agent, bucket, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS stamps_at ON stamps(at);
CREATE INDEX IF NOT EXISTS stamps_seq ON stamps(seq);
CREATE TABLE IF NOT EXISTS write_log (
  id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, bucket TEXT NOT NULL, key TEXT NOT NULL,
  operation TEXT NOT NULL, agent TEXT, access_key TEXT, previous_etag TEXT, new_etag TEXT, invocation_id TEXT, version_id TEXT
);
CREATE INDEX IF NOT EXISTS write_log_key ON write_log(bucket, key);
CREATE INDEX IF NOT EXISTS write_log_at ON write_log(at);
CREATE TABLE IF NOT EXISTS etag_index (
  bucket TEXT NOT NULL, key TEXT NOT NULL, upstream_etag TEXT NOT NULL, etag TEXT NOT NULL, at INTEGER NOT NULL,
  PRIMARY KEY (bucket, key, upstream_etag)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS part_digests (
  upload_id TEXT NOT NULL, part_number INTEGER NOT NULL, sha256 TEXT NOT NULL, md5 TEXT NOT NULL, size INTEGER NOT NULL, at INTEGER NOT NULL,
  PRIMARY KEY (upload_id, part_number)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS part_digests_by_md5 (
  upload_id TEXT NOT NULL, part_number INTEGER NOT NULL, md5 TEXT NOT NULL, sha256 TEXT NOT NULL, size INTEGER NOT NULL, checksum TEXT, at INTEGER NOT NULL,
  UNIQUE (upload_id, part_number, md5)
);
CREATE TABLE IF NOT EXISTS sessions (
  access_key TEXT PRIMARY KEY, record TEXT NOT NULL, keep_until INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sessions_keep_until ON sessions(keep_until);
CREATE TABLE IF NOT EXISTS console_revocations (
  id TEXT PRIMARY KEY, until INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS oauth_grants (
  id TEXT PRIMARY KEY, record TEXT NOT NULL, expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS reminder_cursors (
  agent TEXT PRIMARY KEY, cursor TEXT NOT NULL, at INTEGER NOT NULL
) WITHOUT ROWID;
`;

interface StampRow {
  bucket: string;
  key: string;
  etag: string;
  size: number;
  full: number;
  covered: string;
  at: number;
}

/** A write_log row as listWriteLog selects it: the entry's own field names, NULL where a field is not set. */
type LogRow = { id: number; at: number } & Pick<WriteLogEntry, 'bucket' | 'key' | 'operation'> & { [F in 'agent' | 'accessKey' | 'previousETag' | 'newETag' | 'invocationId' | 'versionId' | 'changeset']: string | null };

/** Stamps set and not yet written, by stampId, in the order they were set. */
type PendingStamps = Map<string, { agent: string; bucket: string; key: string; stamp: ReadStamp; seq: number }>;

/** Stamp changes remembered for stampsChangedSince; a mark older than this many changes is answered "changed". */
const STAMP_CHANGES = 4096;

const stampId = (agent: string, bucket: string, key: string) => JSON.stringify([agent, bucket, key]);

function toStamp(row: StampRow): ReadStamp {
  return { etag: row.etag, size: row.size, full: row.full === 1, covered: JSON.parse(row.covered) as Array<[number, number]>, at: row.at };
}

/** A write-log entry as listWriteLog answers it, whether read from the table or kept in memory: no field that is not set, its id as the cursor. */
function logEntry(id: number, e: Omit<LogRow, 'id' | 'at'> | WriteLogEntry, at: number): WriteLogEntry {
  return {
    at: new Date(at),
    bucket: e.bucket,
    key: e.key,
    operation: e.operation,
    ...(e.agent != null && { agent: e.agent }),
    ...(e.accessKey != null && { accessKey: e.accessKey }),
    ...(e.previousETag != null && { previousETag: e.previousETag }),
    ...(e.newETag != null && { newETag: e.newETag }),
    ...(e.invocationId != null && { invocationId: e.invocationId }),
    ...(e.versionId != null && { versionId: e.versionId }),
    ...(e.changeset != null && { changeset: e.changeset }),
    cursor: String(id),
  };
}

export class SqliteStateStore implements StateStore {
  private readonly db: Database;
  private readonly timer: NodeJS.Timeout;
  private closed = false;
  private readonly q;
  /** Writes since the last prune: the caps hold between the once-a-minute prunes too. */
  private writes = 0;
  /** Write-log entries waiting for this turn's transaction (flushLog). */
  private pendingLog: WriteLogEntry[] = [];
  /** ETag index entries waiting for the same transaction, by (bucket, key, upstream ETag); read through. */
  private pendingIndex = new Map<string, { bucket: string; key: string; upstreamETag: string; etag: string; at: number }>();
  /**
   * Stamps set and not yet in the table, by stampId: written with the turn's
   * other entries (flushLog), read through by getStamp/getStamps, written
   * first by listStamps and prune. A read's stamp used to be an autocommit
   * of its own before the answer (the largest part of an MCP read's time
   * between its GetObject and its answer, docs/performance.md "MCP tools").
   */
  private pendingStamps: PendingStamps = new Map();
  /** Stamps written in one transaction, made once (a transaction function made per flush was 1.3% of a small read, --cpu-prof). */
  private readonly stampsOnly: (stamps: PendingStamps) => void;
  /** The flush queued for the end of this turn, if one is (it clears this as it runs): one per turn, however many writes. */
  private flushing: NodeJS.Immediate | undefined;
  /** Touch order of stamps: the least recently touched is evicted first, even within one millisecond. */
  private seq: number;
  /**
   * listWriteLog's statements, by their SQL: at most one per combination of
   * its seven filters. Prepared once each — preparing per call was 1.9% of a
   * read_text_file's CPU (measured with --cpu-prof), and every statement
   * made per call is garbage for the GC.
   */
  private readonly logQueries = new Map<string, Statement<Array<string | number>, LogRow>>();
  /** Bumped at each write-log append and prune: see writeLogVersion. */
  private logVersion = 0;
  /** Stamp changes (set or dropped) so far, and the newest STAMP_CHANGES of them by number: see stampsChangedSince. */
  private stampChanges = 0;
  private readonly changedStamps: string[] = new Array<string>(STAMP_CHANGES);
  /** For each stamp among those newest changes, the number of its latest: a look costs its keys, not the changes since its mark. */
  private readonly lastChangeOf = new Map<string, number>();
  /** The change number at the last prune, which may have dropped any stamp. */
  private prunedAt = 0;
  /** The newest write-log entries in memory (recent-log.ts): this process owns the file. */
  private recent: RecentLog;
  /** Prunes so far, and what the last one deleted from the write log: see flushLog. */
  private prunes = 0;
  private lastPrune = { cutoff: -Infinity, deletedUpTo: 0 };

  constructor(path: string, private readonly limits: StateLimits = DEFAULT_STATE_LIMITS) {
    this.db = openSqlite(path);
    this.db.pragma('journal_mode = WAL');
    // NORMAL in WAL mode survives a process crash (kill -9); only an OS crash
    // may roll back the last transactions, which costs a stamp, never an object.
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('busy_timeout = 5000');
    this.db.exec(SCHEMA);
    // State databases made before exact retries (docs/design.md §3) lack the column.
    const columns = this.db.prepare<[], { name: string }>("SELECT name FROM pragma_table_info('write_log')").all();
    if (!columns.some((c) => c.name === 'invocation_id')) this.db.exec('ALTER TABLE write_log ADD COLUMN invocation_id TEXT');
    // ... and before S3 versioning (docs/design.md §10).
    if (!columns.some((c) => c.name === 'version_id')) this.db.exec('ALTER TABLE write_log ADD COLUMN version_id TEXT');
    if (!columns.some((c) => c.name === 'changeset')) this.db.exec('ALTER TABLE write_log ADD COLUMN changeset TEXT');
    // ... and before flexible checksums.
    const partColumns = this.db.prepare<[], { name: string }>("SELECT name FROM pragma_table_info('part_digests')").all();
    if (!partColumns.some((c) => c.name === 'checksum')) this.db.exec('ALTER TABLE part_digests ADD COLUMN checksum TEXT');
    // part_digests held one digest per part number; part_digests_by_md5 holds
    // one per (part number, MD5), in recording order (its rowid: a replaced
    // row is inserted anew, so it becomes the latest). What an older casket
    // recorded moves over, as older than anything recorded since; the old
    // table stays (empty) for an older casket opening this file.
    this.db.transaction(() => {
      this.db.exec('INSERT OR IGNORE INTO part_digests_by_md5 (upload_id, part_number, md5, sha256, size, checksum, at) SELECT upload_id, part_number, md5, sha256, size, checksum, at FROM part_digests ORDER BY at');
      this.db.exec('DELETE FROM part_digests');
    })();
    this.q = {
      getStamp: this.db.prepare<[string, string, string], StampRow>('SELECT bucket, key, etag, size, full, covered, at FROM stamps WHERE agent = ? AND bucket = ? AND key = ?'),
      putStamp: this.db.prepare('INSERT OR REPLACE INTO stamps (agent, bucket, key, etag, size, full, covered, at, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)'),
      listStamps: this.db.prepare<[string, number], StampRow>('SELECT bucket, key, etag, size, full, covered, at FROM stamps WHERE agent = ? AND at >= ? ORDER BY bucket, key'),
      // As getIndexMany: the keys as one JSON array, one primary-key probe each.
      getStamps: this.db.prepare<[string, string], StampRow & { i: number }>(
        "SELECT p.key AS i, s.bucket AS bucket, s.key AS key, s.etag AS etag, s.size AS size, s.full AS full, s.covered AS covered, s.at AS at FROM json_each(?) AS p CROSS JOIN stamps AS s ON s.agent = ? AND s.bucket = json_extract(p.value, '$[0]') AND s.key = json_extract(p.value, '$[1]')",
      ),
      forget: this.db.prepare('DELETE FROM stamps WHERE agent = ? AND bucket = ? AND key = ?'),
      appendLog: this.db.prepare('INSERT INTO write_log (at, bucket, key, operation, agent, access_key, previous_etag, new_etag, invocation_id, version_id, changeset) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)'),
      getIndex: this.db.prepare<[string, string, string], { etag: string }>('SELECT etag FROM etag_index WHERE bucket = ? AND key = ? AND upstream_etag = ?'),
      // Every (key, upstream ETag) of a listing page as one JSON array, so one
      // statement, prepared once, serves any page size (json_each,
      // https://www.sqlite.org/json1.html#jeach). CROSS JOIN keeps the pairs
      // the outer loop (https://www.sqlite.org/optoverview.html#crossjoin):
      // each is one primary-key probe; a plain JOIN was planned as a scan of
      // the bucket's whole index.
      getIndexMany: this.db.prepare<[string, string], { i: number; etag: string }>(
        "SELECT p.key AS i, e.etag AS etag FROM json_each(?) AS p CROSS JOIN etag_index AS e ON e.bucket = ? AND e.key = json_extract(p.value, '$[0]') AND e.upstream_etag = json_extract(p.value, '$[1]')",
      ),
      putIndex: this.db.prepare('INSERT OR REPLACE INTO etag_index (bucket, key, upstream_etag, etag, at) VALUES (?, ?, ?, ?, ?)'),
      putPart: this.db.prepare('INSERT OR REPLACE INTO part_digests_by_md5 (upload_id, part_number, md5, sha256, size, checksum, at) VALUES (?, ?, ?, ?, ?, ?, ?)'),
      getParts: this.db.prepare<[string], { part_number: number; sha256: string; md5: string; size: number; checksum: string | null }>('SELECT part_number, sha256, md5, size, checksum FROM part_digests_by_md5 WHERE upload_id = ? ORDER BY part_number, rowid'),
      deleteParts: this.db.prepare('DELETE FROM part_digests_by_md5 WHERE upload_id = ?'),
      putSession: this.db.prepare('INSERT OR REPLACE INTO sessions (access_key, record, keep_until) VALUES (?, ?, ?)'),
      getSession: this.db.prepare<[string, number], { record: string }>('SELECT record FROM sessions WHERE access_key = ? AND keep_until >= ?'),
      getReminderCursor: this.db.prepare<[string, number], { cursor: string }>('SELECT cursor FROM reminder_cursors WHERE agent = ? AND at >= ?'),
      putReminderCursor: this.db.prepare('INSERT OR REPLACE INTO reminder_cursors (agent, cursor, at) VALUES (?, ?, ?)'),
    };
    this.stampsOnly = this.db.transaction((stamps: PendingStamps) => this.writeStamps(stamps));
    this.seq = (this.db.prepare('SELECT MAX(seq) AS seq FROM stamps').get() as { seq: number | null }).seq ?? 0;
    const newest = this.db.prepare('SELECT MAX(id) AS id, MAX(at) AS at FROM write_log').get() as { id: number | null; at: number | null };
    this.recent = new RecentLog(newest.id ?? 0, newest.at ?? -Infinity);
    this.prune();
    this.timer = setInterval(() => this.prune(), 60_000);
    this.timer.unref();
  }

  private prune(): void {
    this.logVersion++;
    this.prunedAt = ++this.stampChanges;
    const cutoff = Date.now() - this.limits.ttlMs;
    const cap = this.limits.maxEntries;
    this.db.transaction(() => {
      // The cap counts every stamp: those still in memory first.
      this.writeStamps(this.takeStamps());
      this.db.prepare('DELETE FROM stamps WHERE at < ?').run(cutoff);
      this.db.prepare('DELETE FROM write_log WHERE at < ?').run(cutoff);
      this.db.prepare('DELETE FROM etag_index WHERE at < ?').run(cutoff);
      this.db.prepare('DELETE FROM part_digests_by_md5 WHERE at < ?').run(cutoff);
      this.db.prepare('DELETE FROM sessions WHERE keep_until < ?').run(Date.now());
      this.db.prepare('DELETE FROM console_revocations WHERE until < ?').run(Date.now());
      this.db.prepare('DELETE FROM oauth_grants WHERE expires_at < ?').run(Date.now());
      this.db.prepare('DELETE FROM reminder_cursors WHERE at < ?').run(cutoff);
      this.db.prepare('DELETE FROM sessions WHERE access_key IN (SELECT access_key FROM sessions ORDER BY keep_until DESC LIMIT -1 OFFSET ?)').run(cap);
      this.db.prepare('DELETE FROM stamps WHERE (agent, bucket, key) IN (SELECT agent, bucket, key FROM stamps ORDER BY seq DESC LIMIT -1 OFFSET ?)').run(cap);
      const newestId = (this.db.prepare('SELECT MAX(id) AS id FROM write_log').get() as { id: number | null }).id ?? 0;
      this.lastPrune = { cutoff, deletedUpTo: newestId - cap };
      this.db.prepare('DELETE FROM write_log WHERE id <= ?').run(newestId - cap);
      this.db.prepare('DELETE FROM etag_index WHERE (bucket, key, upstream_etag) IN (SELECT bucket, key, upstream_etag FROM etag_index ORDER BY at DESC LIMIT -1 OFFSET ?)').run(cap);
    })();
    this.prunes++;
    this.recent.pruned(this.lastPrune.cutoff, this.lastPrune.deletedUpTo);
  }

  private live(row: StampRow | undefined): ReadStamp | undefined {
    return row && Date.now() - row.at <= this.limits.ttlMs ? toStamp(row) : undefined;
  }

  private put(agent: string, bucket: string, key: string, s: ReadStamp): void {
    // As a statement on a closed database would: nothing would ever write it.
    if (this.closed) throw new Error('The database connection is not open.');
    const id = stampId(agent, bucket, key);
    // Re-inserted, so the map iterates in the order the stamps were set.
    this.pendingStamps.delete(id);
    this.pendingStamps.set(id, { agent, bucket, key, stamp: s, seq: ++this.seq });
    this.stampChanged(id);
    this.scheduleFlush();
    this.counted();
  }

  /** The stamps in memory, now the caller's to write (inside a transaction: writeStamps). */
  private takeStamps(): PendingStamps {
    const stamps = this.pendingStamps;
    this.pendingStamps = new Map();
    return stamps;
  }

  private writeStamps(stamps: PendingStamps): void {
    for (const p of stamps.values()) this.q.putStamp.run(p.agent, p.bucket, p.key, p.stamp.etag, p.stamp.size, p.stamp.full ? 1 : 0, JSON.stringify(p.stamp.covered), p.stamp.at, p.seq);
  }

  /** The stamp as set, in memory or in the table. */
  private current(agent: string, bucket: string, key: string): ReadStamp | undefined {
    const pending = this.pendingStamps.get(stampId(agent, bucket, key));
    if (pending) return this.liveStamp(pending.stamp);
    return this.live(this.q.getStamp.get(agent, bucket, key));
  }

  private liveStamp(s: ReadStamp): ReadStamp | undefined {
    return Date.now() - s.at <= this.limits.ttlMs ? s : undefined;
  }

  /** Prunes after every `slack` writes, so the store exceeds its cap by at most that many entries. */
  private counted(): void {
    const slack = Math.max(1, Math.min(1000, Math.floor(this.limits.maxEntries / 10)));
    if (++this.writes >= slack) {
      this.writes = 0;
      this.prune();
    }
  }

  async recordRead(agent: string, bucket: string, key: string, read: ReadEvent): Promise<ReadStamp> {
    // A whole read replaces the stamp whatever it held; a part is merged with
    // it, read and set in one synchronous step (this process owns the file).
    const stamp = readsWhole(read) ? fullStamp(read.etag, read.size, Date.now()) : mergeRead(this.current(agent, bucket, key), read, Date.now());
    this.put(agent, bucket, key, stamp);
    return stamp;
  }

  async recordWrite(agent: string, bucket: string, key: string, etag: string, size: number): Promise<void> {
    this.put(agent, bucket, key, fullStamp(etag, size, Date.now()));
  }

  async getStamp(agent: string, bucket: string, key: string): Promise<ReadStamp | undefined> {
    return this.current(agent, bucket, key);
  }

  private stampChanged(id: string): void {
    const n = ++this.stampChanges;
    const slot = n % STAMP_CHANGES;
    // The change this one pushes out of the ring: forgotten unless its stamp changed again since.
    const out = this.changedStamps[slot];
    if (out !== undefined && this.lastChangeOf.get(out) === n - STAMP_CHANGES) this.lastChangeOf.delete(out);
    this.changedStamps[slot] = id;
    this.lastChangeOf.set(id, n);
  }

  /**
   * One process per data directory holds this file (backends/fs/schema.ts), so
   * every stamp change goes through put, forgetStamp or prune here.
   */
  async stampMark(): Promise<number> {
    return this.stampChanges;
  }

  async stampsChangedSince(mark: number, agent: string, keys: ReadonlyArray<{ bucket: string; key: string }>): Promise<boolean> {
    if (this.stampChanges - mark >= STAMP_CHANGES || this.prunedAt > mark) return true;
    // Every change after the mark is among the ring's, so lastChangeOf holds its stamp's latest.
    // (Scanning the changes since the mark instead cost every look all the reads of the last second: 30 µs per read_text_file at c=8.)
    return keys.some((k) => (this.lastChangeOf.get(stampId(agent, k.bucket, k.key)) ?? 0) > mark);
  }

  async getStamps(agent: string, keys: ReadonlyArray<{ bucket: string; key: string }>): Promise<Array<ReadStamp | undefined>> {
    const out: Array<ReadStamp | undefined> = keys.map(() => undefined);
    const asked: number[] = [];
    for (const [i, k] of keys.entries()) {
      const pending = this.pendingStamps.get(stampId(agent, k.bucket, k.key));
      if (pending) out[i] = this.liveStamp(pending.stamp);
      else asked.push(i);
    }
    if (asked.length === 0) return out;
    for (const row of this.q.getStamps.all(JSON.stringify(asked.map((i) => [keys[i]!.bucket, keys[i]!.key])), agent)) out[asked[row.i]!] = this.live(row);
    return out;
  }

  async listStamps(agent: string): Promise<StampEntry[]> {
    // In the table's order (its collation, not JavaScript's): the stamps in memory go there first.
    if (this.pendingStamps.size > 0) this.stampsOnly(this.takeStamps());
    return this.q.listStamps.all(agent, Date.now() - this.limits.ttlMs).map((row) => ({ bucket: row.bucket, key: row.key, stamp: toStamp(row) }));
  }

  /**
   * At once, not at the turn's end: a forgotten stamp that a crash brought
   * back would entitle a write its agent no longer holds (a stamp set and
   * lost only refuses one).
   */
  async forgetStamp(agent: string, bucket: string, key: string): Promise<void> {
    const id = stampId(agent, bucket, key);
    this.pendingStamps.delete(id);
    this.q.forget.run(agent, bucket, key);
    this.stampChanged(id);
  }

  /**
   * Write-log, ETag index entries and stamps are batched: one transaction per
   * event-loop turn rather than one per write (a separate autocommit INSERT
   * was ~9% of a small PUT, measured with --cpu-prof). A crash can lose the
   * entries of that one turn: the objects themselves are committed by the
   * backend before this runs, a lost index entry is re-derived from the
   * object on its next read (backends/s3/etags.ts), and a lost stamp refuses
   * a write its read would have allowed (the agent reads again), never the
   * other way round (forgetStamp is not batched).
   *
   * `withStamps` false (listWriteLog, which needs only the log in the table):
   * stamps alone do not make a transaction, so a read's stamp is not
   * written before its answer by a look at the log.
   */
  private flushLog(withStamps = true): void {
    if (this.pendingLog.length === 0 && this.pendingIndex.size === 0 && (!withStamps || this.pendingStamps.size === 0)) return;
    const batch = this.pendingLog;
    const index = this.pendingIndex;
    const stamps = this.takeStamps();
    if (batch.length === 0 && index.size === 0) {
      // A turn of reads: their stamps alone, and one stamp is one statement, atomic on its own.
      if (stamps.size === 1) this.writeStamps(stamps);
      else this.stampsOnly(stamps);
      return;
    }
    this.pendingLog = [];
    this.pendingIndex = new Map();
    const added: number[] = [];
    const prunes = this.prunes;
    try {
      this.db.transaction(() => {
        for (const e of batch) {
          const row = this.q.appendLog.run(e.at.getTime(), e.bucket, e.key, e.operation, e.agent ?? null, e.accessKey ?? null, e.previousETag ?? null, e.newETag ?? null, e.invocationId ?? null, e.versionId ?? null, e.changeset ?? null);
          added.push(Number(row.lastInsertRowid));
          this.counted();
        }
        for (const i of index.values()) this.q.putIndex.run(i.bucket, i.key, i.upstreamETag, i.etag, i.at);
        this.writeStamps(stamps);
      })();
    } catch (e) {
      // Rolled back, a prune inside it too: what the memory holds is no longer known to be the table's.
      this.recent = new RecentLog(Infinity, Infinity);
      throw e;
    }
    for (const [i, e] of batch.entries()) this.recent.add(added[i]!, logEntry(added[i]!, e, e.at.getTime()));
    // A prune inside this transaction ran before these entries were in memory: it may have deleted some.
    if (this.prunes !== prunes) this.recent.pruned(this.lastPrune.cutoff, this.lastPrune.deletedUpTo);
  }

  private scheduleFlush(): void {
    this.flushing ??= setImmediate(() => {
      this.flushing = undefined;
      // Off the request path, a failing disk must not crash the process:
      // the entries of this turn are lost (the objects are already committed).
      try {
        this.flushLog();
      } catch (e) {
        process.emitWarning(`casket: write-log, ETag index entries and read stamps lost: ${(e as Error).message}`);
      }
    });
  }

  async appendWriteLog(e: WriteLogEntry): Promise<void> {
    this.logVersion++;
    this.pendingLog.push(e);
    this.scheduleFlush();
  }

  async listWriteLog(q: WriteLogQuery): Promise<WriteLogEntry[]> {
    this.flushLog(false);
    if (q.bucket === undefined && q.key === undefined && q.agent === undefined && q.prefix === undefined && q.before === undefined && q.until === undefined) {
      const kept = this.recent.newestSince(Math.max(Date.now() - this.limits.ttlMs, q.since?.getTime() ?? -Infinity), q.limit);
      if (kept) return kept;
    }
    const where: string[] = ['at >= ?'];
    const args: Array<string | number> = [Date.now() - this.limits.ttlMs];
    if (q.bucket !== undefined) (where.push('bucket = ?'), args.push(q.bucket));
    if (q.key !== undefined) (where.push('key = ?'), args.push(q.key));
    if (q.agent !== undefined) (where.push('agent = ?'), args.push(q.agent));
    // substr, not LIKE: a key may hold % and _; SQLite counts characters, as the spread does.
    if (q.prefix !== undefined) (where.push('substr(key, 1, ?) = ?'), args.push([...q.prefix].length, q.prefix));
    if (q.before !== undefined) (where.push('id < ?'), args.push(Number(q.before)));
    if (q.since !== undefined) (where.push('at >= ?'), args.push(q.since.getTime()));
    if (q.until !== undefined) (where.push('at <= ?'), args.push(q.until.getTime()));
    const sql = `SELECT id, at, bucket, key, operation, agent, access_key AS accessKey, previous_etag AS previousETag, new_etag AS newETag, invocation_id AS invocationId, version_id AS versionId, changeset FROM write_log WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT ?`;
    let statement = this.logQueries.get(sql);
    if (!statement) this.logQueries.set(sql, (statement = this.db.prepare<Array<string | number>, LogRow>(sql)));
    const rows = statement.all(...args, q.limit);
    return rows.map((r) => logEntry(r.id, r, r.at));
  }

  /**
   * One process per data directory holds this file (backends/fs/schema.ts
   * refuses a second), so every append goes through this object: the
   * version changes whenever the log may have.
   */
  async writeLogVersion(): Promise<number> {
    return this.logVersion;
  }

  async lastWrite(bucket: string, key: string): Promise<WriteLogEntry | undefined> {
    // write_log_key indexes (bucket, key) and, implicitly, id: one index probe.
    const [last] = await this.listWriteLog({ bucket, key, limit: 1 });
    if (!last) return undefined;
    const { cursor: _, ...entry } = last;
    return entry;
  }

  async getIndexedETag(bucket: string, key: string, upstreamETag: string): Promise<string | undefined> {
    return this.pendingIndex.get(indexId(bucket, key, upstreamETag))?.etag ?? this.q.getIndex.get(bucket, key, upstreamETag)?.etag;
  }

  async getIndexedETags(bucket: string, entries: ReadonlyArray<readonly [key: string, upstreamETag: string]>): Promise<Array<string | undefined>> {
    const out: Array<string | undefined> = entries.map(([key, upstreamETag]) => this.pendingIndex.get(indexId(bucket, key, upstreamETag))?.etag);
    const asked = entries.flatMap((e, i) => (out[i] === undefined ? [i] : []));
    if (asked.length === 0) return out;
    for (const row of this.q.getIndexMany.all(JSON.stringify(asked.map((i) => entries[i])), bucket)) out[asked[row.i]!] = row.etag;
    return out;
  }

  async putIndexedETag(bucket: string, key: string, upstreamETag: string, etag: string): Promise<void> {
    this.pendingIndex.set(indexId(bucket, key, upstreamETag), { bucket, key, upstreamETag, etag, at: Date.now() });
    this.scheduleFlush();
  }

  async putPartDigest(uploadId: string, p: PartDigest): Promise<void> {
    this.q.putPart.run(uploadId, p.partNumber, p.md5, p.sha256, p.size, p.checksum ?? null, Date.now());
  }

  async getPartDigests(uploadId: string): Promise<PartDigest[]> {
    return this.q.getParts.all(uploadId).map((r) => ({ partNumber: r.part_number, sha256: r.sha256, md5: r.md5, size: r.size, ...(r.checksum !== null && { checksum: r.checksum }) }));
  }

  async deletePartDigests(uploadId: string): Promise<void> {
    this.q.deleteParts.run(uploadId);
  }

  async getReminderCursor(agent: string): Promise<string | undefined> {
    return this.q.getReminderCursor.get(agent, Date.now() - this.limits.ttlMs)?.cursor;
  }

  async putReminderCursor(agent: string, cursor: string): Promise<void> {
    this.q.putReminderCursor.run(agent, cursor, Date.now());
  }

  async putSession(session: SessionRecord): Promise<void> {
    this.q.putSession.run(session.accessKeyId, JSON.stringify(session), session.expiresAt + SESSION_GRACE_MS);
  }

  async getSession(accessKeyId: string): Promise<SessionRecord | undefined> {
    const row = this.q.getSession.get(accessKeyId, Date.now());
    return row ? (JSON.parse(row.record) as SessionRecord) : undefined;
  }

  async listSessions(agent: string): Promise<SessionRecord[]> {
    // Sessions are few (bounded by their expiry and maxEntries): the records are read and filtered here.
    const rows = this.db.prepare<[string, number], { record: string }>("SELECT record FROM sessions WHERE json_extract(record, '$.agent') = ? AND keep_until >= ? ORDER BY keep_until").all(agent, Date.now());
    return rows.map((r) => JSON.parse(r.record) as SessionRecord);
  }

  async revokeConsoleSession(id: string, untilMs: number): Promise<void> {
    this.db.prepare('INSERT OR REPLACE INTO console_revocations (id, until) VALUES (?, ?)').run(id, untilMs);
  }

  async consoleSessionRevoked(id: string): Promise<boolean> {
    return this.db.prepare<[string, number], { id: string }>('SELECT id FROM console_revocations WHERE id = ? AND until >= ?').get(id, Date.now()) !== undefined;
  }

  async revokeSession(accessKeyId: string): Promise<boolean> {
    return this.db.transaction(() => {
      const row = this.q.getSession.get(accessKeyId, Date.now());
      if (!row) return false;
      const s = JSON.parse(row.record) as SessionRecord;
      this.q.putSession.run(accessKeyId, JSON.stringify({ ...s, revoked: true }), s.expiresAt + SESSION_GRACE_MS);
      return true;
    }).immediate();
  }

  async putOAuthGrant(grant: OAuthGrant): Promise<void> {
    this.db.prepare('INSERT OR REPLACE INTO oauth_grants (id, record, expires_at) VALUES (?, ?, ?)').run(grant.id, JSON.stringify(grant), grant.expiresAt);
  }

  async getOAuthGrant(id: string): Promise<OAuthGrant | undefined> {
    const row = this.db.prepare<[string, number], { record: string }>('SELECT record FROM oauth_grants WHERE id = ? AND expires_at >= ?').get(id, Date.now());
    return row ? (JSON.parse(row.record) as OAuthGrant) : undefined;
  }

  async listOAuthGrants(): Promise<OAuthGrant[]> {
    return this.db.prepare<[number], { record: string }>('SELECT record FROM oauth_grants WHERE expires_at >= ? ORDER BY id').all(Date.now()).map((r) => JSON.parse(r.record) as OAuthGrant);
  }

  async deleteOAuthGrant(id: string): Promise<boolean> {
    return this.db.prepare('DELETE FROM oauth_grants WHERE id = ?').run(id).changes > 0;
  }

  async swapOAuthSecret(id: string, expected: string, next: string, usedAt: number, expiresAt: number): Promise<boolean> {
    return this.db.transaction(() => {
      const row = this.db.prepare<[string, number], { record: string }>('SELECT record FROM oauth_grants WHERE id = ? AND expires_at >= ?').get(id, Date.now());
      if (!row) return false;
      const g = JSON.parse(row.record) as OAuthGrant;
      if (g.secretHash !== expected) return false;
      const updated: OAuthGrant = { ...g, secretHash: next, pendingCode: false, lastUsedAt: usedAt, expiresAt };
      this.db.prepare('UPDATE oauth_grants SET record = ?, expires_at = ? WHERE id = ?').run(JSON.stringify(updated), expiresAt, id);
      return true;
    }).immediate();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.flushLog();
    clearInterval(this.timer);
    this.db.close();
  }
}

function indexId(bucket: string, key: string, upstreamETag: string): string {
  return `${bucket}\0${key}\0${upstreamETag}`;
}
