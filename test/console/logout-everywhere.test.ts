/**
 * Logout ends a console session on every casket (issue 37, finding 4;
 * src/console/session.ts, routes.ts): two caskets share one Redis; an admin
 * logs in on one, the cookie works on both, logs out on one, and a copy of
 * the cookie is refused on both from then on, by the console's APIs and by
 * the event stream.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { hasRedis, startRedis, type RunningRedis } from '../helpers/redis.js';
import { need } from '../helpers/tools.js';
import { subscribe } from '../events/sse.js';
import { consoleApiStatus, consoleLogin, consoleLogout } from './login.js';

describe.runIf(need('redis-server', hasRedis()))('console logout on two caskets sharing Redis', () => {
  let redis: RunningRedis;
  let one: RunningCasket;
  let two: RunningCasket;

  beforeAll(async () => {
    redis = await startRedis();
    const args = ['--state', 'redis', '--redis-url', redis.url];
    one = await startCasket({ args });
    two = await startCasket({ credentialsOf: one, args });
  });

  afterAll(async () => {
    await one?.stop();
    await two?.stop();
    await redis?.stop();
  });

  it('refuses the cookie on the other casket once it logged out on one', async () => {
    const cookie = await consoleLogin(one.url, one.admin);
    expect(await consoleApiStatus(two.url, cookie)).toBe(200);
    // Another session of the same key is not this one: it stays.
    const other = await consoleLogin(two.url, one.admin);
    expect(await consoleLogout(one.url, cookie)).toBe(303);
    expect(await consoleApiStatus(two.url, cookie)).toBe(401);
    expect(await consoleApiStatus(one.url, cookie)).toBe(401);
    expect(await consoleApiStatus(two.url, cookie, 'activity')).toBe(401);
    expect((await subscribe(two.url, undefined, '/_casket/events', { cookie })).status).toBe(403);
    expect(await consoleApiStatus(two.url, other)).toBe(200);
  });
});
