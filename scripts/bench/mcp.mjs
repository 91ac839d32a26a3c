#!/usr/bin/env node
/**
 * The MCP file tools' cost against the same work over S3, in one run
 * (docs/design.md §8): read_text_file of a 10 KiB file against an agent's GetObject,
 * and edit_file against GetObject + a PutObject with If-Match (what an S3
 * client must do to make the same edit safely), at concurrency 1 and 8.
 * Each worker is its own agent with its own file (no contention: the cost of
 * the path, not of conflicts). Cells alternate S3, MCP, MCP, S3, … over
 * `--runs` runs of `--duration` seconds after a warm-up; medians of p50,
 * p99 and req/s per run, and the ratio of MCP to S3 p50 (goal ≤ 1.5×).
 *
 * The MCP side is a bare JSON-RPC POST per call on a keep-alive socket (what
 * any Streamable HTTP client sends, without a client library's own cost),
 * with a bearer token; the S3 side is bench/client.mjs, SigV4 signed.
 *
 * The read pair runs once more against read-floor.mjs, a bare node:http
 * server doing only what each answer needs (signature or token, the bytes,
 * the JSON-RPC result in both views), in the same run: the floor under the
 * ratio, what the two protocols cost against each other on this machine.
 *
 *   node scripts/bench/mcp.mjs [--duration S] [--runs N] [--json FILE]
 *   (npm run bench runs it as its mcp phase)
 */
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { S3Client } from './client.mjs';
import { startCasket, startReadFloor, stopAll } from './processes.mjs';
import { fmt, median, percentile, table } from './stats.mjs';

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '../..');
const BUCKET = 'mcpbench';
const SIZE = 10 * 1024;
const CONCURRENCY = [1, 8];

function parse(argv) {
  const o = { duration: 3, runs: 3, json: undefined };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--duration') o.duration = Number(argv[++i]);
    else if (a === '--runs') o.runs = Number(argv[++i]);
    else if (a === '--json') o.json = argv[++i];
    else throw new Error(`unknown option ${a}`);
  }
  return o;
}

/** casket's bearer token (src/mcp/token.ts), minted here as `casket mcp token` would. */
function token(cred, agent) {
  const payload = Buffer.from(JSON.stringify({ k: cred.accessKeyId, a: agent, e: Math.floor(Date.now() / 1000) + 3600 })).toString('base64url');
  return `ckt1.${payload}.${createHmac('sha256', cred.secretAccessKey).update(`casket-mcp-token-v1\n${payload}`).digest('base64url')}`;
}

class McpClient {
  constructor(url, bearer) {
    const u = new URL('/_casket/mcp', url);
    this.u = u;
    this.bearer = bearer;
    this.agent = new Agent({ keepAlive: true, maxSockets: 1 });
    this.id = 0;
  }
  call(name, args) {
    const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: ++this.id, method: 'tools/call', params: { name, arguments: args } }));
    return new Promise((res, rej) => {
      const req = request(
        { agent: this.agent, hostname: this.u.hostname, port: this.u.port, path: this.u.pathname, method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25', authorization: `Bearer ${this.bearer}`, 'content-length': body.length } },
        (r) => {
          const chunks = [];
          r.on('data', (c) => chunks.push(c));
          r.on('end', () => {
            const msg = JSON.parse(Buffer.concat(chunks).toString('utf8'));
            if (msg.error || msg.result?.isError) rej(new Error(JSON.stringify(msg.error ?? msg.result.content)));
            else res(msg.result);
          });
        },
      );
      req.on('error', rej);
      req.end(body);
    });
  }
  close() {
    this.agent.destroy();
  }
}

function fileContent() {
  const lines = ['mark: A'];
  while (lines.join('\n').length < SIZE - 80) lines.push(`line ${lines.length}: ${randomBytes(24).toString('hex')}`);
  return `${lines.join('\n')}\n`;
}

/** The worker's file as it is now: its etag (a full read, so the agent may write it) and which mark it holds. */
async function syncMark(w) {
  const got = await w.s3.request('GET', `/${BUCKET}/${w.key}`, { collect: true });
  w.etag = got.headers.etag;
  w.mark = got.body.toString('utf8').startsWith('mark: B') ? 'B' : 'A';
}

/** One worker per agent: its own file, its own clients, its own current etag. */
async function workers(url, creds, n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const { agent, cred } = creds[i];
    const key = `w${i}.txt`;
    const s3 = new S3Client(url, cred);
    const body = Buffer.from(fileContent());
    const put = await s3.request('PUT', `/${BUCKET}/${key}`, { body, headers: { 'if-none-match': '*' } });
    if (put.status !== 200 && put.status !== 412) throw new Error(`seed PUT ${put.status}`);
    out.push({ agent, key, s3, mcp: new McpClient(url, token(cred, agent)), etag: undefined, mark: 'A' });
  }
  return out;
}

const OPS = {
  's3 GetObject': async (w) => {
    const r = await w.s3.request('GET', `/${BUCKET}/${w.key}`);
    if (r.status !== 200) throw new Error(`GET ${r.status}`);
    w.etag = r.headers.etag;
  },
  'mcp read_text_file': async (w) => {
    const r = await w.mcp.call('read_text_file', { path: `${BUCKET}/${w.key}` });
    w.etag = r.structuredContent.etag;
  },
  's3 GetObject + PutObject If-Match': async (w) => {
    const got = await w.s3.request('GET', `/${BUCKET}/${w.key}`, { collect: true });
    const text = got.body.toString('utf8');
    const next = Buffer.from(text.startsWith('mark: A') ? text.replace('mark: A', 'mark: B') : text.replace('mark: B', 'mark: A'));
    const put = await w.s3.request('PUT', `/${BUCKET}/${w.key}`, { body: next, headers: { 'if-match': got.headers.etag } });
    if (put.status !== 200) throw new Error(`PUT ${put.status}`);
    w.etag = put.headers.etag;
  },
  'mcp edit_file': async (w) => {
    // The agent's own last write counts as its full read of the version it made.
    const next = w.mark === 'B' ? 'A' : 'B';
    const info = await w.mcp.call('edit_file', { path: `${BUCKET}/${w.key}`, edits: [{ oldText: `mark: ${w.mark}`, newText: `mark: ${next}` }], expected_etag: w.etag });
    w.etag = info.structuredContent.etag;
    w.mark = next;
  },
};

async function run(op, ws, seconds) {
  for (const w of ws) await syncMark(w);
  const latencies = [];
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    ws.map(async (w) => {
      while (performance.now() < end) {
        const t = performance.now();
        await OPS[op](w);
        latencies.push(performance.now() - t);
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return { n: latencies.length, rps: latencies.length / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

export async function mcpBench(opts = {}) {
  const o = { duration: 3, runs: 3, ...opts };
  const dir = mkdtempSync(join(tmpdir(), 'casket-mcp-bench-'));
  const admin = { accessKeyId: `ADMIN${randomBytes(6).toString('hex').toUpperCase()}`, secretAccessKey: randomBytes(24).toString('base64url') };
  const creds = Array.from({ length: Math.max(...CONCURRENCY) }, (_, i) => ({ agent: `bench${i}`, cred: { accessKeyId: `AGENT${i}${randomBytes(5).toString('hex').toUpperCase()}`, secretAccessKey: randomBytes(24).toString('base64url') } }));
  const credentialsFile = join(dir, 'credentials.json');
  writeFileSync(credentialsFile, JSON.stringify({ credentials: [{ accessKey: admin.accessKeyId, secretKey: admin.secretAccessKey, admin: true }, ...creds.map((c) => ({ accessKey: c.cred.accessKeyId, secretKey: c.cred.secretAccessKey, agent: c.agent }))] }), { mode: 0o600 });
  const loadStart = loadavg();
  const casket = await startCasket({ cli: join(ROOT, 'dist', 'cli.js'), dataDir: join(dir, 'data'), credentialsFile, logFile: join(dir, 'casket.log'), nodeArgs: process.env.BENCH_PROF ? ['--cpu-prof', '--cpu-prof-dir=' + process.env.BENCH_PROF] : [] });
  const rows = [];
  const results = [];
  /** Cells of one pair (S3 op, MCP op) at each concurrency, alternating, against the server at `url`. */
  const pair = async (url, s3op, mcpop, label = '') => {
    for (const c of CONCURRENCY) {
      const ws = await workers(url, creds, c);
      await run(s3op, ws, 1);
      await run(mcpop, ws, 1);
      const by = { [s3op]: [], [mcpop]: [] };
      for (let r = 0; r < o.runs; r++) {
        const order = r % 2 === 0 ? [s3op, mcpop] : [mcpop, s3op];
        for (const op of order) by[op].push(await run(op, ws, o.duration));
      }
      const m = (op, k) => median(by[op].map((x) => x[k]));
      for (const op of [s3op, mcpop]) rows.push([`${label}${op}`, String(c), fmt(m(op, 'rps'), 0), fmt(m(op, 'p50'), 2), fmt(m(op, 'p99'), 2), op === mcpop ? `${fmt(m(mcpop, 'p50') / m(s3op, 'p50'), 2)}×` : '']);
      results.push({ s3: s3op, mcp: `${label}${mcpop}`, concurrency: c, s3p50: m(s3op, 'p50'), mcpP50: m(mcpop, 'p50'), ratio: m(mcpop, 'p50') / m(s3op, 'p50'), ...(label && { floor: true }) });
      for (const w of ws) {
        w.s3.close();
        w.mcp.close();
      }
    }
  };
  try {
    const adminClient = new S3Client(casket.url, admin);
    await adminClient.request('PUT', `/${BUCKET}`);
    await pair(casket.url, 's3 GetObject', 'mcp read_text_file');
    await pair(casket.url, 's3 GetObject + PutObject If-Match', 'mcp edit_file');
    adminClient.close();
    // The same read pair against the floor (read-floor.mjs), in the same run: what the protocols cost against each other.
    const floor = await startReadFloor({ dir, credentialsFile });
    await pair(floor.url, 's3 GetObject', 'mcp read_text_file', 'floor: ');
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
  const judged = results.filter((r) => !r.floor);
  const floors = results.filter((r) => r.floor);
  const text = [
    `MCP tools vs S3, 10 KiB file (runs ${o.runs} × ${o.duration} s, medians; load average at start ${loadStart.map((x) => x.toFixed(2)).join(' ')}, at end ${loadavg().map((x) => x.toFixed(2)).join(' ')})`,
    table(['operation', 'c', 'req/s', 'p50 ms', 'p99 ms', 'MCP/S3 p50'], rows),
    `goal: MCP ≤ 1.5× the S3 path's p50 — ${judged.every((r) => r.ratio <= 1.5) ? 'met' : 'NOT met'} (${judged.map((r) => `${r.mcp} c=${r.concurrency}: ${r.ratio.toFixed(2)}×`).join(', ')})`,
    `floor (bare node:http doing only what each answer needs, read-floor.mjs): ${floors.map((r) => `read_text_file/GetObject c=${r.concurrency}: ${r.ratio.toFixed(2)}×`).join(', ')}`,
  ].join('\n');
  return { text, results, load: { start: loadStart, end: loadavg() } };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const o = parse(process.argv.slice(2));
  const r = await mcpBench(o);
  console.log(r.text);
  if (o.json) writeFileSync(o.json, JSON.stringify(r, null, 2));
}
