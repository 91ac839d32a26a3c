/**
 * Runs a rollback (docs/design.md §10), key by key:
 *   - current version = goal → unchanged (so a rerun after a crash finishes
 *     the job: keys already restored are left as they are);
 *   - someone else wrote the key since the agent's last write (the current
 *     version is not the agent's, or the write log's newest entry for the key
 *     is not the agent's) → conflict, with the diff from the agent's version
 *     to the current one; nothing written;
 *   - goal bytes held nowhere (sources.ts) → unrecoverable; nothing written;
 *   - otherwise one new write through the guarded path (restore.ts: a
 *     changeset of one key): PutObject of the goal with If-Match on the
 *     agent's last version (If-None-Match: * when the agent deleted the key),
 *     or DeleteObject with If-Match when the agent created it, and under the
 *     key's lock the write log's newest entry still the agent's. A write that
 *     loses to a concurrent writer — even one of the very same bytes — is a
 *     conflict: the other writer's version stays. Reads go through door.ts.
 * Each restore is one atomic write, so a crash between them leaves every key
 * restored or untouched.
 */
import type { Credential } from '../auth/credentials.js';
import type { ChangesetEngine } from '../changesets/commit.js';
import { diffVersions, type Version } from '../changes/diff.js';
import type { Services } from '../s3/context.js';
import type { HandleOptions } from '../s3/handle.js';
import type { WriteLogEntry } from '../state/types.js';
import { formatETag, unquoteETag } from '../vocabulary/etag.js';
import { openRollbackDoor, type RollbackDoor } from './door.js';
import { keysWritten, rollbackAgent, type Conflict, type KeyHistory, type RollbackAnswer, type RollbackRequest } from './plan.js';
import { commitRestores, sameEntry, type RestoreOutcome } from './restore.js';
import { goalContent, unrestorable } from './sources.js';

/** The most write-log entries one rollback reads (the log keeps at most --state-max-entries). */
const MAX_ENTRIES = 1_000_000;

/** Retries of a read the backend failed (5xx). */
const READ_RETRIES = 2;

/** The least of the current version held for a conflict's diff, when retention keeps less. */
const CURRENT_KEEP_BYTES = 1024 * 1024;

const quoted = (etag: string | null) => (etag === null ? null : formatETag(etag, false));

export interface Current {
  etag: string | null;
  /** null: deleted; undefined: larger than a diff is made of (not held in memory). */
  content: Buffer | null | undefined;
}


export async function runRollback(services: Services, options: HandleOptions, engine: ChangesetEngine, admin: Credential, request: RollbackRequest): Promise<RollbackAnswer> {
  const writtenAs = rollbackAgent(request.agent);
  const door = openRollbackDoor(services, options, admin, writtenAs);
  const entries = await services.state.listWriteLog({
    agent: request.agent,
    since: request.since,
    ...(request.until && { until: request.until }),
    // Stryker disable next-line ConditionalExpression,EqualityOperator,ObjectLiteral: a narrowing of the query only; keysWritten keeps to request.bucket again (the log would have to hold a million of the agent's entries for it to matter).
    ...(request.bucket !== undefined && { bucket: request.bucket }),
    limit: MAX_ENTRIES,
  });
  const answer: RollbackAnswer = {
    agent: request.agent,
    writtenAs,
    since: request.since.toISOString(),
    ...(request.until && { until: request.until.toISOString() }),
    dryRun: request.dryRun,
    restored: [],
    conflicts: [],
    unrecoverable: [],
    unchanged: [],
  };
  const writes = { engine, admin, writtenAs };
  for (const history of keysWritten(entries, request)) await rollbackKey(services, door, writes, request, history, answer);
  return answer;
}

/** The current version through casket; `stamp`: the read counts as the rollback agent's (it is about to write). */
export async function readCurrent(services: Services, door: RollbackDoor, bucket: string, key: string, stamp: boolean): Promise<Current | { failed: string }> {
  // Held in memory only as much as a conflict's diff may use (the same bound as /_casket/diff's versions).
  const keep = Math.max(services.retainer?.maxObjectSize ?? 0, services.preImages?.maxObjectSize ?? 0, CURRENT_KEEP_BYTES);
  // A read is idempotent: retried as SDKs retry one, when the backend fails it (moto answers an occasional GET racing a PUT with 500).
  let reply = await door({ method: 'GET', bucket, key }, { stamp, keep });
  for (let retry = 0; retry < READ_RETRIES && reply.status >= 500; retry++) reply = await door({ method: 'GET', bucket, key }, { stamp, keep });
  // Stryker disable next-line ConditionalExpression: NoSuchKey is only ever a 404 (https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html), so the status test alone made `true` answers the same.
  if (reply.status === 404 && reply.code === 'NoSuchKey') return { etag: null, content: null };
  // Stryker disable next-line ConditionalExpression,StringLiteral: the read sends no condition or Range, so it is answered 200 with an ETag or an error without one; the status test alone made `false` answers the same, and every error carries its S3 code (door.ts), so the `HTTP <status>` words are never reached.
  if (reply.status !== 200 || reply.headers.etag === undefined) return { failed: reply.code ?? `HTTP ${reply.status}` };
  return { etag: unquoteETag(reply.headers.etag), content: reply.body };
}

async function rollbackKey(services: Services, door: RollbackDoor, writes: { engine: ChangesetEngine; admin: Credential; writtenAs: string }, request: RollbackRequest, h: KeyHistory, answer: RollbackAnswer): Promise<void> {
  const { bucket, key } = h;
  const { engine, admin, writtenAs } = writes;
  const current = await readCurrent(services, door, bucket, key, !request.dryRun);
  if ('failed' in current) {
    answer.unrecoverable.push({ bucket, key, goalETag: quoted(h.goal), reason: `the current version could not be read (${current.failed}); nothing written` });
    return;
  }
  if (current.etag === h.goal) {
    answer.unchanged.push({ bucket, key, etag: quoted(h.goal) });
    return;
  }
  const newest = await services.state.lastWrite(bucket, key).catch(() => undefined);
  // When the log has forgotten the key's writes, the compare-and-swap alone decides.
  if (current.etag !== h.agentLast || (newest !== undefined && !sameEntry(newest, h.last))) {
    answer.conflicts.push(await conflict(services, request.agent, h, current, newest));
    return;
  }
  if (h.goal === null) {
    if (await existedBefore(services, h)) {
      answer.unrecoverable.push({ bucket, key, goalETag: null, reason: "the write log does not say which version the agent's first write replaced (an unconditional write under --guard observe or off); nothing written" });
      return;
    }
    if (!request.dryRun && !(await settled(services, door, request, h, await commitRestores(services, engine, admin, writtenAs, [{ h }]), answer))) return;
    answer.restored.push({ bucket, key, action: 'delete', from: quoted(h.agentLast), to: null });
    return;
  }
  const goal = await goalContent(services, door, bucket, key, h.goal);
  if (!goal || 'tooLarge' in goal) {
    answer.unrecoverable.push({ bucket, key, goalETag: quoted(h.goal), reason: `${unrestorable(goal, h.goal)}; nothing written` });
    return;
  }
  if (!request.dryRun && !(await settled(services, door, request, h, await commitRestores(services, engine, admin, writtenAs, [{ h, content: goal.content }]), answer))) return;
  answer.restored.push({ bucket, key, action: 'put', from: quoted(h.agentLast), to: quoted(h.goal), source: goal.source });
}

/**
 * A first write logged without the version it replaced is a creation — unless
 * the log's entry before it made a version: then the agent overwrote
 * something the log cannot name (its write had no condition, as --guard
 * observe and off let through), and deleting the key would be a guess.
 */
async function existedBefore(services: Services, h: KeyHistory): Promise<boolean> {
  const log = await services.state.listWriteLog({ bucket: h.bucket, key: h.key, until: h.first.at, limit: 1000 });
  // The entry before the agent's first write, not the first at an earlier time: entries of one millisecond (test/rollback/edges.test.ts).
  const at = log.findIndex((e) => sameEntry(e, h.first));
  // Stryker disable next-line ConditionalExpression: `true` differs only when the agent's first entry is missing (at -1: log[0] read instead of the line below), the case the disable below names, which no test makes; `false` is killed by edges.test.ts (the entry of the very millisecond).
  if (at >= 0) return log[at + 1]?.newETag !== undefined;
  // Stryker disable next-line all: the log lost the agent's first entry between its two reads (evicted with all older ones); only a later-appended entry of an earlier time (concurrent writes, skewed clocks) can be found, which no test makes.
  return log.find((e) => e.at < h.first.at)?.newETag !== undefined;
}

/**
 * Whether the restore landed. A refusal means another writer got there
 * first — a new version, a deletion, or the very bytes again (restore.ts): a
 * conflict, its version untouched — and unknown, not "deleted", when the key
 * cannot be read again. Anything else (the state store down, the
 * upstream failing) wrote nothing and says so.
 */
async function settled(services: Services, door: RollbackDoor, request: RollbackRequest, h: KeyHistory, outcome: RestoreOutcome, answer: RollbackAnswer): Promise<boolean> {
  if ('landed' in outcome) return true;
  if ('refused' in outcome) {
    const now = await readCurrent(services, door, h.bucket, h.key, false);
    const newest = await services.state.lastWrite(h.bucket, h.key).catch(() => undefined);
    answer.conflicts.push(await conflict(services, request.agent, h, now, newest));
    return false;
  }
  answer.unrecoverable.push({ bucket: h.bucket, key: h.key, goalETag: quoted(h.goal), reason: `the restore failed (${outcome.failed}); nothing written, run the rollback again` });
  return false;
}

/** `current` failed: the key could not be read again after a refused restore; the conflict says its version is unknown, not deleted. */
export async function conflict(services: Services, agent: string, h: KeyHistory, current: Current | { failed: string }, newest: WriteLogEntry | undefined): Promise<Conflict> {
  if ('failed' in current) return { bucket: h.bucket, key: h.key, agentETag: quoted(h.agentLast), currentUnread: current.failed };
  // Who wrote the current version: the write log's newest entry, when it made that very version.
  const writer: { agent?: string; accessKey?: string } = {};
  if (newest && newest.newETag === (current.etag ?? undefined)) {
    if (newest.agent !== undefined) writer.agent = newest.agent;
    // Stryker disable next-line ConditionalExpression: assigning an undefined accessKey is leaving it unset (read below with ?? and !== undefined).
    else if (newest.accessKey !== undefined) writer.accessKey = newest.accessKey;
  }
  const out: Conflict = {
    bucket: h.bucket,
    key: h.key,
    agentETag: quoted(h.agentLast),
    currentETag: quoted(current.etag),
    // Stryker disable next-line ConditionalExpression: `currentWriter: undefined` is dropped from the JSON answer (endpoint.ts), the only way the answer leaves casket.
    ...((writer.agent ?? writer.accessKey) !== undefined && { currentWriter: writer.agent ?? writer.accessKey }),
  };
  // The agent's version: its bytes from retention or pre-images (an agent's writes are retained when small), as a version of this key.
  let mine: Buffer | null | undefined = null;
  if (h.agentLast !== null) {
    const version = { bucket: h.bucket, key: h.key, etag: h.agentLast };
    mine = (await services.retainer?.get(version)) ?? (await services.preImages?.get(version));
  }
  if (mine === undefined || current.content === undefined) return out;
  const from: Version = { etag: h.agentLast ?? 'deleted', writer: agent, content: mine };
  // Stryker disable next-line ConditionalExpression: a writer or writerAccessKey set to undefined is no writer to diffVersions (changes/diff.ts tests them for truth).
  const to: Version = { etag: current.etag ?? 'deleted', content: current.content, ...(writer.agent !== undefined && { writer: writer.agent }), ...(writer.accessKey !== undefined && { writerAccessKey: writer.accessKey }) };
  const diff = diffVersions(`${h.bucket}/${h.key}`, from, to, services.diffMaxBytes ?? 65536);
  return { ...out, diff: diff.body, diffContentType: diff.contentType, ...(diff.truncated && { diffTruncated: true }) };
}
