/**
 * `casket mcp`: the stdio transport
 * (https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#stdio)
 * for desktop agents that only spawn commands. It holds no tools of its
 * own: it relays every JSON-RPC message to a running casket's /_casket/mcp,
 * so the tools run there once, under the same guard, and the agent is the
 * one its key (or --agent) names. The secret key never leaves this process:
 * each HTTP request carries a short-lived bearer token minted from it.
 */
import type { Readable, Writable } from 'node:stream';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { MCP_PATH } from './http.js';
import { mintToken } from './token.js';

export interface BridgeOptions {
  endpoint: string;
  accessKey: string;
  secretKey: string;
  agent?: string;
}

/** Tokens the bridge mints live this long; a fresh one goes with every request. */
const TOKEN_TTL_SECONDS = 300;

export function mcpUrl(endpoint: string): URL {
  const url = new URL(endpoint);
  if (!url.pathname.endsWith(MCP_PATH)) url.pathname = url.pathname.replace(/\/$/, '') + MCP_PATH;
  return url;
}

export async function runStdioBridge(options: BridgeOptions, stdin: Readable, stdout: Writable, log: (line: string) => void): Promise<void> {
  const token = () => mintToken(options.accessKey, options.secretKey, { ...(options.agent !== undefined && { agent: options.agent }), ttlSeconds: TOKEN_TTL_SECONDS });
  const remote = new StreamableHTTPClientTransport(mcpUrl(options.endpoint), {
    fetch: (url, init) => {
      const headers = new Headers(init?.headers);
      headers.set('authorization', `Bearer ${token()}`);
      return fetch(url, { ...init, headers });
    },
  });
  const local = new StdioServerTransport(stdin, stdout);
  const initializing = new Set<string | number>();
  local.onmessage = (message: JSONRPCMessage) => {
    if ('method' in message && message.method === 'initialize' && 'id' in message) initializing.add(message.id);
    remote.send(message).catch((e: unknown) => {
      log(`casket mcp: ${(e as Error).message}`);
      // A request that could not reach casket gets an answer, not silence.
      if ('id' in message && 'method' in message) void local.send({ jsonrpc: '2.0', id: message.id, error: { code: -32603, message: `casket at ${options.endpoint}: ${(e as Error).message}` } });
    });
  };
  remote.onmessage = (message: JSONRPCMessage) => {
    // Later requests carry the negotiated version in MCP-Protocol-Version, as the spec asks of HTTP clients.
    if ('result' in message && initializing.delete(message.id)) {
      const version = (message.result as { protocolVersion?: unknown }).protocolVersion;
      if (typeof version === 'string') remote.setProtocolVersion(version);
    }
    void local.send(message);
  };
  remote.onerror = (e) => log(`casket mcp: ${e.message}`);
  local.onerror = (e) => log(`casket mcp: ${e.message}`);
  const closed = new Promise<void>((resolve) => {
    local.onclose = () => resolve();
    stdin.once('end', () => resolve());
  });
  await remote.start();
  await local.start();
  await closed;
  await remote.close().catch(() => {});
}
