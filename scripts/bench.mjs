#!/usr/bin/env node
/**
 * What casket costs, against the direct path, in one run (README: Performance).
 *
 *   npm run bench -- [options]          (builds, then runs this file)
 *   node scripts/bench.mjs --quick      (about 4 minutes on 2 cores, with RGW)
 *
 * Method. Every figure is measured beside a baseline in the same run, the two
 * alternating (A B, B A, A B, ...) so drift (page cache, CPU frequency,
 * moto's growing memory) hits both; each cell is run `--runs` times (≥ 3)
 * for `--duration` seconds after one unmeasured warm-up, and the table shows
 * medians over runs of req/s, MiB/s, p50 and p99 latency, and the ratio to
 * the baseline. Baselines:
 * - embedded store: the raw cost of the disk — write + fsync + rename of the
 *   same bytes in a directory next to casket's data dir (GET: read the file
 *   back) — and SHA-256 of the same bytes on this CPU (one core);
 * - upstream (moto, and Ceph RGW: --rgw, CASKET_BENCH_RGW_URL, or found
 *   answering on 127.0.0.1:18080): the upstream direct, nginx as a plain
 *   streaming reverse proxy to the same upstream (the floor any proxy pays),
 *   and `node`, a bare Node.js pass-through proxy (bench/node-proxy.mjs: the
 *   floor any proxy written for Node pays); casket → upstream is compared
 *   with all three, side by side.
 * PutObject bodies go in the forms clients send (payload.mjs): signed hex,
 * UNSIGNED-PAYLOAD, and the SDK's aws-chunked with a CRC32 trailer; every
 * form is sent to the baselines too, unless the upstream refuses it (said in
 * the output; the baselines then send the nearest form it accepts).
 * The load generator signs its own requests (signer.mjs: a SigV4 signer
 * checked against @smithy/signature-v4 at start, signing key cached per day),
 * uses one keep-alive socket per worker, sends pre-hashed bodies from a pool,
 * and reports its own CPU per request so its share of the 2 cores is visible.
 * The server's CPU per request (casket, nginx incl. workers, moto) is read
 * from /proc/<pid>/stat.
 *
 * Everything listens on 127.0.0.1; every process started here is stopped by
 * PID at the end, on error and on SIGINT/SIGTERM; temp dirs are removed
 * (unless --keep).
 *
 * This file is the runner: main() (which phases run against which targets,
 * in order) and the process lifecycle. Each part lives in a file of its own
 * under scripts/bench/: options.mjs, common.mjs, runner.mjs (the measuring
 * loop), targets.mjs, contended.mjs, big-object.mjs, mcp.mjs, profile.mjs,
 * goals.mjs, output.mjs.
 */
import { cpSync, existsSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { S3Client } from './bench/client.mjs';
import { checkFastSigner } from './bench/signer.mjs';
import { memory, NotAvailable, startCasket, startFileServer, startMoto, startNginx, startNodeProxy, stop, stopAll, trackDir } from './bench/processes.mjs';
import { sizeName } from './bench/stats.mjs';
import { mcpBench } from './bench/mcp.mjs';
import { bigObject } from './bench/big-object.mjs';
import { GOAL_CONC, ROOT, findUpstreams, log, mkdirp, paths, payloadsFor, randomCred } from './bench/common.mjs';
import { contended, summariseContended, supportsIfMatch } from './bench/contended.mjs';
import { goals, hashCosts } from './bench/goals.mjs';
import { parseOptions } from './bench/options.mjs';
import { print } from './bench/output.mjs';
import { profile } from './bench/profile.mjs';
import { measure, runCell } from './bench/runner.mjs';
import { createBucket, diskTarget, formProber, planForm, preloadGets, preloadList, s3Target, shaTarget, upstreamArgs } from './bench/targets.mjs';

// ---------------------------------------------------------------- main

async function main() {
  const opts = parseOptions(process.argv.slice(2));
  if (!existsSync(paths.cli)) throw new Error(`${paths.cli} not found: run npm run build first (npm run bench does)`);
  await checkFastSigner();
  const tmp = mkdtempSync(join(opts.tmpDir ?? tmpdir(), 'casket-bench-'));
  if (!opts.keep) trackDir(tmp);
  else log(`temp dir (kept): ${tmp}`);
  // Run a snapshot of dist/: a rebuild in the working tree during the run
  // must not change (or half-write) the casket under test.
  const snapshot = join(tmp, 'casket-build');
  cpSync(join(ROOT, 'dist'), join(snapshot, 'dist'), { recursive: true });
  cpSync(join(ROOT, 'package.json'), join(snapshot, 'package.json'));
  symlinkSync(join(ROOT, 'node_modules'), join(snapshot, 'node_modules'), 'dir');
  paths.cli = join(snapshot, 'dist', 'cli.js');

  // Credentials: one admin key for the throughput phases, agents for the contended one.
  const admin = randomCred('BENCHADMIN');
  let agents;
  if (opts.credentials) {
    const doc = JSON.parse(readFileSync(opts.credentials, 'utf8'));
    agents = doc.credentials.filter((c) => c.agent).map((c) => ({ accessKeyId: c.accessKey, secretAccessKey: c.secretKey, agent: c.agent }));
    if (agents.length < 2) throw new Error(`${opts.credentials}: the contended phase needs at least 2 credentials bound to agents`);
  } else {
    agents = Array.from({ length: opts.agents }, (_, i) => ({ ...randomCred(`BENCHAGENT${i}`), agent: `agent-${i}` }));
  }
  const credentialsFile = join(tmp, 'credentials.json');
  writeFileSync(
    credentialsFile,
    JSON.stringify({ credentials: [{ accessKey: admin.accessKeyId, secretKey: admin.secretAccessKey, admin: true }, ...agents.map((a) => ({ accessKey: a.accessKeyId, secretKey: a.secretAccessKey, agent: a.agent }))] }),
    { mode: 0o600 },
  );
  const env = { tmp, admin, agents, credentialsFile };

  let commit = '';
  try {
    commit = execFileSync('git', ['-C', ROOT, 'describe', '--always', '--dirty'], { encoding: 'utf8' }).trim();
  } catch {}
  const report = {
    meta: { date: new Date().toISOString(), commit, loadAtStart: loadavg(), node: process.version, cpu: cpus()[0]?.model, cores: cpus().length, argv: process.argv.slice(2), options: { ...opts, credentials: opts.credentials ? '(file)' : undefined, rgwSecretKey: undefined, explicit: undefined } },
    cells: [], unavailable: [], notes: [], refusals: [], contended: [], big: undefined, bigUpstream: [], profile: undefined, goals: [], upstreams: [],
  };
  const phases = new Set(opts.phases);
  const sizes = opts.sizes;
  const conc = opts.concurrency;
  const maxConc = Math.max(...conc);
  const quickConc = conc.includes(GOAL_CONC) ? GOAL_CONC : maxConc;

  // Which upstreams this run measures, said before any cell runs.
  let upstreams = [];
  if (opts.targets.includes('upstream')) {
    const { found, missing } = await findUpstreams(opts);
    upstreams = found;
    report.upstreams = found.map((u) => ({ name: u.name, how: u.how, url: u.url, pids: u.pids }));
    for (const m of missing) report.unavailable.push(m);
    log(`upstreams found: ${found.length ? found.map((u) => `${u.name} (${u.how}${u.pids ? `; CPU of pids ${u.pids.join(',')}` : ''})`).join(', ') : 'none'}`);
    for (const m of missing) log(`upstream not found: ${m.what} — ${m.reason}`);
  }
  env.upstreams = upstreams;

  const addCell = (group, cell, summary, ref) => report.cells.push({ group, ...cell, ref, load: cell.load, results: summary });

  // ------------------------------------------------------------ embedded
  const throughputPhases = ['put', 'get', 'copy', 'cond', 'contended'].some((x) => phases.has(x));
  if (opts.targets.includes('embedded') && throughputPhases) {
    log('== embedded store');
    const casket = await startCasket({ cli: paths.cli, dataDir: join(tmp, 'casket'), credentialsFile, logFile: join(tmp, 'casket.log'), extraArgs: opts.casketArgs });
    log(`   casket pid ${casket.pid} at ${casket.url}`);
    const embeddedStarted = [];
    try {
      const client = new S3Client(casket.url, admin, { signer: opts.signer });
      await createBucket(client);
      const disk = diskTarget(join(tmp, 'raw'));
      const sha = shaTarget();
      // The same bytes served by a bare Node HTTP server from disk (bench/file-server.mjs).
      let files;
      let fileServer;
      try {
        const fs = (fileServer = await startFileServer({ dir: mkdirp(join(tmp, 'file-server')), root: join(tmp, 'file-server', 'files') }));
        embeddedStarted.push(fs.child);
        log(`   file-server pid ${fs.pid} at ${fs.url}`);
        files = s3Target('files', { url: fs.url, cred: admin, prefix: '', pid: fs.pid, signer: opts.signer });
        if (opts.warmup > 0) await files.warm(opts.warmup);
      } catch (e) {
        report.unavailable.push({ what: 'file-server', reason: e.message });
        log(`   file-server: not available — ${e.message}`);
      }
      const ck = s3Target('casket', { url: casket.url, cred: admin, prefix: '', pid: casket.pid, signer: opts.signer });
      if (opts.warmup > 0) {
        log(`   warm-up: ${opts.warmup} s of 4 KiB PUT+GET, c=8`);
        await ck.warm(opts.warmup);
      }
      if (phases.has('put')) {
        for (const size of sizes) {
          for (const payload of payloadsFor(opts, size, false)) {
            for (const c of conc) {
              const cell = { op: 'PutObject', size, conc: c, kind: 'put', payload, label: `embedded PutObject ${payload} ${sizeName(size)} c=${c}` };
              log(`  ${cell.label}`);
              const targets = [disk, ...(files ? [files] : []), ck, ...(c === Math.min(...conc) ? [sha] : [])];
              addCell('embedded', cell, await runCell(cell, targets, opts), 'disk');
            }
          }
        }
      }
      if (phases.has('get')) {
        for (const size of sizes) {
          await preloadGets(client, '', size, maxConc);
          await disk.preload(size, maxConc);
          if (files) {
            const fc = new S3Client(fileServer.url, admin, { signer: opts.signer });
            await preloadGets(fc, '', size, maxConc);
            fc.close();
          }
          for (const c of conc) {
            const cell = { op: 'GetObject', size, conc: c, kind: 'get', label: `embedded GetObject ${sizeName(size)} c=${c}` };
            log(`  ${cell.label}`);
            addCell('embedded', cell, await runCell(cell, [disk, ...(files ? [files] : []), ck], opts), 'disk');
          }
        }
      }
      if (phases.has('cond')) {
        const uncond = s3Target('unconditional', { url: casket.url, cred: admin, prefix: '', pid: casket.pid, signer: opts.signer });
        const cond = s3Target('conditional', { url: casket.url, cred: admin, prefix: '', pid: casket.pid, signer: opts.signer, mode: 'conditional' });
        for (const c of conc.filter((x) => x <= 8)) {
          const cell = { op: 'PutObject', size: 4096, conc: c, kind: 'cond', label: `embedded PutObject If-Match vs none 4 KiB c=${c}` };
          log(`  ${cell.label}`);
          addCell('embedded', cell, await runCell(cell, [uncond, cond], opts), 'unconditional');
        }
      }
      if (phases.has('contended')) {
        log(`  embedded contended read-modify-write, ${agents.length} agents`);
        const runs = [];
        for (let r = 0; r < opts.runs; r++) runs.push(await contended(casket.url, admin, agents, `contended/run-${r}`, opts.duration, opts.signer));
        report.contended.push(summariseContended('embedded', 'casket', runs));
      }
      client.close();
    } finally {
      for (const c of embeddedStarted) await stop(c);
      await stop(casket.child);
    }
  }

  // ------------------------------------------------------------ upstreams
  if (opts.targets.includes('upstream') && throughputPhases) {
    for (const up of upstreams) {
      const group = `upstream:${up.name}`;
      log(`== ${up.name}`);
      let server;
      try {
        server = up.name === 'moto' ? await startMoto({ dir: mkdirp(join(tmp, 'moto')) }) : { url: up.url, pid: up.pids };
      } catch (e) {
        report.unavailable.push({ what: up.name, reason: e.message });
        log(`   ${up.name}: not available — ${e.message}; skipping its phases`);
        continue;
      }
      const started = [];
      if (server.child) started.push(server.child);
      try {
        const direct = new S3Client(server.url, up.cred, { signer: opts.signer });
        await createBucket(direct);
        let nginx;
        try {
          nginx = await startNginx({ dir: mkdirp(join(tmp, `nginx-${up.name}`)), upstreamUrl: server.url });
          started.push(nginx.child);
          log(`   nginx pid ${nginx.pid} at ${nginx.url} → ${server.url}`);
        } catch (e) {
          report.unavailable.push({ what: `nginx → ${up.name}`, reason: e.message });
          log(`   nginx → ${up.name}: not available — ${e.message}`);
        }
        let nodeProxy;
        try {
          nodeProxy = await startNodeProxy({ dir: mkdirp(join(tmp, `node-proxy-${up.name}`)), upstreamUrl: server.url });
          started.push(nodeProxy.child);
          log(`   node-proxy pid ${nodeProxy.pid} at ${nodeProxy.url} → ${server.url}`);
        } catch (e) {
          report.unavailable.push({ what: `node-proxy → ${up.name}`, reason: e.message });
          log(`   node-proxy → ${up.name}: not available — ${e.message}`);
        }
        let undiciProxy;
        try {
          undiciProxy = await startNodeProxy({ dir: mkdirp(join(tmp, `undici-proxy-${up.name}`)), upstreamUrl: server.url, client: 'undici' });
          started.push(undiciProxy.child);
          log(`   undici-proxy pid ${undiciProxy.pid} at ${undiciProxy.url} → ${server.url}`);
        } catch (e) {
          report.unavailable.push({ what: `undici-proxy → ${up.name}`, reason: e.message });
          log(`   undici-proxy → ${up.name}: not available — ${e.message}`);
        }
        let casket;
        try {
          casket = await startCasket({
            cli: paths.cli, dataDir: join(tmp, `casket-${up.name}`), credentialsFile, logFile: join(tmp, `casket-${up.name}.log`),
            extraArgs: [...upstreamArgs(server.url, up.cred), ...opts.casketArgs],
          });
          started.push(casket.child);
          log(`   casket → ${up.name}: pid ${casket.pid} at ${casket.url}`);
        } catch (e) {
          report.unavailable.push({ what: `casket → ${up.name}`, reason: e.message });
          log(`   casket → ${up.name}: not available — ${e.message}`);
          log(`   (skipping the casket → ${up.name} targets; measuring ${up.name} direct${nginx ? ' and nginx' : ''} only)`);
        }
        const t = { direct: s3Target('direct', { url: server.url, cred: up.cred, prefix: 'd/', pid: server.pid, signer: opts.signer }) };
        if (nginx) t.nginx = s3Target('nginx', { url: nginx.url, cred: up.cred, prefix: 'n/', getPrefix: 'd/', pid: nginx.pid, signer: opts.signer });
        if (nodeProxy) t.node = s3Target('node', { url: nodeProxy.url, cred: up.cred, prefix: 'o/', getPrefix: 'd/', pid: nodeProxy.pid, signer: opts.signer });
        if (undiciProxy) t.undici = s3Target('undici', { url: undiciProxy.url, cred: up.cred, prefix: 'u/', getPrefix: 'd/', pid: undiciProxy.pid, signer: opts.signer });
        if (casket) t.casket = s3Target('casket', { url: casket.url, cred: admin, prefix: 'c/', pid: casket.pid, signer: opts.signer });
        const list = Object.values(t);
        if (opts.warmup > 0) {
          if (casket) {
            const cc = new S3Client(casket.url, admin, { signer: opts.signer, maxSockets: 1 });
            await createBucket(cc).catch(() => {});
            cc.close();
          }
          log(`   warm-up: ${opts.warmup} s of 4 KiB PUT+GET, c=8, against each of ${list.map((x) => x.name).join(', ')}`);
          for (const x of list) await x.warm(opts.warmup);
        }
        if (phases.has('put')) {
          const clients = { direct };
          if (nginx) clients.nginx = new S3Client(nginx.url, up.cred, { signer: opts.signer });
          if (nodeProxy) clients.node = new S3Client(nodeProxy.url, up.cred, { signer: opts.signer });
          if (undiciProxy) clients.undici = new S3Client(undiciProxy.url, up.cred, { signer: opts.signer });
          if (casket) clients.casket = new S3Client(casket.url, admin, { signer: opts.signer });
          if (clients.casket) await createBucket(clients.casket).catch(() => {});
          const accepts = formProber(clients, { direct: 'd/', nginx: 'n/', node: 'o/', undici: 'u/', casket: 'c/' });
          for (const size of sizes) {
            for (const payload of payloadsFor(opts, size, true)) {
              const plan = await planForm(payload, accepts, up.name, report);
              for (const c of conc) {
                // --quick: the forms beyond signed at the goals' concurrency only, to stay short.
                if (opts.quick && payload !== 'signed' && c !== quickConc) continue;
                if (!plan.targets.length) continue;
                const cell = { op: 'PutObject', size, conc: c, kind: 'put', payload, sent: plan.sent, label: `${up.name} PutObject ${payload} ${sizeName(size)} c=${c}` };
                log(`  ${cell.label}`);
                addCell(group, cell, await runCell(cell, plan.targets.map((n) => t[n]).filter(Boolean), opts), plan.ref);
              }
            }
          }
          for (const [n, cl] of Object.entries(clients)) if (n !== 'direct') cl.close();
        }
        if (phases.has('get')) {
          for (const size of sizes) {
            await preloadGets(direct, 'd/', size, maxConc);
            if (casket) {
              const cc = new S3Client(casket.url, admin, { signer: opts.signer });
              await createBucket(cc).catch(() => {});
              await preloadGets(cc, 'c/', size, maxConc);
              cc.close();
            }
            for (const c of conc) {
              const cell = { op: 'GetObject', size, conc: c, kind: 'get', label: `${up.name} GetObject ${sizeName(size)} c=${c}` };
              log(`  ${cell.label}`);
              addCell(group, cell, await runCell(cell, list, opts), 'direct');
            }
          }
        }
        if (phases.has('copy')) {
          // CopyObject of a 4 KiB object and ListObjectsV2 of 1,000 keys: the sources under d/ for the proxies, c/ through casket.
          await preloadGets(direct, 'd/', 4096, maxConc);
          await preloadList(direct, 'd/', 1000);
          if (casket) {
            const cc = new S3Client(casket.url, admin, { signer: opts.signer });
            await preloadGets(cc, 'c/', 4096, maxConc);
            await preloadList(cc, 'c/', 1000);
            cc.close();
          }
          for (const c of conc) {
            for (const cell of [
              { op: 'CopyObject', size: 4096, conc: c, kind: 'copy', label: `${up.name} CopyObject 4 KiB c=${c}` },
              { op: 'ListObjectsV2', size: 0, keys: 1000, conc: c, kind: 'list', label: `${up.name} ListObjectsV2 1,000 keys c=${c}` },
            ]) {
              log(`  ${cell.label}`);
              addCell(group, cell, await runCell(cell, list, opts), 'direct');
            }
          }
        }
        if (phases.has('cond')) {
          const condTargets = [];
          if (await supportsIfMatch(direct)) {
            condTargets.push(s3Target('direct-unconditional', { url: server.url, cred: up.cred, prefix: 'd/', pid: server.pid, signer: opts.signer }));
            condTargets.push(s3Target('direct-conditional', { url: server.url, cred: up.cred, prefix: 'd/', pid: server.pid, signer: opts.signer, mode: 'conditional' }));
          } else log(`   ${up.name} does not honour If-Match on PutObject: no direct conditional baseline`);
          if (casket) {
            condTargets.push(s3Target('unconditional', { url: casket.url, cred: admin, prefix: 'c/', pid: casket.pid, signer: opts.signer }));
            condTargets.push(s3Target('conditional', { url: casket.url, cred: admin, prefix: 'c/', pid: casket.pid, signer: opts.signer, mode: 'conditional' }));
          }
          if (condTargets.length) {
            for (const c of conc.filter((x) => x <= 8)) {
              const cell = { op: 'PutObject', size: 4096, conc: c, kind: 'cond', label: `${up.name} PutObject If-Match vs none 4 KiB c=${c}` };
              log(`  ${cell.label}`);
              addCell(group, cell, await runCell(cell, condTargets, opts), casket ? 'unconditional' : 'direct-unconditional');
            }
          }
        }
        if (phases.has('contended') && casket) {
          log(`  ${up.name} contended read-modify-write via casket, ${agents.length} agents`);
          const runs = [];
          for (let r = 0; r < opts.runs; r++) runs.push(await contended(casket.url, admin, agents, `c/contended/run-${r}`, opts.duration, opts.signer));
          report.contended.push(summariseContended(group, 'casket', runs));
        }
        direct.close();
      } finally {
        for (const c of started.reverse()) await stop(c);
      }
    }
  }

  // ------------------------------------------------------------ big object
  if (phases.has('big') && opts.targets.includes('embedded')) {
    log(`== ${sizeName(opts.bigSize)} PutObject + GetObject, embedded store, fresh casket`);
    report.big = await bigObject(opts, env);
  }
  // Through the upstream path too: RGW only, since moto keeps
  // every body in its own memory and would measure moto, not casket.
  if (phases.has('big')) {
    for (const up of upstreams.filter((u) => u.name === 'rgw')) {
      log(`== ${sizeName(opts.bigSize)} PutObject + GetObject, casket → ${up.name}, fresh casket`);
      try {
        report.bigUpstream.push(await bigObject(opts, env, up));
      } catch (e) {
        report.unavailable.push({ what: `big object through casket → ${up.name}`, reason: e.message });
        log(`   big object through casket → ${up.name}: ${e.message}`);
      }
    }
  }

  if (phases.has('mcp')) {
    log('== MCP read_text_file and edit_file vs S3 GetObject (+ PutObject If-Match), 10 KiB, fresh casket');
    report.mcp = await mcpBench({ duration: opts.duration, runs: opts.runs });
    log(report.mcp.text);
  }

  if (phases.has('profile')) {
    log(`== profile (node --cpu-prof) → ${opts.profile}`);
    report.profile = await profile(opts, env);
  }

  report.hashCosts = {};
  for (const size of sizes) report.hashCosts[size] = await hashCosts(size);
  report.goals = goals(report, opts);
  print(report, opts);
  if (opts.json) {
    writeFileSync(opts.json, `${JSON.stringify(report, null, 2)}\n`);
    log(`JSON: ${opts.json}`);
  }
}


// ---------------------------------------------------------------- lifecycle

let exiting = false;
async function shutdown(code, why) {
  if (exiting) return;
  exiting = true;
  if (why) log(why);
  await stopAll().catch((e) => log(`cleanup: ${e.message}`));
  process.exit(code);
}

process.on('SIGINT', () => shutdown(130, 'interrupted: stopping every process started'));
process.on('SIGTERM', () => shutdown(143, 'terminated: stopping every process started'));
process.on('uncaughtException', (e) => shutdown(1, `bench failed: ${e.stack ?? e}`));
process.on('unhandledRejection', (e) => shutdown(1, `bench failed: ${e?.stack ?? e}`));

const watchdog = setTimeout(() => shutdown(1, 'bench exceeded --max-time: stopping'), (() => {
  const i = process.argv.findIndex((a) => a.startsWith('--max-time'));
  const v = i < 0 ? 3600 : Number(process.argv[i].includes('=') ? process.argv[i].split('=')[1] : process.argv[i + 1]);
  return (Number.isFinite(v) ? v : 3600) * 1000;
})());
watchdog.unref();

main().then(
  () => shutdown(0),
  (e) => shutdown(1, `bench failed: ${e instanceof NotAvailable ? e.message : (e.stack ?? e)}`),
);
