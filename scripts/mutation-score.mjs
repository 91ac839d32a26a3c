#!/usr/bin/env node
// The mutation score of casket's whole core, from the results the two
// Stryker runs of `npm run mutate` keep: stryker.config.mjs (the core but
// src/auth, against every in-process test) and stryker.auth.config.mjs
// (src/auth, against test/auth). Stryker prints each run's score; this adds
// them up, by file and in all, the way Stryker counts
// (https://stryker-mutator.io/docs/mutation-testing-elements/mutant-states-and-metrics/):
// detected (killed, timed out) over valid (detected, survived, no coverage);
// mutants that do not compile, or are ignored, are not counted.
//
//   node scripts/mutation-score.mjs [REPORT.json ...]
import { existsSync, readFileSync } from 'node:fs';

const reports = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['.stryker/incremental.json', '.stryker/auth-incremental.json'];
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
const total = { detected: 0, survived: 0, noCoverage: 0, invalid: 0 };
const rows = [...files.entries()].sort(([a], [b]) => a.localeCompare(b));
const width = Math.max(...rows.map(([f]) => f.length), 5);
console.log(`${'file'.padEnd(width)}  score   detected survived no-cover not-valid`);
for (const [file, c] of rows) {
  for (const k of Object.keys(total)) total[k] += c[k];
  console.log(`${file.padEnd(width)}  ${pct(c).padStart(6)}  ${String(c.detected).padStart(8)} ${String(c.survived).padStart(8)} ${String(c.noCoverage).padStart(8)} ${String(c.invalid).padStart(9)}`);
}
console.log(`${'all'.padEnd(width)}  ${pct(total).padStart(6)}  ${String(total.detected).padStart(8)} ${String(total.survived).padStart(8)} ${String(total.noCoverage).padStart(8)} ${String(total.invalid).padStart(9)}`);
