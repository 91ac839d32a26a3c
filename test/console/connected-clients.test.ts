/**
 * The console's "Connected clients" view (issue 40 item 3;
 * src/console/connected-clients.ts) on two caskets sharing one Redis, in a
 * real browser: an admin sees the MCP clients' grants (client, agent,
 * created, last used), revokes one on casket one, and on casket two — the
 * same resource behind one address, as replicas behind a load balancer are —
 * its access token is refused at its next request and its refresh token at
 * once (src/oauth/verify.ts reads the grant on every request), while the
 * other client's go on working. The revoke is a POST from the console's own
 * page only (CSRF), answers no one without an admin session, and a made-up or
 * already revoked id changes nothing.
 *
 * The grants come from casket's own flow (register, login, consent, token:
 * test/oauth/flow.ts), as a client's would.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type Cred, type RunningCasket } from '../helpers/casket.js';
import { send } from '../helpers/raw.js';
import { hasRedis, startRedis, type RunningRedis } from '../helpers/redis.js';
import { need } from '../helpers/tools.js';
import { haveChromium, launch } from './browser.js';
import { consoleLogin } from './login.js';
import { authorizeUrl, consent, login, pkce, register } from '../oauth/flow.js';

const API = '/_casket/console/api/connected-clients';

describe.runIf(need('redis-server', hasRedis()) && haveChromium())('connected clients in the console, two caskets on one Redis', () => {
  let redis: RunningRedis;
  let one: RunningCasket;
  let two: RunningCasket;
  let browser: Browser;

  /** A client's login, consent and code redemption on casket one: its grant id and tokens. */
  async function connect(clientName: string, cred: Cred, agent = ''): Promise<{ id: string; access: string; refresh: string; clientId: string }> {
    const client = await register(one, 'http://127.0.0.1:9/callback', clientName);
    const { verifier, challenge } = pkce();
    const { tx } = await login(one, authorizeUrl(one, client, { code_challenge: challenge }), cred);
    const { location } = await consent(one, { tx: tx!, agent });
    const code = location!.searchParams.get('code')!;
    const t = await tokenOn(one, { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: client.client_id, redirect_uri: client.redirect_uris[0]!, resource: `${one.url}/_casket/mcp` });
    expect(t.status, t.body).toBe(200);
    const body = JSON.parse(t.body) as { access_token: string; refresh_token: string };
    return { id: body.refresh_token.split('.')[0]!, access: body.access_token, refresh: body.refresh_token, clientId: client.client_id };
  }

  /** The token endpoint of `casket`, reached at casket one's address (Host), as through a load balancer. */
  const tokenOn = (casket: RunningCasket, fields: Record<string, string>) => {
    const body = new URLSearchParams(fields).toString();
    return send(casket.url, 'POST', '/_casket/oauth/token', { host: new URL(one.url).host, 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(Buffer.byteLength(body)) }, body);
  };

  /** A ping to `casket`'s MCP endpoint with the token, at casket one's address: its status. */
  const pingOn = async (casket: RunningCasket, access: string) => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
    const headers = { host: new URL(one.url).host, authorization: `Bearer ${access}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'content-length': String(Buffer.byteLength(body)) };
    return (await send(casket.url, 'POST', '/_casket/mcp', headers, body)).status;
  };

  const listed = async (url: string, cookie: string) => {
    const res = await fetch(`${url}${API}`, { headers: { cookie } });
    expect(res.status).toBe(200);
    return ((await res.json()) as { clients: Array<{ id: string; clientName: string; agent: string | null }> }).clients;
  };

  beforeAll(async () => {
    redis = await startRedis();
    const args = ['--state', 'redis', '--redis-url', redis.url];
    one = await startCasket({ agents: ['alice'], args });
    two = await startCasket({ credentialsOf: one, args });
    browser = await launch();
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    await one?.stop();
    await two?.stop();
    await redis?.stop();
  });

  it('lists the grants and revokes one from the page: on the other casket its access token is refused at its next request, its refresh token at once', async () => {
    const claude = await connect('Claude Code', one.agents.alice!);
    const inspector = await connect('MCP Inspector', one.admin, 'ops');
    expect(await pingOn(two, claude.access)).toBe(200);
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${one.url}/_casket/console/login`);
    await page.fill('#accessKeyId', one.admin.accessKeyId);
    await page.fill('#secretAccessKey', one.admin.secretAccessKey);
    await Promise.all([page.waitForURL(/\/_casket\/console\/$/), page.click('button[type=submit]')]);
    await page.click('nav a[data-view=clients]');
    const row = page.locator(`tr[data-grant="${claude.id}"]`);
    await expect.poll(() => row.count()).toBe(1);
    expect(await row.textContent()).toContain('Claude Code');
    expect(await row.locator('td').nth(1).textContent()).toBe('alice');
    expect(await row.locator('time').count()).toBe(2);
    expect(await page.locator(`tr[data-grant="${inspector.id}"]`).count()).toBe(1);

    await page.click('button[aria-label="Revoke Claude Code"]');
    await expect.poll(() => page.textContent('.status')).toBe('Revoked Claude Code.');
    await expect.poll(() => row.count()).toBe(0);
    expect(await page.locator(`tr[data-grant="${inspector.id}"]`).count()).toBe(1);

    // The other casket reads the same store: the grant is gone there, its access token ends at its next
    // request (no waiting for its expiry) and its refresh token is refused.
    const cookie = await consoleLogin(two.url, two.admin);
    expect((await listed(two.url, cookie)).map((c) => c.id)).toEqual([inspector.id]);
    expect(await pingOn(two, claude.access)).toBe(401);
    const refreshed = await tokenOn(two, { grant_type: 'refresh_token', refresh_token: claude.refresh, client_id: claude.clientId });
    expect(refreshed.status).toBe(400);
    expect(JSON.parse(refreshed.body)).toMatchObject({ error: 'invalid_grant' });
    // The one not revoked goes on.
    expect(await pingOn(two, inspector.access)).toBe(200);
    expect((await tokenOn(two, { grant_type: 'refresh_token', refresh_token: inspector.refresh, client_id: inspector.clientId })).status).toBe(200);
    await context.close();
  });

  it('refuses a revoke from another origin, without an admin session, or by a made-up id, and deletes nothing', async () => {
    const grant = await connect('VS Code', one.agents.alice!);
    const cookie = await consoleLogin(one.url, one.admin);
    const revoke = (id: string, headers: Record<string, string>) => fetch(`${one.url}${API}/${encodeURIComponent(id)}/revoke`, { method: 'POST', headers });

    const foreign = await revoke(grant.id, { cookie, origin: 'http://evil.example' });
    expect(foreign.status).toBe(403);
    expect((await revoke(grant.id, { cookie })).status).toBe(403);
    expect((await revoke(grant.id, { origin: one.url })).status).toBe(401);
    // An agent's own key has no console session to revoke with: the login is refused.
    const agentLogin = await fetch(`${one.url}/_casket/console/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { origin: one.url, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ accessKeyId: one.agents.alice!.accessKeyId, secretAccessKey: one.agents.alice!.secretAccessKey }),
    });
    expect(agentLogin.status).toBe(403);
    expect(agentLogin.headers.get('set-cookie')).toBeNull();
    const madeUp = await revoke('AAAAAAAAAAAAAAAAAAAAAA', { cookie, origin: one.url });
    expect(madeUp.status).toBe(404);
    expect(((await madeUp.json()) as { error: string }).error).toBe('NoSuchGrant');
    expect((await listed(one.url, cookie)).map((c) => c.id)).toContain(grant.id);
    expect(await pingOn(one, grant.access)).toBe(200);

    const done = await revoke(grant.id, { cookie, origin: one.url });
    expect(done.status).toBe(200);
    expect((await revoke(grant.id, { cookie, origin: one.url })).status).toBe(404);
    expect(await pingOn(one, grant.access)).toBe(401);
  });
});
