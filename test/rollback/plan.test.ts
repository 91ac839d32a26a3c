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

  it('lists the keys by bucket, then key, whatever order the log answers in', () => {
    const log = [entry(1, 'b', 'x0', 'x1', 'zeta'), entry(2, 'c', 'c0', 'c1'), entry(3, 'a', 'a0', 'a1'), entry(4, 'b', 'b0', 'b1'), entry(5, 'a', 'y0', 'y1', 'alpha')];
    expect(keysWritten(log, {}).map((h) => `${h.bucket}/${h.key}`)).toEqual(['alpha/a', 'b/a', 'b/b', 'b/c', 'zeta/b']);
  });

  it('lists keys in the order S3 lists them: by UTF-8 bytes, so a key past U+FFFF sorts after one of U+E000–U+FFFF', () => {
    // JavaScript's < compares UTF-16 code units, where the surrogates of U+1F600 (0xD83D…) sort before U+FF21.
    const log = [entry(1, 'Ａ', 'f0', 'f1'), entry(2, '😀', 'e0', 'e1'), entry(3, 'z', 'z0', 'z1')];
    expect(keysWritten(log, {}).map((h) => h.key)).toEqual(['z', 'Ａ', '😀']);
  });

  it('takes a time with a zone as that instant, with or without the colon', () => {
    const body = (o: unknown) => Buffer.from(JSON.stringify(o));
    expect(parseRollbackRequest(body({ agent: 'a', since: '2026-11-25T15:00:00+0100' })).since).toEqual(new Date('2026-11-25T14:00:00Z'));
    expect(parseRollbackRequest(body({ agent: 'a', since: '2026-11-25T13:00:00-01:00' })).since).toEqual(new Date('2026-11-25T14:00:00Z'));
    // until equal to since is a window of one instant, not a mistake; null is no until.
    expect(parseRollbackRequest(body({ agent: 'a', since: '2026-11-25T14:00:00Z', until: '2026-11-25T14:00:00Z' }))).toMatchObject({ until: new Date('2026-11-25T14:00:00Z') });
    expect(parseRollbackRequest(body({ agent: 'a', since: '2026-11-25T14:00:00Z', until: null }))).not.toHaveProperty('until');
  });

  it('a changeset alone: since is the epoch, agent whoever wrote it; an empty prefix is none', () => {
    const body = (o: unknown) => Buffer.from(JSON.stringify(o));
    expect(parseRollbackRequest(body({ changeset: 'cs-1' }))).toEqual({ agent: '', since: new Date(0), changeset: 'cs-1', dryRun: false });
    expect(parseRollbackRequest(body({ changeset: 'cs-1', agent: 'alice', since: '2026-11-25T14:00:00Z', bucket: '', prefix: '' }))).toEqual({ agent: 'alice', since: new Date('2026-11-25T14:00:00Z'), changeset: 'cs-1', bucket: '', dryRun: false });
    expect(parseRollbackRequest(body({ agent: 'a', since: '2026-11-25T14:00:00Z', bucket: 'b', prefix: 'p/', dryRun: false }))).toEqual({ agent: 'a', since: new Date('2026-11-25T14:00:00Z'), bucket: 'b', prefix: 'p/', dryRun: false });
  });

  it('says what is wrong with a request', () => {
    const refusal = (o: unknown) => {
      try {
        parseRollbackRequest(Buffer.from(typeof o === 'string' ? o : JSON.stringify(o)));
      } catch (e) {
        return `${(e as { code: string }).code}: ${(e as Error).message}`;
      }
      return 'accepted';
    };
    const since = '2026-11-25T14:00:00Z';
    expect(refusal('{')).toBe('InvalidRequest: The rollback request must be a JSON object.');
    for (const notObject of ['null', '5', '"alice"', '[]']) expect(refusal(notObject), notObject).toBe('InvalidArgument: The rollback request must be a JSON object.');
    for (const changeset of [5, '']) expect(refusal({ changeset, since })).toBe('InvalidArgument: changeset must be the id of a changeset, as its commit answered it.');
    expect(refusal({ changeset: 'cs-1', agent: 5 })).toBe('InvalidArgument: agent must be a string.');
    for (const agent of [undefined, '', 5]) expect(refusal({ agent, since }), String(agent)).toBe('InvalidArgument: agent is required: the agent whose writes to undo (or changeset: one changeset to undo).');
    for (const missing of [undefined, null]) expect(refusal({ agent: 'a', since: missing })).toBe('InvalidArgument: since is required: the start of the window, ISO 8601.');
    // Not ISO 8601 with a time: a date alone, epoch seconds, text around the time, an expanded year, a time in an array.
    for (const bad of ['2026-11-25', 1764079200, ' 2026-11-25T14:00:00Z', '+002026-11-25T14:00:00Z', '2026-11-25T14:00:00Z!', '2026-11-25T14:00:00+01', [since], '2026-13-25T14:00:00Z']) {
      expect(refusal({ agent: 'a', since: bad }), JSON.stringify(bad)).toBe('InvalidArgument: since must be an ISO 8601 time, e.g. 2026-11-25T14:00:00Z.');
    }
    expect(refusal({ agent: 'a', since, until: 'later' })).toBe('InvalidArgument: until must be an ISO 8601 time, e.g. 2026-11-25T14:00:00Z.');
    expect(refusal({ agent: 'a', since, until: '2026-11-25T13:59:59Z' })).toBe('InvalidArgument: until is before since.');
    expect(refusal({ agent: 'a', since, bucket: 5 })).toBe('InvalidArgument: bucket must be a string.');
    expect(refusal({ agent: 'a', since, prefix: ['p'] })).toBe('InvalidArgument: prefix must be a string.');
    expect(refusal({ agent: 'a', since, dryRun: 'yes' })).toBe('InvalidArgument: dryRun must be true or false.');
  });
});
