/**
 * The guard on plain values, for what test/guard/guard.test.ts leaves out:
 * an agent's `If-Match: *` is judged against the version current now (the
 * one it would replace), and a write lost at the commit (Guard.conflict) is
 * named after the condition it was committed under — If-None-Match for the
 * read-stamp policy's create-only write, the agent rule that derived it.
 */
import { describe, expect, it } from 'vitest';
import type { ObjectInfo } from '../../src/backends/types.js';
import { Guard } from '../../src/guard/guard.js';
import type { WriteConditions } from '../../src/guard/preconditions.js';
import { Refusal } from '../../src/guard/refusal.js';
import { MemoryStateStore } from '../../src/state/memory.js';

const V1 = '1'.repeat(64);
const V2 = '2'.repeat(64);
const info = (etag: string): ObjectInfo => ({ bucket: 'b', key: 'k', etag, size: 10, lastModified: new Date(), headers: {}, metadata: {} });

async function agentWrite(stamp: { etag: string; full: boolean } | undefined, current: string | null, conditions: WriteConditions) {
  const state = new MemoryStateStore();
  if (stamp) await state.recordRead('alice', 'b', 'k', { etag: stamp.etag, size: 10, start: 0, end: stamp.full ? 10 : 4 });
  const guard = new Guard(state, { mode: 'enforce', agentWrites: 'require' });
  try {
    return { permit: (await guard.checkWrite({ bucket: 'b', key: 'k', agent: 'alice', conditions, current: async () => (current ? info(current) : null) })).condition };
  } catch (e) {
    if (!(e instanceof Refusal)) throw e;
    return { refused: e.reason, current: e.current?.etag, lastSeen: e.lastSeenETag };
  }
}

describe("an agent's If-Match: *", () => {
  it('replaces the version it read whole when that version is current', async () => {
    expect(await agentWrite({ etag: V1, full: true }, V1, { ifMatch: '*' })).toEqual({ permit: { type: 'if-match', etags: '*' } });
  });

  it('a version it did not read is current: stale-read, naming what it read', async () => {
    expect(await agentWrite({ etag: V1, full: true }, V2, { ifMatch: '*' })).toEqual({ refused: 'stale-read', current: V2, lastSeen: V1 });
  });

  it('only part of the current version read: partial-read', async () => {
    expect(await agentWrite({ etag: V1, full: false }, V1, { ifMatch: '*' })).toEqual({ refused: 'partial-read', current: V1, lastSeen: V1 });
  });

  it('the key is gone: S3 answers first, NoSuchKey', async () => {
    expect(await agentWrite({ etag: V1, full: true }, null, { ifMatch: '*' })).toMatchObject({ refused: 'no-such-key' });
  });
});

describe("an agent's refusal that S3's own condition explains names that condition", () => {
  async function refusal(stamp: string | undefined, current: ObjectInfo | null, conditions: WriteConditions) {
    const state = new MemoryStateStore();
    if (stamp) await state.recordRead('alice', 'b', 'k', { etag: stamp, size: 10, start: 0, end: 10 });
    const guard = new Guard(state, { mode: 'enforce', agentWrites: 'require' });
    const e = await guard.checkWrite({ bucket: 'b', key: 'k', agent: 'alice', conditions, current: async () => current }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(Refusal);
    const r = e as Refusal;
    return { reason: r.reason, condition: r.details.condition, current: r.current?.etag };
  }

  it('If-None-Match naming the version it read, which is current: precondition-failed, If-None-Match', async () => {
    expect(await refusal(V1, info(V1), { ifNoneMatch: [V1] })).toEqual({ reason: 'precondition-failed', condition: 'If-None-Match', current: V1 });
  });

  it('a conditional delete of a key it never read, of another size: precondition-failed, x-amz-if-match-size', async () => {
    expect(await refusal(undefined, info(V1), { ifMatch: [V1], ifMatchSize: 3 })).toEqual({ reason: 'precondition-failed', condition: 'x-amz-if-match-size', current: V1 });
  });
});

describe('Guard.conflict: a write lost at the commit', () => {
  const guard = new Guard(new MemoryStateStore(), { mode: 'enforce', agentWrites: 'read-stamp' });
  const named = (r: Refusal) => ({ reason: r.reason, condition: r.details.condition, current: r.current?.etag ?? null, lastSeen: r.lastSeenETag });

  it("the read-stamp policy's create-only write found the key created: not-read, If-None-Match", () => {
    const r = guard.conflict('b', 'k', info(V1), {}, { condition: { type: 'if-none-match' }, conflictReason: 'not-read' });
    expect(named(r)).toEqual({ reason: 'not-read', condition: 'If-None-Match', current: V1, lastSeen: undefined });
  });

  it("the read-stamp policy's If-Match on the last read lost to another write: stale-read, If-Match, naming the read", () => {
    const r = guard.conflict('b', 'k', info(V2), {}, { condition: { type: 'if-match', etags: [V1] }, conflictReason: 'stale-read', lastSeenETag: V1 });
    expect(named(r)).toEqual({ reason: 'stale-read', condition: 'If-Match', current: V2, lastSeen: V1 });
  });

  it('an explicit If-Match on a key deleted since: no-such-key; If-None-Match: * on one created since: precondition-failed, If-None-Match', () => {
    expect(named(guard.conflict('b', 'k', null, { ifMatch: [V1] }))).toEqual({ reason: 'no-such-key', condition: undefined, current: null, lastSeen: undefined });
    expect(named(guard.conflict('b', 'k', info(V1), { ifNoneMatch: '*' }, { condition: { type: 'if-none-match' } }))).toEqual({ reason: 'precondition-failed', condition: 'If-None-Match', current: V1, lastSeen: undefined });
  });

  it('an explicit If-Match the current version fails names the version the agent read', () => {
    const r = guard.conflict('b', 'k', info(V2), { ifMatch: [V1] }, { condition: { type: 'if-match', etags: [V1] }, lastSeenETag: V1 });
    expect(named(r)).toEqual({ reason: 'precondition-failed', condition: 'If-Match', current: V2, lastSeen: V1 });
  });

  it('an explicit If-None-Match: "etag" that held when checked, current at the commit: precondition-failed, If-None-Match', () => {
    const r = guard.conflict('b', 'k', info(V1), { ifNoneMatch: [V1] }, { condition: { type: 'if-none-match', etags: [V1] } });
    expect(named(r)).toEqual({ reason: 'precondition-failed', condition: 'If-None-Match', current: V1, lastSeen: undefined });
  });

  it('no explicit condition and no derived reason (a key deleted under a derived If-Match): stale-read', () => {
    const r = guard.conflict('b', 'k', null, {}, { condition: { type: 'if-match', etags: [V1] } });
    expect(named(r)).toEqual({ reason: 'stale-read', condition: 'If-Match', current: null, lastSeen: undefined });
  });
});
