/**
 * Bucket operations on the upstream: ListBuckets, CreateBucket, HeadBucket,
 * DeleteBucket (https://docs.aws.amazon.com/AmazonS3/latest/API/API_CreateBucket.html),
 * re-signed as they are. casket's own probe buckets (capabilities.ts) are
 * never listed.
 *
 * DeleteBucket deletes a bucket that holds only in-progress multipart uploads,
 * as AWS S3 does: casket lists and aborts them upstream first (an upstream
 * such as Ceph RGW or MinIO may refuse BucketNotEmpty while uploads remain).
 * It looks for objects first, so a bucket that is not empty keeps its uploads.
 */
import { S3Error } from '../../vocabulary/errors.js';
import { validateBucketName } from '../../vocabulary/names.js';
import { BUCKET_CREATE_HEADERS, type BucketInfo } from '../types.js';
import { drain, errorFrom, rootOf, type UpstreamClient, type UpstreamRequest } from './client.js';

export async function listBuckets(client: UpstreamClient): Promise<BucketInfo[]> {
  const { doc } = await client.xml({ method: 'GET' });
  const list = rootOf<{ Buckets?: { Bucket?: Array<{ Name?: string; CreationDate?: string }> } }>(doc).Buckets?.Bucket ?? [];
  return list
    .filter((b) => typeof b.Name === 'string' && !b.Name.startsWith('casket-probe-'))
    .map((b) => ({ name: b.Name!, creationDate: b.CreationDate ? new Date(b.CreationDate) : new Date(0) }));
}

/** `headers`: the request's Object Lock, ACL and ownership headers, sent as they are (types.ts BUCKET_CREATE_HEADERS). */
export async function createBucket(client: UpstreamClient, region: string, bucket: string, headers: Record<string, string> = {}): Promise<'created' | 'exists'> {
  validateBucketName(bucket);
  const body =
    region === 'us-east-1'
      ? undefined
      : { data: Buffer.from(`<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><LocationConstraint>${region}</LocationConstraint></CreateBucketConfiguration>`) };
  const sent: Record<string, string> = {};
  for (const name of BUCKET_CREATE_HEADERS) if (headers[name] !== undefined) sent[name] = headers[name];
  const req: UpstreamRequest = { method: 'PUT', bucket, headers: sent, ...(body && { body }) };
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

/** Most rounds of "list uploads, abort them" before the delete is tried anyway. */
const ABORT_ROUNDS = 100;

/** `aborted` is told of each upload aborted (the backend forgets its part digests). */
export async function deleteBucket(client: UpstreamClient, bucket: string, aborted: (uploadId: string) => Promise<void>): Promise<void> {
  const { doc } = await client.xml({ method: 'GET', bucket, query: { 'list-type': '2', 'max-keys': '1' } });
  if ((rootOf<{ Contents?: unknown[] }>(doc).Contents ?? []).length > 0) throw new S3Error('BucketNotEmpty', { fields: { BucketName: bucket } });
  // Abort every upload; each round lists the first page again (what was aborted is gone from it).
  for (let round = 0; round < ABORT_ROUNDS; round++) {
    const listed = await client.xml({ method: 'GET', bucket, query: { uploads: '', 'max-uploads': '1000' } });
    const uploads = (rootOf<{ Upload?: Array<{ Key?: string; UploadId?: string }> }>(listed.doc).Upload ?? []).filter((u) => typeof u.Key === 'string' && typeof u.UploadId === 'string');
    if (uploads.length === 0) break;
    for (const u of uploads) {
      const req: UpstreamRequest = { method: 'DELETE', bucket, key: u.Key!, query: { uploadId: u.UploadId! } };
      const res = await client.send(req);
      // NoSuchUpload: completed or aborted meanwhile.
      if (res.status >= 300 && res.status !== 404) throw await errorFrom(res, req);
      await drain(res);
      await aborted(u.UploadId!);
    }
  }
  await drain(await client.ok({ method: 'DELETE', bucket }));
}
