/**
 * The console's login form as casket reads it (src/console/routes.ts, POST
 * /_casket/console/login): a form of up to 8 KiB, announced by its
 * Content-Length, is read; a longer one, or one sent without a length
 * (chunked), is refused unread. Only wrong secrets count towards the brake
 * (login-brake.ts): the right secret of a key that is not admin is no guess,
 * and a login that succeeds clears its address's count.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { send } from '../helpers/raw.js';

let c: InProcessCasket;
beforeAll(async () => {
  c = await startInProcess({ keys: ['person'] });
});
afterAll(async () => {
  await c?.stop();
});

/** A login form POST of `body` from `from` (any 127.0.0.0/8 address is this host's loopback on Linux): status and whether it set the session. */
function post(from: string, body: string): Promise<{ status: number; session: boolean }> {
  const u = new URL(c.url);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: u.hostname, port: u.port, method: 'POST', path: '/_casket/console/login', localAddress: from, headers: { host: u.host, origin: u.origin, 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(Buffer.byteLength(body)) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, session: (res.headers['set-cookie'] ?? []).some((s) => s.startsWith('casket_console=cks1.')) }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
const form = (accessKeyId: string, secretAccessKey: string) => new URLSearchParams({ accessKeyId, secretAccessKey }).toString();
/** The admin's form padded with an extra field to exactly `bytes`. */
const padded = (bytes: number) => {
  const base = `${form(c.admin.accessKeyId, c.admin.secretAccessKey)}&pad=`;
  return base + 'x'.repeat(bytes - base.length);
};

describe('console login form', () => {
  it('reads a form of 8192 bytes and refuses one of 8193 unread', async () => {
    expect(Buffer.byteLength(padded(8192))).toBe(8192);
    expect(await post('127.0.0.11', padded(8192))).toEqual({ status: 303, session: true });
    expect(await post('127.0.0.11', padded(8193))).toEqual({ status: 401, session: false });
  });

  it('refuses a form sent without a Content-Length', async () => {
    const u = new URL(c.url);
    const res = await send(c.url, 'POST', '/_casket/console/login', { host: u.host, origin: u.origin, 'content-type': 'application/x-www-form-urlencoded' }, [Buffer.from(form(c.admin.accessKeyId, c.admin.secretAccessKey))]);
    expect(res.status).toBe(401);
    expect(res.headers['set-cookie']).toBeUndefined();
  });

  it('does not brake the right secret of a key that is not admin', async () => {
    const person = c.keys.person!;
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await post('127.0.0.12', form(person.accessKeyId, person.secretAccessKey))).status);
    expect(statuses).toEqual([403, 403, 403, 403, 403, 403, 403]);
  });

  it('forgets an address\'s wrong secrets once it logs in', async () => {
    const statuses: number[] = [];
    const wrong = async (n: number) => {
      for (let i = 0; i < n; i++) statuses.push((await post('127.0.0.13', form(c.admin.accessKeyId, `wrong-${i}`))).status);
    };
    await wrong(4);
    statuses.push((await post('127.0.0.13', form(c.admin.accessKeyId, c.admin.secretAccessKey))).status);
    await wrong(4);
    // Nine logins, eight of them wrong, and none braked: five wrong in a row are free.
    expect(statuses).toEqual([401, 401, 401, 401, 303, 401, 401, 401, 401]);
  });
});
