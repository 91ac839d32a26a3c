#!/usr/bin/env node
/**
 * Nothing lost through casket: compares a run straight at an
 * upstream with a run through casket in front of it (result files written by
 * run.mjs --out) and lists every test that passes direct but fails through
 * casket. The one regression allowed by design is the ETag's form
 * (test_object_write_check_etag: casket's ETag is the SHA-256, docs/design.md §2).
 *
 *   node scripts/s3-tests/compare.mjs DIRECT.txt THROUGH.txt [--reasons FILE]
 *
 * `--reasons FILE` (the whole suite's comparison, whole.sh) names more tests
 * that may be lost, one `id  # the contract's reason` a line
 * (results/whole-lost.txt). Exits 1 when any other test regresses.
 */
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const reasonsAt = args.indexOf('--reasons');
const reasons = new Map(
  reasonsAt < 0
    ? []
    : readFileSync(args.splice(reasonsAt, 2)[1], 'utf8')
        .split('\n')
        .filter((l) => /^s3tests\//.test(l))
        .map((l) => [l.split(/\s/)[0], l.replace(/^[^#]*#?\s*/, '')]),
);
const ALLOWED = new Map([['s3tests/functional/test_s3.py::test_object_write_check_etag', 'by design: SHA-256 ETag'], ...reasons]);

const [directFile, throughFile] = args;
if (!directFile || !throughFile) {
  console.error('usage: compare.mjs DIRECT.txt THROUGH.txt');
  process.exit(2);
}

function outcomes(file) {
  return new Map(
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => /^(PASS|FAIL) /.test(l))
      .map((l) => [l.slice(5).split(/\s/)[0], l.slice(0, 4)]),
  );
}

const direct = outcomes(directFile);
const through = outcomes(throughFile);
const lost = [...direct].filter(([id, o]) => o === 'PASS' && through.get(id) !== 'PASS').map(([id]) => id);
const gained = [...through].filter(([id, o]) => o === 'PASS' && direct.get(id) !== 'PASS').length;
const count = (m) => [...m.values()].filter((o) => o === 'PASS').length;
console.log(`direct ${count(direct)} / ${direct.size}, through casket ${count(through)} / ${through.size}: ${gained} gained, ${lost.length} lost`);
for (const id of lost) console.log(`${ALLOWED.has(id) ? `lost (${ALLOWED.get(id)})` : 'LOST'} ${id}`);
process.exitCode = lost.some((id) => !ALLOWED.has(id)) ? 1 : 0;
