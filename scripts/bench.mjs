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
 */
import { createHash, randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { open, readFile, rename } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { execFileSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { S3Client, errorCode } from './bench/client.mjs';
import { checkFastSigner, sha256hex } from './bench/signer.mjs';
import { cpuMs, memory, NotAvailable, resetPeak, startCasket, startFileServer, startMoto, startNginx, startNodeProxy, stop, stopAll, trackDir } from './bench/processes.mjs';
import { checkPayloadModes, encodePayload, PAYLOAD_MODES } from './bench/payload.mjs';
import { fmt, median, parseSize, pct, percentile, sizeName, table } from './bench/stats.mjs';
import { formatSummary, summarise } from './cpuprofile-summary.mjs';
import { byArm, diff } from './cpuprofile-arms.mjs';
import { mcpBench } from './bench/mcp.mjs';

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '..');
let CLI = join(ROOT, 'dist', 'cli.js');
const BUCKET = 'bench';
const MiB = 1024 * 1024;
const MOTO_CRED = { accessKeyId: 'benchmoto', secretAccessKey: 'benchmotosecret' };
// Where scripts/ceph-rgw-up.sh puts RGW by default, with its default keys.
const RGW_PROBE_URL = 'http://127.0.0.1:18080';
const RGW_DEFAULT_CRED = { accessKeyId: 'test', secretAccessKey: 'test' };
// The concurrency the performance goals (README: Performance) are stated at.
const GOAL_CONC = 8;

// ---------------------------------------------------------------- options

const HELP = `usage: node scripts/bench.mjs [options]

  --duration S          seconds per measured run (default 3; --quick 1)
  --warmup S            seconds of unmeasured 4 KiB PUT+GET at c=8 against every server before
                        its first cell (default 10; --quick 3): a proxy that runs for days is
                        JIT-compiled, and a cold Node process is measured compiling (V8's
                        compiler threads count as its CPU: ~40% more per 4 KiB request in the
                        first seconds, measured)
  --runs N              runs per cell, alternating with the baseline (default 3, min 3)
  --quick               duration 1, concurrency 1,8, big object 64 MiB, PutObject payload
                        forms other than signed only at c=8, no moto when RGW is found
  --phases LIST         put,get,copy,cond,contended,big,mcp[,profile] (default all but profile;
                        copy: CopyObject 4 KiB and ListObjectsV2 of 1,000 keys, upstream only;
                        mcp: the MCP tools against the same work over S3, bench/mcp.mjs)
  --targets LIST        embedded,upstream (default both)
  --sizes LIST          object sizes for put/get (default 4k,8m)
  --payloads LIST       PutObject body forms: signed,unsigned,chunked-crc32 (default: all three
                        for upstream cells of 1 MiB and more, signed otherwise and on the
                        embedded store); given explicitly, every PUT cell runs each.
                        signed = hex SHA-256; unsigned = UNSIGNED-PAYLOAD + Content-Length;
                        chunked-crc32 = STREAMING-UNSIGNED-PAYLOAD-TRAILER, aws-chunked in
                        64 KiB chunks with an x-amz-checksum-crc32 trailer, sent with
                        Transfer-Encoding: chunked and no Content-Length (as SDK v3 does)
  --concurrency LIST    (default 1,8,32)
  --agents N            agents in the contended phase (default 4)
  --credentials FILE    casket credentials JSON {"credentials":[{accessKey,secretKey,agent?}]};
                        entries with an agent are the contended phase's agents
                        (default: generated, --agents of them)
  --big-size SIZE       the big object (default 1g), through casket on the embedded store and
                        through casket → RGW (when RGW is found)
  --no-moto             do not start moto
  --moto                start moto even under --quick with RGW found
  --rgw URL             also benchmark against Ceph RGW at URL (with --rgw-access-key/--rgw-secret-key,
                        or RGW_ACCESS_KEY/RGW_SECRET_KEY). Without --rgw: CASKET_BENCH_RGW_URL
                        (keys RGW_ACCESS_KEY/RGW_SECRET_KEY, default test/test) if set, else
                        ${RGW_PROBE_URL} with test/test when a GET / there answers within 1 s
                        (start one: scripts/ceph-rgw-up.sh DIR 18080)
  --no-rgw              do not look for RGW
  --signer fast|smithy  load-generator signer (default fast, checked against @smithy/signature-v4)
  --casket-arg ARG      extra casket flag, repeatable (e.g. --casket-arg=--log-level=warn)
  --profile DIR         also run casket under node --cpu-prof (a fresh casket per phase) for
                        PUT and GET at c=8 on the embedded store, and through moto and RGW
                        (those found) when the upstream target is selected; summaries go to
                        DIR/<phase>/summary.txt; PutObject once per --payloads form. In front
                        of an upstream the bare node:http proxy is profiled in the same cell
                        too, and DIR/<phase>/vs-node-proxy.txt sets the two side by side per
                        request, function by function (measured runs only, after --warmup)
  --profile-sizes LIST  object sizes to profile (default 4k)
  --profile-duration S  seconds per profiled phase (default 10)
  --json FILE           write all results as JSON
  --tmp-dir DIR         where temp dirs go (default $TMPDIR)
  --keep                keep temp dirs (logs, data)
  --max-time S          hard limit for the whole run (default 3600)
`;

function parseOptions(argv) {
  const o = {
    duration: 3, runs: 3, phases: ['put', 'get', 'copy', 'cond', 'contended', 'big', 'mcp'], targets: ['embedded', 'upstream'],
    sizes: [4 * 1024, 8 * MiB], concurrency: [1, 8, 32], agents: 4, bigSize: 1024 * MiB, moto: true,
    signer: 'fast', casketArgs: [], profileDuration: 10, profileSizes: [4 * 1024], maxTime: 3600, keep: false, quick: false, warmup: 10,
    payloads: undefined, rgwProbe: true,
  };
  const explicit = new Set();
  for (let i = 0; i < argv.length; i++) {
    let a = argv[i];
    let v;
    if (a.includes('=')) [a, v] = [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)];
    const next = () => v ?? argv[++i] ?? (() => { throw new Error(`${a} needs a value`); })();
    explicit.add(a);
    switch (a) {
      case '--help': case '-h': process.stdout.write(HELP); process.exit(0);
      case '--duration': o.duration = Number(next()); break;
      case '--warmup': o.warmup = Number(next()); break;
      case '--runs': o.runs = Math.max(3, Number(next())); break;
      case '--quick': o.quick = true; break;
      case '--phases': o.phases = next().split(','); break;
      case '--targets': o.targets = next().split(','); break;
      case '--sizes': o.sizes = next().split(',').map(parseSize); break;
      case '--concurrency': o.concurrency = next().split(',').map(Number); break;
      case '--agents': o.agents = Number(next()); break;
      case '--credentials': o.credentials = next(); break;
      case '--big-size': o.bigSize = parseSize(next()); break;
      case '--no-moto': o.moto = false; break;
      case '--moto': o.moto = true; break;
      case '--rgw': o.rgw = next(); break;
      case '--no-rgw': o.rgwProbe = false; break;
      case '--payloads': o.payloads = next().split(','); break;
      case '--rgw-access-key': o.rgwAccessKey = next(); break;
      case '--rgw-secret-key': o.rgwSecretKey = next(); break;
      case '--signer': o.signer = next(); break;
      case '--casket-arg': o.casketArgs.push(next()); break;
      case '--profile': o.profile = resolve(next()); break;
      case '--profile-duration': o.profileDuration = Number(next()); break;
      case '--profile-sizes': o.profileSizes = next().split(',').map(parseSize); break;
      case '--json': o.json = resolve(next()); break;
      case '--tmp-dir': o.tmpDir = resolve(next()); break;
      case '--keep': o.keep = true; break;
      case '--max-time': o.maxTime = Number(next()); break;
      default: throw new Error(`unknown option ${argv[i]} (see --help)`);
    }
  }
  if (o.quick) {
    if (!explicit.has('--duration')) o.duration = 1;
    if (!explicit.has('--warmup')) o.warmup = 3;
    if (!explicit.has('--concurrency')) o.concurrency = [1, 8];
    if (!explicit.has('--big-size')) o.bigSize = 64 * MiB;
  }
  o.explicit = explicit;
  if (o.profile && !o.phases.includes('profile')) o.phases.push('profile');
  checkPayloadModes(o.payloads ?? PAYLOAD_MODES);
  if (o.rgw && (!o.rgwAccessKey || !o.rgwSecretKey)) {
    o.rgwAccessKey ??= process.env.RGW_ACCESS_KEY;
    o.rgwSecretKey ??= process.env.RGW_SECRET_KEY;
    if (!o.rgwAccessKey || !o.rgwSecretKey) throw new Error('--rgw needs --rgw-access-key and --rgw-secret-key (or RGW_ACCESS_KEY/RGW_SECRET_KEY)');
  }
  return o;
}

// ---------------------------------------------------------------- helpers

const now = () => performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (...a) => process.stderr.write(`${a.join(' ')}\n`);

function randomCred(prefix) {
  return { accessKeyId: `${prefix}${randomBytes(6).toString('hex').toUpperCase()}`, secretAccessKey: randomBytes(24).toString('base64url') };
}

/** A pool of distinct random bodies of one size, each with its SHA-256 (computed once, off the clock). */
const pools = new Map();
function bodyPool(size) {
  let pool = pools.get(size);
  if (!pool) {
    const n = size <= 64 * 1024 ? 64 : Math.max(2, Math.min(8, Math.floor((64 * MiB) / size)));
    pool = Array.from({ length: n }, () => {
      const buf = randomBytes(size);
      return { buf, hash: sha256hex(buf) };
    });
    pools.set(size, pool);
  }
  return pool;
}

/** A body of `size` bytes generated block by block, never held in memory (one 1 MiB block, repeated). */
function generated(size, block) {
  return Readable.from(
    (function* () {
      let left = size;
      while (left > 0) {
        const n = Math.min(left, block.length);
        yield n === block.length ? block : block.subarray(0, n);
        left -= n;
      }
    })(),
    { objectMode: false, highWaterMark: MiB },
  );
}

function expectStatus(res, want, what) {
  if (res.status !== want) {
    const code = errorCode(res.body) ?? '';
    throw new Error(`${what}: HTTP ${res.status} ${code}`.trim());
  }
}

/** CPU ms of one server process (and its children), or the sum over several (RGW: radosgw + its OSDs). */
function serverCpuMs(pid) {
  return Array.isArray(pid) ? pid.reduce((a, p) => a + cpuMs(p), 0) : cpuMs(pid);
}

/**
 * The PutObject body forms a cell of `size` runs in. Upstream cells of 1 MiB
 * and more run all three by default (the performance goals for large bodies
 * are stated per form: README, Performance); small cells and the embedded
 * store, signed only unless --payloads.
 */
function payloadsFor(opts, size, upstream) {
  if (opts.payloads) return opts.payloads;
  return upstream && size >= MiB ? PAYLOAD_MODES : ['signed'];
}

/** Whether an HTTP server answers GET / (any status) within `ms`. */
async function answers(url, ms = 1000) {
  try {
    const res = await fetch(`${url.replace(/\/+$/, '')}/`, { signal: AbortSignal.timeout(ms) });
    await res.arrayBuffer();
    return true;
  } catch {
    return false;
  }
}

/**
 * The upstreams this run measures: moto (started here unless --no-moto), and
 * RGW from --rgw, else CASKET_BENCH_RGW_URL, else the probe address when it
 * answers. RGW is never started or stopped here (ceph-rgw-up.sh does that).
 */
async function findUpstreams(opts) {
  const found = [];
  if (opts.moto) found.push({ name: 'moto', how: 'started here (python3 -m moto.server)', cred: MOTO_CRED });
  let rgw;
  if (opts.rgw) rgw = { url: opts.rgw, how: '--rgw', cred: { accessKeyId: opts.rgwAccessKey, secretAccessKey: opts.rgwSecretKey } };
  else if (process.env.CASKET_BENCH_RGW_URL) {
    rgw = {
      url: process.env.CASKET_BENCH_RGW_URL, how: 'CASKET_BENCH_RGW_URL',
      cred: { accessKeyId: process.env.RGW_ACCESS_KEY ?? RGW_DEFAULT_CRED.accessKeyId, secretAccessKey: process.env.RGW_SECRET_KEY ?? RGW_DEFAULT_CRED.secretAccessKey },
    };
  } else if (opts.rgwProbe && (await answers(RGW_PROBE_URL))) rgw = { url: RGW_PROBE_URL, how: `answering at ${RGW_PROBE_URL}, keys test/test`, cred: RGW_DEFAULT_CRED };
  const missing = [];
  // --quick with RGW found: RGW is the upstream the performance goals are
  // measured against and moto its stand-in, and both would double the
  // upstream half of a short run.
  if (rgw && opts.quick && !opts.explicit.has('--moto') && found[0]?.name === 'moto') {
    found.shift();
    missing.push({ what: 'moto', reason: '--quick with RGW found: moto left out (--moto to include it)' });
  }
  if (rgw) {
    rgw.url = rgw.url.replace(/\/+$/, '');
    if (rgw.how !== '--rgw' && rgw.how !== 'CASKET_BENCH_RGW_URL') found.push({ name: 'rgw', ...rgw });
    else if (await answers(rgw.url, 3000)) found.push({ name: 'rgw', ...rgw, how: `${rgw.how} ${rgw.url}` });
    else missing.push({ what: 'rgw', reason: `${rgw.how} ${rgw.url} does not answer` });
  } else if (opts.rgwProbe) missing.push({ what: 'rgw', reason: `nothing answers at ${RGW_PROBE_URL} and CASKET_BENCH_RGW_URL is unset (start one: scripts/ceph-rgw-up.sh DIR 18080)` });
  for (const u of found.filter((x) => x.name === 'rgw')) {
    const pids = rgwPids(u.url);
    u.pids = pids.length ? pids : undefined;
  }
  return { found, missing };
}

/**
 * radosgw serving `url` and the OSDs of its cluster (same -c config), found
 * read-only in /proc, so RGW's CPU per request can stand beside casket's and
 * nginx's. Empty when not found (another host, another user's /proc).
 */
function rgwPids(url) {
  const port = new URL(url).port || '80';
  const procs = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const argv = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
      const name = argv[0].split('/').pop();
      if (name !== 'radosgw' && name !== 'ceph-osd') continue;
      const conf = argv[argv.indexOf('-c') + 1];
      if (argv.indexOf('-c') >= 0 && conf) procs.push({ pid: Number(d), name, conf });
    } catch {}
  }
  const gw = procs.find((p) => {
    if (p.name !== 'radosgw') return false;
    try {
      return new RegExp(`^\\s*rgw frontends\\s*=.*(endpoint=[^\\s]*:${port}|port=${port})(\\s|$)`, 'm').test(readFileSync(p.conf, 'utf8'));
    } catch {
      return false;
    }
  });
  if (!gw) return [];
  return [gw.pid, ...procs.filter((p) => p.name === 'ceph-osd' && p.conf === gw.conf).map((p) => p.pid)];
}

async function writeAllFile(fh, buf) {
  let off = 0;
  while (off < buf.length) off += (await fh.write(buf, off, buf.length - off)).bytesWritten;
}

// ---------------------------------------------------------------- runner

/**
 * Runs `workers` (async () => bytes) in parallel loops for `seconds`.
 * Returns req/s, MiB/s, p50/p99 ms, errors, and the CPU the server process
 * (`pid`) and this process spent per request.
 */
async function measure(workers, seconds, pid) {
  const latencies = [];
  let bytes = 0;
  let errors = 0;
  let lastError;
  const serverCpu0 = pid ? serverCpuMs(pid) : 0;
  const benchCpu0 = process.cpuUsage();
  const t0 = now();
  const end = t0 + seconds * 1000;
  await Promise.all(
    workers.map(async (op) => {
      while (now() < end) {
        const s = now();
        try {
          // Not `bytes += await op()`: that reads `bytes` before the await
          // and loses the other workers' additions (a lost update, here).
          const n = await op();
          bytes += n;
          latencies.push(now() - s);
        } catch (e) {
          errors++;
          lastError = e.message;
          await sleep(20);
        }
      }
    }),
  );
  const elapsed = (now() - t0) / 1000;
  const benchCpu = process.cpuUsage(benchCpu0);
  const serverCpu = pid ? serverCpuMs(pid) - serverCpu0 : NaN;
  latencies.sort((a, b) => a - b);
  const n = latencies.length;
  return {
    requests: n,
    seconds: elapsed,
    reqPerS: n / elapsed,
    mibPerS: bytes / MiB / elapsed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    errors,
    ...(lastError && { lastError }),
    serverCpuUsPerOp: n ? (serverCpu * 1000) / n : NaN,
    benchCpuUsPerOp: n ? (benchCpu.user + benchCpu.system) / n : NaN,
  };
}

/**
 * One cell (phase × size × concurrency) against its targets, alternating:
 * round r runs the targets in order when r is even, reversed when odd.
 * target.prepare(cell) → { workers: [op], pid?, done?() }.
 */
async function runCell(cell, targets, opts) {
  cell.load = { before: loadavg()[0] };
  const results = Object.fromEntries(targets.map((t) => [t.name, []]));
  const warm = Math.min(1, opts.duration / 2);
  for (const t of targets) {
    const p = await t.prepare(cell);
    await measure(p.workers, warm, p.pid);
    await p.done?.();
  }
  for (let r = 0; r < opts.runs; r++) {
    const order = r % 2 ? [...targets].reverse() : targets;
    for (const t of order) {
      const p = await t.prepare(cell);
      const m = await measure(p.workers, t.seconds ?? opts.duration, p.pid);
      await p.done?.();
      results[t.name].push(m);
      if (m.errors) log(`    ! ${cell.label} ${t.name}: ${m.errors} errors (${m.lastError})`);
    }
  }
  cell.load.after = loadavg()[0];
  const summary = {};
  for (const t of targets) {
    const runs = results[t.name];
    summary[t.name] = {
      reqPerS: median(runs.map((x) => x.reqPerS)),
      mibPerS: median(runs.map((x) => x.mibPerS)),
      p50: median(runs.map((x) => x.p50)),
      p99: median(runs.map((x) => x.p99)),
      errors: runs.reduce((a, x) => a + x.errors, 0),
      serverCpuUsPerOp: median(runs.map((x) => x.serverCpuUsPerOp)),
      benchCpuUsPerOp: median(runs.map((x) => x.benchCpuUsPerOp)),
      runs,
    };
  }
  return summary;
}

// ---------------------------------------------------------------- targets

/**
 * An S3 endpoint as a target: PUT/GET/conditional PUT workers on keys under
 * `prefix`. PUT bodies go in the form `cell.sent[name]` (a baseline's
 * fallback when its upstream refuses the cell's form), else `cell.payload`.
 */
function s3Target(name, { url, cred, bucket = BUCKET, prefix, pid, signer, mode = 'plain', getPrefix }) {
  return {
    name,
    /** 4 KiB PutObject + GetObject at c=8 for `seconds`, unmeasured: see --warmup. */
    async warm(seconds) {
      const client = new S3Client(url, cred, { signer, maxSockets: 8 });
      const pool = bodyPool(4096);
      const end = performance.now() + seconds * 1000;
      try {
        await Promise.all(
          Array.from({ length: 8 }, async (_, w) => {
            const path = `/${bucket}/${prefix}warm/w${w}`;
            for (let n = w; performance.now() < end; n++) {
              const b = pool[n % pool.length];
              expectStatus(await client.request('PUT', path, { body: b.buf, payloadHash: b.hash, timeoutMs: 30_000 }), 200, 'PutObject (warm-up)');
              expectStatus(await client.request('GET', path, { timeoutMs: 30_000 }), 200, 'GetObject (warm-up)');
            }
          }),
        );
      } finally {
        client.close();
      }
    },
    async prepare(cell) {
      const client = new S3Client(url, cred, { signer, maxSockets: cell.conc });
      const timeoutMs = cell.size > 64 * MiB ? 600_000 : 120_000;
      const pool = bodyPool(cell.size);
      let workers;
      if (cell.op === 'CopyObject') {
        // A server-side copy of a preloaded object onto a key of the worker's own (preloadGets wrote the source).
        workers = Array.from({ length: cell.conc }, (_, w) => {
          const source = `/${bucket}/${getPrefix ?? prefix}get/${cell.size}/${w}`;
          const path = `/${bucket}/${prefix}copy/${cell.size}/w${w}`;
          return async () => {
            const res = await client.request('PUT', path, { headers: { 'x-amz-copy-source': source }, collect: true, timeoutMs });
            expectStatus(res, 200, 'CopyObject');
            if (res.body.includes('<Error>')) throw new Error(`CopyObject: 200 with an error body ${errorCode(res.body)}`);
            return cell.size;
          };
        });
      } else if (cell.op === 'ListObjectsV2') {
        // One page of `cell.keys` keys (preloadList wrote them).
        workers = Array.from({ length: cell.conc }, () => {
          const path = `/${bucket}?list-type=2&max-keys=1000&prefix=${encodeURIComponent(`${getPrefix ?? prefix}list/`)}`;
          return async () => {
            const res = await client.request('GET', path, { collect: true, timeoutMs });
            expectStatus(res, 200, 'ListObjectsV2');
            const n = res.body.toString('utf8').split('<Key>').length - 1;
            if (n !== cell.keys) throw new Error(`ListObjectsV2: ${n} keys, expected ${cell.keys}`);
            return res.bytes;
          };
        });
      } else if (cell.op === 'GetObject') {
        workers = Array.from({ length: cell.conc }, (_, w) => {
          const path = `/${bucket}/${getPrefix ?? prefix}get/${cell.size}/${w}`;
          return async () => {
            const res = await client.request('GET', path, { timeoutMs });
            expectStatus(res, 200, 'GetObject');
            if (res.bytes !== cell.size) throw new Error(`GetObject: ${res.bytes} bytes, expected ${cell.size}`);
            return res.bytes;
          };
        });
      } else {
        const conditional = mode === 'conditional';
        const etags = new Array(cell.conc);
        const keyOf = (w) => `/${bucket}/${prefix}${conditional ? 'cond' : cell.kind === 'cond' ? 'uncond' : 'put'}/${cell.size}/w${w}`;
        if (conditional) {
          // Each worker owns a key and tracks its ETag.
          await Promise.all(
            Array.from({ length: cell.conc }, async (_, w) => {
              const b = pool[w % pool.length];
              const res = await client.request('PUT', keyOf(w), { body: b.buf, payloadHash: b.hash, timeoutMs });
              expectStatus(res, 200, 'PutObject (setup)');
              etags[w] = res.headers.etag;
            }),
          );
        }
        const form = cell.sent?.[name] ?? cell.payload ?? 'signed';
        // Encode every pooled body before the clock starts (cached across cells).
        for (const b of pool) encodePayload(b, form);
        workers = Array.from({ length: cell.conc }, (_, w) => {
          const path = keyOf(w);
          let n = w;
          return async () => {
            const b = pool[n++ % pool.length];
            const e = encodePayload(b, form);
            const headers = conditional ? { ...e.headers, 'if-match': etags[w] } : e.headers;
            const res = await client.request('PUT', path, { body: e.body, payloadHash: e.payloadHash, chunked: e.chunked, headers, timeoutMs });
            expectStatus(res, 200, conditional ? 'PutObject If-Match' : 'PutObject');
            if (conditional) etags[w] = res.headers.etag;
            return b.buf.length;
          };
        });
      }
      return { workers, pid, done: () => client.close() };
    },
  };
}

/** The raw cost of the disk: write + fsync + rename (GET: read back) in `dir`. */
function diskTarget(dir) {
  mkdirSync(dir, { recursive: true });
  return {
    name: 'disk',
    async prepare(cell) {
      const pool = bodyPool(cell.size);
      let workers;
      if (cell.op === 'GetObject') {
        workers = Array.from({ length: cell.conc }, (_, w) => {
          const file = join(dir, `get-${cell.size}-${w}`);
          return async () => (await readFile(file)).length;
        });
      } else {
        workers = Array.from({ length: cell.conc }, (_, w) => {
          const file = join(dir, `put-${cell.size}-w${w}`);
          let n = w;
          return async () => {
            const b = pool[n++ % pool.length];
            const fh = await open(`${file}.tmp`, 'w');
            try {
              await writeAllFile(fh, b.buf);
              await fh.sync();
            } finally {
              await fh.close();
            }
            await rename(`${file}.tmp`, file);
            return b.buf.length;
          };
        });
      }
      return { workers };
    },
    async preload(size, count) {
      const pool = bodyPool(size);
      for (let i = 0; i < count; i++) {
        const fh = await open(join(dir, `get-${size}-${i}`), 'w');
        await writeAllFile(fh, pool[i % pool.length].buf);
        await fh.sync();
        await fh.close();
      }
    },
  };
}

/** SHA-256 of the same bytes on this CPU, one core (the floor of any hashing store). */
function shaTarget() {
  return {
    name: 'sha256',
    async prepare(cell) {
      const pool = bodyPool(cell.size);
      let n = 0;
      // One worker whatever the cell's concurrency: hashing is one core's work.
      const op = async () => {
        const b = pool[n++ % pool.length];
        createHash('sha256').update(b.buf).digest();
        return b.buf.length;
      };
      return { workers: [op] };
    },
  };
}

function upstreamArgs(url, cred) {
  return ['--upstream', url, '--upstream-access-key', cred.accessKeyId, '--upstream-secret-key', cred.secretAccessKey];
}

/**
 * Whether each target takes each PutObject body form: one PUT of a body
 * spanning several 64 KiB chunks, then a GET that must return the same bytes
 * (a 200 that stored the aws-chunked framing is a refusal too). Memoised:
 * accepts(target, form) → Promise<{ok, why?}>.
 */
function formProber(clients, prefixes) {
  const memo = new Map();
  const buf = randomBytes(200 * 1024 + 17);
  const b = { buf, hash: sha256hex(buf) };
  const probe = async (target, form) => {
    const client = clients[target];
    const key = `/${BUCKET}/${prefixes[target]}probe/${form}`;
    try {
      const e = encodePayload(b, form);
      const res = await client.request('PUT', key, { body: e.body, payloadHash: e.payloadHash, chunked: e.chunked, headers: e.headers, timeoutMs: 30_000 });
      if (res.status !== 200) return { ok: false, why: `HTTP ${res.status} ${errorCode(res.body) ?? ''}`.trim() };
      const g = await client.request('GET', key, { collect: true, timeoutMs: 30_000 });
      if (g.status !== 200 || !g.body.equals(buf)) return { ok: false, why: `PUT 200, but GET gave HTTP ${g.status} and ${g.bytes} bytes that are not the ones sent` };
      return { ok: true };
    } catch (e) {
      return { ok: false, why: e.message };
    }
  };
  const accepts = (target, form) => {
    const k = `${target} ${form}`;
    if (!memo.has(k)) memo.set(k, probe(target, form));
    return memo.get(k);
  };
  accepts.has = (target) => Boolean(clients[target]);
  return accepts;
}

/** What a baseline sends when its upstream refuses a form: the same bytes in the nearest form it takes. */
const FALLBACK = { 'chunked-crc32': ['chunked-crc32-length', 'unsigned', 'signed'], unsigned: ['signed'], signed: [] };

/**
 * Which targets a PutObject cell in `form` runs, and what each sends.
 * Direct refusing the form: direct leaves the cell and casket is compared
 * with nginx only, nginx sending the nearest form the upstream
 * takes (nginx passes the body through, so it is refused whenever the
 * upstream is). Without nginx, direct sends that fallback instead. Casket
 * refusing the form: casket leaves the cell, and the refusal is reported.
 */
async function planForm(form, accepts, upName, report) {
  const say = (text) => {
    if (!report.notes.includes(text)) report.notes.push(text);
    log(`   ${text}`);
  };
  const targets = [];
  const sent = {};
  const fallback = async (target) => {
    for (const f of FALLBACK[form]) if ((await accepts(target, f)).ok) return f;
    return undefined;
  };
  const d = await accepts('direct', form);
  if (d.ok) targets.push('direct');
  else {
    let why = d.why;
    if (form === 'chunked-crc32') {
      const l = await accepts('direct', 'chunked-crc32-length');
      why += l.ok ? '; it takes the same body with its exact Content-Length' : `; with its exact Content-Length instead of Transfer-Encoding: chunked, ${l.why}`;
    }
    if (accepts.has('nginx')) say(`${upName} direct refuses ${form} (${why}): ${form} cells compare casket with the proxies only`);
    else {
      const f = await fallback('direct');
      say(`${upName} direct refuses ${form} (${why}); no nginx: direct sends ${f ?? 'nothing (left out)'} in ${form} cells`);
      if (f) {
        targets.push('direct');
        sent.direct = f;
      }
    }
  }
  for (const proxy of ['nginx', 'node', 'undici']) {
    if (!accepts.has(proxy)) continue;
    const n = await accepts(proxy, form);
    if (n.ok) targets.push(proxy);
    else {
      const f = await fallback(proxy);
      say(`${proxy} → ${upName} refuses ${form} (${n.why}): ${proxy} sends ${f ? `the same bytes as ${f}` : 'nothing (left out)'} in ${form} cells`);
      if (f) {
        targets.push(proxy);
        sent[proxy] = f;
      }
    }
  }
  if (accepts.has('casket')) {
    const c = await accepts('casket', form);
    if (c.ok) targets.push('casket');
    else {
      say(`casket → ${upName} refuses ${form} (${c.why}): left out of ${form} cells`);
      report.refusals.push({ upstream: upName, target: 'casket', form, why: c.why });
    }
  }
  const ref = ['direct', 'nginx', 'node', 'undici', 'casket'].find((x) => targets.includes(x));
  return { targets, sent, ref };
}

async function preloadGets(client, prefix, size, count) {
  const pool = bodyPool(size);
  for (let i = 0; i < count; i++) {
    const b = pool[i % pool.length];
    const res = await client.request('PUT', `/${BUCKET}/${prefix}get/${size}/${i}`, { body: b.buf, payloadHash: b.hash, timeoutMs: 120_000 });
    expectStatus(res, 200, `preload ${prefix}get/${size}/${i}`);
  }
}

/** `count` empty objects under `prefix`list/, 8 PUTs at a time (skipped when a listing already shows them all). */
async function preloadList(client, prefix, count) {
  const listed = await client.request('GET', `/${BUCKET}?list-type=2&max-keys=1000&prefix=${encodeURIComponent(`${prefix}list/`)}`, { collect: true, timeoutMs: 60_000 });
  if (listed.status === 200 && listed.body.toString('utf8').split('<Key>').length - 1 === count) return;
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let i = next++; i < count; i = next++) {
        const res = await client.request('PUT', `/${BUCKET}/${prefix}list/${String(i).padStart(5, '0')}`, { body: Buffer.alloc(0), timeoutMs: 60_000 });
        expectStatus(res, 200, `preload ${prefix}list/${i}`);
      }
    }),
  );
}

async function createBucket(client) {
  const res = await client.request('PUT', `/${BUCKET}`);
  if (res.status !== 200 && !['BucketAlreadyOwnedByYou', 'BucketAlreadyExists'].includes(errorCode(res.body))) expectStatus(res, 200, 'CreateBucket');
}

// ---------------------------------------------------------------- contended

/**
 * N agents (each its own bound access key) run read-modify-write on one key:
 * GET (body + ETag), append the agent's next token, PUT If-Match that ETag;
 * 412 → read again. At the end the object must list exactly the tokens whose
 * PUT returned 200, each once: anything missing is a lost update.
 */
async function contended(url, admin, agents, key, seconds, signer) {
  const adminClient = new S3Client(url, admin, { signer, maxSockets: 1 });
  const header = Buffer.from('casket-bench counter\n');
  const init = await adminClient.request('PUT', `/${BUCKET}/${key}`, { body: header });
  expectStatus(init, 200, 'contended: initial PutObject');
  const stats = agents.map((a) => ({ agent: a.agent, client: new S3Client(url, a, { signer, maxSockets: 1 }), ok: [], s412: 0, other: 0, lastOther: undefined, lat: [] }));
  const t0 = now();
  const end = t0 + seconds * 1000;
  await Promise.all(
    stats.map(async (s) => {
      let seq = 0;
      while (now() < end) {
        try {
          const g = await s.client.request('GET', `/${BUCKET}/${key}`, { collect: true });
          expectStatus(g, 200, 'contended GetObject');
          const token = `${s.agent}:${seq}\n`;
          const body = Buffer.concat([g.body, Buffer.from(token)]);
          const st = now();
          const p = await s.client.request('PUT', `/${BUCKET}/${key}`, { body, headers: { 'if-match': g.headers.etag } });
          if (p.status === 200) {
            s.ok.push(seq++);
            s.lat.push(now() - st);
          } else if (p.status === 412) s.s412++;
          else {
            s.other++;
            s.lastOther = `HTTP ${p.status} ${errorCode(p.body) ?? ''}`;
          }
        } catch (e) {
          s.other++;
          s.lastOther = e.message;
          await sleep(20);
        }
      }
    }),
  );
  const elapsed = (now() - t0) / 1000;
  const final = await adminClient.request('GET', `/${BUCKET}/${key}`, { collect: true });
  expectStatus(final, 200, 'contended: final GetObject');
  const seen = new Map();
  for (const line of final.body.toString('utf8').split('\n').slice(1)) if (line) seen.set(line, (seen.get(line) ?? 0) + 1);
  let lost = 0;
  let acknowledged = 0;
  for (const s of stats) {
    for (const seq of s.ok) {
      acknowledged++;
      if (!seen.has(`${s.agent}:${seq}`)) lost++;
    }
  }
  const ackSet = new Set(stats.flatMap((s) => s.ok.map((q) => `${s.agent}:${q}`)));
  const phantom = [...seen.keys()].filter((t) => !ackSet.has(t)).length;
  const duplicated = [...seen.values()].filter((c) => c > 1).length;
  const s412 = stats.reduce((a, s) => a + s.s412, 0);
  const other = stats.reduce((a, s) => a + s.other, 0);
  const lat = stats.flatMap((s) => s.lat).sort((a, b) => a - b);
  for (const s of stats) s.client.close();
  adminClient.close();
  return {
    agents: agents.length,
    seconds: elapsed,
    writes: acknowledged,
    writesPerS: acknowledged / elapsed,
    conflicts412: s412,
    share412: s412 / Math.max(1, acknowledged + s412),
    otherErrors: other,
    lastOther: stats.find((s) => s.lastOther)?.lastOther,
    linesInObject: [...seen.values()].reduce((a, c) => a + c, 0),
    lostUpdates: lost,
    phantomWrites: phantom,
    duplicatedTokens: duplicated,
    putP50: percentile(lat, 50),
    putP99: percentile(lat, 99),
  };
}

// ---------------------------------------------------------------- big object

/**
 * PUT then GET of one `size`-byte object streamed from a generator (never in
 * memory), against a fresh casket whose RSS is sampled every 20 ms (VmRSS)
 * and read as VmHWM (reset before each transfer when permitted), alternating
 * with a baseline moving the same bytes. On the embedded store the baseline
 * is the disk: the bytes written + fsynced + renamed, and read back, by this
 * process. In front of an upstream (`up`) it is the upstream direct, and the
 * object is deleted after each GET so an upstream with little room (RGW on
 * memstore) holds one copy at a time.
 */
async function bigObject(opts, env, up) {
  const block = randomBytes(MiB);
  const t0 = now();
  const h = createHash('sha256');
  for (let left = opts.bigSize; left > 0; left -= block.length) h.update(left >= block.length ? block : block.subarray(0, left));
  const hash = h.digest('hex');
  const shaSeconds = (now() - t0) / 1000;
  const where = up ? up.name : 'embedded';
  const dataDir = join(env.tmp, `casket-big-${where}`);
  const casket = await startCasket({
    cli: CLI, dataDir, credentialsFile: env.credentialsFile, logFile: join(env.tmp, `casket-big-${where}.log`),
    extraArgs: [...(up ? upstreamArgs(up.url, up.cred) : []), ...opts.casketArgs],
  });
  const pid = casket.pid;
  const clients = [];
  try {
    const client = new S3Client(casket.url, env.admin, { signer: opts.signer, maxSockets: 1 });
    clients.push(client);
    await createBucket(client);
    const idle = memory(pid);
    const runs = [];
    const sampleWhile = async (fn) => {
      const canReset = resetPeak(pid);
      let peak = memory(pid).rss;
      const timer = setInterval(() => {
        try {
          peak = Math.max(peak, memory(pid).rss);
        } catch {}
      }, 20);
      const s = now();
      try {
        await fn();
      } finally {
        clearInterval(timer);
      }
      const seconds = (now() - s) / 1000;
      const m = memory(pid);
      return { seconds, mibPerS: opts.bigSize / MiB / seconds, peakRss: Math.max(peak, canReset ? m.hwm : 0, m.rss), hwmReset: canReset };
    };
    const timed = async (fn) => {
      const s = now();
      await fn();
      const seconds = (now() - s) / 1000;
      return { seconds, mibPerS: opts.bigSize / MiB / seconds };
    };
    const s3Put = (c, key) => async () => {
      const res = await c.request('PUT', `/${BUCKET}/${key}`, { body: generated(opts.bigSize, block), contentLength: opts.bigSize, payloadHash: hash, timeoutMs: 900_000 });
      expectStatus(res, 200, `big PutObject ${key}`);
      if (!up && res.headers.etag !== `"${hash}"`) throw new Error(`big PutObject: ETag ${res.headers.etag}, expected "${hash}"`);
    };
    const s3Get = (c, key) => async () => {
      const gh = createHash('sha256');
      const res = await c.request('GET', `/${BUCKET}/${key}`, { onData: (ch) => gh.update(ch), timeoutMs: 900_000 });
      expectStatus(res, 200, `big GetObject ${key}`);
      const got = gh.digest('hex');
      if (res.bytes !== opts.bigSize || got !== hash) throw new Error(`big GetObject ${key}: ${res.bytes} bytes, sha256 ${got}`);
      if (up) expectStatus(await c.request('DELETE', `/${BUCKET}/${key}`), 204, `big DeleteObject ${key}`);
    };
    const casketPut = () => sampleWhile(s3Put(client, up ? 'c/big' : 'big'));
    const casketGet = () => sampleWhile(s3Get(client, up ? 'c/big' : 'big'));
    let basePut;
    let baseGet;
    if (up) {
      const direct = new S3Client(up.url, up.cred, { signer: opts.signer, maxSockets: 1 });
      clients.push(direct);
      await createBucket(direct);
      basePut = () => timed(s3Put(direct, 'd/big'));
      baseGet = () => timed(s3Get(direct, 'd/big'));
    } else {
      const rawDir = join(env.tmp, 'raw-big');
      mkdirSync(rawDir, { recursive: true });
      const rawFile = join(rawDir, 'big');
      basePut = () =>
        timed(async () => {
          const fh = await open(`${rawFile}.tmp`, 'w');
          for await (const chunk of generated(opts.bigSize, block)) await writeAllFile(fh, chunk);
          await fh.sync();
          await fh.close();
          await rename(`${rawFile}.tmp`, rawFile);
        });
      baseGet = () =>
        timed(async () => {
          const gh = createHash('sha256');
          const fh = await open(rawFile, 'r');
          for await (const chunk of fh.createReadStream({ highWaterMark: MiB })) gh.update(chunk);
          if (gh.digest('hex') !== hash) throw new Error('raw big file read back wrong');
        });
    }
    const baseline = up ? 'direct' : 'disk';
    for (let r = 0; r < opts.runs; r++) {
      const run = {};
      // Alternating, as every cell: the baseline first in even runs.
      if (r % 2 === 0) {
        run.basePut = await basePut();
        run.baseGet = await baseGet();
        run.casketPut = await casketPut();
        run.casketGet = await casketGet();
      } else {
        run.casketPut = await casketPut();
        run.casketGet = await casketGet();
        run.basePut = await basePut();
        run.baseGet = await baseGet();
      }
      runs.push(run);
      log(`    big ${where} run ${r + 1}: PUT ${fmt(run.casketPut.mibPerS)} MiB/s (${baseline} ${fmt(run.basePut.mibPerS)}), GET ${fmt(run.casketGet.mibPerS)} MiB/s (${baseline} ${fmt(run.baseGet.mibPerS)}), peak RSS ${fmt(run.casketPut.peakRss / MiB)} / ${fmt(run.casketGet.peakRss / MiB)} MiB`);
    }
    const med = (f) => median(runs.map(f));
    return {
      where,
      baseline,
      size: opts.bigSize,
      sha256MiBPerS: opts.bigSize / MiB / shaSeconds,
      idleRss: idle.rss,
      put: { casketMiBPerS: med((x) => x.casketPut.mibPerS), baselineMiBPerS: med((x) => x.basePut.mibPerS), peakRss: Math.max(...runs.map((x) => x.casketPut.peakRss)) },
      get: { casketMiBPerS: med((x) => x.casketGet.mibPerS), baselineMiBPerS: med((x) => x.baseGet.mibPerS), peakRss: Math.max(...runs.map((x) => x.casketGet.peakRss)) },
      hwmReset: runs[0]?.casketPut.hwmReset,
      runs,
    };
  } finally {
    for (const c of clients) c.close();
    await stop(casket.child);
  }
}

// ---------------------------------------------------------------- profile

async function profile(opts, env) {
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
              cli: CLI, dataDir: join(env.tmp, `casket-prof-${label}`), credentialsFile: env.credentialsFile, logFile: join(env.tmp, `casket-prof-${label}.log`),
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
async function profiledRun(target, cell, pid, opts) {
  if (opts.warmup > 0) await target.warm(opts.warmup);
  const p = await target.prepare(cell);
  const startUs = Number(process.hrtime.bigint() / 1000n);
  const m = await measure(p.workers, opts.profileDuration, pid);
  const endUs = Number(process.hrtime.bigint() / 1000n);
  p.done();
  return { m, window: { startUs, endUs, puts: m.requests, conc: cell.conc } };
}

/** The bare node:http proxy (bench/node-proxy.mjs) under --cpu-prof in casket's cell, and the two profiles side by side per request. */
async function profileNodeProxy(backend, { op, size, conc, label, dir, payload }, casketRun, opts, env) {
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

// ---------------------------------------------------------------- main

async function main() {
  const opts = parseOptions(process.argv.slice(2));
  if (!existsSync(CLI)) throw new Error(`${CLI} not found: run npm run build first (npm run bench does)`);
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
  CLI = join(snapshot, 'dist', 'cli.js');

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
    const casket = await startCasket({ cli: CLI, dataDir: join(tmp, 'casket'), credentialsFile, logFile: join(tmp, 'casket.log'), extraArgs: opts.casketArgs });
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
            cli: CLI, dataDir: join(tmp, `casket-${up.name}`), credentialsFile, logFile: join(tmp, `casket-${up.name}.log`),
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

function mkdirp(d) {
  mkdirSync(d, { recursive: true });
  return d;
}

/**
 * Whether an upstream honours If-Match on PutObject: a wrong ETag refused
 * with 412 and the right one accepted (RGW 16 answers 412 to both, so a
 * refusal alone would pass it and every conditional PUT would fail).
 */
async function supportsIfMatch(client) {
  try {
    const put = await client.request('PUT', `/${BUCKET}/probe-if-match`, { body: Buffer.from('x') });
    if (put.status !== 200) return false;
    const res = await client.request('PUT', `/${BUCKET}/probe-if-match`, { body: Buffer.from('y'), headers: { 'if-match': '"0000"' } });
    if (res.status !== 412) return false;
    const ok = await client.request('PUT', `/${BUCKET}/probe-if-match`, { body: Buffer.from('z'), headers: { 'if-match': put.headers.etag } });
    return ok.status === 200;
  } catch {
    return false;
  }
}

function summariseContended(group, target, runs) {
  return {
    group,
    target,
    agents: runs[0]?.agents,
    writesPerS: median(runs.map((r) => r.writesPerS)),
    share412: median(runs.map((r) => r.share412)),
    putP50: median(runs.map((r) => r.putP50)),
    putP99: median(runs.map((r) => r.putP99)),
    lostUpdates: runs.reduce((a, r) => a + r.lostUpdates, 0),
    phantomWrites: runs.reduce((a, r) => a + r.phantomWrites, 0),
    duplicatedTokens: runs.reduce((a, r) => a + r.duplicatedTokens, 0),
    otherErrors: runs.reduce((a, r) => a + r.otherErrors, 0),
    writes: runs.reduce((a, r) => a + r.writes, 0),
    runs,
  };
}

// ---------------------------------------------------------------- goals

/** A cell; PutObject cells are also told apart by body form (signed unless `payload`). */
function findCell(report, group, kind, op, size, conc, payload = 'signed') {
  return report.cells.find((c) => c.group === group && c.kind === kind && c.op === op && c.size === size && c.conc === conc && (c.kind !== 'put' || (c.payload ?? 'signed') === payload));
}

function goals(report, opts) {
  const out = [];
  const add = (goal, status, figure, note = '') => out.push({ goal, status, figure, note });
  const unavailable = (what) => report.unavailable.find((u) => u.what === what);
  const upstreamNames = report.upstreams.map((u) => u.name);
  for (const name of upstreamNames) {
    const group = `upstream:${name}`;
    const na = unavailable(`casket → ${name}`) ?? unavailable(name);
    for (const op of ['PutObject', 'GetObject']) {
      for (const c of opts.concurrency) {
        const cell = findCell(report, group, op === 'PutObject' ? 'put' : 'get', op, 8 * MiB, c);
        const goal = `casket → ${name} 8 MiB ${op}${op === 'PutObject' ? ' signed' : ''} c=${c} ≥ 90% of direct MiB/s`;
        if (!cell || !cell.results.casket || !cell.results.direct) add(goal, 'N/A', 'not measured', na ? `not available: ${na.reason}` : 'cell not run');
        else {
          const r = cell.results.casket.mibPerS / cell.results.direct.mibPerS;
          const ng = cell.results.nginx ? `; nginx ${pct(cell.results.nginx.mibPerS / cell.results.direct.mibPerS)}` : '';
          add(goal, r >= 0.9 ? 'PASS' : 'MISS', `${pct(r)} (${fmt(cell.results.casket.mibPerS)} vs ${fmt(cell.results.direct.mibPerS)} MiB/s${ng})`);
        }
      }
    }
    for (const op of ['PutObject', 'GetObject']) {
      const cell = findCell(report, group, op === 'PutObject' ? 'put' : 'get', op, 4096, 1);
      const goal = `casket → ${name} 4 KiB ${op} c=1 p50 added ≤ 1 ms`;
      if (!cell || !cell.results.casket || !cell.results.direct) add(goal, 'N/A', 'not measured', na ? `not available: ${na.reason}` : 'cell not run');
      else {
        const d = cell.results.casket.p50 - cell.results.direct.p50;
        const ng = cell.results.nginx ? `; nginx adds ${fmt(cell.results.nginx.p50 - cell.results.direct.p50, 2)} ms` : '';
        add(goal, d <= 1 ? 'PASS' : 'MISS', `+${fmt(d, 2)} ms (${fmt(cell.results.casket.p50, 2)} vs ${fmt(cell.results.direct.p50, 2)} ms${ng})`);
      }
    }
  }
  out.push(...speedGoals(report, opts));
  for (const [op, want] of [['PutObject', 2000], ['GetObject', 4000]]) {
    const cell = findCell(report, 'embedded', op === 'PutObject' ? 'put' : 'get', op, 4096, 8);
    const goal = `embedded 4 KiB ${op} c=8 ≥ ${want.toLocaleString('en-US')} req/s`;
    if (!cell) add(goal, 'N/A', 'not measured', 'cell not run');
    else {
      const x = cell.results.casket.reqPerS;
      add(goal, x >= want ? 'PASS' : 'MISS', `${fmt(x)} req/s = ${pct(x / want)} of goal; ${fmt(x / cell.results.disk.reqPerS, 2)}× the raw disk (${fmt(cell.results.disk.reqPerS)} req/s)`);
    }
  }
  if (report.big) out.push(rssGoal(report.big));
  else add('embedded: peak RSS while 1 GiB goes in and out < 150 MiB', 'N/A', 'not measured', 'big phase not run');
  for (const cell of report.cells.filter((c) => c.kind === 'cond')) {
    for (const [u, k, who] of [['unconditional', 'conditional', 'casket'], ['direct-unconditional', 'direct-conditional', 'direct']]) {
      if (!cell.results[u] || !cell.results[k]) continue;
      const cost = cell.results[u].reqPerS / cell.results[k].reqPerS - 1;
      const lat = cell.results[k].p50 / cell.results[u].p50 - 1;
      const status = who === 'casket' ? (cost <= 0.1 ? 'PASS' : 'MISS') : 'INFO';
      add(`${cell.group} ${who} conditional PutObject 4 KiB c=${cell.conc} ≤ 10% dearer`, status, `${cost >= 0 ? '+' : ''}${pct(cost)} req/s cost, p50 ${lat >= 0 ? '+' : ''}${pct(lat)} (${fmt(cell.results[k].reqPerS)} vs ${fmt(cell.results[u].reqPerS)} req/s)`);
    }
  }
  for (const c of report.contended) {
    add(`${c.group} contended RMW, ${c.agents} agents: lost updates = 0`, c.lostUpdates === 0 && c.phantomWrites === 0 && c.duplicatedTokens === 0 ? 'PASS' : 'MISS', `${c.lostUpdates} lost, ${c.phantomWrites} phantom, ${c.duplicatedTokens} duplicated of ${c.writes} writes; ${fmt(c.writesPerS)} writes/s, ${pct(c.share412)} 412`);
  }
  return out;
}

/** Peak RSS of a fresh casket while the big object goes in and out. */
function rssGoal(b) {
  const peak = Math.max(b.put.peakRss, b.get.peakRss);
  const full = b.size >= 1024 * MiB;
  return {
    goal: `${b.where === 'embedded' ? 'embedded' : `casket → ${b.where}`}: peak RSS while ${sizeName(b.size)} goes in and out < 150 MiB`,
    status: peak < 150 * MiB ? (full ? 'PASS' : 'PASS*') : 'MISS',
    figure: `${fmt(peak / MiB)} MiB (idle ${fmt(b.idleRss / MiB)} MiB; PUT ${fmt(b.put.peakRss / MiB)}, GET ${fmt(b.get.peakRss / MiB)})`,
    note: full ? '' : '* measured with a smaller object than 1 GiB',
  };
}

/**
 * µs of one core per body of `size` for each hash casket may run on a PUT
 * (SHA-256 for the ETag; MD5 to check an unsigned body's upstream ETag;
 * CRC32 to verify an aws-chunked trailer), measured in this run — the same
 * implementations casket uses (dist/vocabulary/checksums.js, as
 * scripts/bench-checksums.mjs measures them), medians of 5 after a warm-up,
 * in CPU time of this process.
 */
async function hashCosts(size) {
  const { createChecksum } = await import(join(ROOT, 'dist', 'vocabulary', 'checksums.js'));
  const buf = randomBytes(size);
  const pieces = [];
  for (let i = 0; i < size; i += 64 * 1024) pieces.push(buf.subarray(i, i + 64 * 1024));
  const time = (make) => {
    // CPU time of this process, not wall time: on shared cores a wall clock counts other programs' turns too.
    const once = () => {
      const t = process.cpuUsage();
      const reps = size < MiB ? 2000 : 10;
      for (let r = 0; r < reps; r++) {
        const h = make();
        for (const p of pieces) h.update(p);
        h.digest();
      }
      const used = process.cpuUsage(t);
      return (used.user + used.system) / reps;
    };
    once();
    return median(Array.from({ length: 5 }, once));
  };
  return { sha256: time(() => createHash('sha256')), md5: time(() => createHash('md5')), crc32: time(() => createChecksum('crc32')) };
}

/** The hashing the contract requires of casket for a cell (docs/design.md: SHA-256 ETags; integrity of what the upstream stored). */
function requiredHashing(cell, costs) {
  if (cell.op !== 'PutObject' || !costs) return { us: 0, what: 'none' };
  const c = costs[cell.size];
  if (!c) return { us: NaN, what: 'not measured' };
  const form = cell.payload ?? 'signed';
  // Signed: the upstream verifies the SHA-256 casket sends. Unsigned: nothing but MD5 lets casket check what was stored (RGW takes no trailer).
  if (form === 'signed') return { us: c.sha256, what: 'SHA-256' };
  if (form === 'unsigned') return { us: c.sha256 + c.md5, what: 'SHA-256 + MD5' };
  return { us: c.sha256 + c.md5 + c.crc32, what: 'SHA-256 + MD5 + CRC32' };
}

/**
 * The performance goals, as README's Performance section states them: casket
 * in front of Ceph RGW, c=8, medians of ≥ 3 alternating runs, every figure a
 * ratio to a baseline measured in the same cell. The bare Node proxy is the
 * cheaper (by CPU per request) of node-proxy.mjs (node:http) and
 * undici-proxy.mjs in that cell: the fastest Node client is the floor.
 */
function speedGoals(report, opts) {
  const out = [];
  const name = 'rgw';
  const group = `upstream:${name}`;
  const found = report.upstreams.some((u) => u.name === name);
  const why = report.unavailable.find((u) => u.what === `casket → ${name}` || u.what === name)?.reason;
  const missing = (goal, note) => out.push({ goal, status: 'N/A', figure: 'not measured', note });
  const floorOf = (cell) => {
    const cands = ['node', 'undici'].filter((n) => cell.results[n]);
    if (!cands.length) return undefined;
    const by = (k) => cands.reduce((a, b) => (k === 'cpu' ? (cell.results[a].serverCpuUsPerOp <= cell.results[b].serverCpuUsPerOp ? a : b) : cell.results[a].reqPerS >= cell.results[b].reqPerS ? a : b));
    return { cpu: by('cpu'), tput: by('tput') };
  };
  const cellGoals = (label, cell, tputGoal) => {
    const cpuGoal = `casket → ${name} ${label} c=${GOAL_CONC}: CPU/op ≤ 1.25 × (bare Node proxy + required hashing)`;
    const tGoal = tputGoal && `casket → ${name} ${label} c=${GOAL_CONC}: req/s ≥ ${tputGoal}× bare Node proxy`;
    if (!found) {
      missing(cpuGoal, `RGW not found: ${why ?? 'see "upstreams"'}`);
      if (tGoal) missing(tGoal, 'RGW not found');
      return;
    }
    const c = cell?.results.casket;
    const floor = cell && floorOf(cell);
    if (!c || !floor) {
      missing(cpuGoal, !cell ? 'cell not run' : `no ${c ? 'bare Node proxy' : 'casket'} in this cell`);
      if (tGoal) missing(tGoal, 'cell not run');
      return;
    }
    const load = `load ${fmt(cell.load?.before, 1)}–${fmt(cell.load?.after, 1)}`;
    const f = cell.results[floor.cpu];
    const h = requiredHashing(cell, report.hashCosts);
    const budget = 1.25 * (f.serverCpuUsPerOp + h.us);
    const cpuRatio = c.serverCpuUsPerOp / (f.serverCpuUsPerOp + h.us);
    const sent = cell.sent?.[floor.cpu] ? `; ${floor.cpu} sent ${cell.sent[floor.cpu]}` : '';
    out.push({ goal: cpuGoal, status: c.serverCpuUsPerOp <= budget ? 'PASS' : 'MISS', figure: `${fmt(cpuRatio, 2)}× (${fmt(c.serverCpuUsPerOp, 0)} µs vs ${floor.cpu} ${fmt(f.serverCpuUsPerOp, 0)} + ${h.what} ${fmt(h.us, 0)} µs)`, note: `${load}${sent}` });
    if (tGoal) {
      const t = cell.results[floor.tput];
      const r = c.reqPerS / t.reqPerS;
      out.push({ goal: tGoal, status: r >= tputGoal ? 'PASS' : 'MISS', figure: `${fmt(r, 2)}× ${floor.tput} (${fmt(c.reqPerS)} vs ${fmt(t.reqPerS)} req/s)`, note: load });
    }
  };
  cellGoals('4 KiB PutObject signed', findCell(report, group, 'put', 'PutObject', 4096, GOAL_CONC), 0.85);
  cellGoals('4 KiB GetObject', findCell(report, group, 'get', 'GetObject', 4096, GOAL_CONC), 0.85);
  for (const form of ['signed', 'unsigned', 'chunked-crc32']) {
    const refused = report.refusals.find((r) => r.upstream === name && r.form === form);
    if (refused) out.push({ goal: `casket → ${name} 8 MiB PutObject ${form}`, status: 'MISS', figure: `casket refuses ${form}`, note: refused.why });
    else cellGoals(`8 MiB PutObject ${form}`, findCell(report, group, 'put', 'PutObject', 8 * MiB, GOAL_CONC, form));
  }
  cellGoals('8 MiB GetObject', findCell(report, group, 'get', 'GetObject', 8 * MiB, GOAL_CONC), 0.9);
  cellGoals('CopyObject 4 KiB', findCell(report, group, 'copy', 'CopyObject', 4096, GOAL_CONC));
  cellGoals('ListObjectsV2 of 1,000 keys', findCell(report, group, 'list', 'ListObjectsV2', 0, GOAL_CONC));
  const big = report.bigUpstream.find((b) => b.where === name);
  const rssGoalName = `casket → ${name}: peak RSS while 1 GiB goes in and out < 150 MiB`;
  if (big) out.push(rssGoal(big));
  else if (!found) missing(rssGoalName, `RGW not found: ${why ?? 'see "upstreams"'}`);
  else missing(rssGoalName, report.unavailable.find((u) => u.what === `big object through casket → ${name}`)?.reason ?? 'big phase not run');
  // The embedded store against the bare file server (GET) and the raw disk (PUT), same cell.
  for (const [op, against, want] of [['GetObject', 'files', 0.8], ['PutObject', 'disk', 0.9]]) {
    const cell = findCell(report, 'embedded', op === 'PutObject' ? 'put' : 'get', op, 4096, GOAL_CONC);
    const goal = `embedded 4 KiB ${op} c=${GOAL_CONC}: req/s ≥ ${want}× ${against === 'files' ? 'a bare Node file server' : 'raw write+fsync+rename'}`;
    const c = cell?.results.casket;
    const b = cell?.results[against];
    if (!c || !b) missing(goal, cell ? `no ${against} in this cell` : 'cell not run');
    else out.push({ goal, status: c.reqPerS / b.reqPerS >= want ? 'PASS' : 'MISS', figure: `${fmt(c.reqPerS / b.reqPerS, 2)}× (${fmt(c.reqPerS)} vs ${fmt(b.reqPerS)} req/s)`, note: `load ${fmt(cell.load?.before, 1)}–${fmt(cell.load?.after, 1)}` });
  }
  return out;
}

// ---------------------------------------------------------------- output

/** What a target's ratio is taken against: the cell's reference, or, for conditional writes, the same path unconditional. */
function refFor(cell, name) {
  if (cell.kind === 'cond') {
    if (name === 'conditional') return 'unconditional';
    if (name === 'direct-conditional') return 'direct-unconditional';
    if (name === 'unconditional' && cell.results['direct-unconditional']) return 'direct-unconditional';
    return undefined;
  }
  return name === cell.ref ? undefined : cell.ref;
}

function print(report, opts) {
  const lines = [];
  const put = (s = '') => lines.push(s);
  put();
  put(`casket bench — ${report.meta.date}, commit ${report.meta.commit}, node ${report.meta.node}, ${report.meta.cores}× ${report.meta.cpu}`);
  put(`${opts.runs} runs × ${opts.duration} s per target per cell, alternating, after a warm-up; medians over runs. ratio = target / ${'ref'} (req/s).`);
  put('srv µs/op: CPU of the server process(es) per request (nginx: master + worker; RGW direct: radosgw + its OSDs, when found in /proc); gen µs/op: CPU of this load generator per request.');
  if (report.upstreams.length) put(`upstreams: ${report.upstreams.map((u) => `${u.name} (${u.how})`).join('; ')}`);
  const loads = report.cells.flatMap((c) => [c.load?.before, c.load?.after]).filter(Number.isFinite);
  const during = loads.length ? `, ${fmt(Math.min(...loads), 2)}–${fmt(Math.max(...loads), 2)} during cells` : '';
  put(`1-min load average: ${fmt(report.meta.loadAtStart[0], 2)} at start${during} (this bench alone keeps it near 1–2 on ${report.meta.cores} cores; more means other work shared the CPU).`);
  const headers = ['group', 'phase', 'size', 'c', 'target', 'req/s', 'MiB/s', 'p50 ms', 'p99 ms', 'ratio', 'srv µs/op', 'gen µs/op', 'err'];
  const rows = [];
  for (const cell of report.cells) {
    const phase = cell.kind === 'cond' ? 'PutObject cond' : cell.kind === 'put' ? `PutObject ${cell.payload ?? 'signed'}` : cell.op;
    for (const [name, r] of Object.entries(cell.results)) {
      const refName = refFor(cell, name);
      const ref = refName && cell.results[refName];
      let ratio = ref ? `${fmt(r.reqPerS / ref.reqPerS, 2)}× ${refName}` : '(ref)';
      if (name === 'sha256') ratio = `casket ${pct(cell.results.casket.mibPerS / r.mibPerS)} of it`;
      if (name === 'casket' && cell.results.nginx && refName !== 'nginx') ratio += `, ${fmt(r.reqPerS / cell.results.nginx.reqPerS, 2)}× nginx`;
      if (name === 'node' && cell.results.nginx && refName !== 'nginx') ratio += `, ${fmt(r.reqPerS / cell.results.nginx.reqPerS, 2)}× nginx`;
      // A baseline sending another form than the cell's (its upstream refuses the cell's) says which.
      const shown = cell.sent?.[name] ? `${name} as ${cell.sent[name]}` : name;
      rows.push([cell.group, phase, cell.keys ? `${cell.keys} keys` : sizeName(cell.size), cell.conc, shown, fmt(r.reqPerS), fmt(r.mibPerS), fmt(r.p50, 2), fmt(r.p99, 2), ratio, fmt(r.serverCpuUsPerOp, 0), fmt(r.benchCpuUsPerOp, 0), r.errors || '']);
    }
  }
  put();
  put(table(headers, rows));
  const upCells = report.cells.filter((c) => c.group.startsWith('upstream:') && c.kind !== 'cond' && c.results.casket);
  if (upCells.length) {
    put();
    put('casket in front of each upstream, side by side: req/s ratios (= MiB/s ratios within a cell) and server CPU per request');
    put(
      table(
        ['group', 'phase', 'size', 'c', 'casket req/s', 'casket MiB/s', 'casket/direct', 'casket/nginx', 'nginx/direct', 'node/nginx', 'casket/node', 'casket/undici', 'casket µs/op', 'nginx µs/op', 'node µs/op', 'undici µs/op', 'direct µs/op', 'load'],
        upCells.map((cell) => {
          const { casket, nginx, node, undici, direct } = cell.results;
          const ratio = (a, b, who) => (a && b ? `${fmt(a.reqPerS / b.reqPerS, 2)}×${cell.sent?.[who] ? ` (${who} ${cell.sent[who]})` : ''}` : '—');
          return [
            cell.group, cell.kind === 'put' ? `PutObject ${cell.payload ?? 'signed'}` : cell.op, cell.keys ? `${cell.keys} keys` : sizeName(cell.size), cell.conc,
            fmt(casket.reqPerS), fmt(casket.mibPerS), ratio(casket, direct, 'direct'), ratio(casket, nginx, 'nginx'), ratio(nginx, direct, 'nginx'), ratio(node, nginx, 'node'), ratio(casket, node, 'node'), ratio(casket, undici, 'undici'),
            fmt(casket.serverCpuUsPerOp, 0), fmt(nginx?.serverCpuUsPerOp, 0), fmt(node?.serverCpuUsPerOp, 0), fmt(undici?.serverCpuUsPerOp, 0), fmt(direct?.serverCpuUsPerOp, 0), `${fmt(cell.load?.before, 1)}–${fmt(cell.load?.after, 1)}`,
          ];
        }),
      ),
    );
  }
  if (report.contended.length) {
    put();
    put('contended read-modify-write on one key (GET, append token, PUT If-Match; 412 → re-read)');
    put(
      table(
        ['group', 'target', 'agents', 'writes/s', '412 share', 'PUT p50', 'PUT p99', 'writes', 'lost', 'phantom', 'errors'],
        report.contended.map((c) => [c.group, c.target, c.agents, fmt(c.writesPerS), pct(c.share412), fmt(c.putP50, 2), fmt(c.putP99, 2), c.writes, c.lostUpdates, c.phantomWrites, c.otherErrors]),
      ),
    );
    for (const c of report.contended) {
      const why = [...new Set(c.runs.map((r) => r.lastOther).filter(Boolean))];
      if (c.otherErrors) put(`  ${c.group}: ${c.otherErrors} requests neither 200 nor 412 (${why.join('; ')})`);
    }
  }
  for (const b of [report.big, ...report.bigUpstream].filter(Boolean)) {
    put();
    put(`${sizeName(b.size)} object, streamed (${b.where === 'embedded' ? 'embedded store' : `casket → ${b.where}, against ${b.where} direct`}, fresh casket; SHA-256 on this CPU: ${fmt(b.sha256MiBPerS)} MiB/s)`);
    put(
      table(
        ['phase', 'casket MiB/s', `${b.baseline} MiB/s`, 'ratio', 'peak RSS MiB'],
        [
          ['PutObject', fmt(b.put.casketMiBPerS), fmt(b.put.baselineMiBPerS), `${fmt(b.put.casketMiBPerS / b.put.baselineMiBPerS, 2)}× ${b.baseline}`, fmt(b.put.peakRss / MiB)],
          ['GetObject', fmt(b.get.casketMiBPerS), fmt(b.get.baselineMiBPerS), `${fmt(b.get.casketMiBPerS / b.get.baselineMiBPerS, 2)}× ${b.baseline}`, fmt(b.get.peakRss / MiB)],
        ],
      ),
    );
    put(`idle RSS ${fmt(b.idleRss / MiB)} MiB; VmHWM reset before each transfer: ${b.hwmReset ? 'yes' : 'no (peak = sampled VmRSS)'}`);
  }
  if (report.unavailable.length || report.notes.length) {
    put();
    for (const u of report.unavailable) put(`not available: ${u.what} — ${u.reason}`);
    for (const n of report.notes) put(`note: ${n}`);
  }
  put();
  put('goals');
  put(table(['status', 'goal', 'figure', 'note', ''], report.goals.map((g) => [g.status, g.goal, g.figure, g.note, ''])));
  if (report.profile) {
    for (const p of Object.values(report.profile)) if (p.text) put(`\n${p.text}`);
  }
  process.stdout.write(`${lines.join('\n')}\n`);
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
