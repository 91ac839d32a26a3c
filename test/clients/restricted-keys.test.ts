/**
 * The client matrix under policies (docs/design.md §7): awscli, s3cmd,
 * rclone and minio-js, each with a key that may only work under its own
 * prefix `matrix/<tool>/`, upload, list, download and delete there, and fail
 * (exit code / AccessDenied) when they step outside it. Each key is a person's
 * (no agent binding), so the tools' unconditional writes are plain S3 writes.
 *
 * rclone checks or creates the bucket before an upload unless told not to;
 * a key limited to a prefix may not, so it runs with --s3-no-check-bucket, as
 * rclone's documentation advises for least-privilege keys.
 */
import { CreateBucketCommand, HeadObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { awsCli, hasPythonModule, ok, rclone, s3cmd, type ToolResult } from '../helpers/cli-tools.js';
import { minio, sdk } from '../helpers/clients.js';
import { hasCommand, need } from '../helpers/tools.js';

const bucket = 'matrix';
const TOOLS = ['awscli', 's3cmd', 'rclone', 'minio'] as const;
type Tool = (typeof TOOLS)[number];

const policyFor = (tool: Tool) => ({
  Statement: [
    { Effect: 'Allow', Action: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject', 's3:AbortMultipartUpload', 's3:ListMultipartUploadParts'], Resource: `arn:aws:s3:::${bucket}/${tool}/*` },
    { Effect: 'Allow', Action: 's3:ListBucket', Resource: `arn:aws:s3:::${bucket}`, Condition: { StringLike: { 's3:prefix': [`${tool}/*`] } } },
    // s3cmd asks where the bucket is before it writes.
    { Effect: 'Allow', Action: 's3:GetBucketLocation', Resource: `arn:aws:s3:::${bucket}` },
  ],
});

const available: Record<Tool, boolean> = {
  awscli: need('awscli (python3 -m awscli)', hasPythonModule('awscli')),
  s3cmd: need('s3cmd', hasCommand('s3cmd')),
  rclone: need('rclone', hasCommand('rclone')),
  minio: true,
};

let casket: RunningCasket;
let admin: S3Client;
let dir: string;

beforeAll(async () => {
  casket = await startCasket({ keys: Object.fromEntries(TOOLS.map((t) => [t, { policy: policyFor(t) }])) });
  admin = sdk(casket.url, casket.admin);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  dir = mkdtempSync(join(tmpdir(), 'casket-restricted-'));
});
afterAll(async () => {
  admin?.destroy();
  await casket?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const exists = async (key: string) => admin.send(new HeadObjectCommand({ Bucket: bucket, Key: key })).then(() => true, () => false);
const failed = (r: ToolResult) => expect(r.code, `${r.command}\n${r.stderr}`).not.toBe(0);

/** Four tool runs per test: python tools take seconds each to start on two shared cores. */

/** Per tool: put inside, list inside, get inside, delete inside; put and list outside refused. */
interface Driver {
  put(file: string, key: string): Promise<ToolResult>;
  list(prefix: string): Promise<ToolResult>;
  get(key: string, file: string): Promise<ToolResult>;
  remove(key: string): Promise<ToolResult>;
}

function driver(tool: Exclude<Tool, 'minio'>, work: string): Driver {
  const endpoint = { url: casket.url };
  const cred = casket.keys[tool]!;
  switch (tool) {
    case 'awscli': {
      const aws = awsCli(work, endpoint, cred);
      return {
        put: (file, key) => aws.run(['s3', 'cp', file, `s3://${bucket}/${key}`]),
        list: (prefix) => aws.run(['s3', 'ls', `s3://${bucket}/${prefix}`]),
        get: (key, file) => aws.run(['s3', 'cp', `s3://${bucket}/${key}`, file]),
        remove: (key) => aws.run(['s3', 'rm', `s3://${bucket}/${key}`]),
      };
    }
    case 's3cmd': {
      const s = s3cmd(work, endpoint, cred);
      return {
        put: (file, key) => s.run(['put', file, `s3://${bucket}/${key}`]),
        list: (prefix) => s.run(['ls', `s3://${bucket}/${prefix}`]),
        get: (key, file) => s.run(['get', '--force', `s3://${bucket}/${key}`, file]),
        remove: (key) => s.run(['rm', `s3://${bucket}/${key}`]),
      };
    }
    case 'rclone': {
      const rc = rclone(work, endpoint, cred);
      const flags = ['--s3-no-check-bucket'];
      return {
        put: (file, key) => rc.run(['copyto', file, `casket:${bucket}/${key}`, ...flags]),
        list: (prefix) => rc.run(['lsf', `casket:${bucket}/${prefix}`, ...flags]),
        get: (key, file) => rc.run(['copyto', `casket:${bucket}/${key}`, file, ...flags]),
        remove: (key) => rc.run(['deletefile', `casket:${bucket}/${key}`, ...flags]),
      };
    }
  }
}

describe.each(TOOLS.filter((t) => t !== 'minio' && available[t]) as Array<Exclude<Tool, 'minio'>>)('%s with a key limited to its prefix', (tool) => {
  let d: Driver;
  let work: string;
  beforeAll(() => {
    work = join(dir, tool);
    mkdirSync(work, { recursive: true });
    d = driver(tool, work);
  });

  it('uploads, lists, downloads and deletes inside its prefix', async () => {
    const src = join(work, 'up.txt');
    writeFileSync(src, `hello from ${tool}\n`);
    ok(await d.put(src, `${tool}/notes/up.txt`));
    expect(await exists(`${tool}/notes/up.txt`)).toBe(true);
    expect(ok(await d.list(`${tool}/notes/`)).stdout).toContain('up.txt');
    const down = join(work, 'down.txt');
    ok(await d.get(`${tool}/notes/up.txt`, down));
    expect(readFileSync(down, 'utf8')).toBe(`hello from ${tool}\n`);
    ok(await d.remove(`${tool}/notes/up.txt`));
    expect(await exists(`${tool}/notes/up.txt`)).toBe(false);
  }, 120_000);

  it('is refused outside it', async () => {
    const src = join(work, 'out.txt');
    writeFileSync(src, 'out');
    failed(await d.put(src, `elsewhere/${tool}.txt`));
    expect(await exists(`elsewhere/${tool}.txt`)).toBe(false);
    failed(await d.list('elsewhere/'));
  }, 120_000);
});

describe('minio-js with a key limited to its prefix', () => {
  it('works inside its prefix and is refused outside it', async () => {
    const m = minio(casket.url, casket.keys.minio!);
    await m.putObject(bucket, 'minio/a.txt', Buffer.from('from minio'));
    const names: string[] = [];
    for await (const o of m.listObjectsV2(bucket, 'minio/', true)) names.push((o as { name: string }).name);
    expect(names).toEqual(['minio/a.txt']);
    const chunks: Buffer[] = [];
    for await (const c of await m.getObject(bucket, 'minio/a.txt')) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('from minio');
    await m.removeObject(bucket, 'minio/a.txt');
    await expect(m.putObject(bucket, 'elsewhere/minio.txt', Buffer.from('x'))).rejects.toMatchObject({ code: 'AccessDenied' });
    const listAll = async () => {
      for await (const _ of m.listObjectsV2(bucket, '', true)) void _;
    };
    await expect(listAll()).rejects.toMatchObject({ code: 'AccessDenied' });
    expect(await exists('elsewhere/minio.txt')).toBe(false);
  });
});
