/** The run's tables, as printed. Part of scripts/bench.mjs (the runner). */
import { fmt, pct, sizeName, table } from './stats.mjs';
import { MiB } from './common.mjs';
import { contended } from './contended.mjs';
import { goals } from './goals.mjs';

// ---------------------------------------------------------------- output

/** What a target's ratio is taken against: the cell's reference, or, for conditional writes, the same path unconditional. */
export function refFor(cell, name) {
  if (cell.kind === 'cond') {
    if (name === 'conditional') return 'unconditional';
    if (name === 'direct-conditional') return 'direct-unconditional';
    if (name === 'unconditional' && cell.results['direct-unconditional']) return 'direct-unconditional';
    return undefined;
  }
  return name === cell.ref ? undefined : cell.ref;
}

export function print(report, opts) {
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
