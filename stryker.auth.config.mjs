// npm run mutate:auth: src/auth/ against its own unit tests (test/auth) only.
// Every request casket serves passes through src/auth, so under the full
// config (stryker.config.mjs) each of its ~2,300 mutants would run most of
// test/core as well: more than a working day on two cores. Against test/auth
// alone it takes well under an hour, and the score is a lower bound (more
// tests can only kill more). Results are kept in a file of their own, beside
// the rest of the core's (README, "Mutation score").
import base from './stryker.config.mjs';

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  ...base,
  vitest: { configFile: 'vitest.mutate-auth.config.ts' },
  mutate: ['src/auth/**/*.ts'],
  incrementalFile: '.stryker/auth-incremental.json',
  jsonReporter: { fileName: '.stryker/reports/auth-mutation.json' },
  tempDirName: '.stryker/tmp-auth',
};
