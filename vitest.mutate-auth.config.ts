import { defineConfig } from 'vitest/config';

// The tests `npm run mutate:auth` runs against each mutant of src/auth:
// test/auth only (stryker.auth.config.mjs says why).
export default defineConfig({
  test: {
    include: ['test/auth/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
