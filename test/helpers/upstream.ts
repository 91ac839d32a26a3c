/**
 * Upstream S3 endpoints for tests of the `s3` backend:
 * - moto (`python3 -m moto.server` through moto_server.py, which makes its
 *   conditional writes atomic as AWS's are), started on a free port, one per
 *   call, stopped by its PID;
 * - a Ceph RGW already running (../shared/upstreams/ceph-rgw-up.sh), at
 *   CASKET_TEST_RGW_URL (default http://127.0.0.1:18080), access/secret
 *   test/test. When the cluster's ceph.conf is at hand (CASKET_TEST_RGW_CONF,
 *   default /tmp/casket-rgw/ceph.conf), each call gets a user of its own in a
 *   fresh RGW tenant, so test files see empty, separate bucket namespaces.
 *
 * `CASKET_TEST_UPSTREAM=moto|rgw` makes test/helpers/casket.ts run every
 * casket it starts in front of one of these.
 *
 * `relayTo` puts a TCP relay in front of an upstream, so a test can take the
 * upstream "down" (refused and reset connections) where it may not stop the
 * upstream itself (the shared RGW).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { connect, createServer, type Socket } from 'node:net';
import { promisify } from 'node:util';

export interface Upstream {
  kind: 'moto' | 'rgw';
  url: string;
  accessKey: string;
  secretKey: string;
  region: string;
  /** The moto process (undefined for RGW, which the tests do not own). */
  proc?: ChildProcess;
  stop(): Promise<void>;
}

export type UpstreamKind = 'moto' | 'rgw';

export function upstreamKindFromEnv(): UpstreamKind | undefined {
  const kind = process.env.CASKET_TEST_UPSTREAM;
  if (kind === undefined || kind === '' || kind === 'none' || kind === 'fs') return undefined;
  if (kind !== 'moto' && kind !== 'rgw') throw new Error(`CASKET_TEST_UPSTREAM must be moto or rgw, not ${kind}`);
  return kind;
}

export function startUpstream(kind: UpstreamKind): Promise<Upstream> {
  return kind === 'moto' ? startMoto() : connectRgw();
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

const started = new Set<ChildProcess>();
process.once('exit', () => {
  for (const proc of started) if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
});

const MOTO_SERVER = resolve(import.meta.dirname, 'moto_server.py');

/** `copyConditions`: moto enforcing CopyObject's conditions as AWS does (moto_server.py, opt-in). */
export async function startMoto(options: { copyConditions?: boolean } = {}): Promise<Upstream> {
  for (let tries = 0; ; tries++) {
    const port = await freePort();
    // moto with atomic conditional writes, ended with this worker (moto_server.py says why).
    const proc = spawn('python3', [MOTO_SERVER, '127.0.0.1', String(port)], { stdio: ['ignore', 'ignore', 'pipe'], ...(options.copyConditions && { env: { ...process.env, CASKET_MOTO_COPY_CONDITIONS: '1' } }) });
    started.add(proc);
    let stderr = '';
    proc.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
    const url = `http://127.0.0.1:${port}`;
    const exited = new Promise<void>((r) => proc.once('exit', () => r()));
    const ready = await waitForHttp(url, 20_000, () => proc.exitCode !== null);
    if (!ready) {
      proc.kill('SIGKILL');
      await exited;
      started.delete(proc);
      if (tries < 2) continue; // lost the port race
      throw new Error(`moto did not start\n${stderr}`);
    }
    return {
      kind: 'moto',
      url,
      accessKey: 'testing',
      secretKey: 'testing',
      region: 'us-east-1',
      proc,
      stop: async () => {
        if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
        await exited;
        started.delete(proc);
      },
    };
  }
}

export async function connectRgw(): Promise<Upstream> {
  const url = process.env.CASKET_TEST_RGW_URL ?? 'http://127.0.0.1:18080';
  if (!(await waitForHttp(url, 2_000))) throw new Error(`no Ceph RGW answering at ${url} (start it with ../shared/upstreams/ceph-rgw-up.sh)`);
  const conf = process.env.CASKET_TEST_RGW_CONF ?? '/tmp/casket-rgw/ceph.conf';
  let accessKey = 'test';
  let secretKey = 'test';
  if (existsSync(conf)) {
    // A user in a tenant of its own: an empty bucket namespace for this test.
    const tenant = `t${randomBytes(5).toString('hex')}`;
    accessKey = `AK${randomBytes(8).toString('hex').toUpperCase()}`;
    secretKey = randomBytes(20).toString('hex');
    await promisify(execFile)('radosgw-admin', ['-c', conf, 'user', 'create', `--tenant=${tenant}`, '--uid=casket', '--display-name=casket test', `--access-key=${accessKey}`, `--secret-key=${secretKey}`]);
  }
  return { kind: 'rgw', url, accessKey, secretKey, region: 'us-east-1', stop: async () => {} };
}

async function waitForHttp(url: string, ms: number, gaveUp: () => boolean = () => false): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline && !gaveUp()) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      return true;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return false;
}

/** casket CLI flags for an upstream. */
export function upstreamArgs(u: Upstream): string[] {
  return ['--upstream', u.url, '--upstream-access-key', u.accessKey, '--upstream-secret-key', u.secretKey, '--upstream-region', u.region];
}

export interface Relay {
  /** The upstream as seen through the relay (same credentials, the relay's URL). */
  upstream: Upstream;
  /** Takes the upstream down: open connections are reset, new ones refused. */
  cut(): Promise<void>;
}

export async function relayTo(target: Upstream): Promise<Relay> {
  const to = new URL(target.url);
  const sockets = new Set<Socket>();
  const track = (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
    return s;
  };
  const server = createServer((inbound) => {
    track(inbound);
    const outbound = track(connect(Number(to.port), to.hostname));
    inbound.pipe(outbound).pipe(inbound);
    inbound.once('close', () => outbound.destroy());
    outbound.once('close', () => inbound.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as { port: number }).port;
  let cut: Promise<void> | undefined;
  return {
    upstream: { kind: target.kind, url: `http://127.0.0.1:${port}`, accessKey: target.accessKey, secretKey: target.secretKey, region: target.region, stop: async () => {} },
    cut: () =>
      (cut ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.resetAndDestroy();
      })),
  };
}
