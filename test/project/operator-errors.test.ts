/**
 * Every operator mistake at start is one line on stderr naming the flag and
 * the file or address, and exit code 2 — before anything is created (the
 * data dir stays absent). No stack trace, no silent fallback to a default.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI } from '../helpers/casket.js';

function refused(args: string[], setup: (dir: string) => void = () => {}): { line: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'casket-operator-'));
  setup(dir);
  const data = join(dir, 'data');
  const r = spawnSync(process.execPath, [CLI, '--data-dir', data, '--listen', '127.0.0.1:0', ...args], { encoding: 'utf8', cwd: dir, timeout: 15_000, env: { ...process.env, CASKET_ACCESS_KEY: 'OPERATORTEST', CASKET_SECRET_KEY: 'operator-test-secret' } });
  expect({ status: r.status, stdout: r.stdout }).toEqual({ status: 2, stdout: '' });
  const lines = r.stderr.trimEnd().split('\n');
  expect(lines, r.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^casket: /);
  expect(existsSync(data), 'the data dir was created').toBe(false);
  return { line: lines[0]!, dir };
}

describe('operator mistakes', () => {
  it('a port out of range', () => {
    expect(refused(['--listen', '127.0.0.1:99999']).line).toBe('casket: --listen port must be 0 to 65535, not 99999');
  });

  it('a port in use', async () => {
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const port = (busy.address() as AddressInfo).port;
    try {
      expect(refused(['--listen', `127.0.0.1:${port}`]).line).toBe(`casket: --listen 127.0.0.1:${port}: the port is in use (another casket? pick another with --listen)`);
    } finally {
      await new Promise((resolve) => busy.close(resolve));
    }
  });

  it('a data dir that is a file, or under one', () => {
    const asFile = refused(['--data-dir', 'file'], (dir) => writeFileSync(join(dir, 'file'), 'x'));
    expect(asFile.line).toBe('casket: --data-dir file: is a file, not a directory');
    const under = refused(['--data-dir', 'file/data'], (dir) => writeFileSync(join(dir, 'file'), 'x'));
    expect(under.line).toMatch(/^casket: --data-dir file\/data: cannot be created: \S+\/file is a file, not a directory$/);
  });

  it('missing --config, --credentials and --tls-cert files', () => {
    expect(refused(['--config', 'nope.json']).line).toBe('casket: --config nope.json: no such file');
    expect(refused(['--credentials', 'nope.json']).line).toBe('casket: --credentials nope.json: no such file');
    expect(refused(['--tls-cert', 'cert.pem', '--tls-key', 'key.pem']).line).toBe('casket: --tls-cert cert.pem: no such file');
  });

  it('a TLS certificate and key that are not PEM', () => {
    const line = refused(['--tls-cert', 'cert.pem', '--tls-key', 'key.pem'], (dir) => {
      writeFileSync(join(dir, 'cert.pem'), 'not a certificate');
      writeFileSync(join(dir, 'key.pem'), 'not a key');
    }).line;
    expect(line).toBe('casket: --tls-cert cert.pem and --tls-key key.pem: not a PEM certificate and its private key');
  });

  it('a malformed --config or --credentials file, naming the file and the place', () => {
    const config = refused(['--config', 'casket.json'], (dir) => writeFileSync(join(dir, 'casket.json'), '{\n  "listen": "127.0.0.1:0",\n  "guard": enforce\n}\n')).line;
    expect(config).toMatch(/^casket: casket\.json: not JSON \(line 3, column 12: /);
    const secret = 'do-not-print-this-secret';
    const creds = refused(['--credentials', 'creds.json'], (dir) => writeFileSync(join(dir, 'creds.json'), `{"credentials": [{"accessKey": "K", "secretKey": "${secret}",}]}`)).line;
    expect(creds).toMatch(/^casket: creds\.json: not JSON \(line 1, column \d+: /);
    expect(creds).not.toContain(secret);
  });

  it('an unknown config key, and a config that is not a JSON object', () => {
    const typo = refused(['--config', 'casket.json'], (dir) => writeFileSync(join(dir, 'casket.json'), '{"lisen": "127.0.0.1:9999"}')).line;
    expect(typo).toMatch(/^casket: casket\.json: unknown setting "lisen" \(settings are the flags' camelCase names: listen, /);
    const array = refused(['--config', 'casket.json'], (dir) => writeFileSync(join(dir, 'casket.json'), '[{"listen": "127.0.0.1:9999"}]')).line;
    expect(array).toBe('casket: casket.json: must be a JSON object of settings, e.g. {"listen": "127.0.0.1:9000"}');
  });

  it('a --redis-url that is not a URL, without echoing it (it may hold a password)', () => {
    expect(refused(['--state', 'redis', '--redis-url', 'secret-password@nowhere']).line).toBe('casket: --redis-url must be a URL, e.g. redis://127.0.0.1:6379');
  });

  it('--domain with a port', () => {
    expect(refused(['--domain', 's3.example.com:9000']).line).toBe('casket: --domain must be a host name without a port or scheme (e.g. s3.example.com), not "s3.example.com:9000"');
  });
});
