/**
 * The SQLite store answers "the newest writes since an instant" from the
 * entries it keeps in memory (src/state/recent-log.ts) — and must answer
 * exactly what its table holds: appends a little out of time order, prunes
 * by age and by count (some inside the very flush that appended), a store
 * reopened on a log it did not write, and more entries than it keeps.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { RecentLog } from '../../src/state/recent-log.js';
import { SqliteStateStore } from '../../src/state/sqlite.js';
import type { WriteLogEntry } from '../../src/state/types.js';

const dir = mkdtempSync(join(tmpdir(), 'casket-recent-log-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A seeded generator: the same run every time. */
function random(seed: number): () => number {
  let s = seed;
  return () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
}

/** The table's own answer, read through another connection. */
function fromTable(path: string, floor: number, limit: number): string[] {
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare('SELECT id FROM write_log WHERE at >= ? ORDER BY id DESC LIMIT ?').all(floor, limit) as Array<{ id: number }>).map((r) => String(r.id));
  } finally {
    db.close();
  }
}

describe('the write log kept in memory', () => {
  // [what, limits, appends, chance that a turn ends after an append (a flush)]
  it.each([
    ['prunes by count every few appends', { ttlMs: 3_600_000, maxEntries: 40 }, 1200, 0.3],
    ['a prune inside a flush of more entries than the log keeps', { ttlMs: 3_600_000, maxEntries: 5 }, 400, 0.05],
    ['more entries than it keeps, and a reopened store', { ttlMs: 3_600_000, maxEntries: 100_000 }, 1500, 0.3],
    ['entries aging out', { ttlMs: 30_000, maxEntries: 100_000 }, 800, 0.3],
  ])('answers as the table: %s', async (_name, limits, appends, flushChance) => {
    const path = join(dir, `${randomBytes(4).toString('hex')}.db`);
    const next = random(appends);
    // Entries from a minute ago (or, with a short TTL, from just past it) up to about now.
    const start = Date.now() - Math.min(60_000, limits.ttlMs + 5_000);
    let clock = start;
    let store = new SqliteStateStore(path, limits);
    let compared = 0;
    let answered = 0;
    let fromMemory = 0;
    try {
      for (let i = 0; i < appends; i++) {
        // About time order: each entry up to 2 s before or after the last one.
        clock += Math.floor(next() * 100);
        const at = new Date(clock + Math.floor((next() - 0.5) * 4000));
        await store.appendWriteLog({ at, bucket: 'b', key: `k${i % 37}`, operation: 'PutObject', agent: `a${i % 3}`, newETag: `e${i}` });
        // Several appends per flush (one per event-loop turn), as concurrent writes make them.
        if (next() < flushChance) await new Promise((r) => setImmediate(r));
        if (i === Math.floor(appends / 2)) {
          await store.close();
          store = new SqliteStateStore(path, limits);
        }
        if (next() < 0.2) {
          // Past the TTL's own floor by a second, so the store and this test agree on the floor.
          // Mostly a reminder look's question (the last seconds, up to 150); sometimes all of it, past what memory keeps.
          const wide = next() < 0.15;
          const since = Math.max(clock - (wide ? 120_000 : Math.floor(next() * 20_000)), Date.now() - limits.ttlMs + 1000);
          const limit = wide ? 2000 : 1 + Math.floor(next() * 150);
          const got = await store.listWriteLog({ since: new Date(since), limit });
          expect(got.map((e) => e.cursor)).toEqual(fromTable(path, since, limit));
          compared++;
          // Whether memory answered: a table read would make new objects, never the kept frozen ones.
          if (got.length > 0) answered++;
          if (got.length > 0 && Object.isFrozen(got[0])) fromMemory++;
        }
      }
    } finally {
      await store.close();
    }
    expect(compared).toBeGreaterThan(appends / 10);
    expect(answered).toBeGreaterThan(compared / 2);
    // Memory answered most of them (else this test proves nothing of it).
    expect(fromMemory).toBeGreaterThan(answered / 2);
  });
});

describe('what memory answers, and when it leaves the answer to the table', () => {
  const entry = (n: number, at: number): WriteLogEntry => ({ at: new Date(at), bucket: 'b', key: `k${n}`, operation: 'PutObject', newETag: `e${n}` });
  const keys = (got: WriteLogEntry[] | undefined) => got?.map((e) => e.key);
  const filled = (n: number, at = (i: number) => 1000 + i) => {
    const log = new RecentLog(0, -Infinity);
    for (let i = 1; i <= n; i++) log.add(i, entry(i, at(i)));
    return log;
  };
  const newest = (from: number, count: number) => Array.from({ length: count }, (_, i) => `k${from - i}`);

  it('keeps the newest 512 entries: a look at more than that is the table\'s', () => {
    expect(keys(filled(512).newestSince(0, 512))).toEqual(newest(512, 512));
    const past = filled(513);
    expect(keys(past.newestSince(0, 512))).toEqual(newest(513, 512));
    // The 513th newest was let go: memory cannot say it is the only one left.
    expect(past.newestSince(0, 513)).toBeUndefined();
  });

  it('an entry let go still bounds what memory can answer: a look from its instant is the table\'s', () => {
    // Entry 1 is the newest of all by its time (appends are only about in time order), and the first let go.
    const log = filled(513, (i) => (i === 1 ? 5000 : 1000 + i));
    expect(log.newestSince(5000, 10)).toBeUndefined();
    expect(log.newestSince(5001, 10)).toEqual([]);
  });

  it('an instant no older entry reaches is answered from memory; one an older entry reaches, exactly at its millisecond, is not', () => {
    // Opened on a table whose newest entry (not in memory) was made at 1000.
    const log = new RecentLog(10, 1000);
    expect(log.newestSince(1000, 5)).toBeUndefined();
    expect(log.newestSince(1001, 5)).toEqual([]);
    log.add(11, entry(11, 2000));
    expect(keys(log.newestSince(1001, 5))).toEqual(['k11']);
  });

  it('answers from memory, whatever older entries hold, once it has `limit` of them; not with fewer', () => {
    // Nothing known of the older entries' times.
    const log = new RecentLog(0, Infinity);
    for (let i = 1; i <= 3; i++) log.add(i, entry(i, 1000 * i));
    expect(keys(log.newestSince(0, 2))).toEqual(['k3', 'k2']);
    expect(keys(log.newestSince(0, 3))).toEqual(['k3', 'k2', 'k1']);
    expect(log.newestSince(0, 4)).toBeUndefined();
    expect(keys(log.newestSince(2000, 2))).toEqual(['k3', 'k2']);
  });

  it('forgets what a prune deleted: made before the cutoff (one made at it stays), or at or below the id deleted up to', () => {
    const log = filled(4, (i) => 100 * i);
    log.pruned(200, 0);
    expect(keys(log.newestSince(0, 10))).toEqual(['k4', 'k3', 'k2']);
    log.pruned(0, 3);
    expect(keys(log.newestSince(0, 10))).toEqual(['k4']);
  });
});
