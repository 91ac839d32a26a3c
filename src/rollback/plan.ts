/**
 * What a rollback sets out to do (docs/design.md §10), from the write log
 * alone: for each key the agent wrote in the window, the goal is the version
 * just before its first write there (that entry's previous ETag; none: the
 * agent created the key, which goes away), and the restore is conditioned on
 * the agent's last version of the key there (none: the agent deleted it).
 *
 * The request and the answer are the same for `POST /_casket/rollback` and
 * `casket rollback --json`.
 */
import type { WriteLogEntry } from '../state/types.js';
import { S3Error } from '../vocabulary/errors.js';
import { compareKeys } from '../vocabulary/names.js';

/** Where casket serves it (src/rollback/endpoint.ts); the command posts to it (command.ts). */
export const ROLLBACK_PATH = '/_casket/rollback';

export interface RollbackRequest {
  /** The agent whose writes to undo; with `changeset`, '' (whoever wrote it) or the one it must have been. */
  agent: string;
  /** The window's start; with `changeset`, the epoch unless given (how far back the write log is searched). */
  since: Date;
  /** Undo this changeset as a unit (changeset.ts): every key it wrote, or none. */
  changeset?: string;
  until?: Date;
  bucket?: string;
  prefix?: string;
  dryRun: boolean;
}

/** One key the agent wrote in the window. */
export interface KeyHistory {
  bucket: string;
  key: string;
  /** The version to go back to; null: the key did not exist (the agent created it). */
  goal: string | null;
  /** The agent's last version in the window; null: its last write deleted the key. */
  agentLast: string | null;
  /** The agent's first and last write-log entries for the key in the window. */
  first: WriteLogEntry;
  last: WriteLogEntry;
  /** How many writes the agent made to the key in the window. */
  writes: number;
}

/** ETags in the answer are quoted, as S3 shows them, ready for an If-Match; null: no version (absent). */
export interface Restored {
  bucket: string;
  key: string;
  /** `put` the goal version back, or `delete` a key the agent created. */
  action: 'put' | 'delete';
  from: string | null;
  to: string | null;
  /** Where the goal's bytes came from: retention (versions agents saw), pre-image (--keep-pre-images), versions (the bucket's own). */
  source?: 'retained' | 'pre-image' | 'versions';
}

export interface Conflict {
  bucket: string;
  key: string;
  /** The agent's last version, and the current one that someone else wrote since (null: they deleted the key). */
  agentETag: string | null;
  /** Absent when the current version is unknown (currentUnread): null would say the key was deleted. */
  currentETag?: string | null;
  /**
   * Why the current version is unknown: the restore was refused (someone
   * wrote the key first) and reading the key again failed — the S3 error
   * code of that read. Running the rollback again reports it in full.
   */
  currentUnread?: string;
  /** Who wrote the current version, when the write log knows. */
  currentWriter?: string;
  /** What changed from the agent's version to the current one (changes/diff.ts), when both are at hand. */
  diff?: string;
  diffContentType?: string;
  diffTruncated?: boolean;
}

export interface Unrecoverable {
  bucket: string;
  key: string;
  goalETag: string | null;
  reason: string;
}

export interface Unchanged {
  bucket: string;
  key: string;
  /** The goal, which is already current. */
  etag: string | null;
}

export interface RollbackAnswer {
  agent: string;
  /** The changeset undone as a unit, when the request named one. */
  changeset?: string;
  /** The id of the changeset that wrote the restores (they land together). */
  restoredAs?: string;
  /** A changeset's keys left as they are because another of its keys could not be restored. */
  notRestored?: Unchanged[];
  /** The agent name the restores were written as (write log, read stamps). */
  writtenAs: string;
  since: string;
  until?: string;
  dryRun: boolean;
  restored: Restored[];
  conflicts: Conflict[];
  unrecoverable: Unrecoverable[];
  unchanged: Unchanged[];
}

/**
 * The agent name restores are written as. A rollback of `rollback:alice` is
 * written as `rollback:rollback:alice`: each undo is one more agent whose
 * writes the write log lists and a rollback can undo.
 */
export function rollbackAgent(agent: string): string {
  return `rollback:${agent}`;
}

function instant(name: string, value: unknown): Date | undefined {
  if (value === undefined || value === null) return undefined;
  // ISO 8601 with a date and a time (and a zone, or UTC is meant).
  // Stryker disable next-line Regex: a one-digit minute the looser pattern lets through is no time to Date either (NaN), refused just below as this is
  const d = typeof value === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(value) ? new Date(/(Z|[+-]\d{2}:?\d{2})$/.test(value) ? value : `${value}Z`) : undefined;
  if (!d || Number.isNaN(d.getTime())) throw new S3Error('InvalidArgument', `${name} must be an ISO 8601 time, e.g. 2026-11-25T14:00:00Z.`);
  return d;
}

/** The request body of POST /_casket/rollback: `{"agent", "since", "until"?, "bucket"?, "prefix"?, "dryRun"?}`. */
export function parseRollbackRequest(body: Buffer): RollbackRequest {
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch {
    throw new S3Error('InvalidRequest', 'The rollback request must be a JSON object.');
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new S3Error('InvalidArgument', 'The rollback request must be a JSON object.');
  const o = doc as Record<string, unknown>;
  if (o.changeset !== undefined && (typeof o.changeset !== 'string' || o.changeset === '')) throw new S3Error('InvalidArgument', 'changeset must be the id of a changeset, as its commit answered it.');
  const changeset = o.changeset as string | undefined;
  if (changeset !== undefined && o.agent !== undefined && typeof o.agent !== 'string') throw new S3Error('InvalidArgument', 'agent must be a string.');
  if (changeset === undefined && (typeof o.agent !== 'string' || o.agent === '')) throw new S3Error('InvalidArgument', 'agent is required: the agent whose writes to undo (or changeset: one changeset to undo).');
  const since = instant('since', o.since) ?? (changeset !== undefined ? new Date(0) : undefined);
  if (!since) throw new S3Error('InvalidArgument', 'since is required: the start of the window, ISO 8601.');
  const until = instant('until', o.until);
  if (until && until < since) throw new S3Error('InvalidArgument', 'until is before since.');
  for (const name of ['bucket', 'prefix'] as const) if (o[name] !== undefined && typeof o[name] !== 'string') throw new S3Error('InvalidArgument', `${name} must be a string.`);
  if (o.dryRun !== undefined && typeof o.dryRun !== 'boolean') throw new S3Error('InvalidArgument', 'dryRun must be true or false.');
  return {
    agent: typeof o.agent === 'string' ? o.agent : '',
    since,
    ...(changeset !== undefined && { changeset }),
    ...(until && { until }),
    ...(typeof o.bucket === 'string' && { bucket: o.bucket }),
    ...(typeof o.prefix === 'string' && o.prefix !== '' && { prefix: o.prefix }),
    dryRun: o.dryRun === true,
  };
}

/**
 * The keys the agent wrote in the window, from its write-log entries there
 * (any order), sorted by bucket and key.
 */
export function keysWritten(entries: readonly WriteLogEntry[], request: Pick<RollbackRequest, 'bucket' | 'prefix'>): KeyHistory[] {
  const byKey = new Map<string, WriteLogEntry[]>();
  for (const e of entries) {
    if (request.bucket !== undefined && e.bucket !== request.bucket) continue;
    if (request.prefix !== undefined && !e.key.startsWith(request.prefix)) continue;
    const id = JSON.stringify([e.bucket, e.key]);
    const list = byKey.get(id);
    if (list) list.push(e);
    else byKey.set(id, [e]);
  }
  const out: KeyHistory[] = [];
  for (const list of byKey.values()) {
    // Oldest first; the sort is stable, so entries of one millisecond keep the log's order.
    list.sort((a, b) => a.at.getTime() - b.at.getTime());
    const first = list[0]!;
    const last = list[list.length - 1]!;
    out.push({ bucket: first.bucket, key: first.key, goal: first.previousETag ?? null, agentLast: last.newETag ?? null, first, last, writes: list.length });
  }
  // In the order S3 lists keys (UTF-8 bytes, compareKeys), bucket by bucket.
  return out.sort((a, b) => (a.bucket === b.bucket ? compareKeys(a.key, b.key) : compareKeys(a.bucket, b.bucket)));
}
