/** Constants and helpers every bench phase shares: bodies, credentials, upstream discovery. Part of scripts/bench.mjs (the runner). */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { performance } from 'node:perf_hooks';
import { errorCode } from './client.mjs';
import { sha256hex } from './signer.mjs';
import { cpuMs, memory } from './processes.mjs';
import { PAYLOAD_MODES } from './payload.mjs';
import { goals } from './goals.mjs';

export const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '../..');
/** The casket under test: dist/cli.js, or the run's snapshot of it (main). */
export const paths = { cli: join(ROOT, 'dist', 'cli.js') };
export const BUCKET = 'bench';
export const MiB = 1024 * 1024;
export const MOTO_CRED = { accessKeyId: 'benchmoto', secretAccessKey: 'benchmotosecret' };
// Where scripts/ceph-rgw-up.sh puts RGW by default, with its default keys.
export const RGW_PROBE_URL = 'http://127.0.0.1:18080';
export const RGW_DEFAULT_CRED = { accessKeyId: 'test', secretAccessKey: 'test' };
// The concurrency the performance goals (README: Performance) are stated at.
export const GOAL_CONC = 8;

// ---------------------------------------------------------------- helpers

export const now = () => performance.now();
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const log = (...a) => process.stderr.write(`${a.join(' ')}\n`);

export function randomCred(prefix) {
  return { accessKeyId: `${prefix}${randomBytes(6).toString('hex').toUpperCase()}`, secretAccessKey: randomBytes(24).toString('base64url') };
}

/** A pool of distinct random bodies of one size, each with its SHA-256 (computed once, off the clock). */
export const pools = new Map();
export function bodyPool(size) {
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
export function generated(size, block) {
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

export function expectStatus(res, want, what) {
  if (res.status !== want) {
    const code = errorCode(res.body) ?? '';
    throw new Error(`${what}: HTTP ${res.status} ${code}`.trim());
  }
}

/** CPU ms of one server process (and its children), or the sum over several (RGW: radosgw + its OSDs). */
export function serverCpuMs(pid) {
  return Array.isArray(pid) ? pid.reduce((a, p) => a + cpuMs(p), 0) : cpuMs(pid);
}

/**
 * The PutObject body forms a cell of `size` runs in. Upstream cells of 1 MiB
 * and more run all three by default (the performance goals for large bodies
 * are stated per form: README, Performance); small cells and the embedded
 * store, signed only unless --payloads.
 */
export function payloadsFor(opts, size, upstream) {
  if (opts.payloads) return opts.payloads;
  return upstream && size >= MiB ? PAYLOAD_MODES : ['signed'];
}

/** Whether an HTTP server answers GET / (any status) within `ms`. */
export async function answers(url, ms = 1000) {
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
export async function findUpstreams(opts) {
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
export function rgwPids(url) {
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

export async function writeAllFile(fh, buf) {
  let off = 0;
  while (off < buf.length) off += (await fh.write(buf, off, buf.length - off)).bytesWritten;
}


export function mkdirp(d) {
  mkdirSync(d, { recursive: true });
  return d;
}
