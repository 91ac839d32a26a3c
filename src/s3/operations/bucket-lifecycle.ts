/**
 * PutBucketLifecycleConfiguration, GetBucketLifecycleConfiguration,
 * DeleteBucketLifecycle
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketLifecycleConfiguration.html),
 * for the one rule that cannot change an object behind the guard:
 * AbortIncompleteMultipartUpload (vocabulary/lifecycle.ts refuses the rest).
 * The embedded store keeps the rules and enforces them
 * (backends/fs/abandoned-uploads.ts); in front of an upstream a checked
 * configuration is forwarded there, which enforces it, and Get/Delete go
 * there too. A bucket without rules answers 404 NoSuchLifecycleConfiguration.
 */
import { createHash } from 'node:crypto';
import type { Backend } from '../../backends/types.js';
import { S3Error } from '../../vocabulary/errors.js';
import { lifecycleConfigurationXml, parseLifecycleConfiguration } from '../../vocabulary/lifecycle.js';
import { readXmlBody, toXml } from '../../vocabulary/xml.js';
import type { Handler, RequestContext } from '../context.js';
import { requireBucket } from '../context.js';
import { emptyResponse, xmlResponse } from '../respond.js';

/** AWS: at most 1,000 rules; 256 KiB is ample for those. */
const MAX_LIFECYCLE_BODY = 256 * 1024;

async function forwarded(ctx: RequestContext, backend: Backend, body?: Buffer) {
  const headers: Record<string, string> = {};
  if (body) {
    headers['content-type'] = 'application/xml';
    // AWS requires an integrity header on this operation: the body is casket's own rendering, so its MD5.
    headers['content-md5'] = createHash('md5').update(body).digest('base64');
  }
  return backend.forward!({ method: ctx.method, bucket: requireBucket(ctx), query: { lifecycle: '' }, headers, ...(body && { body }) });
}

export const PutBucketLifecycleConfiguration: Handler = async (ctx, { backend }) => {
  const bucket = requireBucket(ctx);
  const doc = await readXmlBody(ctx.payload().stream, MAX_LIFECYCLE_BODY);
  // Checked on both backends: an Expiration never reaches an upstream through casket.
  const rules = parseLifecycleConfiguration(doc);
  if (backend.putBucketLifecycle) {
    await backend.putBucketLifecycle(bucket, rules);
    return emptyResponse(200);
  }
  if (!backend.forward) throw new S3Error('NotImplemented', 'This backend keeps no lifecycle configuration.');
  const res = await forwarded(ctx, backend, Buffer.from(toXml('LifecycleConfiguration', lifecycleConfigurationXml(rules))));
  return { status: res.status, headers: res.headers, body: res.body };
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
