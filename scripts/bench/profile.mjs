/** The profile phase: casket under node --cpu-prof, summarised per part and against the bare node proxy. Part of scripts/bench.mjs (the runner). */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { S3Client } from './client.mjs';
import { startCasket, startMoto, startNodeProxy, stop } from './processes.mjs';
import { fmt, sizeName } from './stats.mjs';
import { formatSummary, summarise } from '../cpuprofile-summary.mjs';
import { byArm, diff } from '../cpuprofile-arms.mjs';
import { MiB, log, mkdirp, paths } from './common.mjs';
import { measure } from './runner.mjs';
import { createBucket, preloadGets, s3Target, upstreamArgs } from './targets.mjs';

// ---------------------------------------------------------------- profile

export async function profile(opts, env) {
  mkdirSync(opts.profile, { recursive: true });
  const out = {};
  const conc = 8;
  const backends = [{ name: 'embedded' }];
  let moto;
  // Every upstream the run found (env.upstreams: empty unless the upstream target is selected).
  for (const up of env.upstreams ?? []) {
    try {
      let url = up.url;
      if (up.name === 'moto') {
        moto = await startMoto({ dir: mkdirp(join(env.tmp, 'moto-prof')) });
        url = moto.url;
      }
      const direct = new S3Client(url, up.cred, { signer: opts.signer });
      await createBucket(direct);
      direct.close();
      backends.push({ name: up.name, args: upstreamArgs(url, up.cred), url, cred: up.cred });
    } catch (e) {
      log(`    ${up.name} not available for profiling: ${e.message}`);
    }
  }
  try {
    for (const backend of backends) {
      for (const size of opts.profileSizes) {
        // PutObject once per body form asked for (--payloads; signed by default).
        // CopyObject in front of an upstream too: casket copies through itself (README, Performance).
        const runs = [...(opts.payloads ?? ['signed']).map((payload) => ({ op: 'PutObject', payload })), { op: 'GetObject' }, ...(backend.url ? [{ op: 'CopyObject' }] : [])];
        for (const { op, payload } of runs) {
          const form = payload && payload !== 'signed' ? `-${payload}` : '';
          const label = `${backend.name}-${{ PutObject: 'put', GetObject: 'get', CopyObject: 'copy' }[op]}${form}-${sizeName(size).replace(' ', '').toLowerCase()}`;
          const dir = join(opts.profile, label);
          rmSync(dir, { recursive: true, force: true });
          mkdirSync(dir, { recursive: true });
          let casket;
          try {
            casket = await startCasket({
              cli: paths.cli, dataDir: join(env.tmp, `casket-prof-${label}`), credentialsFile: env.credentialsFile, logFile: join(env.tmp, `casket-prof-${label}.log`),
              extraArgs: [...(backend.args ?? []), ...opts.casketArgs], nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`],
            });
          } catch (e) {
            log(`    ${label}: not available — ${e.message}`);
            out[label] = { error: e.message };
            continue;
          }
          try {
            const client = new S3Client(casket.url, env.admin, { signer: opts.signer, maxSockets: 1 });
            await createBucket(client);
            if (op !== 'PutObject') await preloadGets(client, 'p/', size, conc);
            client.close();
            const target = s3Target('casket', { url: casket.url, cred: env.admin, prefix: 'p/', pid: casket.pid, signer: opts.signer });
            const cell = { op, size, conc, kind: { PutObject: 'put', GetObject: 'get', CopyObject: 'copy' }[op], ...(payload && { payload }) };
            const { m, window } = await profiledRun(target, cell, casket.pid, opts);
            log(`    profiled ${label} c=${conc}: ${fmt(m.reqPerS)} req/s, ${fmt(m.mibPerS)} MiB/s, p50 ${fmt(m.p50, 2)} ms, casket ${fmt(m.serverCpuUsPerOp, 0)} µs CPU/op`);
            out[label] = { measured: m, window };
          } finally {
            await stop(casket.child);
          }
          // In front of an upstream, the bare node:http proxy is profiled in the same cell, so casket's
          // extra shows function by function (vs-node-proxy.txt): what the floor pays, and what casket adds.
          if (backend.url && (!payload || payload === 'signed' || payload === 'unsigned')) {
            try {
              out[label].nodeProxy = await profileNodeProxy(backend, { op, size, conc, label, dir, payload }, out[label], opts, env);
            } catch (e) {
              log(`    ${label}: the bare proxy's profile failed — ${e.message}`);
            }
          }
          const file = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).map((f) => join(dir, f))[0];
          if (!file) {
            out[label].error = 'no .cpuprofile written';
            continue;
          }
          const sum = summarise(JSON.parse(readFileSync(file, 'utf8')), 30);
          const m = out[label].measured;
          const text = formatSummary(sum, `casket ${label}, c=${conc}: ${fmt(m.reqPerS)} req/s, ${fmt(m.serverCpuUsPerOp, 0)} µs CPU/op (${file})`);
          writeFileSync(join(dir, 'summary.txt'), `${text}\n`);
          Object.assign(out[label], { file, summary: sum, text });
        }
      }
    }
  } finally {
    if (moto) await stop(moto.child);
  }
  return out;
}

/** Warm-up (--warmup), then one measured run whose span on the monotonic clock (µs, as V8's profile timestamps) picks the profile's samples. */
export async function profiledRun(target, cell, pid, opts) {
  if (opts.warmup > 0) await target.warm(opts.warmup);
  const p = await target.prepare(cell);
  const startUs = Number(process.hrtime.bigint() / 1000n);
  const m = await measure(p.workers, opts.profileDuration, pid);
  const endUs = Number(process.hrtime.bigint() / 1000n);
  p.done();
  return { m, window: { startUs, endUs, puts: m.requests, conc: cell.conc } };
}

/** The bare node:http proxy (bench/node-proxy.mjs) under --cpu-prof in casket's cell, and the two profiles side by side per request. */
export async function profileNodeProxy(backend, { op, size, conc, label, dir, payload }, casketRun, opts, env) {
  const proxyDir = join(dir, 'node-proxy');
  mkdirSync(proxyDir, { recursive: true });
  const proxy = await startNodeProxy({ dir: mkdirp(join(env.tmp, `node-proxy-prof-${label}`)), upstreamUrl: backend.url, nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${proxyDir}`] });
  let run;
  try {
    if (op !== 'PutObject') {
      const client = new S3Client(proxy.url, backend.cred, { signer: opts.signer, maxSockets: 1 });
      await preloadGets(client, 'q/', size, conc);
      client.close();
    }
    const target = s3Target('node', { url: proxy.url, cred: backend.cred, prefix: 'q/', pid: proxy.pid, signer: opts.signer });
    run = await profiledRun(target, { op, size, conc, kind: { PutObject: 'put', GetObject: 'get', CopyObject: 'copy' }[op], ...(payload && { payload }) }, proxy.pid, opts);
  } finally {
    await stop(proxy.child);
  }
  const profileIn = (d) => join(d, readdirSync(d).find((f) => f.endsWith('.cpuprofile')));
  const arms = new Map();
  for (const [name, file, window] of [['casket', profileIn(dir), casketRun.window], ['node-proxy', profileIn(proxyDir), run.window]]) {
    for (const [, a] of byArm(JSON.parse(readFileSync(file, 'utf8')), [{ ...window, arm: name }])) arms.set(name, a);
  }
  const c = arms.get('casket');
  const n = arms.get('node-proxy');
  const lines = [
    `== ${label}, c=${conc}: casket and the bare node:http proxy in front of ${backend.name}, the measured runs only (after ${opts.warmup} s of warm-up), main-thread time per request`,
    `casket: ${fmt(c.busy / c.puts, 0)} µs busy (garbage collector ${fmt((c.modules.get('(garbage collector)') ?? 0) / c.puts, 0)}); node-proxy: ${fmt(n.busy / n.puts, 0)} µs busy (garbage collector ${fmt((n.modules.get('(garbage collector)') ?? 0) / n.puts, 0)}); /proc CPU per request: casket ${fmt(casketRun.measured.serverCpuUsPerOp, 0)}, node-proxy ${fmt(run.m.serverCpuUsPerOp, 0)}`,
  ];
  // By part (cpuprofile-arms.mjs PARTS): each sample counts for the innermost casket code on its stack.
  lines.push('-- by part of the work, µs per request: casket · node-proxy · difference');
  for (const r of diff(arms, 'casket', 'node-proxy', 'parts', 30)) lines.push(`${r.a.toFixed(1).padStart(8)} ${r.b.toFixed(1).padStart(8)} ${(r.a - r.b).toFixed(1).padStart(8)}  ${r.n}`);
  for (const kind of ['modules', 'self']) {
    lines.push(`-- self time by ${kind === 'self' ? 'function' : 'module'}, µs per request: casket · node-proxy · difference`);
    for (const r of diff(arms, 'casket', 'node-proxy', kind, 30)) lines.push(`${r.a.toFixed(1).padStart(8)} ${r.b.toFixed(1).padStart(8)} ${(r.a - r.b).toFixed(1).padStart(8)}  ${r.n}`);
  }
  const text = lines.join('\n');
  writeFileSync(join(dir, 'vs-node-proxy.txt'), `${text}\n`);
  log(`    profiled node-proxy in the same cell: ${fmt(run.m.reqPerS)} req/s, ${fmt(run.m.serverCpuUsPerOp, 0)} µs CPU/op (${join(dir, 'vs-node-proxy.txt')})`);
  return { measured: run.m, text };
}
