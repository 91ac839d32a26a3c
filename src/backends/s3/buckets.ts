/**
 * Bucket operations on the upstream: ListBuckets, CreateBucket, HeadBucket,
 * DeleteBucket (https://docs.aws.amazon.com/AmazonS3/latest/API/API_CreateBucket.html),
 * re-signed as they are. casket's own probe buckets (capabilities.ts) are
 * never listed.
 */
import { S3Error } from '../../vocabulary/errors.js';
import { validateBucketName } from '../../vocabulary/names.js';
import type { BucketInfo } from '../types.js';
import { drain, errorFrom, rootOf, type UpstreamClient, type UpstreamRequest } from './client.js';

export async function listBuckets(client: UpstreamClient): Promise<BucketInfo[]> {
  const { doc } = await client.xml({ method: 'GET' });
  const list = rootOf<{ Buckets?: { Bucket?: Array<{ Name?: string; CreationDate?: string }> } }>(doc).Buckets?.Bucket ?? [];
  return list
    .filter((b) => typeof b.Name === 'string' && !b.Name.startsWith('casket-probe-'))
    .map((b) => ({ name: b.Name!, creationDate: b.CreationDate ? new Date(b.CreationDate) : new Date(0) }));
}

export async function createBucket(client: UpstreamClient, region: string, bucket: string): Promise<'created' | 'exists'> {
  validateBucketName(bucket);
  const body =
    region === 'us-east-1'
      ? undefined
      : { data: Buffer.from(`<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><LocationConstraint>${region}</LocationConstraint></CreateBucketConfiguration>`) };
  const req: UpstreamRequest = { method: 'PUT', bucket, ...(body && { body }) };
  const res = await client.send(req);
  if (res.status < 300) {
    await drain(res);
    return 'created';
  }
  const error = await errorFrom(res, req);
  if (error.code === 'BucketAlreadyOwnedByYou') return 'exists';
  throw error;
}

export async function headBucket(client: UpstreamClient, bucket: string): Promise<BucketInfo> {
  const res = await client.send({ method: 'HEAD', bucket });
  await drain(res);
  if (res.status === 404) throw new S3Error('NoSuchBucket', { fields: { BucketName: bucket } });
  if (res.status >= 300) throw await errorFrom(res, { method: 'HEAD', bucket });
  return { name: bucket, creationDate: new Date(0) };
}

export async function deleteBucket(client: UpstreamClient, bucket: string): Promise<void> {
  await drain(await client.ok({ method: 'DELETE', bucket }));
}
