/**
 * The console's "Connected clients" view (issue 40 item 3;
 * src/console/connected-clients.ts) on two caskets sharing one Redis, in a
 * real browser: an admin sees the MCP clients' grants (client, agent,
 * created, last used), revokes one on casket one, and the grant is gone for
 * casket two too: its refresh token is refused at once. The revoke is a POST
 * from the console's own page only (CSRF), answers no one without an admin
 * session, and a made-up or already revoked id changes nothing.
 *
 * The grants are made through the grant store API (src/oauth/grants.ts) on
 * the caskets' Redis, as the token endpoint makes them after a consent.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGrant, redeem } from '../../src/oauth/grants.js';
import { RedisStateStore } from '../../src/state/redis.js';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { hasRedis, startRedis, type RunningRedis } from '../helpers/redis.js';
import { need } from '../helpers/tools.js';
import { haveChromium, launch } from './browser.js';
import { consoleLogin } from './login.js';

const API = '/_casket/console/api/connected-clients';

describe.runIf(need('redis-server', hasRedis()) && haveChromium())('connected clients in the console, two caskets on one Redis', () => {
  let redis: RunningRedis;
  let one: RunningCasket;
  let two: RunningCasket;
  let store: RedisStateStore;
  let browser: Browser;

  /** A consent redeemed as the token endpoint does: answers the grant id and its refresh token. */
  async function connect(clientName: string, accessKeyId: string, agent?: string): Promise<{ id: string; refreshToken: string }> {
    const code = await createGrant(store, {
      clientId: `https://${clientName.toLowerCase().replace(/\W+/g, '-')}.example/client.json`,
      clientName,
      redirectUri: 'http://127.0.0.1:33418/callback',
      accessKeyId,
      ...(agent !== undefined && { agent }),
      resource: `${one.url}/_casket/mcp`,
      codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    });
    const redeemed = await redeem(store, code, true, () => undefined);
    if (!redeemed.ok) throw new Error(redeemed.reason);
    return { id: redeemed.grant.id, refreshToken: redeemed.refreshToken };
  }

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
    store = await RedisStateStore.connect(redis.url, { ttlMs: 60_000, maxEntries: 1000 });
    browser = await launch();
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    await store?.close();
    await one?.stop();
    await two?.stop();
    await redis?.stop();
  });

  it('lists the grants and revokes one from the page: gone on the other casket, its refresh token refused at once', async () => {
    const claude = await connect('Claude Code', one.agents.alice!.accessKeyId, 'alice');
    const inspector = await connect('MCP Inspector', one.admin.accessKeyId);
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

    // The other casket reads the same store: the grant is gone there, and its refresh token with it.
    const cookie = await consoleLogin(two.url, two.admin);
    expect((await listed(two.url, cookie)).map((c) => c.id)).toEqual([inspector.id]);
    const refreshed = await redeem(store, claude.refreshToken, false, () => undefined);
    expect(refreshed.ok).toBe(false);
    // The one not revoked still refreshes.
    expect((await redeem(store, inspector.refreshToken, false, () => undefined)).ok).toBe(true);
    await context.close();
  });

  it('refuses a revoke from another origin, without an admin session, or by a made-up id, and deletes nothing', async () => {
    const grant = await connect('VS Code', one.agents.alice!.accessKeyId, 'alice');
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
    expect(await store.getOAuthGrant(grant.id)).toBeDefined();

    const done = await revoke(grant.id, { cookie, origin: one.url });
    expect(done.status).toBe(200);
    expect((await revoke(grant.id, { cookie, origin: one.url })).status).toBe(404);
    expect(await store.getOAuthGrant(grant.id)).toBeUndefined();
  });
});
