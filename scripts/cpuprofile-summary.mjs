#!/usr/bin/env node
/**
 * Summarises a V8 .cpuprofile (node --cpu-prof): where the time went.
 *
 *   node scripts/cpuprofile-summary.mjs FILE.cpuprofile [--top N] [--callers NAME]
 *
 * Prints, as shares of the sampled time that was not idle:
 * - top functions by self time (function, file:line);
 * - top functions by total (inclusive) time, counting a function once per
 *   sample however deep it recurses;
 * - self time by module: a casket source file (dist/…), a package
 *   (node_modules/<pkg>), a Node internal (node:…), or a V8 pseudo-node
 *   ((garbage collector), (program)).
 *
 * --callers NAME: for the functions whose name contains NAME, the call
 * paths (up to 6 frames) that lead to them, by time.
 *
 * Sample weights are the profile's timeDeltas (the delta that follows a
 * sample is the time spent in it).
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

function shortUrl(url) {
  if (!url) return '';
  let u = url.replace(/^file:\/\//, '');
  const nm = u.lastIndexOf('/node_modules/');
  if (nm >= 0) return u.slice(nm + '/node_modules/'.length);
  const dist = u.lastIndexOf('/dist/');
  if (dist >= 0) return u.slice(dist + 1);
  return u;
}

function moduleOf(frame) {
  const url = frame.url ?? '';
  if (!url) return frame.functionName.startsWith('(') ? frame.functionName : '(native)';
  const u = url.replace(/^file:\/\//, '');
  const nm = u.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = u.slice(nm + '/node_modules/'.length).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  if (u.startsWith('node:')) return u.split('/').slice(0, 2).join('/');
  const dist = u.lastIndexOf('/dist/');
  if (dist >= 0) return u.slice(dist + 1);
  return u;
}

function keyOf(frame) {
  const name = frame.functionName || '(anonymous)';
  const where = shortUrl(frame.url);
  return where ? `${name}  ${where}:${frame.lineNumber + 1}` : name;
}

export function summarise(profile, top = 25) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfUs = new Map();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) {
    const w = deltas[i + 1] ?? 0;
    selfUs.set(samples[i], (selfUs.get(samples[i]) ?? 0) + Math.max(0, w));
  }
  let total = 0;
  let idle = 0;
  const selfByKey = new Map();
  const selfByModule = new Map();
  const inclusive = new Map();
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    const frame = node.callFrame;
    total += us;
    if (frame.functionName === '(idle)') {
      idle += us;
      continue;
    }
    const k = keyOf(frame);
    selfByKey.set(k, (selfByKey.get(k) ?? 0) + us);
    const m = moduleOf(frame);
    selfByModule.set(m, (selfByModule.get(m) ?? 0) + us);
    const seen = new Set();
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
      const f = byId.get(cur).callFrame;
      if (f.functionName === '(root)') break;
      const ck = keyOf(f);
      if (seen.has(ck)) continue;
      seen.add(ck);
      inclusive.set(ck, (inclusive.get(ck) ?? 0) + us);
    }
  }
  const busy = total - idle;
  const rank = (m) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, ms: us / 1000, share: busy > 0 ? us / busy : 0 }));
  return {
    wallMs: (profile.endTime - profile.startTime) / 1000,
    sampledMs: total / 1000,
    busyMs: busy / 1000,
    idleMs: idle / 1000,
    self: rank(selfByKey),
    inclusive: rank(inclusive),
    modules: rank(selfByModule),
  };
}

/** Call paths (leaf first, `depth` frames) into functions whose name contains `name`, by self+callee time. */
export function callers(profile, name, depth = 6, top = 15) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfUs = new Map();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) selfUs.set(samples[i], (selfUs.get(samples[i]) ?? 0) + Math.max(0, deltas[i + 1] ?? 0));
  const paths = new Map();
  for (const [id, us] of selfUs) {
    let cur = id;
    while (cur !== undefined && !byId.get(cur).callFrame.functionName.includes(name)) cur = parent.get(cur);
    if (cur === undefined) continue;
    const frames = [];
    for (let p = cur; p !== undefined && frames.length < depth; p = parent.get(p)) {
      const f = byId.get(p).callFrame;
      if (f.functionName === '(root)') break;
      frames.push(keyOf(f));
    }
    const k = frames.join('\n      <- ');
    paths.set(k, (paths.get(k) ?? 0) + us);
  }
  return [...paths.entries()].sort((a, b) => b[1] - a[1]).slice(0, top).map(([path, us]) => ({ path, ms: us / 1000 }));
}

export function formatSummary(s, title = '') {
  const lines = [];
  if (title) lines.push(`== ${title}`);
  lines.push(`wall ${s.wallMs.toFixed(0)} ms, busy ${s.busyMs.toFixed(0)} ms, idle ${s.idleMs.toFixed(0)} ms (${((100 * s.busyMs) / Math.max(1, s.sampledMs)).toFixed(0)}% busy); shares below are of busy time`);
  const block = (name, rows) => {
    lines.push(`-- ${name}`);
    for (const r of rows) lines.push(`${(r.share * 100).toFixed(1).padStart(5)}%  ${r.ms.toFixed(0).padStart(6)} ms  ${r.name}`);
  };
  block('self time by function', s.self);
  block('self time by module', s.modules);
  block('total (inclusive) time by function', s.inclusive);
  return lines.join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const args = process.argv.slice(2);
  const topAt = args.indexOf('--top');
  const top = topAt >= 0 ? Number(args[topAt + 1]) : 25;
  const callersAt = args.indexOf('--callers');
  const files = args.filter((a, i) => !a.startsWith('--') && (topAt < 0 || i !== topAt + 1) && (callersAt < 0 || i !== callersAt + 1));
  if (files.length === 0) {
    process.stderr.write('usage: node scripts/cpuprofile-summary.mjs FILE.cpuprofile [--top N]\n');
    process.exit(2);
  }
  for (const f of files) {
    const profile = JSON.parse(readFileSync(f, 'utf8'));
    if (callersAt >= 0) {
      process.stdout.write(`== ${f}: paths into *${args[callersAt + 1]}*\n`);
      for (const c of callers(profile, args[callersAt + 1])) process.stdout.write(`${c.ms.toFixed(0).padStart(6)} ms  ${c.path}\n`);
      process.stdout.write('\n');
    } else process.stdout.write(`${formatSummary(summarise(profile, top), f)}\n\n`);
  }
}
