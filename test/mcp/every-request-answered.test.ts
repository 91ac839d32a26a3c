/**
 * Every POST to /_casket/mcp is answered promptly (issue 37, finding 5): an
 * anonymous client may send only what discovery needs (initialize, ping,
 * tools/list, notifications/initialized), and a cancellation — which MCP
 * answers with silence (basic/utilities/cancellation) — cannot leave a POST
 * waiting on an answer that never comes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken, startMcpCasket, type McpCasket } from '../helpers/mcp.js';

let casket: McpCasket;
let token: string;

beforeAll(async () => {
  casket = await startMcpCasket();
  token = mintToken(casket.admin);
});
afterAll(async () => {
  await casket?.stop();
});

/** POSTs a body; fails the test if no answer comes within 5 s (casket's idle timeout is 120 s). */
async function post(body: unknown, auth?: string): Promise<{ status: number; json: any; wwwAuthenticate: string | null }> {
  const res = await fetch(new URL('/_casket/mcp', casket.url), {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(auth && { authorization: `Bearer ${auth}` }) },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(5_000),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined, wwwAuthenticate: res.headers.get('www-authenticate') };
}

const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
const cancel = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } };

describe('every request to /_casket/mcp is answered or refused at once', () => {
  it('refuses an anonymous batch with a cancellation (401), instead of leaving it unanswered', async () => {
    const r = await post([ping, cancel]);
    expect(r.status).toBe(401);
    expect(r.wwwAuthenticate).toBe(`Bearer resource_metadata="${new URL('/.well-known/oauth-protected-resource/_casket/mcp', casket.url)}"`);
    expect(r.json.error.code).toBe(-32001);
  });

  it('refuses anonymous notifications other than notifications/initialized', async () => {
    expect((await post(cancel)).status).toBe(401);
    expect((await post({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } })).status).toBe(401);
    // Without --anonymous read, discovery too needs credentials: an OAuth client meets the 401 at once
    // (test/oauth/challenge.test.ts covers discovery under --anonymous read).
    expect((await post({ jsonrpc: '2.0', method: 'notifications/initialized' })).status).toBe(401);
    expect((await post({ jsonrpc: '2.0', id: 2, method: 'tools/list' })).status).toBe(401);
  });

  it('answers a request whose cancellation rides in the same batch: a stateless POST is never left without its answer', async () => {
    const r = await post([ping, cancel], token);
    expect(r.status).toBe(200);
    // (One answer comes bare, as the SDK's transport sends it; JSON-RPC allows either for a batch of one request.)
    expect([r.json].flat()).toEqual([{ jsonrpc: '2.0', id: 1, result: {} }]);
    const call = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'list_directory', arguments: { path: 'nobucket/' } } };
    const r2 = await post([call, { ...cancel, params: { requestId: 2 } }], token);
    expect(r2.status).toBe(200);
    expect([r2.json].flat().map((m: { id: unknown }) => m.id)).toEqual([2]);
  });
});
