/**
 * Grants: what one consent lets one MCP client have (state/types.ts
 * OAuthGrant), kept in the shared state store so every replica redeems and
 * revokes the same ones.
 *
 * The authorization code and each refresh token are `<grant id>.<32 random
 * bytes>`; the store keeps only the SHA-256 of the one that may be redeemed
 * next, and redeeming swaps it for the next refresh token's hash atomically
 * (StateStore.swapOAuthSecret). So a code is used once (OAuth 2.1 §4.1.3),
 * refresh tokens rotate (§4.3.1), and a refresh token or code presented a
 * second time — a copy in someone else's hands — revokes the whole grant
 * (RFC 9700 §4.14.2, §4.5).
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import type { OAuthGrant, StateStore } from '../state/types.js';

/** A code must be redeemed within this (RFC 6749 §4.1.2: "a maximum ... of 10 minutes"; a client redeems at once). */
export const CODE_SECONDS = 60;
/** A grant whose refresh token is not used for this long is forgotten: the user logs in again. */
export const REFRESH_IDLE_SECONDS = 30 * 24 * 3600;

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('base64url');
}

function newSecret(grantId: string): string {
  return `${grantId}.${randomBytes(32).toString('base64url')}`;
}

/** The grant id a code or refresh token names. */
export function grantIdOf(secret: string): string | undefined {
  const m = /^([A-Za-z0-9_-]{16,64})\.[A-Za-z0-9_-]{43}$/.exec(secret);
  return m?.[1];
}

export type NewGrant = Omit<OAuthGrant, 'id' | 'secretHash' | 'pendingCode' | 'createdAt' | 'lastUsedAt' | 'expiresAt'>;

/** Records a consent; answers the authorization code. */
export async function createGrant(state: StateStore, grant: NewGrant, now = Date.now()): Promise<string> {
  const id = randomBytes(16).toString('base64url');
  const code = newSecret(id);
  await state.putOAuthGrant({ ...grant, id, secretHash: hashSecret(code), pendingCode: true, createdAt: now, lastUsedAt: now, expiresAt: now + CODE_SECONDS * 1000 });
  return code;
}

export type Redeemed = { ok: true; grant: OAuthGrant; refreshToken: string } | { ok: false; reason: string };

/**
 * Redeems a code (`code: true`) or refresh token for the next refresh token,
 * after `check` accepted the grant it names. A secret that names a grant
 * but is not its current one revokes the grant.
 */
export async function redeem(state: StateStore, secret: string, code: boolean, check: (grant: OAuthGrant) => string | undefined, now = Date.now()): Promise<Redeemed> {
  const id = grantIdOf(secret);
  const grant = id === undefined ? undefined : await state.getOAuthGrant(id);
  if (!grant) return { ok: false, reason: code ? 'The authorization code is unknown or has expired.' : 'The refresh token is unknown, revoked or has expired.' };
  const hash = hashSecret(secret);
  if (hash !== grant.secretHash || grant.pendingCode !== code) {
    // Used before, or a code where a refresh token belongs: someone holds a copy.
    await state.deleteOAuthGrant(grant.id);
    return { ok: false, reason: code ? 'The authorization code was already used; the grant is revoked.' : 'The refresh token was already used; the grant is revoked: log in again.' };
  }
  const refused = check(grant);
  if (refused !== undefined) return { ok: false, reason: refused };
  const refreshToken = newSecret(grant.id);
  const expiresAt = now + REFRESH_IDLE_SECONDS * 1000;
  if (!(await state.swapOAuthSecret(grant.id, hash, hashSecret(refreshToken), now, expiresAt))) {
    // Another request redeemed the same secret between our read and our swap: the same second
    // use as above, only closer together, so it revokes too (whoever won holds a dead grant).
    await state.deleteOAuthGrant(grant.id);
    return { ok: false, reason: code ? 'The authorization code was already used; the grant is revoked.' : 'The refresh token was already used; the grant is revoked: log in again.' };
  }
  return { ok: true, grant: { ...grant, lastUsedAt: now, expiresAt, pendingCode: false }, refreshToken };
}

/** Names a key's secret without revealing it: a grant made under one secret ends when the key is rotated. */
export function keyFingerprint(secretAccessKey: string): string {
  return createHmac('sha256', secretAccessKey).update('casket-oauth-grant-key-v1').digest('base64url');
}
