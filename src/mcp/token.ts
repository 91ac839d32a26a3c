/**
 * Bearer tokens for the MCP endpoint (docs/design.md §8). The MCP authorization spec
 * (https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization)
 * has HTTP clients send `Authorization: Bearer <token>`; casket's tokens are
 * minted for one casket credential, offline, by whoever holds its secret
 * (`casket mcp token`), so no endpoint hands out tokens and every replica
 * verifies them with the credentials it already has:
 *
 *   ckt1.<base64url JSON {k: access key id, a?: agent, e: expiry, epoch s}>.<base64url HMAC-SHA256>
 *
 * keyed by the credential's secret key. Removing or rotating the key revokes
 * its tokens. A token names at most one agent; a key bound to agent A cannot
 * mint a token that acts as B (checked again at every call by the S3 path).
 * Tokens travel in the Authorization header only, never in a URL.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

const PREFIX = 'ckt1';
const CONTEXT = 'casket-mcp-token-v1\n';

export interface TokenClaims {
  accessKeyId: string;
  agent?: string;
  /** Expiry, seconds since the epoch. */
  expires: number;
}

function mac(secret: string, payload: string): string {
  return createHmac('sha256', secret).update(CONTEXT + payload).digest('base64url');
}

export function mintToken(accessKeyId: string, secretKey: string, options: { agent?: string; ttlSeconds: number; now?: number }): string {
  const now = options.now ?? Date.now();
  // JSON.stringify leaves out `a` when there is no agent.
  const claims = { k: accessKeyId, a: options.agent, e: Math.floor(now / 1000) + options.ttlSeconds };
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return `${PREFIX}.${payload}.${mac(secretKey, payload)}`;
}

/** The claims a token makes, unverified: which key to look up. undefined when it is not a casket token. */
export function readToken(token: string): (TokenClaims & { payload: string; signature: string }) | undefined {
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== PREFIX) return undefined;
  let c: { k?: unknown; a?: unknown; e?: unknown } | null;
  try {
    c = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as { k?: unknown; a?: unknown; e?: unknown } | null;
  } catch {
    return undefined;
  }
  if (c === null || typeof c.k !== 'string' || typeof c.e !== 'number' || (c.a !== undefined && typeof c.a !== 'string')) return undefined;
  return { accessKeyId: c.k, ...(typeof c.a === 'string' && { agent: c.a }), expires: c.e, payload: parts[1]!, signature: parts[2]! };
}

/** Whether the token was minted with this secret and has not expired. */
export function tokenHolds(claims: { payload: string; signature: string; expires: number }, secretKey: string, now = Date.now()): boolean {
  const expected = Buffer.from(mac(secretKey, claims.payload));
  const given = Buffer.from(claims.signature);
  return expected.length === given.length && timingSafeEqual(expected, given) && claims.expires * 1000 > now;
}
