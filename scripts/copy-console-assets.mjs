#!/usr/bin/env node
// `npm run build` step after tsc: the console's static assets (HTML, CSS, ES
// modules: src/console/assets/) are not TypeScript, so tsc does not emit
// them; src/console/routes.ts reads them from beside itself, in dist too.
import { cpSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const to = join(root, 'dist', 'console', 'assets');
rmSync(to, { recursive: true, force: true });
cpSync(join(root, 'src', 'console', 'assets'), to, { recursive: true });
