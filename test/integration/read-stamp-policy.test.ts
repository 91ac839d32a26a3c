/**
 * The read-stamp policy (`--agent-writes read-stamp`, docs/design.md §4): tools that
 * cannot send If-Match — rclone, s3cmd — driven by agents with their own
 * keys run interleaved read-modify-write loops on one key. casket conditions
 * each write on the agent's last full read: no update is lost, and the loser
 * of each round gets the tool's normal precondition failure.
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { spawn, spawnSync } from 'node:child_process';
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

function s3cmdConfig(cred: Cred): string {
  const cfg = join(dir, `s3cmd-${cred.accessKeyId}.cfg`);
  const host = new URL(casket.url).host;
  writeFileSync(cfg, `[default]\naccess_key = ${cred.accessKeyId}\nsecret_key = ${cred.secretAccessKey}\nhost_base = ${host}\nhost_bucket = ${host}\nuse_https = False\nsignature_v2 = False\n`);
  return cfg;
}

function s3cmd(cred: Cred, args: string[]) {
  return spawnSync('s3cmd', ['-c', s3cmdConfig(cred), '--no-progress', ...args], { encoding: 'utf8', timeout: 60_000 });
}

function rcloneEnv(cred: Cred): NodeJS.ProcessEnv {
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
  delete env.AWS_CA_BUNDLE; // rclone 1.60 fails to start with it set (README "Clients")
  return env;
}

function rclone(cred: Cred, args: string[], input?: string) {
  const env = rcloneEnv(cred);
  return spawnSync('rclone', ['--retries', '1', '--low-level-retries', '1', ...args], { encoding: 'utf8', env, input, timeout: 60_000 });
}

function runAsync(command: string, args: string[], env: NodeJS.ProcessEnv, input?: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('close', (status) => resolve({ status, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}

/** s3cmd and rclone as above, without blocking the test's event loop (two tools at once). */
function s3cmdAsync(cred: Cred, args: string[], input?: string) {
  return runAsync('s3cmd', ['-c', s3cmdConfig(cred), '--no-progress', ...args], process.env, input);
}

function rcloneAsync(cred: Cred, args: string[], input?: string) {
  return runAsync('rclone', ['--retries', '1', '--low-level-retries', '1', ...args], rcloneEnv(cred), input);
}

/** One agent's read with its tool. */
function readWith(tool: 's3cmd' | 'rclone', cred: Cred): number {
  const r = tool === 's3cmd' ? s3cmd(cred, ['get', `s3://${bucket}/${key}`, '-']) : rclone(cred, ['cat', `ck:${bucket}/${key}`]);
  expect(r.status, `${tool} read: ${r.stderr}`).toBe(0);
  return Number(r.stdout.trim().split(' ')[0]);
}

/**
 * One agent's write with its tool: exit status. The content is the counter
 * alone, so two agents that read the same value write byte-identical bytes:
 * the second must still be refused (docs/design.md §3, a failed condition is a 412
 * whatever the bytes).
 */
function writeWith(tool: 's3cmd' | 'rclone', cred: Cred, value: number): number {
  const content = String(value);
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
      // How each tool reports a 412 (README "Clients"): s3cmd exit 14, rclone exit 1.
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

  it('two read-modify-write loops, s3cmd and rclone, 20 rounds each, free-running after a first round started together: the counter equals the writes that succeeded, and some were refused', { timeout: 300_000 }, async () => {
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'race', Body: '0' }));
    // The first round starts together — both loops read before either writes —
    // so one write is refused whatever the timing; the rest run free.
    let readFirst = 0;
    let bothReadFirst!: () => void;
    const firstReads = new Promise<void>((resolve) => (bothReadFirst = resolve));
    const loop = async (tool: 's3cmd' | 'rclone', cred: Cred) => {
      let won = 0;
      let refused = 0;
      for (let round = 0; round < 20; round++) {
        const got = tool === 's3cmd' ? await s3cmdAsync(cred, ['get', `s3://${bucket}/race`, '-']) : await rcloneAsync(cred, ['cat', `ck:${bucket}/race`]);
        expect(got.status, `${tool} read: ${got.stderr}`).toBe(0);
        if (round === 0) {
          if (++readFirst === 2) bothReadFirst();
          await firstReads;
        }
        const next = String(Number(got.stdout.trim()) + 1);
        const put = tool === 's3cmd' ? await s3cmdAsync(cred, ['put', '-', `s3://${bucket}/race`], next) : await rcloneAsync(cred, ['rcat', `ck:${bucket}/race`], next);
        // A lost race is the tool's own precondition error (README "Clients"), nothing else.
        expect([0, tool === 's3cmd' ? 14 : 1], `${tool} write: ${put.stderr}`).toContain(put.status);
        if (put.status === 0) won++;
        else refused++;
      }
      return { won, refused };
    };
    const [a, b] = await Promise.all([loop('s3cmd', casket.agents['s3cmd-agent']!), loop('rclone', casket.agents['rclone-agent']!)]);
    const final = await admin.send(new GetObjectCommand({ Bucket: bucket, Key: 'race' }));
    expect(Number((await bytes(final.Body)).toString())).toBe(a.won + b.won);
    // Round 0 made a refusal certain. And every refusal of one loop is a write
    // of the other that landed between its read and its write — a different
    // one per round — so refusals never outnumber wins: of the 40 writes, at
    // least 20 succeeded (none, or a refusal with no write to explain it, is a
    // casket that refuses what it should let through).
    expect(a.refused + b.refused, 'refusals').toBeGreaterThan(0);
    expect(a.won + b.won, `wins (s3cmd ${a.won}, rclone ${b.won})`).toBeGreaterThanOrEqual(20);
    expect(a.refused, 's3cmd refusals ≤ rclone wins').toBeLessThanOrEqual(b.won);
    expect(b.refused, 'rclone refusals ≤ s3cmd wins').toBeLessThanOrEqual(a.won);
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
