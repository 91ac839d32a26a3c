#!/usr/bin/env node
/**
 * Throughput of the checksums casket computes on the hot path (every
 * aws-chunked trailer and x-amz-checksum-* header is verified as the body
 * streams, src/auth/checksums.ts), in MB/s on one core, against a floor.
 *
 *   npm run build && node scripts/bench-checksums.mjs [--size 64m] [--runs 5] [--floor 100]
 *
 * This was an assertion in test/auth/checksums.test.ts; on shared cores a
 * wall-clock floor fails for reasons that are not casket's, so it lives
 * here: the median of --runs runs per algorithm, after one warm-up, is
 * printed with SHA-256 from node:crypto as the baseline (the cost every PUT
 * pays anyway), and the exit status is 1 when crc32c or crc64nvme is below
 * the floor.
 */
import { randomBytes } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fmt, median, parseSize, table } from './bench/stats.mjs';

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '..');
const { CHECKSUM_ALGORITHMS, createChecksum } = await import(join(ROOT, 'dist', 'vocabulary', 'checksums.js'));

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : fallback;
};
const size = parseSize(option('size', '64m'));
const runs = Math.max(3, Number(option('runs', '5')));
const floor = Number(option('floor', '100'));
// Fed in 1 MiB pieces, as aws-chunked bodies arrive.
const data = randomBytes(size);
const pieces = [];
for (let i = 0; i < size; i += 1 << 20) pieces.push(data.subarray(i, i + (1 << 20)));

function mbps(algorithm) {
  const c = createChecksum(algorithm);
  const started = performance.now();
  for (const p of pieces) c.update(p);
  c.digest();
  return size / 1e6 / ((performance.now() - started) / 1000);
}

const rows = [];
let failed = false;
for (const algorithm of CHECKSUM_ALGORITHMS) {
  mbps(algorithm); // warm-up
  const result = median(Array.from({ length: runs }, () => mbps(algorithm)));
  const gated = algorithm === 'crc32c' || algorithm === 'crc64nvme';
  if (gated && result < floor) failed = true;
  const verdict = gated ? (result >= floor ? `>= ${floor}: pass` : `< ${floor}: FAIL`) : algorithm === 'sha256' ? 'baseline' : '';
  rows.push([algorithm, fmt(result), verdict]);
}
console.log(`checksums over ${fmt(size / 1e6, 0)} MB in 1 MiB pieces, median of ${runs} runs, one core`);
console.log(table(['algorithm', 'MB/s', 'floor'], rows));
process.exit(failed ? 1 : 0);
