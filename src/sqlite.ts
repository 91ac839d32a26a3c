/**
 * One SQLite API for every Node.js line casket runs on (20, 22, 24).
 *
 * better-sqlite3 12 — the last line that supports Node 20 — aborts the
 * process on Node 24.19 and later: its Statement and Database derive from
 * node::ObjectWrap, whose destructor now asserts an entered Environment, and
 * a statement finalised by an idle-time GC has none ("Assertion failed:
 * (env) != nullptr" in RemoveEnvironmentCleanupHook; measured here on Node
 * 24.21 with better-sqlite3 12.11.1). better-sqlite3 13 fixes it but needs
 * Node 22. So casket uses Node's built-in `node:sqlite` (DatabaseSync) where
 * it exists without a flag and reads text whole (24; see loadNodeSqlite) and
 * better-sqlite3 on older lines (20, 22). Both are synchronous, so a
 * precondition check and its commit stay one step on the event loop.
 *
 * The API is the subset casket uses, shaped like better-sqlite3's: prepare
 * (run/get/all/iterate with positional or @named parameters), exec, pragma,
 * transaction (nested ones become savepoints; `.immediate` takes the write
 * lock first), close. BLOBs come back as Buffers from both drivers.
 */
import { createRequire } from 'node:module';

export interface RunResult {
  changes: number | bigint;
  lastInsertRowid: number | bigint;
}

export interface Statement<P extends unknown[] = unknown[], R = unknown> {
  run(...params: P): RunResult;
  get(...params: P): R | undefined;
  all(...params: P): R[];
  iterate(...params: P): IterableIterator<R>;
}

type AnyFunction = (...args: any[]) => any;

export interface Transaction<F extends AnyFunction> {
  (...args: Parameters<F>): ReturnType<F>;
  /** BEGIN IMMEDIATE: take the write lock before the first read. */
  immediate(...args: Parameters<F>): ReturnType<F>;
}

export interface Database {
  readonly driver: 'node:sqlite' | 'better-sqlite3';
  prepare<P extends unknown[] = unknown[], R = unknown>(sql: string): Statement<P, R>;
  exec(sql: string): void;
  /** `PRAGMA source`: the rows, or with `simple` the first column of the first row. */
  pragma(source: string, options?: { simple?: boolean }): unknown;
  transaction<F extends AnyFunction>(fn: F): Transaction<F>;
  close(): void;
}

/** SQLite's "database is locked", whichever driver raised it. */
export function isBusy(error: unknown): boolean {
  const e = error as { code?: string; errcode?: number };
  return e.code === 'SQLITE_BUSY' || (e.errcode !== undefined && (e.errcode & 0xff) === 5);
}

const require = createRequire(import.meta.url);

interface NodeSqliteStatement {
  run(...params: unknown[]): RunResult;
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  iterate(...params: unknown[]): IterableIterator<unknown>;
}

interface NodeSqliteDatabase {
  prepare(sql: string): NodeSqliteStatement;
  exec(sql: string): void;
  close(): void;
}

type NodeSqlite = { DatabaseSync: new (path: string) => NodeSqliteDatabase };

function loadNodeSqlite(options: { acceptCutText?: boolean } = {}): NodeSqlite | undefined {
  try {
    const mod = require('node:sqlite') as NodeSqlite;
    const probe = new mod.DatabaseSync(':memory:');
    // StatementSync.iterate arrived in 22.13 / 23.4: older builds fall back.
    // Node 22's build (22.23 measured) reads TEXT up to its first U+0000, so
    // an S3 key holding one ('a\0x', which S3 accepts) would be listed as
    // 'a'; Node 24's reads it whole. A build that cuts text falls back too.
    const ok =
      typeof probe.prepare('SELECT 1').iterate === 'function' &&
      (options.acceptCutText === true || (probe.prepare("SELECT 'a' || char(0) || 'b' AS t").get() as { t: string }).t === 'a\u0000b');
    probe.close();
    return ok ? mod : undefined;
  } catch {
    return undefined;
  }
}

/** node:sqlite returns BLOBs as Uint8Array; casket's code (like better-sqlite3) works with Buffers. */
function withBuffers<R>(row: unknown): R {
  if (row === undefined || row === null || typeof row !== 'object') return row as R;
  const r = row as Record<string, unknown>;
  for (const name in r) {
    const v = r[name];
    if (v instanceof Uint8Array && !Buffer.isBuffer(v)) r[name] = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  }
  return row as R;
}

class NodeSqliteAdapter implements Database {
  readonly driver = 'node:sqlite' as const;
  private depth = 0;
  private readonly control;

  constructor(private readonly db: NodeSqliteDatabase) {
    this.control = {
      begin: db.prepare('BEGIN'),
      beginImmediate: db.prepare('BEGIN IMMEDIATE'),
      commit: db.prepare('COMMIT'),
      rollback: db.prepare('ROLLBACK'),
    };
  }

  prepare<P extends unknown[] = unknown[], R = unknown>(sql: string): Statement<P, R> {
    const s = this.db.prepare(sql);
    return {
      run: (...params: P) => s.run(...params),
      get: (...params: P) => withBuffers<R | undefined>(s.get(...params)),
      all: (...params: P) => s.all(...params).map((row) => withBuffers<R>(row)),
      *iterate(...params: P) {
        for (const row of s.iterate(...params)) yield withBuffers<R>(row);
      },
    };
  }

  exec(sql: string): void {
    this.db.exec(sql);
  }

  pragma(source: string, options: { simple?: boolean } = {}): unknown {
    const rows = this.db.prepare(`PRAGMA ${source}`).all() as Array<Record<string, unknown>>;
    if (!options.simple) return rows;
    const first = rows[0];
    return first === undefined ? undefined : Object.values(first)[0];
  }

  transaction<F extends AnyFunction>(fn: F): Transaction<F> {
    const run = (immediate: boolean) => (...args: Parameters<F>): ReturnType<F> => {
      const outer = this.depth === 0;
      const savepoint = `casket_${this.depth}`;
      if (outer) (immediate ? this.control.beginImmediate : this.control.begin).run();
      else this.db.exec(`SAVEPOINT ${savepoint}`);
      this.depth++;
      try {
        const result = fn(...args) as ReturnType<F>;
        this.depth--;
        if (outer) this.control.commit.run();
        else this.db.exec(`RELEASE ${savepoint}`);
        return result;
      } catch (error) {
        this.depth--;
        if (outer) this.control.rollback.run();
        else this.db.exec(`ROLLBACK TO ${savepoint}; RELEASE ${savepoint}`);
        throw error;
      }
    };
    return Object.assign(run(false), { immediate: run(true) });
  }

  private closed = false;

  /** A second close is a no-op, as in better-sqlite3 (node:sqlite throws "database is not open"). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
  }
}

let nodeSqlite: NodeSqlite | undefined | null = null;

export function openSqlite(path: string): Database {
  if (nodeSqlite === null) nodeSqlite = loadNodeSqlite();
  if (nodeSqlite) return new NodeSqliteAdapter(new nodeSqlite.DatabaseSync(path));
  // Node 20 and 22: better-sqlite3, whose API this interface mirrors.
  try {
    const BetterSqlite3 = require('better-sqlite3') as new (path: string) => Omit<Database, 'driver'>;
    return Object.assign(new BetterSqlite3(path), { driver: 'better-sqlite3' as const }) as Database;
  } catch (error) {
    // Not installed (npm ci --omit=optional), or built for another Node.js: on Node 22, node:sqlite still serves, but for keys holding U+0000.
    const code = (error as { code?: string }).code;
    const cutting = code === 'MODULE_NOT_FOUND' || code === 'ERR_DLOPEN_FAILED' ? loadNodeSqlite({ acceptCutText: true }) : undefined;
    if (!cutting) throw error;
    process.emitWarning('better-sqlite3 could not be loaded, so casket uses node:sqlite, which on this Node.js lists a key holding U+0000 only up to it: install better-sqlite3 for this Node.js, or run Node.js 24.', { code: 'CASKET_SQLITE_CUTS_TEXT' });
    nodeSqlite = cutting;
    return new NodeSqliteAdapter(new cutting.DatabaseSync(path));
  }
}
