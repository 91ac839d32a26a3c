// npm run mutate: the mutation score of casket's core (README, "Tests").
// Stryker changes one thing at a time in the files below and runs the tests
// that cover it; a mutant no test notices is a break that would ship.
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  packageManager: 'npm',
  testRunner: 'vitest',
  // Only tests that import src in-process can see a mutant: the integration
  // suites spawn dist/cli.js, built before the mutants exist.
  vitest: { configFile: 'vitest.mutate.config.ts' },
  // A mutant that does not compile is no test's business: dropped before running.
  checkers: ['typescript'],
  tsconfigFile: 'tsconfig.json',
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  // Each mutant runs only the tests that reached its code in the first run.
  coverageAnalysis: 'perTest',
  // A mutant of a module-level constant runs at import, so every test would
  // have to run for it alone; those are left out of the score (and listed as ignored).
  ignoreStatic: true,
  // The core: the guard, the state stores, the commit condition, the guarded
  // write and merge, diffs and merges. Authentication (src/auth/) is the
  // rest of it, run by stryker.auth.config.mjs against its own tests.
  mutate: [
    'src/guard/**/*.ts',
    'src/state/**/*.ts',
    'src/backends/commit-condition.ts',
    'src/s3/write.ts',
    'src/s3/merge-write.ts',
    'src/changes/**/*.ts',
  ],
  // A full run takes long on two cores; the results are kept (committed) so a
  // run re-tests only the mutants whose code or covering tests changed.
  incremental: true,
  incrementalFile: '.stryker/incremental.json',
  concurrency: 2,
  timeoutMS: 20_000,
  reporters: ['clear-text', 'progress-append-only', 'json'],
  jsonReporter: { fileName: '.stryker/reports/mutation.json' },
  tempDirName: '.stryker/tmp',
  // The sandbox is a copy of the repo: not the build, nor other runs' files.
  ignorePatterns: ['dist', '.stryker', 'casket-data'],
  cleanTempDir: 'always',
  thresholds: { high: 90, low: 80, break: null },
};
