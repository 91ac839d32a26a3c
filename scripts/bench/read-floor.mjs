#!/usr/bin/env node
/**
 * The least a 10 KiB read can cost by each way in, on bare node:http: the
 * floor under bench/mcp.mjs's "read_text_file ≤ 1.5× GetObject" ratio
 * (issue 38 item 5). The same clients as the casket cells send the same
 * requests here, and this server does only what each answer cannot do
 * without:
 *
 * - GetObject: check the SigV4 signature (the bench signer's own
 *   computation, signing key cached per day as casket caches it; constant-
 *   time compare), find the object, answer its bytes with ETag,
 *   Content-Type, Content-Length and Last-Modified.
 * - read_text_file: read the JSON-RPC POST, parse it, check the bearer
 *   token (with casket's own token.ts, from dist/: HMAC-SHA256 of its
 *   payload, constant-time compare, expiry), find the object, decode it as UTF-8, count its lines,
 *   and answer the result casket answers — the text and a note in
 *   `content`, and path, etag, lines, read and the text again in
 *   `structuredContent` (both views: docs/design.md §12), written by
 *   casket's own answer-json.ts (the text escaped once, as casket does).
 *
 * No logging, no read stamps, no policy, no metrics: casket's cost above
 * this line is casket's; the two floors' ratio is what the protocols
 * themselves cost against each other on this machine.
 *
 * Objects live in memory; PUT (unchecked, for seeding) stores one.
 *
 *   node scripts/bench/read-floor.mjs PORT CREDENTIALS_FILE
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { answerJson } from '../../dist/mcp/answer-json.js';
import { readToken, tokenHolds } from '../../dist/mcp/token.js';
import { fastSigner } from './signer.mjs';

const [port, credentialsFile] = process.argv.slice(2);
const secrets = new Map(JSON.parse(readFileSync(credentialsFile, 'utf8')).credentials.map((c) => [c.accessKey, c.secretKey]));
const signers = new Map();
const objects = new Map();

function same(a, b) {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The request's SigV4 Authorization recomputed with its own date and signed headers, compared. */
function signed(req, path) {
  const auth = req.headers.authorization ?? '';
  const key = /Credential=([^/]+)\//.exec(auth)?.[1];
  const secret = key && secrets.get(key);
  if (!secret) return false;
  let signer = signers.get(key);
  if (!signer) signers.set(key, (signer = fastSigner({ accessKeyId: key, secretAccessKey: secret })));
  const names = /SignedHeaders=([^,]+)/.exec(auth)?.[1].split(';') ?? [];
  const headers = {};
  for (const n of names) if (n !== 'x-amz-date') headers[n] = req.headers[n];
  const d = req.headers['x-amz-date'] ?? '';
  const ms = Date.UTC(+d.slice(0, 4), +d.slice(4, 6) - 1, +d.slice(6, 8), +d.slice(9, 11), +d.slice(11, 13), +d.slice(13, 15));
  return same(signer.sign(req.method, path, headers, ms).authorization, auth);
}

/** casket's bearer token, checked by casket's own code (src/mcp/token.ts: the payload's HMAC, constant-time, expiry). */
function bearer(req) {
  const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
  const claims = token && readToken(token);
  const secret = claims && secrets.get(claims.accessKeyId);
  return secret && tokenHolds(claims, secret) ? claims : undefined;
}

function body(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function answer(res, status, headers, payload) {
  res.writeHead(status, { ...headers, 'content-length': payload.length });
  res.end(payload);
}

createServer(async (req, res) => {
  const path = req.url ?? '/';
  if (req.method === 'POST' && path === '/_casket/mcp') {
    const raw = await body(req);
    const message = JSON.parse(raw.toString('utf8'));
    if (!bearer(req)) return answer(res, 401, {}, Buffer.alloc(0));
    const p = message.params?.arguments?.path;
    const o = message.method === 'tools/call' && message.params.name === 'read_text_file' && typeof p === 'string' ? objects.get(`/${p}`) : undefined;
    if (!o) return answer(res, 404, {}, Buffer.alloc(0));
    const text = o.data.toString('utf8');
    let total = 0;
    for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) total++;
    const note = `[${p}: etag ${o.etag}, all ${total} lines, a full read]`;
    const result = { content: [{ type: 'text', text }, { type: 'text', text: note }], structuredContent: { path: p, etag: o.etag, lines: { from: 1, to: total, total }, read: 'full', content: text } };
    return answer(res, 200, { 'content-type': 'application/json' }, Buffer.from(answerJson({ jsonrpc: '2.0', id: message.id, result })));
  }
  if (!signed(req, path)) return answer(res, 403, {}, Buffer.alloc(0));
  if (req.method === 'PUT') {
    const data = await body(req);
    const etag = `"${createHash('sha256').update(data).digest('hex')}"`;
    if (path.split('/').length > 2) objects.set(path, { data, etag, modified: new Date().toUTCString() });
    return answer(res, 200, { etag }, Buffer.alloc(0));
  }
  const o = objects.get(path);
  if (req.method !== 'GET' || !o) return answer(res, 404, {}, Buffer.alloc(0));
  answer(res, 200, { etag: o.etag, 'content-type': 'text/plain', 'last-modified': o.modified }, o.data);
}).listen(Number(port), '127.0.0.1');
