/**
 * Starts a real casket process (the built dist/cli.js) on 127.0.0.1 port 0
 * with its own data dir and credentials file: one admin key and one key per
 * named agent. Integration tests drive it with real clients.
 *
 * With CASKET_TEST_UPSTREAM=moto (a moto server per casket) or =rgw (a Ceph
 * RGW at CASKET_TEST_RGW_URL, see helpers/upstream.ts) casket runs in front of
 * that upstream instead of its embedded store, so every integration test runs
 * unchanged through the `s3` backend. `options.upstream` shares one upstream
 * between several caskets (replicas).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startUpstream, upstreamArgs, upstreamKindFromEnv, type Upstream } from './upstream.js';

export interface Cred {
  accessKeyId: string;
  secretAccessKey: string;
}

export interface CasketOptions {
  /** Agents that get a bound access key each. */
  agents?: string[];
  /**
   * More keys by name, each with an optional agent binding and IAM-style
   * policy (docs/design.md §7); they come back in `RunningCasket.keys`.
   */
  keys?: Record<string, { agent?: string; policy?: unknown }>;
  args?: string[];
  env?: Record<string, string>;
  /** Flags for node itself, before the script (V8 flags such as --gc-global). */
  nodeArgs?: string[];
  /** Reuse a data dir (restarts); default: a fresh temp dir. */
  dataDir?: string;
  /** Run in front of this upstream (not stopped with casket). Default: per CASKET_TEST_UPSTREAM, or none. */
  upstream?: Upstream;
  /** On the embedded store whatever CASKET_TEST_UPSTREAM says: a test of the embedded store's own behaviour, run (not skipped) in every suite. */
  embedded?: true;
  /** Use this casket's admin and agent keys (replicas share one credentials set). */
  credentialsOf?: Pick<RunningCasket, 'admin' | 'agents'>;
}

export interface RunningCasket {
  url: string;
  port: number;
  dataDir: string;
  admin: Cred;
  agents: Record<string, Cred>;
  keys: Record<string, Cred>;
  /** The credentials file casket was started with (tests of reloading rewrite it). */
  credentialsFile: string;
  proc: ChildProcess;
  /** The upstream casket proxies, when it is not on its embedded store. */
  upstream?: Upstream;
  /** Every stdout line (JSON logs). */
  logs: string[];
  stop(): Promise<void>;
  kill(): Promise<void>;
  /** Starts casket again on the same data dir and credentials (new port). */
  restart(extraArgs?: string[]): Promise<RunningCasket>;
}

export const CLI = resolve(import.meta.dirname, '../../dist/cli.js');

function cred(prefix: string): Cred {
  return { accessKeyId: `${prefix}${randomBytes(6).toString('hex').toUpperCase()}`, secretAccessKey: randomBytes(24).toString('base64url') };
}

export async function startCasket(options: CasketOptions = {}): Promise<RunningCasket> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'casket-test-'));
  const admin = options.credentialsOf?.admin ?? cred('ADMIN');
  const agents: Record<string, Cred> = { ...options.credentialsOf?.agents };
  for (const name of options.agents ?? []) agents[name] ??= cred(`AGENT${name.toUpperCase().replace(/[^A-Z0-9]/g, '')}`);
  const keys: Record<string, Cred> = {};
  for (const name of Object.keys(options.keys ?? {})) keys[name] = cred(`KEY${name.toUpperCase().replace(/[^A-Z0-9]/g, '')}`);
  const credentialsFile = join(dataDir, 'test-credentials.json');
  writeFileSync(
    credentialsFile,
    JSON.stringify({
      credentials: [
        { accessKey: admin.accessKeyId, secretKey: admin.secretAccessKey, admin: true },
        ...Object.entries(agents).map(([agent, c]) => ({ accessKey: c.accessKeyId, secretKey: c.secretAccessKey, agent })),
        ...Object.entries(options.keys ?? {}).map(([name, k]) => ({ accessKey: keys[name]!.accessKeyId, secretKey: keys[name]!.secretAccessKey, ...k })),
      ],
    }),
    { mode: 0o600 },
  );
  const kind = options.upstream || options.embedded ? undefined : upstreamKindFromEnv();
  const owned = kind ? await startUpstream(kind) : undefined;
  const upstream = options.upstream ?? owned;
  try {
    return await launch(dataDir, credentialsFile, admin, agents, keys, options, options.dataDir === undefined, [], upstream, owned);
  } catch (e) {
    await owned?.stop();
    throw e;
  }
}

/**
 * Request lines at once (`--log-flush-ms 0`) unless a test sets its own: a
 * test that asserts what is *not* in the log (no secret, no write by the
 * wrong caller) must not pass because the line is still held in a batch.
 * test/project/log-batching.test.ts covers the batching itself.
 */
const LOG_AT_ONCE = (args: string[] | undefined): string[] => (args?.includes('--log-flush-ms') ? [] : ['--log-flush-ms', '0']);

async function launch(dataDir: string, credentialsFile: string, admin: Cred, agents: Record<string, Cred>, keys: Record<string, Cred>, options: CasketOptions, ownsDir: boolean, extraArgs: string[] = [], upstream?: Upstream, ownedUpstream?: Upstream): Promise<RunningCasket> {
  const args = [...(options.nodeArgs ?? []), CLI, '--listen', '127.0.0.1:0', '--data-dir', dataDir, '--credentials', credentialsFile, '--min-part-size', '5242880', ...(upstream ? upstreamArgs(upstream) : []), ...LOG_AT_ONCE(options.args), ...(options.args ?? []), ...extraArgs];
  const proc = spawn(process.execPath, args, { env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: string[] = [];
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const url = await new Promise<string>((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error(`casket did not start within 20 s\n${stderr}`)), 20_000);
    let buffered = '';
    proc.stdout!.on('data', (d: Buffer) => {
      buffered += d.toString();
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        logs.push(line);
        try {
          const entry = JSON.parse(line) as { msg?: string; endpoint?: string };
          // Not ready (an upstream down) is started too: tests of readiness look at it.
          if ((entry.msg === 'casket is ready' || entry.msg?.startsWith('casket is listening; not ready')) && entry.endpoint) {
            clearTimeout(timer);
            resolvePromise(entry.endpoint);
          }
        } catch {
          /* not JSON */
        }
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`casket exited with ${code} before it was ready\n${stderr}`));
    });
  });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  const running: RunningCasket = {
    url,
    port: Number(new URL(url).port),
    dataDir,
    admin,
    agents,
    keys,
    credentialsFile,
    proc,
    ...(upstream && { upstream }),
    logs,
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await exited;
      await ownedUpstream?.stop();
      if (ownsDir) rmSync(dataDir, { recursive: true, force: true });
    },
    kill: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await exited;
    },
    restart: async (more = []) => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await exited;
      return launch(dataDir, credentialsFile, admin, agents, keys, options, ownsDir, more, upstream, ownedUpstream);
    },
  };
  return running;
}
