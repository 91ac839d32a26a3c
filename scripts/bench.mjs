#!/usr/bin/env node
/**
 * What casket costs, against the direct path, in one run (issue 6).
 *
 *   npm run bench -- [options]          (builds, then runs this file)
 *   node scripts/bench.mjs --quick      (about 3 minutes)
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
 * - upstream (moto, and Ceph RGW with --rgw): the upstream direct, and nginx
 *   as a plain streaming reverse proxy to the same upstream (the floor any
 *   proxy pays); casket → upstream is compared with both.
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
import { cpuMs, memory, NotAvailable, resetPeak, startCasket, startMoto, startNginx, stop, stopAll, trackDir } from './bench/processes.mjs';
import { fmt, median, parseSize, pct, percentile, sizeName, table } from './bench/stats.mjs';
import { formatSummary, summarise } from './cpuprofile-summary.mjs';

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '..');
let CLI = join(ROOT, 'dist', 'cli.js');
const BUCKET = 'bench';
const MiB = 1024 * 1024;
const MOTO_CRED = { accessKeyId: 'benchmoto', secretAccessKey: 'benchmotosecret' };

// ---------------------------------------------------------------- options

const HELP = `usage: node scripts/bench.mjs [options]

  --duration S          seconds per measured run (default 3; --quick 1)
  --runs N              runs per cell, alternating with the baseline (default 3, min 3)
  --quick               duration 1, concurrency 1,8, big object 64 MiB
  --phases LIST         put,get,cond,contended,big[,profile] (default all but profile)
  --targets LIST        embedded,upstream (default both)
  --sizes LIST          object sizes for put/get (default 4k,8m)
  --concurrency LIST    (default 1,8,32)
  --agents N            agents in the contended phase (default 4)
  --credentials FILE    casket credentials JSON {"credentials":[{accessKey,secretKey,agent?}]};
                        entries with an agent are the contended phase's agents
                        (default: generated, --agents of them)
  --big-size SIZE       the big object (default 1g)
  --no-moto             do not start moto
  --rgw URL             also benchmark against Ceph RGW at URL (with --rgw-access-key/--rgw-secret-key)
  --signer fast|smithy  load-generator signer (default fast, checked against @smithy/signature-v4)
  --casket-arg ARG      extra casket flag, repeatable (e.g. --casket-arg=--log-level=warn)
  --profile DIR         also run casket under node --cpu-prof (a fresh casket per phase) for
                        PUT and GET at c=8 on the embedded store, and through moto when the
                        upstream target is selected; summaries go to DIR/<phase>/summary.txt
  --profile-sizes LIST  object sizes to profile (default 4k)
  --profile-duration S  seconds per profiled phase (default 10)
  --json FILE           write all results as JSON
  --tmp-dir DIR         where temp dirs go (default $TMPDIR)
  --keep                keep temp dirs (logs, data)
  --max-time S          hard limit for the whole run (default 3600)
`;

function parseOptions(argv) {
  const o = {
    duration: 3, runs: 3, phases: ['put', 'get', 'cond', 'contended', 'big'], targets: ['embedded', 'upstream'],
    sizes: [4 * 1024, 8 * MiB], concurrency: [1, 8, 32], agents: 4, bigSize: 1024 * MiB, moto: true,
    signer: 'fast', casketArgs: [], profileDuration: 10, profileSizes: [4 * 1024], maxTime: 3600, keep: false, quick: false,
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
      case '--rgw': o.rgw = next(); break;
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
    if (!explicit.has('--concurrency')) o.concurrency = [1, 8];
    if (!explicit.has('--big-size')) o.bigSize = 64 * MiB;
  }
  if (o.profile && !o.phases.includes('profile')) o.phases.push('profile');
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
  const serverCpu0 = pid ? cpuMs(pid) : 0;
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
  const serverCpu = pid ? cpuMs(pid) - serverCpu0 : NaN;
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

/** An S3 endpoint as a target: PUT/GET/conditional PUT workers on keys under `prefix`. */
function s3Target(name, { url, cred, bucket = BUCKET, prefix, pid, signer, mode = 'plain', getPrefix }) {
  return {
    name,
    async prepare(cell) {
      const client = new S3Client(url, cred, { signer, maxSockets: cell.conc });
      const timeoutMs = cell.size > 64 * MiB ? 600_000 : 120_000;
      const pool = bodyPool(cell.size);
      let workers;
      if (cell.op === 'GetObject') {
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
        workers = Array.from({ length: cell.conc }, (_, w) => {
          const path = keyOf(w);
          let n = w;
          return async () => {
            const b = pool[n++ % pool.length];
            const headers = conditional ? { 'if-match': etags[w] } : {};
            const res = await client.request('PUT', path, { body: b.buf, payloadHash: b.hash, headers, timeoutMs });
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

async function preloadGets(client, prefix, size, count) {
  const pool = bodyPool(size);
  for (let i = 0; i < count; i++) {
    const b = pool[i % pool.length];
    const res = await client.request('PUT', `/${BUCKET}/${prefix}get/${size}/${i}`, { body: b.buf, payloadHash: b.hash, timeoutMs: 120_000 });
    expectStatus(res, 200, `preload ${prefix}get/${size}/${i}`);
  }
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
 * and read as VmHWM (reset before each transfer when permitted). Baseline:
 * the same bytes written + fsynced + renamed, and read back, by this process.
 */
async function bigObject(opts, env) {
  const block = randomBytes(MiB);
  const t0 = now();
  const h = createHash('sha256');
  for (let left = opts.bigSize; left > 0; left -= block.length) h.update(left >= block.length ? block : block.subarray(0, left));
  const hash = h.digest('hex');
  const shaSeconds = (now() - t0) / 1000;
  const dataDir = join(env.tmp, 'casket-big');
  const casket = await startCasket({ cli: CLI, dataDir, credentialsFile: env.credentialsFile, logFile: join(env.tmp, 'casket-big.log'), extraArgs: opts.casketArgs });
  const pid = casket.pid;
  try {
    const client = new S3Client(casket.url, env.admin, { signer: opts.signer, maxSockets: 1 });
    await createBucket(client);
    const idle = memory(pid);
    const runs = [];
    const rawDir = join(env.tmp, 'raw-big');
    mkdirSync(rawDir, { recursive: true });
    const rawFile = join(rawDir, 'big');
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
    const casketPut = () =>
      sampleWhile(async () => {
        const res = await client.request('PUT', `/${BUCKET}/big`, { body: generated(opts.bigSize, block), contentLength: opts.bigSize, payloadHash: hash, timeoutMs: 900_000 });
        expectStatus(res, 200, 'big PutObject');
        if (res.headers.etag !== `"${hash}"`) throw new Error(`big PutObject: ETag ${res.headers.etag}, expected "${hash}"`);
      });
    const casketGet = () =>
      sampleWhile(async () => {
        const gh = createHash('sha256');
        const res = await client.request('GET', `/${BUCKET}/big`, { onData: (c) => gh.update(c), timeoutMs: 900_000 });
        expectStatus(res, 200, 'big GetObject');
        const got = gh.digest('hex');
        if (res.bytes !== opts.bigSize || got !== hash) throw new Error(`big GetObject: ${res.bytes} bytes, sha256 ${got}`);
      });
    const diskPut = async () => {
      const s = now();
      const fh = await open(`${rawFile}.tmp`, 'w');
      for await (const chunk of generated(opts.bigSize, block)) await writeAllFile(fh, chunk);
      await fh.sync();
      await fh.close();
      await rename(`${rawFile}.tmp`, rawFile);
      const seconds = (now() - s) / 1000;
      return { seconds, mibPerS: opts.bigSize / MiB / seconds };
    };
    const diskGet = async () => {
      const s = now();
      const gh = createHash('sha256');
      const fh = await open(rawFile, 'r');
      for await (const chunk of fh.createReadStream({ highWaterMark: MiB })) gh.update(chunk);
      const seconds = (now() - s) / 1000;
      if (gh.digest('hex') !== hash) throw new Error('raw big file read back wrong');
      return { seconds, mibPerS: opts.bigSize / MiB / seconds };
    };
    for (let r = 0; r < opts.runs; r++) {
      const run = {};
      if (r % 2 === 0) {
        run.diskPut = await diskPut();
        run.casketPut = await casketPut();
        run.diskGet = await diskGet();
        run.casketGet = await casketGet();
      } else {
        run.casketPut = await casketPut();
        run.diskPut = await diskPut();
        run.casketGet = await casketGet();
        run.diskGet = await diskGet();
      }
      runs.push(run);
      log(`    big run ${r + 1}: PUT ${fmt(run.casketPut.mibPerS)} MiB/s (disk ${fmt(run.diskPut.mibPerS)}), GET ${fmt(run.casketGet.mibPerS)} MiB/s (disk ${fmt(run.diskGet.mibPerS)}), peak RSS ${fmt(run.casketPut.peakRss / MiB)} / ${fmt(run.casketGet.peakRss / MiB)} MiB`);
    }
    client.close();
    const med = (f) => median(runs.map(f));
    return {
      size: opts.bigSize,
      sha256MiBPerS: opts.bigSize / MiB / shaSeconds,
      idleRss: idle.rss,
      put: { casketMiBPerS: med((x) => x.casketPut.mibPerS), diskMiBPerS: med((x) => x.diskPut.mibPerS), peakRss: Math.max(...runs.map((x) => x.casketPut.peakRss)) },
      get: { casketMiBPerS: med((x) => x.casketGet.mibPerS), diskMiBPerS: med((x) => x.diskGet.mibPerS), peakRss: Math.max(...runs.map((x) => x.casketGet.peakRss)) },
      hwmReset: runs[0]?.casketPut.hwmReset,
      runs,
    };
  } finally {
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
  if (opts.targets.includes('upstream') && opts.moto) {
    try {
      moto = await startMoto({ dir: mkdirp(join(env.tmp, 'moto-prof')) });
      const direct = new S3Client(moto.url, MOTO_CRED, { signer: opts.signer });
      await createBucket(direct);
      direct.close();
      backends.push({ name: 'moto', args: ['--upstream', moto.url, '--upstream-access-key', MOTO_CRED.accessKeyId, '--upstream-secret-key', MOTO_CRED.secretAccessKey] });
    } catch (e) {
      log(`    moto not available for profiling: ${e.message}`);
    }
  }
  try {
    for (const backend of backends) {
      for (const size of opts.profileSizes) {
        for (const op of ['PutObject', 'GetObject']) {
          const label = `${backend.name}-${op === 'PutObject' ? 'put' : 'get'}-${sizeName(size).replace(' ', '').toLowerCase()}`;
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
            if (op === 'GetObject') await preloadGets(client, 'p/', size, conc);
            client.close();
            const target = s3Target('casket', { url: casket.url, cred: env.admin, prefix: 'p/', pid: casket.pid, signer: opts.signer });
            const p = await target.prepare({ op, size, conc, kind: op === 'PutObject' ? 'put' : 'get' });
            const m = await measure(p.workers, opts.profileDuration, casket.pid);
            p.done();
            log(`    profiled ${label} c=${conc}: ${fmt(m.reqPerS)} req/s, ${fmt(m.mibPerS)} MiB/s, p50 ${fmt(m.p50, 2)} ms, casket ${fmt(m.serverCpuUsPerOp, 0)} µs CPU/op`);
            out[label] = { measured: m };
          } finally {
            await stop(casket.child);
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
    meta: { date: new Date().toISOString(), commit, loadAtStart: loadavg(), node: process.version, cpu: cpus()[0]?.model, cores: cpus().length, argv: process.argv.slice(2), options: { ...opts, credentials: opts.credentials ? '(file)' : undefined, rgwSecretKey: undefined } },
    cells: [], unavailable: [], contended: [], big: undefined, profile: undefined, goals: [],
  };
  const phases = new Set(opts.phases);
  const sizes = opts.sizes;
  const conc = opts.concurrency;
  const maxConc = Math.max(...conc);

  const addCell = (group, cell, summary, ref) => report.cells.push({ group, ...cell, ref, load: cell.load, results: summary });

  // ------------------------------------------------------------ embedded
  const throughputPhases = ['put', 'get', 'cond', 'contended'].some((x) => phases.has(x));
  if (opts.targets.includes('embedded') && throughputPhases) {
    log('== embedded store');
    const casket = await startCasket({ cli: CLI, dataDir: join(tmp, 'casket'), credentialsFile, logFile: join(tmp, 'casket.log'), extraArgs: opts.casketArgs });
    log(`   casket pid ${casket.pid} at ${casket.url}`);
    try {
      const client = new S3Client(casket.url, admin, { signer: opts.signer });
      await createBucket(client);
      const disk = diskTarget(join(tmp, 'raw'));
      const sha = shaTarget();
      const ck = s3Target('casket', { url: casket.url, cred: admin, prefix: '', pid: casket.pid, signer: opts.signer });
      if (phases.has('put')) {
        for (const size of sizes) {
          for (const c of conc) {
            const cell = { op: 'PutObject', size, conc: c, kind: 'put', label: `embedded PutObject ${sizeName(size)} c=${c}` };
            log(`  ${cell.label}`);
            const targets = c === Math.min(...conc) ? [disk, ck, sha] : [disk, ck];
            addCell('embedded', cell, await runCell(cell, targets, opts), 'disk');
          }
        }
      }
      if (phases.has('get')) {
        for (const size of sizes) {
          await preloadGets(client, '', size, maxConc);
          await disk.preload(size, maxConc);
          for (const c of conc) {
            const cell = { op: 'GetObject', size, conc: c, kind: 'get', label: `embedded GetObject ${sizeName(size)} c=${c}` };
            log(`  ${cell.label}`);
            addCell('embedded', cell, await runCell(cell, [disk, ck], opts), 'disk');
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
      await stop(casket.child);
    }
  }

  // ------------------------------------------------------------ upstreams
  if (opts.targets.includes('upstream') && throughputPhases) {
    const upstreams = [];
    if (opts.moto) upstreams.push({ name: 'moto', start: async () => startMoto({ dir: mkdirp(join(tmp, 'moto')) }), cred: MOTO_CRED });
    if (opts.rgw) upstreams.push({ name: 'rgw', start: async () => ({ url: opts.rgw.replace(/\/+$/, ''), pid: undefined }), cred: { accessKeyId: opts.rgwAccessKey, secretAccessKey: opts.rgwSecretKey } });
    for (const up of upstreams) {
      const group = `upstream:${up.name}`;
      log(`== ${up.name}`);
      let server;
      try {
        server = await up.start();
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
        let casket;
        try {
          casket = await startCasket({
            cli: CLI, dataDir: join(tmp, `casket-${up.name}`), credentialsFile, logFile: join(tmp, `casket-${up.name}.log`),
            extraArgs: ['--upstream', server.url, '--upstream-access-key', up.cred.accessKeyId, '--upstream-secret-key', up.cred.secretAccessKey, ...opts.casketArgs],
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
        if (casket) t.casket = s3Target('casket', { url: casket.url, cred: admin, prefix: 'c/', pid: casket.pid, signer: opts.signer });
        const list = Object.values(t);
        if (phases.has('put')) {
          for (const size of sizes) {
            for (const c of conc) {
              const cell = { op: 'PutObject', size, conc: c, kind: 'put', label: `${up.name} PutObject ${sizeName(size)} c=${c}` };
              log(`  ${cell.label}`);
              addCell(group, cell, await runCell(cell, list, opts), 'direct');
            }
          }
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

  if (phases.has('profile')) {
    log(`== profile (node --cpu-prof) → ${opts.profile}`);
    report.profile = await profile(opts, env);
  }

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

async function supportsIfMatch(client) {
  try {
    const put = await client.request('PUT', `/${BUCKET}/probe-if-match`, { body: Buffer.from('x') });
    if (put.status !== 200) return false;
    const res = await client.request('PUT', `/${BUCKET}/probe-if-match`, { body: Buffer.from('y'), headers: { 'if-match': '"0000"' } });
    return res.status === 412;
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

function findCell(report, group, kind, op, size, conc) {
  return report.cells.find((c) => c.group === group && c.kind === kind && c.op === op && c.size === size && c.conc === conc);
}

function goals(report, opts) {
  const out = [];
  const add = (goal, status, figure, note = '') => out.push({ goal, status, figure, note });
  const unavailable = (what) => report.unavailable.find((u) => u.what === what);
  const upstreamGroups = [...new Set(report.cells.map((c) => c.group).filter((g) => g.startsWith('upstream:')))];
  const upstreamNames = [...(opts.moto ? ['moto'] : []), ...(opts.rgw ? ['rgw'] : [])];
  for (const name of upstreamNames) {
    const group = `upstream:${name}`;
    const na = unavailable(`casket → ${name}`) ?? unavailable(name);
    for (const op of ['PutObject', 'GetObject']) {
      for (const c of opts.concurrency) {
        const cell = findCell(report, group, op === 'PutObject' ? 'put' : 'get', op, 8 * MiB, c);
        const goal = `casket → ${name} 8 MiB ${op} c=${c} ≥ 90% of direct MiB/s`;
        if (!cell || !cell.results.casket) add(goal, 'N/A', 'not measured', na ? `not available: ${na.reason}` : 'cell not run');
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
      if (!cell || !cell.results.casket) add(goal, 'N/A', 'not measured', na ? `not available: ${na.reason}` : 'cell not run');
      else {
        const d = cell.results.casket.p50 - cell.results.direct.p50;
        const ng = cell.results.nginx ? `; nginx adds ${fmt(cell.results.nginx.p50 - cell.results.direct.p50, 2)} ms` : '';
        add(goal, d <= 1 ? 'PASS' : 'MISS', `+${fmt(d, 2)} ms (${fmt(cell.results.casket.p50, 2)} vs ${fmt(cell.results.direct.p50, 2)} ms${ng})`);
      }
    }
    void upstreamGroups;
  }
  for (const [op, want] of [['PutObject', 2000], ['GetObject', 4000]]) {
    const cell = findCell(report, 'embedded', op === 'PutObject' ? 'put' : 'get', op, 4096, 8);
    const goal = `embedded 4 KiB ${op} c=8 ≥ ${want.toLocaleString('en-US')} req/s`;
    if (!cell) add(goal, 'N/A', 'not measured', 'cell not run');
    else {
      const x = cell.results.casket.reqPerS;
      add(goal, x >= want ? 'PASS' : 'MISS', `${fmt(x)} req/s = ${pct(x / want)} of goal; ${fmt(x / cell.results.disk.reqPerS, 2)}× the raw disk (${fmt(cell.results.disk.reqPerS)} req/s)`);
    }
  }
  if (report.big) {
    const peak = Math.max(report.big.put.peakRss, report.big.get.peakRss);
    const full = report.big.size >= 1024 * MiB;
    add(`peak RSS while ${sizeName(report.big.size)} goes in and out < 150 MiB`, peak < 150 * MiB ? (full ? 'PASS' : 'PASS*') : 'MISS', `${fmt(peak / MiB)} MiB (idle ${fmt(report.big.idleRss / MiB)} MiB; PUT ${fmt(report.big.put.peakRss / MiB)}, GET ${fmt(report.big.get.peakRss / MiB)})`, full ? '' : '* measured with a smaller object than 1 GiB');
  } else add('peak RSS while 1 GiB goes in and out < 150 MiB', 'N/A', 'not measured', 'big phase not run');
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
  put('srv µs/op: CPU of the server process(es) per request; gen µs/op: CPU of this load generator per request.');
  const loads = report.cells.flatMap((c) => [c.load?.before, c.load?.after]).filter(Number.isFinite);
  put(`1-min load average: ${fmt(report.meta.loadAtStart[0], 2)} at start, ${fmt(Math.min(...loads), 2)}–${fmt(Math.max(...loads), 2)} during cells (this bench alone keeps it near 1–2 on ${report.meta.cores} cores; more means other work shared the CPU).`);
  const headers = ['group', 'phase', 'size', 'c', 'target', 'req/s', 'MiB/s', 'p50 ms', 'p99 ms', 'ratio', 'srv µs/op', 'gen µs/op', 'err'];
  const rows = [];
  for (const cell of report.cells) {
    const phase = cell.kind === 'cond' ? 'PutObject cond' : cell.op;
    for (const [name, r] of Object.entries(cell.results)) {
      const refName = refFor(cell, name);
      const ref = refName && cell.results[refName];
      let ratio = ref ? `${fmt(r.reqPerS / ref.reqPerS, 2)}× ${refName}` : '(ref)';
      if (name === 'sha256') ratio = `casket ${pct(cell.results.casket.mibPerS / r.mibPerS)} of it`;
      if (name === 'casket' && cell.results.nginx) ratio += `, ${fmt(r.reqPerS / cell.results.nginx.reqPerS, 2)}× nginx`;
      rows.push([cell.group, phase, sizeName(cell.size), cell.conc, name, fmt(r.reqPerS), fmt(r.mibPerS), fmt(r.p50, 2), fmt(r.p99, 2), ratio, fmt(r.serverCpuUsPerOp, 0), fmt(r.benchCpuUsPerOp, 0), r.errors || '']);
    }
  }
  put();
  put(table(headers, rows));
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
  if (report.big) {
    const b = report.big;
    put();
    put(`${sizeName(b.size)} object, streamed (embedded store, fresh casket; SHA-256 on this CPU: ${fmt(b.sha256MiBPerS)} MiB/s)`);
    put(
      table(
        ['phase', 'casket MiB/s', 'disk MiB/s', 'ratio', 'peak RSS MiB'],
        [
          ['PutObject', fmt(b.put.casketMiBPerS), fmt(b.put.diskMiBPerS), `${fmt(b.put.casketMiBPerS / b.put.diskMiBPerS, 2)}× disk`, fmt(b.put.peakRss / MiB)],
          ['GetObject', fmt(b.get.casketMiBPerS), fmt(b.get.diskMiBPerS), `${fmt(b.get.casketMiBPerS / b.get.diskMiBPerS, 2)}× disk`, fmt(b.get.peakRss / MiB)],
        ],
      ),
    );
    put(`idle RSS ${fmt(b.idleRss / MiB)} MiB; VmHWM reset before each transfer: ${b.hwmReset ? 'yes' : 'no (peak = sampled VmRSS)'}`);
  }
  if (report.unavailable.length) {
    put();
    for (const u of report.unavailable) put(`not available: ${u.what} — ${u.reason}`);
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
