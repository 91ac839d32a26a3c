/**
 * The POST half of the Streamable HTTP transport, answered as JSON, for a
 * tool server that stays connected while http.ts lends it to one POST after
 * another (https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#sending-messages-to-the-server).
 *
 * The SDK's WebStandardStreamableHTTPServerTransport in stateless mode must be
 * made anew for every POST ("Stateless transport cannot be reused"), and the
 * server connected to it and closed again each time: the close aborts and
 * fails every handler's bookkeeping, and the transport wants a web Request
 * and answers a web Response. Together that was a third of a small
 * read_text_file's CPU (measured with --cpu-prof, docs/performance.md). This
 * transport keeps what the SDK's does for a POST in that mode, in its order
 * and with its words — Accept must list application/json and
 * text/event-stream (406), the media type must be application/json (415), a
 * batch holds at most MAX_BATCH_SIZE messages, each message must be JSON-RPC
 * (the SDK's own schema, whose parse is what the server is handed), one
 * initialize alone, a known MCP-Protocol-Version on anything else (400),
 * 202 for a POST of notifications only, and the answers in the order of the
 * requests, one object or an array — and is reused.
 *
 * One POST at a time: http.ts lends a server (and its transport) to one POST
 * and takes it back only once every request of it is answered; a server
 * whose handlers outlive the POST's deadline is closed and never lent again.
 * Nothing of a POST stays here after its answer (`post` is cleared).
 */
import { isJsonContentType } from '@modelcontextprotocol/sdk/shared/mediaType.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { MAX_BATCH_SIZE } from '@modelcontextprotocol/sdk/server/requestBody.js';
import { isInitializeRequest, JSONRPCMessageSchema, SUPPORTED_PROTOCOL_VERSIONS, type JSONRPCMessage, type JSONRPCRequest, type MessageExtraInfo, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import { answerJson } from './answer-json.js';
import type { Caller } from './door.js';
import { callerAuthInfo } from './request-caller.js';
import type { ToolCalls } from './tool-calls.js';

/** An HTTP answer to a POST: a JSON body, or none (202). */
export interface PostAnswer {
  status: number;
  /** JSON text; null: no body. */
  body: string | null;
}

/** The request's headers, lowercase names (as node:http gives them); handlers see them as the SDK's transport shows them (requestInfo). */
export type PostHeaders = Record<string, string>;

function jsonRpcError(status: number, code: number, message: string): PostAnswer {
  return { status, body: JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }) };
}

interface Post {
  ids: RequestId[];
  answers: Map<RequestId, JSONRPCMessage>;
  resolve(answer: PostAnswer): void;
}

export class PostTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;
  /** The POST being answered, if one is. */
  private post: Post | undefined;

  /** `calls`: the server's tools, for a lone tools/call answered directly (tool-calls.ts). */
  constructor(private readonly calls?: ToolCalls) {}

  async start(): Promise<void> {}

  async close(): Promise<void> {
    this.post = undefined;
    this.onclose?.();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    // Notifications and server-to-client requests have no stream to travel on in JSON mode: the SDK's transport drops them too.
    // (Told by shape: the server sends only messages it built, and the SDK's guards parse the whole answer with zod.)
    // Stryker disable next-line LogicalOperator,StringLiteral: casket's tool server sends only answers: its tools send no notifications or requests (tool-calls.ts)
    if ('method' in message || !('id' in message)) return;
    const post = this.post;
    const id = message.id;
    if (!post || id === undefined || !post.ids.includes(id)) throw new Error(`No connection established for request ID: ${String(id)}`);
    post.answers.set(id, message);
    if (post.answers.size < post.ids.length) return;
    this.post = undefined;
    const answers = post.ids.map((id) => post.answers.get(id));
    post.resolve({ status: 200, body: answerJson(answers.length === 1 ? answers[0] : answers) });
  }

  /**
   * One POST's messages (already parsed from JSON): resolves with its answer
   * once every request in it is answered. Each message carries `caller`, the
   * request's authenticated caller, to its handler (request-caller.ts).
   */
  handle(headers: PostHeaders, parsedBody: unknown, caller?: Caller): Promise<PostAnswer> {
    const accept = headers.accept;
    if (!accept?.includes('application/json') || !accept.includes('text/event-stream')) {
      return Promise.resolve(jsonRpcError(406, -32000, 'Not Acceptable: Client must accept both application/json and text/event-stream'));
    }
    if (!isJsonContentType(headers['content-type'])) return Promise.resolve(jsonRpcError(415, -32000, 'Unsupported Media Type: Content-Type must be application/json'));
    if (Array.isArray(parsedBody) && parsedBody.length > MAX_BATCH_SIZE) {
      return Promise.resolve(jsonRpcError(400, -32600, `Invalid Request: Batch must not exceed ${MAX_BATCH_SIZE} messages`));
    }
    let messages: JSONRPCMessage[];
    try {
      messages = Array.isArray(parsedBody) ? parsedBody.map((m) => JSONRPCMessageSchema.parse(m)) : [JSONRPCMessageSchema.parse(parsedBody)];
    } catch {
      return Promise.resolve(jsonRpcError(400, -32700, 'Parse error: Invalid JSON-RPC message'));
    }
    // Only a message whose method is initialize can be one (the schema's method is that literal): the
    // others skip a parse that fails, and a failed zod parse builds its error (a tenth of this transport's time).
    // Stryker disable next-line ConditionalExpression,LogicalOperator: the first two checks are a fast path only: isInitializeRequest answers the same without them
    if (messages.some((m) => 'method' in m && m.method === 'initialize' && isInitializeRequest(m))) {
      if (messages.length > 1) return Promise.resolve(jsonRpcError(400, -32600, 'Invalid Request: Only one initialization request is allowed'));
    } else {
      const version = headers['mcp-protocol-version'];
      if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
        return Promise.resolve(jsonRpcError(400, -32000, `Bad Request: Unsupported protocol version: ${version} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`));
      }
    }
    const extra: MessageExtraInfo = { requestInfo: { headers }, ...(caller && { authInfo: callerAuthInfo(caller) }) };
    const requests = messages.filter(isRequest);
    const ids = requests.map((m) => m.id);
    // Stryker disable next-line ConditionalExpression,LogicalOperator,EqualityOperator: which way a tools/call goes is speed only: a call not answered here goes to the SDK's server, which answers it alike (direct-calls.test.ts compares the two ways): only speed tells
    const lone = requests.length === 1 && messages.length === 1 ? requests[0]! : undefined;
    // Stryker disable next-line StringLiteral,BlockStatement: as above
    if (lone?.method === 'tools/call' && this.calls) {
      return this.calls.call(lone, extra).then((result) => (result === undefined ? this.viaServer(messages, ids, extra) : { status: 200, body: answerJson({ jsonrpc: '2.0', id: lone.id, result }) }));
    }
    return this.viaServer(messages, ids, extra);
  }

  /** The POST's messages handed to the server, answered once it has answered every request among them. */
  private viaServer(messages: JSONRPCMessage[], ids: RequestId[], extra: MessageExtraInfo): Promise<PostAnswer> {
    if (ids.length === 0) {
      for (const m of messages) this.onmessage?.(m, extra);
      return Promise.resolve({ status: 202, body: null });
    }
    // Stryker disable next-line ConditionalExpression,StringLiteral: http.ts lends a server to one POST at a time, so no second POST reaches here while one is answered
    if (this.post) throw new Error('PostTransport: a POST is already being answered on this server');
    return new Promise<PostAnswer>((resolve) => {
      this.post = { ids, answers: new Map(), resolve };
      for (const m of messages) this.onmessage?.(m, extra);
    });
  }
}

/** A request (method and id), as opposed to a notification or a response: the message is already parsed as JSON-RPC. */
function isRequest(m: JSONRPCMessage): m is JSONRPCRequest {
  return 'method' in m && 'id' in m;
}
