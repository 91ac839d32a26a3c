/**
 * PutBucketCors, GetBucketCors, DeleteBucketCors
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketCors.html).
 * The embedded store keeps the rules itself; in front of an upstream the
 * three are forwarded there after auth, so the upstream's own rules are the
 * bucket's, and casket reads them back to answer preflights and add
 * Access-Control-* headers (s3/cors.ts). A bucket without rules answers
 * GetBucketCors with 404 NoSuchCORSConfiguration.
 */
import type { Backend } from '../../backends/types.js';
import { corsConfigurationXml, parseCorsConfiguration, type CorsRule } from '../../vocabulary/cors.js';
import { S3Error } from '../../vocabulary/errors.js';
import { parseXml, readXmlBody, toXml } from '../../vocabulary/xml.js';
import type { Handler, RequestContext } from '../context.js';
import { requireBucket } from '../context.js';
import { emptyResponse, xmlResponse } from '../respond.js';

/** A CORS configuration is a small document (AWS: at most 100 rules); 64 KiB is ample. */
const MAX_CORS_BODY = 64 * 1024;

async function forwarded(ctx: RequestContext, backend: Backend, body?: Buffer) {
  const headers: Record<string, string> = {};
  if (ctx.headers['content-md5'] !== undefined) headers['content-md5'] = ctx.headers['content-md5'];
  if (body) headers['content-type'] = 'application/xml';
  return backend.forward!({ method: ctx.method, bucket: requireBucket(ctx), query: { cors: '' }, headers, ...(body && { body }) });
}

export const PutBucketCors: Handler = async (ctx, { backend }) => {
  const bucket = requireBucket(ctx);
  const doc = await readXmlBody(ctx.payload().stream, MAX_CORS_BODY);
  // Checked here on both backends: bad input is refused before anything is stored or forwarded.
  const rules = parseCorsConfiguration(doc);
  if (backend.putBucketCors) {
    await backend.putBucketCors(bucket, rules);
    return emptyResponse(200);
  }
  if (!backend.forward) throw new S3Error('NotImplemented', 'This backend keeps no CORS configuration.');
  const res = await forwarded(ctx, backend, Buffer.from(toXml('CORSConfiguration', corsConfigurationXml(rules))));
  return { status: res.status, headers: res.headers, body: res.body };
};

export const GetBucketCors: Handler = async (ctx, { backend }) => {
  const bucket = requireBucket(ctx);
  if (backend.getBucketCors) {
    const rules = await backend.getBucketCors(bucket);
    if (!rules) throw new S3Error('NoSuchCORSConfiguration', { fields: { BucketName: bucket } });
    return xmlResponse('CORSConfiguration', corsConfigurationXml(rules));
  }
  if (!backend.forward) {
    await backend.headBucket(bucket);
    throw new S3Error('NoSuchCORSConfiguration', { fields: { BucketName: bucket } });
  }
  const res = await forwarded(ctx, backend);
  return { status: res.status, headers: res.headers, body: res.body };
};

export const DeleteBucketCors: Handler = async (ctx, { backend }) => {
  const bucket = requireBucket(ctx);
  if (backend.putBucketCors) {
    await backend.putBucketCors(bucket, null);
    return emptyResponse(204);
  }
  if (!backend.forward) throw new S3Error('NotImplemented', 'This backend keeps no CORS configuration.');
  const res = await forwarded(ctx, backend);
  return { status: res.status, headers: res.headers, body: res.body };
};

/** The bucket's CORS rules wherever they are kept; null when it has none (or no such bucket). */
export async function bucketCorsRules(backend: Backend, bucket: string): Promise<CorsRule[] | null> {
  if (backend.getBucketCors) return backend.getBucketCors(bucket).catch(() => null);
  if (!backend.forward) return null;
  const res = await backend.forward({ method: 'GET', bucket, query: { cors: '' }, headers: {} });
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    size += (chunk as Buffer).length;
    if (size <= MAX_CORS_BODY) chunks.push(chunk as Buffer);
  }
  if (res.status !== 200 || size > MAX_CORS_BODY) return null;
  try {
    return parseCorsConfiguration(parseXml(Buffer.concat(chunks).toString('utf8')));
  } catch {
    return null;
  }
}
