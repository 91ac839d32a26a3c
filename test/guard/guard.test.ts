/**
 * The agent rules of the guard (docs/design.md §3–4) on plain values: which write is
 * refused with which reason, what condition the backend must commit under —
 * and that the happy path never reads the current version (an upstream HEAD).
 */
import { describe, expect, it } from 'vitest';
import type { ObjectInfo } from '../../src/backends/types.js';
import { Guard, type AgentWritePolicy, type GuardMode, type GuardOptions, type WriteRequest } from '../../src/guard/guard.js';
import type { WriteConditions } from '../../src/guard/preconditions.js';
import { Refusal } from '../../src/guard/refusal.js';
import { MemoryStateStore } from '../../src/state/memory.js';

const V1 = '1'.repeat(64);
const V2 = '2'.repeat(64);
const info = (etag: string): ObjectInfo => ({ bucket: 'b', key: 'k', etag, size: 10, lastModified: new Date(), headers: {}, metadata: {} });

async function setup(options: { mode?: GuardMode; agentWrites?: AgentWritePolicy; onRefusal?: GuardOptions['onRefusal'] } = {}) {
  const state = new MemoryStateStore();
  const guard = new Guard(state, { mode: options.mode ?? 'enforce', agentWrites: options.agentWrites ?? 'require', ...(options.onRefusal && { onRefusal: options.onRefusal }) });
  let reads = 0;
  const check = (current: string | null, conditions: WriteConditions, extra: Partial<WriteRequest> = {}) =>
    guard.checkWrite({
      bucket: 'b',
      key: 'k',
      agent: 'alice',
      conditions,
      current: async () => {
        reads++;
        return current ? info(current) : null;
      },
      ...extra,
    });
  const outcome = async (current: string | null, conditions: WriteConditions, extra: Partial<WriteRequest> = {}) => {
    try {
      const permit = await check(current, conditions, extra);
      return { permit: permit.condition, reads };
    } catch (e) {
      if (!(e instanceof Refusal)) throw e;
      return { refused: e.reason, current: e.current?.etag, lastSeen: e.lastSeenETag, reads };
    }
  };
  return { state, check, outcome, readFull: (etag: string) => state.recordRead('alice', 'b', 'k', { etag, size: 10, start: 0, end: 10 }), readPart: (etag: string) => state.recordRead('alice', 'b', 'k', { etag, size: 10, start: 0, end: 4 }) };
}

describe('guard: agents under the default policy (require)', () => {
  it('an If-Match on the version the agent read whole is permitted without reading the current version', async () => {
    const g = await setup();
    await g.readFull(V1);
    expect(await g.outcome(V1, { ifMatch: [V1] })).toEqual({ permit: { type: 'if-match', etags: [V1] }, reads: 0 });
  });

  it('no condition → 428 with the current version', async () => {
    const g = await setup();
    expect(await g.outcome(V1, {})).toMatchObject({ refused: 'precondition-required', current: V1 });
  });

  it('a partial read of the named version → partial-read; of a replaced version → stale-read', async () => {
    const g = await setup();
    await g.readPart(V1);
    expect(await g.outcome(V1, { ifMatch: [V1] })).toMatchObject({ refused: 'partial-read', current: V1 });
    // Someone wrote V2 since: the S3 condition fails first.
    expect(await g.outcome(V2, { ifMatch: [V1] })).toMatchObject({ refused: 'precondition-failed', current: V2 });
  });

  it('naming a version other than the one last read → stale-read naming what it read', async () => {
    const g = await setup();
    await g.readFull(V1);
    expect(await g.outcome(V2, { ifMatch: [V2] })).toMatchObject({ refused: 'stale-read', current: V2, lastSeen: V1 });
  });

  it('no stamp and an If-Match → not-read (an ETag from a HEAD or a listing is not a read); If-None-Match: * → create-only', async () => {
    const g = await setup();
    expect(await g.outcome(V1, { ifMatch: [V1] })).toMatchObject({ refused: 'not-read', current: V1 });
    expect(await g.outcome(V1, { ifMatch: '*' })).toMatchObject({ refused: 'not-read', current: V1 });
    // On a missing key S3's own answer comes first.
    expect(await g.outcome(null, { ifMatch: [V1] })).toMatchObject({ refused: 'no-such-key' });
    expect(await g.outcome(null, { ifNoneMatch: '*' })).toMatchObject({ permit: { type: 'if-none-match' } });
  });

  it('If-None-Match: * on an existing key names If-None-Match', async () => {
    const g = await setup();
    const refusal = await g.check(V1, { ifNoneMatch: '*' }, { early: true }).catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(Refusal);
    expect(refusal).toMatchObject({ reason: 'precondition-failed', details: { condition: 'If-None-Match' } });
  });

  it('early (Expect: 100-continue) refuses a failing condition before the body', async () => {
    const g = await setup();
    expect(await g.outcome(V2, { ifMatch: [V1] }, { early: true, agent: undefined })).toMatchObject({ refused: 'precondition-failed', current: V2 });
    expect(await g.outcome(null, { ifMatch: [V1] }, { early: true, agent: undefined })).toMatchObject({ refused: 'no-such-key' });
  });

  it('an ETag in If-None-Match, for people: refused when current, else committed under it', async () => {
    const g = await setup();
    expect(await g.outcome(V1, { ifNoneMatch: [V1] }, { agent: undefined, early: true })).toMatchObject({ refused: 'precondition-failed', current: V1 });
    expect(await g.outcome(V1, { ifNoneMatch: [V2] }, { agent: undefined })).toMatchObject({ permit: { type: 'if-none-match', etags: [V2] } });
  });

  it('an ETag in If-None-Match, for agents: create-only without a read, else only over the version read whole', async () => {
    const g = await setup();
    // Naming a version not to replace is not a read of the one replaced.
    expect(await g.outcome(V1, { ifNoneMatch: [V2] })).toMatchObject({ permit: { type: 'if-none-match' } });
    expect(await g.outcome(V1, { ifNoneMatch: [V2] }, { early: true })).toMatchObject({ refused: 'not-read', current: V1 });
    await g.readFull(V1);
    expect(await g.outcome(V1, { ifNoneMatch: [V2] })).toMatchObject({ permit: { type: 'if-match', etags: [V1] } });
    expect(await g.outcome(V1, { ifNoneMatch: [V1] })).toMatchObject({ refused: 'precondition-failed', current: V1 });
    const partial = await setup();
    await partial.readPart(V1);
    expect(await partial.outcome(V1, { ifNoneMatch: [V2] })).toMatchObject({ refused: 'partial-read', current: V1 });
  });
});

describe('guard: read-stamp policy', () => {
  it('an explicit If-Match without a read → not-read, as under require', async () => {
    const g = await setup({ agentWrites: 'read-stamp' });
    expect(await g.outcome(V1, { ifMatch: [V1] })).toMatchObject({ refused: 'not-read', current: V1 });
  });

  it('derives If-Match from the last full read, create-only from no read, and refuses a partial read', async () => {
    const g = await setup({ agentWrites: 'read-stamp' });
    expect(await g.outcome(null, {})).toMatchObject({ permit: { type: 'if-none-match' }, reads: 0 });
    await g.readFull(V1);
    expect(await g.outcome(V1, {})).toMatchObject({ permit: { type: 'if-match', etags: [V1] } });
    await g.readPart(V2);
    expect(await g.outcome(V2, {})).toMatchObject({ refused: 'partial-read', current: V2 });
  });

  it('a partial read of a version that is no longer current is a stale read, naming what was read', async () => {
    const g = await setup({ agentWrites: 'read-stamp' });
    await g.readPart(V1);
    expect(await g.outcome(V2, {})).toMatchObject({ refused: 'stale-read', current: V2, lastSeen: V1 });
  });
});

describe('guard: modes', () => {
  it('observe refuses none of casket\'s own rules, but every refusal S3 itself makes; off ignores agents', async () => {
    // checkWrite counts what it lets through; a refusal it throws is counted where it is answered (report).
    const counted: Array<[string, boolean]> = [];
    const observe = await setup({ mode: 'observe', onRefusal: (reason, enforced) => counted.push([reason, enforced]) });
    expect(await observe.outcome(V1, {})).toMatchObject({ permit: { type: 'none' } });
    expect(await observe.outcome(V2, { ifMatch: [V1] })).toMatchObject({ refused: 'precondition-failed', current: V2 });
    expect(counted).toEqual([['precondition-required', false]]);
    const off = await setup({ mode: 'off' });
    expect(await off.outcome(V1, {})).toEqual({ permit: { type: 'none' }, reads: 0 });
  });
});

describe('guard: conditional deletes on size and modification time', () => {
  const T = new Date('2026-01-01T00:00:00Z');

  it('a size or time does not stand for a read: an agent without If-Match still gets 428', async () => {
    const g = await setup();
    expect(await g.outcome(V1, { ifMatchSize: 10 })).toMatchObject({ refused: 'precondition-required' });
  });

  it('is committed on top of what the agent rules derive (If-Match, or the read-stamp policy\'s last read)', async () => {
    const g = await setup();
    await g.readFull(V1);
    expect(await g.outcome(V1, { ifMatch: [V1], ifMatchSize: 10, ifMatchLastModifiedTime: T })).toEqual({ permit: { type: 'if-match', etags: [V1], size: 10, lastModified: T }, reads: 0 });
    const stamp = await setup({ agentWrites: 'read-stamp' });
    await stamp.readFull(V1);
    expect(await stamp.outcome(V1, { ifMatchSize: 10 })).toEqual({ permit: { type: 'if-match', etags: [V1], size: 10 }, reads: 0 });
  });

  it('a refusal at commit names the condition that failed', async () => {
    const guard = new Guard(new MemoryStateStore(), { mode: 'enforce', agentWrites: 'require' });
    const refusal = guard.conflict('b', 'k', info(V1), { ifMatch: [V1], ifMatchSize: 3 });
    expect([refusal.reason, refusal.details.condition]).toEqual(['precondition-failed', 'x-amz-if-match-size']);
    const person = guard.conflict('b', 'k', info(V2), { ifMatchLastModifiedTime: T });
    expect([person.reason, person.details.condition]).toEqual(['precondition-failed', 'x-amz-if-match-last-modified-time']);
  });
});

describe('exact retries: made by this very call', () => {
  // A write log whose newest entry for b/k is alice's call "inv-1", which made V1.
  async function logged() {
    const state = new MemoryStateStore();
    const guard = new Guard(state, { mode: 'enforce', agentWrites: 'require' });
    await state.appendWriteLog({ at: new Date(), bucket: 'b', key: 'k', operation: 'PutObject', agent: 'alice', accessKey: 'AKALICE', invocationId: 'inv-1', newETag: V1 });
    return guard;
  }

  it('the same access key and invocation id, and the version it made still current: yes', async () => {
    expect(await (await logged()).madeBy('b', 'k', info(V1), 'AKALICE', 'inv-1')).toBe(true);
  });

  it('another access key, another invocation, or no invocation id: no', async () => {
    const guard = await logged();
    expect(await guard.madeBy('b', 'k', info(V1), 'AKBOB', 'inv-1')).toBe(false);
    expect(await guard.madeBy('b', 'k', info(V1), 'AKALICE', 'inv-2')).toBe(false);
    expect(await guard.madeBy('b', 'k', info(V1), 'AKALICE', undefined)).toBe(false);
    expect(await guard.madeBy('b', 'k', info(V1), undefined, 'inv-1')).toBe(false);
  });

  it('a current version other than the one the call made (written around casket since, or deleted): no', async () => {
    // The retry's bytes may equal what is there now; the call still did not make it.
    const guard = await logged();
    expect(await guard.madeBy('b', 'k', info(V2), 'AKALICE', 'inv-1')).toBe(false);
    expect(await guard.madeBy('b', 'k', null, 'AKALICE', 'inv-1')).toBe(false);
  });
});
