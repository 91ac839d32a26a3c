/**
 * "Changed since you read" (docs/design.md §12): which files an agent read
 * whole that someone else has written since, told once per change — in the
 * next MCP answer of any tool (src/mcp/reminders.ts) and, for S3 requests
 * that ask, in the `x-casket-changed-since-read` response header
 * (s3/changed-since-read-header.ts).
 *
 * Bounded cost: no scan of the agent's stamps. Each agent keeps a cursor into
 * the write log (the state store's, shared by every replica): a call looks at
 * the writes after it only (at most MAX_WRITES), and asks for the agent's
 * stamp of just those keys. The log is appended in about time order, not
 * exactly (concurrent appends, other replicas' clocks), so the look starts
 * MARGIN_MS before the cursor, and the cursor remembers the reminders already
 * given inside that margin, so none is given twice.
 */
import { type StateStore, type WriteLogEntry } from '../state/types.js';

/**
 * How far before the cursor a look starts. Smaller than the log's own
 * LOG_ORDER_SLACK_MS (a minute, for rollback's windows): every call re-reads
 * the writes of this margin, and NTP keeps replicas' clocks within
 * milliseconds. A write appended later than this behind a newer one is not
 * reminded of — what_changed still lists it, and the guard still refuses a
 * write based on the stale read: a lost reminder costs a refusal, never data.
 */
const MARGIN_MS = 5_000;

/** Writes looked at per call, newest first; older ones past it are left to what_changed. */
const MAX_WRITES = 100;

export interface ChangedKey {
  bucket: string;
  key: string;
  /** The version the agent read whole (unquoted). */
  readETag: string;
  /** The version now (unquoted); undefined: deleted. */
  etag: string | undefined;
  /** The writer's agent, or the access key of a request without one. */
  changedBy: string;
  changedAt: Date;
}

interface Cursor {
  /** Epoch ms of the newest write looked at. */
  at: number;
  /** Reminders given for writes inside the margin before `at`: [id, at]. */
  told: Array<[string, number]>;
}

/**
 * The last looks' writes, per store and window start, while its log is
 * unchanged: between writes, reading a window of the log again answers what it
 * answered before, and agents whose cursors agree (every cursor is the newest
 * write it saw, or the time of the agent's first look) read the same window.
 * Only for a store that knows when its log changes (writeLogVersion: one
 * process's own); a store shared with other caskets (redis) is asked every
 * time, so their writes are seen. The version is read before the log, so a
 * write appended between the two makes the next call read again. Kept at
 * most REUSE_MS: entries expiring from the log (its TTL, its cap) are then
 * seen gone as a fresh read would; at most REUSE_WINDOWS windows per store.
 */
const lastLooks = new WeakMap<StateStore, Map<number, { version: number; read: number; writes: WriteLogEntry[] }>>();
const REUSE_MS = 1000;
const REUSE_WINDOWS = 64;

async function writesSince(state: StateStore, since: number, version: number | undefined): Promise<WriteLogEntry[]> {
  const now = Date.now();
  let looks = lastLooks.get(state);
  const last = looks?.get(since);
  if (version !== undefined && last && last.version === version && now - last.read < REUSE_MS) return last.writes;
  const writes = await state.listWriteLog({ since: new Date(since), limit: MAX_WRITES });
  if (version !== undefined) {
    if (!looks) lastLooks.set(state, (looks = new Map()));
    looks.delete(since);
    looks.set(since, { version, read: now, writes });
    // The oldest first: a Map iterates in insertion order.
    if (looks.size > REUSE_WINDOWS) looks.delete(looks.keys().next().value!);
  }
  return writes;
}

/**
 * Agents whose last look found nothing to tell and moved nothing, per store:
 * the log's version and the stamps' mark it read, and the keys whose stamps
 * it asked for. While the log is unchanged, none of those stamps changed and
 * the agent's cursor was not moved (every move goes through putCursor, in
 * this process: such stores are one process's own), the same look would
 * read the same window, ask the same stamps and find the same nothing — so
 * it is not made again. At most REUSE_MS, as the windows; never for a store
 * without stampMark (redis: other caskets write its stamps and cursors).
 */
const quietLooks = new WeakMap<StateStore, Map<string, { version: number; mark: number; candidates: Array<{ bucket: string; key: string }>; at: number }>>();
const QUIET_AGENTS = 10_000;
/** Cursor moves per store, so that a look during which any cursor moved is not remembered. */
const cursorMoves = new WeakMap<StateStore, number>();

function remember(state: StateStore, agent: string, look: { version: number | undefined; mark: number | undefined; moves: number; candidates: Array<{ bucket: string; key: string }> }): void {
  if (look.version === undefined || look.mark === undefined || !state.stampsChangedSince || (cursorMoves.get(state) ?? 0) !== look.moves) return;
  let agents = quietLooks.get(state);
  if (!agents) quietLooks.set(state, (agents = new Map()));
  if (agents.size >= QUIET_AGENTS && !agents.has(agent)) agents.clear();
  agents.set(agent, { version: look.version, mark: look.mark, candidates: look.candidates.map((w) => ({ bucket: w.bucket, key: w.key })), at: Date.now() });
}

async function putCursor(state: StateStore, agent: string, cursor: Cursor): Promise<void> {
  cursorMoves.set(state, (cursorMoves.get(state) ?? 0) + 1);
  quietLooks.get(state)?.delete(agent);
  await state.putReminderCursor(agent, JSON.stringify(cursor));
}

const changeId = (e: WriteLogEntry) => JSON.stringify([e.bucket, e.key, e.newETag ?? null]);

function parse(raw: string | undefined): Cursor | undefined {
  if (raw === undefined) return undefined;
  try {
    const c = JSON.parse(raw) as Cursor;
    return typeof c.at === 'number' && Array.isArray(c.told) ? c : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The keys `agent` read whole whose newest write since its cursor is someone
 * else's, each once; moves the cursor past them. An agent with no cursor yet
 * starts from the writes just before now (the margin): its stamps are newer.
 * `except` is neither told nor marked told.
 */
export async function changedSinceRead(state: StateStore, agent: string, except?: { bucket: string; key: string }): Promise<ChangedKey[]> {
  // Both read before anything they mark: a change after them is seen by the next call.
  const version = await state.writeLogVersion?.();
  const mark = await state.stampMark?.();
  const moves = cursorMoves.get(state) ?? 0;
  const quiet = quietLooks.get(state)?.get(agent);
  if (quiet && except === undefined && version === quiet.version && Date.now() - quiet.at < REUSE_MS && state.stampsChangedSince && !(await state.stampsChangedSince(quiet.mark, agent, quiet.candidates))) return [];
  const cursor = parse(await state.getReminderCursor(agent));
  const from = cursor?.at ?? Date.now();
  const writes = await writesSince(state, from - MARGIN_MS, version);
  if (writes.length === 0) {
    if (!cursor) await putCursor(state, agent, { at: from, told: [] });
    else if (except === undefined) remember(state, agent, { version, mark, moves, candidates: [] });
    return [];
  }
  const told = new Map(cursor?.told ?? []);
  // Newest first: the first entry of a key is its newest write.
  const newest = new Map<string, WriteLogEntry>();
  for (const w of writes) {
    const id = JSON.stringify([w.bucket, w.key]);
    if (!newest.has(id)) newest.set(id, w);
  }
  // `except`: the key this very answer delivers (a GetObject), whose stamp is recorded once it is sent.
  const candidates = [...newest.values()].filter((w) => w.agent !== agent && !told.has(changeId(w)) && !(except && w.bucket === except.bucket && w.key === except.key));
  const stamps = state.getStamps ? await state.getStamps(agent, candidates) : await Promise.all(candidates.map((w) => state.getStamp(agent, w.bucket, w.key)));
  const out: ChangedKey[] = [];
  for (const [i, w] of candidates.entries()) {
    const stamp = stamps[i];
    // Only a whole read is a copy the agent may rely on; a read of this very version needs no reminder.
    if (!stamp?.full || stamp.etag === w.newETag) continue;
    out.push({ bucket: w.bucket, key: w.key, readETag: stamp.etag, etag: w.newETag, changedBy: w.agent ?? w.accessKey ?? 'unknown', changedAt: w.at });
    told.set(changeId(w), w.at.getTime());
  }
  const at = Math.max(from, ...writes.map((w) => w.at.getTime()));
  if (!cursor || at !== cursor.at || out.length > 0) {
    const kept = [...told].filter(([, t]) => t >= at - 2 * MARGIN_MS);
    await putCursor(state, agent, { at, told: kept });
  } else if (except === undefined) {
    remember(state, agent, { version, mark, moves, candidates });
  }
  return out.sort((a, b) => a.changedAt.getTime() - b.changedAt.getTime());
}
