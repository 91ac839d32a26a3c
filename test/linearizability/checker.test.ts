/**
 * The chain checker itself must reject what a lost update looks like: a
 * checker that accepts everything proves nothing.
 */
import { describe, expect, it } from 'vitest';
import { checkChain, type AckedWrite } from '../helpers/history.js';

const v = (n: number) => `e${n}`;
const step = (writer: string, n: number, extra: Partial<AckedWrite> = {}): AckedWrite => ({ writer, from: v(n), to: v(n + 1), value: n + 1, ...extra });
const start = { etag: v(0), value: 0 };

describe('checkChain', () => {
  it('accepts one chain, in any order of acknowledgement', () => {
    const verdict = checkChain(start, [step('b', 1), step('a', 0), step('c', 2)], { etag: v(3), value: 3 });
    expect(verdict).toEqual({ ok: true, problems: [], writes: 3 });
  });

  it('accepts a retry acknowledged twice under one invocation id as one write', () => {
    const verdict = checkChain(start, [step('a', 0, { invocation: 'i1' }), step('a', 0, { invocation: 'i1' }), step('b', 1)], { etag: v(2), value: 2 });
    expect(verdict.ok).toBe(true);
    expect(verdict.writes).toBe(2);
  });

  it('rejects a fork: two writers acknowledged for replacing the same version with the same bytes', () => {
    // alice and bob both read 0 and both wrote 1: the same ETag, two acks.
    const verdict = checkChain(start, [step('alice', 0), step('bob', 0)], { etag: v(1), value: 1 });
    expect(verdict.ok).toBe(false);
    expect(verdict.problems.join('\n')).toMatch(/fork: alice and bob both replaced e0/);
    expect(verdict.problems.join('\n')).toMatch(/final value 1, expected 0 \+ 2/);
  });

  it('rejects a gap: an acknowledged write whose base no chain reaches', () => {
    const verdict = checkChain(start, [step('a', 0), step('b', 5)], { etag: v(1), value: 1 });
    expect(verdict.ok).toBe(false);
    expect(verdict.problems.join('\n')).toMatch(/gap: 2 acknowledged writes, but the chain from e0 has 1/);
  });

  it('rejects a chain that does not end at the final version', () => {
    const verdict = checkChain(start, [step('a', 0)], { etag: v(7), value: 1 });
    expect(verdict.problems.join('\n')).toMatch(/ends at e1, but the final version is e7/);
  });

  it('rejects one invocation acknowledged as two different writes', () => {
    const verdict = checkChain(start, [step('a', 0, { invocation: 'i' }), step('a', 1, { invocation: 'i' })], { etag: v(2), value: 2 });
    expect(verdict.ok).toBe(false);
    expect(verdict.problems.join('\n')).toMatch(/invocation i acknowledged twice as different writes/);
  });
});
