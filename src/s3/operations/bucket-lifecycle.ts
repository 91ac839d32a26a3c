/**
 * PutBucketLifecycleConfiguration, GetBucketLifecycleConfiguration,
 * DeleteBucketLifecycle
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketLifecycleConfiguration.html),
 * On the embedded store, for AbortIncompleteMultipartUpload and Expiration
 * (vocabulary/lifecycle.ts refuses the rest): it keeps the rules and enforces
 * them (backends/fs/abandoned-uploads.ts; Expiration through the guarded
 * delete, s3/lifecycle-expiration.ts). A bucket without rules answers 404
 * NoSuchLifecycleConfiguration.
 *
 * In front of an upstream the configuration goes there whole (issue 44),
 * Expiration and Transition included, and Get/Delete go there too. An
 * object the upstream expires is one changed behind casket's back, as by
 * any other writer: casket shows no ETag it has not just read there (GET and
 * HEAD ask the upstream), and a conditional write naming the expired
 * version's ETag is refused 412 by the commit loop (backends/s3/commit.ts),
 * never lands as a lost update.
 */
import type { Backend } from '../../backends/types.js';
import { S3Error } from '../../vocabulary/errors.js';
import { lifecycleConfigurationXml, parseLifecycleConfiguration } from '../../vocabulary/lifecycle.js';
import { readXmlBody } from '../../vocabulary/xml.js';
import type { Handler, RequestContext } from '../context.js';
import { requireBucket } from '../context.js';
import { emptyResponse, xmlResponse } from '../respond.js';
import { forwardAsIs } from './unmodeled.js';

/** AWS: at most 1,000 rules; 256 KiB is ample for those. */
const MAX_LIFECYCLE_BODY = 256 * 1024;

async function forwarded(ctx: RequestContext, backend: Backend) {
  return backend.forward!({ method: ctx.method, bucket: requireBucket(ctx), query: { lifecycle: '' }, headers: {} });
}

export const PutBucketLifecycleConfiguration: Handler = async (ctx, services) => {
  const { backend } = services;
  if (!backend.putBucketLifecycle && backend.forward) return forwardAsIs(ctx, services);
  const bucket = requireBucket(ctx);
  const doc = await readXmlBody(ctx.payload().stream, MAX_LIFECYCLE_BODY);
  const rules = parseLifecycleConfiguration(doc);
  if (!backend.putBucketLifecycle) throw new S3Error('NotImplemented', 'This backend keeps no lifecycle configuration.');
  await backend.putBucketLifecycle(bucket, rules);
  return emptyResponse(200);
};

export const GetBucketLifecycleConfiguration: Handler = async (ctx, { backend }) => {
  const bucket = requireBucket(ctx);
  if (backend.getBucketLifecycle) {
    const rules = await backend.getBucketLifecycle(bucket);
    if (!rules) throw new S3Error('NoSuchLifecycleConfiguration', { fields: { BucketName: bucket } });
    return xmlResponse('LifecycleConfiguration', lifecycleConfigurationXml(rules));
  }
  if (!backend.forward) {
    await backend.headBucket(bucket);
    throw new S3Error('NoSuchLifecycleConfiguration', { fields: { BucketName: bucket } });
  }
  const res = await forwarded(ctx, backend);
  return { status: res.status, headers: res.headers, body: res.body };
};

export const DeleteBucketLifecycle: Handler = async (ctx, { backend }) => {
  const bucket = requireBucket(ctx);
  if (backend.putBucketLifecycle) {
    await backend.putBucketLifecycle(bucket, null);
    return emptyResponse(204);
  }
  if (!backend.forward) throw new S3Error('NotImplemented', 'This backend keeps no lifecycle configuration.');
  const res = await forwarded(ctx, backend);
  return { status: res.status, headers: res.headers, body: res.body };
};
