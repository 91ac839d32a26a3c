/**
 * The suite fails fast when a worker spins (issue 43): the watchdog thread
 * (test/helpers/watchdog.ts) names the stuck test and fails its file within
 * the test's timeout plus the grace it states, where vitest's own timer — on
 * the spinning worker's event loop — never fires.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');

it('a test that spins its worker fails the run within its timeout + the grace, naming the test', { timeout: 60_000 }, async () => {
  const started = Date.now();
  const child = spawn(process.execPath, [join(root, 'node_modules', 'vitest', 'vitest.mjs'), 'run', '--config', join(import.meta.dirname, 'fixtures', 'watchdog', 'vitest.config.ts')], {
    cwd: root,
    env: { ...process.env, CASKET_WATCHDOG_GRACE_MS: '3000' },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group: if the watchdog failed, the spinning worker would outlive a killed vitest.
    detached: true,
  });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const code = await new Promise<number | null>((resolve) => {
    const bound = setTimeout(() => (process.kill(-child.pid!, 'SIGKILL'), resolve(null)), 50_000);
    child.on('exit', (c) => (clearTimeout(bound), resolve(c)));
  });
  const seconds = (Date.now() - started) / 1000;
  expect(code, output).toBe(1);
  expect(output).toMatch(/watchdog: .*spin\.spec\.ts > spins the CPU without yielding: the worker has not run a timer for \d+ s, past its bound of 4 s/);
  // Start-up (vitest loading) plus the 1 s timeout, the 3 s grace and a check every second.
  expect(seconds).toBeLessThan(40);
});
