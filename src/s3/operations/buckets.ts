/**
 * Bucket operations: ListBuckets, CreateBucket, HeadBucket, DeleteBucket,
 * GetBucketLocation (https://docs.aws.amazon.com/AmazonS3/latest/API/).
 * casket is single-tenant: every credential without a policy sees every bucket, so
 * CreateBucket of an existing bucket answers 200 as S3 does in us-east-1 for
 * its owner (rclone creates the bucket before every upload — README "Clients").
 */
import type { Handler } from '../context.js';
import { hasBody, requireBucket } from '../context.js';
import { emptyResponse, xmlDate, xmlResponse } from '../respond.js';
import { readXmlBody } from '../../vocabulary/xml.js';

export const OWNER = { ID: 'casket', DisplayName: 'casket' };

export const ListBuckets: Handler = async (ctx, { backend }) => {
  // A key limited by a policy sees only the buckets it may touch (docs/design.md §7).
  const buckets = (await backend.listBuckets()).filter((b) => ctx.access.bucketVisible(b.name));
  return xmlResponse('ListAllMyBucketsResult', {
    Owner: OWNER,
    Buckets: { Bucket: buckets.map((b) => ({ Name: b.name, CreationDate: xmlDate(b.creationDate) })) },
  });
};

export const CreateBucket: Handler = async (ctx, { backend }) => {
  const bucket = requireBucket(ctx);
  // The optional CreateBucketConfiguration names a region; casket has one.
  // The body is still read through the payload so its signature is checked.
  if (hasBody(ctx)) await readXmlBody(ctx.payload().stream);
  // In front of an upstream, Object Lock, ACL and ownership go there (issue 44); the embedded store refused a lock (handle.ts).
  await backend.createBucket(bucket, ctx.headers);
  return emptyResponse(200, { location: `/${bucket}` });
};

export const HeadBucket: Handler = async (ctx, { backend, region }) => {
  await backend.headBucket(requireBucket(ctx));
  return emptyResponse(200, { 'x-amz-bucket-region': region });
};

export const DeleteBucket: Handler = async (ctx, { backend }) => {
  await backend.deleteBucket(requireBucket(ctx));
  return emptyResponse(204);
};

export const GetBucketLocation: Handler = async (ctx, { backend, region }) => {
  await backend.headBucket(requireBucket(ctx));
  // us-east-1 is reported as an empty LocationConstraint, as S3 does.
  return xmlResponse('LocationConstraint', { '#text': region === 'us-east-1' ? '' : region });
};
