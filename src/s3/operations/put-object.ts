/**
 * PutObject (https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutObject.html)
 * with S3 conditional writes (If-Match, If-None-Match: *) and casket's agent
 * rules, through s3/write.ts. The SHA-256 of the body is known before the
 * body when the client signed it (x-amz-content-sha256) or declared it
 * (x-amz-checksum-sha256): then a retried write of the current content is
 * recognised before a byte is sent. An agent's small body is copied as it
 * streams and kept once committed (docs/design.md §6); `x-casket-merge: text` asks
 * for a three-way merge when the base is not current (s3/merge-write.ts).
 */
import type { ObjectInfo, Payload } from '../../backends/types.js';
import { S3Error } from '../../vocabulary/errors.js';
import { formatETag } from '../../vocabulary/etag.js';
import type { Handler, RequestContext, Services } from '../context.js';
import { checksumHeaders, declaredChecksum } from '../checksum-headers.js';
import { emptyResponse } from '../respond.js';
import { capture } from '../capture.js';
import { mergeablePut, wantsMerge } from '../merge-write.js';
import { putVersion, type PutVersion } from '../put-version.js';
import { encryptionHeaders, lifecycleExpirationHeader, madeVersionHeader } from '../object-headers.js';
import { writeConditionsFrom } from '../write.js';

export function declaredSha256(ctx: RequestContext): string | undefined {
  if (ctx.auth?.declaredSha256) return ctx.auth.declaredSha256;
  const b64 = ctx.headers['x-amz-checksum-sha256'];
  if (b64 === undefined) return undefined;
  const digest = Buffer.from(b64, 'base64');
  return digest.length === 32 ? digest.toString('hex') : undefined;
}

export function expectsContinue(ctx: RequestContext): boolean {
  return ctx.headers.expect?.toLowerCase() === '100-continue';
}

/** The decoded body length, when the request states it (aws-chunked states it apart from Content-Length). */
export function declaredLength(ctx: RequestContext): number | undefined {
  const value = ctx.headers['x-amz-decoded-content-length'] ?? ctx.headers['content-length'];
  return value !== undefined && /^\d+$/.test(value) ? Number(value) : undefined;
}

/**
 * A body must say how long it is — Content-Length, x-amz-decoded-content-length
 * (aws-chunked) — or come with `Transfer-Encoding: chunked` (`curl -T -`,
 * streaming HTTP clients): then its length is known at its end, and the
 * payload still enforces the size limit and every digest it declared.
 */
export function requireLength(ctx: RequestContext): void {
  const chunkedTransfer = (ctx.headers['transfer-encoding'] ?? '').toLowerCase().split(',').some((c) => c.trim() === 'chunked');
  if (ctx.headers['content-length'] === undefined && ctx.headers['x-amz-decoded-content-length'] === undefined && !chunkedTransfer) {
    throw new S3Error('MissingContentLength');
  }
}

/**
 * One guarded put of a body (putVersion); an agent's small body is copied
 * on its way to the backend and kept once committed, to say later what
 * changed (docs/design.md §6). PutObject's and PostObject's write.
 */
export async function putKeepingAgentBody(ctx: RequestContext, services: Services, v: Omit<PutVersion, 'body'>, body: () => Payload, small: boolean): Promise<ObjectInfo> {
  const retainer = services.retainer;
  let kept: (() => Buffer | undefined) | undefined;
  const keep = ctx.agent !== undefined && retainer !== undefined && small;
  const info = await putVersion(ctx, services, {
    ...v,
    body: () => {
      const payload = body();
      if (!keep) return payload;
      const copy = capture(payload.stream, retainer.maxObjectSize);
      kept = copy.captured;
      return { stream: copy.stream, digest: () => payload.digest() };
    },
  });
  if (kept) retainer?.keep({ bucket: info.bucket, key: info.key, etag: info.etag }, kept());
  return info;
}

export const PutObject: Handler = async (ctx, services) => {
  requireLength(ctx);
  const declared = declaredSha256(ctx);
  const length = declaredLength(ctx);
  const conditions = writeConditionsFrom(ctx.headers);
  const checksum = declaredChecksum(ctx.headers);
  const retainer = services.retainer;
  const ordinary = async (body: () => Payload, small: boolean) => {
    const info = await putKeepingAgentBody(ctx, services, {
      conditions,
      ...(declared !== undefined && { declaredSha256: declared }),
      ...(length !== undefined && { contentLength: length }),
      ...(checksum !== undefined && { declaredChecksum: checksum }),
    }, body, small);
    return emptyResponse(200, { etag: formatETag(info.etag, ctx.etagSuffix), ...checksumHeaders(info.checksum), ...madeVersionHeader(info), ...encryptionHeaders(info.headers), ...(info.headers.expiration !== undefined && { 'x-amz-expiration': info.headers.expiration }), ...lifecycleExpirationHeader(services.backend, info) });
  };
  // A merge needs the base retained: with retention off, or a body larger than
  // any retained version (declared, or found as it arrives), the write is an
  // ordinary one (its refusal says why).
  if (wantsMerge(ctx) && retainer && (length === undefined || length <= retainer.maxObjectSize)) return mergeablePut(ctx, services, retainer, conditions, (larger) => ordinary(() => larger, false));
  return ordinary(() => ctx.payload(), retainer !== undefined && (length === undefined || length <= retainer.maxObjectSize));
};
