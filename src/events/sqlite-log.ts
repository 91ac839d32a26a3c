/**
 * The event log of `--state sqlite` (log.ts): `events.db` in the data dir,
 * its own file so the state store's schema and locks stay as they are. Ids
 * are SQLite's AUTOINCREMENT rowids — never reused, so a cursor kept across
 * a restart still names the same place. Webhook cursors live beside the
 * events, so a restarted casket resumes each target where it stopped.
 */
import { openSqlite, type Database, type Statement } from '../sqlite.js';
import { AppendSignal, integerSequencer, MAX_EVENTS, type EventLog, type EventPage } from './log.js';
import { withSequencer, type StoredRecord } from './record.js';

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
  private appended = 0;

  constructor(path: string, private readonly ttlMs: number, private readonly maxEvents = MAX_EVENTS) {
    this.db = openSqlite(path);
    this.db.pragma('journal_mode = WAL');
    // As the state store: a process crash loses nothing; an OS crash may lose the last events.
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('busy_timeout = 5000');
    this.db.exec(SCHEMA);
    this.insert = this.db.prepare('INSERT INTO events (at, record) VALUES (?, ?)');
    this.page = this.db.prepare('SELECT id, record FROM events WHERE id > ? ORDER BY id LIMIT ?');
    this.prune();
  }

  async append(record: StoredRecord): Promise<void> {
    this.insert.run(Date.now(), JSON.stringify(record));
    if (++this.appended % PRUNE_EVERY === 0) this.prune();
    this.signal.emit();
  }

  private prune(): void {
    const newest = this.newest();
    this.db.prepare('DELETE FROM events WHERE id <= ? OR at < ?').run(newest - this.maxEvents, Date.now() - this.ttlMs);
  }

  /** The highest id ever given (AUTOINCREMENT keeps it in sqlite_sequence even when the rows are gone). */
  private newest(): number {
    const row = this.db.prepare<[], { seq: number }>("SELECT seq FROM sqlite_sequence WHERE name = 'events'").get();
    return row?.seq ?? 0;
  }

  async read(after: string, limit: number): Promise<EventPage> {
    const cursor = Number(after);
    const newest = this.newest();
    const oldestRow = this.db.prepare<[], { id: number }>('SELECT min(id) AS id FROM events').get();
    const oldest = oldestRow?.id ?? newest + 1;
    const lost = cursor + 1 < oldest || cursor > newest;
    if (cursor > newest) return { events: [], lost };
    const events = this.page.all(cursor, limit).map((row) => ({ id: String(row.id), record: withSequencer(JSON.parse(row.record) as StoredRecord, integerSequencer(row.id)) }));
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
