/**
 * PutObject (https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutObject.html)
 * with S3 conditional writes (If-Match, If-None-Match: *) and casket's agent
 * rules, through s3/write.ts. The SHA-256 of the body is known before the
 * body when the client signed it (x-amz-content-sha256) or declared it
 * (x-amz-checksum-sha256): then a retried write of the current content is
 * recognised before a byte is sent.
 */
import { S3Error } from '../../vocabulary/errors.js';
import { formatETag } from '../../vocabulary/etag.js';
import type { Handler, RequestContext } from '../context.js';
import { requireKey } from '../context.js';
import { checksumHeaders, declaredChecksum } from '../checksum-headers.js';
import { metadataFrom, objectHeadersFrom } from '../object-headers.js';
import { emptyResponse } from '../respond.js';
import { guardedWrite, writeConditionsFrom } from '../write.js';

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

export const PutObject: Handler = async (ctx, services) => {
  const { bucket, key } = requireKey(ctx);
  requireLength(ctx);
  const headers = objectHeadersFrom(ctx.headers);
  const metadata = metadataFrom(ctx.headers);
  const declared = declaredSha256(ctx);
  const length = declaredLength(ctx);
  const checksum = declaredChecksum(ctx.headers);
  const info = await guardedWrite({
    ctx,
    services,
    bucket,
    key,
    operation: 'PutObject',
    conditions: writeConditionsFrom(ctx.headers),
    ...(declared !== undefined && { declaredSha256: declared }),
    bodyComing: !expectsContinue(ctx),
    early: expectsContinue(ctx),
    commit: (permit) =>
      services.backend.putObject(bucket, key, ctx.payload(), {
        ...permit,
        headers,
        metadata,
        ...(ctx.agent !== undefined && { writer: ctx.agent }),
        // Known before the body: an upstream backend can stream it through.
        ...(declared !== undefined && { declaredSha256: declared }),
        ...(length !== undefined && { contentLength: length }),
        ...(checksum !== undefined && { declaredChecksum: checksum }),
      }),
    written: (info) => info,
    landed: (current) => current!,
  });
  return emptyResponse(200, { etag: formatETag(info.etag, ctx.etagSuffix), ...checksumHeaders(info.checksum) });
};
