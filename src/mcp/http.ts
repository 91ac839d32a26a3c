/**
 * The Streamable HTTP transport at /_casket/mcp
 * (https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#streamable-http),
 * protocol versions 2025-06-18 and 2025-11-25 (and the older ones the SDK
 * still negotiates).
 *
 * Stateless: every POST gets its own transport (no Mcp-Session-Id, so any
 * replica answers any request), answered as JSON; GET (a server-sent event
 * stream for server-initiated messages, of which casket has none) is 405, as
 * the spec allows. The servers the transports connect to are pooled: a
 * server with its tools registered costs more than the tool call itself
 * (measured: 2.1 → ~0.8 ms per small read_text_file), and each serves one
 * request at a time, for the caller it was lent to.
 *
 * Who: `Authorization: Bearer <token>` (token.ts) or a SigV4 signature
 * (door.authenticate). Anonymous requests may only discover: initialize,
 * ping, tools/list and notifications — a tool call without credentials is
 * 401 with `WWW-Authenticate: Bearer` (authorization spec,
 * https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization#error-handling).
 *
 * Origin: a request carrying an Origin header is refused (403) unless that
 * origin is a loopback one or listed in --mcp-allowed-origins — the spec's
 * DNS-rebinding protection ("Servers MUST validate the Origin header",
 * transports#security-warning): a web page that rebinds its name to casket's
 * address still sends its own Origin.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { NotAuthenticated, type Caller, type CasketDoor } from './door.js';
import type { ToolEnv } from './tool.js';

/**
 * The MCP SDK, zod and the tools load on the first request to the endpoint,
 * not at start: together they add ~12 MiB to casket's resident memory
 * (measured on Node 20, an import of each), which a casket no agent talks
 * MCP to never needs. One promise, so concurrent first requests share it.
 */
let sdk: Promise<{ Transport: typeof import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js').WebStandardStreamableHTTPServerTransport; toolServer: typeof import('./tools.js').toolServer }> | undefined;
function loadSdk(): NonNullable<typeof sdk> {
  sdk ??= Promise.all([import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'), import('./tools.js')]).then(([transport, tools]) => ({ Transport: transport.WebStandardStreamableHTTPServerTransport, toolServer: tools.toolServer }));
  return sdk;
}

export const MCP_PATH = '/_casket/mcp';

export interface McpHttpOptions {
  door: CasketDoor;
  /** Origins (scheme://host[:port]) browsers may call from, beyond loopback ones. */
  allowedOrigins: readonly string[];
  maxTextBytes: number;
  log: { info(o: object, msg: string): void; warn(o: object, msg: string): void };
}

/** Methods an unauthenticated client may call: they show only what every client sees. */
const DISCOVERY = new Set(['initialize', 'ping', 'tools/list']);

const LOOPBACK = /^https?:\/\/(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/i;

function jsonRpcError(status: number, code: number, message: string, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }), { status, headers: { 'content-type': 'application/json', ...headers } });
}

/** Whether every message in the body is one an anonymous client may send. */
function discoveryOnly(body: unknown): boolean {
  const messages = Array.isArray(body) ? body : [body];
  return messages.every((m) => typeof m === 'object' && m !== null && typeof (m as { method?: unknown }).method === 'string' && (DISCOVERY.has((m as { method: string }).method) || (m as { method: string }).method.startsWith('notifications/')));
}

/** The body, or undefined past `max` bytes (a JSON-escaped file can be twice its size). */
async function readBody(request: Request, max: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  if (!request.body) return Buffer.alloc(0);
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return Buffer.concat(chunks);
    size += value.length;
    if (size > max) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(Buffer.from(value));
  }
}

/** Idle servers kept for the next requests; more are made under load, and dropped past this. */
const MAX_IDLE = 16;

/** The /_casket/mcp handler, with its pool of tool servers. */
export function mcpEndpoint(options: McpHttpOptions): (request: Request) => Promise<Response> {
  const idle: Array<{ server: McpServer; env: ToolEnv }> = [];
  const lend = async (caller: Caller) => {
    const lent = idle.pop() ?? (await (async () => {
      const env: ToolEnv = { door: options.door, caller, maxTextBytes: options.maxTextBytes };
      return { server: (await loadSdk()).toolServer(env), env };
    })());
    // The tools read env.caller when called: this request's caller, and no one else's while lent.
    lent.env.caller = caller;
    return lent;
  };
  return (request) => handleMcpHttp(request, options, lend, (lent) => {
    if (idle.length < MAX_IDLE) idle.push(lent);
  });
}

async function handleMcpHttp(request: Request, options: McpHttpOptions, lend: (caller: Caller) => Promise<{ server: McpServer; env: ToolEnv }>, giveBack: (lent: { server: McpServer; env: ToolEnv }) => void): Promise<Response> {
  const origin = request.headers.get('origin');
  if (origin !== null && !LOOPBACK.test(origin) && !options.allowedOrigins.includes(origin)) {
    options.log.warn({ origin }, 'MCP request refused: Origin not allowed');
    return jsonRpcError(403, -32000, 'Forbidden: this Origin may not call casket\'s MCP endpoint (--mcp-allowed-origins).');
  }
  if (request.method !== 'POST') {
    // No server-initiated messages, no sessions: only POST carries MCP here.
    return jsonRpcError(405, -32000, 'Method not allowed: POST JSON-RPC messages to this endpoint.', { allow: 'POST' });
  }
  const raw = await readBody(request, options.maxTextBytes * 2 + 65536);
  if (raw === undefined) return jsonRpcError(413, -32000, `Request too large: the file tools handle files up to ${options.maxTextBytes} bytes.`);
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    return jsonRpcError(400, -32700, 'Parse error: the body is not JSON.');
  }
  const url = new URL(request.url);
  const headers: Record<string, string> = {};
  request.headers.forEach((value, name) => (headers[name] = value));
  let caller: Caller | undefined;
  try {
    caller = await options.door.authenticate({ method: request.method, url: url.pathname + url.search, headers, body: raw });
  } catch (e) {
    if (!(e instanceof NotAuthenticated)) throw e;
    return jsonRpcError(401, -32001, `Unauthorized: ${e.message}`, { 'www-authenticate': 'Bearer error="invalid_token"' });
  }
  if (!caller && !discoveryOnly(body)) {
    return jsonRpcError(401, -32001, 'Unauthorized: tool calls need credentials — Authorization: Bearer <token from `casket mcp token`>, or a SigV4 signature.', { 'www-authenticate': 'Bearer' });
  }
  // An anonymous client reaches no tool handler (refused above): the env's caller is never used for it.
  const lent = await lend(caller ?? { accessKeyId: '' });
  const transport = new (await loadSdk()).Transport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await lent.server.connect(transport);
  try {
    // In JSON mode the response is complete when this resolves: every handler has returned.
    return await transport.handleRequest(request, { parsedBody: body });
  } finally {
    await lent.server.close().catch(() => {});
    giveBack(lent);
  }
}
