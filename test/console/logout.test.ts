/**
 * Console logout with casket in this process (src/console/routes.ts), so
 * that `npm run mutate:rooms` sees it: the event stream a session opened
 * ends at once when that session logs out (not at the stream's next
 * periodic check, 15 seconds on), and a logout without a session — a second
 * tab, an expired cookie — still clears the cookie and goes to the login page.
 * test/events/stream-credentials.test.ts holds the same against a spawned casket.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { subscribe } from '../events/sse.js';
import { consoleLogin } from './login.js';

/** Well under the stream's 15 s check: only the logout's own recheck ends it this soon. */
const AT_ONCE_MS = 5000;

let c: InProcessCasket;
beforeAll(async () => {
  c = await startInProcess();
});
afterAll(async () => {
  await c?.stop();
});

const logout = (headers: Record<string, string>) => fetch(`${c.url}/_casket/console/logout`, { method: 'POST', redirect: 'manual', headers: { origin: c.url, ...headers } });

describe('console logout', () => {
  it('ends the event stream its session opened at once', async () => {
    const cookie = await consoleLogin(c.url, c.admin);
    const stream = await subscribe(c.url, undefined, '/_casket/events', { cookie });
    expect(stream.status).toBe(200);
    const started = Date.now();
    expect((await logout({ cookie })).status).toBe(303);
    const ended = await Promise.race([stream.ended.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), AT_ONCE_MS))]);
    stream.close();
    expect(ended, `still open ${Date.now() - started} ms after the logout`).toBe(true);
    expect(stream.messages.map((m) => m.event)).toContain('revoked');
  });

  it('without a session, or with a forged one, clears the cookie and sends to the login page', async () => {
    for (const headers of [{}, { cookie: 'casket_console=cks1.e30.forged' }] as Array<Record<string, string>>) {
      const res = await logout(headers);
      expect(res.status).toBe(303);
      expect(res.headers.get('location')).toBe('/_casket/console/login');
      expect(res.headers.get('set-cookie')).toBe('casket_console=; Path=/_casket; Max-Age=0; HttpOnly; SameSite=Strict');
    }
  });
});
