/**
 * Session credentials (src/auth/sessions.ts) at their edges: which requests
 * are taken for a session's (and wait for the state store), a token of the
 * right length but the wrong bytes, what an ExpiredToken answer carries, and
 * the key material AssumeRole hands out.
 */
import { describe, expect, it } from 'vitest';
import { staticCredentials } from '../../src/auth/credentials.js';
import { accessKeyIdOf, newSessionKeys, sessionRequest, withSession } from '../../src/auth/sessions.js';
import type { SessionRecord } from '../../src/state/types.js';
import { S3Error } from '../../src/vocabulary/errors.js';

const keys = newSessionKeys();
const now = Date.UTC(2026, 10, 23, 12);
const record = (over: Partial<SessionRecord> = {}): SessionRecord => ({ ...keys, agent: 'alice', sessionName: 'run', expiresAt: now + 900_000, issuedBy: 'ADMIN', policies: [], ...over });
const source = (r: SessionRecord) => ({ getSession: async (id: string) => (id === r.accessKeyId ? r : undefined) });
// A static key that happens to look like a session key (ASIA…): it is the credentials file's, not a session's.
const statics = staticCredentials([
  { accessKeyId: 'AKIASTATIC', secretAccessKey: 's' },
  { accessKeyId: 'ASIASTATICLOOKALIKE', secretAccessKey: 's' },
]);
const credential = (id: string) => `${id}/20261123/us-east-1/s3/aws4_request`;
const auth = (id: string) => `AWS4-HMAC-SHA256 Credential=${credential(id)}, SignedHeaders=host, Signature=00`;

describe('sessionRequest: which requests are a session’s', () => {
  it('names the session key and the token the request carries', () => {
    expect(sessionRequest(statics, { authorization: auth(keys.accessKeyId), 'x-amz-security-token': 'tok' }, '')).toEqual({ accessKeyId: keys.accessKeyId, token: 'tok' });
  });

  it.each([
    ['a presigned URL without X-Amz-Security-Token', {}, `X-Amz-Credential=${encodeURIComponent(credential(keys.accessKeyId))}&X-Amz-Date=20261123T120000Z`],
    ['an unknown key that is not ASIA…', { authorization: auth('AKIAUNKNOWN'), 'x-amz-security-token': 't' }, ''],
    ['an ASIA… key of the credentials file', { authorization: auth('ASIASTATICLOOKALIKE'), 'x-amz-security-token': 't' }, ''],
    ['a SigV2 Authorization header with a token', { authorization: `AWS ${keys.accessKeyId}:c2lnbmF0dXJl`, 'x-amz-security-token': 't' }, ''],
    ['a token and no credential at all', {}, 'X-Amz-Security-Token=t'],
    ['a credential scope cut short', { authorization: `AWS4-HMAC-SHA256 Credential=${keys.accessKeyId}/20261123/us-east-1/s3, SignedHeaders=host, Signature=00`, 'x-amz-security-token': 't' }, ''],
  ])('not: %s', (_name, headers, query) => {
    expect(sessionRequest(statics, headers as Record<string, string>, query)).toBeUndefined();
  });

  it('the token query parameter is matched case-insensitively, as SigV4 query names are by casket', () => {
    const query = `x-amz-credential=${encodeURIComponent(credential(keys.accessKeyId))}&x-amz-security-token=tok`;
    expect(sessionRequest(statics, {}, query)).toEqual({ accessKeyId: keys.accessKeyId, token: 'tok' });
  });

  it('a credential scope of four parts names no key', () => {
    expect(accessKeyIdOf({ authorization: `AWS4-HMAC-SHA256 Credential=ASIAKEY/20261123/us-east-1/s3, SignedHeaders=host` }, '')).toBeUndefined();
    // Components separated by a space only (no comma) end the credential too.
    expect(accessKeyIdOf({ authorization: `AWS4-HMAC-SHA256 Credential=${credential('ASIAKEY')} SignedHeaders=host Signature=00` }, '')).toBe('ASIAKEY');
  });
});

describe('withSession', () => {
  const request = { accessKeyId: keys.accessKeyId, token: keys.sessionToken };

  it('a token of the same length with one character changed is InvalidToken', async () => {
    const last = keys.sessionToken.at(-1) === 'A' ? 'B' : 'A';
    const forged = keys.sessionToken.slice(0, -1) + last;
    await expect(withSession(statics, source(record()), { ...request, token: forged }, now)).rejects.toMatchObject({ code: 'InvalidToken' });
  });

  it('ExpiredToken names the token in its error body (Token-0), as S3 does', async () => {
    const error = await withSession(statics, source(record({ expiresAt: now - 1 })), request, now).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(S3Error);
    expect((error as S3Error).code).toBe('ExpiredToken');
    expect((error as S3Error).fields).toEqual({ 'Token-0': keys.sessionToken });
  });

  it('a revoked session says so', async () => {
    await expect(withSession(statics, source(record({ revoked: true })), request, now)).rejects.toMatchObject({ code: 'AccessDenied', message: 'The security token included in the request was revoked.' });
  });

  it('one millisecond before it expires, a session is live', async () => {
    const lookup = await withSession(statics, source(record({ expiresAt: now + 1 })), request, now);
    expect(lookup(keys.accessKeyId)?.secretAccessKey).toBe(keys.secretAccessKey);
  });

  it('the lookup answers other keys as before: static keys their own credential, unknown ones nothing', async () => {
    const policies = [{ statements: [{ effect: 'Allow' as const, actions: ['s3:getobject'], resources: ['*'], conditions: [] }] }];
    const lookup = await withSession(statics, source(record({ policies })), request, now);
    expect(lookup('AKIASTATIC')?.accessKeyId).toBe('AKIASTATIC');
    expect(lookup('AKIAUNKNOWN')).toBeUndefined();
    expect(lookup(keys.accessKeyId)).toEqual({ accessKeyId: keys.accessKeyId, secretAccessKey: keys.secretAccessKey, agent: 'alice', policies });
  });
});

describe('newSessionKeys (what AssumeRole hands out)', () => {
  it('ASIA + 16 base32 characters, a 40-character secret, a 64-character token; fresh each time', () => {
    const a = newSessionKeys();
    const b = newSessionKeys();
    expect(a.accessKeyId).toMatch(/^ASIA[A-Z2-7]{16}$/);
    expect(a.secretAccessKey).toMatch(/^[A-Za-z0-9_-]{40}$/);
    expect(a.sessionToken).toMatch(/^[A-Za-z0-9_-]{64}$/);
    expect(new Set([a.accessKeyId, b.accessKeyId]).size).toBe(2);
    expect(new Set([a.secretAccessKey, b.secretAccessKey, a.sessionToken, b.sessionToken]).size).toBe(4);
  });
});
