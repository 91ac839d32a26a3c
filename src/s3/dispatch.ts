/**
 * Operation → handler. A Record over the closed Operation union, so adding an
 * operation without a handler fails to compile.
 */
import type { Handler } from './context.js';
import type { Operation } from './operations.js';
import * as bucketConfig from './operations/bucket-config.js';
import * as bucketCors from './operations/bucket-cors.js';
import * as bucketLifecycle from './operations/bucket-lifecycle.js';
import * as bucketVersioning from './operations/bucket-versioning.js';
import * as buckets from './operations/buckets.js';
import { CopyObject } from './operations/copy-object.js';
import { DeleteObject, DeleteObjects } from './operations/delete-object.js';
import { GetObject, HeadObject } from './operations/get-object.js';
import { GetObjectAttributes } from './operations/get-object-attributes.js';
import { ListObjectVersions } from './operations/list-object-versions.js';
import { ListObjects, ListObjectsV2 } from './operations/list-objects.js';
import * as multipart from './operations/multipart.js';
import { PostObject } from './operations/post-object.js';
import { PutObject } from './operations/put-object.js';
import { Unmodeled } from './operations/unmodeled.js';

export const HANDLERS: Record<Operation, Handler> = {
  ListBuckets: buckets.ListBuckets,
  CreateBucket: buckets.CreateBucket,
  HeadBucket: buckets.HeadBucket,
  DeleteBucket: buckets.DeleteBucket,
  GetBucketLocation: buckets.GetBucketLocation,
  GetBucketAcl: bucketConfig.GetBucketAcl,
  PutBucketAcl: bucketConfig.PutBucketAcl,
  GetBucketVersioning: bucketVersioning.GetBucketVersioning,
  PutBucketVersioning: bucketVersioning.PutBucketVersioning,
  GetBucketPolicy: bucketConfig.GetBucketPolicy,
  GetBucketCors: bucketCors.GetBucketCors,
  PutBucketCors: bucketCors.PutBucketCors,
  DeleteBucketCors: bucketCors.DeleteBucketCors,
  GetBucketLifecycleConfiguration: bucketLifecycle.GetBucketLifecycleConfiguration,
  PutBucketLifecycleConfiguration: bucketLifecycle.PutBucketLifecycleConfiguration,
  DeleteBucketLifecycle: bucketLifecycle.DeleteBucketLifecycle,
  GetBucketTagging: bucketConfig.GetBucketTagging,
  ListObjects,
  ListObjectsV2,
  ListObjectVersions,
  ListMultipartUploads: multipart.ListMultipartUploads,
  DeleteObjects,
  GetObject,
  HeadObject,
  GetObjectAttributes,
  PutObject,
  PostObject,
  CopyObject,
  DeleteObject,
  GetObjectAcl: bucketConfig.GetObjectAcl,
  PutObjectAcl: bucketConfig.PutObjectAcl,
  CreateMultipartUpload: multipart.CreateMultipartUpload,
  UploadPart: multipart.UploadPart,
  UploadPartCopy: multipart.UploadPartCopy,
  CompleteMultipartUpload: multipart.CompleteMultipartUpload,
  AbortMultipartUpload: multipart.AbortMultipartUpload,
  ListParts: multipart.ListParts,
  Unmodeled,
};
