/**
 * A watchdog inside each test worker, on a thread of its own (a setup file,
 * vitest.config.ts). vitest's timeouts are timers on the worker's event loop:
 * when a test keeps that loop busy (a synchronous or microtask loop) no timer
 * fires, and the run hangs until CI's 90 minutes are gone (issue 43: a
 * caught-up event stream resending its last event spun a worker and casket
 * for 6 minutes).
 *
 * The main thread stamps a heartbeat every half second. The watchdog thread
 * reads it; when the heartbeat is older than the running test's own timeout
 * plus GRACE_MS (or HOOK_BOUND_MS outside a test), it prints the test's file
 * and name, kills every process this worker started (casket, moto, Redis) and
 * the worker itself. vitest then fails the file: "Worker exited unexpectedly".
 * A test whose loop is merely slow, or one blocked in a bounded execFileSync,
 * keeps within its own timeout and is never touched.
 */
import { Worker } from 'node:worker_threads';
import { afterEach, beforeEach, expect } from 'vitest';

const GRACE_MS = Number(process.env.CASKET_WATCHDOG_GRACE_MS ?? 30_000);
/** Hooks' timeouts are not visible here; the config's hookTimeout is 120 s, and a few hooks ask for 180 s. */
const HOOK_BOUND_MS = Number(process.env.CASKET_WATCHDOG_HOOK_MS ?? 240_000);

// [0] heartbeat (ms since epoch), [1] the bound (ms); then the name, UTF-8, length-prefixed.
const shared = new SharedArrayBuffer(16 + 4 + 2048);
const clock = new Float64Array(shared, 0, 2);
const nameLength = new Int32Array(shared, 16, 1);
const nameBytes = new Uint8Array(shared, 20);

function running(name: string, boundMs: number): void {
  const bytes = Buffer.from(name).subarray(0, nameBytes.length);
  nameBytes.set(bytes);
  Atomics.store(nameLength, 0, bytes.length);
  clock[1] = boundMs;
  clock[0] = Date.now();
}

const file = expect.getState().testPath ?? 'a test file';
running(`${file} (outside any test)`, HOOK_BOUND_MS);
setInterval(() => (clock[0] = Date.now()), 500).unref();

beforeEach((context) => running(`${file} > ${context.task.fullTestName ?? context.task.name}`, context.task.timeout + GRACE_MS));
afterEach(() => running(`${file} (between tests)`, HOOK_BOUND_MS));

// The thread's code: plain JavaScript, so it needs no loader.
const watch = `
const { workerData } = require('node:worker_threads');
const { readdirSync, readFileSync, writeSync } = require('node:fs');
const clock = new Float64Array(workerData.shared, 0, 2);
const nameLength = new Int32Array(workerData.shared, 16, 1);
const nameBytes = new Uint8Array(workerData.shared, 20);
function descendants(root) {
  const parentOf = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\\d+$/.test(name)) continue;
    try {
      const stat = readFileSync('/proc/' + name + '/stat', 'utf8');
      parentOf.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {}
  }
  const found = [];
  const queue = [root];
  while (queue.length > 0) {
    const parent = queue.shift();
    for (const [pid, ppid] of parentOf) if (ppid === parent) { found.push(pid); queue.push(pid); }
  }
  return found;
}
setInterval(() => {
  const stale = Date.now() - clock[0];
  if (stale <= clock[1]) return;
  const name = Buffer.from(nameBytes.subarray(0, Atomics.load(nameLength, 0))).toString('utf8');
  writeSync(2, '\\nwatchdog: ' + name + ': the worker has not run a timer for ' + Math.round(stale / 1000) + ' s, past its bound of ' + clock[1] / 1000 + ' s (the test\\'s timeout + ' + workerData.graceMs / 1000 + ' s): a busy loop or a blocked event loop, which vitest\\'s own timeout cannot stop. Killing this worker and the processes it started.\\n');
  for (const pid of descendants(workerData.pid).reverse()) { try { process.kill(pid, 'SIGKILL'); } catch {} }
  process.kill(workerData.pid, 'SIGKILL');
}, 1000);
`;
new Worker(watch, { eval: true, workerData: { shared, pid: process.pid, graceMs: GRACE_MS } }).unref();
