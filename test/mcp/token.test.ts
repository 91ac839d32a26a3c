/**
 * The bearer token itself (src/mcp/token.ts, docs/design.md §8), without a
 * casket: what `casket mcp token` mints and what every replica checks. Its
 * wire form is fixed — a token minted by one casket version or replica must
 * hold at another — so a known token is written out here, and each part of
 * the check (prefix, shape, claims' types, HMAC, expiry) is shown refusing
 * what it is there to refuse. token-expiry, token-mint and http-tools show
 * the same rules at the endpoint.
 */
import { describe, expect, it } from 'vitest';
import { mintToken, readToken, tokenHolds } from '../../src/mcp/token.js';

// AWS's documented example key pair (https://docs.aws.amazon.com/IAM/latest/UserGuide/security-creds.html).
const KEY = 'AKIDEXAMPLE';
const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
/** 2025-11-24T16:00:00.999Z: the expiry counts from the whole second. */
const NOW = 1_764_000_000_999;
const EXPIRES = 1_764_003_600;

/** A token with these claims (base64url JSON), signed or not. */
const forged = (claims: unknown, signature = 'sig') => `ckt1.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`;

describe('mintToken', () => {
  it('writes ckt1.<claims>.<HMAC>, the same bytes at every version and replica', () => {
    expect(mintToken(KEY, SECRET, { ttlSeconds: 3600, now: NOW })).toBe('ckt1.eyJrIjoiQUtJREVYQU1QTEUiLCJlIjoxNzY0MDAzNjAwfQ.lBCW9FK3KbQhAL2a2jInoWV6sdcUtdxjYC8EszmJsMk');
    expect(mintToken(KEY, SECRET, { agent: 'alice', ttlSeconds: 3600, now: NOW })).toBe(
      'ckt1.eyJrIjoiQUtJREVYQU1QTEUiLCJhIjoiYWxpY2UiLCJlIjoxNzY0MDAzNjAwfQ.WfnfDK4YZ6pC1n-t62mpXZI7Bk92iCAqFh6__RgMxyg',
    );
  });

  it('counts the time to live from now when no time is given', () => {
    const before = Math.floor(Date.now() / 1000);
    const claims = readToken(mintToken(KEY, SECRET, { ttlSeconds: 60 }))!;
    expect(claims.expires).toBeGreaterThanOrEqual(before + 60);
    expect(claims.expires).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 60);
  });
});

describe('readToken', () => {
  it('reads the key, the agent and the expiry a token claims, and the parts its check needs', () => {
    const token = mintToken(KEY, SECRET, { agent: 'alice', ttlSeconds: 3600, now: NOW });
    const [, payload, signature] = token.split('.');
    expect(readToken(token)).toEqual({ accessKeyId: KEY, agent: 'alice', expires: EXPIRES, payload, signature });
    expect(readToken(mintToken(KEY, SECRET, { ttlSeconds: 3600, now: NOW }))).not.toHaveProperty('agent');
  });

  it('takes nothing that is not a casket token of this version', () => {
    const token = mintToken(KEY, SECRET, { ttlSeconds: 3600, now: NOW });
    const [, payload, signature] = token.split('.');
    for (const bad of [
      '', 'ckt1', `ckt1.${payload}`, `${token}.more`, `ckt2.${payload}.${signature}`, `.${payload}.${signature}`,
      // An AWS secret or a JWT pasted by mistake.
      SECRET, 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln',
      // The claims not JSON, or not an object with a string key id and a numeric expiry.
      `ckt1.${Buffer.from('{"k":').toString('base64url')}.sig`,
      forged(null), forged({ e: EXPIRES }), forged({ k: 7, e: EXPIRES }), forged({ k: KEY }), forged({ k: KEY, e: String(EXPIRES) }),
      forged({ k: KEY, a: 5, e: EXPIRES }), forged({ k: KEY, a: null, e: EXPIRES }),
    ]) expect(readToken(bad), bad).toBeUndefined();
  });
});

describe('tokenHolds', () => {
  const token = mintToken(KEY, SECRET, { agent: 'alice', ttlSeconds: 3600, now: NOW });
  const claims = readToken(token)!;

  it('holds for the secret it was minted with, until its expiry (RFC 6750 §3.1 invalid_token after)', () => {
    expect(tokenHolds(claims, SECRET, NOW)).toBe(true);
    expect(tokenHolds(claims, SECRET, EXPIRES * 1000 - 1)).toBe(true);
    expect(tokenHolds(claims, SECRET, EXPIRES * 1000)).toBe(false);
    expect(tokenHolds(claims, SECRET, EXPIRES * 1000 + 1)).toBe(false);
  });

  it('refuses another secret, and claims changed after signing', () => {
    expect(tokenHolds(claims, `${SECRET}x`, NOW)).toBe(false);
    expect(tokenHolds(claims, SECRET.slice(0, -1), NOW)).toBe(false);
    // The agent (or key, or expiry) rewritten: the MAC is over the claims as sent.
    const other = readToken(forged({ k: KEY, a: 'bob', e: EXPIRES }, claims.signature))!;
    expect(tokenHolds(other, SECRET, NOW)).toBe(false);
  });

  it('refuses a signature of another length rather than throwing', () => {
    for (const signature of ['', claims.signature.slice(0, -1), `${claims.signature}A`]) expect(tokenHolds({ ...claims, signature }, SECRET, NOW)).toBe(false);
  });

  it('checks the expiry against the clock when no time is given', () => {
    expect(tokenHolds(readToken(mintToken(KEY, SECRET, { ttlSeconds: 60 }))!, SECRET)).toBe(true);
    expect(tokenHolds(readToken(mintToken(KEY, SECRET, { ttlSeconds: -1 }))!, SECRET)).toBe(false);
  });
});
