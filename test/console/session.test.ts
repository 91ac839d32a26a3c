/**
 * The console's session tokens (src/console/session.ts): what makes one hold,
 * and each thing that must end it.
 */
import { describe, expect, it } from 'vitest';
import { staticCredentials, type Credential } from '../../src/auth/credentials.js';
import { checkLogin, clearedCookie, mintSession, sameOrigin, sessionCookie, SESSION_SECONDS, sessionFromCookies, verifySession } from '../../src/console/session.js';
import { mintToken } from '../../src/mcp/token.js';

const admin: Credential = { accessKeyId: 'ADMINKEY', secretAccessKey: 'admin-secret', admin: true };
const person: Credential = { accessKeyId: 'PERSONKEY', secretAccessKey: 'person-secret' };
const lookup = staticCredentials([admin, person]);

describe('console session', () => {
  it('logs in an admin key with its secret only', () => {
    expect(checkLogin(lookup, 'ADMINKEY', 'admin-secret')).toMatchObject({ ok: true });
    expect(checkLogin(lookup, 'ADMINKEY', 'admin-secreT')).toEqual({ ok: false, reason: 'invalid' });
    expect(checkLogin(lookup, 'ADMINKEY', '')).toEqual({ ok: false, reason: 'invalid' });
    expect(checkLogin(lookup, 'NOSUCHKEY', 'admin-secret')).toEqual({ ok: false, reason: 'invalid' });
    expect(checkLogin(lookup, 'PERSONKEY', 'person-secret')).toEqual({ ok: false, reason: 'not-admin' });
    // A wrong secret for a non-admin key says nothing about the key being real.
    expect(checkLogin(lookup, 'PERSONKEY', 'wrong')).toEqual({ ok: false, reason: 'invalid' });
  });

  it('holds until it expires, and not after', () => {
    const now = Date.now();
    const token = mintSession(admin, now);
    expect(verifySession(lookup, token, now)?.accessKeyId).toBe('ADMINKEY');
    expect(verifySession(lookup, token, now + SESSION_SECONDS * 1000 - 1000)?.accessKeyId).toBe('ADMINKEY');
    expect(verifySession(lookup, token, now + SESSION_SECONDS * 1000 + 1)).toBeUndefined();
  });

  it('ends when its signature, its claims, its key or the key\'s admin flag change', () => {
    const token = mintSession(admin);
    const [prefix, payload, mac] = token.split('.') as [string, string, string];
    expect(verifySession(lookup, `${prefix}.${payload}.${mac.slice(0, -1)}${mac.endsWith('A') ? 'B' : 'A'}`)).toBeUndefined();
    const longer = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), e: 9e9 })).toString('base64url');
    expect(verifySession(lookup, `${prefix}.${longer}.${mac}`)).toBeUndefined();
    expect(verifySession(staticCredentials([person]), token)).toBeUndefined();
    expect(verifySession(staticCredentials([{ ...admin, admin: false }]), token)).toBeUndefined();
    expect(verifySession(staticCredentials([{ ...admin, secretAccessKey: 'rotated' }]), token)).toBeUndefined();
    // Its form: another version's prefix, a part more, a signature cut short — refused, not thrown.
    expect(verifySession(lookup, `cks2.${payload}.${mac}`)).toBeUndefined();
    expect(verifySession(lookup, `${token}.more`)).toBeUndefined();
    expect(verifySession(lookup, `${prefix}.${payload}.${mac.slice(0, -2)}`)).toBeUndefined();
  });

  it('ends at its expiry second exactly', () => {
    const token = mintSession(admin, 1_000_000);
    const expiry = (1_000_000 / 1000 + SESSION_SECONDS) * 1000;
    expect(verifySession(lookup, token, expiry - 1)?.accessKeyId).toBe('ADMINKEY');
    expect(verifySession(lookup, token, expiry)).toBeUndefined();
  });

  it('is not an MCP token, nor the other way round', () => {
    const mcp = mintToken('ADMINKEY', 'admin-secret', { ttlSeconds: 600 });
    expect(verifySession(lookup, mcp)).toBeUndefined();
    expect(verifySession(lookup, mcp.replace(/^ckt1/, 'cks1'))).toBeUndefined();
  });

  it('is a Secure cookie under TLS only, and logout clears it at once', () => {
    expect(sessionCookie('t', true)).toMatch(/; Secure$/);
    expect(sessionCookie('t', false)).not.toContain('Secure');
    expect(sessionCookie('t', false)).toBe(`casket_console=t; Path=/_casket; Max-Age=${SESSION_SECONDS}; HttpOnly; SameSite=Strict`);
    expect(clearedCookie(true)).toBe('casket_console=; Path=/_casket; Max-Age=0; HttpOnly; SameSite=Strict; Secure');
  });

  it('reads its cookie among others, and checks the Origin of a POST against the host', () => {
    expect(sessionFromCookies('a=1; casket_console=cks1.x.y; b=2')).toBe('cks1.x.y');
    expect(sessionFromCookies('xcasket_console=1')).toBeUndefined();
    expect(sessionFromCookies('a=1;casket_console=cks1.x.y ;b=2')).toBe('cks1.x.y');
    expect(sessionFromCookies('casket_consolex; b=2')).toBeUndefined();
    expect(sameOrigin('http://127.0.0.1:9000', '127.0.0.1:9000')).toBe(true);
    expect(sameOrigin('http://evil.example', '127.0.0.1:9000')).toBe(false);
    expect(sameOrigin('null', '127.0.0.1:9000')).toBe(false);
    expect(sameOrigin(undefined, '127.0.0.1:9000')).toBe(false);
  });
});
