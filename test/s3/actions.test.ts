/**
 * Operation → the IAM actions a policy must allow (src/s3/actions.ts), as a
 * table: what a policy writer reads in the AWS action list is what casket asks.
 */
import { describe, expect, it } from 'vitest';
import { requiredAccess, type ActionRequest } from '../../src/s3/actions.js';
import { OPERATIONS, type Operation } from '../../src/s3/operations.js';

const req = (operation: Operation, method: string, bucket: string | undefined, key: string | undefined, query = '', headers: Record<string, string> = {}): ActionRequest => ({
  operation,
  method,
  bucket,
  key,
  query: new URLSearchParams(query),
  headers,
});

const object = 'arn:aws:s3:::b/k/x';
const bucket = 'arn:aws:s3:::b';

describe('requiredAccess', () => {
  it.each<[string, ActionRequest, Array<[string, string]>]>([
    ['ListBuckets', req('ListBuckets', 'GET', undefined, undefined), [['s3:ListAllMyBuckets', '*']]],
    ['GetObject', req('GetObject', 'GET', 'b', 'k/x'), [['s3:GetObject', object]]],
    ['HeadObject reads', req('HeadObject', 'HEAD', 'b', 'k/x'), [['s3:GetObject', object]]],
    ['PutObject', req('PutObject', 'PUT', 'b', 'k/x'), [['s3:PutObject', object]]],
    ['PutObject with x-casket-merge also reads the key it merges with', req('PutObject', 'PUT', 'b', 'k/x', '', { 'x-casket-merge': 'text' }), [['s3:PutObject', object], ['s3:GetObject', object]]],
    ['DeleteObject', req('DeleteObject', 'DELETE', 'b', 'k/x'), [['s3:DeleteObject', object]]],
    ['CopyObject writes the destination, reads the source', req('CopyObject', 'PUT', 'b', 'k/x', '', { 'x-amz-copy-source': '/src/a%20b' }), [['s3:PutObject', object], ['s3:GetObject', 'arn:aws:s3:::src/a b']]],
    ['UploadPartCopy too', req('UploadPartCopy', 'PUT', 'b', 'k/x', 'uploadId=u&partNumber=1', { 'x-amz-copy-source': 'src/a' }), [['s3:PutObject', object], ['s3:GetObject', 'arn:aws:s3:::src/a']]],
    // A request naming a version needs the version action (API_GetObject, API_DeleteObject "Permissions").
    ['GetObject of a version', req('GetObject', 'GET', 'b', 'k/x', 'versionId=v1'), [['s3:GetObjectVersion', object]]],
    ['HeadObject of a version', req('HeadObject', 'HEAD', 'b', 'k/x', 'versionId=null'), [['s3:GetObjectVersion', object]]],
    ['DeleteObject of a version', req('DeleteObject', 'DELETE', 'b', 'k/x', 'versionId=v1'), [['s3:DeleteObjectVersion', object]]],
    ['GetObjectAttributes of a version', req('GetObjectAttributes', 'GET', 'b', 'k/x', 'attributes&versionId=v1'), [['s3:GetObjectVersionAttributes', object]]],
    ['CopyObject of a version', req('CopyObject', 'PUT', 'b', 'k/x', '', { 'x-amz-copy-source': 'src/a?versionId=v1' }), [['s3:PutObject', object], ['s3:GetObjectVersion', 'arn:aws:s3:::src/a']]],
    ['PutBucketVersioning', req('PutBucketVersioning', 'PUT', 'b', undefined, 'versioning'), [['s3:PutBucketVersioning', bucket]]],
    // Tags, a lock or an ACL asked for with a write need their own actions too (API_PutObject, API_CreateBucket "Permissions").
    ['PutObject with tags, a retention, a legal hold and an ACL', req('PutObject', 'PUT', 'b', 'k/x', '', { 'x-amz-tagging': 'a=1', 'x-amz-object-lock-mode': 'GOVERNANCE', 'x-amz-object-lock-legal-hold': 'ON', 'x-amz-acl': 'public-read' }),
      [['s3:PutObject', object], ['s3:PutObjectTagging', object], ['s3:PutObjectRetention', object], ['s3:PutObjectLegalHold', object], ['s3:PutObjectAcl', object]]],
    ['CreateMultipartUpload with a grant', req('CreateMultipartUpload', 'POST', 'b', 'k/x', 'uploads', { 'x-amz-grant-read': 'uri=x' }), [['s3:PutObject', object], ['s3:PutObjectAcl', object]]],
    ['CopyObject replacing tags', req('CopyObject', 'PUT', 'b', 'k/x', '', { 'x-amz-copy-source': 'src/a', 'x-amz-tagging-directive': 'REPLACE', 'x-amz-tagging': 'a=1' }), [['s3:PutObject', object], ['s3:PutObjectTagging', object], ['s3:GetObject', 'arn:aws:s3:::src/a']]],
    ['CreateBucket with Object Lock and an ACL', req('CreateBucket', 'PUT', 'b', undefined, '', { 'x-amz-bucket-object-lock-enabled': 'true', 'x-amz-acl': 'public-read' }),
      [['s3:CreateBucket', bucket], ['s3:PutBucketObjectLockConfiguration', bucket], ['s3:PutBucketVersioning', bucket], ['s3:PutBucketAcl', bucket]]],
    // `private` grants nothing (and rclone sends it on every upload): no ACL action.
    ['PutObject with the canned ACL private', req('PutObject', 'PUT', 'b', 'k/x', '', { 'x-amz-acl': 'private' }), [['s3:PutObject', object]]],
    ['CreateBucket with the canned ACL private', req('CreateBucket', 'PUT', 'b', undefined, '', { 'x-amz-acl': 'private' }), [['s3:CreateBucket', bucket]]],
    ['DeleteObject bypassing governance retention', req('DeleteObject', 'DELETE', 'b', 'k/x', 'versionId=v1', { 'x-amz-bypass-governance-retention': 'true' }), [['s3:DeleteObjectVersion', object], ['s3:BypassGovernanceRetention', object]]],
    ['PutObjectTagging of a version', req('Unmodeled', 'PUT', 'b', 'k/x', 'tagging&versionId=v1'), [['s3:PutObjectVersionTagging', object]]],
    ['PutBucketPolicy', req('Unmodeled', 'PUT', 'b', undefined, 'policy'), [['s3:PutBucketPolicy', bucket]]],
    ['DeleteBucketPolicy', req('Unmodeled', 'DELETE', 'b', undefined, 'policy'), [['s3:DeleteBucketPolicy', bucket]]],
    ['CreateMultipartUpload', req('CreateMultipartUpload', 'POST', 'b', 'k/x', 'uploads'), [['s3:PutObject', object]]],
    ['UploadPart', req('UploadPart', 'PUT', 'b', 'k/x', 'uploadId=u&partNumber=1'), [['s3:PutObject', object]]],
    ['CompleteMultipartUpload', req('CompleteMultipartUpload', 'POST', 'b', 'k/x', 'uploadId=u'), [['s3:PutObject', object]]],
    ['AbortMultipartUpload', req('AbortMultipartUpload', 'DELETE', 'b', 'k/x', 'uploadId=u'), [['s3:AbortMultipartUpload', object]]],
    ['ListParts', req('ListParts', 'GET', 'b', 'k/x', 'uploadId=u'), [['s3:ListMultipartUploadParts', object]]],
    ['HeadBucket needs ListBucket', req('HeadBucket', 'HEAD', 'b', undefined), [['s3:ListBucket', bucket]]],
    ['DeleteBucket', req('DeleteBucket', 'DELETE', 'b', undefined), [['s3:DeleteBucket', bucket]]],
    ['ListMultipartUploads', req('ListMultipartUploads', 'GET', 'b', undefined, 'uploads'), [['s3:ListBucketMultipartUploads', bucket]]],
    ['DeleteObjects: per key, in its handler', req('DeleteObjects', 'POST', 'b', undefined, 'delete'), []],
    ['GetObjectTagging (forwarded)', req('Unmodeled', 'GET', 'b', 'k/x', 'tagging'), [['s3:GetObjectTagging', object]]],
    ['PutObjectTagging (forwarded)', req('Unmodeled', 'PUT', 'b', 'k/x', 'tagging'), [['s3:PutObjectTagging', object]]],
    ['DeleteBucketTagging is s3:PutBucketTagging', req('Unmodeled', 'DELETE', 'b', undefined, 'tagging'), [['s3:PutBucketTagging', bucket]]],
    ['PutBucketVersioning (forwarded)', req('Unmodeled', 'PUT', 'b', undefined, 'versioning'), [['s3:PutBucketVersioning', bucket]]],
    ['ListObjectVersions (modeled)', req('ListObjectVersions', 'GET', 'b', undefined, 'versions'), [['s3:ListBucketVersions', bucket]]],
    ['GetObjectAttributes (modeled)', req('GetObjectAttributes', 'GET', 'b', 'k/x', 'attributes'), [['s3:GetObjectAttributes', object]]],
  ])('%s', (_name, request, expected) => {
    expect(requiredAccess(request).map((a) => [a.action, a.resource])).toEqual(expected);
  });

  it('listings carry s3:prefix, "" when the request names none', () => {
    expect(requiredAccess(req('ListObjectsV2', 'GET', 'b', undefined, 'list-type=2&prefix=agents%2Falice%2F'))).toEqual([{ action: 's3:ListBucket', resource: bucket, context: { 's3:prefix': 'agents/alice/' } }]);
    expect(requiredAccess(req('ListObjects', 'GET', 'b', undefined))[0]?.context).toEqual({ 's3:prefix': '' });
  });

  it('every operation names at least one s3 action (DeleteObjects: per key)', () => {
    for (const op of OPERATIONS) {
      const onKey = !['ListBuckets', 'CreateBucket', 'HeadBucket', 'DeleteBucket', 'ListObjects', 'ListObjectsV2', 'ListObjectVersions', 'ListMultipartUploads', 'DeleteObjects'].some((b) => op === b || op.startsWith('GetBucket') || op === 'PutBucketAcl');
      const r = req(op, 'GET', 'b', onKey ? 'k/x' : undefined, op === 'Unmodeled' ? 'tagging' : '', { 'x-amz-copy-source': 'src/a' });
      const actions = requiredAccess(r).map((a) => a.action);
      if (op === 'DeleteObjects') expect(actions).toEqual([]);
      else expect(actions.length, op).toBeGreaterThan(0);
      for (const a of actions) expect(a).toMatch(/^s3:[A-Za-z]+$/);
    }
  });
});
