/**
 * Helpers of the rollback tests: an agent's writes as an agent must make
 * them (read in full, then write conditioned on what it read — docs/design.md
 * §4), a person's plain writes, reading a key's state, and `casket rollback`
 * run as the command-line tool against a running casket.
 */
import {
  CompleteMultipartUploadCommand, CreateMultipartUploadCommand, DeleteObjectCommand, GetObjectCommand, PutObjectCommand,
  UploadPartCommand, type S3Client,
} from '@aws-sdk/client-s3';
import { spawn } from 'node:child_process';
import { Writable } from 'node:stream';
import { CLI, startCasket, type Cred, type RunningCasket } from '../helpers/casket.js';
import { bytes } from '../helpers/clients.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
export { inProcessWithBucket } from '../helpers/in-process.js';
import { raw } from '../helpers/raw.js';
import type { RollbackAnswer } from '../../src/rollback/plan.js';

export type RollbackCasket = Pick<RunningCasket, 'url' | 'dataDir' | 'admin' | 'agents' | 'keys' | 'stop'>;

/**
 * The casket a rollback test drives, with agent alice and a person's key:
 * a casket process (test/helpers/casket.ts), on its embedded store or in
 * front of CASKET_TEST_UPSTREAM; or, with CASKET_TEST_IN_PROCESS set (as
 * vitest.mutate-rooms.config.ts sets it for `npm run mutate:rooms`), casket
 * in this process (test/helpers/in-process.ts), the one place Stryker's
 * mutants of src/rollback can be seen. `flags`: by their config names.
 */
export async function startRollbackCasket(flags: Record<string, string> = {}): Promise<RollbackCasket> {
  if (process.env.CASKET_TEST_IN_PROCESS) return startInProcess({ agents: ['alice'], keys: ['person'], flags });
  const args = Object.entries(flags).flatMap(([name, value]) => [`--${name.replace(/[A-Z]/g, (ch) => `-${ch.toLowerCase()}`)}`, value]);
  return startCasket({ agents: ['alice'], keys: { person: {} }, args });
}

/** The key's content, or null when it does not exist. */
export async function content(s3: S3Client, bucket: string, key: string): Promise<{ body: Buffer; etag: string } | null> {
  try {
    const r = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    return { body: await bytes(r.Body), etag: r.ETag! };
  } catch (e) {
    if ((e as { name?: string }).name === 'NoSuchKey') return null;
    throw e;
  }
}

/** An agent's overwrite: read the key in full, write conditioned on that read. Creates when absent. */
export async function agentPut(s3: S3Client, bucket: string, key: string, body: string | Buffer): Promise<string> {
  const now = await content(s3, bucket, key);
  const condition = now ? { IfMatch: now.etag } : { IfNoneMatch: '*' };
  return (await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ...condition }))).ETag!;
}

/** An agent's delete: read the key in full, delete conditioned on that read. */
export async function agentDelete(s3: S3Client, bucket: string, key: string): Promise<void> {
  const now = await content(s3, bucket, key);
  if (!now) throw new Error(`${key} does not exist`);
  await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key, IfMatch: now.etag }));
}

/** A multipart upload made create-only: two parts, the first of S3's 5 MiB minimum. */
export async function agentMultipartCreate(s3: S3Client, bucket: string, key: string, parts: Buffer[]): Promise<string> {
  const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
  const done: Array<{ PartNumber: number; ETag: string }> = [];
  for (const [i, part] of parts.entries()) {
    const r = await s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: i + 1, Body: part }));
    done.push({ PartNumber: i + 1, ETag: r.ETag! });
  }
  const r = await s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId, MultipartUpload: { Parts: done }, IfNoneMatch: '*' }));
  return r.ETag!;
}

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  answer?: RollbackAnswer;
}

/**
 * `casket rollback` against `casket`, signed with `cred` (default: its admin
 * key): dist/cli.js in a process of its own; or, with CASKET_TEST_IN_PROCESS
 * set (`npm run mutate:rooms`), src/rollback/command.ts in this process, so
 * that its mutants are seen — with the exit codes src/cli.ts gives (2 for a
 * usage error, its message on stderr).
 */
export async function cliRollback(casket: Pick<RunningCasket, 'url' | 'admin'>, args: string[], cred: Cred = casket.admin): Promise<CliRun> {
  const argv = ['--endpoint', casket.url, '--access-key', cred.accessKeyId, '--secret-key', cred.secretAccessKey, ...args];
  const run = process.env.CASKET_TEST_IN_PROCESS ? await commandInProcess(argv) : await commandSpawned(argv);
  if (args.includes('--json') && run.code !== 1 && run.code !== 2) run.answer = JSON.parse(run.stdout) as RollbackAnswer;
  return run;
}

async function commandInProcess(argv: string[]): Promise<CliRun> {
  const { rollbackCommand } = await import('../../src/rollback/command.js');
  const out = { stdout: '', stderr: '' };
  const sink = (to: 'stdout' | 'stderr') => new Writable({ write: (chunk: Buffer, _enc, done) => { out[to] += chunk.toString(); done(); } });
  try {
    const code = await rollbackCommand(argv, {}, { stdout: sink('stdout'), stderr: sink('stderr') });
    return { code, ...out };
  } catch (e) {
    if ((e as Error).name !== 'UsageError') throw e;
    return { code: 2, stdout: out.stdout, stderr: `${out.stderr}casket: ${(e as Error).message}\n` };
  }
}

async function commandSpawned(argv: string[]): Promise<CliRun> {
  const proc = spawn(process.execPath, [CLI, 'rollback', ...argv], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => proc.once('close', (c) => resolve(c)));
  return { code, stdout, stderr };
}

export const keysOf = (list: Array<{ key: string }>) => list.map((e) => e.key).sort();


/** POST /_casket/rollback as the admin: its answer, or an error naming any other status. */
export async function postRollback(c: Pick<InProcessCasket, 'url' | 'admin'>, request: Record<string, unknown>): Promise<RollbackAnswer> {
  const res = await raw(c.url, c.admin, { method: 'POST', path: '/_casket/rollback', headers: { 'content-type': 'application/json' }, body: JSON.stringify(request) });
  if (res.status !== 200) throw new Error(`rollback answered ${res.status}: ${res.body}`);
  return JSON.parse(res.body) as RollbackAnswer;
}

/**
 * Runs `rollback` with `write` made once, when the rollback first asks the
 * retention store for a version `when` picks: the plan has judged the keys
 * before that one and the commit is still to come, so `write` lands between
 * the plan and the commit. In-process only (the retention store is this
 * process's). What the rollback answered, and whether `write` was made.
 */
export async function writingBeforeCommit<T>(c: Pick<InProcessCasket, 'casket'>, when: (version: { bucket: string; key: string }) => boolean, write: () => Promise<unknown>, rollback: () => Promise<T>): Promise<{ answer: T; stepped: boolean }> {
  const retainer = c.casket.services.retainer!;
  const get = retainer.get.bind(retainer);
  let stepped = false;
  retainer.get = async (version) => {
    if (!stepped && when(version)) {
      stepped = true;
      await write();
    }
    return get(version);
  };
  try {
    const answer = await rollback();
    return { answer, stepped };
  } finally {
    retainer.get = get;
  }
}

