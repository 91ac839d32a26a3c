import { defineConfig } from 'vitest/config';

// The tests `npm run mutate:rooms` runs against each mutant of one room
// (stryker.rooms.config.mjs; ROOM names it, and Stryker's test workers inherit
// it): those that load the room's src in this process — casket started
// in-process (test/helpers/in-process.ts), or the modules imported by unit
// tests. The rest spawn dist/cli.js, which no mutant reaches; but rollback's
// end-to-end tests start their casket with startRollbackCasket
// (test/rollback/helpers.ts), and some of MCP's with startMcpCasket
// (test/helpers/mcp.ts), which CASKET_TEST_IN_PROCESS turns in-process.
const TESTS: Record<string, string[]> = {
  // Not the tests that drive Chromium (console, changesets, paging,
  // stored-pages): a page load per mutant made a run of the room's 772
  // mutants take over an hour on two shared cores. Their HTTP-level
  // assertions are in routes, views and authorize-pages; the score is a
  // lower bound.
  console: [
    'test/console/agents-view.test.ts',
    'test/console/authorize-pages.test.ts',
    'test/console/connected-clients-scope.test.ts',
    'test/console/console-log.test.ts',
    'test/console/diff-view.test.ts',
    'test/console/login-brake.test.ts',
    'test/console/login-form.test.ts',
    'test/console/login-log.test.ts',
    'test/console/logout.test.ts',
    'test/console/object-versions.test.ts',
    'test/console/object-view.test.ts',
    'test/console/route-table.test.ts',
    'test/console/routes.test.ts',
    'test/console/session.test.ts',
    'test/console/setup-view.test.ts',
    'test/console/store-outage.test.ts',
    'test/console/views.test.ts',
  ],
  rollback: [
    'test/rollback/behind-casket.test.ts',
    'test/rollback/breaks.test.ts',
    'test/rollback/changeset.test.ts',
    'test/rollback/changeset-buckets.test.ts',
    'test/rollback/changeset-edges.test.ts',
    'test/rollback/command.test.ts',
    'test/rollback/command-edges.test.ts',
    'test/rollback/conflict-diff.test.ts',
    'test/rollback/domain.test.ts',
    'test/rollback/dry-run.test.ts',
    'test/rollback/edges.test.ts',
    'test/rollback/endpoint.test.ts',
    'test/rollback/endpoint-failure.test.ts',
    'test/rollback/plan.test.ts',
    'test/rollback/reads.test.ts',
    'test/rollback/reread.test.ts',
    'test/rollback/restore-condition.test.ts',
    'test/rollback/restore-staging.test.ts',
    'test/rollback/same-entry.test.ts',
    'test/rollback/sources.test.ts',
    'test/rollback/rollback.test.ts',
    'test/rollback/versions.test.ts',
    'test/rollback/versions-edges.test.ts',
  ],
  // The rest of test/events spawns dist/cli.js (webhooks, webhook-backoff,
  // several-caskets); webhook-worker drives the outbox in-process instead,
  // stream starts its casket with startStreamCasket
  // (test/events/stream-casket.ts), which CASKET_TEST_IN_PROCESS turns
  // in-process, and test/core's write-events start casket in-process and
  // read each write's record from the stream.
  events: [
    'test/core/write-events.test.ts',
    'test/core/write-events-refusals.test.ts',
    'test/events/log.test.ts',
    'test/events/notifications.test.ts',
    'test/events/publish.test.ts',
    'test/events/record-json.test.ts',
    'test/events/record.test.ts',
    'test/events/redis-log.test.ts',
    'test/events/stream-answers.test.ts',
    'test/events/stream-credentials.test.ts',
    'test/events/stream-reads.test.ts',
    'test/events/stream-sample.test.ts',
    'test/events/stream-stop.test.ts',
    'test/events/stream-waits.test.ts',
    'test/events/stream.test.ts',
    'test/events/tail.test.ts',
    'test/events/webhook-worker.test.ts',
  ],
  // The unit tests of src/mcp's pure files (text, paths, token, batch,
  // answer-json, results, request-caller), token-check against casket
  // in-process, mcp-command and stdio-bridge (`casket mcp` and its bridge
  // called in this process with PassThrough streams, against casket
  // in-process), deadline (mcpEndpoint itself) and tool-throws (a casket
  // in-process whose disk fails on cue), and the wire tests that start casket
  // with startMcpCasket (test/helpers/mcp.ts), which CASKET_TEST_IN_PROCESS
  // turns in-process.
  // The rest of test/mcp drives a spawned casket through the SDK's clients
  // and `casket mcp`; the score is a lower bound.
  mcp: [
    'test/mcp/annotations.test.ts',
    'test/mcp/apply-patch.test.ts',
    'test/mcp/answer-json.test.ts',
    'test/mcp/batch.test.ts',
    'test/mcp/caller-isolation.test.ts',
    'test/mcp/delete-file.test.ts',
    'test/mcp/changed-since-read.test.ts',
    'test/mcp/deadline.test.ts',
    'test/mcp/direct-calls.test.ts',
    'test/mcp/door.test.ts',
    'test/mcp/door-changesets.test.ts',
    'test/mcp/door-domain.test.ts',
    'test/mcp/door-staging.test.ts',
    'test/mcp/door-writers.test.ts',
    'test/mcp/edit-file.test.ts',
    'test/mcp/endpoint.test.ts',
    'test/mcp/every-request-answered.test.ts',
    'test/mcp/http-tools.test.ts',
    'test/mcp/mcp-command.test.ts',
    'test/mcp/model-view.test.ts',
    'test/mcp/more-tools.test.ts',
    'test/mcp/move-file.test.ts',
    'test/mcp/paths.test.ts',
    'test/mcp/read-windows.test.ts',
    'test/mcp/refusal-views.test.ts',
    'test/mcp/refusal-words.test.ts',
    'test/mcp/reminders.test.ts',
    'test/mcp/results.test.ts',
    'test/mcp/stdio-bridge.test.ts',
    'test/mcp/streamable-post.test.ts',
    'test/mcp/text.test.ts',
    'test/mcp/token.test.ts',
    'test/mcp/token-check.test.ts',
    'test/mcp/tool-etags.test.ts',
    'test/mcp/tool-throws.test.ts',
    'test/mcp/write-conditions.test.ts',
    'test/mcp/write-file.test.ts',
    'test/mcp/write-files.test.ts',
    'test/mcp/what-changed.test.ts',
    'test/mcp/get-file-info.test.ts',
  ],
};
const room = process.env.ROOM ?? '';
const include = TESTS[room];
if (!include) throw new Error(`ROOM must be one of ${Object.keys(TESTS).join(', ')} (got "${room}")`);

export default defineConfig({
  test: {
    include,
    env: { CASKET_TEST_IN_PROCESS: '1' },
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
