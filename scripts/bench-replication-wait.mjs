#!/usr/bin/env node
/**
 * What waiting for a Redis replica costs a conditional PutObject (docs/design.md §11):
 * two caskets on the embedded store sharing one Redis primary that
 * has one replica — one with plain `--redis-url`, one that also waits for the
 * replica on every state change (`--redis-min-replicas 1`, what
 * `--redis-sentinels` does by default) — driven in alternating runs by the
 * same load: c workers, each PUTting 4 KiB to a key of its own with If-Match
 * on the version it made last. As an agent (its read stamp is read, waited
 * for, before the commit, and its new stamp and the write log after: two
 * WAITs) and with a person's key (the write log only: one WAIT). Prints
 * requests per second, the ratio, and the load average.
 *
 *   npm run build && node scripts/bench-replication-wait.mjs [--duration S] [--runs N] [--concurrency 1,8]
 *
 * Needs redis-server. Every process it starts is ended by its PID.
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { S3Client } from './bench/client.mjs';
import { freePort, startCasket, stop, stopAll } from './bench/processes.mjs';
import { median } from './bench/stats.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const DURATION_MS = Number(option('--duration', '3')) * 1000;
const RUNS = Math.max(3, Number(option('--runs', '3')));
const CONCURRENCY = option('--concurrency', '1,8').split(',').map(Number);
const SIZE = 4096;
const CLI = resolve(import.meta.dirname, '../dist/cli.js');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const dir = mkdtempSync(join(tmpdir(), 'casket-bench-wait-'));
const redisProcs = [];

async function redisServer(port, extra = []) {
  // In the temp dir: a replica writes the RDB its primary sends it to its working directory.
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extra], { stdio: 'ignore' });
  redisProcs.push(proc);
  for (let i = 0; i < 200; i++) {
    try {
      if (execFileSync('redis-cli', ['-p', String(port), 'PING'], { stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim() === 'PONG') return;
    } catch {}
    await sleep(50);
  }
  throw new Error(`redis-server on ${port} did not start`);
}

function cred(prefix) {
  return { accessKeyId: `${prefix}${randomBytes(6).toString('hex').toUpperCase()}`, secretAccessKey: randomBytes(24).toString('base64url') };
}

/** One run: `conc` workers PUT If-Match their own last version for DURATION_MS. */
async function run(url, creds, bucket, conc) {
  const clients = creds.slice(0, conc).map((c) => new S3Client(url, c));
  let ops = 0;
  let failures = 0;
  const deadline = Date.now() + DURATION_MS;
  await Promise.all(
    clients.map(async (client, w) => {
      const key = `/${bucket}/w${w}-${randomBytes(4).toString('hex')}`;
      let etag = (await client.request('PUT', key, { body: randomBytes(SIZE), headers: { 'if-none-match': '*' } })).headers.etag;
      while (Date.now() < deadline) {
        const r = await client.request('PUT', key, { body: randomBytes(SIZE), headers: { 'if-match': etag } });
        if (r.status !== 200) {
          failures++;
          if (failures > 100) throw new Error(`PUT answered ${r.status}: ${r.body}`);
          continue;
        }
        etag = r.headers.etag;
        ops++;
      }
    }),
  );
  for (const c of clients) c.close();
  return ops / (DURATION_MS / 1000);
}

try {
  const primary = await freePort();
  const replica = await freePort();
  await redisServer(primary);
  await redisServer(replica, ['--replicaof', '127.0.0.1', String(primary)]);
  for (let i = 0; i < 200 && !execFileSync('redis-cli', ['-p', String(primary), 'INFO', 'replication']).toString().includes('state=online'); i++) await sleep(50);

  const admin = cred('ADMIN');
  const agents = Array.from({ length: Math.max(...CONCURRENCY) }, (_, i) => ({ name: `bench${i}`, ...cred(`AGENT${i}`) }));
  const credentialsFile = join(dir, 'credentials.json');
  writeFileSync(
    credentialsFile,
    JSON.stringify({ credentials: [{ accessKey: admin.accessKeyId, secretKey: admin.secretAccessKey, admin: true }, ...agents.map((a) => ({ accessKey: a.accessKeyId, secretKey: a.secretAccessKey, agent: a.name }))] }),
    { mode: 0o600 },
  );
  const redisArgs = ['--state', 'redis', '--redis-url', `redis://127.0.0.1:${primary}`, '--fsync', 'false'];
  const caskets = {
    plain: await startCasket({ cli: CLI, dataDir: join(dir, 'plain'), credentialsFile, logFile: join(dir, 'plain.log'), extraArgs: redisArgs }),
    wait: await startCasket({ cli: CLI, dataDir: join(dir, 'wait'), credentialsFile, logFile: join(dir, 'wait.log'), extraArgs: [...redisArgs, '--redis-min-replicas', '1'] }),
  };
  for (const c of Object.values(caskets)) {
    const r = await new S3Client(c.url, admin).request('PUT', '/bench');
    if (r.status !== 200) throw new Error(`CreateBucket answered ${r.status}`);
  }
  // Warm both up (JIT) before anything is measured.
  for (const c of Object.values(caskets)) await run(c.url, agents, 'bench', 8);

  console.log(`4 KiB PutObject with If-Match, embedded store, Redis primary + 1 replica; ${RUNS} alternating runs of ${DURATION_MS / 1000} s, medians`);
  console.log('| writer | c | --redis-url (req/s) | + wait for 1 replica (req/s) | ratio |');
  console.log('|---|---|---|---|---|');
  for (const who of ['agent', 'person']) {
    const creds = who === 'agent' ? agents : agents.map(() => admin);
    for (const conc of CONCURRENCY) {
      const plain = [];
      const wait = [];
      for (let i = 0; i < RUNS; i++) {
        plain.push(await run(caskets.plain.url, creds, 'bench', conc));
        wait.push(await run(caskets.wait.url, creds, 'bench', conc));
      }
      const p = median(plain);
      const w = median(wait);
      console.log(`| ${who} | ${conc} | ${p.toFixed(0)} | ${w.toFixed(0)} | ${(w / p).toFixed(2)}× |`);
    }
  }
  console.log(`load average ${loadavg().map((x) => x.toFixed(2)).join(' ')} (${execFileSync('uptime').toString().trim()})`);
  await stop(caskets.plain);
  await stop(caskets.wait);
} finally {
  await stopAll();
  for (const p of redisProcs) if (p.exitCode === null && p.signalCode === null) process.kill(p.pid, 'SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}
