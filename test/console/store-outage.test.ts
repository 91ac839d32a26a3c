/**
 * The console while its state store cannot answer (src/console/routes.ts
 * liveSession and logout; docs/design.md §9): a session whose logout casket
 * cannot look up is refused — an outage must not undo a logout made on
 * another replica — and a logout that cannot be recorded says so (503),
 * keeps the browser's cookie, and leaves the session to hold once the store
 * is back, for the admin to log out again. Casket in this process on a real Redis that the test stops.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { hasRedis, startRedis, type RunningRedis } from '../helpers/redis.js';
import { need } from '../helpers/tools.js';
import { consoleApiStatus, consoleLogin } from './login.js';

describe.runIf(need('redis-server', hasRedis()))('the console during a state store outage', () => {
  let redis: RunningRedis;
  let c: InProcessCasket;

  beforeAll(async () => {
    redis = await startRedis();
    c = await startInProcess({ flags: { state: 'redis', redisUrl: redis.url, logLevel: 'error' } });
  });
  afterAll(async () => {
    await c?.stop();
    await redis?.stop();
  });

  const logout = async (cookie: string) => {
    const res = await fetch(`${c.url}/_casket/console/logout`, { method: 'POST', redirect: 'manual', headers: { origin: c.url, cookie } });
    return { status: res.status, setCookie: res.headers.get('set-cookie'), body: await res.text() };
  };
  /** Until the store answers again (ioredis reconnects on its own). */
  const storeBack = async (cookie: string) => {
    for (let i = 0; i < 100 && (await consoleApiStatus(c.url, cookie)) !== 200; i++) await new Promise((r) => setTimeout(r, 100));
  };

  it('refuses the session while the store is down, says a logout was not recorded, and logs out once it is back', async () => {
    const cookie = await consoleLogin(c.url, c.admin);
    expect(await consoleApiStatus(c.url, cookie)).toBe(200);
    await redis.stop();
    expect(await consoleApiStatus(c.url, cookie)).toBe(401);
    const notRecorded = await logout(cookie);
    expect(notRecorded.status).toBe(503);
    // The browser keeps its cookie, so that "Try again" can still end this session.
    expect(notRecorded.setCookie).toBeNull();
    expect(JSON.parse(notRecorded.body)).toEqual({ error: 'ServiceUnavailable', message: 'The logout could not be recorded in the state store; the session may still hold elsewhere. Try again.' });
    // The operator's log says whose logout was not recorded.
    const lines = c.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'console logout not recorded');
    expect(lines).toEqual([expect.objectContaining({ level: 50, accessKey: c.admin.accessKeyId, err: expect.anything() })]);

    await redis.start();
    await storeBack(cookie);
    // Not logged out: the session holds again.
    expect(await consoleApiStatus(c.url, cookie)).toBe(200);
    const out = await logout(cookie);
    expect(out.status).toBe(303);
    expect(out.setCookie).toBe('casket_console=; Path=/_casket; Max-Age=0; HttpOnly; SameSite=Strict');
    expect(await consoleApiStatus(c.url, cookie)).toBe(401);
  });
});
