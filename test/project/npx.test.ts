/**
 * `casket` is not on PATH after `npm ci` in a clone (npm links a package's
 * bin only for its dependents): `npx casket …` from the clone runs the
 * package's own bin, dist/cli.js. --offline: were it not found locally, npx
 * fails rather than fetching some other package named casket.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');

it('npx casket runs the clone\'s own casket', () => {
  const version = (JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8')) as { version: string }).version;
  const r = spawnSync('npx', ['--offline', '--no-install', 'casket', '--version'], { cwd: root, encoding: 'utf8', timeout: 60_000 });
  expect(r.stderr).not.toMatch(/ERR!/);
  expect(r.stdout).toBe(`casket ${version}\n`);
});
