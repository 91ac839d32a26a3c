/**
 * SqliteStateStore.stampsChangedSince: whether any of an agent's stamps of
 * some keys changed after a mark (stampMark). "Changed since you read"
 * (src/changes/since-read.ts) asks it on every MCP call of every agent
 * between writes, to skip a look that would find what the last one found; a
 * wrong "no" there is a reminder never given. Answered from the last change
 * of each stamp among the newest STAMP_CHANGES (4,096), whatever the other
 * agents did in between.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteStateStore } from '../../src/state/sqlite.js';

const RING = 4096;
let dir: string;
let store: SqliteStateStore;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'casket-stamp-marks-'));
  store = new SqliteStateStore(join(dir, 'state.db'), { ttlMs: 60_000, maxEntries: 100_000 });
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const plan = { bucket: 'docs', key: 'plan.md' };
/** `n` changes of other agents' stamps: each forgotten (a write refused them), which, unlike setting one, never prunes. */
async function others(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await store.forgetStamp(`other${i % 7}`, 'docs', `f${i}.md`);
}
const changed = async (mark: number) => store.stampsChangedSince(mark, 'alice', [{ bucket: 'docs', key: 'other.md' }, plan]);

describe('stampsChangedSince', () => {
  it('is yes for a key of the agent stamped after the mark, and no for other agents\' stamps and its own of other keys', async () => {
    await store.recordWrite('alice', plan.bucket, plan.key, 'a'.repeat(64), 5);
    const mark = await store.stampMark();
    await others(500);
    await store.recordWrite('alice', 'docs', 'elsewhere.md', 'b'.repeat(64), 5);
    await store.recordWrite('bob', plan.bucket, plan.key, 'c'.repeat(64), 5);
    expect(await changed(mark)).toBe(false);
    await store.recordWrite('alice', plan.bucket, plan.key, 'd'.repeat(64), 5);
    expect(await changed(mark)).toBe(true);
    expect(await changed(await store.stampMark())).toBe(false);
  });

  it('still yes when the key\'s older change before the mark has left the newest 4,096', async () => {
    await store.recordWrite('alice', plan.bucket, plan.key, 'a'.repeat(64), 5);
    await others(9);
    const mark = await store.stampMark();
    await store.recordWrite('alice', plan.bucket, plan.key, 'b'.repeat(64), 5);
    // The first change of plan.md is pushed out of the ring; the second, after the mark, is not.
    await others(RING - 10);
    expect((await store.stampMark()) - mark).toBeLessThan(RING);
    expect(await changed(mark)).toBe(true);
  });

  it('yes for any key once more than 4,096 changes followed the mark: it no longer knows', async () => {
    const mark = await store.stampMark();
    await others(RING);
    expect(await changed(mark)).toBe(true);
  });
});
