/**
 * casket driven by MCP clients nobody here wrote (docs/design.md §8, §12),
 * from the command lines a user puts in `mcpServers`:
 *
 * - the MCP Inspector's CLI (@modelcontextprotocol/inspector-cli), over
 *   Streamable HTTP with a bearer token from `casket mcp token`, and over
 *   stdio through `casket mcp`, reading the mcpServers file itself
 *   (`--config … --server …`);
 * - mcp-remote, the stdio bridge Claude Desktop users put in front of a
 *   remote server, spawned as that file says and driven by the SDK's stdio
 *   Client, as a desktop client would.
 *
 * Each lists the tools, reads a file, edits it with the etag it read, and then
 * — after a second writer changed the file — has its stale edit refused with
 * who changed it, the current etag and the next call. Both run on Node 20.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { sdk } from '../helpers/clients.js';
import { mintToken, text } from '../helpers/mcp.js';

/**
 * The `mcpServers` entries as README shows them, verbatim; the test fills in
 * the placeholders (endpoint, checkout path, token, key, secret) and runs them.
 */
/**
 * The mcpServers block users copy: read from the README's "Connect an MCP
 * client" section, so what CI runs is what the README says.
 */
const README_MCP_SERVERS = (() => {
  const readme = readFileSync(resolve(import.meta.dirname, '../../README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Connect an MCP client'));
  const block = /```json\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error('README.md: no json block under "## Connect an MCP client"');
  return block[1]!;
})();

interface ServerEntry {
  type?: string;
  url?: string;
  headers?: Record<string, string>;
  command?: string;
  args?: string[];
  env?: Record<string, string>;
}

const REPO = resolve(import.meta.dirname, '../..');
const INSPECTOR = join(REPO, 'node_modules/.bin/mcp-inspector-cli');
const bucket = 'clients';
const TOOLS = ['apply_patch', 'delete_file', 'edit_file', 'get_file_info', 'list_directory', 'move_file', 'read_media_file', 'read_text_file', 'search_files', 'what_changed', 'write_file', 'write_files'];

let casket: RunningCasket;
let servers: Record<string, ServerEntry>;
let configFile: string;

/** The README entries with this casket's endpoint and credentials in place of the placeholders. */
function filled(values: Record<string, Record<string, string>>): Record<string, ServerEntry> {
  const parsed = JSON.parse(README_MCP_SERVERS.replaceAll('http://127.0.0.1:9000', casket.url.replace(/\/$/, '')).replaceAll('/path/to/casket', REPO)) as { mcpServers: Record<string, ServerEntry> };
  const out: Record<string, ServerEntry> = {};
  for (const [name, entry] of Object.entries(parsed.mcpServers)) {
    let json = JSON.stringify(entry);
    for (const [placeholder, value] of Object.entries(values[name] ?? {})) json = json.replaceAll(placeholder, value);
    out[name] = JSON.parse(json) as ServerEntry;
  }
  return out;
}

beforeAll(async () => {
  casket = await startCasket({ agents: ['ann', 'rita', 'bob'], keys: { shared: {} } });
  await sdk(casket.url, casket.admin).send(new CreateBucketCommand({ Bucket: bucket }));
  const shared = casket.keys.shared!;
  servers = filled({
    casket: { '<token>': mintToken(casket.agents.ann!) },
    'casket-stdio': { '<key>': shared.accessKeyId, '<secret>': shared.secretAccessKey },
    'casket-remote': { '<token>': mintToken(casket.agents.rita!) },
  });
  configFile = join(mkdtempSync(join(tmpdir(), 'casket-clients-')), 'mcp.json');
  writeFileSync(configFile, JSON.stringify({ mcpServers: servers }), { mode: 0o600 });
});
afterAll(async () => {
  await casket?.stop();
});

/** A file to work on, written over S3 by the admin. */
async function put(key: string, body: string): Promise<void> {
  await sdk(casket.url, casket.admin).send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
}

/** bob, the second writer, over S3: reads the file whole, then writes naming the version he read. */
async function bobChanges(key: string, etag: string, body: string): Promise<void> {
  const bob = sdk(casket.url, casket.agents.bob!);
  await (await bob.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body!.transformToString();
  await bob.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, IfMatch: etag }));
}

/**
 * One Inspector CLI run: what it prints on stdout, parsed. It runs from
 * test/ because inspector-cli 1.0.3 looks for `../package.json` relative to
 * the working directory before importing its own (build/index.js; the probe
 * of modelcontextprotocol/inspector PR 839, issue 1503), so it fails with
 * ERR_MODULE_NOT_FOUND unless the directory's parent holds a package.json.
 */
async function inspector(target: string[], method: string[]): Promise<Record<string, unknown>> {
  const { stdout } = await promisify(execFile)(INSPECTOR, ['--cli', ...target, ...method], { cwd: join(REPO, 'test'), timeout: 30_000, env: { ...process.env } });
  return JSON.parse(stdout) as Record<string, unknown>;
}

function toolCall(name: string, args: Record<string, string>): string[] {
  return ['--method', 'tools/call', '--tool-name', name, '--tool-arg', ...Object.entries(args).map(([k, v]) => `${k}=${v}`)];
}

/** Lists, reads, edits with the etag, then edits again after bob: the refusal as the client got it. */
async function conflict(key: string, run: (method: string[]) => Promise<Record<string, unknown>>): Promise<CallToolResult> {
  const listed = (await run(['--method', 'tools/list'])) as { tools: Array<{ name: string }> };
  expect(listed.tools.map((t) => t.name).sort()).toEqual(TOOLS);
  const path = `${bucket}/${key}`;
  await put(key, 'step 1\nstep 2\n');
  const read = (await run(toolCall('read_text_file', { path }))) as CallToolResult;
  expect((read.structuredContent as { content: string }).content).toBe('step 1\nstep 2\n');
  const etag = String(read.structuredContent!.etag);
  const edited = (await run(toolCall('edit_file', { path, edits: JSON.stringify([{ oldText: 'step 1', newText: 'step one' }]), expected_etag: etag }))) as CallToolResult;
  expect(edited.isError, text(edited)).toBeFalsy();
  const mine = String(edited.structuredContent!.etag);
  await bobChanges(key, mine, 'step one\nstep 2, by bob\n');
  const stale = (await run(toolCall('edit_file', { path, edits: JSON.stringify([{ oldText: 'step 2', newText: 'step two' }]), expected_etag: mine }))) as CallToolResult;
  expect(stale.isError).toBe(true);
  return stale;
}

function expectRefusedByBob(r: CallToolResult, key: string): void {
  const said = text(r);
  expect(said).toMatch(new RegExp(`^Refused: ${bucket}/${key} changed since version "[0-9a-f]{64}", the one you named: it is now "[0-9a-f]{64}", written by agent "bob"`));
  expect(said).toContain('Nothing was written.');
  expect(said).toContain(`Next: read_text_file {"path": "${bucket}/${key}"}`);
  expect(said).toContain('+step 2, by bob');
  expect(r.structuredContent).toMatchObject({ error: 'precondition-failed', last_writer: 'bob', written: false });
}

// Concurrent: each client's run is mostly process start-up (a process per Inspector call), on files of its own;
// the timeout leaves room for a loaded CI machine.
describe.concurrent('third-party MCP clients, from the mcpServers a user writes', { timeout: 120_000 }, () => {
  it('the MCP Inspector CLI over Streamable HTTP with a bearer token', async () => {
    const http = servers.casket!;
    const target = [http.url!, '--transport', 'http', ...Object.entries(http.headers!).flatMap(([k, v]) => ['--header', `${k}: ${v}`])];
    const stale = await conflict('http.md', (method) => inspector(target, method));
    expectRefusedByBob(stale, 'http.md');
  });

  it('the MCP Inspector CLI over stdio, reading the mcpServers file: casket mcp', async () => {
    const stale = await conflict('stdio.md', (method) => inspector(['--config', configFile, '--server', 'casket-stdio'], method));
    expectRefusedByBob(stale, 'stdio.md');
  });

  it('mcp-remote as the stdio bridge in front of /_casket/mcp, with --header Authorization', async () => {
    const remote = servers['casket-remote']!;
    const transport = new StdioClientTransport({
      command: remote.command!,
      args: remote.args!,
      // The entry's env; mcp-remote keeps what it stores in a directory of the test's own.
      env: { ...remote.env!, PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', MCP_REMOTE_CONFIG_DIR: mkdtempSync(join(tmpdir(), 'mcp-remote-')) },
      // From inside the checkout, npx runs the mcp-remote of its devDependencies (no download).
      cwd: REPO,
      stderr: 'pipe',
    });
    const client = new Client({ name: 'desktop', version: '1.0.0' });
    await client.connect(transport);
    try {
      const run = async (method: string[]): Promise<Record<string, unknown>> => {
        if (method[1] === 'tools/list') return (await client.listTools()) as Record<string, unknown>;
        const args: Record<string, unknown> = {};
        for (const pair of method.slice(method.indexOf('--tool-arg') + 1)) {
          const eq = pair.indexOf('=');
          const value = pair.slice(eq + 1);
          args[pair.slice(0, eq)] = value.startsWith('[') ? JSON.parse(value) : value;
        }
        return (await client.callTool({ name: method[3]!, arguments: args })) as Record<string, unknown>;
      };
      const stale = await conflict('remote.md', run);
      expectRefusedByBob(stale, 'remote.md');
    } finally {
      await client.close();
    }
  });
});
