/**
 * The `casket` command as a user meets it: first start makes a credential
 * kept in the data dir (mode 0600), shows its secret that once and reuses it
 * on restart; no anonymous access unless configured; bad flags fail with a
 * clear message; SIGTERM lets a request in flight finish; `npm start` runs
 * casket so that SIGTERM to npm leaves nothing behind.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve as resolvePath } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI } from '../helpers/casket.js';
import { until } from '../helpers/poll.js';
import { raw, signRequest } from '../helpers/raw.js';

interface Started {
  url: string;
  pid: number;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
  stop: () => Promise<number | null>;
}

/** Waits for the ready line of a casket started as `proc` (directly or under npm). */
async function ready(proc: ChildProcess): Promise<Started> {
  let stderr = '';
  let out = '';
  proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  const { url, pid } = await new Promise<{ url: string; pid: number }>((resolve, reject) => {
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /"endpoint":"([^"]+)","pid":(\d+).*"msg":"casket is ready"/.exec(out);
      if (m) resolve({ url: m[1]!, pid: Number(m[2]) });
    });
    proc.once('exit', (code) => reject(new Error(`exited ${code}: ${stderr}`)));
  });
  return { url, pid, stdout: () => out, stderr: () => stderr, exited, stop: async () => (proc.kill('SIGTERM'), exited) };
}

function run(args: string[]): Promise<Started> {
  return ready(spawn(process.execPath, [CLI, '--listen', '127.0.0.1:0', '--log-level', 'info', ...args], { stdio: ['ignore', 'pipe', 'pipe'] }));
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
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
    // Shown once, when made: a restart names the file, and no log line ever carries it.
    expect(second.stderr()).toContain(cred.accessKeyId);
    expect(second.stderr()).toContain(`secret key: in ${file}`);
    expect(second.stderr()).not.toContain(cred.secretAccessKey);
    expect(first.stdout() + second.stdout()).not.toContain(cred.secretAccessKey);
  });

  it('--version prints the package version', () => {
    const pkg = JSON.parse(readFileSync(resolvePath(import.meta.dirname, '../../package.json'), 'utf8')) as { version: string };
    const r = spawnSync(process.execPath, [CLI, '--version'], { encoding: 'utf8' });
    expect([r.status, r.stdout]).toEqual([0, `casket ${pkg.version}\n`]);
  });

  it('SIGTERM lets a request in flight finish, then exits 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'casket-cli-'));
    const admin = { accessKeyId: 'DRAINTESTADMIN', secretAccessKey: 'drain-test-secret' };
    const c = await run(['--data-dir', dir, '--access-key', admin.accessKeyId, '--secret-key', admin.secretAccessKey]);
    try {
      await raw(c.url, admin, { method: 'PUT', path: '/drain' });
      const body = 'finished after SIGTERM';
      const signed = await signRequest(c.url, admin, { method: 'PUT', path: '/drain/k', headers: { expect: '100-continue', 'content-length': String(body.length) }, payloadHash: 'UNSIGNED-PAYLOAD' });
      const u = new URL(c.url);
      const status = await new Promise<number>((resolve, reject) => {
        const req = request({ host: u.hostname, port: u.port, method: 'PUT', path: signed.path, headers: signed.headers });
        req.once('error', reject);
        req.once('response', (res) => (res.resume(), resolve(res.statusCode!)));
        // casket sends 100 Continue once auth passed: the request is in flight; stop casket, then send the body.
        req.once('continue', () => {
          process.kill(c.pid, 'SIGTERM');
          setTimeout(() => req.end(body), 300);
        });
      });
      expect(status).toBe(200);
      expect(await c.exited).toBe(0);
    } finally {
      await c.stop();
    }
  });

  it('npm start: SIGTERM to npm stops casket, and no process is left behind', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'casket-cli-'));
    const npm = spawn('npm', ['start', '--silent', '--', '--listen', '127.0.0.1:0', '--data-dir', dir], { cwd: resolvePath(import.meta.dirname, '../..'), stdio: ['ignore', 'pipe', 'pipe'] });
    const c = await ready(npm);
    expect(c.pid).not.toBe(npm.pid);
    try {
      npm.kill('SIGTERM');
      await c.exited;
      await until(() => !alive(c.pid), `casket (pid ${c.pid}) to exit after npm did`);
    } finally {
      if (alive(c.pid)) process.kill(c.pid, 'SIGKILL');
    }
  });

  // README, Performance: with glibc's default trimming an 8 MiB GetObject faulted ~1,000 fresh pages in and cost 2-5x the CPU;
  // after an idle spell V8 shrank the old generation's limit and marked the whole heap every few GETs.
  it('npm start runs casket with glibc keeping freed heap (GLIBC_TUNABLES) and V8 sized for work after idle, and keeps a GLIBC_TUNABLES the user set', async () => {
    const environ = async (env: NodeJS.ProcessEnv): Promise<string[]> => {
      const dir = mkdtempSync(join(tmpdir(), 'casket-cli-'));
      const npm = spawn('npm', ['start', '--silent', '--', '--listen', '127.0.0.1:0', '--data-dir', dir], { cwd: resolvePath(import.meta.dirname, '../..'), stdio: ['ignore', 'pipe', 'pipe'], env });
      const c = await ready(npm);
      try {
        expect(readFileSync(`/proc/${c.pid}/cmdline`, 'utf8').split('\0')).toContain('--initial-old-space-size=64');
        return readFileSync(`/proc/${c.pid}/environ`, 'utf8').split('\0');
      } finally {
        npm.kill('SIGTERM');
        await c.exited;
      }
    };
    const { GLIBC_TUNABLES: _unset, ...env } = process.env;
    // glibc's loader cuts the variable at each ':' in place as it reads the tunables, so /proc shows the first whole.
    expect((await environ(env)).filter((e) => e.startsWith('GLIBC_TUNABLES='))).toEqual(['GLIBC_TUNABLES=glibc.malloc.trim_threshold=16777216']);
    expect(await environ({ ...env, GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' })).toContain('GLIBC_TUNABLES=glibc.malloc.arena_max=2');
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
