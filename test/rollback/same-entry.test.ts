/**
 * A restore lands only while the write log's newest entry for the key is
 * still the one the plan stood on (src/rollback/restore.ts, sameEntry): the
 * store hands back copies, so "the same entry" is equal fields. Two writes in
 * one millisecond differ in who wrote, what they made or replaced, or the
 * operation — a person's identical write in the agent's millisecond
 * included — and each difference alone must tell them apart, or that write
 * is overwritten (issue 43's finding).
 */
import { describe, expect, it } from 'vitest';
import { sameEntry } from '../../src/rollback/restore.js';
import type { WriteLogEntry } from '../../src/state/types.js';

const agents: WriteLogEntry = { at: new Date('2026-11-25T14:00:00.123Z'), bucket: 'b', key: 'k', operation: 'PutObject', agent: 'alice', accessKey: 'AKALICE', previousETag: 'v0', newETag: 'v1' };

describe('sameEntry', () => {
  it('a copy of the entry is the same entry', () => {
    expect(sameEntry({ ...agents, at: new Date(agents.at.getTime()) }, agents)).toBe(true);
  });

  it.each<[string, Partial<WriteLogEntry>]>([
    ['in being a millisecond later', { at: new Date(agents.at.getTime() + 1) }],
    ['in being by another agent', { agent: 'bob' }],
    ['in being by a person (no agent)', { agent: undefined, accessKey: 'AKPERSON' }],
    ['in the version it made', { newETag: 'v2' }],
    ['in the version it replaced', { previousETag: 'v9' }],
    ['in its operation', { operation: 'CopyObject' }],
  ])('an entry that differs only %s is not the same', (_name, change) => {
    expect(sameEntry({ ...agents, ...change }, agents)).toBe(false);
  });
});
