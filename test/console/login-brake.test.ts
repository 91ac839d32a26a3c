/**
 * Console login guesses are braked (issue 37, finding 7;
 * src/console/login-brake.ts): wrong secrets for a key from one address are
 * soon refused with 429 and Retry-After, before the secret is compared; the
 * right secret from another address still logs in; after the wait the
 * braked address logs in too.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
