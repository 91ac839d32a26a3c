#!/usr/bin/env node
/**
 * An A/B of casket builds on the bench's ListObjectsV2 cell (one page of
 * 1,000 keys, c=8) in front of one upstream, beside the bare node:http proxy
 * (node-proxy.mjs) in the same run: rounds alternate (A B C, C B A, ...), and
 * each target's CPU per request is read from /proc (processes.mjs cpuMs), as
 * issue 42 asks every claim to be measured (docs/performance.md).
 *
 *   node scripts/bench/list-ab.mjs --upstream URL [--access-key K --secret-key S]
 *        [--rounds N] [--duration S] [--profile DIR] [--versions] NAME=CLI [NAME=CLI ...]
 *
 * --versions: ListObjectVersions of the same 1,000 keys instead, in a bucket
 * of its own with versioning Enabled (casket-bench-versions), so the shared
 * bench bucket's versioning is left as it is.
 *
 * NAME=CLI: a casket build to measure (its dist/cli.js; copy a build aside
 * to compare it with the working tree's). Each casket's 1,000 keys are
 * written through it by a first, unprofiled process, then it is started
 * again on the same data dir for the measured rounds, so --profile (node
 * --cpu-prof into DIR/NAME) profiles listings only. Prints JSON: load
 * averages per round, and per target the median CPU per request (µs),
 * req/s, p50 and each round's CPU; casket's ratio to the proxy.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3Client } from './client.mjs';
import { randomCred } from './common.mjs';
import { startCasket, startNodeProxy, stop, stopAll, trackDir } from './processes.mjs';
import { measure } from './runner.mjs';
import { createBucket, preloadList, s3Target, upstreamArgs } from './targets.mjs';

const o = { rounds: 6, duration: 4, accessKey: 'test', secretKey: 'test', builds: [] };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  const next = () => argv[++i];
  if (a === '--upstream') o.upstream = next();
  else if (a === '--access-key') o.accessKey = next();
  else if (a === '--secret-key') o.secretKey = next();
  else if (a === '--rounds') o.rounds = Number(next());
  else if (a === '--duration') o.duration = Number(next());
  else if (a === '--profile') o.profile = next();
  else if (a === '--versions') o.versions = true;
  else if (/^[A-Za-z0-9_-]+=/.test(a)) o.builds.push([a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]);
  else throw new Error(`unknown argument ${a} (see the comment at the top of this file)`);
}
if (!o.upstream || o.builds.length === 0) throw new Error('usage: list-ab.mjs --upstream URL NAME=CLI [NAME=CLI ...]');

const up = { accessKeyId: o.accessKey, secretAccessKey: o.secretKey };
const tmp = mkdtempSync(join(tmpdir(), 'casket-list-ab-'));
trackDir(tmp);
const admin = randomCred('ADMIN');
const credentialsFile = join(tmp, 'credentials.json');
writeFileSync(credentialsFile, JSON.stringify({ credentials: [{ accessKey: admin.accessKeyId, secretKey: admin.secretAccessKey }] }));
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => void stopAll().then(() => process.exit(1)));

const bucket = o.versions ? 'casket-bench-versions' : undefined;
try {
  const direct = new S3Client(o.upstream, up, {});
  await createBucket(direct, bucket);
  if (bucket) {
    const versioning = Buffer.from('<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Enabled</Status></VersioningConfiguration>');
    const res = await direct.request('PUT', `/${bucket}?versioning`, { body: versioning });
    if (res.status !== 200) throw new Error(`PutBucketVersioning: HTTP ${res.status}`);
  }
  await preloadList(direct, 'd/', 1000, bucket);
  direct.close();
  mkdirSync(join(tmp, 'node-proxy'));
  const proxy = await startNodeProxy({ dir: join(tmp, 'node-proxy'), upstreamUrl: o.upstream });
  const targets = [s3Target('node', { url: proxy.url, cred: up, prefix: 'o/', getPrefix: 'd/', pid: proxy.pid, ...(bucket && { bucket }) })];
  for (const [name, cli] of o.builds) {
    const base = { cli, dataDir: join(tmp, `casket-${name}`), credentialsFile, extraArgs: upstreamArgs(o.upstream, up) };
    const loader = await startCasket({ ...base, logFile: join(tmp, `casket-${name}-load.log`) });
    const client = new S3Client(loader.url, admin, {});
    await createBucket(client, bucket).catch(() => {});
    await preloadList(client, `c${name}/`, 1000, bucket);
    client.close();
    await stop(loader.child);
    let nodeArgs = [];
    if (o.profile) {
      mkdirSync(join(o.profile, name), { recursive: true });
      nodeArgs = ['--cpu-prof', `--cpu-prof-dir=${join(o.profile, name)}`];
    }
    const casket = await startCasket({ ...base, logFile: join(tmp, `casket-${name}.log`), nodeArgs });
    targets.push(s3Target(name, { url: casket.url, cred: admin, prefix: `c${name}/`, pid: casket.pid, ...(bucket && { bucket }) }));
  }
  const cell = { op: o.versions ? 'ListObjectVersions' : 'ListObjectsV2', size: 0, keys: 1000, conc: 8, kind: 'list', versions: o.versions };
  for (const t of targets) {
    const p = await t.prepare(cell);
    await measure(p.workers, 3, p.pid);
    await p.done?.();
  }
  const runs = Object.fromEntries(targets.map((t) => [t.name, []]));
  const loads = [loadavg()[0]];
  for (let r = 0; r < o.rounds; r++) {
    for (const t of r % 2 ? [...targets].reverse() : targets) {
      const p = await t.prepare(cell);
      const m = await measure(p.workers, o.duration, p.pid);
      await p.done?.();
      runs[t.name].push(m);
      process.stderr.write(`round ${r} ${t.name}: ${m.serverCpuUsPerOp.toFixed(0)} µs CPU/request, ${m.reqPerS.toFixed(1)} req/s${m.errors ? `, ${m.errors} errors (${m.lastError})` : ''}\n`);
    }
    loads.push(loadavg()[0]);
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const out = {};
  for (const [name, ms] of Object.entries(runs)) {
    out[name] = { cpuUs: median(ms.map((m) => m.serverCpuUsPerOp)), reqPerS: median(ms.map((m) => m.reqPerS)), p50: median(ms.map((m) => m.p50)), rounds: ms.map((m) => Math.round(m.serverCpuUsPerOp)) };
    if (name !== 'node') out[name].vsNode = out[name].cpuUs / out.node.cpuUs;
  }
  console.log(JSON.stringify({ loads, targets: out }, null, 1));
} finally {
  await stopAll();
}
