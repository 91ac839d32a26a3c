/**
 * Helpers for agent scenarios: signed introspection calls and a GET that the
 * client abandons half-way (a partial read, docs/design.md §4).
 */
import { request as httpRequest } from 'node:http';
import type { Cred } from './casket.js';
import { until } from './poll.js';
import { signRequest } from './raw.js';

export async function introspect(url: string, admin: Cred, path: string): Promise<{ status: number; body: any }> {
  const { headers } = await signRequest(url, admin, { method: 'GET', path });
  const res = await fetch(`${url}${path}`, { headers });
  return { status: res.status, body: await res.json() };
}

/** GETs an object and drops the connection after `keep` bytes. */
export async function abortedGet(url: string, cred: Cred, path: string, keep: number): Promise<number> {
  const { headers } = await signRequest(url, cred, { method: 'GET', path });
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: u.hostname, port: u.port, path, headers, agent: false }, (res) => {
      let got = 0;
      res.on('data', (chunk: Buffer) => {
        got += chunk.length;
        if (got >= keep) {
          req.destroy();
          resolve(got);
        }
      });
      res.on('end', () => resolve(got));
    });
    req.on('error', (e) => ((e as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(e)));
    req.end();
  });
}

/** Polls until `check` holds (helpers/poll.ts: a 10 s deadline). */
export async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  await until(check, what);
}
