/**
 * Operation → the IAM actions and resources a policy must allow (docs/design.md §7).
 * Action names as in "Actions, resources, and condition keys for Amazon S3",
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazons3.html
 * and the per-operation permission notes of the S3 API reference:
 * - HeadBucket needs s3:ListBucket (API_HeadBucket "Permissions");
 * - CopyObject and UploadPartCopy: s3:GetObject on the source, s3:PutObject
 *   on the destination (API_CopyObject, API_UploadPartCopy);
 * - CreateMultipartUpload, UploadPart, CompleteMultipartUpload: s3:PutObject
 *   (mpuoverview.html#mpuAndPermissions);
 * - DeleteObjects: s3:DeleteObject per key, checked in its handler;
 * - PostObject (a browser form): s3:PutObject on the form's key, for the key
 *   that signed the form (RESTObjectPOST: "you must have WRITE access");
 * - ListObjects(V2) carries the `s3:prefix` condition key;
 * - a PutObject that asks for a merge (`x-casket-merge`, merge-write.ts) reads
 *   the versions of the key it merges with: s3:GetObject on it as well, as
 *   CopyObject needs on its source (docs/design.md §14).
 * A Record over the closed Operation union: a new operation without its
 * action does not compile.
 *
 * - a request that names a version (`?versionId=`, a copy source's
 *   `?versionId=`, a DeleteObjects `<VersionId>`) needs the version action:
 *   s3:GetObjectVersion, s3:DeleteObjectVersion,
 *   s3:GetObjectVersionAttributes (API_GetObject, API_DeleteObject
 *   "Permissions"; docs/design.md §10).
 * - a write that asks for tags, a lock or an ACL with it (x-amz-tagging,
 *   x-amz-object-lock-*, x-amz-acl / x-amz-grant-*) also needs the action
 *   that sets them on their own: s3:PutObjectTagging, s3:PutObjectRetention,
 *   s3:PutObjectLegalHold, s3:PutObjectAcl (API_PutObject "Permissions"; a
 *   canned `private` ACL grants nothing and needs no ACL action,
 *   object-lock-managing.html); a CreateBucket with Object Lock needs
 *   s3:PutBucketObjectLockConfiguration and s3:PutBucketVersioning, with an
 *   ACL s3:PutBucketAcl, with x-amz-object-ownership
 *   s3:PutBucketOwnershipControls (API_CreateBucket "Permissions"); a delete
 *   that bypasses governance retention needs s3:BypassGovernanceRetention.
 * Known gaps: the s3:delimiter / s3:max-keys condition keys are not supplied.
 */
import type { Access } from '../auth/policy.js';
import { S3_ARN } from '../auth/policy.js';
import { parseCopySource } from './copy-source.js';
import { UNMODELED } from './detect.js';
import type { RequestContext } from './context.js';
import type { Operation } from './operations.js';

/** What of a request decides the actions it needs: its operation and target, before any body. */
export type ActionRequest = Pick<RequestContext, 'operation' | 'method' | 'bucket' | 'key' | 'query' | 'headers'>;

const bucketArn = (r: ActionRequest) => S3_ARN + (r.bucket ?? '');
const objectArn = (r: ActionRequest) => `${S3_ARN}${r.bucket ?? ''}/${r.key ?? ''}`;
const onBucket = (action: string) => (r: ActionRequest): Access[] => [{ action, resource: bucketArn(r) }];
const onObject = (action: string) => (r: ActionRequest): Access[] => [{ action, resource: objectArn(r) }];
const listingAs =
  (action: string) =>
  (r: ActionRequest): Access[] => [{ action, resource: bucketArn(r), context: { 's3:prefix': r.query.get('prefix') ?? '' } }];
const listing = listingAs('s3:ListBucket');
/**
 * An ACL that grants something: a grant header, or a canned ACL other than
 * `private`. `private` is what an object or bucket has without any ACL, and
 * what rclone sends on every upload by default (its `acl` option): asking for
 * it grants no one anything, so it needs no ACL action — a key limited to
 * s3:PutObject on its prefix still uploads with rclone (test/clients/restricted-keys).
 */
function grantsAcl(h: Record<string, string>): boolean {
  const canned = h['x-amz-acl'];
  return (canned !== undefined && canned.trim().toLowerCase() !== 'private') || Object.keys(h).some((name) => name.startsWith('x-amz-grant-'));
}
/** What a write's tagging, Object Lock and ACL headers need besides s3:PutObject (see the file comment). */
function writeExtras(r: ActionRequest, tagging = r.headers['x-amz-tagging'] !== undefined): Access[] {
  const h = r.headers;
  const needs: string[] = [];
  if (tagging) needs.push('s3:PutObjectTagging');
  if (h['x-amz-object-lock-mode'] !== undefined || h['x-amz-object-lock-retain-until-date'] !== undefined) needs.push('s3:PutObjectRetention');
  if (h['x-amz-object-lock-legal-hold'] !== undefined) needs.push('s3:PutObjectLegalHold');
  if (grantsAcl(h)) needs.push('s3:PutObjectAcl');
  return needs.map((action) => ({ action, resource: objectArn(r) }));
}
const createUpload = (r: ActionRequest): Access[] => [{ action: 's3:PutObject', resource: objectArn(r) }, ...writeExtras(r)];
const createBucket = (r: ActionRequest): Access[] => {
  const h = r.headers;
  const needs = ['s3:CreateBucket'];
  if (h['x-amz-bucket-object-lock-enabled']?.toLowerCase() === 'true') needs.push('s3:PutBucketObjectLockConfiguration', 's3:PutBucketVersioning');
  if (grantsAcl(h)) needs.push('s3:PutBucketAcl');
  if (h['x-amz-object-ownership'] !== undefined) needs.push('s3:PutBucketOwnershipControls');
  return needs.map((action) => ({ action, resource: bucketArn(r) }));
};
const copy = (r: ActionRequest): Access[] => {
  const source = parseCopySource(r.headers);
  const replacesTags = (r.headers['x-amz-tagging-directive'] ?? '').toUpperCase() === 'REPLACE' && r.headers['x-amz-tagging'] !== undefined;
  return [
    { action: 's3:PutObject', resource: objectArn(r) },
    ...(r.operation === 'CopyObject' ? writeExtras(r, replacesTags) : []),
    { action: source.versionId !== undefined ? 's3:GetObjectVersion' : 's3:GetObject', resource: `${S3_ARN}${source.bucket}/${source.key}` },
  ];
};
/** PutObject; a merge (merge-write.ts MERGE_HEADER) also reads what it merges with. */
const put = (r: ActionRequest): Access[] => [
  { action: 's3:PutObject', resource: objectArn(r) },
  ...(r.headers['x-casket-merge'] !== undefined ? [{ action: 's3:GetObject', resource: objectArn(r) }] : []),
  ...writeExtras(r),
];
/** DeleteObject; bypassing a governance-mode retention is an action of its own. */
const deleteObject = (r: ActionRequest): Access[] => [
  ...onObjectVersion('s3:DeleteObject', 's3:DeleteObjectVersion')(r),
  ...(r.headers['x-amz-bypass-governance-retention']?.toLowerCase() === 'true' ? [{ action: 's3:BypassGovernanceRetention', resource: objectArn(r) }] : []),
];
/** The action, or its version form when the request names a version. */
const onObjectVersion = (action: string, versionAction: string) => (r: ActionRequest): Access[] => [{ action: r.query.has('versionId') ? versionAction : action, resource: objectArn(r) }];

/**
 * Unmodeled sub-resources: the action per method. Bucket and object forms of
 * `tagging`, `acl`... differ, hence the two tables.
 */
type ByMethod = Partial<Record<'GET' | 'PUT' | 'DELETE' | 'POST', string>>;
const BUCKET_SUBRESOURCES: Record<string, ByMethod> = {
  accelerate: { GET: 'GetAccelerateConfiguration', PUT: 'PutAccelerateConfiguration' },
  analytics: { GET: 'GetAnalyticsConfiguration', PUT: 'PutAnalyticsConfiguration', DELETE: 'PutAnalyticsConfiguration' },
  cors: { GET: 'GetBucketCORS', PUT: 'PutBucketCORS', DELETE: 'PutBucketCORS' },
  encryption: { GET: 'GetEncryptionConfiguration', PUT: 'PutEncryptionConfiguration', DELETE: 'PutEncryptionConfiguration' },
  'intelligent-tiering': { GET: 'GetIntelligentTieringConfiguration', PUT: 'PutIntelligentTieringConfiguration', DELETE: 'PutIntelligentTieringConfiguration' },
  inventory: { GET: 'GetInventoryConfiguration', PUT: 'PutInventoryConfiguration', DELETE: 'PutInventoryConfiguration' },
  lifecycle: { GET: 'GetLifecycleConfiguration', PUT: 'PutLifecycleConfiguration', DELETE: 'PutLifecycleConfiguration' },
  logging: { GET: 'GetBucketLogging', PUT: 'PutBucketLogging' },
  metadataTable: { GET: 'GetBucketMetadataTableConfiguration', POST: 'CreateBucketMetadataTableConfiguration', DELETE: 'DeleteBucketMetadataTableConfiguration' },
  metrics: { GET: 'GetMetricsConfiguration', PUT: 'PutMetricsConfiguration', DELETE: 'PutMetricsConfiguration' },
  notification: { GET: 'GetBucketNotification', PUT: 'PutBucketNotification' },
  'object-lock': { GET: 'GetBucketObjectLockConfiguration', PUT: 'PutBucketObjectLockConfiguration' },
  ownershipControls: { GET: 'GetBucketOwnershipControls', PUT: 'PutBucketOwnershipControls', DELETE: 'PutBucketOwnershipControls' },
  policy: { GET: 'GetBucketPolicy', PUT: 'PutBucketPolicy', DELETE: 'DeleteBucketPolicy' },
  policyStatus: { GET: 'GetBucketPolicyStatus' },
  publicAccessBlock: { GET: 'GetBucketPublicAccessBlock', PUT: 'PutBucketPublicAccessBlock', DELETE: 'PutBucketPublicAccessBlock' },
  replication: { GET: 'GetReplicationConfiguration', PUT: 'PutReplicationConfiguration', DELETE: 'PutReplicationConfiguration' },
  requestPayment: { GET: 'GetBucketRequestPayment', PUT: 'PutBucketRequestPayment' },
  tagging: { GET: 'GetBucketTagging', PUT: 'PutBucketTagging', DELETE: 'PutBucketTagging' },
  versioning: { GET: 'GetBucketVersioning', PUT: 'PutBucketVersioning' },
  versions: { GET: 'ListBucketVersions' },
  website: { GET: 'GetBucketWebsite', PUT: 'PutBucketWebsite', DELETE: 'DeleteBucketWebsite' },
};
const OBJECT_SUBRESOURCES: Record<string, ByMethod> = {
  attributes: { GET: 'GetObjectAttributes' },
  'legal-hold': { GET: 'GetObjectLegalHold', PUT: 'PutObjectLegalHold' },
  restore: { POST: 'RestoreObject' },
  retention: { GET: 'GetObjectRetention', PUT: 'PutObjectRetention' },
  select: { POST: 'GetObject' },
  tagging: { GET: 'GetObjectTagging', PUT: 'PutObjectTagging', DELETE: 'DeleteObjectTagging' },
  torrent: { GET: 'GetObjectTorrent' },
};

function unmodeled(r: ActionRequest): Access[] {
  const onKey = r.key !== undefined;
  const subresource = UNMODELED.find((name) => r.query.has(name)) ?? '';
  const table = onKey ? OBJECT_SUBRESOURCES : BUCKET_SUBRESOURCES;
  const method = r.method.toUpperCase() as keyof ByMethod;
  // A combination S3 has no action for: named after the method and the
  // sub-resource, which only `s3:*` (or a matching wildcard) allows.
  let name = table[subresource]?.[method] ?? `${method === 'GET' ? 'Get' : 'Put'}${subresource.replace(/(^|-)(\w)/g, (_m, _d, c: string) => c.toUpperCase())}`;
  // A version's tags have actions of their own (s3:GetObjectVersionTagging...).
  if (onKey && subresource === 'tagging' && r.query.has('versionId')) name = name.replace(/^(Get|Put|Delete)Object/, '$1ObjectVersion');
  const access: Access[] = [{ action: `s3:${name}`, resource: onKey ? objectArn(r) : bucketArn(r) }];
  // A retention loosened in governance mode needs the bypass as well (object-lock-managing.html).
  if (onKey && subresource === 'retention' && r.headers['x-amz-bypass-governance-retention']?.toLowerCase() === 'true') access.push({ action: 's3:BypassGovernanceRetention', resource: objectArn(r) });
  return access;
}

const ACTIONS: Record<Operation, (r: ActionRequest) => Access[]> = {
  // ListBuckets filters what it shows by what the key may touch (buckets.ts).
  ListBuckets: () => [{ action: 's3:ListAllMyBuckets', resource: '*' }],
  CreateBucket: createBucket,
  HeadBucket: onBucket('s3:ListBucket'),
  DeleteBucket: onBucket('s3:DeleteBucket'),
  GetBucketLocation: onBucket('s3:GetBucketLocation'),
  GetBucketAcl: onBucket('s3:GetBucketAcl'),
  PutBucketAcl: onBucket('s3:PutBucketAcl'),
  GetBucketVersioning: onBucket('s3:GetBucketVersioning'),
  PutBucketVersioning: onBucket('s3:PutBucketVersioning'),
  GetBucketPolicy: onBucket('s3:GetBucketPolicy'),
  GetBucketCors: onBucket('s3:GetBucketCORS'),
  // IAM has no DeleteBucketCORS action: deleting the rules is s3:PutBucketCORS.
  PutBucketCors: onBucket('s3:PutBucketCORS'),
  DeleteBucketCors: onBucket('s3:PutBucketCORS'),
  GetBucketLifecycleConfiguration: onBucket('s3:GetLifecycleConfiguration'),
  // IAM has no DeleteLifecycleConfiguration action: deleting the rules is s3:PutLifecycleConfiguration.
  PutBucketLifecycleConfiguration: onBucket('s3:PutLifecycleConfiguration'),
  DeleteBucketLifecycle: onBucket('s3:PutLifecycleConfiguration'),
  GetBucketTagging: onBucket('s3:GetBucketTagging'),
  ListObjects: listing,
  ListObjectsV2: listing,
  ListObjectVersions: listingAs('s3:ListBucketVersions'),
  ListMultipartUploads: onBucket('s3:ListBucketMultipartUploads'),
  // Per key, in the handler: each refused key is an <Error> of its own.
  DeleteObjects: () => [],
  GetObject: onObjectVersion('s3:GetObject', 's3:GetObjectVersion'),
  HeadObject: onObjectVersion('s3:GetObject', 's3:GetObjectVersion'),
  GetObjectAttributes: onObjectVersion('s3:GetObjectAttributes', 's3:GetObjectVersionAttributes'),
  PutObject: put,
  // The key is the form's (with ${filename} substituted), known once the fields before the file are read (handle.ts).
  PostObject: onObject('s3:PutObject'),
  CopyObject: copy,
  DeleteObject: deleteObject,
  GetObjectAcl: onObjectVersion('s3:GetObjectAcl', 's3:GetObjectVersionAcl'),
  PutObjectAcl: onObjectVersion('s3:PutObjectAcl', 's3:PutObjectVersionAcl'),
  CreateMultipartUpload: createUpload,
  UploadPart: onObject('s3:PutObject'),
  UploadPartCopy: copy,
  CompleteMultipartUpload: onObject('s3:PutObject'),
  AbortMultipartUpload: onObject('s3:AbortMultipartUpload'),
  ListParts: onObject('s3:ListMultipartUploadParts'),
  Unmodeled: unmodeled,
};

/** What a request needs allowed, in the order it is checked (destination before copy source). */
export function requiredAccess(r: ActionRequest): Access[] {
  return ACTIONS[r.operation](r);
}

export function objectResource(bucket: string, key: string): string {
  return `${S3_ARN}${bucket}/${key}`;
}
