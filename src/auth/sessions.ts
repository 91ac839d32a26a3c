/**
 * Short-lived credentials minted by casket's STS AssumeRole (docs/design.md §7,
 * src/sts/assume-role.ts) and their verification on every request.
 *
 * Specs followed:
 * - Temporary credentials are an access key, a secret and a session token;
 *   requests carry the token in `X-Amz-Security-Token` (header, or query
 *   parameter of a presigned URL), https://docs.aws.amazon.com/IAM/latest/UserGuide/id_credentials_temp_use-resources.html
 * - An expired token is refused with ExpiredToken ("The provided token has
 *   expired."), https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html
 *   — with 403, as README's STS section documents (AWS's S3 table says 400).
 *
 * Why a step before SigV4 rather than an async CredentialLookup: static keys
 * (every request today) keep the synchronous lookup and pay nothing; only a
 * request that carries a session token waits for the state store, once, and
 * then verifies against a lookup that knows its key.
 *
 * Known gaps: revocation is per minted key (no "revoke everything issued
 * before T" policy); a session minted by a key that is later removed from
 * the credentials file stays valid until it expires or is revoked.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { S3Error } from '../vocabulary/errors.js';
import type { SessionRecord } from '../state/types.js';
import type { Credential, CredentialLookup } from './credentials.js';
import type { Policy } from './policy.js';

export interface SessionSource {
  getSession(accessKeyId: string): Promise<SessionRecord | undefined>;
}

/** AWS temporary access keys start with ASIA; long-term ones with AKIA. */
export const SESSION_KEY_PREFIX = 'ASIA';

function queryParam(rawQuery: string, name: string): string | undefined {
  const lower = name.toLowerCase();
  for (const [k, v] of new URLSearchParams(rawQuery)) if (k.toLowerCase() === lower) return v;
  return undefined;
}

export function sessionTokenOf(headers: Record<string, string>, rawQuery: string): string | undefined {
  return headers['x-amz-security-token'] ?? queryParam(rawQuery, 'X-Amz-Security-Token');
}

/** The access key a SigV4 request names (Authorization header or X-Amz-Credential), unverified. */
export function accessKeyIdOf(headers: Record<string, string>, rawQuery: string): string | undefined {
  const auth = headers['authorization'];
  const credential = auth !== undefined ? /Credential=([^,\s]+)/.exec(auth)?.[1] : queryParam(rawQuery, 'X-Amz-Credential');
  if (credential === undefined) return undefined;
  const parts = credential.split('/');
  return parts.length >= 5 ? parts.slice(0, -4).join('/') : undefined;
}

function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export function sessionCredential(record: SessionRecord): Credential {
  return { accessKeyId: record.accessKeyId, secretAccessKey: record.secretAccessKey, agent: record.agent, policies: record.policies as Policy[] };
}

/**
 * Synchronous first step, so static keys (every request but a session's)
 * never wait: the session key and token the request names, or undefined.
 */
export function sessionRequest(lookup: CredentialLookup, headers: Record<string, string>, rawQuery: string): { accessKeyId: string; token: string } | undefined {
  const token = sessionTokenOf(headers, rawQuery);
  if (token === undefined) return undefined;
  const accessKeyId = accessKeyIdOf(headers, rawQuery);
  if (accessKeyId === undefined || !accessKeyId.startsWith(SESSION_KEY_PREFIX) || lookup(accessKeyId)) return undefined;
  return { accessKeyId, token };
}

/**
 * The lookup to verify a session request with: one that also knows that
 * session. Throws ExpiredToken, InvalidToken or AccessDenied (revoked) for a
 * session that exists but may not be used; an unknown one falls through to
 * the usual InvalidAccessKeyId of the signature check.
 */
export async function withSession(lookup: CredentialLookup, sessions: SessionSource, request: { accessKeyId: string; token: string }, now = Date.now()): Promise<CredentialLookup> {
  const { accessKeyId: id, token } = request;
  const record = await sessions.getSession(id);
  if (!record) return lookup;
  if (!sameToken(token, record.sessionToken)) throw new S3Error('InvalidToken');
  if (record.revoked) throw new S3Error('AccessDenied', 'The security token included in the request was revoked.');
  if (now >= record.expiresAt) throw new S3Error('ExpiredToken', { fields: { 'Token-0': token } });
  const credential = sessionCredential(record);
  return (accessKeyId) => (accessKeyId === id ? credential : lookup(accessKeyId));
}

/**
 * A minted session key signed without its session token fails as an unknown
 * key (InvalidAccessKeyId, as on AWS); when the key is one of casket's live
 * sessions, the error says what is missing. Asked only for a session-form key
 * (ASIA…) that is not a static key and came without a token (a synchronous
 * test first: static keys never wait); a state store
 * that does not answer leaves the plain error.
 */
export function sessionKeyWithoutToken(lookup: CredentialLookup, headers: Record<string, string>, rawQuery: string): string | undefined {
  if (sessionTokenOf(headers, rawQuery) !== undefined) return undefined;
  const accessKeyId = accessKeyIdOf(headers, rawQuery);
  if (accessKeyId === undefined || !accessKeyId.startsWith(SESSION_KEY_PREFIX) || lookup(accessKeyId)) return undefined;
  return accessKeyId;
}

/** The InvalidAccessKeyId with the hint, when `accessKeyId` (from sessionKeyWithoutToken) is a live session's. */
export async function missingSessionToken(sessions: SessionSource, accessKeyId: string): Promise<S3Error | undefined> {
  const record = await sessions.getSession(accessKeyId).catch(() => undefined);
  if (!record) return undefined;
  return new S3Error('InvalidAccessKeyId', {
    message: 'The AWS Access Key Id you provided does not exist in our records: this key is a temporary credential: send its session token in x-amz-security-token (X-Amz-Security-Token in a presigned URL).',
    fields: { AWSAccessKeyId: accessKeyId },
  });
}

/** Fresh key material for a session: ASIA + 16 characters, a 40-character secret, an opaque token. */
export function newSessionKeys(): { accessKeyId: string; secretAccessKey: string; sessionToken: string } {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  const id = [...randomBytes(16)].map((b) => alphabet[b & 31]).join('');
  return { accessKeyId: SESSION_KEY_PREFIX + id, secretAccessKey: randomBytes(30).toString('base64url'), sessionToken: randomBytes(48).toString('base64url') };
}
