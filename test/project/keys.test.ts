/**
 * `casket keys` against a running casket (a real process, a real S3 client):
 * a key added, rotated or removed takes effect without a restart; `list`
 * never prints a secret; the file stays mode 0600; an agent-bound key with a
 * policy is that agent and is limited by it; bad input exits 2 and changes
 * nothing.
 */
import { CreateBucketCommand, GetObjectCommand, ListBucketsCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, startCasket, type Cred, type RunningCasket } from '../helpers/casket.js';
import { failure, sdk } from '../helpers/clients.js';
import { until } from '../helpers/poll.js';

let casket: RunningCasket;

function keys(args: string[], env: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, 'keys', ...args, '--credentials', casket.credentialsFile], { encoding: 'utf8', env: { ...process.env, ...env } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function added(args: string[] = []): Cred & { agent?: string } {
  const r = keys(['add', ...args, '--json']);
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  const out = JSON.parse(r.stdout) as { accessKey: string; secretKey: string; agent?: string };
  return { accessKeyId: out.accessKey, secretAccessKey: out.secretKey, ...(out.agent && { agent: out.agent }) };
}

async function works(cred: Cred): Promise<boolean> {
  try {
    await sdk(casket.url, cred).send(new ListBucketsCommand({}));
    return true;
  } catch {
    return false;
  }
}

beforeAll(async () => {
  casket = await startCasket();
  await sdk(casket.url, casket.admin).send(new CreateBucketCommand({ Bucket: 'team' }));
});
afterAll(async () => {
  await casket?.stop();
});

describe('casket keys', () => {
  it('adds a key that a running casket accepts without a restart, shown once and never listed', async () => {
    const cred = added();
    expect(cred.accessKeyId).toMatch(/^[A-Z0-9]{20}$/);
    await until(() => works(cred), 'the added key to be accepted', 5_000);
    await sdk(casket.url, cred).send(new PutObjectCommand({ Bucket: 'team', Key: 'new-key.txt', Body: 'hello' }));
    const list = keys(['list']);
    expect(list.status).toBe(0);
    expect(list.stdout).toContain(cred.accessKeyId);
    expect(list.stdout).toContain(casket.admin.accessKeyId);
    expect(list.stdout).not.toContain(cred.secretAccessKey);
    expect(list.stdout).not.toContain(casket.admin.secretAccessKey);
    expect(keys(['list', '--json']).stdout).not.toContain(cred.secretAccessKey);
    expect(statSync(casket.credentialsFile).mode & 0o777).toBe(0o600);
  });

  it('rotates a key: the old secret is refused, the new one works', async () => {
    const old = added();
    await until(() => works(old), 'the added key to be accepted', 5_000);
    const r = keys(['rotate', old.accessKeyId, '--json']);
    expect(r.status).toBe(0);
    const rotated = JSON.parse(r.stdout) as { accessKey: string; secretKey: string };
    expect(rotated.accessKey).toBe(old.accessKeyId);
    expect(rotated.secretKey).not.toBe(old.secretAccessKey);
    const next = { accessKeyId: rotated.accessKey, secretAccessKey: rotated.secretKey };
    await until(() => works(next), 'the new secret to be accepted', 5_000);
    const refused = await failure(sdk(casket.url, old).send(new ListBucketsCommand({})));
    expect(refused.status).toBe(403);
    expect(refused.name).toBe('SignatureDoesNotMatch');
    expect(statSync(casket.credentialsFile).mode & 0o777).toBe(0o600);
  });

  it('removes a key: it is refused from then on', async () => {
    const gone = added();
    await until(() => works(gone), 'the added key to be accepted', 5_000);
    const r = keys(['remove', gone.accessKeyId]);
    expect(r.status).toBe(0);
    await until(async () => !(await works(gone)), 'the removed key to be refused', 5_000);
    const refused = await failure(sdk(casket.url, gone).send(new ListBucketsCommand({})));
    expect(refused.name).toBe('InvalidAccessKeyId');
    expect(keys(['list']).stdout).not.toContain(gone.accessKeyId);
    expect(await works(casket.admin)).toBe(true);
  });

  it('an agent-bound key with a policy writes as that agent and only where the policy allows', async () => {
    const policy = join(casket.dataDir, 'drafts-only.json');
    writeFileSync(policy, JSON.stringify({
      Version: '2012-10-17',
      Statement: [{ Effect: 'Allow', Action: ['s3:GetObject', 's3:PutObject'], Resource: 'arn:aws:s3:::team/drafts/*' }],
    }));
    const carol = added(['--agent', 'carol', '--policy', policy]);
    expect(carol.agent).toBe('carol');
    const client = sdk(casket.url, carol);
    await until(async () => {
      try {
        await client.send(new PutObjectCommand({ Bucket: 'team', Key: 'drafts/plan.md', Body: 'v1', IfNoneMatch: '*' }));
        return true;
      } catch {
        return false;
      }
    }, 'the agent key to be accepted', 5_000);
    // An agent's write needs a condition (docs/design.md §3): the key is carol's, not a plain key.
    const unconditioned = await failure(client.send(new PutObjectCommand({ Bucket: 'team', Key: 'drafts/other.md', Body: 'x' })));
    expect(unconditioned.status).toBe(428);
    const outside = await failure(client.send(new PutObjectCommand({ Bucket: 'team', Key: 'plan.md', Body: 'x', IfNoneMatch: '*' })));
    expect(outside.name).toBe('AccessDenied');
    const read = await client.send(new GetObjectCommand({ Bucket: 'team', Key: 'drafts/plan.md' }));
    expect(await read.Body!.transformToString()).toBe('v1');
    expect(keys(['list']).stdout).toMatch(new RegExp(`${carol.accessKeyId}\\s+no\\s+yes\\s+carol`));
  });

  it('bad input exits 2 with a clear message and leaves the file as it was', async () => {
    const before = readFileSync(casket.credentialsFile, 'utf8');
    const badPolicy = join(casket.dataDir, 'bad-policy.json');
    writeFileSync(badPolicy, JSON.stringify({ Statement: [{ Effect: 'Maybe', Action: 's3:GetObject', Resource: '*' }] }));
    const cases: [string[], RegExp][] = [
      [['add', '--policy', badPolicy], /--policy .*bad-policy\.json: .*Effect/],
      [['add', '--policy', join(casket.dataDir, 'absent.json')], /cannot read it \(ENOENT\)/],
      [['add', '--agent', 'has space'], /--agent must be/],
      [['rotate', 'NOSUCHKEY'], /no access key NOSUCHKEY/],
      [['remove'], /needs one ACCESS_KEY/],
      [['add', '--frobnicate'], /unknown option --frobnicate/],
      [['shuffle'], /unknown keys command "shuffle"/],
    ];
    for (const [args, message] of cases) {
      const r = keys(args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(message);
      expect(r.stdout).toBe('');
    }
    expect(readFileSync(casket.credentialsFile, 'utf8')).toBe(before);
  });
});

describe('casket keys on the data dir (no --credentials)', () => {
  it('adds to the credentials file casket made on first start, and that casket takes it', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'casket-keys-'));
    const proc = spawn(process.execPath, [CLI, '--listen', '127.0.0.1:0', '--data-dir', dataDir], { stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      let out = '';
      const url = await new Promise<string>((done, fail) => {
        proc.stdout!.on('data', (d: Buffer) => {
          out += d.toString();
          const m = /"endpoint":"([^"]+)"/.exec(out);
          if (m) done(m[1]!);
        });
        proc.once('exit', (code) => fail(new Error(`casket exited ${code}`)));
      });
      const r = spawnSync(process.execPath, [CLI, 'keys', 'add', '--json'], { encoding: 'utf8', env: { ...process.env, CASKET_DATA_DIR: dataDir } });
      expect(r.status, r.stderr).toBe(0);
      const made = JSON.parse(r.stdout) as { accessKey: string; secretKey: string; file: string };
      expect(resolve(made.file)).toBe(join(dataDir, 'credentials.json'));
      const cred = { accessKeyId: made.accessKey, secretAccessKey: made.secretKey };
      await until(async () => {
        try {
          await sdk(url, cred).send(new ListBucketsCommand({}));
          return true;
        } catch {
          return false;
        }
      }, 'the key added to the data dir to be accepted', 5_000);
      expect(statSync(join(dataDir, 'credentials.json')).mode & 0o777).toBe(0o600);
    } finally {
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
