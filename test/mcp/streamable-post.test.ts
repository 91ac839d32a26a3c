/**
 * What /_casket/mcp checks before a message reaches the transport
 * (src/mcp/http.ts: the Origin, the method, the body's size and JSON, the
 * token), and a POST to it as the Streamable HTTP transport answers it
 * (https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#sending-messages-to-the-server;
 * src/mcp/post-transport.ts keeps the SDK's transport's rules and words):
 * what a client that gets a header or a message wrong is told, a POST of
 * notifications only (202, no body), and the answers of a batch — one per
 * request, in the order of the requests, a lone one bare. Raw fetch, as a
 * client of another SDK or a hand-written bridge sends them; the SDK's own
 * Client always gets these right, so the other tests never see them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpEndpoint, mintToken, startMcpCasket, type McpCasket } from '../helpers/mcp.js';

let casket: McpCasket;
let token: string;
const ACCEPT = 'application/json, text/event-stream';

/** --mcp-max-file-bytes 65536: a body may be 2 × 64 KiB + 64 KiB (http.ts: a JSON-escaped file can be twice its size). */
const BODY_LIMIT = 2 * 65536 + 65536;
const ALLOWED_ORIGIN = 'https://app.example';

beforeAll(async () => {
  casket = await startMcpCasket({ flags: { mcpMaxFileBytes: '65536', mcpAllowedOrigins: ALLOWED_ORIGIN } });
  token = mintToken(casket.admin);
});
afterAll(async () => {
  await casket?.stop();
});

async function post(body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; contentType: string | null; text: string }> {
  const res = await fetch(mcpEndpoint(casket), {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: ACCEPT, authorization: `Bearer ${token}`, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, contentType: res.headers.get('content-type'), text: await res.text() };
}

/** The JSON-RPC error answer of a refused POST, as the SDK's transport words it (id null: no request of it is answered). */
const refusal = (status: number, code: number, message: string) => ({ status, contentType: 'application/json', text: JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }) });

const ping = (id: number | string) => ({ jsonrpc: '2.0', id, method: 'ping' });
const initialize = (id: number) => ({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };

describe('what the endpoint checks first', () => {
  // First in this file: the tool servers are made at the first request, and registering their tools is checked here.
  it('lists casket\'s tools to a client with credentials', async () => {
    const listed = JSON.parse((await post({ jsonrpc: '2.0', id: 1, method: 'tools/list' })).text) as { result: { tools: Array<{ name: string }> } };
    expect(listed.result.tools.map((t) => t.name)).toEqual(expect.arrayContaining(['read_text_file', 'write_file', 'edit_file', 'list_directory']));
  });

  it('403 for a browser Origin that is neither loopback nor allowed (DNS rebinding, transports#security-warning)', async () => {
    const forbidden = { status: 403, contentType: 'application/json', text: JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: "Forbidden: this Origin may not call casket's MCP endpoint (--mcp-allowed-origins)." }, id: null }) };
    for (const origin of ['https://evil.example', 'http://127.0.0.1.evil.example', 'https://app.example.evil', 'null']) expect(await post(ping(1), { origin }), origin).toEqual(forbidden);
    for (const origin of [ALLOWED_ORIGIN, 'http://localhost:5173', 'http://127.0.0.1', 'https://[::1]:8443']) expect((await post(ping(1), { origin })).status, origin).toBe(200);
  });

  it('405 for anything but POST, naming POST', async () => {
    const res = await fetch(mcpEndpoint(casket), { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
    expect(await res.json()).toEqual({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: POST JSON-RPC messages to this endpoint.' }, id: null });
  });

  it('413 for a body past twice the largest file and 64 KiB, closing the connection; takes one at the limit', async () => {
    const padded = (size: number) => JSON.stringify(ping(1)).padEnd(size, ' ');
    expect((await post(padded(BODY_LIMIT))).status).toBe(200);
    const res = await fetch(mcpEndpoint(casket), { method: 'POST', headers: { 'content-type': 'application/json', accept: ACCEPT, authorization: `Bearer ${token}` }, body: padded(BODY_LIMIT + 1) });
    expect(res.status).toBe(413);
    expect(res.headers.get('connection')).toBe('close');
    expect(await res.json()).toEqual({ jsonrpc: '2.0', error: { code: -32000, message: 'Request too large: the file tools handle files up to 65536 bytes.' }, id: null });
  });

  it('400 -32700 for a body that is not JSON', async () => {
    expect(await post('{"jsonrpc": "2.0",')).toEqual(refusal(400, -32700, 'Parse error: the body is not JSON.'));
  });

  it('401 invalid_token for a token casket did not issue, pointing to its authorization server', async () => {
    const res = await post(ping(1), { authorization: `Bearer ${token.slice(0, -4)}AAAA` });
    expect(res).toEqual(refusal(401, -32001, 'Unauthorized: The bearer token is not one casket issued, or it has expired: mint one with `casket mcp token`.'));
    const raw = await fetch(mcpEndpoint(casket), { method: 'POST', headers: { 'content-type': 'application/json', accept: ACCEPT, authorization: 'Bearer ckt1.x.y' }, body: JSON.stringify(ping(1)) });
    expect(raw.headers.get('www-authenticate')).toBe(`Bearer error="invalid_token", resource_metadata="${new URL('/.well-known/oauth-protected-resource/_casket/mcp', casket.url)}"`);
  });

  it('202 for a lone cancellation, which is dropped (batch.ts)', async () => {
    expect(await post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } })).toEqual({ status: 202, contentType: null, text: '' });
  });
});

describe('a POST the transport refuses', () => {
  it('406 unless Accept lists both application/json and text/event-stream', async () => {
    const notAcceptable = refusal(406, -32000, 'Not Acceptable: Client must accept both application/json and text/event-stream');
    expect(await post(ping(1), { accept: 'application/json' })).toEqual(notAcceptable);
    expect(await post(ping(1), { accept: 'text/event-stream' })).toEqual(notAcceptable);
    expect(await post(ping(1), { accept: '*/*' })).toEqual(notAcceptable);
    expect((await post(ping(1), { accept: 'text/event-stream, application/json' })).status).toBe(200);
  });

  it('415 unless the body is application/json', async () => {
    const unsupported = refusal(415, -32000, 'Unsupported Media Type: Content-Type must be application/json');
    expect(await post(ping(1), { 'content-type': 'text/plain' })).toEqual(unsupported);
    expect(await post(ping(1), { 'content-type': 'application/jsonl' })).toEqual(unsupported);
    expect((await post(ping(1), { 'content-type': 'application/json; charset=utf-8' })).status).toBe(200);
  });

  it('400 for a batch of more than 100 messages (the SDK\'s MAX_BATCH_SIZE), and takes 100', async () => {
    const batch = (n: number) => Array.from({ length: n }, (_, i) => ping(i + 1));
    expect(await post(batch(101))).toEqual(refusal(400, -32600, 'Invalid Request: Batch must not exceed 100 messages'));
    const answered = await post(batch(100));
    expect(answered.status).toBe(200);
    expect((JSON.parse(answered.text) as unknown[]).length).toBe(100);
  });

  it('400 -32700 for JSON that is not JSON-RPC, alone or in a batch', async () => {
    const invalid = refusal(400, -32700, 'Parse error: Invalid JSON-RPC message');
    expect(await post({ jsonrpc: '2.0', id: 1 })).toEqual(invalid);
    expect(await post({ jsonrpc: '1.0', id: 1, method: 'ping' })).toEqual(invalid);
    expect(await post([ping(1), { id: 2, method: 'ping' }])).toEqual(invalid);
  });

  it('400 for initialize with anything else in its POST; initialize alone is answered', async () => {
    expect(await post([initialize(1), ping(2)])).toEqual(refusal(400, -32600, 'Invalid Request: Only one initialization request is allowed'));
    expect(await post([ping(2), initialize(1)])).toEqual(refusal(400, -32600, 'Invalid Request: Only one initialization request is allowed'));
    const alone = await post(initialize(1), { 'mcp-protocol-version': '1999-01-01' });
    expect(alone.status).toBe(200);
    expect(JSON.parse(alone.text)).toMatchObject({ id: 1, result: { protocolVersion: '2025-11-25' } });
  });

  it('400 for a MCP-Protocol-Version it does not know, on anything but initialize', async () => {
    const supported = '2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05, 2024-10-07';
    expect(await post(ping(1), { 'mcp-protocol-version': '1999-01-01' })).toEqual(refusal(400, -32000, `Bad Request: Unsupported protocol version: 1999-01-01 (supported versions: ${supported})`));
    expect(await post([ping(1), ping(2)], { 'mcp-protocol-version': '' })).toEqual(refusal(400, -32000, `Bad Request: Unsupported protocol version:  (supported versions: ${supported})`));
    for (const version of ['2025-11-25', '2025-06-18']) expect((await post(ping(1), { 'mcp-protocol-version': version })).status).toBe(200);
  });
});

describe('a POST the transport answers', () => {
  it('202 with no body for notifications only', async () => {
    expect(await post(initialized)).toEqual({ status: 202, contentType: null, text: '' });
    expect(await post([initialized, initialized])).toEqual({ status: 202, contentType: null, text: '' });
  });

  it('answers each request of a batch, in the order of the requests, whatever order they finish in', async () => {
    // The tool call waits on storage; the pings behind it are answered first.
    const slow = { jsonrpc: '2.0', id: 'slow', method: 'tools/call', params: { name: 'list_directory', arguments: { path: 'nobucket/' } } };
    const list = { jsonrpc: '2.0', id: 'list', method: 'tools/list' };
    const answered = await post([slow, ping(3), initialized, list, ping('one'), ping(2)]);
    expect(answered.status).toBe(200);
    expect(answered.contentType).toBe('application/json');
    const answers = JSON.parse(answered.text) as Array<{ id: unknown; result: Record<string, unknown> }>;
    expect(answers.map((a) => a.id)).toEqual(['slow', 3, 'list', 'one', 2]);
    expect(answers[0]!.result.isError).toBe(true);
    expect(answers[1]).toEqual({ jsonrpc: '2.0', id: 3, result: {} });
    expect(answers[2]!.result.tools).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'read_text_file' })]));
  });

  it('answers a lone request bare, and a batch holding one request bare too (JSON-RPC allows either)', async () => {
    expect(JSON.parse((await post(ping(7))).text)).toEqual({ jsonrpc: '2.0', id: 7, result: {} });
    expect(JSON.parse((await post([initialized, ping(8)])).text)).toEqual({ jsonrpc: '2.0', id: 8, result: {} });
    // A response sent to the server rides along and is not answered.
    expect(JSON.parse((await post([{ jsonrpc: '2.0', id: 99, result: {} }, ping(9)])).text)).toEqual({ jsonrpc: '2.0', id: 9, result: {} });
  });

  it('answers a lone tools/call of an unknown tool, or with arguments its schema refuses, as the SDK words it', async () => {
    const unknown = JSON.parse((await post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'no_such_tool', arguments: {} } })).text);
    expect(unknown).toMatchObject({ id: 1, result: { isError: true, content: [{ type: 'text', text: expect.stringContaining('no_such_tool') }] } });
    const wrong = JSON.parse((await post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'read_text_file', arguments: { path: 7 } } })).text);
    expect(wrong).toMatchObject({ id: 2, result: { isError: true, content: [{ type: 'text', text: expect.stringMatching(/Input validation error/) }] } });
    const none = JSON.parse((await post({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'read_text_file' } })).text);
    expect(none).toMatchObject({ id: 3, result: { isError: true, content: [{ type: 'text', text: expect.stringMatching(/Input validation error/) }] } });
  });
});
