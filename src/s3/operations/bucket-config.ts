/**
 * The side calls clients make that must not break them (README "Clients": s3cmd
 * `info` reads ?policy, ?cors, ?acl; `cp` reads and writes ?acl). On the
 * embedded store, buckets and objects are private, with no policy
 * or tags (CORS: bucket-cors.ts; lifecycle: bucket-lifecycle.ts): the reads answer that in S3's own words, and a write that
 * asks for anything but private is refused with 501 rather than ignored.
 * In front of an upstream, each goes there as it is and its answer comes
 * back (issue 44: ACLs, bucket policy and tags as the upstream keeps them).
 */
import { S3Error } from '../../vocabulary/errors.js';
import type { Handler, RequestContext, Services } from '../context.js';
import { hasBody, requireBucket, requireKey } from '../context.js';
import { emptyResponse, xmlResponse } from '../respond.js';
import { readXmlBody } from '../../vocabulary/xml.js';
import { OWNER } from './buckets.js';
import { forwardAsIs } from './unmodeled.js';

const PRIVATE_ACL = {
  Owner: OWNER,
  AccessControlList: {
    Grant: [{ Grantee: { '@_xmlns:xsi': 'http://www.w3.org/2001/XMLSchema-instance', '@_xsi:type': 'CanonicalUser', ...OWNER }, Permission: 'FULL_CONTROL' }],
  },
};

async function requireObject(ctx: RequestContext, { backend }: Services): Promise<void> {
  const { bucket, key } = requireKey(ctx);
  if (!(await backend.headObject(bucket, key))) throw new S3Error('NoSuchKey', { fields: { Key: key } });
}

/** Accepts a PutBucketAcl / PutObjectAcl only when it asks for what casket is: private. */
async function acceptPrivateAcl(ctx: RequestContext): Promise<void> {
  const canned = ctx.headers['x-amz-acl'];
  if (canned !== undefined && canned !== 'private') throw new S3Error('NotImplemented', `casket keeps buckets and objects private; the canned ACL "${canned}" is not supported.`);
  if (Object.keys(ctx.headers).some((h) => h.startsWith('x-amz-grant-'))) throw new S3Error('NotImplemented', 'casket keeps buckets and objects private; grants are not supported.');
  if (!hasBody(ctx)) return;
  const xml = JSON.stringify(await readXmlBody(ctx.payload().stream));
  // A grant to a group (AllUsers, AuthenticatedUsers) would make data public.
  if (xml.includes('acs.amazonaws.com/groups')) throw new S3Error('NotImplemented', 'casket keeps buckets and objects private; group grants are not supported.');
}

/** The embedded store's answer, or the upstream's. */
function orUpstream(embedded: Handler): Handler {
  return (ctx, services) => (services.backend.forward ? forwardAsIs(ctx, services) : embedded(ctx, services));
}

export const GetBucketAcl: Handler = orUpstream(async (ctx, { backend }) => {
  await backend.headBucket(requireBucket(ctx));
  return xmlResponse('AccessControlPolicy', PRIVATE_ACL);
});

export const PutBucketAcl: Handler = orUpstream(async (ctx, { backend }) => {
  await backend.headBucket(requireBucket(ctx));
  await acceptPrivateAcl(ctx);
  return emptyResponse(200);
});

export const GetObjectAcl: Handler = orUpstream(async (ctx, services) => {
  await requireObject(ctx, services);
  return xmlResponse('AccessControlPolicy', PRIVATE_ACL);
});

export const PutObjectAcl: Handler = orUpstream(async (ctx, services) => {
  await requireObject(ctx, services);
  await acceptPrivateAcl(ctx);
  return emptyResponse(200);
});

function noSuch(code: 'NoSuchBucketPolicy' | 'NoSuchTagSet'): Handler {
  return async (ctx, { backend }) => {
    const bucket = requireBucket(ctx);
    await backend.headBucket(bucket);
    throw new S3Error(code, { fields: { BucketName: bucket } });
  };
}

export const GetBucketPolicy = orUpstream(noSuch('NoSuchBucketPolicy'));
export const GetBucketTagging = orUpstream(noSuch('NoSuchTagSet'));
