#!/usr/bin/env node
/**
 * What an event-stream subscriber costs a write (docs/design.md §9): the
 * bench's 4 KiB PutObject (signed, unconditional, an admin key) against one
 * casket on the embedded store, in alternating runs — A without a
 * subscriber, B with one connected to /_casket/events (SigV4-signed, as a
 * program would) and reading every record — at each concurrency. Prints
 * requests per second, p50 / p99 latency, the ratio B/A, the records the
 * subscriber received, and the load average (these 2 cores are shared).
 * Every write appends its event in both runs; what B adds is a reader.
 *
 *   npm run build && node scripts/bench-events.mjs [--duration S] [--runs N] [--concurrency 1,8] [--state sqlite|memory]
 *                                                  [--baseline OTHER/dist/cli.js] [--console [--control]] [--profile DIR]
 *
 * --profile DIR: casket runs under node --cpu-prof, its profile written to
 * DIR when it stops, with windows.json, each measured run's arm, span and
 * PUTs: scripts/cpuprofile-arms.mjs DIR divides the one profile by arm, so
 * arms that alternate in one process compare function by function, per PUT
 * (scripts/cpuprofile-summary.mjs reads it whole). With --arms a (or b)
 * only that arm runs.
 *
 * With --control, it also prints casket's main thread (its JavaScript and
 * the syscalls it makes) and its kernel time apart, per PUT.
 *
 * With --console, B also has the operator console's live activity view open
 * in Debian's chromium (playwright-core, headless, logged in as the admin):
 * its own EventSource on the stream, and the write log it loads. Between B
 * runs the page is blank, so A has no reader at all.
 *
 * With --control, each run has a third arm C: no reader at all, but
 * neighbour processes burning as much CPU as B's neighbours (the
 * subscriber, and chromium with --console, read from /proc) burned in the
 * B run before it. B/C is then what a reader costs casket beyond having
 * busy neighbours on the same two cores: the console runs in an operator's
 * browser, not beside casket, in production.
 *
 * With --baseline, A is a casket built from another tree (e.g. before the
 * event log existed) and B this one, neither with a subscriber: what
 * appending each write's event costs.
 *
 * Every process it starts is ended by its PID.
 */
import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { S3Client } from './bench/client.mjs';
import { fastSigner, sha256hex } from './bench/signer.mjs';
import { childPids, cpuMs, cpuTimes, startCasket, stop, stopAll } from './bench/processes.mjs';
import { median, percentile } from './bench/stats.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const DURATION_MS = Number(option('--duration', '3')) * 1000;
const RUNS = Math.max(3, Number(option('--runs', '5')));
const CONCURRENCY = option('--concurrency', '1,8').split(',').map(Number);
const STATE = option('--state', 'sqlite');
const BASELINE = option('--baseline', undefined);
const CONSOLE = args.includes('--console');
const CONTROL = args.includes('--control');
const PROFILE = option('--profile', undefined);
/** --arms a or --arms b: run only those (with --profile: a profile of one arm alone, to compare with the other's). */
const ARMS = option('--arms', 'a,b,c').split(',');
const SIZE = 4096;
const CLI = resolve(import.meta.dirname, '../dist/cli.js');

const dir = mkdtempSync(join(tmpdir(), 'casket-bench-events-'));
/** Every PUT of the session, warm-ups included: what a --profile is divided by. */
let putsInAll = 0;

/** One run: `conc` workers PUT 4 KiB for DURATION_MS; req/s, latencies, and casket's CPU per PUT (µs, from /proc: steadier than req/s on a loaded machine). */
/** Each measured run's arm, span on the monotonic clock (µs, as V8's profile timestamps) and PUTs: --profile divides the profile by arm with them. */
const windows = [];

async function run(url, cred, conc, pid, arm) {
  const startUs = Number(process.hrtime.bigint() / 1000n);
  const cpuBefore = pid ? cpuTimes(pid) : undefined;
  const mainBefore = pid ? mainThreadMs(pid) : 0;
  const client = new S3Client(url, cred);
  const bodies = Array.from({ length: 16 }, () => randomBytes(SIZE));
  const hashes = bodies.map((b) => sha256hex(b));
  const latencies = [];
  const deadline = Date.now() + DURATION_MS;
  await Promise.all(
    Array.from({ length: conc }, async (_, w) => {
      for (let i = 0; Date.now() < deadline; i++) {
        const t = performance.now();
        const r = await client.request('PUT', `/bench/w${w}-${i % 64}`, { body: bodies[i % 16], payloadHash: hashes[i % 16] });
        if (r.status !== 200) throw new Error(`PUT answered ${r.status}: ${r.body}`);
        latencies.push(performance.now() - t);
      }
    }),
  );
  client.close();
  putsInAll += latencies.length;
  if (arm) windows.push({ arm, conc, startUs, endUs: Number(process.hrtime.bigint() / 1000n), puts: latencies.length });
  latencies.sort((a, b) => a - b);
  const after = pid ? cpuTimes(pid) : undefined;
  const main = pid ? ((mainThreadMs(pid) - mainBefore) * 1000) / latencies.length : NaN;
  const perPut = (k) => (after ? ((after[k] - cpuBefore[k]) * 1000) / latencies.length : NaN);
  // sys is the kernel's share: on loopback a socket write also runs the receiver's side of TCP, so a reader's SSE bytes show up there.
  return { rps: latencies.length / (DURATION_MS / 1000), p50: percentile(latencies, 50), p99: percentile(latencies, 99), cpu: perPut('user') + perPut('sys'), user: perPut('user'), sys: perPut('sys'), main };
}

/** CPU (ms) of a process's main thread alone: casket's JavaScript and the syscalls it makes, without V8's and libuv's helper threads. */
function mainThreadMs(pid) {
  const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/**
 * A subscriber in a process of its own (as a console or a program would
 * be: not on the load generator's CPU), reading the stream and counting
 * its records; `close()` ends it and resolves to the count.
 */
const SUBSCRIBER = `
import { request } from 'node:http';
const { host, port, path, headers } = JSON.parse(process.env.SUB);
let records = 0;
const req = request({ host, port, path, headers }, (res) => {
  if (res.statusCode !== 200) { console.error('status ' + res.statusCode); process.exit(1); }
  res.setEncoding('utf8');
  let tail = '';
  res.on('data', (chunk) => {
    const text = tail + chunk;
    for (let i = text.indexOf('id: '); i >= 0; i = text.indexOf('id: ', i + 1)) if (i === 0 || text[i - 1] === '\\n') records++;
    tail = text.slice(-3);
  });
  process.send('ready');
});
req.on('error', () => {});
req.end();
process.on('message', () => { process.send(records); process.exit(0); });
`;

async function subscribe(url, cred) {
  const u = new URL(url);
  const path = '/_casket/events';
  const headers = await fastSigner(cred).sign('GET', path, { host: u.host, 'x-amz-content-sha256': sha256hex('') });
  const child = spawn(process.execPath, ['--input-type=module', '-e', SUBSCRIBER], { env: { ...process.env, SUB: JSON.stringify({ host: u.hostname, port: u.port, path, headers }) }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  await new Promise((resolveReady, reject) => {
    child.once('message', resolveReady);
    child.once('exit', (code) => reject(new Error(`subscriber exited ${code}`)));
  });
  return {
    pid: child.pid,
    close: () =>
      new Promise((resolveCount) => {
        child.removeAllListeners('exit');
        child.once('message', (n) => resolveCount(n));
        child.send('stop');
      }),
  };
}

/**
 * Neighbours burning \`cores\` of CPU in all (one process per started core,
 * each spinning its share of every 10 ms), talking to nobody: the control
 * for what busy neighbours alone do to casket's figures.
 */
const BURNER = `
const share = Number(process.env.SHARE);
const tick = () => { const end = performance.now() + share * 10; while (performance.now() < end); setTimeout(tick, Math.max(0, 10 - share * 10)); };
tick();
`;
function burn(cores) {
  const n = Math.max(1, Math.ceil(cores));
  const children = Array.from({ length: n }, () => spawn(process.execPath, ['-e', BURNER], { env: { ...process.env, SHARE: String(Math.min(1, cores / n)) }, stdio: 'ignore' }));
  return {
    pids: children.map((c) => c.pid),
    stop: () => Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r() : (c.once('exit', r), c.kill('SIGKILL')))))),
  };
}

/** CPU (ms) of every chromium process this bench started. */
function chromiumMs() {
  return childPids(process.pid)
    .filter((pid) => {
      try {
        return /chrom/i.test(readFileSync(`/proc/${pid}/comm`, 'utf8'));
      } catch {
        return false;
      }
    })
    .reduce((sum, pid) => sum + cpuMs(pid), 0);
}

/** A headless chromium logged in to the console; `open()` shows the live activity view until `close()`. */
async function consoleBrowser(url, cred) {
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: process.env.CASKET_TEST_CHROMIUM ?? '/usr/bin/chromium', headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'] });
  const page = await browser.newPage();
  await page.goto(`${url}/_casket/console/login`);
  await page.fill('#accessKeyId', cred.accessKeyId);
  await page.fill('#secretAccessKey', cred.secretAccessKey);
  await Promise.all([page.waitForURL(/\/_casket\/console\/?(#.*)?$/), page.press('#secretAccessKey', 'Enter')]);
  return {
    async open() {
      await page.goto(`${url}/_casket/console/#/activity`);
      await page.waitForSelector('.status[data-state="live"]', { timeout: 10_000 });
      // Opening the view (its page, scripts, a page of the write log) is a
      // one-off cost, ~60 ms of casket's CPU in a profile: let it finish
      // before the measured run, which is about a console left open.
      await page.waitForSelector('#older', { state: 'attached', timeout: 10_000 });
      await new Promise((r) => setTimeout(r, 300));
    },
    close: () => page.goto('about:blank'),
    quit: () => browser.close(),
  };
}

let browser;
try {
  const admin = { accessKeyId: `ADMIN${randomBytes(6).toString('hex').toUpperCase()}`, secretAccessKey: randomBytes(24).toString('base64url') };
  const credentialsFile = join(dir, 'credentials.json');
  writeFileSync(credentialsFile, JSON.stringify({ credentials: [{ accessKey: admin.accessKeyId, secretKey: admin.secretAccessKey, admin: true }] }), { mode: 0o600 });
  const casket = await startCasket({ cli: CLI, dataDir: join(dir, 'data'), credentialsFile, logFile: join(dir, 'casket.log'), extraArgs: ['--state', STATE], nodeArgs: PROFILE ? ['--cpu-prof', '--cpu-prof-dir', resolve(PROFILE)] : [] });
  if ((await new S3Client(casket.url, admin).request('PUT', '/bench')).status !== 200) throw new Error('CreateBucket failed');
  const baseline = BASELINE && (await startCasket({ cli: resolve(BASELINE), dataDir: join(dir, 'baseline'), credentialsFile, logFile: join(dir, 'baseline.log'), extraArgs: ['--state', STATE] }));
  if (baseline && (await new S3Client(baseline.url, admin).request('PUT', '/bench')).status !== 200) throw new Error('CreateBucket failed');
  if (CONSOLE) browser = await consoleBrowser(casket.url, admin);
  // Warm up (JIT), with and without a reader.
  await run(casket.url, admin, 8);
  if (baseline) await run(baseline.url, admin, 8);
  else {
    const warm = await subscribe(casket.url, admin);
    await run(casket.url, admin, 8);
    await warm.close();
  }

  console.log(`4 KiB PutObject (signed, unconditional), embedded store, --state ${STATE}; ${RUNS} alternating runs of ${DURATION_MS / 1000} s, medians`);
  if (baseline) console.log(`A: ${BASELINE}; B: this tree; no subscriber on either`);
  if (browser) console.log('B: the SSE subscriber and the console live view open in chromium');
  console.log('| c | no subscriber: req/s · p50 · p99 · casket CPU/PUT | 1 SSE subscriber: req/s · p50 · p99 · casket CPU/PUT | B/A req/s | B/A CPU | records the subscriber got / PUTs |');
  console.log('|---|---|---|---|---|---|');
  if (CONTROL) console.log("C: no reader; neighbour processes burning the CPU that B's subscriber and chromium burned in the B run before it");
  for (const conc of CONCURRENCY) {
    const a = [];
    const b = [];
    const c = [];
    let got = 0;
    let puts = 0;
    let neighbours = 0; // cores B's neighbours used in the last B run
    const used = [];
    for (let i = 0; i < RUNS; i++) {
      // Each arm goes first, second and last equally often (a, b, c · b, c, a · c, a, b): with only two
      // orders B always ran just before C, so a process still warming up favoured C.
      const arms = CONTROL ? ['a', 'b', 'c'] : ['a', 'b'];
      const order = arms.map((_, k) => arms[(i + k) % arms.length]).filter((x) => ARMS.includes(x));
      for (const which of order) {
        if (which === 'a') a.push(await run((baseline || casket).url, admin, conc, (baseline || casket).pid, 'a'));
        else if (which === 'c') {
          const burner = burn(neighbours);
          c.push(await run(casket.url, admin, conc, casket.pid, 'c'));
          await burner.stop();
        } else if (baseline) b.push(await run(casket.url, admin, conc, casket.pid, 'b'));
        else {
          const sub = await subscribe(casket.url, admin);
          if (browser) await browser.open();
          const before = cpuMs(sub.pid) + (browser ? chromiumMs() : 0);
          const r = await run(casket.url, admin, conc, casket.pid, 'b');
          neighbours = (cpuMs(sub.pid) + (browser ? chromiumMs() : 0) - before) / DURATION_MS;
          used.push(neighbours);
          if (browser) await browser.close();
          // Let the subscriber catch up with the run's last records before counting.
          await new Promise((r) => setTimeout(r, 300));
          got += await sub.close();
          puts += Math.round(r.rps * (DURATION_MS / 1000));
          b.push(r);
        }
      }
    }
    const m = (xs, k) => median(xs.map((x) => x[k]));
    const row = (x) => `${m(x, 'rps').toFixed(0)} · ${m(x, 'p50').toFixed(2)} ms · ${m(x, 'p99').toFixed(2)} ms · ${m(x, 'cpu').toFixed(0)} µs`;
    const runs = (xs) => xs.map((x) => `${x.rps.toFixed(0)} req/s ${x.cpu.toFixed(0)} µs`).join(', ');
    console.log(`| ${conc} | ${row(a)} | ${row(b)} | ${(m(b, 'rps') / m(a, 'rps')).toFixed(2)}× | ${(m(b, 'cpu') / m(a, 'cpu')).toFixed(2)}× | ${got} / ${puts} |`);
    console.log(`  runs A: ${runs(a)}; B: ${runs(b)}`);
    if (CONTROL) {
      console.log(`  C (neighbours burning ${used.map((x) => x.toFixed(2)).join(', ')} cores, as B's did): ${row(c)}; runs ${runs(c)}`);
      console.log(`  C/A req/s ${(m(c, 'rps') / m(a, 'rps')).toFixed(2)}× · CPU ${(m(c, 'cpu') / m(a, 'cpu')).toFixed(2)}×; B/C req/s ${(m(b, 'rps') / m(c, 'rps')).toFixed(2)}× · CPU ${(m(b, 'cpu') / m(c, 'cpu')).toFixed(2)}×`);
      console.log(`  casket's main thread (JavaScript, its syscalls) CPU per PUT, medians: A ${m(a, 'main').toFixed(0)} · B ${m(b, 'main').toFixed(0)} · C ${m(c, 'main').toFixed(0)} µs; runs B ${b.map((x) => x.main.toFixed(0)).join(', ')}; C ${c.map((x) => x.main.toFixed(0)).join(', ')}`);
      console.log(`  casket's kernel (sys) CPU per PUT, medians: A ${m(a, 'sys').toFixed(0)} · B ${m(b, 'sys').toFixed(0)} · C ${m(c, 'sys').toFixed(0)} µs; user: A ${m(a, 'user').toFixed(0)} · B ${m(b, 'user').toFixed(0)} · C ${m(c, 'user').toFixed(0)} µs`);
    }
    console.log(`  load average now: ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  }
  console.log(`load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  if (PROFILE) {
    mkdirSync(resolve(PROFILE), { recursive: true });
    writeFileSync(join(resolve(PROFILE), 'windows.json'), JSON.stringify(windows));
    console.log(`PUTs in all, warm-ups included (divide the profile by it): ${putsInAll}; each run's span in ${PROFILE}/windows.json (node scripts/cpuprofile-arms.mjs ${PROFILE})`);
  }
  await stop(casket);
  if (baseline) await stop(baseline);
} finally {
  await browser?.quit();
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
}
