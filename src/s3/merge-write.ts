/**
 * Opt-in three-way merge of a PutObject (docs/design.md §6): a write with
 * `If-Match: <base>` and the signed header `x-casket-merge: text`. When the
 * base is still current it is an ordinary write. When someone else wrote
 * since, the base is retained, and the sent body and the current version are
 * both text, casket merges base→sent into base→current (changes/merge.ts)
 * and commits the result through the same guarded write, conditioned on the
 * version it merged with: a writer that slips in between wins, and this write
 * gets 412 as any other. Overlapping edits: 412 `merge-conflict`, with a link
 * to the merge with conflict markers. Anything else (base not retained,
 * binary, too large): the refusal an ordinary write would get.
 *
 * The body is received whole before the write (it is at most
 * --retain-max-size): a merge needs it after the first condition failed.
 * A body found larger as it arrives is written as an ordinary PutObject.
 * Without the header nothing here runs — no silent merges.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { ObjectInfo, Payload } from '../backends/types.js';
import type { WriteConditions } from '../guard/preconditions.js';
import { Refusal } from '../guard/refusal.js';
import { isText } from '../changes/diff.js';
import { mergeText } from '../changes/merge.js';
import type { Retainer } from '../retention/retainer.js';
import { S3Error } from '../vocabulary/errors.js';
import { expandETag, formatETag } from '../vocabulary/etag.js';
import { requireKey, type RequestContext, type Services } from './context.js';
import { putVersion } from './put-version.js';
import { emptyResponse, type S3Response } from './respond.js';
import { canonicalQuery } from '../vocabulary/url-encoding.js';

export const MERGE_HEADER = 'x-casket-merge';

/** The write asks to be merged. The header must be signed: it changes what is written. */
export function wantsMerge(ctx: RequestContext): boolean {
  const value = ctx.headers[MERGE_HEADER];
  if (value === undefined) return false;
  // No trim: node:http has already dropped the space around a header value (RFC 9110 §5.5).
  if (value.toLowerCase() !== 'text') throw new S3Error('InvalidArgument', { message: `${MERGE_HEADER} accepts only "text".`, fields: { ArgumentName: MERGE_HEADER, ArgumentValue: value } });
  if (!ctx.auth?.signedHeaders.includes(MERGE_HEADER)) throw new S3Error('InvalidRequest', `Sign the ${MERGE_HEADER} header: it changes what is written.`);
  return true;
}

/** The path of the merge with conflict markers (served by agent-changes.ts). */
export function mergePath(bucket: string, key: string, base: string, current: string, sent: string): string {
  return `/_casket/merge?${canonicalQuery({ bucket, key, base, current, sent })}`;
}

function sha256(content: Buffer): string {
  return createHash('sha256').update(content).digest('hex');
}

/** A body casket already holds, as the Payload a backend commits. */
function held(content: Buffer): Payload {
  return { stream: Readable.from([content]), digest: () => ({ sha256: createHash('sha256').update(content).digest(), size: content.length }) };
}

/**
 * The body, whole when it is at most `limit` bytes. A larger one (its length
 * known only at its end: Transfer-Encoding: chunked) is handed back as a
 * payload that streams on — the bytes read so far, then the rest — for an
 * ordinary write.
 */
async function receive(payload: Payload, limit: number): Promise<{ whole: Buffer } | { larger: Payload }> {
  const chunks: Buffer[] = [];
  let size = 0;
  const source = payload.stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  for (let next = await source.next(); !next.done; next = await source.next()) {
    chunks.push(next.value);
    size += next.value.length;
    if (size > limit) {
      async function* rest() {
        try {
          yield* chunks.splice(0);
          for (let more = await source.next(); !more.done; more = await source.next()) yield more.value;
        } finally {
          // A consumer that stops early (a failed commit) releases the request
          // body; once the body has ended, return() is a no-op.
          await source.return?.();
        }
      }
      return { larger: { stream: Readable.from(rest()), digest: () => payload.digest() } };
    }
  }
  return { whole: Buffer.concat(chunks, size) };
}

/** The content of `current`, when it is still current and small enough to merge. */
async function currentContent(services: Services, current: ObjectInfo, limit: number): Promise<Buffer | undefined> {
  if (current.size > limit) return undefined;
  const kept = await services.retainer?.get({ bucket: current.bucket, key: current.key, etag: current.etag });
  if (kept) return kept;
  const reader = await services.backend.getObject(current.bucket, current.key);
  if (!reader) return undefined;
  if (reader.info.etag !== current.etag) {
    reader.release?.();
    return undefined;
  }
  // Stryker disable next-line BlockStatement: inline() is the same bytes as open() (ObjectReader); the branch only spares a stream
  if (reader.inline) {
    const bytes = reader.inline();
    reader.release?.();
    return bytes;
  }
  const chunks: Buffer[] = [];
  for await (const chunk of reader.open()) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** `ordinary` writes a body too large to merge, as PutObject writes any body. */
export async function mergeablePut(ctx: RequestContext, services: Services, retainer: Retainer, conditions: WriteConditions, ordinary: (body: Payload) => Promise<S3Response>): Promise<S3Response> {
  const { bucket, key } = requireKey(ctx);
  const named = conditions.ifMatch;
  if (named === undefined || named === '*' || named.length !== 1) throw new S3Error('InvalidRequest', `${MERGE_HEADER}: text needs If-Match naming the one version your edit started from.`);
  const limit = retainer.maxObjectSize;
  const received = await receive(ctx.payload(), limit);
  // Larger than any retained version: no base to merge with is kept, so the write is an ordinary one.
  if ('larger' in received) return ordinary(received.larger);
  const sent = received.whole;
  const sentETag = sha256(sent);
  const answer = (info: ObjectInfo, extra: Record<string, string> = {}) => emptyResponse(200, { etag: formatETag(info.etag, ctx.etagSuffix), ...extra });
  try {
    // Stryker disable next-line BooleanLiteral: the body is already received, so an early refusal (a HEAD before the commit) and the commit's own find the same current version and the same bytes
    const info = await putVersion(ctx, services, { conditions, body: () => held(sent), declaredSha256: sentETag, contentLength: sent.length, buffered: true });
    if (ctx.agent) retainer.keep({ bucket, key, etag: info.etag }, sent);
    return answer(info);
  } catch (e) {
    if (!(e instanceof Refusal) || !e.current || e.details.identical) throw e;
    // Stryker disable next-line ConditionalExpression: any other refusal of If-Match: <base> is made with the base current (the guard checks If-Match first), which the next check rethrows
    if (e.reason !== 'precondition-failed') throw e;
    const current = e.current;
    const base = expandETag(named[0]!).at(-1)!;
    // A commit refused with the base current again (changed, then changed back): the refusal stands, as for any write from a current base.
    if (current.etag === base) throw e;
    // The base only as a version of this very key: an ETag is no secret (a
    // listing shows it), and merging another key's version would write its
    // bytes here, or show them in the conflict's markers (docs/design.md §14).
    // An ETag never kept for this key is refused as one nobody kept.
    const [baseContent, theirs] = await Promise.all([retainer.get({ bucket, key, etag: base }), currentContent(services, current, limit)]);
    if (!baseContent || !theirs || !isText(baseContent) || !isText(sent) || !isText(theirs)) throw e;
    // Only a clean merge is written; the markers of a conflict are made
    // where they are read (/_casket/merge, agent-changes.ts).
    const merged = mergeText(baseContent.toString('utf8'), sent.toString('utf8'), theirs.toString('utf8'));
    if (!merged.clean) {
      // Both sides kept before the answer, so the link to the merge with
      // markers can be followed the moment the agent reads it.
      await Promise.all([retainer.kept({ bucket, key, etag: sentETag }, sent), retainer.kept({ bucket, key, etag: current.etag }, theirs)]);
      const conflict = new Refusal('merge-conflict', bucket, key, current, base, { merge: mergePath(bucket, key, base, current.etag, sentETag), ...(e.details.diff && { diff: e.details.diff }), ...(e.details.writerAccessKey && { writerAccessKey: e.details.writerAccessKey }) });
      services.guard.report(conflict, ctx.agent, { accessKey: ctx.accessKey, requestId: ctx.requestId, operation: 'PutObject' });
      throw conflict;
    }
    const content = Buffer.from(merged.text, 'utf8');
    const info = await putVersion(ctx, services, {
      conditions: { ifMatch: [current.etag] },
      body: () => held(content),
      declaredSha256: sha256(content),
      contentLength: content.length,
      // Stryker disable next-line BooleanLiteral: as for the first write, the body is already received
      buffered: true,
      agentRules: false,
    });
    retainer.keep({ bucket, key, etag: info.etag }, content);
    return answer(info, { 'x-casket-merged': formatETag(current.etag, ctx.etagSuffix) });
  }
}
