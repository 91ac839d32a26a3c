/**
 * The Backend interface: one method per S3 operation casket models, named
 * after it. The embedded store (backends/fs) and the upstream proxy
 * (backends/s3) both implement it; the HTTP layer and the guard never know
 * which one they talk to.
 *
 * Contract every implementation keeps:
 * - ETags are casket's: SHA-256 of the content, 64 lowercase hex digits, or
 *   `<sha256 of the part digests>-<N>` for multipart objects. Never quoted here;
 *   quoting and the `-1` client form are the HTTP layer's business.
 * - A write commits only after `payload.stream` ended clean (it errors when a
 *   signature, checksum or length check fails) and only if `condition` holds
 *   at the moment of commit — checked and applied in one atomic step.
 * - A refused condition throws `ConditionFailed` with the current object.
 */
import type { CorsRule } from '../vocabulary/cors.js';
import type { LifecycleRule } from '../vocabulary/lifecycle.js';
import type { Readable } from 'node:stream';
import type { ChecksumAlgorithm, ChecksumType } from '../vocabulary/checksums.js';
import type { IndexEntry } from '../state/types.js';

/** Standard representation headers stored with an object and returned on GET/HEAD. */
export interface ObjectHeaders {
  contentType?: string;
  contentEncoding?: string;
  contentDisposition?: string;
  contentLanguage?: string;
  cacheControl?: string;
  expires?: string;
  /**
   * SSE-S3 / SSE-KMS as the upstream keeps them (issue 44): sent up with a
   * write, read back from its answers. Never set on the embedded store,
   * which refuses these headers (src/s3/encryption.ts).
   */
  serverSideEncryption?: string;
  sseKmsKeyId?: string;
  sseKmsContext?: string;
  bucketKeyEnabled?: string;
  /**
   * SSE-C as the upstream answers it: the algorithm and the key's MD5 (never
   * the key, which travels only with its own request: backends/customer-key.ts).
   */
  sseCustomerAlgorithm?: string;
  sseCustomerKeyMd5?: string;
  /**
   * Object Lock as the upstream keeps it (issue 44): sent up with a write,
   * read back from its GET/HEAD answers. Only in front of an upstream; the
   * embedded store refuses these headers (src/s3/passthrough.ts).
   */
  objectLockMode?: string;
  objectLockRetainUntilDate?: string;
  objectLockLegalHold?: string;
  /** How many tags the upstream holds for this version (x-amz-tagging-count, answered by GET/HEAD only). */
  taggingCount?: string;
  /** When the upstream's lifecycle rules expire this version (x-amz-expiration, answered by PutObject, GET and HEAD). */
  expiration?: string;
  /**
   * Tags and ACL a write asks for (x-amz-tagging, x-amz-acl, x-amz-grant-*):
   * sent up with the write and never answered back — the upstream answers
   * them through x-amz-tagging-count, GetObjectTagging and GetObjectAcl.
   */
  tagging?: string;
  acl?: string;
  grantFullControl?: string;
  grantRead?: string;
  grantReadAcp?: string;
  grantWriteAcp?: string;
}

/** Each ObjectHeaders field and the HTTP header it is stored from and answered as. */
export const OBJECT_HEADER_NAMES: ReadonlyArray<readonly [keyof ObjectHeaders, string]> = [
  ['contentType', 'content-type'],
  ['contentEncoding', 'content-encoding'],
  ['contentDisposition', 'content-disposition'],
  ['contentLanguage', 'content-language'],
  ['cacheControl', 'cache-control'],
  ['expires', 'expires'],
];

/**
 * The server-side encryption headers of SSE-S3 and SSE-KMS: PutObject,
 * CreateMultipartUpload and CopyObject send them, GetObject/HeadObject and
 * the write answer them (https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutObject.html).
 * A copy takes them from its own request, never from the source, as S3 does.
 */
export const ENCRYPTION_HEADER_NAMES: ReadonlyArray<readonly [keyof ObjectHeaders, string]> = [
  ['serverSideEncryption', 'x-amz-server-side-encryption'],
  ['sseKmsKeyId', 'x-amz-server-side-encryption-aws-kms-key-id'],
  ['sseKmsContext', 'x-amz-server-side-encryption-context'],
  ['bucketKeyEnabled', 'x-amz-server-side-encryption-bucket-key-enabled'],
  ['sseCustomerAlgorithm', 'x-amz-server-side-encryption-customer-algorithm'],
  ['sseCustomerKeyMd5', 'x-amz-server-side-encryption-customer-key-md5'],
];

/**
 * The Object Lock headers: PutObject, CreateMultipartUpload and CopyObject
 * send them, GetObject/HeadObject answer them
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-lock-managing.html).
 * A copy takes them from its own request, never from the source, as S3 does.
 */
export const LOCK_HEADER_NAMES: ReadonlyArray<readonly [keyof ObjectHeaders, string]> = [
  ['objectLockMode', 'x-amz-object-lock-mode'],
  ['objectLockRetainUntilDate', 'x-amz-object-lock-retain-until-date'],
  ['objectLockLegalHold', 'x-amz-object-lock-legal-hold'],
];

/**
 * What a write asks of the upstream and never gets back under the same name
 * (API_PutObject: x-amz-tagging, x-amz-acl, x-amz-grant-*).
 */
export const WRITE_ONLY_HEADER_NAMES: ReadonlyArray<readonly [keyof ObjectHeaders, string]> = [
  ['tagging', 'x-amz-tagging'],
  ['acl', 'x-amz-acl'],
  ['grantFullControl', 'x-amz-grant-full-control'],
  ['grantRead', 'x-amz-grant-read'],
  ['grantReadAcp', 'x-amz-grant-read-acp'],
  ['grantWriteAcp', 'x-amz-grant-write-acp'],
];

/** What GET/HEAD answer of a version besides the stored headers: its lock, its tag count, its expiry (API_GetObject). */
export const ANSWERED_HEADER_NAMES: ReadonlyArray<readonly [keyof ObjectHeaders, string]> = [...LOCK_HEADER_NAMES, ['taggingCount', 'x-amz-tagging-count'], ['expiration', 'x-amz-expiration']];

/**
 * CreateBucket's headers an upstream creates the bucket with
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_CreateBucket.html).
 */
export const BUCKET_CREATE_HEADERS: readonly string[] = [
  'x-amz-bucket-object-lock-enabled',
  'x-amz-acl',
  'x-amz-grant-full-control',
  'x-amz-grant-read',
  'x-amz-grant-read-acp',
  'x-amz-grant-write',
  'x-amz-grant-write-acp',
  'x-amz-object-ownership',
];

export interface ObjectInfo {
  bucket: string;
  key: string;
  /** casket ETag, unquoted. */
  etag: string;
  size: number;
  lastModified: Date;
  headers: ObjectHeaders;
  /** x-amz-meta-* with the prefix removed, names lowercased. */
  metadata: Record<string, string>;
  /** Sizes of the parts of a multipart object, in order (for ?partNumber=). */
  partSizes?: number[];
  /** The agent whose write made this version, when known. */
  writer?: string;
  /** The checksum the object was uploaded with (x-amz-checksum-*), when it had one. */
  checksum?: ObjectChecksum;
  /** Base64 checksums of the parts of a multipart object with a checksum, in order (GetObjectAttributes). */
  partChecksums?: string[];
  /**
   * The version's id (x-amz-version-id; `null` for the null version), when
   * the bucket has versioning Enabled or Suspended; absent in a bucket that
   * never had it, where S3 answers no version id (docs/design.md §10).
   */
  versionId?: string;
  /** Set on a version read by its id that is not the key's current one (a read stamp is only for the current version). */
  noncurrent?: boolean;
  /** The upstream's owner of the object, as a listing names it (in front of an upstream, whose ACLs pass through). */
  owner?: { ID: string; DisplayName: string };
}

/** A bucket's versioning state (API_PutBucketVersioning); undefined: never set. */
export type VersioningStatus = 'Enabled' | 'Suspended';

/** What DeleteObject did (API_DeleteObject response headers). */
/** An object a lifecycle Expiration rule says is due, as judged: at this ETag, by this rule ('' for a rule without an ID). */
export interface ExpiredObject {
  bucket: string;
  key: string;
  etag: string;
  ruleId: string;
}

export interface DeleteResult {
  /** The version that stopped being current (null: the key had none). */
  replaced: ObjectInfo | null;
  /** The delete marker made, or the version removed by id (x-amz-version-id). */
  versionId?: string;
  /** A delete marker was made, or the version removed by id was one (x-amz-delete-marker). */
  deleteMarker?: boolean;
}

export interface ListVersionsParams {
  prefix: string;
  delimiter?: string;
  keyMarker?: string;
  versionIdMarker?: string;
  maxKeys: number;
}

/** One entry of ListObjectVersions: a version (info set) or a delete marker. */
export interface VersionEntry {
  key: string;
  versionId: string;
  isLatest: boolean;
  lastModified: Date;
  /** Absent for a delete marker. */
  info?: ObjectInfo;
  writer?: string;
  /** The upstream's owner of the version (in front of an upstream, whose ACLs pass through). */
  owner?: { ID: string; DisplayName: string };
}

export interface ListVersionsResult {
  entries: VersionEntry[];
  commonPrefixes: string[];
  isTruncated: boolean;
  nextKeyMarker?: string;
  nextVersionIdMarker?: string;
  /** In front of an upstream: its page, and for each entry the spans of its bytes the answer may copy (undefined: written from values). */
  listed?: { page: Buffer; spans: Array<VersionSpans | undefined> };
}

/**
 * An object's additional checksum, as S3 answers it with
 * x-amz-checksum-mode: ENABLED (https://docs.aws.amazon.com/AmazonS3/latest/userguide/checking-object-integrity.html).
 */
export interface ObjectChecksum {
  algorithm: ChecksumAlgorithm;
  type: ChecksumType;
  /** Base64 of the digest; a COMPOSITE one ends in `-<part count>`. */
  value: string;
}

/** The checksum a multipart upload was created with (x-amz-checksum-algorithm, x-amz-checksum-type). */
export interface UploadChecksum {
  algorithm: ChecksumAlgorithm;
  type: ChecksumType;
}

/** One part's checksum (the upload's algorithm, or the one the part carried when the upload named none). */
export interface PartChecksum {
  algorithm: ChecksumAlgorithm;
  /** Base64 of the digest. */
  value: string;
}

export interface BucketInfo {
  name: string;
  creationDate: Date;
}

/**
 * What must hold at commit time. `etags` are unquoted casket ETags (the guard
 * has already normalised quotes and the `-1` client form).
 */
export type CommitCondition = (
  | { type: 'none' }
  /** Current version must exist and have one of these ETags ('*': any). */
  | { type: 'if-match'; etags: string[] | '*' }
  /**
   * Without `etags`: the key must not exist (If-None-Match: *). With them: the
   * current version, if any, must have none of these ETags (If-None-Match:
   * "etag", honoured as Ceph RGW and MinIO do; docs/design.md §3).
   */
  | { type: 'if-none-match'; etags?: string[] }
) &
  VersionCondition;

/**
 * DeleteObject's `x-amz-if-match-size` / `x-amz-if-match-last-modified-time`
 * (DeleteObjects: `<Size>`, `<LastModifiedTime>`), checked with the rest of
 * the condition at commit: a current version must have this size / this
 * modification time (whole seconds, as HTTP dates carry it); an absent key
 * satisfies them (https://docs.aws.amazon.com/AmazonS3/latest/API/API_DeleteObject.html).
 */
export interface VersionCondition {
  size?: number;
  lastModified?: Date;
}

export interface WriteOptions {
  condition: CommitCondition;
  /** Agent to record as the writer of the new version. */
  writer?: string;
  /**
   * Where an upstream backend puts the ETag-index entries of this write
   * instead of writing them to the state store itself: the caller records
   * them with the write, in one round trip (StateStore.recordCommittedWrite).
   */
  index?: IndexEntry[];
}

export interface DeleteOptions extends WriteOptions {
  /** DeleteObject ?versionId=: remove that version for good rather than hide the key behind a delete marker. */
  versionId?: string;
  /** x-amz-bypass-governance-retention: true, for an upstream with Object Lock (the embedded store has none). */
  bypassGovernanceRetention?: true;
}

/** A request body on its way in. See auth/payload.ts. */
export interface Payload {
  /** Decoded bytes. Errors instead of ending when any integrity check fails. */
  stream: Readable;
  /** Valid once `stream` has ended clean. */
  digest(): PayloadDigest;
}

export interface PayloadDigest {
  sha256: Buffer;
  /** Present when the payload was asked to compute it (UploadPart, Content-MD5). */
  md5?: Buffer;
  size: number;
  /** The x-amz-checksum-* the body carried (verified), or the one the payload was asked to compute. */
  checksum?: { algorithm: ChecksumAlgorithm; value: Buffer };
}

export interface CompleteOptions extends WriteOptions {
  /**
   * The object checksum the CompleteMultipartUpload request stated
   * (x-amz-checksum-<alg>, and x-amz-checksum-type when sent): the one made
   * must be it (BadDigest, InvalidRequest for another algorithm or type).
   */
  expectedChecksum?: { algorithm: ChecksumAlgorithm; value: string; type?: ChecksumType };
}

export interface PutObjectOptions extends WriteOptions {
  headers: ObjectHeaders;
  metadata: Record<string, string>;
  /**
   * SHA-256 (hex) the body must have, when declared before the body (a
   * signed literal x-amz-content-sha256, x-amz-checksum-sha256, a copy
   * source's ETag). The payload still verifies it; an upstream backend may
   * use it to stream the body through instead of receiving it first.
   */
  declaredSha256?: string;
  /** Decoded length the body must have, when known before the body. */
  contentLength?: number;
  /** The x-amz-checksum-* header the request carried (the payload verifies it): known before the body. */
  declaredChecksum?: PartChecksum;
}

/** A CopyObject the upstream makes itself (Backend.copyObject): what the destination gets besides the source's bytes. */
export interface CopyObjectOptions extends WriteOptions {
  headers: ObjectHeaders;
  metadata: Record<string, string>;
  /** The source's full-object checksum, which is the copy's (the copy keeps its algorithm). */
  checksum?: ObjectChecksum;
}

/** The copy source as read before the copy: its casket ETag is what the upstream must still hold. */
export interface CopyObjectSource {
  bucket: string;
  key: string;
  info: ObjectInfo;
}

/**
 * What UploadPart knows of a part before its body (an upstream backend may
 * stream the part through instead of receiving it first; the embedded store
 * ignores it). The payload still verifies both.
 */
export interface UploadPartOptions {
  /** Decoded length the part must have, when the request states it. */
  contentLength?: number;
  /** SHA-256 (hex) the part must have: a signed literal x-amz-content-sha256, or x-amz-checksum-sha256. */
  declaredSha256?: string;
}

export interface ByteRange {
  /** Inclusive. */
  start: number;
  /** Inclusive. */
  end: number;
}

export interface ObjectReader {
  info: ObjectInfo;
  /** Opens the bytes of exactly this version (the whole object, or a range of it). */
  open(range?: ByteRange): Readable;
  /**
   * Small objects the backend already holds in memory: the same bytes as
   * open(), without a stream, so the response goes out in one write.
   */
  inline?(range?: ByteRange): Buffer;
  /**
   * The caller will open() no more (a 304, a 412, a refused copy): free what
   * the reader holds for it — pinned blobs, a held upstream connection — now
   * rather than when its lease runs out. Streams already opened are not affected.
   */
  release?(): void;
}

export interface ListObjectsParams {
  prefix: string;
  delimiter?: string;
  /** List keys strictly after this one (marker / start-after / continuation). */
  after?: string;
  maxKeys: number;
}

export interface ListObjectsResult {
  objects: ObjectInfo[];
  commonPrefixes: string[];
  isTruncated: boolean;
  /** Last key or common prefix returned: where the next page starts after. */
  nextAfter?: string;
  /**
   * In front of an upstream: its page as it came, and for each of `objects`
   * (same index) where that entry's fields stand in it, so the answer copies
   * those bytes through instead of writing them again (issue 42 item 2).
   */
  listed?: { page: Buffer; spans: Array<ListedSpans | undefined> };
}

/**
 * Byte ranges [start, end) in an upstream's ListBucketResult of one entry's
 * escaped character data, each set only when those bytes are exactly what
 * casket's XML writer would write for the value (-1 otherwise): Key,
 * LastModified, Size, and the inside of <Owner>.
 */
export interface ListedSpans {
  key: number;
  keyEnd: number;
  lastModified: number;
  lastModifiedEnd: number;
  size: number;
  sizeEnd: number;
  owner: number;
  ownerEnd: number;
}

/** ListedSpans of a ListVersionsResult entry (<Version>, <DeleteMarker>): its VersionId too. */
export interface VersionSpans extends ListedSpans {
  versionId: number;
  versionIdEnd: number;
}

export interface MultipartUploadInfo {
  bucket: string;
  key: string;
  uploadId: string;
  initiated: Date;
  headers: ObjectHeaders;
  metadata: Record<string, string>;
  checksum?: UploadChecksum;
}

export interface PartInfo {
  partNumber: number;
  /** MD5 hex of the part, as S3 reports part ETags (clients check it). */
  etag: string;
  size: number;
  lastModified: Date;
  /** SHA-256 of the part: the multipart object ETag is built from these. */
  sha256: Buffer;
  checksum?: PartChecksum;
}

export interface CompletedPart {
  partNumber: number;
  /** Unquoted part ETag as the client sent it back. */
  etag: string;
  /** A part checksum the client named (<ChecksumCRC32> ...): must be the part's. */
  checksum?: PartChecksum;
}

export interface ListPartsParams {
  partNumberMarker: number;
  maxParts: number;
}

export interface ListPartsResult {
  upload: MultipartUploadInfo;
  parts: PartInfo[];
  isTruncated: boolean;
  nextPartNumberMarker?: number;
}

export interface ListUploadsParams {
  prefix: string;
  delimiter?: string;
  keyMarker?: string;
  uploadIdMarker?: string;
  maxUploads: number;
}

export interface ListUploadsResult {
  uploads: MultipartUploadInfo[];
  commonPrefixes: string[];
  isTruncated: boolean;
  nextKeyMarker?: string;
  nextUploadIdMarker?: string;
}

/**
 * The copy source is no longer the version Backend.copyObject was given: the
 * caller copies again from what is current now (nothing was written).
 */
export class CopySourceChanged extends Error {
  constructor() {
    super('the copy source changed before the upstream copied it');
    this.name = 'CopySourceChanged';
  }
}

/** Thrown by a write whose CommitCondition does not hold at commit time. */
export class ConditionFailed extends Error {
  constructor(
    readonly current: ObjectInfo | null,
    /**
     * The ETag the refused write would have made, when the backend knew it
     * (null: a delete). A failed condition is a refusal whatever the bytes
     * (docs/design.md §3); the caller uses this to tell the client that the current
     * content is byte-for-byte what it sent, and to recognise an exact retry.
     */
    readonly attemptedETag?: string | null,
  ) {
    super(current ? `condition failed; current ETag ${current.etag}` : 'condition failed; no such key');
    this.name = 'ConditionFailed';
  }
}

/*
 * Other failures are thrown as S3Error (s3/errors.ts, a leaf module every layer
 * may import): NoSuchBucket, NoSuchKey, NoSuchUpload, BucketNotEmpty,
 * InvalidPart, InvalidPartOrder, EntityTooSmall, ...
 */

/** A request casket does not model, verified and bounded, for an upstream to answer. */
export interface ForwardRequest {
  method: string;
  bucket: string;
  key?: string;
  /** Query parameters as received, decoded; '' for valueless ones (`?tagging`). */
  query: Record<string, string>;
  /** Only end-to-end headers the operation needs (content-type, content-md5, x-amz-*). */
  headers: Record<string, string>;
  body?: Buffer;
}

export interface ForwardResponse {
  status: number;
  headers: Record<string, string>;
  body: Readable;
}

export interface Backend {
  listBuckets(): Promise<BucketInfo[]>;
  /**
   * Idempotent for its owner: resolves 'exists' when the bucket is already
   * there. `headers`: what an upstream creates the bucket with (Object Lock,
   * ACL, ownership: BUCKET_CREATE_HEADERS); the embedded store takes none.
   */
  createBucket(bucket: string, headers?: Record<string, string>): Promise<'created' | 'exists'>;
  /** Throws NoSuchBucket. */
  headBucket(bucket: string): Promise<BucketInfo>;
  /**
   * Why SSE-C requests cannot be honoured here, or undefined when they are
   * (an upstream that encrypts with the caller's key and refuses reads without
   * it). Absent: never (the embedded store does not encrypt).
   */
  customerKeysRefusal?(): Promise<string | undefined>;
  /** Throws NoSuchBucket, BucketNotEmpty (objects remain); aborts in-progress multipart uploads, as S3 does. */
  deleteBucket(bucket: string): Promise<void>;

  /**
   * The current version; null when the key does not exist (or its current
   * version is a delete marker); throws NoSuchBucket. With `versionId`: that
   * version, or throws NoSuchVersion, or MethodNotAllowed for a delete marker.
   */
  headObject(bucket: string, key: string, versionId?: string): Promise<ObjectInfo | null>;
  /** As headObject, with the bytes. */
  getObject(bucket: string, key: string, versionId?: string): Promise<ObjectReader | null>;
  putObject(bucket: string, key: string, payload: Payload, options: PutObjectOptions): Promise<ObjectInfo>;
  /** Deleting a missing key succeeds (in a versioned bucket it still makes a delete marker). */
  deleteObject(bucket: string, key: string, options: DeleteOptions): Promise<DeleteResult>;
  listObjects(bucket: string, params: ListObjectsParams): Promise<ListObjectsResult>;

  /** `writer`: the agent starting the upload (an upstream must store it now; the embedded store takes it at completion). */
  createMultipartUpload(bucket: string, key: string, headers: ObjectHeaders, metadata: Record<string, string>, writer?: string, checksum?: UploadChecksum): Promise<MultipartUploadInfo>;
  /** `payload` must be asked for its MD5 (the part ETag). */
  uploadPart(bucket: string, key: string, uploadId: string, partNumber: number, payload: Payload, options?: UploadPartOptions): Promise<PartInfo>;
  completeMultipartUpload(bucket: string, key: string, uploadId: string, parts: CompletedPart[], options: CompleteOptions): Promise<ObjectInfo>;
  abortMultipartUpload(bucket: string, key: string, uploadId: string): Promise<void>;
  listParts(bucket: string, key: string, uploadId: string, params: ListPartsParams): Promise<ListPartsResult>;
  listMultipartUploads(bucket: string, params: ListUploadsParams): Promise<ListUploadsResult>;

  /**
   * Upstream backends: whether a CopyObject into this bucket can be ONE
   * upstream CopyObject — the upstream pins the source
   * (x-amz-copy-source-if-match) and, when the write is `conditioned`,
   * enforces If-Match and If-None-Match: * on the destination
   * (capabilities.ts). Otherwise the caller copies the bytes (GET + guarded PUT).
   */
  copiesInOneRequest?(bucket: string, conditioned: boolean): Promise<boolean>;
  /**
   * The upstream copies `source` (the version `source.info` describes, or
   * CopySourceChanged) to the key, under `options.condition`; the
   * destination's ETag is the source's.
   */
  copyObject?(source: CopyObjectSource, bucket: string, key: string, options: CopyObjectOptions): Promise<ObjectInfo>;
  /**
   * Upstream backends: sends an operation casket does not model upstream and
   * streams the answer back. Absent on the embedded store (501 NotImplemented).
   */
  forward?(request: ForwardRequest): Promise<ForwardResponse>;
  /**
   * The bucket's CORS rules (null: none), kept by the embedded store. Absent
   * in front of an upstream, which keeps its own: casket forwards
   * Put/Get/DeleteBucketCors there and reads the rules back (s3/cors.ts).
   */
  getBucketCors?(bucket: string): Promise<CorsRule[] | null>;
  /** Replaces the bucket's CORS rules; null deletes them. */
  putBucketCors?(bucket: string, rules: CorsRule[] | null): Promise<void>;
  /**
   * The bucket's AbortIncompleteMultipartUpload lifecycle rules (null: none),
   * kept and enforced by the embedded store. Absent in front of an upstream,
   * which enforces its own: casket forwards the configuration there.
   */
  getBucketLifecycle?(bucket: string): Promise<LifecycleRule[] | null>;
  /** Replaces the bucket's lifecycle rules; null deletes them. */
  putBucketLifecycle?(bucket: string, rules: LifecycleRule[] | null): Promise<void>;
  /** Bytes held by the parts of uploads not completed (embedded store). */
  incompleteUploadBytes?(): number;
  /**
   * Hands each sweep's judge of the objects due under Expiration rules to
   * `expire`, which deletes them through the guarded write path
   * (s3/lifecycle-expiration.ts) and never rejects (it logs its failures).
   * Embedded store only; an upstream expires objects by itself.
   */
  /**
   * The x-amz-expiration value the bucket's Expiration rules give this
   * current version (`expiry-date="…", rule-id="…"`), or undefined. Embedded
   * store only: an upstream answers its own (ObjectHeaders.expiration).
   */
  objectExpiration?(info: ObjectInfo): string | undefined;
  setExpirer?(expire: (judge: () => ExpiredObject[]) => Promise<void>): void;

  /**
   * S3 versioning kept by the embedded store (docs/design.md §10). Absent in
   * front of an upstream, which keeps its own: Get/PutBucketVersioning go there.
   */
  getBucketVersioning?(bucket: string): Promise<VersioningStatus | undefined>;
  putBucketVersioning?(bucket: string, status: VersioningStatus): Promise<void>;
  /**
   * Every version and delete marker, keys in order, each key's newest first;
   * undefined when the bucket never had versioning (then each object is
   * listed once, as its null version, from listObjects).
   */
  listObjectVersions?(bucket: string, params: ListVersionsParams): Promise<ListVersionsResult | undefined>;
  /** The id of the delete marker that is the key's current version, if it is one (404 headers of GET/HEAD). */
  currentDeleteMarker?(bucket: string, key: string): Promise<string | undefined>;

  close(): Promise<void>;
}
