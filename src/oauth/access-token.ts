/**
 * Access tokens for the MCP endpoint, issued by casket's token endpoint
 * (token.ts): a JWS (RFC 7515, RFC 9068 profile: typ at+jwt), signed HS256
 * with a key derived (HKDF-SHA256, RFC 5869) from the secret of the
 * credential the token carries, named by `kid` = its access key id. So
 * every replica verifies a token with the credentials it already has — no
 * signing key to distribute — and removing or rotating the credential ends
 * its tokens at once, everywhere. The JOSE work is `jose`'s (audited,
 * maintained), not hand-written.
 *
 * Claims: iss (casket's origin), aud (the MCP endpoint's URL, RFC 8707: a
 * token for another casket or resource is refused), sub (access key id),
 * agent, client_id, gid (the grant: revoking it ends the token at the next
 * request), exp (ACCESS_TOKEN_SECONDS).
 */
import { createSecretKey, hkdfSync, type KeyObject } from 'node:crypto';
import { decodeProtectedHeader, jwtVerify, SignJWT } from 'jose';

export const ACCESS_TOKEN_SECONDS = 300;
const CONTEXT = 'casket-oauth-access-token-v1';
const TYP = 'at+jwt';

/**
 * The derived keys, kept as KeyObjects: deriving and importing a key per
 * request was most of a token check's cost (measured: docs/authorization.md).
 * Keyed by the secret, so a rotated key derives anew; bounded, as the
 * credentials are, and cleared whole when full.
 */
const derived = new Map<string, KeyObject>();
const MAX_DERIVED = 4096;

function keyOf(secretAccessKey: string): KeyObject {
  let key = derived.get(secretAccessKey);
  if (!key) {
    if (derived.size >= MAX_DERIVED) derived.clear();
    key = createSecretKey(new Uint8Array(hkdfSync('sha256', secretAccessKey, '', CONTEXT, 32)));
    derived.set(secretAccessKey, key);
  }
  return key;
}

export interface AccessClaims {
  accessKeyId: string;
  agent?: string;
  clientId: string;
  grantId: string;
}

export async function mintAccessToken(secretAccessKey: string, claims: AccessClaims, issuer: string, audience: string): Promise<string> {
  return new SignJWT({ client_id: claims.clientId, gid: claims.grantId, ...(claims.agent !== undefined && { agent: claims.agent }) })
    .setProtectedHeader({ alg: 'HS256', typ: TYP, kid: claims.accessKeyId })
    .setIssuer(issuer)
    .setAudience(audience)
    .setSubject(claims.accessKeyId)
    .setIssuedAt()
    .setExpirationTime(`${ACCESS_TOKEN_SECONDS}s`)
    .sign(keyOf(secretAccessKey));
}

/** The access key a token names (unverified: which secret to verify it with), or undefined when it is no casket access token. */
export function accessTokenKeyId(token: string): string | undefined {
  // Every token casket signs has a header that is a JSON object beginning `{"` (jose writes
  // it so), which base64url-encodes to `eyJ`: anything else (a `casket mcp token`, ckt1.…)
  // is none, told without decoding it — a failed decode throws, a tenth of an MCP read's CPU.
  if (!token.startsWith('eyJ')) return undefined;
  try {
    const header = decodeProtectedHeader(token);
    return header.typ === TYP && header.alg === 'HS256' && typeof header.kid === 'string' ? header.kid : undefined;
  } catch {
    return undefined;
  }
}

/** The token's claims when it holds: signed with this secret, for this audience and issuer, unexpired. */
export async function verifyAccessToken(token: string, secretAccessKey: string, issuer: string, audience: string): Promise<AccessClaims | undefined> {
  try {
    const { payload } = await jwtVerify(token, keyOf(secretAccessKey), { algorithms: ['HS256'], typ: TYP, issuer, audience, clockTolerance: 5 });
    if (typeof payload.sub !== 'string' || typeof payload.client_id !== 'string' || typeof payload.gid !== 'string' || (payload.agent !== undefined && typeof payload.agent !== 'string')) return undefined;
    return { accessKeyId: payload.sub, clientId: payload.client_id, grantId: payload.gid, ...(typeof payload.agent === 'string' && { agent: payload.agent }) };
  } catch {
    return undefined;
  }
}
