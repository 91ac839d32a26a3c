/**
 * A throwaway PKI for HTTPS tests, made with the `openssl` CLI: a test CA and
 * one server certificate for 127.0.0.1, localhost, s3.casket.test and
 * *.s3.casket.test (virtual-hosted buckets). Made once per test run — vitest's
 * workers share one directory keyed by the parent process, and the sets of
 * finished runs are removed — and published with an atomic rename so two
 * workers starting together never see half a set.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Virtual-hosted-style tests use `<bucket>.s3.casket.test`, resolved to 127.0.0.1 by a custom lookup. */
export const TEST_DOMAIN = 's3.casket.test';

export interface TestTls {
  dir: string;
  /** PEM files. */
  caFile: string;
  certFile: string;
  keyFile: string;
  /** The CA certificate, PEM. */
  ca: Buffer;
}

const FILES = ['ca.pem', 'server.pem', 'server-key.pem'] as const;

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

function generate(dir: string): void {
  writeFileSync(
    join(dir, 'ca.cnf'),
    [
      '[req]', 'distinguished_name = dn', 'prompt = no', 'x509_extensions = v3_ca',
      '[dn]', 'CN = casket test CA',
      '[v3_ca]', 'basicConstraints = critical, CA:TRUE', 'keyUsage = critical, keyCertSign, cRLSign', 'subjectKeyIdentifier = hash',
    ].join('\n'),
  );
  writeFileSync(
    join(dir, 'server.ext'),
    [
      'basicConstraints = critical, CA:FALSE',
      'keyUsage = critical, digitalSignature, keyEncipherment',
      'extendedKeyUsage = serverAuth',
      'subjectKeyIdentifier = hash',
      'authorityKeyIdentifier = keyid',
      `subjectAltName = IP:127.0.0.1, DNS:localhost, DNS:${TEST_DOMAIN}, DNS:*.${TEST_DOMAIN}`,
    ].join('\n'),
  );
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(['req', '-x509', ...ec, '-keyout', 'ca-key.pem', '-out', 'ca.pem', '-days', '2', '-config', 'ca.cnf'], dir);
  openssl(['req', '-new', ...ec, '-keyout', 'server-key.pem', '-out', 'server.csr', '-subj', '/CN=casket test server'], dir);
  openssl(['x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca-key.pem', '-CAcreateserial', '-out', 'server.pem', '-days', '2', '-extfile', 'server.ext'], dir);
}

let cached: TestTls | undefined;

/** Sets left by earlier runs, whose vitest process is gone. */
function removeStaleSets(): void {
  for (const name of readdirSync(tmpdir())) {
    const pid = /^casket-test-tls-(\d+)$/.exec(name)?.[1];
    if (!pid || Number(pid) === process.ppid) continue;
    try {
      process.kill(Number(pid), 0);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ESRCH') rmSync(join(tmpdir(), name), { recursive: true, force: true });
    }
  }
}

export function testTls(): TestTls {
  if (cached) return cached;
  const dir = join(tmpdir(), `casket-test-tls-${process.ppid}`);
  if (!FILES.every((f) => existsSync(join(dir, f)))) {
    removeStaleSets();
    const work = mkdtempSync(join(tmpdir(), 'casket-test-tls-work-'));
    generate(work);
    try {
      renameSync(work, dir);
    } catch {
      // Another worker published its set first: use that one.
      rmSync(work, { recursive: true, force: true });
    }
  }
  cached = { dir, caFile: join(dir, 'ca.pem'), certFile: join(dir, 'server.pem'), keyFile: join(dir, 'server-key.pem'), ca: readFileSync(join(dir, 'ca.pem')) };
  return cached;
}

/** casket flags that serve HTTPS with the test certificate. */
export function tlsArgs(): string[] {
  const tls = testTls();
  return ['--tls-cert', tls.certFile, '--tls-key', tls.keyFile];
}
