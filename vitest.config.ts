import { defineConfig } from 'vitest/config';

// Integration tests start real casket processes and real upstreams on port 0;
// these machines have two cores, so files run two at a time. The watchdog
// (test/helpers/watchdog.ts, a thread in each worker) fails a file, naming
// the test, when its worker is too busy for vitest's own timeout to fire.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default'],
    setupFiles: ['./test/helpers/watchdog.ts'],
  },
});
