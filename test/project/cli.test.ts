/**
 * The `casket` command as a user meets it: first start makes and prints a
 * credential kept in the data dir (mode 0600) and reused on restart; no
 * anonymous access unless configured; bad flags fail with a clear message.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI } from '../helpers/casket.js';
import { raw } from '../helpers/raw.js';

async function run(args: string[]): Promise<{ url: string; stderr: () => string; stop: () => Promise<void> }> {
  const proc = spawn(process.execPath, [CLI, '--listen', '127.0.0.1:0', '--log-level', 'info', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /"endpoint":"([^"]+)".*"msg":"casket is ready"/.exec(out);
      if (m) resolve(m[1]!);
    });
    proc.once('exit', (code) => reject(new Error(`exited ${code}: ${stderr}`)));
  });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  return { url, stderr: () => stderr, stop: async () => (proc.kill('SIGTERM'), exited) };
}

describe('casket command', () => {
  it('makes a credential on first start, prints it, keeps it 0600 and reuses it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'casket-cli-'));
    const first = await run(['--data-dir', dir]);
    const file = join(dir, 'credentials.json');
    let cred: { accessKeyId: string; secretAccessKey: string };
    try {
      const saved = JSON.parse(readFileSync(file, 'utf8')).credentials[0];
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(first.stderr()).toContain(saved.accessKey);
      expect(first.stderr()).toContain(saved.secretKey);
      cred = { accessKeyId: saved.accessKey, secretAccessKey: saved.secretKey };
      expect((await raw(first.url, cred, { method: 'GET', path: '/' })).status).toBe(200);
      expect((await raw(first.url, cred, { method: 'GET', path: '/', unsigned: true })).status).toBe(403);
    } finally {
      await first.stop();
    }
    const second = await run(['--data-dir', dir]);
    try {
      expect((await raw(second.url, cred, { method: 'GET', path: '/' })).status).toBe(200);
    } finally {
      await second.stop();
    }
  });

  it('--anonymous read lets unsigned requests read, never write', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'casket-cli-'));
    const admin = { accessKeyId: 'ANONTESTADMIN', secretAccessKey: 'anon-test-secret' };
    const c = await run(['--data-dir', dir, '--anonymous', 'read', '--access-key', admin.accessKeyId, '--secret-key', admin.secretAccessKey]);
    try {
      await raw(c.url, admin, { method: 'PUT', path: '/pub' });
      await raw(c.url, admin, { method: 'PUT', path: '/pub/k', body: 'public' });
      const get = await raw(c.url, admin, { method: 'GET', path: '/pub/k', unsigned: true });
      expect([get.status, get.body]).toEqual([200, 'public']);
      const put = await raw(c.url, admin, { method: 'PUT', path: '/pub/k', body: 'x', unsigned: true });
      expect(put.status).toBe(403);
    } finally {
      await c.stop();
    }
  });

  it('refuses unknown flags and bad values with exit code 2 and a message', () => {
    const bad = spawnSync(process.execPath, [CLI, '--no-such-flag'], { encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('unknown option --no-such-flag');
    const guard = spawnSync(process.execPath, [CLI, '--guard', 'maybe'], { encoding: 'utf8' });
    expect(guard.status).toBe(2);
    expect(guard.stderr).toContain('--guard must be one of enforce, observe, off');
    const help = spawnSync(process.execPath, [CLI, '--help'], { encoding: 'utf8' });
    expect(help.stdout).toContain('CASKET_UPSTREAM');
  });
});
