/**
 * Debian's chromium (apt), driven by playwright-core: the browser tests'
 * real browser. playwright-core never downloads a browser; it launches the
 * one at `executablePath`. Headless, and --no-sandbox because CI runs as root
 * (Chromium refuses its sandbox to root).
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { need } from '../helpers/tools.js';

const CANDIDATES = [process.env.CASKET_TEST_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter((p): p is string => !!p);

export const CHROMIUM = CANDIDATES.find((p) => existsSync(p));

/** true when chromium is here; false (skip) on a user's machine; throws in CI. */
export function haveChromium(): boolean {
  return need('chromium (apt-get install chromium)', CHROMIUM !== undefined);
}

export async function launch(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM!, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'] });
}
