/**
 * MCP clients for the tests: the SDK's own Client, against a real casket
 * process — over Streamable HTTP with a bearer token minted by
 * `casket mcp token`, or over stdio through `casket mcp` (the bridge).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { CLI, startCasket, type CasketOptions, type Cred, type RunningCasket } from './casket.js';

export type McpCasket = Pick<RunningCasket, 'url' | 'admin' | 'agents' | 'keys' | 'logs' | 'stop'>;

/**
 * The casket an MCP test drives, with these agents (each key bound to its
 * agent): a casket process (test/helpers/casket.ts); or, with
 * CASKET_TEST_IN_PROCESS set (as vitest.mutate-rooms.config.ts sets it for
 * `npm run mutate:rooms`), casket in this process (test/helpers/in-process.ts),
 * where Stryker's mutants of src/mcp and src/mcp-door.ts are. Loaded only
 * then, so a spawned run does not load src at all. `flags`: by their config names;
 * `keys`: more keys by name, each with an optional agent and policy, as startCasket takes them.
 */
export async function startMcpCasket(options: { agents?: string[]; keys?: CasketOptions['keys']; flags?: Record<string, string> } = {}): Promise<McpCasket> {
  const flags = options.flags ?? {};
  if (process.env.CASKET_TEST_IN_PROCESS) {
    const { startInProcess } = await import('./in-process.js');
    const { parsePolicy } = await import('../../src/auth/policy.js');
    // The keys as the credentials file gives them (a policy document each), parsed as casket's loader parses them.
    const keys = Object.entries(options.keys ?? {}).map(([name, k]) => ({ name, cred: { accessKeyId: `AK${name.toUpperCase().replace(/[^A-Z0-9]/g, '')}${randomBytes(6).toString('hex').toUpperCase()}`, secretAccessKey: randomBytes(20).toString('hex') }, ...k }));
    const c = await startInProcess({
      agents: options.agents ?? [],
      // Logged as a spawned casket logs (its default level), for the tests that look at what is logged.
      flags: { logLevel: 'info', ...flags },
      credentials: keys.map((k) => ({ ...k.cred, ...(k.agent !== undefined && { agent: k.agent }), ...(k.policy !== undefined && { policies: [parsePolicy(k.policy)] }) })),
    });
    return { ...c, keys: Object.fromEntries(keys.map((k) => [k.name, k.cred])) };
  }
  const args = Object.entries(flags).flatMap(([name, value]) => [`--${name.replace(/[A-Z]/g, (ch) => `-${ch.toLowerCase()}`)}`, value]);
  return startCasket({ agents: options.agents ?? [], ...(options.keys && { keys: options.keys }), args });
}

/**
 * `casket mcp token`. Given `checkWith`, the casket there checks the token
 * before it is printed (a refusal throws); without, it is minted --offline,
 * unchecked — how the tests forge the tokens the endpoint must refuse.
 */
export function mintToken(cred: Cred, options: { agent?: string; ttl?: number; checkWith?: Pick<RunningCasket, 'url'> } = {}): string {
  const args = [
    CLI, 'mcp', 'token',
    ...(options.checkWith ? ['--endpoint', options.checkWith.url] : ['--offline']),
    ...(options.agent ? ['--agent', options.agent] : []),
    ...(options.ttl ? ['--ttl', String(options.ttl)] : []),
  ];
  // The secret goes by env, as a user would keep it out of `ps`.
  return execFileSync(process.execPath, args, { env: { ...process.env, CASKET_MCP_ACCESS_KEY: cred.accessKeyId, CASKET_MCP_SECRET_KEY: cred.secretAccessKey }, encoding: 'utf8' }).trim();
}

export function mcpEndpoint(casket: Pick<RunningCasket, 'url'>): URL {
  return new URL('/_casket/mcp', casket.url);
}

export async function httpClient(casket: Pick<RunningCasket, 'url'>, token: string | undefined, name = 'test'): Promise<Client> {
  const client = new Client({ name, version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(mcpEndpoint(casket), token ? { requestInit: { headers: { authorization: `Bearer ${token}` } } } : {});
  await client.connect(transport);
  return listed(client);
}

export async function stdioClient(casket: Pick<RunningCasket, 'url'>, cred: Cred, agent?: string): Promise<Client> {
  const client = new Client({ name: 'stdio-test', version: '1.0.0' });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', '--endpoint', casket.url, ...(agent ? ['--agent', agent] : [])],
    env: { PATH: process.env.PATH ?? '', CASKET_MCP_ACCESS_KEY: cred.accessKeyId, CASKET_MCP_SECRET_KEY: cred.secretAccessKey },
    stderr: 'pipe',
  });
  await client.connect(transport);
  return listed(client);
}

/**
 * Lists the tools, as every client does before it calls one: the SDK Client
 * then checks each structuredContent against the tool's outputSchema, so
 * every test's answers are held to the schemas clients are given.
 */
async function listed(client: Client): Promise<Client> {
  await client.listTools();
  return client;
}

export type ToolResult = CallToolResult;

export async function call(client: Client, name: string, args: Record<string, unknown>): Promise<ToolResult> {
  return (await client.callTool({ name, arguments: args })) as ToolResult;
}

/** All text parts of a result, joined. */
export function text(r: ToolResult): string {
  return r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
}

export function data(r: ToolResult): Record<string, unknown> {
  return (r.structuredContent ?? {}) as Record<string, unknown>;
}
