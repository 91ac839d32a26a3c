/**
 * MCP clients, registered with Dynamic Client Registration (RFC 7591), kept
 * by no one: the client_id is the registration itself,
 *
 *   ckc1.<base64url JSON {n: client name, r: redirect URIs}>
 *
 * Registration is open to anyone (the MCP spec's clients register
 * themselves, unauthenticated), so a signed or stored id would prove nothing
 * more: whoever could forge an id could as well register the same metadata.
 * What protects a login is that the code goes only to a redirect URI the id
 * names, matched exactly (OAuth 2.1 §2.3.1), and that the consent page shows
 * the client's name and where it will be sent. Every replica reads an id
 * the same way; nothing is stored until a person consents.
 *
 * Redirect URIs: https, or http on a loopback address (RFC 8252 §7.3, what
 * desktop clients such as mcp-remote, Claude Code and VS Code listen on);
 * no fragment (RFC 6749 §3.1.2).
 */
const PREFIX = 'ckc1.';
const MAX_URIS = 10;
const MAX_NAME = 200;
const MAX_URI = 2000;

export interface OAuthClient {
  clientId: string;
  name: string;
  redirectUris: string[];
}

export class RegistrationError extends Error {}

export function allowedRedirect(uri: string): boolean {
  if (uri.length > MAX_URI) return false;
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return false;
  }
  if (url.hash !== '' || uri.includes('#')) return false;
  if (url.protocol === 'https:') return true;
  return url.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
}

/** RFC 7591 §2 metadata → the registered client; RegistrationError names what is wrong (invalid_redirect_uri / invalid_client_metadata). */
export function registerClient(metadata: unknown): OAuthClient {
  if (typeof metadata !== 'object' || metadata === null) throw new RegistrationError('invalid_client_metadata: the body must be a JSON object');
  const m = metadata as Record<string, unknown>;
  const uris = m.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > MAX_URIS || !uris.every((u) => typeof u === 'string')) throw new RegistrationError(`invalid_redirect_uri: redirect_uris must be 1 to ${MAX_URIS} URIs`);
  const bad = (uris as string[]).find((u) => !allowedRedirect(u));
  if (bad !== undefined) throw new RegistrationError(`invalid_redirect_uri: ${bad.slice(0, 200)} is neither https nor http on a loopback address, or has a fragment`);
  const method = m.token_endpoint_auth_method;
  if (method !== undefined && method !== 'none') throw new RegistrationError('invalid_client_metadata: casket registers public clients only (token_endpoint_auth_method "none"); PKCE protects the code');
  for (const [field, allowed] of [['grant_types', ['authorization_code', 'refresh_token']], ['response_types', ['code']]] as const) {
    const v = m[field];
    if (v !== undefined && (!Array.isArray(v) || !v.every((x) => (allowed as readonly unknown[]).includes(x)))) throw new RegistrationError(`invalid_client_metadata: ${field} may hold only ${allowed.join(', ')}`);
  }
  const name = typeof m.client_name === 'string' && m.client_name.trim() !== '' ? m.client_name.trim().slice(0, MAX_NAME) : 'Unnamed MCP client';
  const redirectUris = uris as string[];
  const clientId = PREFIX + Buffer.from(JSON.stringify({ n: name, r: redirectUris })).toString('base64url');
  return { clientId, name, redirectUris };
}

/** The client a client_id stands for, or undefined when it is none casket registered. */
export function clientOf(clientId: string | null | undefined): OAuthClient | undefined {
  if (!clientId?.startsWith(PREFIX) || clientId.length > 30_000) return undefined;
  try {
    const c = JSON.parse(Buffer.from(clientId.slice(PREFIX.length), 'base64url').toString('utf8')) as { n?: unknown; r?: unknown };
    if (typeof c.n !== 'string' || !Array.isArray(c.r) || !c.r.every((u) => typeof u === 'string' && allowedRedirect(u))) return undefined;
    return { clientId, name: c.n, redirectUris: c.r as string[] };
  } catch {
    return undefined;
  }
}
