/**
 * The command-line S3 clients (awscli, s3cmd, rclone) and boto3, configured
 * the way their users configure them and isolated from this machine's own
 * configuration: a test never reads ~/.aws, ~/.s3cfg or rclone.conf, and the
 * AWS_* variables of the environment are dropped (AWS_CA_BUNDLE breaks rclone
 * 1.60 — README "Clients"). Every failure names the tool and the command it ran.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { Cred } from './casket.js';

export interface Endpoint {
  /** http(s)://127.0.0.1:port */
  url: string;
  /** PEM CA bundle to trust for https. */
  caFile?: string;
}

export interface ToolResult {
  tool: string;
  command: string;
  code: number;
  stdout: string;
  stderr: string;
}

let python: string | undefined;

/**
 * The python3 that has boto3 and awscli, resolved once: calling it directly
 * skips a version manager's shim (pyenv's costs a few hundred ms per call).
 */
export function python3(): string {
  python ??= process.env.CASKET_TEST_PYTHON ?? execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim();
  return python;
}

/** Whether python3 can import `module` (boto3, awscli). */
export function hasPythonModule(module: string): boolean {
  try {
    execFileSync(python3(), ['-c', `import ${module}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export interface RunOptions {
  env?: Record<string, string | undefined>;
  cwd?: string;
  timeoutMs?: number;
}

/** This process's environment without AWS_*, RCLONE_* and S3CMD settings. */
export function cleanEnv(extra: Record<string, string | undefined> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || /^(AWS_|RCLONE_|BOTO_)/.test(k)) continue;
    env[k] = v;
  }
  env.AWS_EC2_METADATA_DISABLED = 'true';
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

const quote = (a: string) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`);

export function describe(r: ToolResult): string {
  const tail = (s: string) => (s.length > 4000 ? `…${s.slice(-4000)}` : s);
  return `${r.tool}: \`${r.command}\` exited ${r.code}\n--- stdout\n${tail(r.stdout)}\n--- stderr\n${tail(r.stderr)}`;
}

export async function run(tool: string, file: string, args: string[], options: RunOptions = {}): Promise<ToolResult> {
  const command = [file, ...args].map(quote).join(' ');
  return new Promise((resolvePromise, reject) => {
    const child = spawn(file, args, { env: cleanEnv(options.env), cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new Error(`${tool}: \`${command}\` could not start: ${e.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolvePromise({ tool, command, code: code ?? (signal ? 128 : -1), stdout, stderr });
    });
  });
}

/** The result, or an error naming the tool, the command and its output. */
export function ok(r: ToolResult): ToolResult {
  if (r.code !== 0) throw new Error(describe(r));
  return r;
}

export function exits(r: ToolResult, code: number): ToolResult {
  if (r.code !== code) throw new Error(`expected exit ${code}\n${describe(r)}`);
  return r;
}

export async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** A file of `size` random bytes; returns its content. */
export function writeRandomFile(path: string, size: number): Buffer {
  const data = randomBytes(size);
  writeFileSync(path, data);
  return data;
}

// ---- awscli --------------------------------------------------------------

export interface AwsCli {
  run(args: string[], options?: RunOptions): Promise<ToolResult>;
  /** Files a user would keep in ~/.aws, isolated for the test. */
  env: Record<string, string>;
}

/**
 * awscli v1 (`python3 -m awscli`): credentials and region in its own config
 * files, `--endpoint-url` on every command, `--ca-bundle` for the test CA.
 */
export function awsCli(dir: string, endpoint: Endpoint, cred: Cred): AwsCli {
  const config = join(dir, 'aws-config');
  const credentials = join(dir, 'aws-credentials');
  writeFileSync(config, '[default]\nregion = us-east-1\n');
  writeFileSync(credentials, `[default]\naws_access_key_id = ${cred.accessKeyId}\naws_secret_access_key = ${cred.secretAccessKey}\n`);
  const env = { AWS_CONFIG_FILE: config, AWS_SHARED_CREDENTIALS_FILE: credentials };
  const common = ['--endpoint-url', endpoint.url, ...(endpoint.caFile ? ['--ca-bundle', endpoint.caFile] : [])];
  return {
    env,
    run: (args, options = {}) => run('awscli', python3(), ['-m', 'awscli', ...args, ...common], { ...options, env: { ...env, ...options.env } }),
  };
}

// ---- s3cmd ---------------------------------------------------------------

/** s3cmd 2.3.0 with a config file of its own: path style, SigV4 (or V2: `signature_v2 = True`), the test CA. */
export function s3cmd(dir: string, endpoint: Endpoint, cred: Cred, name = 's3cmd', signatureV2 = false): { run(args: string[], options?: RunOptions): Promise<ToolResult>; configFile: string } {
  const u = new URL(endpoint.url);
  const https = u.protocol === 'https:';
  const configFile = join(dir, `${name}.cfg`);
  writeFileSync(configFile, s3cmdConfig(u.host, cred, https, endpoint.caFile, signatureV2));
  return { configFile, run: (args, options) => run('s3cmd', 's3cmd', ['-c', configFile, ...args], options) };
}

export function s3cmdConfig(hostPort: string, cred: Cred, https: boolean, caFile?: string, signatureV2 = false): string {
  return [
    '[default]',
    `access_key = ${cred.accessKeyId}`,
    `secret_key = ${cred.secretAccessKey}`,
    `host_base = ${hostPort}`,
    `host_bucket = ${hostPort}`,
    'bucket_location = us-east-1',
    `signature_v2 = ${signatureV2 ? 'True' : 'False'}`,
    `use_https = ${https ? 'True' : 'False'}`,
    ...(https ? ['check_ssl_certificate = True', 'check_ssl_hostname = True', `ca_certs_file = ${caFile ?? ''}`] : []),
    'multipart_chunk_size_mb = 5',
    '',
  ].join('\n');
}

// ---- rclone --------------------------------------------------------------

/** rclone 1.60 with a remote named `casket` (provider Other) in a config file of its own. */
export function rclone(dir: string, endpoint: Endpoint, cred: Cred, name = 'rclone'): { run(args: string[], options?: RunOptions): Promise<ToolResult>; configFile: string } {
  const configFile = join(dir, `${name}.conf`);
  writeFileSync(configFile, rcloneConfig(endpoint.url, cred));
  const common = ['--config', configFile, '--retries', '1', '--low-level-retries', '1', ...(endpoint.caFile ? ['--ca-cert', endpoint.caFile] : [])];
  return { configFile, run: (args, options) => run('rclone', 'rclone', [...args, ...common], options) };
}

export function rcloneConfig(url: string, cred: Cred): string {
  return ['[casket]', 'type = s3', 'provider = Other', `access_key_id = ${cred.accessKeyId}`, `secret_access_key = ${cred.secretAccessKey}`, `endpoint = ${url}`, 'region = us-east-1', ''].join('\n');
}

// ---- boto3 ---------------------------------------------------------------

export interface BotoError {
  type: string;
  code?: string;
  status?: number;
  message?: string;
  etag?: string;
}

export interface BotoReply {
  ok?: Record<string, unknown>;
  error?: BotoError;
}

export interface Boto3 {
  /** One call; the reply is returned as is (ok or error). */
  call(op: string, args: Record<string, unknown>): Promise<BotoReply>;
  /** One call that must succeed: its result, or an error naming boto3 and the call. */
  ok<T = Record<string, unknown>>(op: string, args: Record<string, unknown>): Promise<T>;
  close(): Promise<void>;
}

const BOTO3_DRIVER = resolve(import.meta.dirname, '../clients/fixtures/boto3_driver.py');

/** A python process driving one boto3 client (see fixtures/boto3_driver.py). */
export function boto3(endpoint: Endpoint, cred: Cred, options: { agent?: string; partSize?: number } = {}): Boto3 {
  const settings = { endpoint: endpoint.url, access_key: cred.accessKeyId, secret_key: cred.secretAccessKey, ca: endpoint.caFile ?? null, agent: options.agent ?? null, part_size: options.partSize ?? 5 * 1024 * 1024 };
  const child = spawn(python3(), [BOTO3_DRIVER, JSON.stringify(settings)], { env: cleanEnv({ AWS_CONFIG_FILE: '/dev/null', AWS_SHARED_CREDENTIALS_FILE: '/dev/null' }), stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const exited = new Promise<void>((r) => child.once('close', () => r()));
  let queue: Promise<unknown> = Promise.resolve();
  const call = (op: string, args: Record<string, unknown>): Promise<BotoReply> => {
    const next = queue.then(async () => {
      child.stdin.write(`${JSON.stringify({ op, args })}\n`);
      const line = await lines.next();
      if (line.done) throw new Error(`boto3 ${op}(${JSON.stringify(args)}): the driver exited\n${stderr}`);
      return JSON.parse(line.value) as BotoReply;
    });
    queue = next.catch(() => {});
    return next;
  };
  return {
    call,
    ok: async <T>(op: string, args: Record<string, unknown>) => {
      const reply = await call(op, args);
      if (reply.error) throw new Error(`boto3 ${op}(${JSON.stringify(args)}) failed: ${JSON.stringify(reply.error)}\n${stderr.slice(-2000)}`);
      return reply.ok as T;
    },
    close: async () => {
      child.stdin.end();
      await exited;
    },
  };
}

export function readText(path: string): string {
  return readFileSync(path, 'utf8');
}
