/**
 * The commit of every write to the upstream (PutObject, DeleteObject,
 * CompleteMultipartUpload), atomic under its CommitCondition (docs/design.md §1, §3).
 *
 * A CommitCondition is translated to the upstream's own conditional request:
 * 'if-match' casket ETags → the current version's upstream ETag (it must
 * carry one of those casket ETags: the version this process last saw of the
 * key, else a HEAD — versions.ts) is sent as `If-Match` (quoted or not, as
 * the upstream matches it); 'if-none-match' → `If-None-Match: *`; and
 * 'if-none-match' with ETags (If-None-Match: "etag", which AWS does not
 * offer, so no upstream is asked for it) → a look at the current version,
 * then the write pinned to that version: `If-Match` on its upstream ETag, or
 * `If-None-Match: *` when the key is absent. A refusal
 * (412, 409 ConditionalRequestConflict, 404 NoSuchKey on If-Match) is
 * re-evaluated against a fresh HEAD: the same casket ETag under a new
 * upstream ETag is retried, anything else throws ConditionFailed with the
 * fresh version.
 *
 * Which conditions the upstream enforces is probed at start-up
 * (capabilities.ts). For the rest, casket checks, then writes, holding the
 * key's lock exclusively in this process (key-lock.ts) — atomic for
 * everything that goes through this casket process. With several replicas
 * (`replicas: true`) that cannot be atomic, so such writes are refused with
 * 501 NotImplemented naming the missing upstream feature: never a silent
 * check-then-write. Every other write to the key (unconditional, or under a
 * condition the upstream enforces) holds the lock shared, so it can never
 * slip between an exclusive write's check and its commit here, yet never
 * waits on another shared writer's body (key-lock.ts says why that matters).
 */
import { conditionHolds, hasVersionCondition } from '../commit-condition.js';
import { S3Error } from '../../vocabulary/errors.js';
import { ConditionFailed, type CommitCondition, type ObjectInfo, type WriteOptions } from '../types.js';
import { NOTHING_ENFORCED, formatFor, type Capabilities } from './capabilities.js';
import { drain, errorFromText, readText, type UpstreamRequest, type UpstreamResponse } from './client.js';
import type { UpstreamObject } from './etags.js';
import { KeyLock } from './key-lock.js';
import { MAX_ATTEMPTS, type Versions } from './versions.js';

export type WriteKind = 'PutObject' | 'DeleteObject' | 'CompleteMultipartUpload';

/** What a write attempt reports back to the commit loop when the upstream refused its condition. */
export const REFUSED = Symbol('refused');

export class Committer {
  private readonly lock = new KeyLock();

  constructor(
    private readonly versions: Versions,
    /** What the upstream enforces in this bucket (nothing, in a versioned one: bucket-versioning.ts). */
    private readonly capabilities: (bucket: string) => Promise<Capabilities>,
    /** Several casket processes share this upstream (see the file comment). */
    private readonly replicas: boolean,
  ) {}

  /**
   * The commit loop shared by every write: under the key's in-process lock,
   * evaluate the condition against the current version and have the
   * upstream enforce it where it can (see the file comment).
   *
   * @param newETag the casket ETag the write creates (null: a delete, or not known before the write).
   * @param write performs the upstream request with the given condition headers; REFUSED when the upstream refused the condition.
   * @param isDelete the write is a delete (the key absent is its result).
   */
  async run<T extends ObjectInfo | null>(
    bucket: string,
    key: string,
    kind: WriteKind,
    options: WriteOptions,
    newETag: string | null,
    write: (condition: Record<string, string>, current: UpstreamObject | null) => Promise<T | typeof REFUSED>,
    isDelete = false,
  ): Promise<T> {
    const { condition } = options;
    // A size / modification-time condition (conditional deletes) is one on the version itself.
    const pinned = hasVersionCondition(condition);
    const caps = condition.type === 'none' && !pinned ? NOTHING_ENFORCED : await this.capabilities(bucket).catch(() => NOTHING_ENFORCED);
    const byUpstream = this.enforced(caps, kind, condition);
    if (!byUpstream && this.replicas) {
      const header = conditionName(condition);
      throw new S3Error('NotImplemented', `A conditional ${kind} (${header}) cannot be made atomic here: the upstream S3 endpoint does not enforce ${header} on ${kind}, and several casket replicas share it. Run one casket replica, or use an upstream that enforces it.`);
    }
    const form = caps.ifMatchPut || 'quoted';
    // A failed condition is a refusal whatever the bytes (docs/design.md §3): the
    // caller learns what the write would have made, to say so in the 412.
    const failed = (current: UpstreamObject | null) => new ConditionFailed(current?.info ?? null, isDelete ? null : (newETag ?? undefined));
    const holds = (current: UpstreamObject | null): boolean => conditionHolds(condition, current?.info.etag ?? null, current?.info);
    // If-None-Match: "etag" holds for many versions: it is made atomic by
    // pinning the version looked at, and a refusal is only a reason to look again.
    const notThese = condition.type === 'if-none-match' && condition.etags !== undefined;

    return this.lock.run(`${bucket}\0${key}`, byUpstream ? 'shared' : 'exclusive', async () => {
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        // Unconditional writes and upstream-enforced If-None-Match need no look
        // first; nor does an upstream-enforced If-Match naming the version last
        // seen here (a stale one is refused upstream, then looked at).
        const seen = attempt === 0 && condition.type === 'if-match' && byUpstream && !isDelete ? this.versions.lastSeenOf(bucket, key) : undefined;
        const hinted = seen !== undefined && holds(seen);
        const look = !hinted && (condition.type === 'if-match' || notThese || !byUpstream || isDelete);
        const current = hinted ? seen : look ? await this.look(bucket, key, isDelete && condition.type === 'none' && !pinned) : null;
        if (look) {
          if (!holds(current)) throw failed(current);
          if (isDelete && current === null && (condition.type !== 'none' || pinned)) return null as T;
        }
        const headers: Record<string, string> = {};
        // A size condition goes upstream as If-Match on the version just
        // looked at: its upstream ETag pins its bytes, hence its size.
        if (byUpstream && (condition.type === 'if-match' || pinned)) headers['if-match'] = formatFor(form, current!.upstreamETag);
        if (byUpstream && notThese) {
          if (current) headers['if-match'] = formatFor(form, current.upstreamETag);
          else headers['if-none-match'] = '*';
        } else if (byUpstream && condition.type === 'if-none-match') headers['if-none-match'] = '*';
        const result = await write(headers, current);
        if (result !== REFUSED) return result;
        this.versions.unseen(bucket, key);
        // Let a concurrent writer finish before looking again (a stale hint needs no wait: look now).
        if (!hinted) await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * (attempt + 1)));
        // Refused upstream: something changed since we looked. Look again.
        if (condition.type === 'if-none-match' && !notThese) {
          const now = await this.versions.current(bucket, key);
          if (now === null) continue;
          throw failed(now);
        }
      }
      const now = await this.versions.current(bucket, key);
      if (holds(now)) throw new S3Error('SlowDown', `The upstream kept refusing or failing this conditional ${kind}; please retry.`);
      throw failed(now);
    });
  }

  /**
   * The current version. `unreadable`: an unconditional delete, which an
   * object's ACL may forbid reading and the bucket's owner may still make
   * (S3 decides deletes by the bucket): a HEAD refused AccessDenied then
   * counts as no version known, and the delete goes on — the upstream
   * decides it, casket only learns no pre-image.
   */
  private async look(bucket: string, key: string, unreadable: boolean): Promise<UpstreamObject | null> {
    try {
      return await this.versions.current(bucket, key);
    } catch (e) {
      if (unreadable && e instanceof S3Error && e.code === 'AccessDenied') return null;
      throw e;
    }
  }

  /**
   * Whether a commit of this write checks its condition itself and so holds
   * the key's lock exclusively: its body must then be received before the
   * commit starts (objects.ts), so the lock never waits on a client.
   */
  async checksItself(bucket: string, kind: WriteKind, condition: CommitCondition): Promise<boolean> {
    if (condition.type === 'none') return false;
    return !this.enforced(await this.capabilities(bucket).catch(() => NOTHING_ENFORCED), kind, condition);
  }

  /** Whether the upstream enforces this condition on this operation itself. */
  private enforced(caps: Capabilities, kind: WriteKind, condition: CommitCondition): boolean {
    if (hasVersionCondition(condition)) {
      // Only through If-Match on the upstream ETag, which pins the bytes (so
      // the size) but not the modification time: the same bytes written again
      // keep their ETag. No upstream is probed for AWS's own
      // x-amz-if-match-* headers (AWS documents them for directory buckets).
      if (kind !== 'DeleteObject' || condition.lastModified !== undefined || condition.type === 'if-none-match') return false;
      return caps.ifMatchDelete;
    }
    if (condition.type === 'none') return true;
    const ifMatch = condition.type === 'if-match';
    if (condition.type === 'if-none-match' && condition.etags !== undefined) {
      // Pinned to the version looked at: If-Match on it, or If-None-Match: * (see the file comment).
      if (kind === 'PutObject') return caps.ifMatchPut !== false && caps.ifNoneMatchPut;
      if (kind === 'CompleteMultipartUpload') return caps.ifMatchComplete && caps.ifNoneMatchComplete;
      return false;
    }
    switch (kind) {
      case 'PutObject':
        return ifMatch ? caps.ifMatchPut !== false : caps.ifNoneMatchPut;
      case 'DeleteObject':
        // If-None-Match on a delete is decided by casket (it deletes nothing when it holds).
        return ifMatch ? caps.ifMatchDelete : false;
      case 'CompleteMultipartUpload':
        return ifMatch ? caps.ifMatchComplete : caps.ifNoneMatchComplete;
    }
  }
}


/**
 * Whether an upstream response is a refused condition (412; 409
 * ConditionalRequestConflict, which AWS returns for a concurrent conditional
 * write; 404 NoSuchKey for If-Match on a missing key) or, for a conditional
 * request, a 5xx to re-evaluate. Other failures throw;
 * success drains the body unless `keepBody`.
 */
export async function refusedUpstream(res: UpstreamResponse, req: UpstreamRequest, keepBody = false): Promise<boolean> {
  if (res.status >= 200 && res.status < 300) {
    if (!keepBody) await drain(res);
    return false;
  }
  if (res.status === 412) {
    await drain(res);
    return true;
  }
  const conditional = req.headers?.['if-match'] !== undefined || req.headers?.['if-none-match'] !== undefined;
  if (conditional && res.status >= 500) {
    // Ceph RGW 16 answers 500 UnknownError to a conditional PUT that lost a
    // race (measured: 16 concurrent If-Match PUTs). Whether it applied is
    // decided by looking again, against the fresh version.
    await drain(res);
    return true;
  }
  const text = await readText(res).catch(() => '');
  const code = /<Code>([^<]*)<\/Code>/.exec(text)?.[1];
  if (conditional && (code === 'ConditionalRequestConflict' || (res.status === 404 && code === 'NoSuchKey' && req.headers?.['if-match'] !== undefined))) return true;
  throw errorFromText(res.status, text, req);
}

/** The request header a condition came from, for a refusal's message. */
function conditionName(condition: CommitCondition): string {
  if (condition.lastModified !== undefined) return 'x-amz-if-match-last-modified-time';
  if (condition.type === 'if-match') return 'If-Match';
  if (condition.type === 'if-none-match') return 'If-None-Match';
  return 'x-amz-if-match-size';
}
