#!/usr/bin/env node
/**
 * An A/B of casket arms on one small-request cell (c=8) in front of one
 * upstream, beside the bare node:http proxy (node-proxy.mjs) in the same run:
 * rounds alternate (A B C, C B A, ...), and each target's CPU per request is
 * read from /proc (processes.mjs cpuMs), as issue 42 asks every claim to be
 * measured (docs/performance.md). An arm is a build, a set of casket flags,
 * or both: what one part of the work costs is the A/B of the build with and
 * without it.
 *
 *   node scripts/bench/ab.mjs --upstream URL [--access-key K --secret-key S]
 *        [--op put|get|copy|list|versions] [--rounds N] [--duration S] [--warmup S]
 *        [--profile DIR] [--args NAME='FLAGS'] NAME=CLI [NAME=CLI ...]
 *
 * --op: 4 KiB PutObject (signed body), 4 KiB GetObject, 4 KiB CopyObject, a
 * ListObjectsV2 page of 1,000 keys (default), or ListObjectVersions of the
 * same 1,000 keys in a bucket of its own with versioning Enabled
 * (casket-bench-versions), so the shared bench bucket's versioning is left as
 * it is. --warmup (default 8 s): 4 KiB PUT+GET against each target first,
 * as bench.mjs does.
 *
 * NAME=CLI: a casket arm (its dist/cli.js; copy a build aside to compare it
 * with the working tree's). --args NAME='--state memory' gives that arm
 * casket flags of its own (split on spaces). Each arm's objects are written
 * through it by a first, unprofiled process, then it is started again on the
 * same data dir for the measured rounds, so --profile (node --cpu-prof into
 * DIR/NAME) profiles the measured cell only. Prints JSON: load averages per
 * round, and per target the median CPU per request (µs), req/s, p50 and each
 * round's CPU; each arm's ratio to the proxy.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3Client } from './client.mjs';
import { randomCred } from './common.mjs';
import { startCasket, startNodeProxy, stop, stopAll, trackDir } from './processes.mjs';
import { measure } from './runner.mjs';
import { createBucket, preloadGets, preloadList, s3Target, upstreamArgs } from './targets.mjs';

const CELLS = {
  put: { op: 'PutObject', size: 4096, conc: 8, kind: 'put', payload: 'signed' },
  get: { op: 'GetObject', size: 4096, conc: 8, kind: 'get' },
  copy: { op: 'CopyObject', size: 4096, conc: 8, kind: 'copy' },
  list: { op: 'ListObjectsV2', size: 0, keys: 1000, conc: 8, kind: 'list' },
  versions: { op: 'ListObjectVersions', size: 0, keys: 1000, conc: 8, kind: 'list', versions: true },
};
const o = { op: 'list', rounds: 6, duration: 4, warmup: 8, accessKey: 'test', secretKey: 'test', builds: [], args: new Map() };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  const next = () => argv[++i];
  if (a === '--upstream') o.upstream = next();
  else if (a === '--access-key') o.accessKey = next();
  else if (a === '--secret-key') o.secretKey = next();
  else if (a === '--op') o.op = next();
  else if (a === '--rounds') o.rounds = Number(next());
  else if (a === '--duration') o.duration = Number(next());
  else if (a === '--warmup') o.warmup = Number(next());
  else if (a === '--profile') o.profile = next();
  else if (a === '--versions') o.op = 'versions';
  else if (a === '--args') {
    const v = next();
    o.args.set(v.slice(0, v.indexOf('=')), v.slice(v.indexOf('=') + 1).split(' ').filter(Boolean));
  } else if (/^[A-Za-z0-9_-]+=/.test(a)) o.builds.push([a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]);
  else throw new Error(`unknown argument ${a} (see the comment at the top of this file)`);
}
const cell = CELLS[o.op];
if (!o.upstream || o.builds.length === 0 || !cell) throw new Error('usage: ab.mjs --upstream URL [--op put|get|copy|list|versions] NAME=CLI [NAME=CLI ...]');
for (const name of o.args.keys()) if (!o.builds.some(([n]) => n === name)) throw new Error(`--args names ${name}, which is no arm`);

const up = { accessKeyId: o.accessKey, secretAccessKey: o.secretKey };
const tmp = mkdtempSync(join(tmpdir(), 'casket-ab-'));
trackDir(tmp);
const admin = randomCred('ADMIN');
const credentialsFile = join(tmp, 'credentials.json');
writeFileSync(credentialsFile, JSON.stringify({ credentials: [{ accessKey: admin.accessKeyId, secretKey: admin.secretAccessKey }] }));
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => void stopAll().then(() => process.exit(1)));

/** What the cell reads must be there first: the list's keys, the GET's and the copy's sources. */
async function preload(client, prefix, bucket) {
  if (cell.kind === 'list') await preloadList(client, `${prefix}`, 1000, bucket);
  else if (cell.kind === 'get' || cell.kind === 'copy') await preloadGets(client, prefix, cell.size, cell.conc);
}

const bucket = cell.versions ? 'casket-bench-versions' : undefined;
try {
  const direct = new S3Client(o.upstream, up, {});
  await createBucket(direct, bucket);
  if (bucket) {
    const versioning = Buffer.from('<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Enabled</Status></VersioningConfiguration>');
    const res = await direct.request('PUT', `/${bucket}?versioning`, { body: versioning });
    if (res.status !== 200) throw new Error(`PutBucketVersioning: HTTP ${res.status}`);
  }
  await preload(direct, 'd/', bucket);
  direct.close();
  mkdirSync(join(tmp, 'node-proxy'));
  const proxy = await startNodeProxy({ dir: join(tmp, 'node-proxy'), upstreamUrl: o.upstream });
  const targets = [s3Target('node', { url: proxy.url, cred: up, prefix: 'o/', getPrefix: 'd/', pid: proxy.pid, ...(bucket && { bucket }) })];
  for (const [name, cli] of o.builds) {
    const base = { cli, dataDir: join(tmp, `casket-${name}`), credentialsFile, extraArgs: [...upstreamArgs(o.upstream, up), ...(o.args.get(name) ?? [])] };
    const loader = await startCasket({ ...base, logFile: join(tmp, `casket-${name}-load.log`) });
    const client = new S3Client(loader.url, admin, {});
    await createBucket(client, bucket).catch(() => {});
    await preload(client, `c${name}/`, bucket);
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
  // Warm each target (a cold Node process is measured compiling: bench.mjs --warmup).
  for (const t of targets) {
    await t.warm(o.warmup);
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
  console.log(JSON.stringify({ op: cell.op, loads, targets: out }, null, 1));
} finally {
  await stopAll();
}
