/**
 * The OAuth side of an MCP client, for the tests of casket's authorization
 * server: a client registered with RFC 7591, the login and consent forms
 * posted as the browser posts them (same Origin), and the token endpoint.
 * The full flow with a real browser and the MCP SDK's own client auth is in
 * flow.test.ts; these let the attack tests reach each step directly.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { Cred, RunningCasket } from '../helpers/casket.js';

export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export interface Registered {
  client_id: string;
  redirect_uris: string[];
}

export async function register(casket: Pick<RunningCasket, 'url'>, redirectUri = 'http://127.0.0.1:9/callback', name = 'Test client'): Promise<Registered> {
  const res = await fetch(new URL('/_casket/oauth/register', casket.url), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: name, redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' }) });
  if (res.status !== 201) throw new Error(`register: ${res.status} ${await res.text()}`);
  return (await res.json()) as Registered;
}

export function authorizeUrl(casket: Pick<RunningCasket, 'url'>, client: Registered, params: Record<string, string | undefined>): URL {
  const url = new URL('/_casket/oauth/authorize', casket.url);
  const all: Record<string, string | undefined> = { response_type: 'code', client_id: client.client_id, redirect_uri: client.redirect_uris[0], code_challenge_method: 'S256', state: 'st-1', resource: new URL('/_casket/mcp', casket.url).toString(), ...params };
  for (const [k, v] of Object.entries(all)) if (v !== undefined) url.searchParams.set(k, v);
  return url;
}

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

/** Posts the login form at an authorize URL as casket's page would; the answer (the consent page, or why not). */
export async function login(casket: Pick<RunningCasket, 'url'>, url: URL, cred: Cred, headers: Record<string, string> = { origin: new URL(casket.url).origin }): Promise<{ status: number; html: string; tx: string | undefined; location: string | null }> {
  const res = await fetch(url, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: form({ accessKeyId: cred.accessKeyId, secretAccessKey: cred.secretAccessKey }) });
  const html = await res.text();
  return { status: res.status, html, tx: /name="tx" value="([^"]+)"/.exec(html)?.[1], location: res.headers.get('location') };
}

/** Posts the consent form; the redirect it answers (the code, or an error), or the page. */
export async function consent(casket: Pick<RunningCasket, 'url'>, fields: Record<string, string>, headers: Record<string, string> = { origin: new URL(casket.url).origin }): Promise<{ status: number; location: URL | undefined; html: string }> {
  const res = await fetch(new URL('/_casket/oauth/consent', casket.url), { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: form({ decision: 'allow', ...fields }) });
  const location = res.headers.get('location');
  return { status: res.status, location: location === null ? undefined : new URL(location), html: await res.text() };
}

export interface TokenAnswer {
  status: number;
  body: { access_token?: string; refresh_token?: string; expires_in?: number; error?: string; error_description?: string };
}

export async function token(casket: Pick<RunningCasket, 'url'>, fields: Record<string, string>): Promise<TokenAnswer> {
  const res = await fetch(new URL('/_casket/oauth/token', casket.url), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form(fields) });
  return { status: res.status, body: (await res.json()) as TokenAnswer['body'] };
}

/** Login, consent and code redemption: a client's tokens for `cred` (as `agent`). */
export async function tokensFor(casket: Pick<RunningCasket, 'url'>, cred: Cred, agent = '', resource = new URL('/_casket/mcp', casket.url).toString()): Promise<{ client: Registered; access: string; refresh: string }> {
  const client = await register(casket);
  const { verifier, challenge } = pkce();
  const { tx } = await login(casket, authorizeUrl(casket, client, { code_challenge: challenge, resource }), cred);
  if (!tx) throw new Error('login: no consent form');
  const { location } = await consent(casket, { tx, agent });
  const code = location?.searchParams.get('code');
  if (!code) throw new Error(`consent: ${location}`);
  const t = await token(casket, { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: client.client_id, redirect_uri: client.redirect_uris[0]!, resource });
  if (!t.body.access_token || !t.body.refresh_token) throw new Error(`token: ${JSON.stringify(t.body)}`);
  return { client, access: t.body.access_token, refresh: t.body.refresh_token };
}

/** A JSON-RPC POST to /_casket/mcp with a bearer token. */
export async function mcpPost(casket: Pick<RunningCasket, 'url'>, accessToken: string | undefined, message: object): Promise<{ status: number; wwwAuthenticate: string | null; json: any }> {
  const res = await fetch(new URL('/_casket/mcp', casket.url), { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(accessToken && { authorization: `Bearer ${accessToken}` }) }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, ...message }) });
  const text = await res.text();
  return { status: res.status, wwwAuthenticate: res.headers.get('www-authenticate'), json: text ? JSON.parse(text) : undefined };
}

/** A client's redirect URI on 127.0.0.1: resolves each code (or error) the browser is sent back with. */
export async function callbackServer(): Promise<{ url: string; next(): Promise<URLSearchParams>; close(): Promise<void> }> {
  const waiting: Array<(q: URLSearchParams) => void> = [];
  const server: Server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' }).end('You can close this window.');
    const q = new URL(req.url ?? '/', 'http://x').searchParams;
    waiting.shift()?.(q);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/callback`,
    next: () => new Promise((r) => waiting.push(r)),
    close: () => new Promise((r) => server.close(() => r())),
  };
}
