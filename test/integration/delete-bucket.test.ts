/**
 * DeleteBucket as AWS S3 answers it: a bucket that holds
 * only in-progress multipart uploads is deleted, and its uploads with it; a
 * bucket that holds an object is not (409 BucketNotEmpty), and keeps its
 * uploads. Runs on the embedded store and through moto / Ceph RGW.
 */
import {
  CreateBucketCommand, CreateMultipartUploadCommand, DeleteBucketCommand, DeleteObjectCommand, HeadBucketCommand,
  ListMultipartUploadsCommand, PutObjectCommand, UploadPartCommand,
} from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { failure } from '../helpers/clients.js';
import { casketWithBucket } from '../helpers/suite.js';

const t = casketWithBucket('delete-bucket-home');

async function startUpload(bucket: string, key: string): Promise<string> {
  const upload = await t.s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
  await t.s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId: upload.UploadId, PartNumber: 1, Body: Buffer.alloc(1024, 7) }));
  return upload.UploadId!;
}

describe('DeleteBucket with in-progress multipart uploads', () => {
  it('deletes a bucket whose only content is unfinished uploads, and the uploads with it', async () => {
    const bucket = 'only-uploads';
    await t.s3.send(new CreateBucketCommand({ Bucket: bucket }));
    await startUpload(bucket, 'big/one');
    await startUpload(bucket, 'big/two');
    await t.s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'no-parts-yet' }));

    const deleted = await t.s3.send(new DeleteBucketCommand({ Bucket: bucket }));
    expect(deleted.$metadata.httpStatusCode).toBe(204);
    expect(await failure(t.s3.send(new HeadBucketCommand({ Bucket: bucket })))).toMatchObject({ status: 404 });

    // A bucket of the same name starts empty: no upload came back with it.
    await t.s3.send(new CreateBucketCommand({ Bucket: bucket }));
    const uploads = await t.s3.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
    expect(uploads.Uploads ?? []).toEqual([]);
    await t.s3.send(new DeleteBucketCommand({ Bucket: bucket }));
  });

  it('still refuses a bucket that holds an object (409 BucketNotEmpty), and leaves its uploads alone', async () => {
    const bucket = 'object-and-upload';
    await t.s3.send(new CreateBucketCommand({ Bucket: bucket }));
    await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'kept', Body: 'kept' }));
    const uploadId = await startUpload(bucket, 'pending');

    expect(await failure(t.s3.send(new DeleteBucketCommand({ Bucket: bucket })))).toMatchObject({ name: 'BucketNotEmpty', status: 409 });
    const uploads = await t.s3.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
    expect(uploads.Uploads?.map((u) => u.UploadId)).toEqual([uploadId]);

    // Once the object is gone, the upload no longer keeps the bucket.
    await t.s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'kept' }));
    await t.s3.send(new DeleteBucketCommand({ Bucket: bucket }));
    expect(await failure(t.s3.send(new HeadBucketCommand({ Bucket: bucket })))).toMatchObject({ status: 404 });
  });
});
