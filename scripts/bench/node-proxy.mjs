#!/usr/bin/env node
/**
 * A bare Node.js reverse proxy — the bench's `node` baseline: what
 * any proxy written for Node pays before it does anything of its own.
 * node:http server and client, a keep-alive agent, bodies piped both ways
 * with backpressure, headers passed as received (Host too, so the client's
 * SigV4 signature still holds upstream, as nginx's `proxy_set_header Host
 * $http_host`). No auth, no hashing, no logging, no metrics: casket's cost
 * above this line is casket's; below it, Node's.
 *
 *   node scripts/bench/node-proxy.mjs PORT UPSTREAM_URL
 */
import { Agent, createServer, request } from 'node:http';

const [port, upstreamUrl] = process.argv.slice(2);
const upstream = new URL(upstreamUrl);
const agent = new Agent({ keepAlive: true, maxSockets: 256 });
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

const server = createServer({ keepAliveTimeout: 65_000, requestTimeout: 0 }, (req, res) => {
  const out = request({ agent, host: upstream.hostname, port: upstream.port || 80, method: req.method, path: req.url, headers: endToEnd(req.rawHeaders) }, (up) => {
    res.writeHead(up.statusCode ?? 502, endToEnd(up.rawHeaders));
    up.pipe(res);
  });
  out.on('error', () => {
    if (!res.headersSent) res.writeHead(502, { 'content-length': '0', connection: 'close' });
    res.end();
  });
  req.pipe(out);
});
server.listen(Number(port), '127.0.0.1');
process.on('SIGTERM', () => process.exit(0));
