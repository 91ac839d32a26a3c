/**
 * The Streamable HTTP transport at /_casket/mcp
 * (https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#streamable-http),
 * protocol versions 2025-06-18 and 2025-11-25 (and the older ones the SDK
 * still negotiates).
 *
 * Stateless: no Mcp-Session-Id, so any replica answers any request; every
 * POST is answered as JSON; GET (a server-sent event stream for
 * server-initiated messages, of which casket has none) is 405, as the spec
 * allows. The tool servers are pooled, each connected once to its own
 * transport (post-transport.ts) and lent to one POST at a time: a server with
 * its tools registered costs more than the tool call itself (measured: 2.1 →
 * ~0.8 ms per small read_text_file), and connecting a fresh SDK transport per
 * POST cost a quarter of the call (docs/performance.md). A pooled server holds
 * nothing of any request: the caller travels with the request's messages
 * (request-caller.ts), and a server goes back to the pool only once every
 * request of its POST was answered — so no handler of it still runs.
 *
 * Who: `Authorization: Bearer <token>` — an OAuth access token
 * (src/oauth/verify.ts) or a `casket mcp token` (token.ts) — or a SigV4
 * signature (door.authenticate). Anonymous requests are 401 with
 * `WWW-Authenticate: Bearer resource_metadata="…"`, pointing the client to
 * casket's authorization server (RFC 9728 §5.1), unless --anonymous read
 * lets them discover (batch.ts)
 * (authorization spec,
 * https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization#error-handling).
 * A batch whose request ids repeat is refused whole (batch.ts).
 *
 * Bounded: a POST is answered within `deadlineMs` (default 60 s) — with its
 * answers, or a JSON-RPC error saying the call may still complete; a server
 * whose handlers outlived the deadline is closed and never lent again.
 *
 * Origin: a request carrying an Origin header is refused (403) unless that
 * origin is a loopback one or listed in --mcp-allowed-origins — the spec's
 * DNS-rebinding protection ("Servers MUST validate the Origin header",
 * transports#security-warning): a web page that rebinds its name to casket's
 * address still sends its own Origin.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { PostTransport } from './post-transport.js';
import { admit } from './batch.js';
import { NotAuthenticated, type Caller, type CasketDoor } from './door.js';
import { ToolCalls } from './tool-calls.js';
import { toolEnv } from './tool.js';

/**
 * The MCP SDK, zod and the tools load on the first request to the endpoint,
 * not at start: together they add ~12 MiB to casket's resident memory
 * (measured on Node 20, an import of each), which a casket no agent talks
 * MCP to never needs. One promise, so concurrent first requests share it.
 */
let sdk: Promise<{ PostTransport: typeof import('./post-transport.js').PostTransport; toolServer: typeof import('./tools.js').toolServer }> | undefined;
function loadSdk(): NonNullable<typeof sdk> {
  sdk ??= Promise.all([import('./post-transport.js'), import('./tools.js')]).then(([transport, tools]) => ({ PostTransport: transport.PostTransport, toolServer: tools.toolServer }));
  return sdk;
}

export const MCP_PATH = '/_casket/mcp';

export interface McpHttpOptions {
  door: CasketDoor;
  /** Origins (scheme://host[:port]) browsers may call from, beyond loopback ones. */
  allowedOrigins: readonly string[];
  maxTextBytes: number;
  log: { info(o: object, msg: string): void; warn(o: object, msg: string): void };
  /**
   * Where a client learns how to get a token (RFC 9728 §5.1): the
   * resource_metadata URL each 401 names, from the request's headers.
   */
  resourceMetadata: (headers: Record<string, string>) => string;
  /**
   * Whether a client without credentials may discover (initialize, ping,
   * tools/list): only when casket lets unsigned requests in at all
   * (--anonymous read). Otherwise every anonymous request is 401, so an
   * OAuth client meets the challenge at `initialize` and starts its login
   * before it has a session it cannot use (the MCP SDK's client and
   * mcp-remote start the flow on the 401 of their first request).
   */
  anonymousDiscovery: boolean;
  /** Longest a POST waits for its handlers before it is answered with an error (ms). Default 60 s. */
  deadlineMs?: number;
}

const DEADLINE_MS = 60_000;

const LOOPBACK = /^https?:\/\/(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/i;

/** An HTTP request to the endpoint, whichever server read it (http-adapters.ts). */
export interface McpHttpRequest {
  method: string;
  /** Path and query as received. */
  url: string;
  /** Lowercase names; a repeated header's values joined with ", ", as web Headers join them. */
  headers: Record<string, string>;
  /** The body, or undefined once it passes `max` bytes (the rest is left unread). */
  body(max: number): Promise<Buffer | undefined>;
}

/** The endpoint's answer: a JSON body, or none. */
export interface McpHttpAnswer {
  status: number;
  headers: Record<string, string>;
  body: string | null;
}

function jsonRpcError(status: number, code: number, message: string, headers: Record<string, string> = {}): McpHttpAnswer {
  return { status, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }) };
}

/** Idle servers kept for the next requests; more are made under load, and dropped past this. */
const MAX_IDLE = 16;

/** A tool server and the transport it stays connected to (post-transport.ts), lent to one POST at a time. */
interface Lent {
  server: McpServer;
  transport: PostTransport;
}

/** The /_casket/mcp handler, with its pool of tool servers. */
export function mcpEndpoint(options: McpHttpOptions): (request: McpHttpRequest) => Promise<McpHttpAnswer> {
  // One env for every server: it carries no request's state (tool.ts toolEnv).
  const env = toolEnv(options.door, options.maxTextBytes);
  const idle: Lent[] = [];
  const lend = async (): Promise<Lent> => {
    const kept = idle.pop();
    if (kept) return kept;
    const { PostTransport, toolServer } = await loadSdk();
    const calls = new ToolCalls();
    const lent = { server: toolServer(env, calls), transport: new PostTransport(calls) };
    await lent.server.connect(lent.transport);
    return lent;
  };
  // Stryker disable next-line BlockStatement: how many idle servers are kept is speed and memory only: a server not kept is closed, and the next POST gets a new one
  return (request) => handleMcpHttp(request, options, lend, (lent) => {
    // Stryker disable next-line ConditionalExpression,EqualityOperator: as above
    if (idle.length < MAX_IDLE) idle.push(lent);
    else void lent.server.close().catch(() => {});
  });
}

async function handleMcpHttp(request: McpHttpRequest, options: McpHttpOptions, lend: () => Promise<Lent>, giveBack: (lent: Lent) => void): Promise<McpHttpAnswer> {
  const origin = request.headers.origin;
  if (origin !== undefined && !LOOPBACK.test(origin) && !options.allowedOrigins.includes(origin)) {
    // Stryker disable next-line ObjectLiteral,StringLiteral: the operator's log line, which no answer carries (tests run casket with --log-level silent)
    options.log.warn({ origin }, 'MCP request refused: Origin not allowed');
    return jsonRpcError(403, -32000, 'Forbidden: this Origin may not call casket\'s MCP endpoint (--mcp-allowed-origins).');
  }
  if (request.method !== 'POST') {
    // No server-initiated messages, no sessions: only POST carries MCP here.
    return jsonRpcError(405, -32000, 'Method not allowed: POST JSON-RPC messages to this endpoint.', { allow: 'POST' });
  }
  // A JSON-escaped file can be twice its size.
  const raw = await request.body(options.maxTextBytes * 2 + 65536);
  // The rest of the body is not read: the connection cannot carry another request, and says so
  // (RFC 9110 §15.5.14; without it a keep-alive client sends its next request into a closed socket).
  if (raw === undefined) return jsonRpcError(413, -32000, `Request too large: the file tools handle files up to ${options.maxTextBytes} bytes.`, { connection: 'close' });
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    return jsonRpcError(400, -32700, 'Parse error: the body is not JSON.');
  }
  const headers = request.headers;
  let caller: Caller | undefined;
  try {
    caller = await options.door.authenticate({ method: request.method, url: request.url, headers, body: raw });
  } catch (e) {
    if (!(e instanceof NotAuthenticated)) throw e;
    return jsonRpcError(401, -32001, `Unauthorized: ${e.message}`, { 'www-authenticate': `Bearer error="invalid_token", resource_metadata="${options.resourceMetadata(headers)}"` });
  }
  const admitted = admit(body, caller === undefined, options.anonymousDiscovery);
  if (!admitted.ok) return jsonRpcError(admitted.status, admitted.code, admitted.message, admitted.challenge ? { 'www-authenticate': `Bearer resource_metadata="${options.resourceMetadata(headers)}"` } : {});
  if (admitted.messages === 0) return { status: 202, headers: {}, body: null };
  const lent = await lend();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<undefined>((resolve) => (timer = setTimeout(resolve, options.deadlineMs ?? DEADLINE_MS, undefined)));
  // Every message of the POST carries this request's caller to the handler it reaches (request-caller.ts).
  // An anonymous request reaches no tool (admit refused it); a tool that ran anyway would find no caller and fail.
  let settled = false;
  try {
    const answered = lent.transport.handle(headers, admitted.body, caller);
    answered.catch(() => {}); // a failure after the deadline has no one left to tell
    // Resolves once every request of the POST is answered: with unique ids
    // (admit), that is once every handler has returned.
    const answer = await Promise.race([answered, deadline]);
    if (answer === undefined) {
      options.log.warn({ deadlineMs: options.deadlineMs ?? DEADLINE_MS }, 'MCP request not answered in time');
      return jsonRpcError(504, -32603, `The call did not finish within ${Math.round((options.deadlineMs ?? DEADLINE_MS) / 1000)} s. It may still complete: read the files it touches before you retry.`);
    }
    // Stryker disable next-line BooleanLiteral: a server not lent again is closed, and the next POST gets a new one: speed only
    settled = true;
    return { status: answer.status, headers: answer.body === null ? {} : { 'content-type': 'application/json' }, body: answer.body };
    // Stryker disable next-line BlockStatement: speed and memory only: a server neither lent again nor closed is never used again (its tools' door requests are not abortable, so closing aborts nothing they do), and a deadline timer left to fire resolves a race already over
  } finally {
    clearTimeout(timer);
    // A server whose handlers may still run is closed (which aborts them) and never lent again.
    // Stryker disable next-line ConditionalExpression: `false` closes every server after its POST, speed only as the BooleanLiteral above (the next POST gets a new one); `true` lends a server a late call still runs on, which deadline.test.ts's second test sees fail, but a disable names the mutator, not the replacement
    if (settled) giveBack(lent);
    else await lent.server.close().catch(() => {});
  }
}
