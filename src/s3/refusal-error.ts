/**
 * Renders a guard Refusal as the S3 error a client understands: 412
 * PreconditionFailed, 428 PreconditionRequired or 404 NoSuchKey — and,
 * beyond S3, the current state of the object so an agent
 * can re-read and retry (docs/design.md §3): `ETag` and `Last-Modified` headers,
 * `x-casket-reason`, `x-casket-writer` (the agent that wrote the current
 * version) or, for a version a request without an agent wrote,
 * `x-casket-writer-access-key` (its access key id, from the write log), and
 * the same as XML elements. When the current content is byte-for-byte what
 * the refused write sent, `x-casket-identical-content: true` and
 * `<IdenticalContent>` say so: the caller's own earlier attempt may have
 * landed (an answer lost on the way).
 * When casket kept the version the agent last saw (docs/design.md §6), `x-casket-diff`
 * and `<Diff>` link what changed since, and a merge-conflict links the merge
 * with conflict markers (`x-casket-merge-conflict`, `<Merge>`).
 */
import type { Refusal, RefusalReason } from '../guard/refusal.js';
import { formatETag } from '../vocabulary/etag.js';
import { writtenBy, type Writer } from '../vocabulary/writer.js';
import { S3Error, type S3ErrorCode } from '../vocabulary/errors.js';
import { httpDate } from './respond.js';

const CODES: Record<RefusalReason, S3ErrorCode> = {
  'precondition-failed': 'PreconditionFailed',
  'no-such-key': 'NoSuchKey',
  'precondition-required': 'PreconditionRequired',
  'partial-read': 'PreconditionFailed',
  'stale-read': 'PreconditionFailed',
  'not-read': 'PreconditionFailed',
  'merge-conflict': 'PreconditionFailed',
};

/** Who wrote the current version, as far as casket knows: its agent, or the access key the write log has for it. */
function writerOf(r: Refusal): Writer {
  return { ...(r.current?.writer && { agent: r.current.writer }), ...(r.details.writerAccessKey && { accessKey: r.details.writerAccessKey }) };
}

function advice(r: Refusal, etag: (e: string) => string): string {
  const where = `s3://${r.bucket}/${r.key}`;
  const current = r.current ? etag(r.current.etag) : undefined;
  const retry = current ? `, then retry with If-Match: ${current}` : ', then retry';
  const writer = writerOf(r);
  const by = writer.agent || writer.accessKey ? ` (written by ${writtenBy(writer)})` : '';
  switch (r.reason) {
    case 'precondition-failed':
      if ((r.details.condition === 'x-amz-if-match-size' || r.details.condition === 'x-amz-if-match-last-modified-time') && r.current) {
        return `${where} is not the version the delete named (${r.details.condition}): its current version is ${current}${by}, ${r.current.size} bytes, last modified ${r.current.lastModified.toISOString()}.`;
      }
      if (r.details.condition === 'If-None-Match') {
        return current
          ? `${where} already exists (version ${current}${by}), and If-None-Match: * only creates. To replace it, read it, then write with If-Match: ${current}.`
          : `${where} already exists, and If-None-Match: * only creates.`;
      }
      return current
        ? `${where} has changed: its current version is ${current}${by}. Read it again${retry}.`
        : `${where} does not exist any more. Retry with If-None-Match: * to create it.`;
    case 'no-such-key':
      return `${where} does not exist. Use If-None-Match: * to create it.`;
    case 'precondition-required':
      return current
        ? `Agents must write conditionally. Read ${where} (current version ${current}${by})${retry}.`
        : `Agents must write conditionally. ${where} does not exist: retry with If-None-Match: * to create it.`;
    case 'partial-read':
      return `You read only part of ${where} (version ${current}). Read the whole object${retry}.`;
    case 'stale-read':
      return `You last read ${where} as version ${r.lastSeenETag ? etag(r.lastSeenETag) : 'unknown'}, but it is now ${current ?? 'deleted'}${by}. Read ${where} again${retry}.`;
    case 'not-read':
      return `You have not read ${where}, which exists (version ${current}${by}). Read it first${retry}.`;
    case 'merge-conflict':
      return `Your edit of ${where} and the current version ${current}${by} change the same or adjacent lines (a line merge needs an unchanged line between two edits), so casket could not merge them.`;
  }
}

/** One sentence for a refusal whose bytes are already current: a landed earlier attempt, or the same change made twice. */
function identicalNote(r: Refusal): string {
  const who = writtenBy(writerOf(r));
  const when = r.current ? ` at ${r.current.lastModified.toISOString()}` : '';
  const what = r.current ? 'The current content is byte-for-byte what you sent' : 'The key is already deleted';
  return ` ${what} (written by ${who}${when}): if that was your own earlier attempt, it landed; if not, someone else made the same change, and yours would be a second one.`;
}

export function refusalError(r: Refusal, etagSuffix: boolean): S3Error {
  const etag = (e: string) => formatETag(e, etagSuffix);
  const headers: Record<string, string> = { 'x-casket-reason': r.reason };
  const fields: Record<string, string | undefined> = {};
  if (r.reason === 'precondition-failed' || r.reason === 'partial-read' || r.reason === 'stale-read' || r.reason === 'not-read' || r.reason === 'merge-conflict') {
    fields.Condition = r.details.condition ?? 'If-Match';
  }
  fields.Reason = r.reason;
  if (r.current) {
    headers.etag = etag(r.current.etag);
    headers['last-modified'] = httpDate(r.current.lastModified);
    fields.CurrentETag = etag(r.current.etag);
    fields.LastModified = r.current.lastModified.toISOString();
    const writer = writerOf(r);
    if (writer.agent) {
      headers['x-casket-writer'] = writer.agent;
      fields.LastWriter = writer.agent;
    } else if (writer.accessKey) {
      headers['x-casket-writer-access-key'] = writer.accessKey;
      fields.LastWriterAccessKey = writer.accessKey;
    }
  }
  if (r.lastSeenETag) fields.LastReadETag = etag(r.lastSeenETag);
  if (r.reason === 'no-such-key') fields.Key = r.key;
  if (r.details.identical) {
    headers['x-casket-identical-content'] = 'true';
    fields.IdenticalContent = 'true';
  }
  let links = '';
  if (r.details.merge) {
    headers['x-casket-merge-conflict'] = r.details.merge;
    fields.Merge = r.details.merge;
    links += ` GET ${r.details.merge} (signed like any S3 request) for the merge with conflict markers, resolve them, and write the result with If-Match: ${etag(r.current!.etag)}.`;
  }
  if (r.details.diff) {
    headers['x-casket-diff'] = r.details.diff;
    fields.Diff = r.details.diff;
    links += ` To see only what changed since you read it, GET ${r.details.diff} on this endpoint, signed like any S3 request (a unified diff).`;
  }
  const message = advice(r, etag) + (r.details.identical ? identicalNote(r) : '') + links;
  return new S3Error(CODES[r.reason], { message, fields, headers });
}
