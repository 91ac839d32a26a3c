import { defineConfig } from 'vitest/config';

// The tests `npm run mutate` runs against each mutant: only those that load
// casket's src in this process (unit tests, and test/core's casket started
// in-process). The integration suites spawn dist/cli.js, which a mutant of
// src never reaches: running them would only cost time.
export default defineConfig({
  test: {
    include: [
      'test/core/**/*.test.ts',
      'test/guard/**/*.test.ts',
      'test/state/**/*.test.ts',
      'test/auth/**/*.test.ts',
      'test/changes/**/*.test.ts',
      'test/backends/fs/**/*.test.ts',
      'test/retention/**/*.test.ts',
      'test/s3/**/*.test.ts',
      'test/vocabulary/**/*.test.ts',
    ],
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
