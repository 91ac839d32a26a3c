/**
 * A POST to /_casket/mcp is answered within its deadline (src/mcp/http.ts,
 * 60 s in casket): a tool call whose S3 request has not answered by then is
 * answered 504 with what the model should do, the operator's log says so, and
 * the tool server that call still runs on is closed, never lent to the next
 * POST. casket's deadline is not a flag, and a stuck backend is not
 * something a running casket can be made into on cue: so these drive
 * mcpEndpoint itself, with a 600 ms deadline and a door (src/mcp/door.ts)
 * whose S3 request answers only when the test lets it, as a hung upstream
 * would. The tools, the SDK's server and the transport are casket's own.
 */
import { afterAll, expect, it } from 'vitest';
import type { CasketDoor } from '../../src/mcp/door.js';
import { mcpEndpoint, type McpHttpAnswer } from '../../src/mcp/http.js';

/** The S3 requests waiting for their answer: each answers when called. */
const waiting: Array<() => void> = [];
const door: CasketDoor = {
  authenticate: async (req) => (req.headers.authorization === 'Bearer person' ? { accessKeyId: 'AKPERSON' } : undefined),
  s3: (_caller, call) =>
    new Promise((resolve) => waiting.push(() => resolve({ status: 404, headers: {}, failure: { status: 404, code: 'NoSuchKey', message: `No ${call.key}.`, fields: {} } }))),
  diff: async () => undefined,
  changes: async () => ({ status: 200, body: { changes: [] } }),
  commit: async () => ({ landed: [] }),
  mayDelete: async () => undefined,
  stamp: async () => undefined,
  retained: async () => undefined,
  writerOf: async () => ({}),
  changedSinceRead: async () => [],
  agentWrites: 'require',
  diffMaxBytes: 65536,
};
const logged: Array<[object, string]> = [];
const endpoint = mcpEndpoint({
  door,
  allowedOrigins: [],
  maxTextBytes: 65536,
  log: { info: () => {}, warn: (o, msg) => void logged.push([o, msg]) },
  resourceMetadata: () => 'http://127.0.0.1/.well-known/oauth-protected-resource/_casket/mcp',
  anonymousDiscovery: false,
  deadlineMs: 600,
});

afterAll(() => {
  for (const answer of waiting.splice(0)) answer();
});

function post(message: unknown): Promise<McpHttpAnswer> {
  const body = Buffer.from(JSON.stringify(message));
  return endpoint({
    method: 'POST',
    url: '/_casket/mcp',
    headers: { authorization: 'Bearer person', accept: 'application/json, text/event-stream', 'content-type': 'application/json', 'mcp-protocol-version': '2025-11-25' },
    body: async () => body,
  });
}
const read = (id: number, path: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'read_text_file', arguments: { path } } });
const ping = (id: number) => ({ jsonrpc: '2.0', id, method: 'ping' });

it('a call past the deadline is answered 504: it may still complete, so read before retrying; the operator\'s log says so', async () => {
  const answer = await post(read(1, 'notes/slow.md'));
  expect(answer).toEqual({
    status: 504,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'The call did not finish within 1 s. It may still complete: read the files it touches before you retry.' }, id: null }),
  });
  expect(logged).toContainEqual([{ deadlineMs: 600 }, 'MCP request not answered in time']);
});

it('the server a late call still runs on is not lent again: the next POST is answered by another', async () => {
  // A batch goes through the SDK's server, which holds the POST until each of its requests is answered.
  expect((await post([read(1, 'notes/stuck.md'), ping(2)])).status).toBe(504);
  const next = await post([ping(1), ping(2)]);
  expect(next.status).toBe(200);
  expect(JSON.parse(next.body!)).toEqual([{ jsonrpc: '2.0', id: 1, result: {} }, { jsonrpc: '2.0', id: 2, result: {} }]);
  // The late answers come, and reach no one: the POST after them is answered as before.
  for (const answer of waiting.splice(0)) answer();
  const after = await post([ping(3), ping(4)]);
  expect(JSON.parse(after.body!)).toEqual([{ jsonrpc: '2.0', id: 3, result: {} }, { jsonrpc: '2.0', id: 4, result: {} }]);
});
