/** The measuring loop: workers for a fixed time, and one cell run against its targets, alternating. Part of scripts/bench.mjs (the runner). */
import { loadavg } from 'node:os';
import { median, percentile } from './stats.mjs';
import { MiB, log, now, serverCpuMs, sleep } from './common.mjs';

// ---------------------------------------------------------------- runner

/**
 * Runs `workers` (async () => bytes) in parallel loops for `seconds`.
 * Returns req/s, MiB/s, p50/p99 ms, errors, and the CPU the server process
 * (`pid`) and this process spent per request.
 */
export async function measure(workers, seconds, pid) {
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
export async function runCell(cell, targets, opts) {
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
