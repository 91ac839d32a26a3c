/**
 * What the console writes to the operator's log (src/console/routes.ts), one
 * line per event an operator audits: a login refused (and why), braked,
 * taken, a logout, and an MCP client's grant revoked — each with the access
 * key that acted and the client's address, never a secret. Casket in this
 * process at log level info (test/console/login-log.test.ts holds the "never
 * a secret" part for every login).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { consoleLogin, consoleLogout } from './login.js';

let c: InProcessCasket;
beforeAll(async () => {
  c = await startInProcess({ keys: ['person'], flags: { logLevel: 'info' } });
});
afterAll(async () => {
  await c?.stop();
});

/** The log's lines with this message, as objects. */
const lines = (msg: string) => c.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === msg);
const login = (accessKeyId: string, secretAccessKey: string) =>
  fetch(`${c.url}/_casket/console/login`, { method: 'POST', redirect: 'manual', headers: { origin: c.url }, body: new URLSearchParams({ accessKeyId, secretAccessKey }) });

describe('the console in the operator\'s log', () => {
  it('logs refused, braked and taken logins with the key, the address and why', async () => {
    expect((await login(c.keys.person!.accessKeyId, c.keys.person!.secretAccessKey)).status).toBe(403);
    for (let i = 0; i < 5; i++) expect((await login('AKNOSUCHKEY', `wrong-${i}`)).status).toBe(401);
    expect((await login('AKNOSUCHKEY', 'wrong-again')).status).toBe(429);
    await consoleLogin(c.url, c.admin);

    const refused = lines('console login refused');
    expect(refused[0]).toMatchObject({ level: 30, accessKey: c.keys.person!.accessKeyId, address: '127.0.0.1', reason: 'not-admin' });
    expect(refused[1]).toMatchObject({ accessKey: 'AKNOSUCHKEY', address: '127.0.0.1', reason: 'invalid' });
    expect(refused).toHaveLength(6);
    const braked = lines('console login braked');
    expect(braked).toHaveLength(1);
    expect(braked[0]).toMatchObject({ level: 40, accessKey: 'AKNOSUCHKEY', address: '127.0.0.1' });
    expect(braked[0]!.retryAfterMs).toBeGreaterThan(0);
    expect(lines('console login')).toEqual([expect.objectContaining({ level: 30, accessKey: c.admin.accessKeyId, address: '127.0.0.1' })]);
  });

  it('logs a logout and a revoked grant with the key that did it', async () => {
    const cookie = await consoleLogin(c.url, c.admin);
    const now = Date.now();
    await c.casket.services.state.putOAuthGrant({
      id: 'loggedgrant00000000000', clientId: 'client-logged', clientName: 'Logged client', redirectUri: 'http://127.0.0.1:9/callback', accessKeyId: c.keys.person!.accessKeyId, agent: 'ops',
      resource: new URL('/_casket/mcp', c.url).toString(), codeChallenge: 'x', secretHash: 'x', pendingCode: false, createdAt: now, lastUsedAt: now, expiresAt: now + 60_000,
    });
    const revoked = await fetch(`${c.url}/_casket/console/api/connected-clients/loggedgrant00000000000/revoke`, { method: 'POST', headers: { cookie, origin: c.url } });
    expect(revoked.status).toBe(200);
    expect(lines('oauth grant revoked')).toEqual([
      expect.objectContaining({ level: 30, accessKey: c.admin.accessKeyId, grant: 'loggedgrant00000000000', client: 'Logged client', grantKey: c.keys.person!.accessKeyId, agent: 'ops' }),
    ]);
    expect(await consoleLogout(c.url, cookie)).toBe(303);
    expect(lines('console logout')).toEqual([expect.objectContaining({ level: 30, accessKey: c.admin.accessKeyId })]);
  });
});
