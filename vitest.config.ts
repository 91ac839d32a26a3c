import { defineConfig } from 'vitest/config';

// Integration tests start real casket processes and real upstreams on port 0;
// these machines have two cores, so files run two at a time.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default'],
  },
});
