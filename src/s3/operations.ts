/**
 * The closed set of S3 operations casket answers, named as in the S3 API
 * reference (https://docs.aws.amazon.com/AmazonS3/latest/API/API_Operations_Amazon_Simple_Storage_Service.html).
 * dispatch.ts maps every one to a handler in a Record, so the compiler fails
 * when one is missing. Anything else is refused with 501 NotImplemented.
 */

export const OPERATIONS = [
  'ListBuckets',
  'CreateBucket',
  'HeadBucket',
  'DeleteBucket',
  'GetBucketLocation',
  'GetBucketAcl',
  'PutBucketAcl',
  'GetBucketVersioning',
  'PutBucketVersioning',
  'GetBucketPolicy',
  'GetBucketCors',
  'PutBucketCors',
  'DeleteBucketCors',
  'GetBucketLifecycleConfiguration',
  'PutBucketLifecycleConfiguration',
  'DeleteBucketLifecycle',
  'GetBucketTagging',
  'ListObjects',
  'ListObjectsV2',
  'ListObjectVersions',
  'ListMultipartUploads',
  'DeleteObjects',
  'GetObject',
  'HeadObject',
  'GetObjectAttributes',
  'PutObject',
  /** A browser-form upload (RESTObjectPOST): a PutObject whose headers and signature travel as form fields. */
  'PostObject',
  'CopyObject',
  'DeleteObject',
  'GetObjectAcl',
  'PutObjectAcl',
  'CreateMultipartUpload',
  'UploadPart',
  'UploadPartCopy',
  'CompleteMultipartUpload',
  'AbortMultipartUpload',
  'ListParts',
  /** A sub-resource casket does not model (tagging, versioning, ...): forwarded to an upstream. */
  'Unmodeled',
] as const;

export type Operation = (typeof OPERATIONS)[number];
