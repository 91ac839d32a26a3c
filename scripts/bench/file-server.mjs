#!/usr/bin/env node
/**
 * A bare Node.js file server — the embedded store's HTTP baseline: node:http,
 * one file per path in DIR. GET reads the file and answers it in one write
 * (404 when absent); PUT streams the body to a temp file, fsyncs it and
 * renames it into place (what a durable store must do at least). No auth, no
 * hashing, no metadata, no logging: what serving the same bytes from disk over
 * HTTP costs Node before a store does anything of its own.
 *
 *   node scripts/bench/file-server.mjs PORT DIR
 */
import { open, readFile, rename } from 'node:fs/promises';
import { createServer } from 'node:http';
import { join } from 'node:path';

const [port, dir] = process.argv.slice(2);
let seq = 0;
// One flat directory: the path, percent-encoded, is the file name.
const fileOf = (url) => join(dir, encodeURIComponent(url.split('?')[0]));

async function put(req, res) {
  const file = fileOf(req.url);
  const tmp = `${file}.${process.pid}.${seq++}.tmp`;
  const fh = await open(tmp, 'w');
  try {
    // Each piece written as it arrives: for await reads with backpressure.
    for await (const piece of req) {
      let off = 0;
      while (off < piece.length) off += (await fh.write(piece, off, piece.length - off)).bytesWritten;
    }
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, file);
  res.writeHead(200, { 'content-length': '0' });
  res.end();
}

async function get(req, res) {
  let data;
  try {
    data = await readFile(fileOf(req.url));
  } catch {
    res.writeHead(404, { 'content-length': '0' });
    return void res.end();
  }
  res.writeHead(200, { 'content-length': String(data.length), 'content-type': 'application/octet-stream' });
  res.end(data);
}

const server = createServer({ keepAliveTimeout: 65_000, requestTimeout: 0 }, (req, res) => {
  const work = req.method === 'PUT' ? put(req, res) : req.method === 'GET' ? get(req, res) : Promise.resolve(res.writeHead(200, { 'content-length': '0' }).end());
  work.catch(() => {
    if (!res.headersSent) res.writeHead(500, { 'content-length': '0', connection: 'close' });
    res.end();
  });
});
server.listen(Number(port), '127.0.0.1');
process.on('SIGTERM', () => process.exit(0));
