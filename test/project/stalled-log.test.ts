/**
 * A log reader that stops reading must not stop casket: a log collector that
 * hangs, or a parent process busy elsewhere, leaves casket's stdout pipe
 * full, and a synchronous write(2) of the next request's line would block
 * the event loop and every request behind it (src/log.ts). casket keeps
 * answering, and the lines it held are all written once the reader is back.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI } from '../helpers/casket.js';
import { until } from '../helpers/poll.js';
import { raw } from '../helpers/raw.js';

const admin = { accessKeyId: 'STALLEDLOGADMIN', secretAccessKey: 'stalled-log-secret' };
/** Enough request lines (~300 bytes each) to fill a pipe (64 KiB) and the reader's own buffer several times over. */
const REQUESTS = 1500;

describe('a stalled log reader', () => {
  it('casket keeps answering while nobody reads its stdout, and writes every line once someone does', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'casket-stalled-log-'));
    const proc = spawn(process.execPath, [CLI, '--listen', '127.0.0.1:0', '--data-dir', dir, '--access-key', admin.accessKeyId, '--secret-key', admin.secretAccessKey], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    const onData = (d: Buffer) => (out += d.toString());
    proc.stdout!.on('data', onData);
    const exited = new Promise((r) => proc.once('exit', r));
    try {
      await until(() => /"msg":"casket is ready"/.test(out), 'casket ready', 15_000);
      const url = /"endpoint":"([^"]+)"/.exec(out)![1]!;
      expect((await raw(url, admin, { method: 'PUT', path: '/stalled' })).status).toBe(200);
      expect((await raw(url, admin, { method: 'PUT', path: '/stalled/k', body: 'x' })).status).toBe(200);

      // Nobody reads stdout from here on: the pipe fills after a few hundred lines.
      proc.stdout!.off('data', onData);
      proc.stdout!.pause();
      let answered = 0;
      let next = 0;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next < REQUESTS) {
            next++;
            const r = await raw(url, admin, { method: 'GET', path: '/stalled/k' });
            if (r.status === 200) answered++;
          }
        }),
      );
      expect(answered).toBe(REQUESTS);

      out = '';
      proc.stdout!.on('data', onData);
      proc.stdout!.resume();
      const gets = () => out.split('\n').filter((l) => l.includes('"operation":"GetObject"')).length;
      await until(() => gets() >= REQUESTS, `${REQUESTS} GetObject lines once stdout is read again`, 15_000);
      expect(out).not.toContain('log lines dropped');
    } finally {
      proc.kill('SIGTERM');
      await exited;
    }
  });
});
