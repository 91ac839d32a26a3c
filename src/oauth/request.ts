/**
 * One authorization request (OAuth 2.1 §4.1.1, with PKCE RFC 7636 and the
 * RFC 8707 resource), as the authorize endpoint checked it, and the signed
 * form of it the consent page carries.
 *
 * The consent form holds `tx` = cko1.<base64url JSON>.<HMAC-SHA256>, keyed by
 * the secret of the credential that logged in (as console sessions and MCP
 * tokens are, console/session.ts): it names that credential, the client, the
 * exact redirect URI, the PKCE challenge, the client's state and an expiry.
 * So the consent POST needs no session: the tx proves the login, and it is
 * the state/CSRF check — another site cannot make one for the user's key,
 * and every parameter the grant records comes from it, not from fields a
 * page could change. Rotating or removing the key voids it.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { CredentialLookup, Credential } from '../auth/credentials.js';

const PREFIX = 'cko1';
const CONTEXT = 'casket-oauth-consent-v1\n';
/** How long a person has between login and consent. */
export const CONSENT_SECONDS = 600;

export interface AuthorizationRequest {
  clientId: string;
  clientName: string;
  redirectUri: string;
  codeChallenge: string;
  /** The client's opaque state, echoed on the redirect (OAuth 2.1 §4.1.1). */
  state?: string;
  resource: string;
}

function mac(secret: string, payload: string): string {
  return createHmac('sha256', secret).update(CONTEXT + payload).digest('base64url');
}

export function signRequest(credential: Credential, request: AuthorizationRequest, now = Date.now()): string {
  const payload = Buffer.from(JSON.stringify({ k: credential.accessKeyId, e: Math.floor(now / 1000) + CONSENT_SECONDS, n: randomBytes(9).toString('base64url'), q: request })).toString('base64url');
  return `${PREFIX}.${payload}.${mac(credential.secretAccessKey, payload)}`;
}

/** The credential and request a tx stands for, or undefined: forged, expired, or its key gone or rotated. */
export function verifyRequest(lookup: CredentialLookup, tx: string | null | undefined, now = Date.now()): { credential: Credential; request: AuthorizationRequest } | undefined {
  const parts = (tx ?? '').split('.');
  if (parts.length !== 3 || parts[0] !== PREFIX) return undefined;
  let claims: { k?: unknown; e?: unknown; q?: AuthorizationRequest };
  try {
    claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as typeof claims;
  } catch {
    return undefined;
  }
  if (typeof claims.k !== 'string' || typeof claims.e !== 'number' || typeof claims.q !== 'object' || claims.q === null) return undefined;
  const credential = lookup(claims.k);
  if (!credential) return undefined;
  const expected = Buffer.from(mac(credential.secretAccessKey, parts[1]!));
  const given = Buffer.from(parts[2]!);
  if (expected.length !== given.length || !timingSafeEqual(expected, given) || claims.e * 1000 <= now) return undefined;
  return { credential, request: claims.q };
}
