/**
 * The signing-key cache: deriving kSigning takes four HMACs, so keys are kept
 * per (secret, date, region, service) in a bounded map, oldest evicted first
 * (256 entries). Counted here by the HMACs node:crypto is asked for.
 */
import * as crypto from 'node:crypto';
import { beforeEach, describe, expect, it, vi } from 'vitest';

vi.mock('node:crypto', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:crypto')>();
  return { ...actual, createHmac: vi.fn(actual.createHmac) };
});

const { signingKeyFor } = await import('../../src/auth/sigv4.js');
const hmacs = vi.mocked(crypto.createHmac);
const CACHE_SIZE = 256;

/** HMACs spent deriving this key: 0 when it came from the cache, 4 when derived. */
function cost(secret: string): number {
  hmacs.mockClear();
  signingKeyFor(secret, '20260301', 'us-east-1', 's3');
  return hmacs.mock.calls.length;
}

describe('signing keys are cached, in a bounded map that evicts the oldest first', () => {
  let run = 0;
  beforeEach(() => {
    run++;
  });
  const secret = (i: number | string) => `secret-${run}-${i}`;

  it('a key used again is not derived again', () => {
    expect(cost(secret('a'))).toBe(4);
    expect(cost(secret('a'))).toBe(0);
    expect(cost(secret('b'))).toBe(4);
    expect(cost(secret('a'))).toBe(0);
  });

  it(`a key stays cached while ${CACHE_SIZE - 1} newer ones arrive, and is evicted by the ${CACHE_SIZE}th`, () => {
    expect(cost(secret('first'))).toBe(4);
    for (let i = 0; i < CACHE_SIZE - 1; i++) expect(cost(secret(i))).toBe(4);
    // 256 entries now: the first is still there (asking does not refresh it).
    expect(cost(secret('first'))).toBe(0);
    expect(cost(secret(CACHE_SIZE))).toBe(4);
    expect(cost(secret('first'))).toBe(4);
  });
});
