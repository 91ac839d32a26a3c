/**
 * `casket mcp` and `casket mcp token` as parsed and run by mcpCommand
 * (src/mcp/command.ts), called in this process with the streams cli.ts would
 * hand it, against casket started in-process (test/helpers/in-process.ts), so
 * `npm run mutate:rooms` sees the parsing; token-mint.test.ts and
 * stdio.test.ts spawn the command. What a user notices: each flag and the env
 * variable behind it (the flag wins), the token printed and what it claims,
 * a usage error (cli.ts makes a UsageError exit 2) with the usage text, and
 * the secret nowhere in what is printed.
 */
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { PassThrough, Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MCP_USAGE, mcpCommand } from '../../src/mcp/command.js';
import { readToken, tokenHolds } from '../../src/mcp/token.js';
import { sdk } from '../helpers/clients.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { until } from '../helpers/poll.js';

let casket: InProcessCasket;
const bucket = 'cmd';

beforeAll(async () => {
  casket = await startInProcess({ agents: ['alice'], keys: ['person'] });
  const admin = sdk(casket.url, casket.admin);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  admin.destroy();
});
afterAll(async () => {
  await casket?.stop();
});

type Env = Record<string, string | undefined>;

/** mcpCommand as cli.ts runs it: what it printed, or the usage error it threw (whose message cli.ts prints before exit 2). */
async function run(argv: string[], env: Env, stdin = new PassThrough(), out = { stdout: '', stderr: '' }): Promise<{ stdout: string; stderr: string; usage?: string }> {
  const sink = (to: 'stdout' | 'stderr') => new Writable({ write: (chunk: Buffer, _enc, done) => { out[to] += chunk.toString(); done(); } });
  try {
    await mcpCommand(argv, env, { stdin, stdout: sink('stdout'), stderr: sink('stderr') });
    return out;
  } catch (e) {
    if ((e as Error).name !== 'UsageError') throw e;
    return { ...out, usage: (e as Error).message };
  }
}

const keysOf = (cred: { accessKeyId: string; secretAccessKey: string }): Env => ({ CASKET_MCP_ACCESS_KEY: cred.accessKeyId, CASKET_MCP_SECRET_KEY: cred.secretAccessKey });

/** The token printed, its claims, and whether `secret` signed it. */
function printed(stdout: string, secret: string) {
  expect(stdout).toMatch(/^ckt1\.[^\s]+\n$/);
  const claims = readToken(stdout.trim())!;
  return { ...claims, signedWith: tokenHolds(claims, secret) };
}

/** Seconds since the epoch, as token expiries count them. */
const nowS = () => Math.floor(Date.now() / 1000);

describe('casket mcp token --offline', () => {
  it('mints from the env alone: for the key, no agent, a day; the secret signs it and is not printed', async () => {
    const before = nowS();
    const r = await run(['token', '--offline'], keysOf(casket.agents.alice!));
    const t = printed(r.stdout, casket.agents.alice!.secretAccessKey);
    expect(t).toMatchObject({ accessKeyId: casket.agents.alice!.accessKeyId, signedWith: true });
    expect(t.agent).toBeUndefined();
    expect(t.expires).toBeGreaterThanOrEqual(before + 86400);
    expect(t.expires).toBeLessThanOrEqual(nowS() + 86400);
    expect(r.stderr).toBe('');
    expect(r.stdout).not.toContain(casket.agents.alice!.secretAccessKey);
  });

  it('each flag wins over its env variable, as --flag value or --flag=value', async () => {
    const env: Env = { CASKET_MCP_ACCESS_KEY: 'AKENV', CASKET_MCP_SECRET_KEY: 'env-secret', CASKET_MCP_AGENT: 'envagent', CASKET_MCP_TOKEN_TTL: '7' };
    const before = nowS();
    const t = printed((await run(['token', '--offline', '--access-key=AKFLAG', '--secret-key', 'flag-secret', '--agent=bob', '--ttl', '60'], env)).stdout, 'flag-secret');
    expect(t).toMatchObject({ accessKeyId: 'AKFLAG', agent: 'bob', signedWith: true });
    expect(t.expires).toBeGreaterThanOrEqual(before + 60);
    expect(t.expires).toBeLessThanOrEqual(nowS() + 60);
  });

  it('the env gives the agent and the TTL too; an empty CASKET_MCP_AGENT is no agent', async () => {
    const before = nowS();
    const t = printed((await run(['token', '--offline'], { ...keysOf(casket.keys.person!), CASKET_MCP_AGENT: 'carol', CASKET_MCP_TOKEN_TTL: '1' })).stdout, casket.keys.person!.secretAccessKey);
    expect(t).toMatchObject({ agent: 'carol', signedWith: true });
    // 1 s is the shortest TTL there is, and allowed.
    expect(t.expires).toBeGreaterThanOrEqual(before + 1);
    expect(t.expires).toBeLessThanOrEqual(nowS() + 1);
    expect(printed((await run(['token', '--offline'], { ...keysOf(casket.keys.person!), CASKET_MCP_AGENT: '' })).stdout, casket.keys.person!.secretAccessKey).agent).toBeUndefined();
  });

  it('--ttl must be a whole number of seconds, at least 1', async () => {
    for (const ttl of ['0', '-5', '1.5', 'soon', '']) {
      expect(await run(['token', '--offline', '--ttl', ttl], keysOf(casket.agents.alice!))).toEqual({ stdout: '', stderr: '', usage: `--ttl (or env CASKET_MCP_TOKEN_TTL) is a whole number of seconds\n${MCP_USAGE}` });
    }
  });
});

describe('casket mcp token --endpoint: checked by the casket before it is printed', () => {
  it('prints a token the casket lets in, the endpoint by flag or env', async () => {
    for (const [args, env] of [[['--endpoint', casket.url], {}], [[], { CASKET_MCP_ENDPOINT: `${casket.url}/` }]] as const) {
      const r = await run(['token', ...args], { ...keysOf(casket.agents.alice!), ...env });
      expect(r.usage).toBeUndefined();
      expect(printed(r.stdout, casket.agents.alice!.secretAccessKey).signedWith).toBe(true);
    }
  });

  it("refuses a wrong secret and an agent the key may not act as with casket's reason; nothing printed, no secret in the words", async () => {
    const wrong = await run(['token', '--endpoint', casket.url], { ...keysOf(casket.agents.alice!), CASKET_MCP_SECRET_KEY: 'not-the-secret' });
    expect(wrong.stdout).toBe('');
    expect(wrong.usage).toMatch(new RegExp(`^casket at ${casket.url} refused the token: The bearer token is not one casket issued.*; no token printed$`));
    expect(wrong.usage).not.toContain('not-the-secret');
    const bound = await run(['token', '--endpoint', casket.url, '--agent', 'bob'], keysOf(casket.agents.alice!));
    expect(bound.stdout).toBe('');
    expect(bound.usage).toContain('bound to agent "alice" and cannot act as agent "bob"');
    expect(bound.usage).not.toContain(casket.agents.alice!.secretAccessKey);
  });
});

describe('casket mcp usage errors: the mistake named, then the usage', () => {
  it('names what is wrong in its first line and prints nothing', async () => {
    const keys = keysOf(casket.agents.alice!);
    const cases: Array<[string[], Env, string]> = [
      [['token', '--offline', '--bogus', 'x'], keys, 'unknown option --bogus'],
      [['token', '--offline', '--bogus=x'], keys, 'unknown option --bogus'],
      // A whole "=value" names no option (eq > 0 is no flag=value split at 0).
      [['token', '--offline', '=alice'], keys, 'unknown option =alice'],
      [['token', '--offline', '--agent'], keys, '--agent needs a value'],
      [['token', '--offline'], { CASKET_MCP_SECRET_KEY: 's' }, '--access-key (or env CASKET_MCP_ACCESS_KEY) is required'],
      [['token', '--offline'], { ...keys, CASKET_MCP_SECRET_KEY: '' }, '--secret-key (or env CASKET_MCP_SECRET_KEY) is required'],
      [['token'], keys, '--endpoint URL (or env CASKET_MCP_ENDPOINT) is required: casket checks the token before it is printed (or --offline to mint it unchecked)'],
      [[], keys, '--endpoint (or env CASKET_MCP_ENDPOINT) is required'],
      [['--endpoint', casket.url], { CASKET_MCP_SECRET_KEY: 's' }, '--access-key (or env CASKET_MCP_ACCESS_KEY) is required'],
      [['--endpoint', casket.url, '--access-key', 'AK'], {}, '--secret-key (or env CASKET_MCP_SECRET_KEY) is required'],
      [['--endpoint', casket.url, '--agent'], keys, '--agent needs a value'],
      // A token's options are refused by the bridge, which would ignore them (it mints its own per request).
      [['--endpoint', casket.url, '--ttl', '60'], keys, '--ttl is an option of `casket mcp token`: the bridge mints a fresh 300-second token for every request'],
      [['--endpoint', casket.url, '--ttl=60'], keys, '--ttl is an option of `casket mcp token`: the bridge mints a fresh 300-second token for every request'],
      [['--offline', '--endpoint', casket.url], keys, '--offline is an option of `casket mcp token`: the bridge mints a fresh 300-second token for every request'],
    ];
    for (const [argv, env, first] of cases) {
      const r = await run(argv, env);
      expect(r, argv.join(' ')).toEqual({ stdout: '', stderr: '', usage: `${first}\n${MCP_USAGE}` });
    }
    // The usage after it shows the three ways to run the command, and the env variables.
    for (const shown of ['casket mcp --endpoint URL --access-key K --secret-key S [--agent NAME]', 'casket mcp token --endpoint URL', 'casket mcp token --offline', 'CASKET_MCP_ENDPOINT, CASKET_MCP_ACCESS_KEY, CASKET_MCP_SECRET_KEY, CASKET_MCP_AGENT', 'env CASKET_MCP_TOKEN_TTL']) expect(MCP_USAGE).toContain(shown);
  });
});

describe('casket mcp, the bridge, from flags and env', () => {
  /** One write_file through `casket mcp` run with these; the writer casket records, and what the bridge printed. */
  async function writeThrough(argv: string[], env: Env, key: string) {
    const stdin = new PassThrough();
    const seen = { stdout: '', stderr: '' };
    const running = run(argv, env, stdin, seen);
    stdin.write('not json\n');
    stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'write_file', arguments: { path: `${bucket}/${key}`, content: 'x\n', create_only: true } } })}\n`);
    // The bridge relays requests as they come, each answered when casket answers: the read goes once the write is done.
    await until(() => seen.stdout.includes('\n'), 'the write answered');
    stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'get_file_info', arguments: { path: `${bucket}/${key}` } } })}\n`);
    stdin.end();
    const r = await running;
    expect(r.usage).toBeUndefined();
    const answers = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { id: number; result: { structuredContent: Record<string, unknown> } });
    expect(answers.map((a) => a.id)).toEqual([1, 2]);
    return { writer: answers[1]!.result.structuredContent.last_writer, ...r };
  }

  it('runs from the env alone, as the agent CASKET_MCP_AGENT names; its log goes to stderr, a line each', async () => {
    const person = casket.keys.person!;
    const r = await writeThrough([], { CASKET_MCP_ENDPOINT: casket.url, ...keysOf(person), CASKET_MCP_AGENT: 'carol' }, 'env.md');
    expect(r.writer).toBe('carol');
    expect(r.stderr).toMatch(/^casket mcp: [^\n]*JSON[^\n]*\n$/);
    expect(r.stdout + r.stderr).not.toContain(person.secretAccessKey);
  });

  it('the flags win over the env: --endpoint, --agent and the keys', async () => {
    const person = casket.keys.person!;
    const env: Env = { CASKET_MCP_ENDPOINT: 'http://127.0.0.1:1', CASKET_MCP_ACCESS_KEY: 'AKNONE', CASKET_MCP_SECRET_KEY: 'none', CASKET_MCP_AGENT: 'carol' };
    const r = await writeThrough(['--endpoint', casket.url, `--access-key=${person.accessKeyId}`, '--secret-key', person.secretAccessKey, '--agent', 'dave'], env, 'flags.md');
    expect(r.writer).toBe('dave');
  });

  it('an empty CASKET_MCP_AGENT is no agent: a key bound to one acts as its own', async () => {
    const r = await writeThrough([], { CASKET_MCP_ENDPOINT: casket.url, ...keysOf(casket.agents.alice!), CASKET_MCP_AGENT: '' }, 'own.md');
    expect(r.writer).toBe('alice');
  });
});
