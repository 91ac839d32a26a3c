#!/usr/bin/env node
// `npm start` runs dist/ (the prestart script): `npm ci` built it (the
// prepare script), so this only rebuilds when a source file is newer than
// the build, or the build is missing, and says so while tsc runs.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const built = join(root, 'dist', 'cli.js');

function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

const sources = Math.max(newest(join(root, 'src')), statSync(join(root, 'tsconfig.build.json')).mtimeMs);
const why = !existsSync(built) ? 'dist/ is missing' : statSync(built).mtimeMs < sources ? 'src/ changed since the last build' : undefined;
if (why) {
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  if (!existsSync(tsc)) {
    process.stderr.write(`casket: ${why}, and TypeScript is not installed to build it (npm ci installs it)\n`);
    process.exit(existsSync(built) ? 0 : 1);
  }
  process.stderr.write(`casket: building (${why}); this takes up to a minute...\n`);
  const started = Date.now();
  const result = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
  // The console's assets and the bin's execute bit, which tsc does not emit (npm run build does the same).
  const copied = spawnSync(process.execPath, [join(root, 'scripts', 'finish-build.mjs')], { stdio: 'inherit' });
  if (copied.status !== 0) process.exit(copied.status ?? 1);
  process.stderr.write(`casket: built in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
}
