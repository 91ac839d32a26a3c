/**
 * The request log is written in batches (src/log.ts, nginx's `access_log …
 * buffer=64k flush=1s`), and a batch still costs the reader nothing it can
 * notice: lines come in the order the requests were answered, none waits
 * longer than --log-flush-ms after a burst stops, a line that is not a
 * request line (here SIGHUP's reload line) goes out at once behind the
 * request lines held before it, and a SIGTERM loses none of them.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI } from '../helpers/casket.js';
import { until } from '../helpers/poll.js';
import { raw } from '../helpers/raw.js';

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

  it('a reload line is not held and follows the held request lines; SIGTERM writes what is held', async () => {
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
      c.proc.kill('SIGTERM');
      expect(await c.exited).toBe(0);
      expect(logged(c.out, 'before-term')).toEqual(keys('before-term', 20));
    } finally {
      if (c.proc.exitCode === null) c.proc.kill('SIGKILL');
    }
  });
});
