#!/usr/bin/env node
// The mutation scores Stryker's runs keep, by file, by room and in all:
// the core (`npm run mutate`: stryker.config.mjs, the core but src/auth,
// against every in-process test, and stryker.auth.config.mjs, src/auth
// against test/auth) and the rooms around it (`npm run mutate:rooms`:
// stryker.rooms.config.mjs, one incremental file per room). Counted the way
// Stryker counts
// (https://stryker-mutator.io/docs/mutation-testing-elements/mutant-states-and-metrics/):
// detected (killed, timed out) over valid (detected, survived, no coverage);
// mutants that do not compile, or are ignored, are not counted. A room no
// run has measured yet is named as such.
//
//   node scripts/mutation-score.mjs [REPORT.json ...]
import { existsSync, readdirSync, readFileSync } from 'node:fs';

const roomFiles = existsSync('.stryker') ? readdirSync('.stryker').filter((f) => /^rooms-[a-z]+-incremental\.json$/.test(f)).sort().map((f) => `.stryker/${f}`) : [];
const reports = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['.stryker/incremental.json', '.stryker/auth-incremental.json', ...roomFiles];
/** Which room a mutated file belongs to (issue 43); everything else mutated is the core. */
const ROOMS = [
  ['console', (f) => f.startsWith('src/console/')],
  ['rollback', (f) => f.startsWith('src/rollback/')],
  ['events', (f) => f.startsWith('src/events/')],
  ['mcp', (f) => f.startsWith('src/mcp/') || f === 'src/mcp-door.ts'],
];
const roomOf = (file) => ROOMS.find(([, is]) => is(file))?.[0] ?? 'core';
const DETECTED = new Set(['Killed', 'Timeout']);
const UNDETECTED = new Set(['Survived', 'NoCoverage']);

const files = new Map();
for (const path of reports) {
  if (!existsSync(path)) {
    console.error(`${path}: missing (run npm run mutate)`);
    process.exitCode = 1;
    continue;
  }
  const report = JSON.parse(readFileSync(path, 'utf8'));
  for (const [file, result] of Object.entries(report.files)) {
    const counts = { detected: 0, survived: 0, noCoverage: 0, invalid: 0 };
    for (const m of result.mutants) {
      if (DETECTED.has(m.status)) counts.detected++;
      else if (m.status === 'Survived') counts.survived++;
      else if (m.status === 'NoCoverage') counts.noCoverage++;
      else counts.invalid++;
    }
    files.set(file, counts);
  }
}

const pct = (c) => {
  const valid = c.detected + c.survived + c.noCoverage;
  return valid === 0 ? 'n/a' : `${((100 * c.detected) / valid).toFixed(1)}%`;
};
const zero = () => ({ detected: 0, survived: 0, noCoverage: 0, invalid: 0 });
const add = (into, c) => {
  for (const k of Object.keys(into)) into[k] += c[k];
};
const total = zero();
const byRoom = new Map([['core', zero()], ...ROOMS.map(([room]) => [room, undefined])]);
const rows = [...files.entries()].sort(([a], [b]) => a.localeCompare(b));
const width = Math.max(...rows.map(([f]) => f.length), 12);
const line = (name, c) => `${name.padEnd(width)}  ${pct(c).padStart(6)}  ${String(c.detected).padStart(8)} ${String(c.survived).padStart(8)} ${String(c.noCoverage).padStart(8)} ${String(c.invalid).padStart(9)}`;
const header = (what) => `${what.padEnd(width)}  score   detected survived no-cover not-valid`;
console.log(header('file'));
for (const [file, c] of rows) {
  add(total, c);
  const room = roomOf(file);
  if (!byRoom.get(room)) byRoom.set(room, zero());
  add(byRoom.get(room), c);
  console.log(line(file, c));
}
console.log(line('all', total));
console.log('');
console.log(header('room'));
for (const [room, c] of byRoom) console.log(c ? line(room, c) : `${room.padEnd(width)}  not measured yet`);
