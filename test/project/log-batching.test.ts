/**
 * The request log is written in batches (src/log.ts, nginx's `access_log …
 * buffer=64k flush=1s`), and a batch still costs the reader nothing it can
 * notice: lines come in the order the requests were answered, none waits
 * longer than --log-flush-ms after a burst stops, a line that is not a
 * request line (here SIGHUP's reload line) goes out at once behind the
 * request lines held before it, and a SIGTERM loses none of them, not even
 * the line of a request answered during the drain.
 */
import { spawn } from 'node:child_process';
import { request as httpRequest, type ClientRequest } from 'node:http';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI } from '../helpers/casket.js';
import { until } from '../helpers/poll.js';
import { raw, signRequest } from '../helpers/raw.js';

const admin = { accessKeyId: 'LOGBATCHADMIN', secretAccessKey: 'log-batching-secret' };

async function casket(flushMs: number) {
  const dir = mkdtempSync(join(tmpdir(), 'casket-log-batching-'));
  const proc = spawn(process.execPath, [CLI, '--listen', '127.0.0.1:0', '--data-dir', dir, '--access-key', admin.accessKeyId, '--secret-key', admin.secretAccessKey, '--log-flush-ms', String(flushMs)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const c = { proc, out: '', exited: new Promise<number | null>((r) => proc.once('close', r)), url: '' };
  proc.stdout!.on('data', (d: Buffer) => (c.out += d.toString()));
  await until(() => /"msg":"casket is ready"/.test(c.out), 'casket ready', 15_000);
  c.url = /"endpoint":"([^"]+)"/.exec(c.out)![1]!;
  expect((await raw(c.url, admin, { method: 'PUT', path: '/batched' })).status).toBe(200);
  return c;
}

/** One GetObject after the other, each for its own key: their lines must come in this order. */
async function burst(url: string, prefix: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) expect((await raw(url, admin, { method: 'GET', path: `/batched/${prefix}-${i}` })).status).toBe(404);
}

/** The keys of the GetObject lines with this prefix, in the order they were written. */
function logged(out: string, prefix: string): string[] {
  return out
    .split('\n')
    .filter((l) => l.includes('"operation":"GetObject"'))
    .map((l) => (JSON.parse(l) as { key: string }).key)
    .filter((k) => k.startsWith(`${prefix}-`));
}

const keys = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);

describe('the request log written in batches', () => {
  it('lines arrive in order, within --log-flush-ms after a burst stops', async () => {
    const flushMs = 400;
    const c = await casket(flushMs);
    try {
      // ~300 bytes a line: more than one 64 KiB batch, then a tail only the timer writes.
      const n = 400;
      await burst(c.url, 'burst', n);
      const stopped = Date.now();
      await until(() => logged(c.out, 'burst').length >= n, `${n} GetObject lines`, 5_000);
      const waited = Date.now() - stopped;
      expect(logged(c.out, 'burst')).toEqual(keys('burst', n));
      // The bound plus room for a loaded machine; with no timer the tail never comes.
      expect(waited).toBeLessThan(flushMs + 1_500);
    } finally {
      c.proc.kill('SIGTERM');
      await c.exited;
    }
  });

  it('a reload line is not held and follows the held request lines; SIGTERM loses none, not even a request answered in the drain', async () => {
    // A bound no test waits for: only the other lines and the exit can write these.
    const c = await casket(60_000);
    try {
      await burst(c.url, 'before-hup', 20);
      c.proc.kill('SIGHUP');
      await until(() => c.out.includes('nothing to reload'), 'the SIGHUP line', 5_000);
      const lines = c.out.split('\n');
      const hup = lines.findIndex((l) => l.includes('nothing to reload'));
      expect(logged(lines.slice(0, hup).join('\n'), 'before-hup')).toEqual(keys('before-hup', 20));

      await burst(c.url, 'before-term', 20);
      expect(logged(c.out, 'before-term')).toEqual([]);
      // A PutObject still in flight when SIGTERM comes: answered during the
      // drain, after the stop line, so only the exit can write its line.
      const body = 'answered during the drain';
      const { headers } = await signRequest(c.url, admin, { method: 'PUT', path: '/batched/in-flight', body, headers: { expect: '100-continue' } });
      const u = new URL(c.url);
      let req!: ClientRequest;
      const answer = new Promise<number>((resolve, reject) => {
        req = httpRequest({ host: u.hostname, port: u.port, method: 'PUT', path: '/batched/in-flight', headers }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
      });
      // casket's 100 Continue: it has the request, and waits for the body.
      req.flushHeaders();
      await once(req, 'continue');
      req.write(body.slice(0, 5));
      c.proc.kill('SIGTERM');
      await until(() => c.out.includes('casket is stopping'), 'the stop line', 5_000);
      req.end(body.slice(5));
      expect(await answer).toBe(200);
      expect(await c.exited).toBe(0);
      const stop = c.out.indexOf('casket is stopping');
      expect(logged(c.out.slice(0, stop), 'before-term')).toEqual(keys('before-term', 20));
      expect(c.out.slice(stop)).toMatch(/"operation":"PutObject"[^\n]*"key":"in-flight"/);
    } finally {
      if (c.proc.exitCode === null) c.proc.kill('SIGKILL');
    }
  });
});
