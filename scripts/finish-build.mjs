#!/usr/bin/env node
// `npm run build` step after tsc, which emits neither of these:
// - the console's static assets (HTML, CSS, ES modules: src/console/assets/),
//   which src/console/routes.ts reads from beside itself, in dist too;
// - the execute bit on the package's bin, dist/cli.js. npm sets it when it
//   links a bin, but the root package's own bin is linked only when npx runs
//   it, and two npx runs at once in a fresh clone raced to "Permission
//   denied" (CI, stop 46): the build leaves it executable itself.
import { chmodSync, cpSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const to = join(root, 'dist', 'console', 'assets');
rmSync(to, { recursive: true, force: true });
cpSync(join(root, 'src', 'console', 'assets'), to, { recursive: true });
chmodSync(join(root, 'dist', 'cli.js'), 0o755);
