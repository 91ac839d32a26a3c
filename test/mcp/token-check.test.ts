/**
 * The check `casket mcp token` makes before it prints a token
 * (src/mcp/token-check.ts, issue 40 item 4), called as the command calls
 * it, against casket started in this process (test/helpers/in-process.ts),
 * so `npm run mutate:rooms` sees both the check and the endpoint's
 * authentication it asks (src/mcp-door.ts). token-mint drives the same
 * through the command against a spawned casket. The sentence returned is
 * what the user reads when no token is printed: each cause — the casket's
 * refusal, no casket there, something else there — is named as such.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkToken } from '../../src/mcp/token-check.js';
import { mintToken } from '../../src/mcp/token.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';

let casket: InProcessCasket;
beforeAll(async () => {
  casket = await startInProcess({ agents: ['alice'], keys: ['person'] });
});
afterAll(async () => {
  await casket?.stop();
});

const tokenOf = (cred: { accessKeyId: string; secretAccessKey: string }, agent?: string, ttlSeconds = 300) => mintToken(cred.accessKeyId, cred.secretAccessKey, { ...(agent !== undefined && { agent }), ttlSeconds });

/** An HTTP server that is not casket: answers every request with `answer`, and keeps what it was sent. */
async function notCasket(answer: { status: number; body: string }): Promise<{ url: string; seen: Array<{ method?: string; url?: string; headers: IncomingMessage['headers']; body: string }>; server: Server }> {
  const seen: Array<{ method?: string; url?: string; headers: IncomingMessage['headers']; body: string }> = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

describe('checkToken against casket', () => {
  it("lets a good token through: an agent's own, and a person's acting as an agent", async () => {
    expect(await checkToken(casket.url, tokenOf(casket.agents.alice!))).toBeUndefined();
    expect(await checkToken(casket.url, tokenOf(casket.agents.alice!, 'alice'))).toBeUndefined();
    expect(await checkToken(casket.url, tokenOf(casket.keys.person!, 'carol'))).toBeUndefined();
    // --endpoint as users write it: the casket's URL, with a slash or with the endpoint's path.
    expect(await checkToken(`${casket.url}/`, tokenOf(casket.agents.alice!))).toBeUndefined();
    expect(await checkToken(`${casket.url}/_casket/mcp`, tokenOf(casket.agents.alice!))).toBeUndefined();
  });

  it("answers casket's reason for a wrong secret, an expired token and an agent the key may not act as", async () => {
    const notOurs = 'The bearer token is not one casket issued, or it has expired: mint one with `casket mcp token`.';
    expect(await checkToken(casket.url, tokenOf({ ...casket.agents.alice!, secretAccessKey: 'not-the-secret' }))).toBe(`casket at ${casket.url} refused the token: ${notOurs}; no token printed`);
    expect(await checkToken(casket.url, tokenOf(casket.agents.alice!, undefined, -1))).toBe(`casket at ${casket.url} refused the token: ${notOurs}; no token printed`);
    expect(await checkToken(casket.url, 'ckt1.not.atoken')).toBe(`casket at ${casket.url} refused the token: ${notOurs}; no token printed`);
    const bound = await checkToken(casket.url, tokenOf(casket.agents.alice!, 'bob'));
    expect(bound).toMatch(new RegExp(`^casket at ${casket.url} refused the token: .*bound to agent "alice" and cannot act as agent "bob".*; no token printed$`));
    expect(bound).not.toContain('Unauthorized');
  });
});

describe('checkToken with no casket at the endpoint', () => {
  it('names an endpoint that is not a URL', async () => {
    expect(await checkToken('127.0.0.1:9000', 'ckt1.x.y')).toBe('--endpoint 127.0.0.1:9000 is not a URL (e.g. http://127.0.0.1:9000)');
    expect(await checkToken('', 'ckt1.x.y')).toBe('--endpoint  is not a URL (e.g. http://127.0.0.1:9000)');
  });

  it('names the socket error when nothing listens there', async () => {
    const { url, server } = await notCasket({ status: 200, body: '' });
    await new Promise((resolve) => server.close(resolve));
    expect(await checkToken(url, 'ckt1.x.y')).toBe(`could not reach casket at ${url} to check the token (ECONNREFUSED); no token printed — check --endpoint, or mint with --offline`);
  });

  it("asks with a JSON-RPC ping, the token as a bearer token, as an MCP client would", async () => {
    const other = await notCasket({ status: 200, body: '{"jsonrpc":"2.0","id":1,"result":{}}' });
    try {
      expect(await checkToken(other.url, 'ckt1.the.token')).toBeUndefined();
      expect(other.seen).toHaveLength(1);
      const [asked] = other.seen;
      expect(asked!.method).toBe('POST');
      expect(asked!.url).toBe('/_casket/mcp');
      expect(asked!.headers.authorization).toBe('Bearer ckt1.the.token');
      expect(asked!.headers['content-type']).toBe('application/json');
      expect(asked!.headers.accept).toBe('application/json, text/event-stream');
      expect(JSON.parse(asked!.body)).toEqual({ jsonrpc: '2.0', id: 1, method: 'ping' });
    } finally {
      other.server.close();
    }
  });

  it('tells a refusal from an answer that is not one: 401 is a refusal, anything else asks whether it is casket', async () => {
    const cases: Array<[{ status: number; body: string }, (url: string) => string]> = [
      [{ status: 401, body: '{"error":{"message":"Unauthorized: go away"}}' }, (url) => `casket at ${url} refused the token: go away; no token printed`],
      [{ status: 401, body: 'no' }, (url) => `casket at ${url} refused the token: HTTP 401; no token printed`],
      [{ status: 401, body: '{"error":{"message":7}}' }, (url) => `casket at ${url} refused the token: HTTP 401; no token printed`],
      // Only the prefix casket's endpoint writes is taken off.
      [{ status: 401, body: '{"error":{"message":"no. Unauthorized: x"}}' }, (url) => `casket at ${url} refused the token: no. Unauthorized: x; no token printed`],
      [{ status: 404, body: 'Not Found' }, (url) => `casket at ${url} answered HTTP 404 when asked to check the token (is it casket's endpoint?); no token printed`],
      [{ status: 403, body: '{}' }, (url) => `casket at ${url} answered HTTP 403 when asked to check the token (is it casket's endpoint?); no token printed`],
      [{ status: 500, body: '{"error":{"message":"Internal error"}}' }, (url) => `casket at ${url} answered Internal error when asked to check the token (is it casket's endpoint?); no token printed`],
    ];
    for (const [answer, sentence] of cases) {
      const other = await notCasket(answer);
      try {
        expect(await checkToken(other.url, 'ckt1.x.y'), JSON.stringify(answer)).toBe(sentence(other.url));
      } finally {
        other.server.close();
      }
    }
  });
});
