/**
 * Console login guesses are braked (issue 37, finding 7;
 * src/console/login-brake.ts): wrong secrets for a key from one address are
 * soon refused with 429 and Retry-After, before the secret is compared; the
 * right secret from another address still logs in; after the wait the
 * braked address logs in too.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE_MS, LoginBrake } from '../../src/console/login-brake.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';

interface Answer {
  status: number;
  retryAfter: string | undefined;
  cookie: boolean;
}

/** A login form POST from `from` (any 127.0.0.0/8 address is this host's loopback on Linux). */
function login(url: string, from: string, accessKeyId: string, secretAccessKey: string): Promise<Answer> {
  const u = new URL(url);
  const body = new URLSearchParams({ accessKeyId, secretAccessKey }).toString();
  return new Promise((resolve, reject) => {
    const req = request(
      { host: u.hostname, port: u.port, method: 'POST', path: '/_casket/console/login', localAddress: from, headers: { host: u.host, origin: u.origin, 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(Buffer.byteLength(body)) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'], cookie: (res.headers['set-cookie'] ?? []).some((c) => c.startsWith('casket_console=cks1.')) }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('console login brake', () => {
  let c: InProcessCasket;
  beforeAll(async () => {
    c = await startInProcess();
  });
  afterAll(async () => c?.stop());

  it('refuses a guessing address with 429 and Retry-After, lets the admin in from elsewhere, and again after the wait', async () => {
    const key = c.admin.accessKeyId;
    const guesses: number[] = [];
    for (let i = 0; i < 5; i++) guesses.push((await login(c.url, '127.0.0.1', key, `wrong-${i}`)).status);
    expect(guesses).toEqual([401, 401, 401, 401, 401]);
    const braked = await login(c.url, '127.0.0.1', key, 'wrong-again');
    expect(braked.status).toBe(429);
    const wait = Number(braked.retryAfter);
    expect(wait).toBeGreaterThanOrEqual(1);
    // Braked before the secret is compared: the right one is refused too while the wait lasts.
    expect(await login(c.url, '127.0.0.1', key, c.admin.secretAccessKey)).toMatchObject({ status: 429, cookie: false });
    // The real admin, elsewhere, is not locked out by someone else's guesses.
    expect(await login(c.url, '127.0.0.2', key, c.admin.secretAccessKey)).toMatchObject({ status: 303, cookie: true });
    await new Promise((resolve) => setTimeout(resolve, wait * 1000 + 100));
    expect(await login(c.url, '127.0.0.1', key, c.admin.secretAccessKey)).toMatchObject({ status: 303, cookie: true });
  });

  it('brakes a key that does not exist as it brakes a real one, so 429s do not tell which keys exist', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await login(c.url, '127.0.0.3', 'NOSUCHKEY', `wrong-${i}`)).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
  });
});

/**
 * The brake's rules over hours, on a clock the test moves (the class takes
 * one): how long each kind of guesser waits, and when it is forgotten.
 */
describe('console login brake, by its clock', () => {
  const MIN = 60_000;
  let now = 0;
  const brake = () => new LoginBrake(() => now);
  const fail = (b: LoginBrake, key: string, address: string, times: number) => {
    for (let i = 0; i < times; i++) b.failed(key, address);
  };

  it('one address guessing one key: 5 free failures, then waits doubling from a second up to 5 minutes; a quiet 15 minutes forgets it', () => {
    now = 1_000_000;
    const b = brake();
    fail(b, 'K', '10.0.0.1', 4);
    expect(b.wait('K', '10.0.0.1')).toBe(0);
    fail(b, 'K', '10.0.0.1', 1);
    expect(b.wait('K', '10.0.0.1')).toBe(BASE_MS);
    fail(b, 'K', '10.0.0.1', 1);
    expect(b.wait('K', '10.0.0.1')).toBe(2 * BASE_MS);
    fail(b, 'K', '10.0.0.1', 100);
    expect(b.wait('K', '10.0.0.1')).toBe(5 * MIN);
    // The wait runs down with the clock.
    now += 2 * MIN;
    expect(b.wait('K', '10.0.0.1')).toBe(3 * MIN);
    // Over 15 minutes after the last failure: forgotten, and the next failure counts from one again,
    // whether or not an attempt came in between.
    now += 13 * MIN + 1;
    fail(b, 'K', '10.0.0.1', 1);
    expect(b.wait('K', '10.0.0.1')).toBe(0);
    // 15 minutes to the millisecond is not over: four more make five.
    now += 15 * MIN;
    fail(b, 'K', '10.0.0.1', 3);
    expect(b.wait('K', '10.0.0.1')).toBe(0);
    now += 15 * MIN;
    expect(b.wait('K', '10.0.0.1')).toBe(0);
    fail(b, 'K', '10.0.0.1', 1);
    expect(b.wait('K', '10.0.0.1')).toBe(BASE_MS);
  });

  it('one address trying many keys waits after 20; many addresses on one key after 50, at most a minute; a success clears the address, not the key', () => {
    now = 50_000_000;
    const b = brake();
    for (let i = 0; i < 19; i++) b.failed(`K${i}`, '10.0.0.2');
    expect(b.wait('OTHER', '10.0.0.2')).toBe(0);
    b.failed('K19', '10.0.0.2');
    expect(b.wait('OTHER', '10.0.0.2')).toBe(BASE_MS);
    fail(b, 'K20', '10.0.0.2', 40);
    expect(b.wait('OTHER', '10.0.0.2')).toBe(5 * MIN);
    b.succeeded('OTHER', '10.0.0.2');
    expect(b.wait('OTHER', '10.0.0.2')).toBe(0);

    for (let i = 0; i < 49; i++) b.failed('ADMIN', `10.1.0.${i}`);
    expect(b.wait('ADMIN', '10.9.9.9')).toBe(0);
    b.failed('ADMIN', '10.1.1.0');
    expect(b.wait('ADMIN', '10.9.9.9')).toBe(BASE_MS);
    for (let i = 0; i < 60; i++) b.failed('ADMIN', `10.2.0.${i}`);
    expect(b.wait('ADMIN', '10.9.9.9')).toBe(MIN);
    b.succeeded('ADMIN', '10.9.9.9');
    expect(b.wait('ADMIN', '10.9.9.9')).toBe(MIN);
  });

  it('keeps at most 10,000 counters of a kind: the least recently failed is forgotten first', () => {
    now = 90_000_000;
    const b = brake();
    fail(b, 'K', '10.3.0.1', 5);
    expect(b.wait('K', '10.3.0.1')).toBe(BASE_MS);
    // 9,999 other pairs, each of another key and address: 10,000 pairs kept, the first one still braked.
    for (let i = 0; i < 9_999; i++) b.failed(`G${i}`, `guess-${i}`);
    expect(b.wait('K', '10.3.0.1')).toBe(BASE_MS);
    b.failed('G-last', 'guess-last');
    expect(b.wait('K', '10.3.0.1')).toBe(0);
    // A counter that fails again is the most recent: the next one out is another.
    const again = brake();
    fail(again, 'K', '10.3.0.1', 5);
    for (let i = 0; i < 9_999; i++) again.failed(`G${i}`, `guess-${i}`);
    again.failed('K', '10.3.0.1');
    again.failed('G-last', 'guess-last');
    expect(again.wait('K', '10.3.0.1')).toBe(2 * BASE_MS);
  });
});
