/**
 * Rollback of one changeset as a unit (issue 39; docs/design.md §10): every
 * key it wrote goes back to the version before it, or none does.
 *
 * From the write log, the changeset's entries (one per key): the goal of
 * each is the version it replaced, the condition its own new version. The
 * plan is judged whole before anything is written — a key someone else wrote
 * since is a conflict, a goal held nowhere (sources.ts) is unrecoverable, and
 * either leaves every key as it is. Then the restores are committed as one
 * changeset through the changeset engine (src/changesets/commit.ts): each
 * entry judged by the one guard, If-Match the changeset's version of its key,
 * so a writer who gets in between the plan and the commit makes the whole
 * restore refused, never half of it.
 *
 * The restores are written as `rollback:<agent>` (plan.ts) — the agent the
 * changeset was written as, or its access key when it was a person's — and
 * are themselves one changeset that a rollback can undo.
 */
import type { Credential } from '../auth/credentials.js';
import type { ChangesetEngine } from '../changesets/commit.js';
import type { Services } from '../s3/context.js';
import type { HandleOptions } from '../s3/handle.js';
import type { WriteLogEntry } from '../state/types.js';
import { S3Error } from '../vocabulary/errors.js';
import { formatETag } from '../vocabulary/etag.js';
import { conflict, readCurrent } from './apply.js';
import { openRollbackDoor } from './door.js';
import { rollbackAgent, type KeyHistory, type RollbackAnswer, type RollbackRequest } from './plan.js';
import { commitRestores } from './restore.js';
import { goalContent, unrestorable, type GoalContent } from './sources.js';

/** The most write-log entries read to find a changeset's (the log keeps at most --state-max-entries). */
const MAX_ENTRIES = 1_000_000;

const quoted = (etag: string | null) => (etag === null ? null : formatETag(etag, false));

interface Planned {
  h: KeyHistory;
  goal?: GoalContent;
}

export async function rollbackChangeset(services: Services, options: HandleOptions, engine: ChangesetEngine, admin: Credential, request: RollbackRequest & { changeset: string }): Promise<RollbackAnswer> {
  // Stryker disable next-line ConditionalExpression: `bucket: undefined` is no narrowing to the stores (they test it against undefined), so `true` lists the same entries.
  const log = await services.state.listWriteLog({ since: request.since, ...(request.bucket !== undefined && { bucket: request.bucket }), limit: MAX_ENTRIES });
  const entries = log.filter((e) => e.changeset === request.changeset);
  if (entries.length === 0) throw new S3Error('InvalidArgument', `The write log holds no entry of changeset ${request.changeset} since ${request.since.toISOString()}.`);
  // Stryker disable next-line StringLiteral: a changeset is committed by a signed caller (the commit endpoint, the MCP door), whose access key its entries name, so '' is never reached.
  const author = entries[0]!.agent ?? entries[0]!.accessKey ?? '';
  if (request.agent !== '' && request.agent !== author) throw new S3Error('InvalidArgument', `Changeset ${request.changeset} was written by "${author}", not "${request.agent}".`);
  const writtenAs = rollbackAgent(author);
  const door = openRollbackDoor(services, options, admin, writtenAs);
  const answer: RollbackAnswer = {
    agent: author,
    writtenAs,
    changeset: request.changeset,
    since: (request.since.getTime() === 0 ? earliest(entries) : request.since).toISOString(),
    dryRun: request.dryRun,
    restored: [],
    conflicts: [],
    unrecoverable: [],
    unchanged: [],
  };

  // 1. Plan every key, writing nothing: the current version must still be the changeset's.
  const planned: Planned[] = [];
  // Stryker disable next-line EqualityOperator: `<=` for `<` is the same order: the bucket comparison is reached only for two buckets that differ, and a changeset holds one entry per key (commit.ts refuses a key named twice), so no two keys of one bucket are equal.
  for (const e of [...entries].sort((a, b) => (a.bucket === b.bucket ? (a.key < b.key ? -1 : 1) : a.bucket < b.bucket ? -1 : 1))) {
    const h: KeyHistory = { bucket: e.bucket, key: e.key, goal: e.previousETag ?? null, agentLast: e.newETag ?? null, first: e, last: e, writes: 1 };
    const current = await readCurrent(services, door, e.bucket, e.key, !request.dryRun);
    if ('failed' in current) {
      answer.unrecoverable.push({ bucket: e.bucket, key: e.key, goalETag: quoted(h.goal), reason: `the current version could not be read (${current.failed})` });
      continue;
    }
    const newest = await services.state.lastWrite(e.bucket, e.key).catch(() => undefined);
    if (current.etag !== h.agentLast || (newest !== undefined && newest.changeset !== request.changeset)) {
      answer.conflicts.push(await conflict(services, author, h, current, newest));
      continue;
    }
    if (h.goal === null) {
      planned.push({ h });
      continue;
    }
    const goal = await goalContent(services, door, e.bucket, e.key, h.goal);
    if (!goal || 'tooLarge' in goal) {
      answer.unrecoverable.push({ bucket: e.bucket, key: e.key, goalETag: quoted(h.goal), reason: unrestorable(goal, h.goal) });
      continue;
    }
    planned.push({ h, goal });
  }
  if (answer.conflicts.length > 0 || answer.unrecoverable.length > 0) {
    answer.unchanged = [];
    answer.notRestored = planned.map(({ h }) => ({ bucket: h.bucket, key: h.key, etag: quoted(h.agentLast) }));
    return answer;
  }
  const restored = planned.map(({ h, goal }) => ({ bucket: h.bucket, key: h.key, action: goal ? ('put' as const) : ('delete' as const), from: quoted(h.agentLast), to: quoted(h.goal), ...(goal && { source: goal.source }) }));
  if (request.dryRun) {
    answer.restored = restored;
    return answer;
  }

  // 2. One changeset of the restores, each If-Match the changeset's version of its key (restore.ts).
  const outcome = await commitRestores(services, engine, admin, writtenAs, planned.map(({ h, goal }) => ({ h, ...(goal && { content: goal.content }) })));
  if ('landed' in outcome) {
    answer.restored = restored;
    answer.restoredAs = outcome.landed;
  } else if ('refused' in outcome) {
    // Someone wrote one of the keys between the plan and the commit: nothing was restored.
    for (const r of outcome.refused) {
      const p = planned.find(({ h }) => h.bucket === r.bucket && h.key === r.key)!;
      const now = await readCurrent(services, door, r.bucket, r.key, false);
      const newest = await services.state.lastWrite(r.bucket, r.key).catch(() => undefined);
      answer.conflicts.push(await conflict(services, author, p.h, now, newest));
    }
    answer.notRestored = planned.filter(({ h }) => !answer.conflicts.some((c) => c.bucket === h.bucket && c.key === h.key)).map(({ h }) => ({ bucket: h.bucket, key: h.key, etag: quoted(h.agentLast) }));
  } else {
    for (const { h } of planned) answer.unrecoverable.push({ bucket: h.bucket, key: h.key, goalETag: quoted(h.goal), reason: `the restore failed (${outcome.failed}); nothing written, run the rollback again` });
  }
  return answer;
}

function earliest(entries: readonly WriteLogEntry[]): Date {
  // Stryker disable next-line EqualityOperator: `<=` keeps the later of two entries of the same millisecond instead of the earlier, the same instant (only its ISO string leaves).
  return entries.reduce((min, e) => (e.at < min ? e.at : min), entries[0]!.at);
}
