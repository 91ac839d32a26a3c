/**
 * Operations casket does not model — object tagging, retention, legal hold,
 * bucket policy, public-access block, website, encryption... — are forwarded
 * to an upstream after auth (docs/design.md §1), re-signed by the backend
 * with the upstream's keys. Lifecycle configurations are modeled
 * (bucket-lifecycle.ts) on the embedded store and forwarded whole in front
 * of an upstream; a lifecycle PUT on an object is refused here. On the
 * embedded store there is nothing to forward to: 501 NotImplemented.
 *
 * Request bodies here are small configuration documents: read through the
 * verified payload (signature and checksums checked), at most 1 MiB.
 */
import type { ForwardRequest } from '../../backends/types.js';
import { S3Error } from '../../vocabulary/errors.js';
import type { Handler } from '../context.js';
import { hasBody, requireBucket } from '../context.js';
import { UNMODELED } from '../detect.js';

const MAX_FORWARDED_BODY = 1024 * 1024;

/** Headers an unmodeled operation may need upstream; SigV4 and transfer headers are the backend's. */
function forwardedHeaders(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const keep = name === 'content-type' || name === 'content-md5' || (name.startsWith('x-amz-') && !['x-amz-content-sha256', 'x-amz-date', 'x-amz-security-token', 'x-amz-decoded-content-length', 'x-amz-trailer'].includes(name));
    if (keep) out[name] = value;
  }
  return out;
}

export const Unmodeled: Handler = async (ctx, services) => {
  const subresource = UNMODELED.find((name) => ctx.query.has(name)) ?? '';
  if (!services.backend.forward) throw new S3Error('NotImplemented', `casket's embedded store does not implement ?${subresource}.`);
  if (subresource === 'lifecycle' && ctx.method === 'PUT') {
    throw new S3Error('NotImplemented', 'casket refuses lifecycle rules on an object: S3 has none.');
  }
  return forwardAsIs(ctx, services);
};

/**
 * The request as received, to the upstream, and its answer back: unmodeled
 * operations, and the modeled ones casket only stands in for on the embedded
 * store (ACLs, bucket policy and tags, lifecycle: passthrough.ts).
 */
export const forwardAsIs: Handler = async (ctx, { backend }) => {
  const bucket = requireBucket(ctx);
  if (!backend.forward) throw new S3Error('NotImplemented', `casket's embedded store does not implement ${ctx.operation}.`);
  let body: Buffer | undefined;
  if (hasBody(ctx)) {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of ctx.payload().stream) {
      size += (chunk as Buffer).length;
      if (size > MAX_FORWARDED_BODY) throw new S3Error('EntityTooLarge', 'casket forwards configuration bodies of at most 1 MiB.');
      chunks.push(chunk as Buffer);
    }
    body = Buffer.concat(chunks);
  }
  const request: ForwardRequest = {
    method: ctx.method,
    bucket,
    ...(ctx.key !== undefined && { key: ctx.key }),
    query: Object.fromEntries(ctx.query),
    headers: forwardedHeaders(ctx.headers),
    ...(body && { body }),
  };
  const res = await backend.forward(request);
  return { status: res.status, headers: res.headers, body: res.body };
};
