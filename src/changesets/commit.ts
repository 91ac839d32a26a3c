/**
 * A changeset (issue 39): several writes and deletes, each with its own
 * If-Match / If-None-Match, that land together or not at all.
 *
 *   1. stage: every body is streamed to a file in the data dir (intent.ts),
 *      hashed on the way — its SHA-256 is the new ETag. No lock is held yet.
 *   2. lock: every key, exclusively, in sorted order (locks.ts).
 *   3. check: each entry goes through the one guard (guard.checkWrite: the
 *      explicit conditions and the agent's read-stamp rules, as a single
 *      write), then the permit's condition is held against the current
 *      version — as the guard's own early check does. Any refusal: nothing is
 *      written, and every refused entry is answered as its single write
 *      would be (writer, diff since the agent's read: s3/write.ts explainRefusal).
 *   4. decide: the intent (entries, the version each replaces, the new ETags)
 *      is written whole (intent.ts). From here on the changeset lands, now or
 *      at recovery (recover.ts).
 *   5. apply: each entry is committed by the one write path, s3/write.ts
 *      guardedWrite, under If-Match of the version checked in step 3
 *      (If-None-Match: * for a key that was absent) — the backend's atomic
 *      conditional commit, never a second compare-and-swap. Write log and
 *      events get one record per entry, each with the changeset id.
 *   6. release the locks; remove the staging directory.
 *
 * Readers and single writes through this casket — and, with --state redis,
 * through every casket on the same Redis (shared-gate.ts) — wait on the locks
 * (bounded, then 503 SlowDown), so they see every key old or every key new.
 * Readers that go straight to an upstream bucket can see the commit in progress.
 */
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { conditionHolds } from '../backends/commit-condition.js';
import type { DeleteResult, ObjectInfo, Payload } from '../backends/types.js';
import type { WriteConditions } from '../guard/preconditions.js';
import { Refusal } from '../guard/refusal.js';
import type { AccessCheck } from '../s3/access.js';
import { objectResource } from '../s3/actions.js';
import type { RequestContext, Services } from '../s3/context.js';
import type { WriteLogEntry } from '../state/types.js';
import { explainRefusal, guardedWrite } from '../s3/write.js';
import { S3Error } from '../vocabulary/errors.js';
import type { ChangesetDir, Intent, IntentEntry, StagedBody } from './intent.js';
import { LeaseLost, type ExclusiveHold } from './locks.js';

/** At most this many entries, and this many body bytes in all (issue 39: memory stays flat, bodies are staged on disk). */
export const MAX_ENTRIES = 1000;
export const MAX_TOTAL_BYTES = 100 * 1024 * 1024;

export interface ChangesetEntry {
  bucket: string;
  key: string;
  /** If-Match / If-None-Match, as a single write's (guard/preconditions.ts). None: the agent rules derive one, as for a single write. */
  conditions: WriteConditions;
  /** The staged new content; absent: the entry deletes the key. */
  body?: StagedBody;
  contentType?: string;
  /**
   * Also required under the locks: the write log's newest entry for the key
   * passes this (rollback, src/rollback/: the version it restores over must
   * still be the one it planned on, and identical bytes written since by
   * someone else are told apart by their log entry, which If-Match cannot).
   * Every write through this casket has logged itself before it lets go of
   * the key (s3/write.ts), so under the locks the log is settled.
   */
  lastWrite?: (newest: WriteLogEntry | undefined) => boolean;
}

/** Who commits: what the guard, the policy check and the write log need of the request. */
export interface ChangesetCaller {
  requestId: string;
  accessKey?: string;
  agent?: string;
  access: AccessCheck;
}

export interface LandedEntry {
  bucket: string;
  key: string;
  /** The new version; null: deleted. */
  etag: string | null;
  versionId?: string;
}

export interface ChangesetResult {
  id: string;
  landed: LandedEntry[];
  /** From the decision to the last entry applied: how long a reader straight at an upstream can see the changeset half applied. */
  applyMs: number;
}

/** Nothing was written: every refused entry, each as its single write's refusal. */
export class ChangesetRefused extends Error {
  constructor(readonly id: string, readonly refusals: Refusal[]) {
    super(`${refusals.length} entr${refusals.length === 1 ? 'y' : 'ies'} refused; nothing was written`);
    this.name = 'ChangesetRefused';
  }
}

/**
 * Past the decision point, not all applied yet: casket applies the rest
 * until it lands (finishLater, or recovery at the next start). A 503 to the
 * client, which reads the keys again; a caller inside casket (rollback) knows
 * the changeset lands.
 */
export class ChangesetLanding extends S3Error {
  constructor(readonly id: string) {
    super('ServiceUnavailable', `The changeset ${id} was decided, and its entries are being applied: it lands whole. Read its keys again shortly.`);
  }
}

export interface ChangesetEngine {
  dir: ChangesetDir;
  /**
   * Test hook (CASKET_TEST_CHANGESET_KILL_AFTER, read by server.ts only when
   * set): SIGKILL this process once this many entries of a changeset were
   * applied (0: right after the decision; the entry count: after the last
   * entry, before the intent is removed; -1: just before the decision), to
   * prove recovery (test/changesets/kill.test.ts). Never set in production.
   */
  killAfter?: number;
}

/** A RequestContext for the one write path, as the changeset's caller. */
function contextOf(caller: ChangesetCaller, bucket: string, key: string): RequestContext {
  return {
    requestId: caller.requestId,
    operation: 'PutObject',
    method: 'POST',
    bucket,
    key,
    query: new URLSearchParams(),
    headers: {},
    auth: null,
    accessKey: caller.accessKey,
    agent: caller.agent,
    access: caller.access,
    etagSuffix: false,
    body: Readable.from([]),
    payload: () => {
      throw new Error('a changeset entry has no request body');
    },
  };
}

function entryId(e: { bucket: string; key: string }): string {
  return JSON.stringify([e.bucket, e.key]);
}

/** Checks the shape of a changeset before anything is locked: size limits, one entry per key, the caller's policy. */
export function validate(entries: ReadonlyArray<ChangesetEntry>, access: AccessCheck): void {
  if (entries.length === 0) throw new S3Error('InvalidRequest', 'A changeset needs at least one entry.');
  if (entries.length > MAX_ENTRIES) throw new S3Error('InvalidRequest', `A changeset holds at most ${MAX_ENTRIES} entries; this one has ${entries.length}. Split it.`);
  const total = entries.reduce((n, e) => n + (e.body?.size ?? 0), 0);
  if (total > MAX_TOTAL_BYTES) throw new S3Error('EntityTooLarge', `A changeset's bodies total at most ${MAX_TOTAL_BYTES} bytes; these total ${total}.`);
  const seen = new Set<string>();
  for (const e of entries) {
    const id = entryId(e);
    if (seen.has(id)) throw new S3Error('InvalidRequest', `The changeset names ${e.bucket}/${e.key} twice: one entry per key.`);
    seen.add(id);
    access.authorize({ action: e.body ? 's3:PutObject' : 's3:DeleteObject', resource: objectResource(e.bucket, e.key) });
  }
}

/**
 * Commits a changeset whose bodies are staged under `id` (ChangesetDir.stage).
 * Resolves once every entry landed; throws ChangesetRefused (nothing written),
 * S3Error SlowDown (a lock not had in time: nothing written), or — past the
 * decision point — an error after which recovery finishes the changeset.
 * The staging directory is removed in every case but the last.
 */
export async function commitChangeset(services: Services, engine: ChangesetEngine, caller: ChangesetCaller, id: string, entries: ReadonlyArray<ChangesetEntry>): Promise<ChangesetResult> {
  let decided = false;
  try {
    validate(entries, caller.access);
    if (!services.gate) throw new Error('changesets need the key gate (Services.gate)');
    const hold = await services.gate.exclusive(entries, id);
    let keepLocked = false;
    try {
      const currents = await Promise.all(entries.map((e) => services.backend.headObject(e.bucket, e.key)));
      const refusals = (await Promise.all(entries.map((e, i) => check(services, caller, e, currents[i]!)))).filter((r): r is Refusal => r !== undefined);
      if (refusals.length > 0) {
        for (const r of refusals) services.guard.report(r, caller.agent);
        throw new ChangesetRefused(id, refusals);
      }
      const intent: Intent = {
        id,
        state: 'committing',
        at: Date.now(),
        ...(caller.agent !== undefined && { agent: caller.agent }),
        ...(caller.accessKey !== undefined && { accessKey: caller.accessKey }),
        entries: entries.map((e, i) => ({
          bucket: e.bucket,
          key: e.key,
          expected: currents[i]?.etag ?? null,
          etag: e.body?.sha256 ?? null,
          ...(e.body && { body: e.body.file, size: e.body.size }),
          ...(e.contentType !== undefined && { contentType: e.contentType }),
        })),
      };
      if (engine.killAfter === -1) process.kill(process.pid, 'SIGKILL');
      // The check above holds only while the keys are held: a lapsed lease decides nothing.
      try {
        hold.fence();
      } catch (err) {
        if (!(err instanceof LeaseLost)) throw err;
        throw new S3Error('SlowDown', `The changeset ${id} lost its hold on its keys before it decided (the state store was slow): nothing was written. Try again.`);
      }
      await engine.dir.decide(intent);
      decided = true;
      try {
        const applying = performance.now();
        const landed = await applyIntent(services, engine, caller, intent, hold);
        return { id, landed, applyMs: performance.now() - applying };
      } catch (err) {
        if (err instanceof Refusal) {
          // A key was written around casket (straight to the upstream) since the check: no retry heals that.
          services.log.error({ err, changeset: id, key: err.key }, 'changeset: an entry was changed around casket after the check; the changeset is partly applied, its intent kept for the next start');
          throw new S3Error('InternalError', `The changeset ${id} could not apply ${err.bucket}/${err.key}: it was changed around casket (not through it) after the check. The entries before it landed.`);
        }
        // Decided, not all applied (the backend failed: an upstream down; or
        // the hold's lease lapsed). The keys stay locked — readers through
        // casket wait, then get SlowDown, rather than see a mix — while
        // casket retries (taking them again when the lease lapsed).
        keepLocked = true;
        void finishLater(services, engine, caller, intent, hold);
        services.log.error({ err, changeset: id }, 'changeset decided but not all applied: retrying, its keys held until it lands');
        throw new ChangesetLanding(id);
      }
    } finally {
      if (!keepLocked) hold.release();
    }
  } finally {
    if (!decided) await engine.dir.discard(id);
  }
}

/** Entries of a decided changeset applied at once: within an upstream client's connection pool. */
const APPLY_CONCURRENCY = 8;

/** How long between attempts to finish a decided changeset whose backend failed. */
const RETRY_MS = 1000;

/** Applies a decided changeset until it lands (or the process ends: then recovery does, at the next start), then releases its keys. */
async function finishLater(services: Services, engine: ChangesetEngine, caller: ChangesetCaller, intent: Intent, held: ExclusiveHold): Promise<void> {
  let hold = held;
  try {
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS).unref());
      try {
        try {
          hold.fence();
        } catch {
          // The lease lapsed: take the keys again (the same owner takes over what is still its own), waiting as any changeset.
          hold.release();
          hold = await services.gate!.exclusive(intent.entries, intent.id);
        }
        await applyIntent(services, engine, caller, intent, hold);
        services.log.info({ changeset: intent.id }, 'changeset landed after a retry');
        return;
      } catch (err) {
        // A refusal now means the key was changed around casket: it will not heal by retrying.
        if (err instanceof Refusal) {
          services.log.error({ err, changeset: intent.id }, 'changeset: an entry changed around casket; its intent is kept for recovery at the next start');
          return;
        }
      }
    }
  } finally {
    hold.release();
  }
}

/** The entry's refusal, as its single write would be refused; undefined when it may land. */
async function check(services: Services, caller: ChangesetCaller, e: ChangesetEntry, current: ObjectInfo | null): Promise<Refusal | undefined> {
  const attempted = e.body ? e.body.sha256 : null;
  try {
    const permit = await services.guard.checkWrite({ bucket: e.bucket, key: e.key, agent: caller.agent, current: async () => current, conditions: e.conditions });
    if (conditionHolds(permit.condition, current?.etag ?? null, current ?? undefined) && (!e.lastWrite || e.lastWrite(await services.state.lastWrite(e.bucket, e.key)))) return undefined;
    return await explained(services.guard.conflict(e.bucket, e.key, current, e.conditions, permit), attempted, services, caller);
  } catch (err) {
    if (!(err instanceof Refusal)) throw err;
    return explained(err, attempted, services, caller);
  }
}

/** With the writer and the diff, and whether the current content already is what the entry sends. */
async function explained(r: Refusal, attempted: string | null, services: Services, caller: ChangesetCaller): Promise<Refusal> {
  const identical = attempted === (r.current?.etag ?? null);
  return explainRefusal(identical ? r.with(r.current, { identical: true }) : r, services, caller.agent);
}

/**
 * Applies every entry of a decided changeset not applied yet, then removes
 * its directory. Idempotent: an entry whose key already holds its new
 * version (or, for a delete, is absent) is skipped, so recovery may run it
 * again after a crash at any point.
 */
export async function applyIntent(services: Services, engine: ChangesetEngine, caller: ChangesetCaller, intent: Intent, hold: ExclusiveHold): Promise<LandedEntry[]> {
  const landed: LandedEntry[] = new Array<LandedEntry>(intent.entries.length);
  let applied = 0;
  let next = 0;
  let failed = false;
  const killPoint = () => {
    if (engine.killAfter !== undefined && engine.killAfter >= 0 && applied >= engine.killAfter) process.kill(process.pid, 'SIGKILL');
  };
  // Entries are different keys, all held: applied several at a time, so the
  // window in which a reader straight at the upstream sees the changeset half
  // applied is about one write, not one per entry (scripts/bench/changeset.mjs
  // prints it). A failure stops new entries; the intent finishes the rest.
  const worker = async () => {
    while (!failed && next < intent.entries.length) {
      const i = next++;
      killPoint();
      try {
        // Fenced: a holder whose lease lapsed writes no further entry (locks.ts ExclusiveHold).
        hold.fence();
        landed[i] = await applyEntry(services, engine, caller, intent.id, intent.entries[i]!);
      } catch (e) {
        failed = true;
        throw e;
      }
      applied++;
    }
  };
  const outcomes = await Promise.allSettled(Array.from({ length: Math.min(APPLY_CONCURRENCY, intent.entries.length) }, worker));
  const failure = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
  if (failure) throw failure.reason;
  killPoint();
  await engine.dir.discard(intent.id);
  return landed;
}

async function applyEntry(services: Services, engine: ChangesetEngine, caller: ChangesetCaller, changeset: string, entry: IntentEntry): Promise<LandedEntry> {
  const { bucket, key } = entry;
  const current = await services.backend.headObject(bucket, key);
  const base = { bucket, key, etag: entry.etag };
  if ((current?.etag ?? null) === entry.etag) return { ...base, ...(current?.versionId !== undefined && { versionId: current.versionId }) };
  // The version checked under the locks: nothing else wrote through casket since.
  const conditions: WriteConditions = entry.expected === null ? { ifNoneMatch: '*' } : { ifMatch: [entry.expected] };
  const ctx = contextOf(caller, bucket, key);
  const writer = caller.agent !== undefined ? { writer: caller.agent } : {};
  // Already judged by the guard under the locks (check): only the condition is checked again, atomically, at commit.
  const common = { ctx, services, bucket, key, conditions, agentRules: false as const, changeset };
  if (entry.etag === null) {
    const result = await guardedWrite<DeleteResult>({
      ...common,
      operation: 'DeleteObject',
      deletes: true,
      bodyComing: false,
      commit: (permit) => services.backend.deleteObject(bucket, key, { ...permit, ...writer }),
      written: () => null,
      replaced: (r) => r.replaced,
      madeVersion: (r) => (r.deleteMarker ? r.versionId : undefined),
      landed: () => ({ replaced: null }),
    });
    return { ...base, ...(result.versionId !== undefined && { versionId: result.versionId }) };
  }
  const file = engine.dir.path(changeset, entry.body!);
  const info = await guardedWrite<ObjectInfo>({
    ...common,
    operation: 'PutObject',
    declaredSha256: entry.etag,
    bodyComing: true,
    commit: (permit) =>
      services.backend.putObject(bucket, key, stagedPayload(file, entry.etag!, entry.size ?? 0), {
        ...permit,
        headers: entry.contentType !== undefined ? { contentType: entry.contentType } : {},
        metadata: {},
        ...writer,
        declaredSha256: entry.etag!,
        contentLength: entry.size ?? 0,
      }),
    written: (i) => i,
    landed: (c) => c!,
  });
  // An agent's small version is kept for diffs, as PutObject keeps it (docs/design.md §6).
  const retainer = services.retainer;
  if (caller.agent !== undefined && retainer && (entry.size ?? 0) <= retainer.maxObjectSize) retainer.keep({ bucket, key, etag: info.etag }, await readFile(file));
  return { ...base, ...(info.versionId !== undefined && { versionId: info.versionId }) };
}

/** A staged body as the backend takes a request's: its SHA-256 and size were taken as it was staged. */
function stagedPayload(file: string, sha256: string, size: number): Payload {
  return { stream: createReadStream(file), digest: () => ({ sha256: Buffer.from(sha256, 'hex'), size }) };
}
