/**
 * The processes a bench run starts — casket, moto, nginx — and their cleanup.
 * Every child is spawned directly (no shell), so the PID we hold is the
 * process itself; `stopAll` signals each by PID (SIGTERM, then SIGKILL after
 * a grace period), including the workers an nginx master forked. Temp dirs
 * registered with `track` are removed after the processes are gone.
 */
import { spawn } from 'node:child_process';
import { existsSync, openSync, closeSync, readFileSync, readdirSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const children = new Set();
const dirs = new Set();

export class NotAvailable extends Error {}

export function trackDir(dir) {
  dirs.add(dir);
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function alive(child) {
  return child.proc.exitCode === null && child.proc.signalCode === null;
}

function pidAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** PIDs of a process's children (needs /proc/<pid>/task/<tid>/children; empty when absent). */
export function childPids(pid) {
  const out = [];
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const text = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim();
      if (text) out.push(...text.split(/\s+/).map(Number));
    }
  } catch {
    /* gone, or no CONFIG_PROC_CHILDREN */
  }
  return out;
}

/** utime and stime of a process and its descendants, in ms (clock ticks assumed 100 Hz, as on Linux x86/arm). */
export function cpuTimes(pid) {
  const times = { user: 0, sys: 0 };
  const stack = [pid];
  const seen = new Set();
  while (stack.length) {
    const p = stack.pop();
    if (seen.has(p)) continue;
    seen.add(p);
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      times.user += Number(fields[11]) * 10;
      times.sys += Number(fields[12]) * 10;
    } catch {
      continue;
    }
    stack.push(...childPids(p));
  }
  return times;
}

/** utime+stime of a process and its descendants, in ms. */
export function cpuMs(pid) {
  const { user, sys } = cpuTimes(pid);
  return user + sys;
}

/** VmRSS / VmHWM of a process, in bytes. */
export function memory(pid) {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN) * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

/** Resets VmHWM to the current RSS (Linux ≥ 4.0: write 5 to clear_refs). False when not permitted. */
export function resetPeak(pid) {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

function start(name, command, args, options = {}) {
  const logFile = options.logFile;
  const fd = logFile ? openSync(logFile, 'a') : 'ignore';
  const proc = spawn(command, args, { cwd: options.cwd, env: { ...process.env, ...options.env }, stdio: ['ignore', fd, fd], detached: false });
  if (typeof fd === 'number') closeSync(fd);
  const child = { name, proc, pid: proc.pid, logFile, extraPids: [] };
  child.exited = new Promise((r) => proc.once('exit', (code, signal) => r({ code, signal })));
  proc.once('error', () => {});
  children.add(child);
  return child;
}

export async function stop(child, graceMs = 5000) {
  if (!children.has(child)) return;
  const extra = [...new Set([...child.extraPids, ...childPids(child.pid)])];
  if (alive(child)) {
    child.proc.kill('SIGTERM');
    const done = await Promise.race([child.exited.then(() => true), sleep(graceMs).then(() => false)]);
    if (!done && alive(child)) {
      child.proc.kill('SIGKILL');
      await child.exited;
    }
  }
  for (const pid of extra) {
    if (!pidAlive(pid)) continue;
    try {
      process.kill(pid, 'SIGTERM');
    } catch {}
    for (let i = 0; i < 20 && pidAlive(pid); i++) await sleep(50);
    if (pidAlive(pid)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
    }
  }
  children.delete(child);
}

export async function stopAll() {
  await Promise.all([...children].map((c) => stop(c).catch(() => {})));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs.clear();
}

function tail(file, n = 2000) {
  try {
    const t = readFileSync(file, 'utf8');
    return t.slice(-n);
  } catch {
    return '';
  }
}

/**
 * The allocator settings `npm start` and the Docker image give casket
 * (package.json): every Node.js server the bench starts gets them too —
 * casket and the bare Node baselines alike — unless GLIBC_TUNABLES is set
 * already (`GLIBC_TUNABLES= npm run bench` measures glibc's defaults).
 */
export const NODE_SERVER_ENV = { GLIBC_TUNABLES: process.env.GLIBC_TUNABLES ?? 'glibc.malloc.trim_threshold=16777216' };

/** The V8 flag `npm start` and the image give casket (package.json), given to every Node.js server the bench starts; CASKET_BENCH_NODE_ARGS='' measures without. */
export const NODE_SERVER_ARGS = (process.env.CASKET_BENCH_NODE_ARGS ?? '--initial-old-space-size=64').split(' ').filter(Boolean);

/**
 * Starts casket (dist/cli.js) on 127.0.0.1 port 0 and waits for its JSON
 * "casket is ready" line (stdout goes to a log file the bench never reads on
 * the hot path). Throws NotAvailable when it exits before it is ready.
 */
export async function startCasket({ cli, dataDir, credentialsFile, logFile, extraArgs = [], nodeArgs = [], timeoutMs = 20000 }) {
  mkdirSync(dataDir, { recursive: true });
  // --log-level warn (an arm of ab.mjs without the request log) hides the ready line: such a casket gets a port chosen here and is ready when it answers.
  const level = extraArgs.indexOf('--log-level');
  const quiet = level >= 0 && ['warn', 'error', 'fatal', 'silent'].includes(extraArgs[level + 1]);
  const port = quiet ? await freePort() : 0;
  const args = [...NODE_SERVER_ARGS, ...nodeArgs, cli, '--listen', `127.0.0.1:${port}`, '--data-dir', dataDir, '--credentials', credentialsFile, ...extraArgs];
  const child = start('casket', process.execPath, args, { logFile, env: NODE_SERVER_ENV });
  if (quiet) {
    if (await waitHttp(port, timeoutMs, child)) return { ...child, url: `http://127.0.0.1:${port}`, child };
    await stop(child);
    throw new NotAvailable(`casket (${extraArgs.join(' ')}) did not answer within ${timeoutMs} ms: ${tail(logFile, 500)}`);
  }
  const deadline = Date.now() + timeoutMs;
  let exit;
  child.exited.then((e) => (exit = e));
  while (Date.now() < deadline) {
    await sleep(50);
    if (exit) {
      children.delete(child);
      const why = tail(logFile).trim().split('\n').filter(Boolean).slice(-3).join(' | ');
      throw new NotAvailable(`casket exited (${exit.code ?? exit.signal}) before it was ready: ${why}`);
    }
    let text = '';
    try {
      text = readFileSync(logFile, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n')) {
      if (!line.includes('casket is ready')) continue;
      try {
        const entry = JSON.parse(line);
        if (entry.msg === 'casket is ready' && entry.endpoint) return { ...child, url: entry.endpoint, child };
      } catch {}
    }
  }
  await stop(child);
  throw new NotAvailable(`casket was not ready within ${timeoutMs} ms: ${tail(logFile, 500)}`);
}

async function waitHttp(port, timeoutMs, child) {
  const deadline = Date.now() + timeoutMs;
  let exit;
  child.exited.then((e) => (exit = e));
  while (Date.now() < deadline) {
    if (exit) return false;
    try {
      const res = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      return true;
    } catch {
      await sleep(100);
    }
  }
  return false;
}

/** moto's S3 server (`python3 -m moto.server`), in its own temp dir. */
export async function startMoto({ dir, python = 'python3', timeoutMs = 30000 }) {
  const port = await freePort();
  const logFile = join(dir, 'moto.log');
  const child = start('moto', python, ['-m', 'moto.server', '-H', '127.0.0.1', '-p', String(port)], { cwd: dir, logFile });
  if (!(await waitHttp(port, timeoutMs, child))) {
    await stop(child);
    throw new NotAvailable(`moto did not start on port ${port}: ${tail(logFile, 500)}`);
  }
  return { ...child, child, url: `http://127.0.0.1:${port}` };
}

/**
 * nginx (Debian nginx-light) as a plain reverse proxy to `upstreamUrl`:
 * request bodies streamed (proxy_request_buffering off), responses streamed
 * (proxy_buffering off), HTTP/1.1 keep-alive to the upstream, Host passed
 * through so the client's SigV4 signature still matches. One worker process.
 */
export async function startNginx({ dir, upstreamUrl, nginx = '/usr/sbin/nginx', timeoutMs = 10000 }) {
  if (!existsSync(nginx)) throw new NotAvailable(`${nginx} not found`);
  const port = await freePort();
  const up = new URL(upstreamUrl);
  for (const d of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, d), { recursive: true });
  const conf = `
worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
${process.getuid?.() === 0 ? 'user root;' : ''}
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  keepalive_requests 1000000;
  upstream casket_bench_upstream {
    server ${up.hostname}:${up.port || 80};
    keepalive 128;
    keepalive_requests 1000000;
  }
  server {
    listen 127.0.0.1:${port};
    client_max_body_size 0;
    location / {
      proxy_pass http://casket_bench_upstream;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_request_buffering off;
      proxy_buffering off;
      proxy_read_timeout 600s;
      proxy_send_timeout 600s;
    }
  }
}
`;
  const confFile = join(dir, 'nginx.conf');
  writeFileSync(confFile, conf);
  const logFile = join(dir, 'nginx.out');
  const child = start('nginx', nginx, ['-p', dir, '-c', confFile, '-e', join(dir, 'error.log')], { logFile });
  const ok = await waitHttp(port, timeoutMs, child);
  if (!ok) {
    await stop(child);
    throw new NotAvailable(`nginx did not start: ${tail(join(dir, 'error.log'), 500)} ${tail(logFile, 500)}`);
  }
  child.extraPids.push(...childPids(child.pid));
  return { ...child, child, url: `http://127.0.0.1:${port}` };
}

/**
 * A bare Node.js pass-through proxy to the same upstream: Node's own floor.
 * `client` picks the script: 'http' (node-proxy.mjs, node:http client) or
 * 'undici' (undici-proxy.mjs).
 */
export async function startNodeProxy({ dir, upstreamUrl, client = 'http', timeoutMs = 10000, nodeArgs = [] }) {
  const name = client === 'undici' ? 'undici-proxy' : 'node-proxy';
  return startScript(name, dir, [upstreamUrl], timeoutMs, nodeArgs);
}

/** A bare Node.js server of files in `root` (file-server.mjs): the embedded store's HTTP floor. */
export async function startFileServer({ dir, root, timeoutMs = 10000 }) {
  mkdirSync(root, { recursive: true });
  return startScript('file-server', dir, [root], timeoutMs);
}

/** The least a read costs by S3 and by MCP, on bare node:http (read-floor.mjs): bench/mcp.mjs's floor. */
export async function startReadFloor({ dir, credentialsFile, timeoutMs = 10000 }) {
  return startScript('read-floor', dir, [credentialsFile], timeoutMs);
}

async function startScript(name, dir, args, timeoutMs, nodeArgs = []) {
  const port = await freePort();
  const logFile = join(dir, `${name}.log`);
  const script = fileURLToPath(new URL(`./${name}.mjs`, import.meta.url));
  const child = start(name, process.execPath, [...NODE_SERVER_ARGS, ...nodeArgs, script, String(port), ...args], { logFile, env: NODE_SERVER_ENV });
  if (!(await waitHttp(port, timeoutMs, child))) {
    await stop(child);
    throw new NotAvailable(`${name} did not start: ${tail(logFile, 500)}`);
  }
  return { ...child, child, url: `http://127.0.0.1:${port}` };
}
