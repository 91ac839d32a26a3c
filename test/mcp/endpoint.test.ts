/**
 * /_casket/mcp on the wire (docs/design.md §8): both protocol versions casket
 * promises, SigV4-signed calls as well as bearer tokens (a literal payload
 * hash checked against the body), and only POST.
 */
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken, startMcpCasket, type McpCasket } from '../helpers/mcp.js';
import { sdk } from '../helpers/clients.js';
import { raw, sha256hex } from '../helpers/raw.js';

let casket: McpCasket;
const bucket = 'wire';
const ACCEPT = 'application/json, text/event-stream';

beforeAll(async () => {
  casket = await startMcpCasket({ agents: ['sig'] });
  await sdk(casket.url, casket.admin).send(new CreateBucketCommand({ Bucket: bucket }));
});
afterAll(async () => {
  await casket?.stop();
});

const rpc = (id: number, method: string, params: unknown) => JSON.stringify({ jsonrpc: '2.0', id, method, params });

describe('/_casket/mcp', () => {
  it.each(['2025-06-18', '2025-11-25'])('negotiates protocol version %s', async (version) => {
    const res = await fetch(new URL('/_casket/mcp', casket.url), {
      method: 'POST',
      // Credentials: without them initialize is 401, the start of an OAuth login (src/mcp/http.ts).
      headers: { 'content-type': 'application/json', accept: ACCEPT, authorization: `Bearer ${mintToken(casket.admin)}` },
      body: rpc(1, 'initialize', { protocolVersion: version, capabilities: {}, clientInfo: { name: 'wire', version: '1' } }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { result: { protocolVersion: string; serverInfo: { name: string }; capabilities: { tools?: unknown } } };
    expect(body.result.protocolVersion).toBe(version);
    expect(body.result.serverInfo.name).toBe('casket');
    expect(body.result.capabilities.tools).toBeDefined();
  });

  it('accepts a SigV4-signed tool call as the key\'s agent, and refuses a forged body', async () => {
    const call = rpc(2, 'tools/call', { name: 'write_file', arguments: { path: `${bucket}/signed.txt`, content: 'by sigv4\n', create_only: true } });
    const ok = await raw(casket.url, casket.agents.sig!, { method: 'POST', path: '/_casket/mcp', headers: { 'content-type': 'application/json', accept: ACCEPT }, body: call });
    expect(ok.status, ok.body).toBe(200);
    expect(JSON.parse(ok.body).result.isError).toBeFalsy();
    const info = await raw(casket.url, casket.agents.sig!, { method: 'POST', path: '/_casket/mcp', headers: { 'content-type': 'application/json', accept: ACCEPT }, body: rpc(3, 'tools/call', { name: 'get_file_info', arguments: { path: `${bucket}/signed.txt` } }) });
    expect(JSON.parse(info.body).result.structuredContent).toMatchObject({ last_writer: 'sig', your_read: 'full' });
    // The signature covers a hash of another body: refused before any tool runs.
    const forged = await raw(casket.url, casket.agents.sig!, { method: 'POST', path: '/_casket/mcp', headers: { 'content-type': 'application/json', accept: ACCEPT }, body: call.replace('by sigv4', 'by mallory'), payloadHash: sha256hex(call) });
    expect(forged.status).toBe(401);
    const wrongSecret = await raw(casket.url, { ...casket.agents.sig!, secretAccessKey: 'wrong' }, { method: 'POST', path: '/_casket/mcp', headers: { 'content-type': 'application/json', accept: ACCEPT }, body: call });
    expect(wrongSecret.status).toBe(401);
  });

  it('answers only POST: GET (no server-initiated stream) is 405', async () => {
    const res = await fetch(new URL('/_casket/mcp', casket.url), { headers: { accept: 'text/event-stream' } });
    expect(res.status).toBe(405);
  });
});
