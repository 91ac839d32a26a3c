/**
 * Session credentials (src/auth/sessions.ts): which requests wait for the
 * state store at all, and what a known session that may not be used answers.
 */
import { describe, expect, it } from 'vitest';
import { staticCredentials } from '../../src/auth/credentials.js';
import { accessKeyIdOf, newSessionKeys, sessionRequest, withSession } from '../../src/auth/sessions.js';
import type { SessionRecord } from '../../src/state/types.js';
import { S3Error } from '../../src/vocabulary/errors.js';

const keys = newSessionKeys();
const now = Date.UTC(2026, 10, 23, 12);
const record = (over: Partial<SessionRecord> = {}): SessionRecord => ({ ...keys, agent: 'alice', sessionName: 'run', expiresAt: now + 900_000, issuedBy: 'ADMIN', policies: [], ...over });
const source = (r: SessionRecord | undefined) => ({ getSession: async (id: string) => (r && id === r.accessKeyId ? r : undefined) });
const statics = staticCredentials([{ accessKeyId: 'AKIASTATIC', secretAccessKey: 's' }]);
const auth = (id: string) => `AWS4-HMAC-SHA256 Credential=${id}/20261123/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00`;

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (e) {
    return e instanceof S3Error ? `${e.status} ${e.code}` : String(e);
  }
}

describe('sessionRequest: only a session key with a token waits for the store', () => {
  it.each([
    ['no token', { authorization: auth(keys.accessKeyId) }, '', false],
    ['a static key, even with a token', { authorization: auth('AKIASTATIC'), 'x-amz-security-token': 't' }, '', false],
    ['a session key with its token header', { authorization: auth(keys.accessKeyId), 'x-amz-security-token': 't' }, '', true],
    ['a presigned URL with X-Amz-Security-Token', {}, `X-Amz-Credential=${encodeURIComponent(`${keys.accessKeyId}/20261123/us-east-1/s3/aws4_request`)}&X-Amz-Security-Token=t`, true],
  ])('%s', (_name, headers, query, waits) => {
    expect(sessionRequest(statics, headers as Record<string, string>, query) !== undefined).toBe(waits);
  });

  it('reads the access key out of either form', () => {
    expect(accessKeyIdOf({ authorization: auth('AK/WITH/SLASH') }, '')).toBe('AK/WITH/SLASH');
    expect(accessKeyIdOf({}, 'X-Amz-Credential=AK%2F20261123%2Fus-east-1%2Fs3%2Faws4_request')).toBe('AK');
  });
});

describe('withSession', () => {
  const request = { accessKeyId: keys.accessKeyId, token: keys.sessionToken };
  it('a live session: its credential, bound to the agent, alongside the static keys', async () => {
    const lookup = await withSession(statics, source(record()), request, now);
    expect(lookup(keys.accessKeyId)).toMatchObject({ accessKeyId: keys.accessKeyId, secretAccessKey: keys.secretAccessKey, agent: 'alice' });
    expect(lookup('AKIASTATIC')).toBeDefined();
  });
  // The expected answer comes second so the title names it: a title that
  // printed the record would hold this run's random keys, and Stryker picks
  // the tests to run against a mutant by title.
  it.each<[string, string, SessionRecord | undefined, { accessKeyId: string; token: string }]>([
    ['expired', '403 ExpiredToken', record({ expiresAt: now }), request],
    ['revoked', '403 AccessDenied', record({ revoked: true }), request],
    ['another token', '400 InvalidToken', record(), { ...request, token: `${keys.sessionToken}x` }],
  ])('%s → %s', async (_name, expected, r, req) => {
    expect(await code(withSession(statics, source(r), req, now))).toBe(expected);
  });
  it('an unknown session leaves the lookup as it was (InvalidAccessKeyId at the signature check)', async () => {
    const lookup = await withSession(statics, source(undefined), request, now);
    expect(lookup(keys.accessKeyId)).toBeUndefined();
  });
});
