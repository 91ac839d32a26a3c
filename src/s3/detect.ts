/**
 * Parse, then dispatch: turns method + bucket + key + sub-resource query into
 * one Operation. Sub-resource names follow the S3 API reference; a request for
 * a sub-resource casket does not model is refused here with 501
 * NotImplemented, before anything else happens.
 */
import { S3Error } from '../vocabulary/errors.js';
import type { Operation } from './operations.js';

/**
 * Sub-resources S3 knows that casket does not model (tagging, versioning,
 * bucket configuration...): 'Unmodeled', forwarded to an upstream after auth
 * (operations/unmodeled.ts), 501 on the embedded store. Never guessed at.
 */
export const UNMODELED = [
  'accelerate', 'analytics', 'encryption', 'intelligent-tiering', 'inventory',
  'legal-hold', 'logging', 'metadataTable', 'metrics', 'notification', 'object-lock',
  'ownershipControls', 'policyStatus', 'publicAccessBlock', 'replication', 'requestPayment',
  'restore', 'retention', 'select', 'torrent', 'website',
  'cors', 'policy', 'lifecycle', 'tagging', 'versioning',
];

/** Sub-resources that name a modeled operation: valid only with the method that operation takes. */
const MODELED = ['acl', 'location', 'uploads', 'delete', 'uploadId', 'partNumber', 'session', 'versions', 'attributes'];

function notImplemented(what: string): S3Error {
  return new S3Error('NotImplemented', `casket does not implement ${what}.`);
}

function firstUnsupported(query: URLSearchParams): string | undefined {
  return [...UNMODELED, ...MODELED].find((name) => query.has(name));
}

/** The request names an unmodeled sub-resource and nothing modeled: forward it (or 501). */
function unmodeled(query: URLSearchParams): boolean {
  return UNMODELED.some((name) => query.has(name)) && !MODELED.some((name) => query.has(name));
}

export function detectOperation(method: string, bucket: string | undefined, key: string | undefined, query: URLSearchParams, headers: Record<string, string>): Operation {
  const has = (name: string) => query.has(name);
  if (!bucket) {
    if (method === 'GET') return 'ListBuckets';
    throw new S3Error('MethodNotAllowed');
  }
  if (key === undefined) {
    switch (method) {
      case 'HEAD':
        return 'HeadBucket';
      case 'GET':
        if (has('location')) return 'GetBucketLocation';
        if (has('acl')) return 'GetBucketAcl';
        if (has('versioning')) return 'GetBucketVersioning';
        if (has('policy')) return 'GetBucketPolicy';
        if (has('cors')) return 'GetBucketCors';
        if (has('lifecycle')) return 'GetBucketLifecycleConfiguration';
        if (has('tagging')) return 'GetBucketTagging';
        if (has('uploads')) return 'ListMultipartUploads';
        if (has('versions')) return 'ListObjectVersions';
        if (firstUnsupported(query)) break;
        return query.get('list-type') === '2' ? 'ListObjectsV2' : 'ListObjects';
      case 'PUT':
        if (has('acl')) return 'PutBucketAcl';
        if (has('cors')) return 'PutBucketCors';
        if (has('lifecycle')) return 'PutBucketLifecycleConfiguration';
        if (has('versioning')) return 'PutBucketVersioning';
        if (firstUnsupported(query)) break;
        return 'CreateBucket';
      case 'DELETE':
        if (has('cors')) return 'DeleteBucketCors';
        if (has('lifecycle')) return 'DeleteBucketLifecycle';
        if (firstUnsupported(query)) break;
        return 'DeleteBucket';
      case 'POST':
        if (has('delete')) return 'DeleteObjects';
        // POST Object (RESTObjectPOST): a form upload to the bucket itself, no sub-resource.
        if (query.toString() === '') return 'PostObject';
        break;
      default:
        throw new S3Error('MethodNotAllowed');
    }
    if (unmodeled(query)) return 'Unmodeled';
    throw notImplemented(`${method} on a bucket with ?${firstUnsupported(query) ?? [...query.keys()].join('&')}`);
  }
  switch (method) {
    case 'HEAD':
      return 'HeadObject';
    case 'GET':
      if (has('acl')) return 'GetObjectAcl';
      if (has('uploadId')) return 'ListParts';
      if (has('attributes')) return 'GetObjectAttributes';
      if (firstUnsupported(query) && !has('partNumber')) break;
      return 'GetObject';
    case 'PUT':
      if (has('acl')) return 'PutObjectAcl';
      if (has('uploadId') && has('partNumber')) return headers['x-amz-copy-source'] ? 'UploadPartCopy' : 'UploadPart';
      if (firstUnsupported(query)) break;
      return headers['x-amz-copy-source'] ? 'CopyObject' : 'PutObject';
    case 'POST':
      if (has('uploads')) return 'CreateMultipartUpload';
      if (has('uploadId')) return 'CompleteMultipartUpload';
      break;
    case 'DELETE':
      if (has('uploadId')) return 'AbortMultipartUpload';
      if (firstUnsupported(query)) break;
      return 'DeleteObject';
    default:
      throw new S3Error('MethodNotAllowed');
  }
  if (unmodeled(query)) return 'Unmodeled';
  throw notImplemented(`${method} on an object with ?${firstUnsupported(query) ?? [...query.keys()].join('&')}`);
}
