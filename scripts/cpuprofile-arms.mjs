#!/usr/bin/env node
/**
 * One casket profile, divided by the bench's arms (scripts/bench-events.mjs
 * --profile DIR writes the profile and windows.json, each measured run's
 * arm and span). Arms that alternate in one process share its JIT state,
 * heap and neighbours' history, so what one arm costs beyond another shows
 * here per function, per PUT — where separate profiles of separate
 * processes differ by more than the effect (±10% between sessions here).
 *
 *   node scripts/cpuprofile-arms.mjs DIR [--top N] [--base c] [--arm b]
 *
 * Prints, per arm and concurrency, main-thread busy µs per PUT (samples that are not idle)
 * and the share of it in the readers' code (READER_CODE); then the functions
 * and modules whose self time per PUT differs most between --arm and --base.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

function frameKey(f) {
  const url = (f.url ?? '').replace(/^file:\/\//, '');
  const nm = url.lastIndexOf('/node_modules/');
  const dist = url.lastIndexOf('/dist/');
  const where = nm >= 0 ? url.slice(nm + 14) : dist >= 0 ? url.slice(dist + 1) : url;
  return where ? `${f.functionName || '(anonymous)'}  ${where}:${f.lineNumber + 1}` : f.functionName;
}

function moduleOf(f) {
  const url = (f.url ?? '').replace(/^file:\/\//, '');
  if (!url) return f.functionName.startsWith('(') ? f.functionName : '(native)';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) return url.slice(nm + 14).split('/')[0];
  if (url.startsWith('node:')) return url.split('/').slice(0, 2).join('/');
  const dist = url.lastIndexOf('/dist/');
  return dist >= 0 ? url.slice(dist + 1) : url;
}

/**
 * The readers' own code: the shared tail and the streams (dist/events/tail.js, stream.js), the web
 * streams that carry the SSE response to the socket, and writev — in this workload only the SSE
 * response's chunked writes use it (a PutObject's answer goes out in one write). An event's append,
 * which every arm pays, is not in it.
 */
const READER_CODE = (f) => /\/dist\/events\/(tail|stream)\.js$/.test(f.url ?? '') || /^node:internal\/webstreams/.test(f.url ?? '') || f.functionName === 'writev';

/**
 * The part of casket's work a sample belongs to: the innermost frame, from
 * the sampled function outwards, that is casket's own code (dist/) or its
 * logger or metrics library. Native and library frames (SQLite, crypto,
 * socket writes) count for the casket code that called them: SHA-256 under
 * src/auth is the body's check, a writev under the upstream client is the
 * request to the upstream. A sample with no such frame on its stack is Node's
 * own machinery (the HTTP parser, socket reads, timers) — all a bare proxy's
 * samples are, but for its script.
 */
export const PARTS = [
  ['request log (pino)', (u) => /\/node_modules\/(pino|sonic-boom)\//.test(u)],
  ['metrics (prom-client)', (u) => /\/node_modules\/prom-client\//.test(u)],
  ['SigV4 verification, body hashing', (u) => /\/dist\/auth\//.test(u)],
  ['signing the upstream request', (u) => /\/dist\/backends\/s3\/signer\.js$/.test(u)],
  ['upstream client (request, response)', (u) => /\/dist\/backends\/s3\/client\.js$/.test(u)],
  ['state store (SQLite: write log, ETag index, stamps)', (u) => /\/dist\/state\//.test(u)],
  ['event log (append)', (u) => /\/dist\/events\//.test(u)],
  ['embedded store (SQLite, files)', (u) => /\/dist\/backends\/fs\//.test(u)],
  ['socket to handler and back (server.js)', (u) => /\/dist\/server\.js$/.test(u)],
  ['S3 operation, guard, write path', (u) => /\/dist\//.test(u)],
  ['bare proxy script', (u) => /\/scripts\/bench\/[a-z-]+\.mjs$/.test(u)],
];
const NODE_ONLY = 'Node alone (HTTP parser, sockets, timers: no casket frame)';

export function byArm(profile, windows) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const inEvents = new Map();
  const eventish = (id) => {
    if (inEvents.has(id)) return inEvents.get(id);
    const node = byId.get(id);
    const p = parent.get(id);
    const v = READER_CODE(node.callFrame) || (p !== undefined && eventish(p));
    inEvents.set(id, v);
    return v;
  };
  const partOf = new Map();
  const part = (id) => {
    if (partOf.has(id)) return partOf.get(id);
    const node = byId.get(id);
    const fn = node.callFrame.functionName;
    const p = parent.get(id);
    const own = fn.startsWith('(') && !node.callFrame.url ? fn : PARTS.find(([, test]) => test(node.callFrame.url ?? ''))?.[0];
    const v = own ?? (p !== undefined ? part(p) : NODE_ONLY);
    partOf.set(id, v === '(root)' ? NODE_ONLY : v);
    return partOf.get(id);
  };
  const arms = new Map();
  const armOf = (w) => `${w.arm} c=${w.conc}`;
  for (const w of windows) {
    const a = arms.get(armOf(w)) ?? { puts: 0, busy: 0, idle: 0, events: 0, self: new Map(), modules: new Map(), parts: new Map() };
    a.puts += w.puts;
    arms.set(armOf(w), a);
  }
  const sorted = [...windows].sort((x, y) => x.startUs - y.startUs);
  let t = profile.startTime;
  let wi = 0;
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) {
    t += deltas[i] ?? 0;
    while (wi < sorted.length && sorted[wi].endUs < t) wi++;
    const w = sorted[wi];
    if (!w || t < w.startUs) continue;
    const us = Math.max(0, deltas[i + 1] ?? 0);
    const a = arms.get(armOf(w));
    const frame = byId.get(samples[i]).callFrame;
    if (frame.functionName === '(idle)') {
      a.idle += us;
      continue;
    }
    a.busy += us;
    if (eventish(samples[i])) a.events += us;
    const k = frameKey(frame);
    a.self.set(k, (a.self.get(k) ?? 0) + us);
    const m = moduleOf(frame);
    a.modules.set(m, (a.modules.get(m) ?? 0) + us);
    const pt = part(samples[i]);
    a.parts.set(pt, (a.parts.get(pt) ?? 0) + us);
  }
  return arms;
}

export function diff(arms, arm, base, kind, top) {
  const x = arms.get(arm);
  const y = arms.get(base);
  const names = new Set([...x[kind].keys(), ...y[kind].keys()]);
  return [...names]
    .map((n) => ({ n, a: (x[kind].get(n) ?? 0) / x.puts, b: (y[kind].get(n) ?? 0) / y.puts }))
    .sort((p, q) => Math.abs(q.a - q.b) - Math.abs(p.a - p.b))
    .slice(0, top);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const args = process.argv.slice(2);
  const opt = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
  const dir = args.find((a, i) => !a.startsWith('--') && !['--top', '--base', '--arm'].includes(args[i - 1]));
  if (!dir) {
    process.stderr.write('usage: node scripts/cpuprofile-arms.mjs DIR [--top N] [--base c] [--arm b]\n');
    process.exit(2);
  }
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  const arms = byArm(JSON.parse(readFileSync(join(dir, file), 'utf8')), JSON.parse(readFileSync(join(dir, 'windows.json'), 'utf8')));
  for (const [name, a] of [...arms].sort()) {
    console.log(`arm ${name}: ${a.puts} PUTs; main thread busy ${(a.busy / a.puts).toFixed(1)} µs per PUT (idle ${(a.idle / a.puts).toFixed(1)}), of which the readers' code ${(a.events / a.puts).toFixed(1)} µs, the garbage collector ${((a.modules.get('(garbage collector)') ?? 0) / a.puts).toFixed(1)} µs`);
  }
  const arm = opt('--arm', 'b');
  const base = opt('--base', [...arms.keys()].some((k) => k.startsWith('c ')) ? 'c' : 'a');
  const top = Number(opt('--top', '25'));
  for (const conc of new Set([...arms.keys()].map((k) => k.split(' ')[1]))) {
    const x = `${arm} ${conc}`;
    const y = `${base} ${conc}`;
    if (!arms.has(x) || !arms.has(y)) continue;
    for (const kind of ['modules', 'self']) {
      console.log(`-- ${conc}: self time by ${kind === 'self' ? 'function' : 'module'}, µs per PUT: ${arm} · ${base} · difference`);
      for (const r of diff(arms, x, y, kind, top)) console.log(`${r.a.toFixed(2).padStart(8)} ${r.b.toFixed(2).padStart(8)} ${(r.a - r.b).toFixed(2).padStart(8)}  ${r.n}`);
    }
  }
}
