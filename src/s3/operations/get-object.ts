/**
 * GetObject and HeadObject (https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html):
 * conditional reads (304/412), one Range (206, 416), ?partNumber= of a
 * multipart object, response-* overrides, ?versionId= (docs/design.md §10:
 * NoSuchVersion, 405 for a delete marker; a key whose current version is a
 * delete marker is 404 NoSuchKey with x-amz-delete-marker). A GET by an agent
 * records a read stamp once the response is over: full only if every byte
 * was delivered and the bytes delivered so far cover the version
 * (docs/design.md §4) — of the current version only: reading an older one by
 * id says nothing about what the agent saw of the key. HEAD reads nothing.
 * A whole small version delivered to an agent is kept (docs/design.md §6): its bytes
 * are copied as they stream past (s3/capture.ts) and kept after the response.
 */
import type { Readable } from 'node:stream';
import type { ByteRange, ObjectInfo } from '../../backends/types.js';
import { S3Error } from '../../vocabulary/errors.js';
import type { Handler, RequestContext, Services } from '../context.js';
import { requireKey } from '../context.js';
import { checksumHeaders, checksumModeEnabled, partChecksumHeader } from '../checksum-headers.js';
import { objectResource } from '../actions.js';
import { lifecycleExpirationHeader, objectResponseHeaders } from '../object-headers.js';
import { parseRange } from '../range.js';
import { checkReadConditions } from '../read-conditions.js';
import type { S3Response } from '../respond.js';
import { capture } from '../capture.js';

function versionOf(ctx: RequestContext): string | undefined {
  const versionId = ctx.query.get('versionId');
  if (versionId === '') throw new S3Error('InvalidArgument', { message: 'Version id cannot be the empty string', fields: { ArgumentName: 'versionId', ArgumentValue: '' } });
  return versionId ?? undefined;
}

/** 404 NoSuchKey, saying when a delete marker hides the key (API_GetObject, API_HeadObject). */
async function noSuchKey(ctx: RequestContext, backend: Services['backend'], bucket: string, key: string): Promise<S3Error> {
  const marker = await backend.currentDeleteMarker?.(bucket, key);
  return new S3Error('NoSuchKey', { fields: { Key: key }, ...(marker !== undefined && { headers: { 'x-amz-delete-marker': 'true', 'x-amz-version-id': marker } }) });
}

interface Selection {
  range?: ByteRange;
  partsCount?: number;
}

/** The bytes a GET/HEAD asks for: a Range, a part, or everything. */
function select(ctx: RequestContext, info: ObjectInfo): Selection {
  const partNumber = ctx.query.get('partNumber');
  if (partNumber === null) return { range: parseRange(ctx.headers.range, info.size) };
  if (ctx.headers.range !== undefined) throw new S3Error('InvalidRequest', 'Cannot specify both Range header and partNumber query parameter');
  const n = Number(partNumber);
  if (!/^\d+$/.test(partNumber) || n < 1 || n > 10000) throw new S3Error('InvalidArgument', { message: 'Part number must be an integer between 1 and 10000, inclusive', fields: { ArgumentName: 'partNumber', ArgumentValue: partNumber } });
  const sizes = info.partSizes ?? [info.size];
  if (n > sizes.length) throw new S3Error('InvalidPartNumber');
  if (!info.partSizes) return {};
  const start = sizes.slice(0, n - 1).reduce((a, b) => a + b, 0);
  return { range: { start, end: start + sizes[n - 1]! - 1 }, partsCount: sizes.length };
}

function headers(ctx: RequestContext, info: ObjectInfo, sel: Selection): { status: number; headers: Record<string, string> } {
  const h = objectResponseHeaders(info, ctx.etagSuffix, ctx.query);
  // The lock is shown only to who may read it: mode and date with
  // s3:GetObjectRetention, the legal hold with s3:GetObjectLegalHold (API_HeadObject).
  const resource = objectResource(info.bucket, info.key);
  if (!ctx.access.allows({ action: 's3:GetObjectRetention', resource })) {
    delete h['x-amz-object-lock-mode'];
    delete h['x-amz-object-lock-retain-until-date'];
  }
  if (!ctx.access.allows({ action: 's3:GetObjectLegalHold', resource })) delete h['x-amz-object-lock-legal-hold'];
  if (sel.partsCount !== undefined) h['x-amz-mp-parts-count'] = String(sel.partsCount);
  // The object's checksum describes the whole object only; a part has its own; a range has none.
  const checksums = checksumModeEnabled(ctx.headers);
  if (!sel.range) return { status: 200, headers: { ...h, 'content-length': String(info.size), ...(checksums && checksumHeaders(info.checksum)) } };
  const { start, end } = sel.range;
  const part = sel.partsCount !== undefined && checksums ? partChecksumHeader(info, Number(ctx.query.get('partNumber'))) : {};
  return { status: 206, headers: { ...h, 'content-length': String(end - start + 1), 'content-range': `bytes ${start}-${end}/${info.size}`, ...part } };
}

/**
 * Waits until a body stream has bytes (or has ended) before the 200 goes
 * out: a body that fails at once — an upstream version that changed between
 * casket's HEAD and GET — becomes a clean error response instead of a
 * truncated 200.
 *
 * Once it has bytes, an error listener stays on it: the stream reads ahead
 * at once, and a failure in that read (a disk failing mid-read, an upstream
 * reset after its first bytes) before the response's pipe or an in-process
 * reader listens would otherwise be an uncaught exception, which ends the
 * process and every request in it. The stream is destroyed with the error
 * all the same (Readable.errored), so its consumer still fails: the client
 * gets a cut answer, never a whole one.
 */
async function primed(body: Readable): Promise<Readable> {
  await new Promise<void>((resolve, reject) => {
    const done = (err?: Error) => {
      body.off('readable', ready).off('end', ready).off('error', done);
      if (err) reject(err);
      else {
        // Now, not after the await: the read-ahead's failure comes in the same tick queue.
        body.on('error', failedBeforeItsConsumer);
        resolve();
      }
    };
    const ready = () => done();
    body.once('readable', ready).once('end', ready).once('error', done);
  });
  return body;
}

/** See primed(): the consumer of the stream meets the error; this only keeps it from being uncaught. */
function failedBeforeItsConsumer(): void {}

export const GetObject: Handler = async (ctx, { backend, guard, log, retainer, gate }) => {
  const { bucket, key } = requireKey(ctx);
  const versionId = versionOf(ctx);
  // A key a changeset is committing is read once it landed whole (src/changesets/locks.ts).
  await gate?.settled(bucket, key);
  const reader = await backend.getObject(bucket, key, versionId);
  if (!reader) throw await noSuchKey(ctx, backend, bucket, key);
  const { info } = reader;
  let sel: Selection;
  let body: Buffer | Readable;
  try {
    checkReadConditions(info, ctx.headers, ctx.etagSuffix);
    sel = select(ctx, info);
    body = reader.inline ? reader.inline(sel.range) : await primed(reader.open(sel.range));
  } finally {
    // Opened or answered 304/412/416: the reader is not needed any more.
    reader.release?.();
  }
  const start = sel.range?.start ?? 0;
  const end = sel.range ? sel.range.end + 1 : info.size;
  const agent = ctx.agent;
  // Only agents' whole reads of small versions pay for the copy; nobody waits for the keeping.
  let kept: (() => Buffer | undefined) | undefined;
  // Never an SSE-C version (its answer names the customer key's algorithm): the
  // copy would be kept unencrypted and served to callers without the key
  // (onFinish runs after the request's key scope, backends/customer-key.ts).
  if (agent && retainer && !sel.range && retainer.eligible(info.etag, info.size) && info.headers.sseCustomerAlgorithm === undefined) {
    if (Buffer.isBuffer(body)) {
      const whole = body;
      kept = () => whole;
    } else {
      const copy = capture(body, retainer.maxObjectSize);
      body = copy.stream;
      kept = copy.captured;
    }
  }
  const answer = headers(ctx, info, sel);
  const response: S3Response = { status: answer.status, headers: { ...answer.headers, ...lifecycleExpirationHeader(backend, info) }, body };
  if (agent && !info.noncurrent) {
    let recorded: (() => void) | undefined;
    response.onSend = () => {
      recorded = guard.readDelivering(agent, bucket, key);
    };
    response.onFinish = async (complete) => {
      try {
        await Promise.all([
          complete && kept ? retainer?.kept({ bucket, key, etag: info.etag }, kept()) : undefined,
          guard.recordRead(agent, info, start, end, complete).catch((err: unknown) => log.error({ err, requestId: ctx.requestId, agent, bucket, key }, 'read stamp not recorded')),
        ]);
      } finally {
        recorded?.();
      }
    };
  }
  return response;
};

export const HeadObject: Handler = async (ctx, { backend, gate }) => {
  const { bucket, key } = requireKey(ctx);
  await gate?.settled(bucket, key);
  const info = await backend.headObject(bucket, key, versionOf(ctx));
  if (!info) throw await noSuchKey(ctx, backend, bucket, key);
  checkReadConditions(info, ctx.headers, ctx.etagSuffix);
  const answer = headers(ctx, info, select(ctx, info));
  return { ...answer, headers: { ...answer.headers, ...lifecycleExpirationHeader(backend, info) } };
};
