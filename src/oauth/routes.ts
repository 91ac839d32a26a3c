/**
 * casket's authorization server for its MCP endpoint (MCP authorization,
 * https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization;
 * OAuth 2.1 draft-ietf-oauth-v2-1-13), mounted by server.ts:
 *
 *   GET  /.well-known/oauth-protected-resource[/_casket/mcp]  RFC 9728 (metadata.ts)
 *   GET  /.well-known/oauth-authorization-server              RFC 8414 (metadata.ts)
 *   POST /_casket/oauth/register    RFC 7591 dynamic registration (clients.ts)
 *   GET  /_casket/oauth/authorize   checks the request, shows the login (or, with a console session, the consent)
 *   POST /_casket/oauth/authorize   the login: access key + secret (braked, console/login-brake.ts)
 *   POST /_casket/oauth/consent     the person's answer: a code to the redirect URI, or access_denied
 *   POST /_casket/oauth/token       authorization_code (PKCE S256) and refresh_token grants
 *
 * All are public by nature — a client has no credentials before it has a
 * token — so they answer whether or not anonymous access is configured.
 * Nothing here logs a code, a token, a secret or a query string: the
 * request log has the path only.
 */
import { createHash } from 'node:crypto';
import { Hono, type Context } from 'hono';
import type { Credential, CredentialLookup } from '../auth/credentials.js';
import { AGENT_NAME, resolveAgent } from '../guard/identity.js';
import type { Logger } from '../log.js';
import type { StateStore } from '../state/types.js';
import { consentPage, errorPage, loginPage, pageHeaders } from '../console/authorize.js';
import { LoginBrake } from '../console/login-brake.js';
import { liveSession } from '../console/routes.js';
import { sameOrigin, sameSecret } from '../console/session.js';
import { ACCESS_TOKEN_SECONDS, mintAccessToken } from './access-token.js';
import { ClientMetadataError, fetchClientMetadata, isMetadataUrl } from './client-metadata.js';
import { clientOf, registerClient, RegistrationError, type OAuthClient } from './clients.js';
import { createGrant, keyFingerprint, redeem } from './grants.js';
import { AUTHORIZATION_SERVER_PATH, authorizationServerMetadata, OAUTH_PATH, requestOrigin, PROTECTED_RESOURCE_PATH, protectedResourceMetadata, resourceUrl } from './metadata.js';
import { signRequest, verifyRequest, type AuthorizationRequest } from './request.js';
import { MCP_PATH } from '../mcp/http.js';

export interface OAuthOptions {
  lookup: () => CredentialLookup;
  state: StateStore;
  log: Logger;
  /** Served over TLS: the origin is https. */
  secure: boolean;
  /** --public-url: the origin clients reach casket at. */
  publicUrl?: string;
  /** The console login's brake (console/login-brake.ts): a guesser gets one budget across both login pages. */
  brake?: LoginBrake;
  /** Tests only: let a client_id metadata document live on a loopback or private address (client-metadata.ts). */
  allowPrivateClientMetadata?: boolean;
}

type Env = { Bindings: { incoming?: { socket?: { remoteAddress?: string } } } };

/** PKCE code_challenge / code_verifier: 43 to 128 unreserved characters (RFC 7636 §4.1, §4.2). */
const PKCE_VALUE = /^[A-Za-z0-9._~-]{43,128}$/;
const MAX_FORM = 16 * 1024;

export function s256(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

export function oauthApp(options: OAuthOptions): Hono<Env> {
  const app = new Hono<Env>();
  const brake = options.brake ?? new LoginBrake();
  const origin = (c: Context<Env>) => requestOrigin(c.req.header('host'), options.secure, options.publicUrl);
  const html = (c: Context<Env>, body: string, status: 200 | 400 | 401 | 403 | 429, formTarget?: string) => c.body(body, status, pageHeaders(formTarget));
  const form = async (c: Context<Env>): Promise<URLSearchParams | undefined> => {
    const length = Number(c.req.header('content-length') ?? 'NaN');
    if (!(length <= MAX_FORM) || !(c.req.header('content-type') ?? '').startsWith('application/x-www-form-urlencoded')) return undefined;
    return new URLSearchParams(await c.req.text());
  };

  // Discovery documents (metadata.ts). CORS-open: they are public, and browser-based clients read them.
  const json = (c: Context<Env>, body: object) => c.json(body, 200, { 'access-control-allow-origin': '*', 'cache-control': 'max-age=300' });
  app.get(PROTECTED_RESOURCE_PATH, (c) => json(c, protectedResourceMetadata(origin(c))));
  app.get(PROTECTED_RESOURCE_PATH + MCP_PATH, (c) => json(c, protectedResourceMetadata(origin(c))));
  app.get(AUTHORIZATION_SERVER_PATH, (c) => json(c, authorizationServerMetadata(origin(c))));

  app.post(`${OAUTH_PATH}/register`, async (c) => {
    const length = Number(c.req.header('content-length') ?? 'NaN');
    if (!(length <= 64 * 1024)) return c.json({ error: 'invalid_client_metadata', error_description: 'The registration must be a JSON body of at most 64 KiB.' }, 400);
    let client: OAuthClient;
    try {
      client = registerClient(JSON.parse(await c.req.text()));
    } catch (e) {
      const [error, description] = e instanceof RegistrationError ? [e.message.split(':')[0]!, e.message.slice(e.message.indexOf(':') + 2)] : ['invalid_client_metadata', 'The body is not JSON.'];
      return c.json({ error, error_description: description }, 400);
    }
    options.log.info({ client: client.name }, 'oauth client registered');
    // RFC 7591 §3.2.1: the registered metadata, with the client_id.
    return c.json({ client_id: client.clientId, client_id_issued_at: Math.floor(Date.now() / 1000), client_name: client.name, redirect_uris: client.redirectUris, grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' }, 201, { 'cache-control': 'no-store' });
  });

  /** The client a client_id names: registered (clients.ts) or a metadata document URL (client-metadata.ts). */
  const client = async (clientId: string | undefined): Promise<OAuthClient | string> => {
    if (!clientId) return 'The request has no client_id.';
    if (isMetadataUrl(clientId)) {
      try {
        return await fetchClientMetadata(clientId, { allowPrivate: options.allowPrivateClientMetadata === true });
      } catch (e) {
        if (e instanceof ClientMetadataError) return e.message;
        throw e;
      }
    }
    return clientOf(clientId) ?? 'The client_id is not one casket registered: the client must register again.';
  };

  /**
   * Checks an authorization request (OAuth 2.1 §4.1.1). Until the client and
   * its redirect URI are known good, a failure is shown here and never
   * redirected (§4.1.2.1: an unchecked redirect_uri makes casket an open
   * redirector); after that, it goes back to the client as error=….
   */
  const checkRequest = async (c: Context<Env>, q: URLSearchParams): Promise<{ request: AuthorizationRequest } | { page: string } | { redirect: string }> => {
    const found = await client(q.get('client_id') ?? undefined);
    if (typeof found === 'string') return { page: found };
    const redirectUri = q.get('redirect_uri') ?? '';
    // Exact string match (OAuth 2.1 §2.3.1; RFC 9700 §4.1.3): no prefix, no normalisation.
    if (!found.redirectUris.includes(redirectUri)) return { page: 'The redirect_uri is not one this client registered (they must match exactly).' };
    const state = q.get('state') ?? undefined;
    const back = (error: string, description: string) => ({ redirect: errorRedirect(redirectUri, error, description, state, origin(c)) });
    if (q.get('response_type') !== 'code') return back('unsupported_response_type', 'Only response_type=code is supported.');
    // PKCE is required, S256 only (OAuth 2.1 §4.1.1, §7.5.2; MCP authorization: "MUST use S256").
    const challenge = q.get('code_challenge') ?? '';
    if (q.get('code_challenge_method') !== 'S256' || !PKCE_VALUE.test(challenge)) return back('invalid_request', 'PKCE is required: code_challenge with code_challenge_method=S256.');
    const resource = q.get('resource') ?? resourceUrl(origin(c));
    if (resource !== resourceUrl(origin(c))) return back('invalid_target', `casket issues tokens only for its MCP endpoint, ${resourceUrl(origin(c))}.`);
    if (state !== undefined && state.length > 1024) return back('invalid_request', 'state is longer than 1024 characters.');
    return { request: { clientId: found.clientId, clientName: found.name, redirectUri, codeChallenge: challenge, ...(state !== undefined && { state }), resource } };
  };

  const consent = (c: Context<Env>, credential: Credential, request: AuthorizationRequest, status: 200 | 403 = 200, message?: string) =>
    html(c, consentPage({ clientName: request.clientName, redirectUri: request.redirectUri, credential, tx: signRequest(credential, request), ...(message !== undefined && { message }) }), status, request.redirectUri);

  app.get(`${OAUTH_PATH}/authorize`, async (c) => {
    const q = new URL(c.req.url).searchParams;
    const checked = await checkRequest(c, q);
    if ('page' in checked) return html(c, errorPage(checked.page), 400);
    if ('redirect' in checked) return c.redirect(checked.redirect, 303);
    // An admin already logged in to the console is not asked again.
    const session = await liveSession(options.lookup(), options.state, c.req.header('cookie'));
    if (session) return consent(c, session.credential, checked.request);
    return html(c, loginPage(checked.request.clientName, `${OAUTH_PATH}/authorize${new URL(c.req.url).search}`), 200);
  });

  app.post(`${OAUTH_PATH}/authorize`, async (c) => {
    const q = new URL(c.req.url).searchParams;
    const checked = await checkRequest(c, q);
    if ('page' in checked) return html(c, errorPage(checked.page), 400);
    if ('redirect' in checked) return c.redirect(checked.redirect, 303);
    const action = `${OAUTH_PATH}/authorize${new URL(c.req.url).search}`;
    const name = checked.request.clientName;
    if (!sameOrigin(c.req.header('origin'), c.req.header('host'))) return html(c, loginPage(name, action, 'The login was not sent from this page. Reload it and try again.'), 403);
    const f = await form(c);
    if (!f) return html(c, loginPage(name, action, 'That access key and secret key do not match a casket credential.'), 401);
    const accessKeyId = f.get('accessKeyId') ?? '';
    // The socket's peer, as the console's login (routes.ts): a header any client writes would pick its own counter.
    const address = c.env?.incoming?.socket?.remoteAddress ?? 'unknown';
    const wait = brake.wait(accessKeyId, address);
    if (wait > 0) {
      options.log.warn({ accessKey: accessKeyId, address, retryAfterMs: wait }, 'oauth login braked');
      c.header('retry-after', String(Math.ceil(wait / 1000)));
      return html(c, loginPage(name, action, 'Too many failed logins: wait a moment and try again.'), 429);
    }
    const credential = accessKeyId === '' ? undefined : options.lookup()(accessKeyId);
    // Compared in constant time whether or not the key exists (console/session.ts checkLogin).
    const matches = sameSecret(f.get('secretAccessKey') ?? '', credential?.secretAccessKey ?? `no key ${Math.random()}`);
    if (!credential || !matches) {
      brake.failed(accessKeyId, address);
      options.log.info({ accessKey: accessKeyId, address }, 'oauth login refused');
      return html(c, loginPage(name, action, 'That access key and secret key do not match a casket credential.'), 401);
    }
    brake.succeeded(accessKeyId, address);
    options.log.info({ accessKey: credential.accessKeyId, address, client: name }, 'oauth login');
    return consent(c, credential, checked.request);
  });

  app.post(`${OAUTH_PATH}/consent`, async (c) => {
    // CSRF: the POST must come from casket's page (Origin), and carry the tx it showed (request.ts).
    if (!sameOrigin(c.req.header('origin'), c.req.header('host'))) return html(c, errorPage('The consent was not sent from casket\'s page.'), 403);
    const f = await form(c);
    const verified = verifyRequest(options.lookup(), f?.get('tx'));
    if (!f || !verified) return html(c, errorPage('The consent form expired, was changed, or its key was rotated.'), 403);
    const { credential, request } = verified;
    if (f.get('decision') !== 'allow') {
      options.log.info({ accessKey: credential.accessKeyId, client: request.clientName }, 'oauth consent denied');
      return c.redirect(errorRedirect(request.redirectUri, 'access_denied', 'The user did not allow access.', request.state, origin(c)), 303);
    }
    const named = (f.get('agent') ?? '').trim();
    let agent: string | undefined;
    try {
      if (named !== '' && !AGENT_NAME.test(named)) throw new Error('An agent name is 1 to 128 printable ASCII characters without spaces.');
      // A person's key may act as any agent; a key bound to an agent yields only that one (guard/identity.ts).
      agent = resolveAgent(credential.agent, named || undefined);
    } catch (e) {
      return consent(c, credential, request, 403, (e as Error).message);
    }
    const code = await createGrant(options.state, { clientId: request.clientId, clientName: request.clientName, redirectUri: request.redirectUri, accessKeyId: credential.accessKeyId, ...(agent !== undefined && { agent }), keyFingerprint: keyFingerprint(credential.secretAccessKey), resource: request.resource, codeChallenge: request.codeChallenge });
    options.log.info({ accessKey: credential.accessKeyId, agent, client: request.clientName }, 'oauth consent');
    const to = new URL(request.redirectUri);
    to.searchParams.set('code', code);
    if (request.state !== undefined) to.searchParams.set('state', request.state);
    to.searchParams.set('iss', origin(c));
    return c.redirect(to.toString(), 303);
  });

  app.post(`${OAUTH_PATH}/token`, async (c) => {
    // RFC 6749 §5.1/§5.2: JSON, never cached.
    const headers = { 'cache-control': 'no-store', pragma: 'no-cache', 'access-control-allow-origin': '*' };
    const fail = (error: string, description: string, status: 400 | 401 = 400) => c.json({ error, error_description: description }, status, headers);
    const f = await form(c);
    if (!f) return fail('invalid_request', 'The token request must be application/x-www-form-urlencoded, at most 16 KiB.');
    const clientId = f.get('client_id') ?? '';
    const here = resourceUrl(origin(c));
    const resource = f.get('resource');
    if (resource !== null && resource !== here) return fail('invalid_target', `casket issues tokens only for its MCP endpoint, ${here}.`);
    const grantType = f.get('grant_type');
    let secret: string;
    let check: Parameters<typeof redeem>[3];
    const lookup = options.lookup();
    // The key must still be there with the same secret, and its agent binding must still allow the grant's agent.
    const keyHolds = (g: { accessKeyId: string; agent?: string; keyFingerprint?: string }): string | undefined => {
      const credential = lookup(g.accessKeyId);
      if (!credential || g.keyFingerprint !== keyFingerprint(credential.secretAccessKey)) return 'The access key behind this grant was removed or rotated: log in again.';
      try {
        resolveAgent(credential.agent, g.agent);
      } catch (e) {
        return (e as Error).message;
      }
      return undefined;
    };
    if (grantType === 'authorization_code') {
      secret = f.get('code') ?? '';
      const verifier = f.get('code_verifier') ?? '';
      const redirectUri = f.get('redirect_uri');
      check = (g) => {
        if (g.clientId !== clientId) return 'The code was issued to another client.';
        if (g.redirectUri !== redirectUri) return 'redirect_uri does not match the authorization request\'s exactly.';
        if (!PKCE_VALUE.test(verifier) || s256(verifier) !== g.codeChallenge) return 'The code_verifier does not match the code_challenge (PKCE S256).';
        if (g.expiresAt < Date.now()) return 'The authorization code has expired.';
        return keyHolds(g);
      };
    } else if (grantType === 'refresh_token') {
      secret = f.get('refresh_token') ?? '';
      check = (g) => (g.clientId !== clientId ? 'The refresh token was issued to another client.' : keyHolds(g));
    } else {
      return fail('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token.');
    }
    const redeemed = await redeem(options.state, secret, grantType === 'authorization_code', check);
    if (!redeemed.ok) {
      options.log.info({ grantType, reason: redeemed.reason }, 'oauth token refused');
      return fail('invalid_grant', redeemed.reason);
    }
    const grant = redeemed.grant;
    const credential = lookup(grant.accessKeyId)!;
    const accessToken = await mintAccessToken(credential.secretAccessKey, { accessKeyId: grant.accessKeyId, ...(grant.agent !== undefined && { agent: grant.agent }), clientId: grant.clientId, grantId: grant.id }, origin(c), grant.resource);
    options.log.info({ grantType, accessKey: grant.accessKeyId, agent: grant.agent, client: grant.clientName }, 'oauth token issued');
    return c.json({ access_token: accessToken, token_type: 'Bearer', expires_in: ACCESS_TOKEN_SECONDS, refresh_token: redeemed.refreshToken }, 200, headers);
  });
  return app;
}

/** An error answer on the client's redirect URI (OAuth 2.1 §4.1.2.1), with iss (RFC 9207). */
function errorRedirect(redirectUri: string, error: string, description: string, state: string | undefined, issuer: string): string {
  const to = new URL(redirectUri);
  to.searchParams.set('error', error);
  to.searchParams.set('error_description', description);
  if (state !== undefined) to.searchParams.set('state', state);
  to.searchParams.set('iss', issuer);
  return to.toString();
}
