/**
 * /_casket/console: the operator's web page (docs/design.md §9), served by
 * casket itself. Everything under it answers only to an admin session
 * (session.ts), except the login page and the static assets (plain HTML, CSS
 * and ES modules in ./assets, copied to dist by `npm run build`; nothing is
 * fetched from elsewhere at run time).
 *
 *   GET  /_casket/console            the console (login page when there is no session)
 *   GET  /_casket/console/login      the login form
 *   POST /_casket/console/login      access key + secret key → session cookie
 *   POST /_casket/console/logout     clears it
 *   GET  /_casket/console/assets/*   CSS and scripts
 *   GET  /_casket/console/api/*      the views' JSON (api.ts)
 *   POST /_casket/console/api/connected-clients/{id}/revoke   ends an MCP client's grant (connected-clients.ts)
 *
 * Every answer carries a Content-Security-Policy that allows scripts and
 * styles from casket only — no inline script, no style attribute — and no
 * framing (https://www.w3.org/TR/CSP3/). A POST must come from casket's own
 * page (SameSite=Strict cookie, and its Origin header names this host). The
 * secret key travels only in the login POST's body, which no log line reads.
 * Repeated wrong secrets are braked per key and client address
 * (login-brake.ts): 429 with Retry-After.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { Hono, type Context } from 'hono';
import type { CredentialLookup, Credential } from '../auth/credentials.js';
import type { Logger } from '../log.js';
import { activity, agent, agents, diff, object, setup, type ConsoleDeps } from './api.js';
import { connectedClients, revokeConnectedClient } from './connected-clients.js';
import { LoginBrake } from './login-brake.js';
import type { StateStore } from '../state/types.js';
import { checkLogin, clearedCookie, mintSession, sameOrigin, sessionCookie, sessionFromCookies, verifiedSession, type VerifiedSession } from './session.js';

export const CONSOLE_PATH = '/_casket/console';

export const CONTENT_SECURITY_POLICY = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  // Not no-referrer: under it a browser sends `Origin: null` with a form POST, and the origin check refuses the login.
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
};

const TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  css: 'text/css; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  svg: 'image/svg+xml',
};

/** The assets, read once: a fixed set of names, so no path from a request reaches the file system. */
function loadAssets(): Map<string, { body: string; type: string }> {
  const dir = new URL('./assets/', import.meta.url);
  const assets = new Map<string, { body: string; type: string }>();
  for (const name of readdirSync(dir)) {
    const ext = name.slice(name.lastIndexOf('.') + 1);
    // Stryker disable next-line ConditionalExpression: every file in ./assets is HTML, CSS or a script; the test keeps out what a future file of another kind would be
    if (TYPES[ext]) assets.set(name, { body: readFileSync(new URL(name, dir), 'utf8'), type: TYPES[ext] });
  }
  return assets;
}

const MESSAGES = {
  invalid: 'That access key and secret key do not match a casket credential.',
  'not-admin': 'That credential is not an admin key: the console is for admin keys only.',
  origin: 'The login was not sent from this page. Reload it and try again.',
  braked: 'Too many failed logins: wait a moment and try again.',
} as const;

// Stryker disable next-line Regex,StringLiteral: the only messages are MESSAGES' own words, and none holds a character HTML gives a meaning to; escaped all the same against one that will
const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

export interface ConsoleOptions {
  /** The credential lookup in force (it changes when credentials reload). */
  lookup: () => CredentialLookup;
  /** Served over TLS: the cookie is Secure. */
  secure: boolean;
  log: Logger;
  /** The brake on wrong secrets, shared with the MCP authorization login (src/oauth/routes.ts): one budget for both pages. */
  brake?: LoginBrake;
  /** A session was logged out: streams opened with it end now (here; other replicas at their next check). */
  onLogout?: () => void;
}

/**
 * The session a request's cookie stands for, if it holds: signed, unexpired,
 * its key still admin, and not logged out on any replica (the shared state
 * store). What other endpoints a browser reaches (the event stream) accept
 * besides SigV4. A store that cannot answer refuses the session: a logout
 * must not be undone by an outage.
 */
export async function liveSession(lookup: CredentialLookup, state: Pick<StateStore, 'consoleSessionRevoked'>, cookieHeader: string | undefined): Promise<VerifiedSession | undefined> {
  const session = verifiedSession(lookup, sessionFromCookies(cookieHeader));
  if (!session) return undefined;
  const revoked = await state.consoleSessionRevoked(session.id).catch(() => true);
  return revoked ? undefined : session;
}

type Env = { Variables: { credential: Credential }; Bindings: { incoming?: { socket?: { remoteAddress?: string } } } };

/** The console's routes, as a Hono app the server mounts (app.route('/', ...)). */
export function consoleApp(deps: ConsoleDeps, options: ConsoleOptions): Hono<Env> {
  const app = new Hono<Env>();
  const assets = loadAssets();
  const brake = options.brake ?? new LoginBrake();
  const page = (c: Context<Env>, name: string, status: 200 | 401 | 403 | 429 = 200, message?: string) => {
    const asset = assets.get(name)!;
    const body = message === undefined ? asset.body : asset.body.replace('<!--message-->', escapeHtml(message));
    return c.body(body, status, { 'content-type': asset.type, 'cache-control': 'no-store' });
  };
  const session = async (c: Context<Env>) => (await liveSession(options.lookup(), deps.services.state, c.req.header('cookie')))?.credential;

  app.use(`${CONSOLE_PATH}/*`, async (c, next) => {
    await next();
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) c.res.headers.set(name, value);
  });
  app.use(CONSOLE_PATH, async (c, next) => {
    await next();
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) c.res.headers.set(name, value);
  });

  const home = async (c: Context<Env>) => ((await session(c)) ? page(c, 'console.html') : c.redirect(`${CONSOLE_PATH}/login`, 303));
  app.get(CONSOLE_PATH, home);
  app.get(`${CONSOLE_PATH}/`, home);
  app.get(`${CONSOLE_PATH}/login`, async (c) => ((await session(c)) ? c.redirect(`${CONSOLE_PATH}/`, 303) : page(c, 'login.html')));
  app.post(`${CONSOLE_PATH}/login`, async (c) => {
    if (!sameOrigin(c.req.header('origin'), c.req.header('host'))) return page(c, 'login.html', 403, MESSAGES.origin);
    const length = Number(c.req.header('content-length') ?? 'NaN');
    if (!(length <= 8192)) return page(c, 'login.html', 401, MESSAGES.invalid);
    const form = new URLSearchParams(await c.req.text());
    const accessKeyId = form.get('accessKeyId') ?? '';
    // The socket's peer, not X-Forwarded-For: a header any client can write would let it pick its own counter.
    // Stryker disable next-line OptionalChaining,StringLiteral: @hono/node-server hands every request it serves its IncomingMessage, whose socket knows its peer while the request is read; only another adapter would not
    const address = c.env?.incoming?.socket?.remoteAddress ?? 'unknown';
    const wait = brake.wait(accessKeyId, address);
    if (wait > 0) {
      options.log.warn({ accessKey: accessKeyId, address, retryAfterMs: wait }, 'console login braked');
      c.header('retry-after', String(Math.ceil(wait / 1000)));
      return page(c, 'login.html', 429, MESSAGES.braked);
    }
    const result = checkLogin(options.lookup(), accessKeyId, form.get('secretAccessKey') ?? '');
    if (!result.ok) {
      // A right secret of a key that is not admin is no guess: only wrong secrets are braked.
      if (result.reason === 'invalid') brake.failed(accessKeyId, address);
      // The access key id is not a secret; the secret key is never logged.
      options.log.info({ accessKey: accessKeyId, address, reason: result.reason }, 'console login refused');
      return page(c, 'login.html', result.reason === 'not-admin' ? 403 : 401, MESSAGES[result.reason]);
    }
    brake.succeeded(accessKeyId, address);
    options.log.info({ accessKey: result.credential.accessKeyId, address }, 'console login');
    c.header('set-cookie', sessionCookie(mintSession(result.credential), options.secure));
    c.header('cache-control', 'no-store');
    return c.redirect(`${CONSOLE_PATH}/`, 303);
  });
  app.post(`${CONSOLE_PATH}/logout`, async (c) => {
    if (!sameOrigin(c.req.header('origin'), c.req.header('host'))) return c.json({ error: 'AccessDenied', message: 'Log out from the console page.' }, 403);
    const ending = verifiedSession(options.lookup(), sessionFromCookies(c.req.header('cookie')));
    if (ending) {
      try {
        // Recorded where every replica looks, until the session would have expired anyway.
        await deps.services.state.revokeConsoleSession(ending.id, ending.expiresAt);
      } catch (e) {
        options.log.error({ err: e, accessKey: ending.credential.accessKeyId }, 'console logout not recorded');
        return c.json({ error: 'ServiceUnavailable', message: 'The logout could not be recorded in the state store; the session may still hold elsewhere. Try again.' }, 503);
      }
      options.log.info({ accessKey: ending.credential.accessKeyId }, 'console logout');
      options.onLogout?.();
    }
    // Only now: a logout the store did not record (503 above) keeps the cookie, so that trying again can still end it.
    c.header('set-cookie', clearedCookie(options.secure));
    return c.redirect(`${CONSOLE_PATH}/login`, 303);
  });
  app.get(`${CONSOLE_PATH}/assets/:name`, (c) => {
    const asset = assets.get(c.req.param('name'));
    if (!asset || asset.type.startsWith('text/html')) return c.notFound();
    return c.body(asset.body, 200, { 'content-type': asset.type, 'cache-control': 'no-cache' });
  });

  // The views' JSON: a session or nothing (401, which the page turns into the login form).
  app.use(`${CONSOLE_PATH}/api/*`, async (c, next) => {
    const credential = await session(c);
    if (!credential) return c.json({ error: 'AccessDenied', message: 'Log in with an admin access key.' }, 401);
    c.set('credential', credential);
    c.header('cache-control', 'no-store');
    await next();
  });
  const query = (c: Context<Env>) => new URL(c.req.url).searchParams;
  const guarded = (run: (c: Context<Env>) => Promise<unknown>) => async (c: Context<Env>) => {
    try {
      return c.json(await run(c));
    } catch (e) {
      options.log.error({ err: e }, 'console view failed');
      return c.json({ error: 'InternalError' }, 500);
    }
  };
  app.get(`${CONSOLE_PATH}/api/activity`, guarded((c) => activity(deps, query(c))));
  app.get(`${CONSOLE_PATH}/api/agents`, guarded(() => agents(deps)));
  app.get(
    `${CONSOLE_PATH}/api/agents/:agent`,
    guarded((c) =>
      // Stryker disable next-line StringLiteral: a :agent parameter matches one character at least, so it is never absent
      agent(deps, c.req.param('agent') ?? ''),
    ),
  );
  app.get(`${CONSOLE_PATH}/api/object`, guarded((c) => object(deps, query(c).get('bucket') ?? '', query(c).get('key') ?? '')));
  app.get(`${CONSOLE_PATH}/api/setup`, guarded(() => setup(deps)));
  app.get(`${CONSOLE_PATH}/api/connected-clients`, guarded((c) => connectedClients(deps.services.state, c.get('credential'))));
  app.post(`${CONSOLE_PATH}/api/connected-clients/:id/revoke`, async (c) => {
    // A POST that changes something must come from the console's own page (CSRF), as login and logout.
    if (!sameOrigin(c.req.header('origin'), c.req.header('host'))) return c.json({ error: 'AccessDenied', message: 'Revoke from the console page.' }, 403);
    const credential = c.get('credential');
    try {
      // Stryker disable next-line StringLiteral: a :id parameter matches one character at least, so it is never absent
      const result = await revokeConnectedClient(deps.services.state, credential, c.req.param('id') ?? '');
      if (!result.ok) return c.json({ error: 'NoSuchGrant', message: 'No such connected client (already revoked, expired, or not yours).' }, 404);
      const { grant } = result;
      options.log.info({ accessKey: credential.accessKeyId, grant: grant.id, client: grant.clientName, grantKey: grant.accessKeyId, agent: grant.agent }, 'oauth grant revoked');
      return c.json({ revoked: grant.id });
    } catch (e) {
      options.log.error({ err: e }, 'console revoke failed');
      return c.json({ error: 'ServiceUnavailable', message: 'The revocation could not be recorded in the state store. Try again.' }, 503);
    }
  });
  app.get(`${CONSOLE_PATH}/api/diff`, async (c) => {
    const credential = c.get('credential');
    try {
      const res = await diff(deps, credential, query(c));
      const body = typeof res.body === 'string' ? res.body : JSON.stringify(res.body);
      // Stryker disable next-line LogicalOperator,StringLiteral: diffFor names the content type of every text body it answers (a diff or JSON, changes/diff.ts); the fallback is for an answer that would not
      const textType = res.contentType ?? 'text/plain; charset=utf-8';
      return c.body(body, res.status as 200, { 'content-type': typeof res.body === 'string' ? textType : 'application/json', ...res.headers });
    } catch (e) {
      const s3 = e as { code?: string; status?: number; message?: string };
      if (typeof s3.code === 'string' && typeof s3.status === 'number') return c.json({ error: s3.code, message: s3.message }, s3.status as 400);
      options.log.error({ err: e }, 'console diff failed');
      return c.json({ error: 'InternalError' }, 500);
    }
  });
  return app;
}
