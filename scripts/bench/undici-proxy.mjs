#!/usr/bin/env node
/**
 * A bare Node.js reverse proxy on undici — the bench's `undici` baseline,
 * beside node-proxy.mjs: node:http server, undici (the Node.js project's own
 * HTTP client) to the upstream, `Pool.stream` writing the upstream body
 * straight into the server response with backpressure. Headers passed as
 * received (Host too, so the client's SigV4 signature still holds upstream).
 * No auth, no hashing, no logging: the floor of a Node proxy with the fastest
 * client Node has.
 *
 *   node scripts/bench/undici-proxy.mjs PORT UPSTREAM_URL
 */
import { createServer } from 'node:http';
import { Pool } from 'undici';

const [port, upstreamUrl] = process.argv.slice(2);
const pool = new Pool(new URL(upstreamUrl).origin, { connections: 256, keepAliveTimeout: 60_000, pipelining: 1 });
// Hop-by-hop (RFC 9110 §7.6.1): never forwarded. Expect is answered here, by Node.
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'expect']);

function endToEnd(raw) {
  const headers = {};
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    if (!HOP.has(name)) headers[name] = raw[i + 1];
  }
  return headers;
}

function responseHeaders(h) {
  for (const name of HOP) delete h[name];
  return h;
}

const server = createServer({ keepAliveTimeout: 65_000, requestTimeout: 0 }, (req, res) => {
  const hasBody = req.headers['content-length'] !== undefined ? req.headers['content-length'] !== '0' : req.headers['transfer-encoding'] !== undefined;
  pool.stream(
    { method: req.method, path: req.url, headers: endToEnd(req.rawHeaders), body: hasBody ? req : null, opaque: res },
    ({ statusCode, headers, opaque }) => {
      opaque.writeHead(statusCode, responseHeaders(headers));
      return opaque;
    },
    (err) => {
      if (!err) return;
      if (!res.headersSent) res.writeHead(502, { 'content-length': '0', connection: 'close' });
      res.end();
    },
  );
});
server.listen(Number(port), '127.0.0.1');
process.on('SIGTERM', () => process.exit(0));
