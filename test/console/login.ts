/**
 * Console logins and logouts without a browser: the form POSTs the login
 * page sends (same Origin as the host), for tests of what a session cookie
 * may reach.
 */
import type { Cred } from '../helpers/casket.js';

/** Logs in and answers the session cookie (`casket_console=…`). */
export async function consoleLogin(url: string, cred: Cred): Promise<string> {
  const res = await fetch(`${url}/_casket/console/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { origin: new URL(url).origin, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ accessKeyId: cred.accessKeyId, secretAccessKey: cred.secretAccessKey }),
  });
  const cookie = res.headers.getSetCookie().find((c) => c.startsWith('casket_console=cks1.'));
  if (res.status !== 303 || !cookie) throw new Error(`console login failed: ${res.status}`);
  return cookie.split(';')[0]!;
}

export async function consoleLogout(url: string, cookie: string): Promise<number> {
  const res = await fetch(`${url}/_casket/console/logout`, { method: 'POST', redirect: 'manual', headers: { origin: new URL(url).origin, cookie } });
  await res.arrayBuffer();
  return res.status;
}

/** The status a console API answers this cookie. */
export async function consoleApiStatus(url: string, cookie: string, api = 'setup'): Promise<number> {
  const res = await fetch(`${url}/_casket/console/api/${api}`, { headers: { cookie } });
  await res.arrayBuffer();
  return res.status;
}
