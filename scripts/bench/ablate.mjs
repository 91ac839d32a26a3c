#!/usr/bin/env node
/**
 * Makes a copy of casket's build with one part of a small request's work
 * taken out, for ab.mjs: what a part costs is the A/B of the build with and
 * without it (issue 42: "a cell that still misses: the A/B that shows what
 * each remaining part costs"). A measuring tool, never a way to run casket:
 * each ablated build answers requests it must refuse.
 *
 *   node scripts/bench/ablate.mjs OUT PART [PART ...]    → OUT/dist/cli.js
 *
 * Parts that a flag cannot take out (the request log is --log-level warn,
 * SQLite is --state memory):
 *   signature  SigV4's check: the canonical request, string to sign and HMAC
 *              (the Authorization header is still parsed, the key looked up)
 *   events     the event log's append (src/events/publish.ts)
 *   metrics    prom-client's per-request counters and histograms
 * Each patch must match the build exactly once, or this stops.
 */
import { cpSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './common.mjs';

const PATCHES = {
  signature: [['auth/sigv4.js', 'function checkSignature(req, query, signedHeaders, payloadHash, amzDate, scope, signingKey, provided, presigned) {', '$& return;']],
  events: [['events/publish.js', 'async publish(notice) {', '$& return;']],
  // The request's counters and histograms (a shadowing no-op registry inside the per-request record) and the upstream's.
  metrics: [
    ['server.js', 'const record = (outcome, started, complete, bytesOut, bytesIn) => {', '$& const metrics = { requests: { inc() {} }, duration: { observe() {} }, bytesSent: { inc() {} }, bytesReceived: { inc() {} } };'],
    ['server.js', 'observe: (method, seconds) => metrics.upstream.observe({ method }, seconds),', 'observe: () => {},'],
  ],
};
const [out, ...parts] = process.argv.slice(2);
if (!out || parts.length === 0 || parts.some((p) => !(p in PATCHES))) throw new Error(`usage: ablate.mjs OUT PART [PART ...] (parts: ${Object.keys(PATCHES).join(', ')})`);
rmSync(out, { recursive: true, force: true });
cpSync(join(ROOT, 'dist'), join(out, 'dist'), { recursive: true });
cpSync(join(ROOT, 'package.json'), join(out, 'package.json'));
symlinkSync(join(ROOT, 'node_modules'), join(out, 'node_modules'));
for (const part of parts) {
  for (const [file, find, replace] of PATCHES[part]) {
    const path = join(out, 'dist', file);
    const text = readFileSync(path, 'utf8');
    const at = text.indexOf(find);
    if (at < 0 || text.indexOf(find, at + 1) >= 0) throw new Error(`${part}: "${find}" is not in ${file} exactly once (the build changed: update the patch)`);
    writeFileSync(path, text.slice(0, at) + replace.replace('$&', find) + text.slice(at + find.length));
  }
}
console.log(join(out, 'dist', 'cli.js'));
