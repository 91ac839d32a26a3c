/**
 * The console's routes as registered, with casket started inside each test
 * rather than in a beforeAll: Stryker (perTest coverage) counts what a
 * beforeAll runs as no test's, so a mutant of a route's path — the API's
 * session gate, logout, revoke — is tried only against tests that start
 * casket themselves. These answer what a browser without a session, or a
 * page from elsewhere, meets at each of them.
 */
import { describe, expect, it } from 'vitest';
import { startInProcess } from '../helpers/in-process.js';
import { consoleLogin } from './login.js';

describe('console route table', () => {
  it('gates the API on a session, and serves logout and revoke where the page posts them', async () => {
    const c = await startInProcess();
    try {
      for (const view of ['setup', 'activity', 'agents', 'agents/alice', 'object?bucket=b&key=k', 'connected-clients', 'diff?bucket=b&key=k&from=x']) {
        const res = await fetch(`${c.url}/_casket/console/api/${view}`);
        expect(res.status, view).toBe(401);
        expect(await res.json(), view).toEqual({ error: 'AccessDenied', message: 'Log in with an admin access key.' });
      }
      const revoke = await fetch(`${c.url}/_casket/console/api/connected-clients/some-id/revoke`, { method: 'POST', headers: { origin: c.url } });
      expect(revoke.status).toBe(401);
      await revoke.arrayBuffer();
      // With a session, a revoke from another page is refused by the route itself.
      const cookie = await consoleLogin(c.url, c.admin);
      const forged = await fetch(`${c.url}/_casket/console/api/connected-clients/some-id/revoke`, { method: 'POST', headers: { cookie, origin: 'http://evil.example' } });
      expect(forged.status).toBe(403);
      expect(await forged.json()).toEqual({ error: 'AccessDenied', message: 'Revoke from the console page.' });
      const out = await fetch(`${c.url}/_casket/console/logout`, { method: 'POST', redirect: 'manual', headers: { origin: c.url } });
      expect(out.status).toBe(303);
      expect(out.headers.get('location')).toBe('/_casket/console/login');
      const foreign = await fetch(`${c.url}/_casket/console/logout`, { method: 'POST', redirect: 'manual', headers: { origin: 'http://evil.example' } });
      expect(foreign.status).toBe(403);
      await foreign.arrayBuffer();
    } finally {
      await c.stop();
    }
  });
});
