/**
 * The read-stamp policy (`--agent-writes read-stamp`, DESIGN §4): tools that
 * cannot send If-Match — rclone, s3cmd — driven by agents with their own
 * keys run interleaved read-modify-write loops on one key. casket conditions
 * each write on the agent's last full read: no update is lost, and the loser
 * of each round gets the tool's normal precondition failure.
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type Cred, type RunningCasket } from '../helpers/casket.js';
import { bytes, failure, sdk } from '../helpers/clients.js';
import { hasCommand, need } from '../helpers/tools.js';

const bucket = 'policy';
const key = 'counter';
const haveTools = need('s3cmd and rclone', hasCommand('s3cmd') && hasCommand('rclone'));

let casket: RunningCasket;
let admin: S3Client;
let dir: string;

function s3cmd(cred: Cred, args: string[]) {
  const cfg = join(dir, `s3cmd-${cred.accessKeyId}.cfg`);
  const host = new URL(casket.url).host;
  writeFileSync(cfg, `[default]\naccess_key = ${cred.accessKeyId}\nsecret_key = ${cred.secretAccessKey}\nhost_base = ${host}\nhost_bucket = ${host}\nuse_https = False\nsignature_v2 = False\n`);
  return spawnSync('s3cmd', ['-c', cfg, '--no-progress', ...args], { encoding: 'utf8', timeout: 60_000 });
}

function rclone(cred: Cred, args: string[], input?: string) {
  const env: Record<string, string | undefined> = {
    ...process.env,
    RCLONE_CONFIG_CK_TYPE: 's3',
    RCLONE_CONFIG_CK_PROVIDER: 'Other',
    RCLONE_CONFIG_CK_ACCESS_KEY_ID: cred.accessKeyId,
    RCLONE_CONFIG_CK_SECRET_ACCESS_KEY: cred.secretAccessKey,
    RCLONE_CONFIG_CK_ENDPOINT: casket.url,
    RCLONE_CONFIG_CK_REGION: 'us-east-1',
    RCLONE_CONFIG: join(dir, 'rclone.conf'),
  };
  delete env.AWS_CA_BUNDLE; // rclone 1.60 fails to start with it set (CLIENTS.md)
  return spawnSync('rclone', ['--retries', '1', '--low-level-retries', '1', ...args], { encoding: 'utf8', env, input, timeout: 60_000 });
}

/** One agent's read with its tool. */
function readWith(tool: 's3cmd' | 'rclone', cred: Cred): number {
  const r = tool === 's3cmd' ? s3cmd(cred, ['get', `s3://${bucket}/${key}`, '-']) : rclone(cred, ['cat', `ck:${bucket}/${key}`]);
  expect(r.status, `${tool} read: ${r.stderr}`).toBe(0);
  return Number(r.stdout.trim().split(' ')[0]);
}

/**
 * One agent's write with its tool: exit status. The content names the writer:
 * two agents writing byte-identical content would be an idempotent retry,
 * which casket lets through by design (DESIGN §3).
 */
function writeWith(tool: 's3cmd' | 'rclone', cred: Cred, value: number): number {
  const content = `${value} by ${tool}`;
  if (tool === 's3cmd') {
    const file = join(dir, 'value.txt');
    writeFileSync(file, content);
    return s3cmd(cred, ['put', file, `s3://${bucket}/${key}`]).status ?? -1;
  }
  return rclone(cred, ['rcat', `ck:${bucket}/${key}`], content).status ?? -1;
}

describe.runIf(haveTools)('read-stamp policy with unmodified tools', () => {
  // Inside the gated block: without the tools (a user's machine) nothing starts; in CI need() has thrown already.
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'casket-policy-'));
    casket = await startCasket({ agents: ['s3cmd-agent', 'rclone-agent'], args: ['--agent-writes', 'read-stamp'] });
    admin = sdk(casket.url, casket.admin);
    await admin.send(new CreateBucketCommand({ Bucket: bucket }));
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: '0' }));
  });
  afterAll(async () => {
    admin?.destroy();
    await casket?.stop();
  });

  it('interleaved read-modify-write loops of s3cmd and rclone agents lose no update', async () => {
    const agents = [
      { tool: 's3cmd' as const, cred: () => casket.agents['s3cmd-agent']! },
      { tool: 'rclone' as const, cred: () => casket.agents['rclone-agent']! },
    ];
    let successes = 0;
    for (let round = 0; round < 4; round++) {
      // Both read the same version, then both write: the second writer's read is stale.
      const [first, second] = round % 2 === 0 ? agents : [agents[1]!, agents[0]!];
      const a = readWith(first!.tool, first!.cred());
      const b = readWith(second!.tool, second!.cred());
      expect(a).toBe(b);
      expect(writeWith(first!.tool, first!.cred(), a + 1), `${first!.tool} write in round ${round}`).toBe(0);
      successes++;
      const loser = writeWith(second!.tool, second!.cred(), b + 1);
      // How each tool reports a 412 (CLIENTS.md): s3cmd exit 14, rclone exit 1.
      expect(loser, `${second!.tool} must fail in round ${round}`).not.toBe(0);
      expect(loser).toBe(second!.tool === 's3cmd' ? 14 : 1);
      // The loser re-reads and applies its increment on the new version: no update lost.
      const again = readWith(second!.tool, second!.cred());
      expect(again).toBe(a + 1);
      expect(writeWith(second!.tool, second!.cred(), again + 1), `${second!.tool} retry in round ${round}`).toBe(0);
      successes++;
    }
    const final = await admin.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    expect(Number((await bytes(final.Body)).toString().split(' ')[0])).toBe(successes);
  });

  it('an agent that never read an existing key cannot overwrite it', async () => {
    const fresh = sdk(casket.url, casket.agents['rclone-agent']!);
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'unread', Body: 'kept' }));
    const f = await failure(fresh.send(new PutObjectCommand({ Bucket: bucket, Key: 'unread', Body: 'overwrite' })));
    expect(f).toMatchObject({ status: 412 });
    expect((f.error as { Reason?: string }).Reason).toBe('not-read');
    fresh.destroy();
  });
});
