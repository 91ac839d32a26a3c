/**
 * The console's session (docs/design.md §9): an operator logs in with an
 * admin access key and its secret key; casket answers a cookie that holds
 *
 *   cks1.<base64url JSON {k: access key id, e: expiry, epoch s, n: nonce}>.<base64url HMAC-SHA256>
 *
 * keyed by that credential's secret, as the MCP tokens are (src/mcp/token.ts),
 * so every replica verifies a session with the credentials it already has and
 * no session table is shared. Removing or rotating the key, or taking its
 * admin flag away, ends its sessions at the next request. The context string
 * differs from the MCP token's, so neither can stand for the other.
 *
 * The cookie (RFC 6265bis): HttpOnly (no script reads it), SameSite=Strict
 * (no other site's page sends it, the first defence against CSRF),
 * Path=/_casket (S3 requests never carry it), Secure under TLS, and Max-Age
 * as long as the token lives.
 *
 * Logout revokes the session for every replica: its id (the token's nonce)
 * goes into the shared state store until the session's own expiry
 * (StateStore.revokeConsoleSession), and every request with a session asks
 * the store (routes.ts liveSession), so a copy of the cookie taken before
 * logout is refused everywhere.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Credential, CredentialLookup } from '../auth/credentials.js';

const PREFIX = 'cks1';
const CONTEXT = 'casket-console-session-v1\n';
export const SESSION_COOKIE = 'casket_console';
/** An operator's working day; then log in again. */
export const SESSION_SECONDS = 8 * 3600;

function mac(secret: string, payload: string): string {
  return createHmac('sha256', secret).update(CONTEXT + payload).digest('base64url');
}

/** Equal strings, in time that depends on neither: both are hashed to 32 bytes first. */
export function sameSecret(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

export type LoginResult = { ok: true; credential: Credential } | { ok: false; reason: 'invalid' | 'not-admin' };

/**
 * Checks a login in constant time whatever failed: an unknown key is
 * compared against a made-up secret, so the answer's timing does not tell
 * which keys exist. Only after the secret matched does it say "not admin".
 */
export function checkLogin(lookup: CredentialLookup, accessKeyId: string, secretAccessKey: string): LoginResult {
  // Stryker disable next-line ConditionalExpression,StringLiteral: a shortcut only; no credential has an empty access key id (config.ts refuses one), so the lookup answers undefined as well
  const credential = accessKeyId === '' ? undefined : lookup(accessKeyId);
  const matches = sameSecret(secretAccessKey, credential?.secretAccessKey ?? randomBytes(32).toString('hex'));
  if (!credential || !matches) return { ok: false, reason: 'invalid' };
  if (!credential.admin) return { ok: false, reason: 'not-admin' };
  return { ok: true, credential };
}

export function mintSession(credential: Credential, now = Date.now()): string {
  const claims = { k: credential.accessKeyId, e: Math.floor(now / 1000) + SESSION_SECONDS, n: randomBytes(12).toString('base64url') };
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return `${PREFIX}.${payload}.${mac(credential.secretAccessKey, payload)}`;
}

/** The admin credential a session token stands for, or undefined: forged, expired, key gone or no longer admin. */
export function verifySession(lookup: CredentialLookup, token: string | undefined, now = Date.now()): Credential | undefined {
  return verifiedSession(lookup, token, now)?.credential;
}

export interface VerifiedSession {
  credential: Credential;
  /** What a logout revokes: the token's nonce, unique per login. */
  id: string;
  /** Epoch ms. */
  expiresAt: number;
}

/** verifySession, with the session's id and expiry (what logout records). */
export function verifiedSession(lookup: CredentialLookup, token: string | undefined, now = Date.now()): VerifiedSession | undefined {
  if (!token) return undefined;
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== PREFIX) return undefined;
  let claims: { k?: unknown; e?: unknown; n?: unknown };
  try {
    claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as { k?: unknown; e?: unknown; n?: unknown };
  } catch {
    return undefined;
  }
  if (typeof claims.k !== 'string' || typeof claims.e !== 'number' || typeof claims.n !== 'string') return undefined;
  const credential = lookup(claims.k);
  if (!credential?.admin) return undefined;
  const expected = Buffer.from(mac(credential.secretAccessKey, parts[1]!));
  const given = Buffer.from(parts[2]!);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
  return claims.e * 1000 > now ? { credential, id: claims.n, expiresAt: claims.e * 1000 } : undefined;
}

/** The session cookie's value from a Cookie header (RFC 6265 §5.4: `name=value; name2=value2`). */
export function sessionFromCookies(header: string | undefined): string | undefined {
  // Stryker disable next-line StringLiteral: no header and any text without `=` find no cookie alike
  for (const pair of (header ?? '').split(';')) {
    const eq = pair.indexOf('=');
    // Stryker disable next-line EqualityOperator: a pair that starts with `=` has an empty name, which is not the session cookie's either way
    if (eq > 0 && pair.slice(0, eq).trim() === SESSION_COOKIE) return pair.slice(eq + 1).trim();
  }
  return undefined;
}

export function sessionCookie(token: string, secure: boolean): string {
  return `${SESSION_COOKIE}=${token}; Path=/_casket; Max-Age=${SESSION_SECONDS}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}

export function clearedCookie(secure: boolean): string {
  return `${SESSION_COOKIE}=; Path=/_casket; Max-Age=0; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}

/**
 * Whether a request that changes something comes from casket's own pages:
 * its Origin names this very host (the Fetch standard sends Origin on every
 * POST, https://fetch.spec.whatwg.org/#origin-header). With SameSite=Strict
 * this is the CSRF defence OWASP calls "verifying origin with standard
 * headers"; a request without Origin is refused.
 */
export function sameOrigin(origin: string | undefined, host: string | undefined): boolean {
  if (!origin || !host) return false;
  try {
    return new URL(origin).host === host;
  } catch {
    return false;
  }
}
