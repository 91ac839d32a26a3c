/** The performance goals, judged from a run report. Part of scripts/bench.mjs (the runner). */
import { createHash, randomBytes } from 'node:crypto';
import { rename } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fmt, median, pct, sizeName } from './stats.mjs';
import { GOAL_CONC, MiB, ROOT } from './common.mjs';
import { contended } from './contended.mjs';

// ---------------------------------------------------------------- goals

/** A cell; PutObject cells are also told apart by body form (signed unless `payload`). */
export function findCell(report, group, kind, op, size, conc, payload = 'signed') {
  return report.cells.find((c) => c.group === group && c.kind === kind && c.op === op && c.size === size && c.conc === conc && (c.kind !== 'put' || (c.payload ?? 'signed') === payload));
}

export function goals(report, opts) {
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
export function rssGoal(b) {
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
export async function hashCosts(size) {
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
export function requiredHashing(cell, costs) {
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
export function speedGoals(report, opts) {
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
