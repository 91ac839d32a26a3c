/**
 * The edges of the memory and SQLite state stores that the contract suite
 * (state-store.test.ts) does not reach: the very millisecond a TTL or a
 * credential's grace ends, page cursors and `since` windows over a log that was not
 * appended in time order, and SQLite's own chores — the per-turn
 * flush of the write log, the once-a-minute prune, the entry cap's slack,
 * the migration of old part digests, a close after a failure. And the one
 * method the 503 wrapper (src/state/unavailable.ts) leaves alone: close.
 *
 * Clock cases fake `Date` only (vi.useFakeTimers toFake), so SQLite's
 * setImmediate flush still runs on the real event loop.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { openSqlite } from '../../src/sqlite.js';
import { MemoryStateStore } from '../../src/state/memory.js';
import { SqliteStateStore } from '../../src/state/sqlite.js';
import { LOG_ORDER_SLACK_MS, SESSION_GRACE_MS, type SessionRecord, type StateLimits, type StateStore } from '../../src/state/types.js';
import { failingAsUnavailable } from '../../src/state/unavailable.js';
import { S3Error } from '../../src/vocabulary/errors.js';

const LIMITS: StateLimits = { ttlMs: 60_000, maxEntries: 1000 };
const HOUR = 3_600_000;

const toClose: StateStore[] = [];
const tempDirs: string[] = [];

function tracked<T extends StateStore>(store: T): T {
  toClose.push(store);
  return store;
}

function dbPath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'casket-state-'));
  tempDirs.push(dir);
  return join(dir, 'state.db');
}

/** One turn of the event loop: SQLite's write-log flush has run (src/state/sqlite.ts scheduleFlush). */
const turn = () => new Promise((resolve) => setImmediate(resolve));

/** Warnings casket emits while `run` runs and a few turns after (emitWarning reports on a later tick). */
async function warningsDuring(run: () => Promise<void>): Promise<string[]> {
  const seen: string[] = [];
  const listener = (w: Error) => seen.push(w.message);
  process.on('warning', listener);
  try {
    await run();
    for (let i = 0; i < 3; i++) await turn();
  } finally {
    process.off('warning', listener);
  }
  return seen.filter((m) => m.startsWith('casket:'));
}

afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(toClose.splice(0).map((store) => store.close()));
});

afterAll(() => {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

const session = (id: string, expiresAt: number): SessionRecord => ({ accessKeyId: id, secretAccessKey: 's', sessionToken: 't', agent: 'alice', sessionName: 'run', expiresAt, issuedBy: 'ADMIN', policies: [] });

interface Implementation {
  name: string;
  open(limits?: StateLimits): StateStore;
}

const implementations: Implementation[] = [
  { name: 'memory', open: (limits = LIMITS) => new MemoryStateStore(limits) },
  { name: 'sqlite', open: (limits = LIMITS) => tracked(new SqliteStateStore(dbPath(), limits)) },
];

describe.each(implementations)('$name store', (impl) => {
  describe('the last millisecond of a TTL still counts', () => {
    it('a stamp is read and listed alike through the millisecond its TTL ends, and gone the next', async () => {
      vi.useFakeTimers({ toFake: ['Date'], now: 1_800_000_000_000 });
      const state = impl.open({ ttlMs: 60_000, maxEntries: 1000 });
      const made = Date.now();
      await state.recordWrite('alice', 'b', 'k', 'v1', 10);
      vi.setSystemTime(made + 60_000);
      // listStamps keeps what is exactly TTL old (at >= now - ttl): getStamp must agree, or the guard
      // would refuse a write (no stamp) that the agent's own stamp list says it may make.
      expect((await state.listStamps('alice')).map((e) => e.key)).toEqual(['k']);
      expect(await state.getStamp('alice', 'b', 'k')).toMatchObject({ etag: 'v1', full: true });
      vi.setSystemTime(made + 60_001);
      expect(await state.getStamp('alice', 'b', 'k')).toBeUndefined();
      expect(await state.listStamps('alice')).toEqual([]);
    });

    it("a write-log entry is listed, and is the key's last write, through the millisecond its TTL ends", async () => {
      vi.useFakeTimers({ toFake: ['Date'], now: 1_800_000_000_000 });
      const state = impl.open({ ttlMs: 60_000, maxEntries: 1000 });
      const made = Date.now();
      await state.appendWriteLog({ at: new Date(made), bucket: 'b', key: 'k', operation: 'PutObject', agent: 'alice', invocationId: 'inv-1', newETag: 'e1' });
      vi.setSystemTime(made + 60_000);
      // An exact retry (s3/write.ts) is decided on lastWrite; the console shows listWriteLog: the same answer.
      expect((await state.listWriteLog({ limit: 10 })).map((e) => e.newETag)).toEqual(['e1']);
      expect(await state.lastWrite('b', 'k')).toMatchObject({ invocationId: 'inv-1', newETag: 'e1' });
      vi.setSystemTime(made + 60_001);
      expect(await state.listWriteLog({ limit: 10 })).toEqual([]);
      expect(await state.lastWrite('b', 'k')).toBeUndefined();
    });

    it('an expired credential is known through the millisecond its grace ends: read, listed, and not dropped by the next mint', async () => {
      vi.useFakeTimers({ toFake: ['Date'], now: 1_800_000_000_000 });
      const state = impl.open();
      const now = Date.now();
      // Known until expiresAt + SESSION_GRACE_MS, that instant included: still answered ExpiredToken, not InvalidAccessKeyId.
      await state.putSession(session('ASIAEDGE', now - SESSION_GRACE_MS));
      expect(await state.getSession('ASIAEDGE')).toMatchObject({ accessKeyId: 'ASIAEDGE' });
      expect((await state.listSessions('alice')).map((s) => s.accessKeyId)).toEqual(['ASIAEDGE']);
      await state.putSession(session('ASIANEW', now + 900_000));
      expect(await state.getSession('ASIAEDGE')).toMatchObject({ accessKeyId: 'ASIAEDGE' });
      vi.setSystemTime(now + 1);
      expect(await state.getSession('ASIAEDGE')).toBeUndefined();
    });
  });

  describe('paging and windows', () => {
    it('a page cursor past the newest entry (say, kept by a console open across a restart) lists from the newest', async () => {
      const state = impl.open();
      for (const key of ['k1', 'k2', 'k3']) await state.appendWriteLog({ at: new Date(), bucket: 'b', key, operation: 'PutObject' });
      // The console hands `before` on from its query string (console/api.ts activity).
      expect((await state.listWriteLog({ limit: 10, before: '1000000' })).map((e) => e.key)).toEqual(['k3', 'k2', 'k1']);
    });

    it('an entry appended late, made up to LOG_ORDER_SLACK_MS before `since`, does not hide the entries in the window behind it', async () => {
      const state = impl.open({ ttlMs: HOUR, maxEntries: 1000 });
      const since = Date.now() - 10_000;
      await state.appendWriteLog({ at: new Date(since + 1_000), bucket: 'b', key: 'in-window', operation: 'PutObject', agent: 'alice' });
      // Appended after the one above, stamped exactly the slack before `since` (another casket's clock, a concurrent append).
      await state.appendWriteLog({ at: new Date(since - LOG_ORDER_SLACK_MS), bucket: 'b', key: 'slow', operation: 'PutObject', agent: 'alice' });
      expect((await state.listWriteLog({ since: new Date(since), limit: 10 })).map((e) => e.key)).toEqual(['in-window']);
    });
  });
});

describe('sqlite store', () => {
  /** What a casket started after a kill -9 reads: the file, through a handle of its own. */
  async function afterCrash(path: string, read: (store: SqliteStateStore) => Promise<unknown>): Promise<unknown> {
    const store = new SqliteStateStore(path, LIMITS);
    try {
      return await read(store);
    } finally {
      await store.close();
    }
  }

  it('an ETag index entry made in a turn with no write-log entry still reaches the file within the turn', async () => {
    const path = dbPath();
    const running = tracked(new SqliteStateStore(path, LIMITS));
    // A GET through an s3 backend re-derives an ETag (backends/s3/etags.ts) without writing anything.
    await running.putIndexedETag('b', 'k', 'up', 'sha-1');
    await turn();
    expect(await afterCrash(path, (s) => s.getIndexedETag('b', 'k', 'up'))).toBe('sha-1');
  });

  it("an agent's read stamp, answered from memory in its turn, is in the file once the turn ends: a restart still knows the read", async () => {
    const path = dbPath();
    const running = tracked(new SqliteStateStore(path, LIMITS));
    await running.recordRead('alice', 'b', 'k', { etag: 'v1', size: 10, start: 0, end: 10 });
    // The same turn: the guard judging alice's next write sees it.
    expect(await running.getStamp('alice', 'b', 'k')).toMatchObject({ etag: 'v1', full: true });
    await turn();
    expect(await afterCrash(path, (s) => s.getStamp('alice', 'b', 'k'))).toMatchObject({ etag: 'v1', full: true });
    // Several reads in one turn (concurrent GETs): all of them.
    await running.recordRead('alice', 'b', 'k2', { etag: 'v2', size: 10, start: 0, end: 10 });
    await running.recordRead('bob', 'b', 'k', { etag: 'v1', size: 10, start: 0, end: 4 });
    await turn();
    expect(await afterCrash(path, async (s) => [await s.getStamp('alice', 'b', 'k2'), await s.getStamp('bob', 'b', 'k')])).toMatchObject([
      { etag: 'v2', full: true },
      { etag: 'v1', full: false, covered: [[0, 4]] },
    ]);
  });

  it('a stamp forgotten in the turn it was set stays forgotten after a restart: a deleted read does not come back to allow a write', async () => {
    const path = dbPath();
    const running = tracked(new SqliteStateStore(path, LIMITS));
    await running.recordRead('alice', 'b', 'k', { etag: 'v1', size: 10, start: 0, end: 10 });
    await turn();
    await running.recordWrite('alice', 'b', 'k', 'v2', 12);
    await running.forgetStamp('alice', 'b', 'k');
    expect(await running.getStamp('alice', 'b', 'k')).toBeUndefined();
    await turn();
    expect(await afterCrash(path, (s) => s.getStamp('alice', 'b', 'k'))).toBeUndefined();
  });

  it('closed in the same turn as a write, it warns of nothing: the close wrote the entries', async () => {
    const path = dbPath();
    const warnings = await warningsDuring(async () => {
      const store = new SqliteStateStore(path, LIMITS);
      await store.appendWriteLog({ at: new Date(), bucket: 'b', key: 'k', operation: 'PutObject', newETag: 'e1' });
      await store.close();
    });
    expect(warnings).toEqual([]);
    expect(await afterCrash(path, async (s) => (await s.listWriteLog({ limit: 10 })).map((e) => e.newETag))).toEqual(['e1']);
  });

  it('a flush the disk refuses does not crash casket: it warns that the entries of that turn are lost, and the next turn writes again', async () => {
    const path = dbPath();
    const running = tracked(new SqliteStateStore(path, LIMITS));
    // A full disk, played by a trigger another connection puts on the table.
    const other = openSqlite(path);
    try {
      other.exec("CREATE TRIGGER full_disk BEFORE INSERT ON write_log BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END");
      const warnings = await warningsDuring(async () => {
        await running.appendWriteLog({ at: new Date(), bucket: 'b', key: 'k', operation: 'PutObject', newETag: 'lost' });
      });
      expect(warnings).toEqual(['casket: write-log, ETag index entries and read stamps lost: database or disk is full']);
      other.exec('DROP TRIGGER full_disk');
    } finally {
      other.close();
    }
    await running.appendWriteLog({ at: new Date(), bucket: 'b', key: 'k', operation: 'PutObject', newETag: 'kept' });
    await turn();
    expect(await afterCrash(path, async (s) => (await s.listWriteLog({ limit: 10 })).map((e) => e.newETag))).toEqual(['kept']);
  });

  it('part digests an older casket recorded, once deleted, stay deleted after a restart', async () => {
    const path = dbPath();
    const old = openSqlite(path);
    old.exec(`CREATE TABLE part_digests (
  upload_id TEXT NOT NULL, part_number INTEGER NOT NULL, sha256 TEXT NOT NULL, md5 TEXT NOT NULL, size INTEGER NOT NULL, at INTEGER NOT NULL, checksum TEXT,
  PRIMARY KEY (upload_id, part_number)
) WITHOUT ROWID`);
    old.prepare('INSERT INTO part_digests (upload_id, part_number, sha256, md5, size, at) VALUES (?, ?, ?, ?, ?, ?)').run('up', 1, 'sha-old', 'md5-old', 100, Date.now());
    old.close();
    const upgraded = new SqliteStateStore(path, LIMITS);
    expect(await upgraded.getPartDigests('up')).toEqual([{ partNumber: 1, sha256: 'sha-old', md5: 'md5-old', size: 100 }]);
    // CompleteMultipartUpload or AbortMultipartUpload is done with them.
    await upgraded.deletePartDigests('up');
    await upgraded.close();
    const restarted = tracked(new SqliteStateStore(path, LIMITS));
    expect(await restarted.getPartDigests('up')).toEqual([]);
  });

  it('an idle store drops, within a minute, ETag index entries and part digests that outlived the TTL', async () => {
    vi.useFakeTimers({ toFake: ['Date', 'setInterval', 'clearInterval'], now: 1_800_000_000_000 });
    const state = tracked(new SqliteStateStore(dbPath(), { ttlMs: 30_000, maxEntries: 1000 }));
    await state.putIndexedETag('b', 'k', 'up', 'sha-1');
    await state.putPartDigest('upload-1', { partNumber: 1, sha256: 'sha', md5: 'md5', size: 5 });
    await turn();
    // Neither is read through a TTL check: only the prune (on open and once a minute) forgets them.
    vi.advanceTimersByTime(60_000);
    expect(await state.getIndexedETag('b', 'k', 'up')).toBeUndefined();
    expect(await state.getPartDigests('upload-1')).toEqual([]);
  });

  it('prunes to the entry cap in batches of a tenth of it: over the cap by at most that many, never more', async () => {
    // maxEntries 20: a prune every 2 writes, not a DELETE scan on every write (src/state/sqlite.ts counted).
    const state = tracked(new SqliteStateStore(dbPath(), { ttlMs: 60_000, maxEntries: 20 }));
    for (let i = 1; i <= 21; i++) await state.recordWrite('alice', 'b', `k${String(i).padStart(2, '0')}`, 'v', 1);
    expect(await state.listStamps('alice')).toHaveLength(21);
    await state.recordWrite('alice', 'b', 'k22', 'v', 1);
    const kept = (await state.listStamps('alice')).map((e) => e.key);
    // The least recently touched go first.
    expect(kept).toEqual(Array.from({ length: 20 }, (_, i) => `k${String(i + 3).padStart(2, '0')}`));
  });

  it('stopping casket after its database was closed under it, with a write logged since, does not fail', async () => {
    const state = new SqliteStateStore(dbPath(), LIMITS);
    // The first close plays a database that failed (as in unavailable.test.ts); the second is casket's stop.
    await state.close();
    const warnings = await warningsDuring(async () => {
      await state.appendWriteLog({ at: new Date(), bucket: 'b', key: 'k', operation: 'PutObject', newETag: 'e1' });
      await expect(state.close()).resolves.toBeUndefined();
    });
    // The entry is lost, and said to be: the flush that would have written it warns.
    expect(warnings).toEqual([expect.stringMatching(/^casket: write-log, ETag index entries and read stamps lost: /)]);
  });
});

describe('failingAsUnavailable', () => {
  it("leaves close alone: a store that fails to close says so in its own words, not as a client's ServiceUnavailable", async () => {
    class ClosesBadly extends MemoryStateStore {
      override async close(): Promise<void> {
        throw new Error('Connection is closed.');
      }
    }
    const store = failingAsUnavailable(new ClosesBadly());
    // casket's stop (server.ts) reports this to the operator; a 503 with Retry-After is for S3 clients.
    const error = await store.close().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).not.toBeInstanceOf(S3Error);
    expect(error).toMatchObject({ message: 'Connection is closed.' });
  });
});
