/**
 * CommitCondition at commit time, as a truth table over the state of the key
 * (absent / current ETag listed / not listed) for PutObject and DeleteObject
 * and for conditionHolds itself (with its size / last-modified conditions); a
 * failed condition fails even when the write carries the current version's
 * own bytes (docs/design.md §3), a refused body is discarded, and a conditional delete
 * of a key already gone fails. Plus the races docs/design.md §3 promises: 16 concurrent puts conditioned
 * on the same ETag, or create-only, with distinct or identical bytes — exactly
 * one wins, every other is refused naming it.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { conditionHolds } from '../../../src/backends/commit-condition.js';
import { openFsBackend, type FsBackend } from '../../../src/backends/fs/index.js';
import { ConditionFailed, type CommitCondition, type ObjectInfo } from '../../../src/backends/types.js';
import { blobFiles, bytes, payloadOf, PUT_DEFAULTS, readAll, sameBytes, sha256Hex, tempDataDir } from './helpers.js';

let temp: ReturnType<typeof tempDataDir>;
let store: FsBackend;

beforeEach(async () => {
  temp = tempDataDir();
  store = openFsBackend({ dataDir: temp.dir, fsync: false });
  await store.createBucket('bkt');
});
afterEach(async () => {
  await store.close();
  temp.cleanup();
});

const CURRENT = 'current content';
const NEW = 'new content';
const CURRENT_ETAG = sha256Hex(CURRENT);
const OTHER_ETAG = sha256Hex('something else');

type State = 'absent' | 'listed' | 'unlisted';
type Expected = 'write' | 'fail';

/** [label, state of the key, expected, condition] — `listed`: the current ETag is in the If-Match list. */
const TABLE: Array<[string, State, Expected, CommitCondition]> = [
  ['none', 'absent', 'write', { type: 'none' }],
  ['none', 'listed', 'write', { type: 'none' }],
  ['if-match *', 'absent', 'fail', { type: 'if-match', etags: '*' }],
  ['if-match *', 'listed', 'write', { type: 'if-match', etags: '*' }],
  ['if-match [current]', 'listed', 'write', { type: 'if-match', etags: [CURRENT_ETAG] }],
  ['if-match [other, current]', 'listed', 'write', { type: 'if-match', etags: [OTHER_ETAG, CURRENT_ETAG] }],
  ['if-match [other]', 'unlisted', 'fail', { type: 'if-match', etags: [OTHER_ETAG] }],
  ['if-match [current]', 'absent', 'fail', { type: 'if-match', etags: [CURRENT_ETAG] }],
  ['if-match [] (only same content)', 'unlisted', 'fail', { type: 'if-match', etags: [] }],
  ['if-match [CURRENT uppercased]', 'unlisted', 'fail', { type: 'if-match', etags: [CURRENT_ETAG.toUpperCase()] }],
  ['if-none-match', 'absent', 'write', { type: 'if-none-match' }],
  ['if-none-match', 'listed', 'fail', { type: 'if-none-match' }],
  // If-None-Match: "etag" (as Ceph RGW and MinIO honour it; docs/design.md §3).
  ['if-none-match [current]', 'listed', 'fail', { type: 'if-none-match', etags: [CURRENT_ETAG] }],
  ['if-none-match [other, current]', 'listed', 'fail', { type: 'if-none-match', etags: [OTHER_ETAG, CURRENT_ETAG] }],
  ['if-none-match [other]', 'unlisted', 'write', { type: 'if-none-match', etags: [OTHER_ETAG] }],
  ['if-none-match [other]', 'absent', 'write', { type: 'if-none-match', etags: [OTHER_ETAG] }],
];

async function prepare(state: State): Promise<ObjectInfo | null> {
  if (state === 'absent') return null;
  return store.putObject('bkt', 'k', payloadOf(CURRENT), { ...PUT_DEFAULTS, writer: 'first' });
}

async function failure(promise: Promise<unknown>): Promise<ConditionFailed> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConditionFailed);
  return error as ConditionFailed;
}

describe('PutObject', () => {
  it.each(TABLE)('%s with the key %s → %s', async (_label, state, expected, condition) => {
    const current = await prepare(state);
    const attempt = store.putObject('bkt', 'k', payloadOf(NEW), { ...PUT_DEFAULTS, condition, writer: 'second' });
    if (expected === 'write') {
      const info = await attempt;
      expect(info).toMatchObject({ etag: sha256Hex(NEW), writer: 'second' });
      expect(await store.headObject('bkt', 'k')).toEqual(info);
    } else {
      const e = await failure(attempt);
      expect(e.current).toEqual(current);
      expect(e.attemptedETag).toBe(sha256Hex(NEW));
      expect((await store.headObject('bkt', 'k'))?.etag ?? null).toBe(current?.etag ?? null);
    }
  });

  it.each(TABLE.filter(([, state, expected]) => expected === 'fail' && state !== 'absent'))(
    '%s with the key %s: the same content as the current version still fails (docs/design.md §3)',
    async (_label, state, _expected, condition) => {
      const current = await prepare(state);
      const e = await failure(store.putObject('bkt', 'k', payloadOf(CURRENT), { ...PUT_DEFAULTS, condition, metadata: { ignored: 'yes' }, writer: 'retry' }));
      // The failure says what the write would have made: the current ETag itself.
      expect(e.current).toEqual(current);
      expect(e.attemptedETag).toBe(current!.etag);
      expect(await store.headObject('bkt', 'k')).toEqual(current);
    },
  );

  it('discards the body of a refused write, identical or not (file-backed bodies)', async () => {
    const big = bytes(200_000, 4);
    await store.putObject('bkt', 'k', payloadOf(big), PUT_DEFAULTS);
    const condition: CommitCondition = { type: 'if-none-match' };
    await failure(store.putObject('bkt', 'k', payloadOf(bytes(200_000, 5)), { ...PUT_DEFAULTS, condition }));
    await failure(store.putObject('bkt', 'k', payloadOf(big), { ...PUT_DEFAULTS, condition }));
    await store.flushDeletes();
    expect(blobFiles(temp.dir)).toHaveLength(1);
    expect(sameBytes(await readAll((await store.getObject('bkt', 'k'))!.open()), big)).toBe(true);
  });
});

describe('DeleteObject', () => {
  it.each(TABLE)('%s with the key %s → %s', async (_label, state, expected, condition) => {
    const current = await prepare(state);
    const attempt = store.deleteObject('bkt', 'k', { condition });
    if (expected === 'write') {
      expect((await attempt).replaced).toEqual(current);
      expect(await store.headObject('bkt', 'k')).toBeNull();
    } else {
      expect((await failure(attempt)).current).toEqual(current);
      expect(await store.headObject('bkt', 'k')).toEqual(current);
    }
  });

  it('a conditional delete of a key already gone fails, naming the absence it would have made', async () => {
    const condition: CommitCondition = { type: 'if-match', etags: [CURRENT_ETAG] };
    const e = await failure(store.deleteObject('bkt', 'k', { condition }));
    expect(e.current).toBeNull();
    expect(e.attemptedETag).toBeNull();
  });
});

describe('conditionHolds (pure)', () => {
  it.each(TABLE)('%s with the key %s → %s', (_label, state, expected, condition) => {
    const current = state === 'absent' ? null : CURRENT_ETAG;
    expect(conditionHolds(condition, current)).toBe(expected === 'write');
  });

  it('a size / last-modified condition binds an existing version only, to the second, and fails closed without its facts', () => {
    const facts = { size: 5, lastModified: new Date('2026-01-01T00:00:00.400Z') };
    const sized: CommitCondition = { type: 'none', size: 5, lastModified: new Date('2026-01-01T00:00:00.900Z') };
    expect(conditionHolds(sized, CURRENT_ETAG, facts)).toBe(true);
    expect(conditionHolds({ ...sized, size: 6 }, CURRENT_ETAG, facts)).toBe(false);
    expect(conditionHolds({ ...sized, lastModified: new Date('2026-01-01T00:00:01Z') }, CURRENT_ETAG, facts)).toBe(false);
    expect(conditionHolds({ ...sized, size: 6 }, null)).toBe(true);
    expect(conditionHolds(sized, CURRENT_ETAG)).toBe(false);
    expect(conditionHolds({ type: 'if-match', etags: ['other'], size: 5 }, CURRENT_ETAG, facts)).toBe(false);
  });

  it('a size alone or a last-modified time alone binds only itself', () => {
    const facts = { size: 5, lastModified: new Date('2026-01-01T00:00:00.400Z') };
    expect(conditionHolds({ type: 'none', size: 5 }, CURRENT_ETAG, facts)).toBe(true);
    expect(conditionHolds({ type: 'none', size: 4 }, CURRENT_ETAG, facts)).toBe(false);
    expect(conditionHolds({ type: 'none', lastModified: new Date('2026-01-01T00:00:00Z') }, CURRENT_ETAG, facts)).toBe(true);
    expect(conditionHolds({ type: 'none', lastModified: new Date('2026-01-01T00:00:00Z') }, CURRENT_ETAG)).toBe(false);
    expect(conditionHolds({ type: 'none', lastModified: new Date('2026-01-01T00:00:02Z') }, CURRENT_ETAG, facts)).toBe(false);
  });
});

describe('concurrency', () => {
  it.each([
    { label: 'inline bodies', size: 1000, identical: false },
    { label: 'file bodies', size: 300_000, identical: false },
    { label: 'identical inline bodies', size: 1000, identical: true },
    { label: 'identical file bodies', size: 300_000, identical: true },
  ])('16 concurrent puts conditioned on the same ETag: exactly one wins ($label)', async ({ size, identical }) => {
    const base = await store.putObject('bkt', 'k', payloadOf('base'), PUT_DEFAULTS);
    // Identical bytes are the counter case: 16 agents read "10", all write "11".
    const bodies = Array.from({ length: 16 }, (_, i) => bytes(size, identical ? 100 : 100 + i));
    const results = await Promise.allSettled(
      bodies.map((body, i) =>
        store.putObject('bkt', 'k', payloadOf(body, { chunkSize: 8192 }), {
          ...PUT_DEFAULTS,
          condition: { type: 'if-match', etags: [base.etag] },
          writer: `agent-${i}`,
        }),
      ),
    );
    const won = results.filter((r): r is PromiseFulfilledResult<ObjectInfo> => r.status === 'fulfilled');
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(15);
    const winner = won[0]!.value;
    const current = await store.headObject('bkt', 'k');
    expect(current).toEqual(winner);
    // Every loser: a failed condition (casket's 412 PreconditionFailed) naming
    // the winner as current and its own bytes as attempted — what tells a
    // client "someone else wrote" from "your bytes are already there".
    for (const [i, r] of results.entries()) {
      if (r.status === 'fulfilled') continue;
      expect(r.reason, `agent-${i}`).toBeInstanceOf(ConditionFailed);
      expect((r.reason as ConditionFailed).current, `agent-${i}: the current version it names`).toEqual(winner);
      expect((r.reason as ConditionFailed).attemptedETag, `agent-${i}: the version it attempted`).toBe(sha256Hex(bodies[i]!));
    }
    const index = Number(winner.writer!.slice('agent-'.length));
    expect(results[index]!.status, 'the winner is the writer the stored object names').toBe('fulfilled');
    expect(winner.etag).toBe(sha256Hex(bodies[index]!));
    expect(sameBytes(await readAll((await store.getObject('bkt', 'k'))!.open()), bodies[index]!)).toBe(true);
  });

  it.each([
    ['distinct', (i: number) => `body ${i}`],
    ['identical', () => 'the same body'],
  ])('16 concurrent create-only puts of %s bytes: exactly one creates, every other one fails with the winner current', async (_label, body) => {
    const results = await Promise.allSettled(
      Array.from({ length: 16 }, (_, i) => store.putObject('bkt', 'new', payloadOf(body(i)), { ...PUT_DEFAULTS, condition: { type: 'if-none-match' }, writer: `agent-${i}` })),
    );
    const won = results.filter((r): r is PromiseFulfilledResult<ObjectInfo> => r.status === 'fulfilled');
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(15);
    const winner = won[0]!.value;
    for (const r of lost) {
      expect(r.reason).toBeInstanceOf(ConditionFailed);
      expect((r.reason as ConditionFailed).current).toEqual(winner);
    }
    expect(await store.headObject('bkt', 'new')).toEqual(winner);
    const index = Number(winner.writer!.slice('agent-'.length));
    expect((await readAll((await store.getObject('bkt', 'new'))!.open())).toString()).toBe(body(index));
  });
});
