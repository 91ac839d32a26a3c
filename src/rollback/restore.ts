/**
 * How a rollback writes (docs/design.md §10): its restores are committed by
 * the changeset engine (src/changesets/commit.ts) — the one guard, the one
 * guarded write path — with two conditions per key, checked under the key's
 * lock: If-Match the version the agent (or the changeset) left, and the write
 * log's newest entry for the key still the one the plan stood on. The second
 * tells apart a later write of identical bytes by someone else, which the
 * first cannot: that write is never overwritten (issue 43's finding).
 *
 * One restore per call for a rollback of an agent's writes (each key on its
 * own); all of them in one call for a changeset's (changeset.ts: all or none).
 */
import { Readable } from 'node:stream';
import type { Credential } from '../auth/credentials.js';
import { ChangesetLanding, ChangesetRefused, commitChangeset, MAX_TOTAL_BYTES, type ChangesetEngine, type ChangesetEntry } from '../changesets/commit.js';
import { accessFor } from '../s3/access.js';
import type { Services } from '../s3/context.js';
import { writeConditionsFrom } from '../s3/write.js';
import type { WriteLogEntry } from '../state/types.js';
import { S3Error, isS3Error } from '../vocabulary/errors.js';
import { formatETag } from '../vocabulary/etag.js';
import type { KeyHistory } from './plan.js';

export interface Restore {
  h: KeyHistory;
  /** The goal's bytes; absent: the key goes away. */
  content?: Buffer;
}

export type RestoreOutcome =
  /** Landed, or decided and landing (the engine finishes it: its keys are held until then). */
  | { landed: string }
  /** Nothing written: these keys were written since (the condition or the log said so). */
  | { refused: Array<{ bucket: string; key: string }> }
  /** Nothing written: the engine or the backend failed. */
  | { failed: string };

/** The same write-log entry (a store hands back copies). */
export function sameEntry(a: WriteLogEntry, b: WriteLogEntry): boolean {
  return a.at.getTime() === b.at.getTime() && a.agent === b.agent && a.newETag === b.newETag && a.previousETag === b.previousETag && a.operation === b.operation;
}

export async function commitRestores(services: Services, engine: ChangesetEngine, admin: Credential, writtenAs: string, restores: readonly Restore[]): Promise<RestoreOutcome> {
  const id = engine.dir.newId();
  let handedOver = false;
  try {
    const entries: ChangesetEntry[] = [];
    for (const [n, { h, content }] of restores.entries()) {
      const body = content && (await engine.dir.stage(id, n, Readable.from([content]), MAX_TOTAL_BYTES, () => new S3Error('EntityTooLarge')));
      // Equivalent: If-None-Match with no ETag in it is taken as "*" (parseETagList, the commit condition),
      // and the suffixed form "<sha256>-1" names the same version (vocabulary/etag.ts expandETag).
      // Stryker disable next-line StringLiteral,BooleanLiteral: the same condition either way (above)
      const condition: Record<string, string> = h.agentLast === null ? { 'if-none-match': '*' } : { 'if-match': formatETag(h.agentLast, false) };
      entries.push({
        bucket: h.bucket,
        key: h.key,
        conditions: writeConditionsFrom(condition),
        ...(body && { body }),
        // A log that has forgotten the key's writes leaves the compare-and-swap alone to decide.
        lastWrite: (newest) => newest === undefined || sameEntry(newest, h.last),
      });
    }
    handedOver = true;
    const credential: Credential = { ...admin, agent: writtenAs };
    await commitChangeset(services, engine, { requestId: id, accessKey: admin.accessKeyId, agent: writtenAs, access: accessFor(credential, () => {}) }, id, entries);
    return { landed: id };
  } catch (e) {
    if (!handedOver) await engine.dir.discard(id);
    if (e instanceof ChangesetRefused) return { refused: e.refusals.map((r) => ({ bucket: r.bucket, key: r.key })) };
    // Decided: the engine applies it until it lands (a restart's recovery included), so it is restored, not "nothing written".
    if (e instanceof ChangesetLanding) return { landed: id };
    if (isS3Error(e)) return { failed: e.code };
    throw e;
  }
}
