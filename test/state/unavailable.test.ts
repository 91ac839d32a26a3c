/**
 * A state store that cannot answer (src/state/unavailable.ts): every call
 * fails as 503 ServiceUnavailable with Retry-After, never as an InternalError,
 * and the guard refuses an agent's write with it before anything reaches a
 * backend. Here, with a SQLite store that fails (its database closed from
 * under it); Redis stopped under a running casket is driven end to end in
 * test/integration/state-outage.test.ts.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Guard } from '../../src/guard/guard.js';
import { SqliteStateStore } from '../../src/state/sqlite.js';
import { failingAsUnavailable } from '../../src/state/unavailable.js';
import { S3Error } from '../../src/vocabulary/errors.js';

function failedSqlite() {
  const inner = new SqliteStateStore(join(mkdtempSync(join(tmpdir(), 'casket-state-')), 'state.db'));
  const store = failingAsUnavailable(inner);
  return { store, fail: () => inner.close() };
}

describe('a SQLite state store that fails', () => {
  it('answers every call with ServiceUnavailable and Retry-After', async () => {
    const { store, fail } = failedSqlite();
    await store.recordWrite('alice', 'b', 'k', 'v1', 1);
    await fail();
    for (const call of [() => store.getStamp('alice', 'b', 'k'), () => store.lastWrite('b', 'k'), () => store.recordRead('alice', 'b', 'k', { etag: 'v1', size: 1, start: 0, end: 1 })]) {
      const error = await call().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(S3Error);
      expect(error).toMatchObject({ code: 'ServiceUnavailable', status: 503, headers: { 'retry-after': '1' } });
    }
  });

  it('says what happened in its own words, keeping the store\'s error as the cause for the log', async () => {
    const { store, fail } = failedSqlite();
    await fail();
    const error = await store.getStamp('alice', 'b', 'k').then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toBe("casket's state store is unavailable, or could not confirm the change on a replica; nothing was written. Retry shortly.");
    expect(error?.cause).toBeInstanceOf(Error);
    // better-sqlite3's own words for a closed database: Node 20 and Node 22/24 builds say it differently.
    expect((error?.cause as Error).message).toMatch(/database connection is not open|statement has been finalized/);
  });

  it('an async function can return the wrapped store (server.ts does): it is not taken for a promise', async () => {
    const { store } = failedSqlite();
    // An `await` looks up `then`: a wrapped `then` would make casket's start wait forever.
    expect((store as unknown as { then?: unknown }).then).toBeUndefined();
    const opened = await (async () => store)();
    expect(opened).toBe(store);
    await store.close();
  });

  it("refuses an agent's write in the guard, before the current version is read or anything committed", async () => {
    const { store, fail } = failedSqlite();
    const guard = new Guard(store, { mode: 'enforce', agentWrites: 'require' });
    await store.recordWrite('alice', 'b', 'k', 'v1', 1);
    await fail();
    let reads = 0;
    const write = guard.checkWrite({
      bucket: 'b',
      key: 'k',
      agent: 'alice',
      conditions: { ifMatch: ['v1'] },
      current: async () => {
        reads++;
        return null;
      },
    });
    await expect(write).rejects.toMatchObject({ code: 'ServiceUnavailable' });
    expect(reads).toBe(0);
  });
});
