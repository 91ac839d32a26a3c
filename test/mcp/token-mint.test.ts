/**
 * `casket mcp token` checks what it mints (issue 40 item 4): it asks the
 * casket at --endpoint whether the token would be let in, so a wrong secret,
 * or an agent the key may not act as, is exit 2 with casket's reason at mint
 * time — not a token that fails at its first use. A good one prints a token
 * that works. Nothing is printed on stdout when the mint is refused, and the
 * secret appears nowhere.
 */
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, startCasket, type Cred, type RunningCasket } from '../helpers/casket.js';
import { sdk } from '../helpers/clients.js';
import { call, httpClient, text } from '../helpers/mcp.js';

let casket: RunningCasket;
const bucket = 'mint';

beforeAll(async () => {
  casket = await startCasket({ agents: ['alice'], keys: { person: {} } });
  const admin = sdk(casket.url, casket.admin);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'notes.md', Body: 'hello\n' }));
  admin.destroy();
});
afterAll(async () => {
  await casket?.stop();
});

/** `casket mcp token` as a user runs it, the secret by env. */
function mint(cred: Cred, args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, 'mcp', 'token', ...args], { env: { ...process.env, CASKET_MCP_ACCESS_KEY: cred.accessKeyId, CASKET_MCP_SECRET_KEY: cred.secretAccessKey }, encoding: 'utf8', timeout: 20_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('casket mcp token checks what it mints', () => {
  it('a wrong secret is exit 2 at mint time, no token printed', () => {
    const wrong = { accessKeyId: casket.agents.alice!.accessKeyId, secretAccessKey: 'not-the-secret' };
    const r = mint(wrong, ['--endpoint', casket.url]);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/refused the token.*not one casket issued/);
    expect(r.stderr).not.toContain('not-the-secret');
  });

  it('--agent bob with a key bound to alice is exit 2 at mint time, naming the binding', () => {
    const r = mint(casket.agents.alice!, ['--endpoint', casket.url, '--agent', 'bob']);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('bound to agent "alice" and cannot act as agent "bob"');
  });

  it('without --endpoint it says what to give instead of minting unchecked', () => {
    const r = mint(casket.agents.alice!, []);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/--endpoint/);
  });

  it('a good key mints a token that works: an agent\'s own, and a person\'s acting as an agent', async () => {
    for (const [cred, args] of [[casket.agents.alice!, []], [casket.keys.person!, ['--agent', 'carol']]] as const) {
      const r = mint(cred, ['--endpoint', casket.url, ...args]);
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const client = await httpClient(casket, r.stdout.trim());
      expect(text(await call(client, 'read_text_file', { path: `${bucket}/notes.md` }))).toContain('hello');
      await client.close();
    }
  });
});
