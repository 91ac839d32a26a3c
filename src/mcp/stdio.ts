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
export const BRIDGE_TOKEN_TTL_SECONDS = 300;

export function mcpUrl(endpoint: string): URL {
  const url = new URL(endpoint);
  // The casket's URL (with a path before it, behind a proxy) or the endpoint's own, each with or without a slash at the end.
  const path = url.pathname.replace(/\/$/, '');
  url.pathname = path.endsWith(MCP_PATH) ? path : path + MCP_PATH;
  return url;
}

export async function runStdioBridge(options: BridgeOptions, stdin: Readable, stdout: Writable, log: (line: string) => void): Promise<void> {
  // Stryker disable next-line ConditionalExpression: `agent: undefined` is left out of the token's JSON claims (token.ts), the same token as none
  const token = () => mintToken(options.accessKey, options.secretKey, { ...(options.agent !== undefined && { agent: options.agent }), ttlSeconds: BRIDGE_TOKEN_TTL_SECONDS });
  const remote = new StreamableHTTPClientTransport(mcpUrl(options.endpoint), {
    fetch: (url, init) => {
      // Stryker disable next-line OptionalChaining: the SDK's transport passes an init with every request it makes
      const headers = new Headers(init?.headers);
      headers.set('authorization', `Bearer ${token()}`);
      return fetch(url, { ...init, headers });
    },
  });
  const local = new StdioServerTransport(stdin, stdout);
  const initializing = new Set<string | number>();
  /** Messages on their way to casket: each is answered (or its failure told) before the bridge closes. */
  const pending = new Set<Promise<void>>();
  local.onmessage = (message: JSONRPCMessage) => {
    // Stryker disable next-line ConditionalExpression,LogicalOperator: only initialize's result has a protocolVersion, so noting other messages' ids too changes nothing; the `in` tests narrow the type
    if ('method' in message && message.method === 'initialize' && 'id' in message) initializing.add(message.id);
    // Logged once, by remote.onerror below: the SDK's send() reports every failure there before it rejects.
    const sending = remote.send(message).catch((e: unknown) => {
      // A request that could not reach casket gets an answer, not silence.
      if ('id' in message && 'method' in message) void local.send({ jsonrpc: '2.0', id: message.id, error: { code: -32603, message: `casket at ${options.endpoint}: ${(e as Error).message}` } });
    });
    pending.add(sending);
    // Stryker disable next-line ArrowFunction: a settled send left in the set costs memory only; the close awaits it at once
    void sending.finally(() => pending.delete(sending));
  };
  remote.onmessage = (message: JSONRPCMessage) => {
    // Later requests carry the negotiated version in MCP-Protocol-Version, as the spec asks of HTTP clients.
    if ('result' in message && initializing.delete(message.id)) {
      const version = (message.result as { protocolVersion?: unknown }).protocolVersion;
      // Stryker disable next-line ConditionalExpression: casket's initialize result always names its protocolVersion (the SDK's server sets it)
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
  // `printf '…' | casket mcp` ends stdin right after its last request: closing the
  // remote now would abort the requests still in flight, answering "aborted" for
  // calls casket may have run. Wait for their answers first.
  await Promise.all(pending);
  await remote.close().catch(() => {});
}
