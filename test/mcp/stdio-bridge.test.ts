/**
 * The stdio bridge (src/mcp/stdio.ts) run in this process with PassThrough
 * streams for its stdin and stdout, against casket started in-process
 * (test/helpers/in-process.ts), so `npm run mutate:rooms` sees the bridge's
 * own lines; stdio.test.ts drives the same through a spawned `casket mcp`.
 * Between the bridge and casket a recorder keeps what went over the wire:
 * each POST's bearer token (minted from the secret for that request, living
 * 300 s) and the MCP-Protocol-Version the spec asks HTTP clients to send
 * once it is negotiated
 * (https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#protocol-version-header).
 * What a desktop agent reads is the bridge's stdout, one JSON-RPC message a
 * line (https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#stdio);
 * what its user reads is the log.
 */
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpUrl, runStdioBridge, type BridgeOptions } from '../../src/mcp/stdio.js';
import { readToken } from '../../src/mcp/token.js';
import type { Cred } from '../helpers/casket.js';
import { sdk } from '../helpers/clients.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { until } from '../helpers/poll.js';

let casket: InProcessCasket;
let recorder: Recorder;
const bucket = 'desk';

interface Seen { method: string; headers: IncomingHttpHeaders; body: string; at: number }
interface Recorder { url: string; seen: Seen[]; server: Server }

/** An HTTP relay to `target` that keeps each request it passes on (the headers the bridge chose, the body). */
async function record(target: string): Promise<Recorder> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      seen.push({ method: req.method!, headers: req.headers, body: body.toString('utf8'), at: Date.now() });
      const headers = Object.fromEntries(['authorization', 'content-type', 'accept', 'mcp-protocol-version', 'mcp-session-id'].flatMap((h) => (req.headers[h] === undefined ? [] : [[h, String(req.headers[h])]])));
      void fetch(new URL(req.url!, target), { method: req.method!, headers, ...(body.length > 0 && { body }) }).then(async (answer) => {
        res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'text/plain' }).end(Buffer.from(await answer.arrayBuffer()));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

beforeAll(async () => {
  casket = await startInProcess({ agents: ['dora'], keys: ['shared'] });
  const admin = sdk(casket.url, casket.admin);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  admin.destroy();
  recorder = await record(casket.url);
});
afterAll(async () => {
  recorder?.server.closeAllConnections();
  await new Promise((resolve) => recorder?.server.close(resolve));
  await casket?.stop();
});

type Message = Record<string, unknown> & { id?: unknown; result?: Record<string, unknown>; error?: { code: number; message: string } };

/** The bridge over PassThrough streams: what goes in on its stdin, what came out of its stdout and log. */
function bridge(options: BridgeOptions) {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const out: Message[] = [];
  const log: string[] = [];
  let rest = '';
  stdout.on('data', (chunk: Buffer) => {
    rest += chunk.toString('utf8');
    for (let i = rest.indexOf('\n'); i >= 0; i = rest.indexOf('\n')) {
      out.push(JSON.parse(rest.slice(0, i)) as Message);
      rest = rest.slice(i + 1);
    }
  });
  const done = runStdioBridge(options, stdin, stdout, (line) => log.push(line));
  return {
    out,
    log,
    done,
    /** Everything the bridge wrote, as it was written. */
    written: () => out.map((m) => JSON.stringify(m)).join('\n') + rest,
    send: (message: Record<string, unknown>) => stdin.write(`${JSON.stringify(message)}\n`),
    raw: (text: string) => stdin.write(text),
    async answer(id: number): Promise<Message> {
      await until(() => out.some((m) => m.id === id), `the answer to request ${id}`);
      return out.find((m) => m.id === id)!;
    },
    async end(): Promise<void> {
      stdin.end();
      await done;
    },
  };
}

const options = (cred: Cred, agent?: string, endpoint = recorder.url): BridgeOptions => ({ endpoint, accessKey: cred.accessKeyId, secretKey: cred.secretAccessKey, ...(agent !== undefined && { agent }) });
const initialize = (id: number, protocolVersion = '2025-11-25') => ({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion, capabilities: {}, clientInfo: { name: 'desk-agent', version: '1' } } });
const call = (id: number, name: string, args: Record<string, unknown>) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

/** The requests that reached the recorder since `from`, each with the claims of its bearer token. */
function wire(from: number) {
  return recorder.seen.slice(from).map((s) => {
    const bearer = /^Bearer (.*)$/.exec(String(s.headers.authorization))?.[1] ?? '';
    return { ...s, bearer, claims: readToken(bearer) };
  });
}

describe('casket mcp, the stdio bridge, in-process', () => {
  it("relays a session (initialize, tools/list, a tool call) and answers each; every request carries its own 300 s token, the negotiated version, never the secret", async () => {
    const from = recorder.seen.length;
    const dora = casket.agents.dora!;
    const b = bridge(options(dora));
    // 2025-06-18, not the newest: the version sent after initialize must be the one negotiated, not a default.
    b.send(initialize(1, '2025-06-18'));
    expect((await b.answer(1)).result).toMatchObject({ protocolVersion: '2025-06-18', serverInfo: { name: 'casket' } });
    b.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    b.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    const tools = (await b.answer(2)).result!.tools as Array<{ name: string }>;
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['read_text_file', 'write_file', 'get_file_info']));
    b.send(call(3, 'write_file', { path: `${bucket}/plan.md`, content: 'ship\n', create_only: true }));
    expect((await b.answer(3)).result).toMatchObject({ structuredContent: { written: true } });
    b.send(call(4, 'get_file_info', { path: `${bucket}/plan.md` }));
    expect((await b.answer(4)).result).toMatchObject({ structuredContent: { last_writer: 'dora' } });
    await b.end();

    const posts = wire(from).filter((s) => s.method === 'POST');
    expect(posts.map((p) => (JSON.parse(p.body) as { method: string }).method)).toEqual(['initialize', 'notifications/initialized', 'tools/list', 'tools/call', 'tools/call']);
    for (const p of posts) {
      // Minted for this request (within the 2 s before the recorder saw it), for 300 s, for the key alone.
      expect(p.claims).toMatchObject({ accessKeyId: dora.accessKeyId });
      expect(p.claims!.agent).toBeUndefined();
      expect(p.claims!.expires).toBeGreaterThanOrEqual(Math.floor((p.at - 2000) / 1000) + 300);
      expect(p.claims!.expires).toBeLessThanOrEqual(Math.floor(p.at / 1000) + 300);
    }
    expect(posts.map((p) => p.headers['mcp-protocol-version'])).toEqual([undefined, '2025-06-18', '2025-06-18', '2025-06-18', '2025-06-18']);
    expect(b.log).toEqual([]);
    for (const seen of [b.written(), JSON.stringify(wire(from))]) expect(seen).not.toContain(dora.secretAccessKey);
  });

  it('agent: a key bound to none acts as the agent named, in its token, and writes as it', async () => {
    const from = recorder.seen.length;
    const b = bridge(options(casket.keys.shared!, 'scout'));
    b.send(initialize(1));
    await b.answer(1);
    b.send(call(2, 'write_file', { path: `${bucket}/scout.md`, content: 'look\n', create_only: true }));
    expect((await b.answer(2)).result).toMatchObject({ structuredContent: { written: true } });
    b.send(call(3, 'get_file_info', { path: `${bucket}/scout.md` }));
    expect((await b.answer(3)).result).toMatchObject({ structuredContent: { last_writer: 'scout' } });
    await b.end();
    expect(wire(from).map((s) => s.claims?.agent)).toEqual(['scout', 'scout', 'scout']);
  });

  it("a key bound to another agent: initialize is answered with casket's refusal as a JSON-RPC error, logged once", async () => {
    const b = bridge(options(casket.agents.dora!, 'mallory'));
    b.send(initialize(1));
    const refused = await b.answer(1);
    expect(refused.error!.code).toBe(-32603);
    expect(refused.error!.message).toMatch(new RegExp(`^casket at ${recorder.url}: .*bound to agent \\\\"dora\\\\"`));
    await b.end();
    expect(b.log).toHaveLength(1);
    expect(b.log[0]).toMatch(/^casket mcp: .*bound to agent \\"dora\\"/);
  });

  it("casket's own error answer to an initialize is relayed as it is, not as the bridge's failure", async () => {
    const b = bridge(options(casket.agents.dora!));
    b.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} });
    const answer = await b.answer(1);
    expect(answer.error!.message).toMatch(/protocolVersion/);
    expect(answer.error!.message).not.toMatch(/^casket at /);
    await b.end();
    expect(b.log).toEqual([]);
  });

  it('no casket at the endpoint: a request is answered with an error naming the endpoint, a notification and a response are not, each failure logged once', async () => {
    const gone = createServer();
    await new Promise<void>((resolve) => gone.listen(0, '127.0.0.1', resolve));
    const endpoint = `http://127.0.0.1:${(gone.address() as AddressInfo).port}`;
    await new Promise((resolve) => gone.close(resolve));
    const b = bridge(options(casket.agents.dora!, undefined, endpoint));
    b.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    // An answer to a request the server made (sampling, elicitation): nobody waits on stdout for it.
    b.send({ jsonrpc: '2.0', id: 7, result: {} });
    b.send({ jsonrpc: '2.0', id: 8, method: 'ping' });
    expect(await b.answer(8)).toEqual({ jsonrpc: '2.0', id: 8, error: { code: -32603, message: `casket at ${endpoint}: fetch failed` } });
    await until(() => b.log.length >= 3, 'three failures logged');
    await b.end();
    expect(b.out).toHaveLength(1);
    expect(b.log).toEqual(['casket mcp: fetch failed', 'casket mcp: fetch failed', 'casket mcp: fetch failed']);
  });

  it('a request sent just before stdin ends is answered before the bridge closes (printf … | casket mcp)', async () => {
    const b = bridge(options(casket.agents.dora!));
    b.send({ jsonrpc: '2.0', id: 1, method: 'ping' });
    await b.end();
    expect(b.out).toEqual([{ jsonrpc: '2.0', id: 1, result: {} }]);
    expect(b.log).toEqual([]);
  });

  it('a line that is not JSON is logged and skipped; the next is relayed', async () => {
    const b = bridge(options(casket.agents.dora!));
    b.raw('not json\n');
    b.send({ jsonrpc: '2.0', id: 1, method: 'ping' });
    expect(await b.answer(1)).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
    await b.end();
    expect(b.log).toHaveLength(1);
    expect(b.log[0]).toMatch(/^casket mcp: .*JSON/);
  });

  it('a line past the 10 MiB stdio buffer ends the bridge, logged, though stdin stays open', async () => {
    const b = bridge(options(casket.agents.dora!));
    b.raw('x'.repeat(10 * 1024 * 1024 + 1));
    await b.done;
    expect(b.log).toEqual(['casket mcp: ReadBuffer exceeded maximum size of 10485760 bytes']);
  });
});

describe('mcpUrl: --endpoint as users write it', () => {
  it('adds /_casket/mcp to the casket URL, with or without a slash or a path before it, and keeps one already there', () => {
    expect(mcpUrl('http://127.0.0.1:9000').href).toBe('http://127.0.0.1:9000/_casket/mcp');
    expect(mcpUrl('http://127.0.0.1:9000/').href).toBe('http://127.0.0.1:9000/_casket/mcp');
    expect(mcpUrl('https://files.example/casket/').href).toBe('https://files.example/casket/_casket/mcp');
    expect(mcpUrl('https://files.example/casket').href).toBe('https://files.example/casket/_casket/mcp');
    expect(mcpUrl('http://127.0.0.1:9000/_casket/mcp').href).toBe('http://127.0.0.1:9000/_casket/mcp');
    expect(mcpUrl('http://127.0.0.1:9000/_casket/mcp/').href).toBe('http://127.0.0.1:9000/_casket/mcp');
    expect(mcpUrl('https://files.example/casket/_casket/mcp/').href).toBe('https://files.example/casket/_casket/mcp');
  });
});
