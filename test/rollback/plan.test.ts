/**
 * What a rollback sets out to do, from the write log alone (src/rollback/plan.ts):
 * the goal of each key is the version before the agent's first write in the
 * window, the condition its last version there; and what a request may say.
 */
import { describe, expect, it } from 'vitest';
import { keysWritten, parseRollbackRequest, rollbackAgent } from '../../src/rollback/plan.js';
import type { WriteLogEntry } from '../../src/state/types.js';

const t0 = Date.parse('2026-11-25T14:00:00Z');
const entry = (ms: number, key: string, previousETag: string | undefined, newETag: string | undefined, bucket = 'b'): WriteLogEntry => ({
  at: new Date(t0 + ms),
  bucket,
  key,
  operation: newETag === undefined ? 'DeleteObject' : 'PutObject',
  agent: 'alice',
  ...(previousETag !== undefined && { previousETag }),
  ...(newETag !== undefined && { newETag }),
});

describe('rollback plan', () => {
  it('goes back to the version before the first write, conditioned on the last, whatever order the log answers in', () => {
    const log = [entry(3, 'edited', 'v2', 'v3'), entry(1, 'edited', 'v0', 'v1'), entry(2, 'edited', 'v1', 'v2')];
    expect(keysWritten(log, {})).toMatchObject([{ key: 'edited', goal: 'v0', agentLast: 'v3', writes: 3 }]);
  });

  it('a key the agent created goes away; one it deleted comes back', () => {
    const log = [entry(1, 'created', undefined, 'c1'), entry(2, 'created', 'c1', 'c2'), entry(3, 'deleted', 'd0', undefined)];
    expect(keysWritten(log, {})).toMatchObject([
      { key: 'created', goal: null, agentLast: 'c2' },
      { key: 'deleted', goal: 'd0', agentLast: null },
    ]);
  });

  it('keeps to the bucket and prefix asked for', () => {
    const log = [entry(1, 'docs/a', 'a0', 'a1'), entry(2, 'src/b', 'b0', 'b1'), entry(3, 'docs/c', 'c0', 'c1', 'other')];
    expect(keysWritten(log, { bucket: 'b', prefix: 'docs/' }).map((h) => h.key)).toEqual(['docs/a']);
  });

  it('restores are written as rollback:<agent>, so a rollback of a rollback is one more agent', () => {
    expect(rollbackAgent('alice')).toBe('rollback:alice');
    expect(rollbackAgent(rollbackAgent('alice'))).toBe('rollback:rollback:alice');
  });

  it('reads a request, and refuses one that is not clear', () => {
    const body = (o: unknown) => Buffer.from(JSON.stringify(o));
    expect(parseRollbackRequest(body({ agent: 'alice', since: '2026-11-25T14:00:00Z', until: '2026-11-25T15:00:00+01:00', dryRun: true }))).toEqual({
      agent: 'alice',
      since: new Date('2026-11-25T14:00:00Z'),
      until: new Date('2026-11-25T14:00:00Z'),
      dryRun: true,
    });
    // A time without a zone is UTC, not the server's local time.
    expect(parseRollbackRequest(body({ agent: 'a', since: '2026-11-25T14:00' })).since).toEqual(new Date('2026-11-25T14:00:00Z'));
    for (const bad of [{ since: '2026-11-25T14:00:00Z' }, { agent: 'a' }, { agent: 'a', since: 'yesterday' }, { agent: 'a', since: '2026-11-25T14:00:00Z', until: '2026-11-25T13:00:00Z' }, { agent: 'a', since: '2026-11-25T14:00:00Z', dryRun: 'yes' }, []]) {
      expect(() => parseRollbackRequest(body(bad)), JSON.stringify(bad)).toThrow(expect.objectContaining({ code: 'InvalidArgument' }));
    }
    expect(() => parseRollbackRequest(Buffer.from('{'))).toThrow(expect.objectContaining({ code: 'InvalidRequest' }));
  });
});
