/**
 * The event log of `--state sqlite` (log.ts): `events.db` in the data dir,
 * its own file so the state store's schema and locks stay as they are. Ids
 * are SQLite's AUTOINCREMENT rowids — never reused, so a cursor kept across
 * a restart still names the same place. Webhook cursors live beside the
 * events, so a restarted casket resumes each target where it stopped.
 */
import { openSqlite, type Database, type Statement } from '../sqlite.js';
import { AppendSignal, integerSequencer, MAX_EVENTS, type EventLog, type EventPage } from './log.js';
import { LoggedEvent, type StoredRecord } from './record.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, record TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS webhook_cursors (target TEXT PRIMARY KEY, id TEXT NOT NULL);
`;

/** Pruned once per this many appends: a DELETE per write would cost every write. */
const PRUNE_EVERY = 512;

export class SqliteEventLog implements EventLog {
  private readonly db: Database;
  private readonly signal = new AppendSignal();
  private readonly insert: Statement<[number, string]>;
  private readonly page: Statement<[number, number], { id: number; record: string }>;
  private readonly sequence: Statement<[], { seq: number }>;
  private readonly oldest: Statement<[], { id: number | null }>;
  private appended = 0;
  private pending: Array<[number, string]> = [];
  private flushed: Promise<void> | undefined;
  private readonly insertAll: (rows: Array<[number, string]>) => void;

  constructor(path: string, private readonly ttlMs: number, private readonly maxEvents = MAX_EVENTS) {
    this.db = openSqlite(path);
    this.db.pragma('journal_mode = WAL');
    // As the state store: a process crash loses nothing; an OS crash may lose the last events.
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('busy_timeout = 5000');
    this.db.exec(SCHEMA);
    this.insert = this.db.prepare('INSERT INTO events (at, record) VALUES (?, ?)');
    this.insertAll = this.db.transaction((rows: Array<[number, string]>) => {
      for (const [at, json] of rows) this.insert.run(at, json);
    });
    this.page = this.db.prepare('SELECT id, record FROM events WHERE id > ? ORDER BY id LIMIT ?');
    this.sequence = this.db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'events'");
    this.oldest = this.db.prepare('SELECT min(id) AS id FROM events');
    this.prune();
  }

  /**
   * Appends made in one turn of the event loop go in one transaction, after
   * it (a transaction each cost ~27 µs of CPU, most of a write's event;
   * concurrent writes share one). The promise resolves once the event is
   * in the database, so a write is answered only after its event is kept.
   */
  append(record: StoredRecord): Promise<void> {
    this.pending.push([Date.now(), JSON.stringify(record)]);
    this.flushed ??= new Promise<void>((resolve, reject) =>
      setImmediate(() => {
        const rows = this.pending;
        this.pending = [];
        this.flushed = undefined;
        try {
          this.insertAll(rows);
          resolve();
        } catch (e) {
          reject(e);
          return;
        }
        this.appended += rows.length;
        if (this.appended >= PRUNE_EVERY) {
          this.appended = 0;
          this.prune();
        }
        this.signal.emit();
      }),
    );
    return this.flushed;
  }

  /**
   * Forgets past the cap (a range of the primary key) and past the TTL
   * among the oldest rows only: `at` grows with the id and has no index, so
   * a condition on it alone would scan the whole table (up to 100,000 rows)
   * on the write path, once per PRUNE_EVERY appends.
   */
  private prune(): void {
    this.db.prepare('DELETE FROM events WHERE id <= ?').run(this.newest() - this.maxEvents);
    this.db.prepare('DELETE FROM events WHERE id IN (SELECT id FROM events ORDER BY id LIMIT ?) AND at < ?').run(PRUNE_EVERY * 2, Date.now() - this.ttlMs);
  }

  /** The highest id ever given (AUTOINCREMENT keeps it in sqlite_sequence even when the rows are gone). */
  private newest(): number {
    return this.sequence.get()?.seq ?? 0;
  }

  async read(after: string, limit: number): Promise<EventPage> {
    const cursor = Number(after);
    const newest = this.newest();
    const oldest = this.oldest.get()?.id ?? newest + 1;
    const lost = cursor + 1 < oldest || cursor > newest;
    const events = this.page.all(cursor, limit).map((row) => new LoggedEvent(String(row.id), row.record, integerSequencer(row.id)));
    return { events, lost };
  }

  async head(): Promise<string> {
    return String(this.newest());
  }

  validId(id: string): boolean {
    return /^\d{1,15}$/.test(id);
  }

  onAppend(listener: () => void): () => void {
    return this.signal.on(listener);
  }

  async getCursor(target: string): Promise<string | undefined> {
    return this.db.prepare<[string], { id: string }>('SELECT id FROM webhook_cursors WHERE target = ?').get(target)?.id;
  }

  async setCursor(target: string, id: string): Promise<void> {
    this.db.prepare('INSERT INTO webhook_cursors (target, id) VALUES (?, ?) ON CONFLICT (target) DO UPDATE SET id = excluded.id').run(target, id);
  }

  /** One casket owns its data dir: the lease is always its own. */
  async lease(): Promise<boolean> {
    return true;
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
