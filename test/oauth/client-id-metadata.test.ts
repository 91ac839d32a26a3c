/**
 * Client ID Metadata Documents (MCP authorization 2025-11-25): a client_id
 * that is an https URL is fetched for the client's name and redirect URIs —
 * but never from casket's own loopback or private network (an SSRF fence,
 * src/oauth/client-metadata.ts), unless the test flag allows it. And with
 * --anonymous read, anonymous MCP discovery stays open as before.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { testTls } from '../helpers/tls.js';
import { authorizeUrl, mcpPost, pkce } from './flow.js';

let fenced: RunningCasket;
let open: RunningCasket;
let docs: Server;
let base: string;

beforeAll(async () => {
  const tls = testTls();
  docs = createServer({ cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) }, (req, res) => {
    const self = `${base}${req.url}`;
    const body = req.url === '/client.json' ? { client_id: self, client_name: 'Metadata Doc Client', redirect_uris: ['http://127.0.0.1:9/callback'] } : { client_id: 'https://someone-else.example/client.json', client_name: 'Borrowed', redirect_uris: ['http://127.0.0.1:9/callback'] };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((r) => docs.listen(0, '127.0.0.1', r));
  base = `https://127.0.0.1:${(docs.address() as { port: number }).port}`;
  [fenced, open] = await Promise.all([
    startCasket({ env: { NODE_EXTRA_CA_CERTS: tls.caFile } }),
    startCasket({ args: ['--anonymous', 'read'], env: { NODE_EXTRA_CA_CERTS: tls.caFile, CASKET_TEST_PRIVATE_CLIENT_METADATA: '1' } }),
  ]);
});
afterAll(async () => {
  await Promise.all([fenced?.stop(), open?.stop()]);
  await new Promise((r) => docs?.close(r));
});

const page = async (casket: RunningCasket, clientId: string) => {
  const res = await fetch(authorizeUrl(casket, { client_id: clientId, redirect_uris: ['http://127.0.0.1:9/callback'] }, { code_challenge: pkce().challenge }), { redirect: 'manual' });
  return { status: res.status, html: await res.text() };
};

describe('client_id metadata documents', () => {
  it('never fetches a client_id on a loopback or private address, by literal or by name', async () => {
    for (const clientId of [`${base}/client.json`, `${base.replace('127.0.0.1', 'localhost')}/client.json`]) {
      const r = await page(fenced, clientId);
      expect(r.status, clientId).toBe(400);
      expect(r.html).toContain('private or loopback address');
    }
  });

  it('fetches one where allowed: the login names the document\'s client; a document that is not its own URL\'s is refused', async () => {
    const ok = await page(open, `${base}/client.json`);
    expect(ok.status).toBe(200);
    expect(ok.html).toContain('Connect Metadata Doc Client to casket');
    const borrowed = await page(open, `${base}/borrowed.json`);
    expect(borrowed.status).toBe(400);
    expect(borrowed.html).toContain('not its own URL');
  });

  it('with --anonymous read, anonymous discovery stays open; without, initialize is 401', async () => {
    const init = { method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } };
    expect((await mcpPost(open, undefined, init)).status).toBe(200);
    expect((await mcpPost(open, undefined, { method: 'tools/call', params: { name: 'list_directory', arguments: { path: 'x/' } } })).status).toBe(401);
    expect((await mcpPost(fenced, undefined, init)).status).toBe(401);
  });
});
