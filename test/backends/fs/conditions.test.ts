/**
 * CommitCondition at commit time, as a truth table over the state of the key
 * (absent / current ETag listed / not listed) for PutObject and DeleteObject,
 * with and without sameContentWins, plus the race DESIGN §3 promises:
 * concurrent writes conditioned on the same ETag, exactly one wins.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { evaluateCommit } from '../../../src/backends/commit-condition.js';
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
    for (const sameContentWins of [false, true]) {
      const attempt = store.putObject('bkt', 'k', payloadOf(NEW), { ...PUT_DEFAULTS, condition, sameContentWins, writer: 'second' });
      if (expected === 'write') {
        const info = await attempt;
        expect(info).toMatchObject({ etag: sha256Hex(NEW), writer: 'second' });
        expect(await store.headObject('bkt', 'k')).toEqual(info);
        // Restore the state for the second round.
        await store.deleteObject('bkt', 'k', { condition: { type: 'none' } });
        await prepare(state);
      } else {
        const e = await failure(attempt);
        expect(e.current).toEqual(current);
        expect((await store.headObject('bkt', 'k'))?.etag ?? null).toBe(current?.etag ?? null);
      }
    }
  });

  it.each(TABLE.filter(([, state, expected]) => expected === 'fail' && state !== 'absent'))(
    '%s with the key %s: same content wins when asked',
    async (_label, state, _expected, condition) => {
      const current = await prepare(state);
      // Without sameContentWins the same content still fails.
      await failure(store.putObject('bkt', 'k', payloadOf(CURRENT), { ...PUT_DEFAULTS, condition }));
      const info = await store.putObject('bkt', 'k', payloadOf(CURRENT), {
        ...PUT_DEFAULTS,
        condition,
        sameContentWins: true,
        metadata: { ignored: 'yes' },
        writer: 'retry',
      });
      // Nothing was written: the current version is returned as it was.
      expect(info).toEqual(current);
      expect(await store.headObject('bkt', 'k')).toEqual(current);
    },
  );

  it('same content does not win against an absent key', async () => {
    const e = await failure(store.putObject('bkt', 'k', payloadOf(NEW), { ...PUT_DEFAULTS, condition: { type: 'if-match', etags: '*' }, sameContentWins: true }));
    expect(e.current).toBeNull();
  });

  it('discards the body of a refused or skipped write (file-backed bodies)', async () => {
    const big = bytes(200_000, 4);
    await store.putObject('bkt', 'k', payloadOf(big), PUT_DEFAULTS);
    const condition: CommitCondition = { type: 'if-none-match' };
    await failure(store.putObject('bkt', 'k', payloadOf(bytes(200_000, 5)), { ...PUT_DEFAULTS, condition }));
    await store.putObject('bkt', 'k', payloadOf(big), { ...PUT_DEFAULTS, condition, sameContentWins: true });
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
      expect(await attempt).toEqual(current);
      expect(await store.headObject('bkt', 'k')).toBeNull();
    } else {
      expect((await failure(attempt)).current).toEqual(current);
      expect(await store.headObject('bkt', 'k')).toEqual(current);
    }
  });

  it('a retried conditional delete of a key already gone succeeds with sameContentWins', async () => {
    const condition: CommitCondition = { type: 'if-match', etags: [CURRENT_ETAG] };
    await failure(store.deleteObject('bkt', 'k', { condition }));
    expect(await store.deleteObject('bkt', 'k', { condition, sameContentWins: true })).toBeNull();
  });
});

describe('evaluateCommit (pure)', () => {
  it.each(TABLE)('%s with the key %s → %s', (_label, state, expected, condition) => {
    const current = state === 'absent' ? null : CURRENT_ETAG;
    expect(evaluateCommit(condition, current, sha256Hex(NEW), false)).toBe(expected);
    expect(evaluateCommit(condition, current, sha256Hex(NEW), true)).toBe(expected);
    if (expected === 'fail' && current !== null) expect(evaluateCommit(condition, current, current, true)).toBe('same-content');
  });
});

describe('concurrency', () => {
  it.each([
    { label: 'inline bodies', size: 1000 },
    { label: 'file bodies', size: 300_000 },
  ])('16 concurrent puts conditioned on the same ETag: exactly one wins ($label)', async ({ size }) => {
    const base = await store.putObject('bkt', 'k', payloadOf('base'), PUT_DEFAULTS);
    const bodies = Array.from({ length: 16 }, (_, i) => bytes(size, 100 + i));
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
    for (const r of lost) {
      expect(r.reason).toBeInstanceOf(ConditionFailed);
      expect((r.reason as ConditionFailed).current).toEqual(winner);
    }
    const index = Number(winner.writer!.slice('agent-'.length));
    expect(sameBytes(await readAll((await store.getObject('bkt', 'k'))!.open()), bodies[index]!)).toBe(true);
  });

  it('16 concurrent create-only puts: exactly one creates', async () => {
    const results = await Promise.allSettled(
      Array.from({ length: 16 }, (_, i) => store.putObject('bkt', 'new', payloadOf(`body ${i}`), { ...PUT_DEFAULTS, condition: { type: 'if-none-match' } })),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
  });
});
