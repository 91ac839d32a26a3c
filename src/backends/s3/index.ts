/**
 * The `s3` backend: casket in front of any S3-compatible bucket (AWS S3,
 * MinIO, R2, Ceph RGW, moto...). docs/design.md §1–2.
 *
 * Every Backend method maps to the upstream's own S3 operation
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_Operations_Amazon_Simple_Storage_Service.html),
 * re-signed with the upstream's credentials (client.ts). The parts, in the
 * order a request meets them:
 *
 *   buckets.ts       ListBuckets, CreateBucket, HeadBucket, DeleteBucket
 *   objects.ts       HeadObject, GetObject, PutObject, DeleteObject
 *   readers.ts       the ObjectReaders GetObject hands out
 *   listing.ts       ListObjects, ETags rewritten to casket's
 *   multipart.ts     the multipart upload operations
 *   commit.ts        every write's atomic commit under its CommitCondition
 *   versions.ts      the current version of a key (HEAD), and the last one seen
 *   version-reads.ts S3 versioning passed through: ?versionId reads, ListObjectVersions
 *   bucket-versioning.ts which buckets are versioned (their conditions are casket's to check)
 *   etags.ts         casket's SHA-256 ETag for an upstream version (metadata, index, computed)
 *   capabilities.ts  which conditions the upstream enforces (probed at start)
 *   spool.ts         bodies received whole before they go upstream
 *   forward.ts       operations casket does not model, sent on as they are
 *   client.ts        the signed HTTP client, keep-alive pool, timeouts
 */
import { join } from 'node:path';
import type { StateStore } from '../../state/types.js';
import type {
  Backend,
  BucketInfo,
  CompletedPart,
  CompleteOptions,
  DeleteOptions,
  DeleteResult,
  ForwardRequest,
  ForwardResponse,
  ListObjectsParams,
  ListObjectsResult,
  ListPartsParams,
  ListPartsResult,
  ListUploadsParams,
  ListUploadsResult,
  ListVersionsParams,
  ListVersionsResult,
  MultipartUploadInfo,
  ObjectHeaders,
  ObjectInfo,
  ObjectReader,
  PartInfo,
  Payload,
  PutObjectOptions,
  UploadChecksum,
  UploadPartOptions,
} from '../types.js';
import * as buckets from './buckets.js';
import { probeCapabilities, type Capabilities, type ProbeResult } from './capabilities.js';
import { UpstreamClient } from './client.js';
import { Committer } from './commit.js';
import { ETagResolver } from './etags.js';
import { forwardUpstream } from './forward.js';
import { listObjects } from './listing.js';
import { Multipart } from './multipart.js';
import { Objects } from './objects.js';
import { Spool } from './spool.js';
import { Versions } from './versions.js';
import { VersionReads } from './version-reads.js';
import { BucketVersioning } from './bucket-versioning.js';
import { NOTHING_ENFORCED } from './capabilities.js';

export { probeCapabilities, type Capabilities, type ProbeResult } from './capabilities.js';
export { forwardUpstream };

export interface S3BackendOptions {
  url: string;
  accessKey: string;
  secretKey: string;
  region: string;
  state: StateStore;
  /** Directory for spooled bodies (emptied at open). */
  spoolDir: string;
  /**
   * Several casket processes share this upstream: writes the upstream cannot
   * make atomic itself are refused instead of serialized in-process.
   */
  replicas?: boolean;
  /** Skip the probe and use these (configuration). */
  capabilities?: Capabilities;
  connectTimeoutMs?: number;
  idleTimeoutMs?: number;
  /** Most sockets open to the upstream at once (default 256). */
  maxSockets?: number;
  /** Upstream latency, per method (metrics). */
  observe?: (method: string, seconds: number) => void;
  /** Called once the probe has run. */
  onProbe?: (result: ProbeResult) => void;
  /** Called when the probe failed (it is retried on the next write). */
  onProbeError?: (error: unknown) => void;
}

export function openS3Backend(options: S3BackendOptions): S3Backend {
  return new S3Backend(options);
}

export class S3Backend implements Backend {
  readonly client: UpstreamClient;
  private readonly spool: Spool;
  private readonly objects: Objects;
  private readonly multipart: Multipart;
  private readonly etags: ETagResolver;
  private readonly versions: Versions;
  private readonly versionReads: VersionReads;
  private readonly bucketVersioning: BucketVersioning;
  private probe: Promise<Capabilities> | undefined;

  constructor(private readonly options: S3BackendOptions) {
    this.client = new UpstreamClient({
      url: options.url,
      accessKey: options.accessKey,
      secretKey: options.secretKey,
      region: options.region,
      ...(options.connectTimeoutMs !== undefined && { connectTimeoutMs: options.connectTimeoutMs }),
      ...(options.idleTimeoutMs !== undefined && { idleTimeoutMs: options.idleTimeoutMs }),
      ...(options.maxSockets !== undefined && { maxSockets: options.maxSockets }),
      ...(options.observe && { observe: options.observe }),
    });
    this.spool = new Spool(options.spoolDir);
    const capabilities = () => this.capabilities();
    this.etags = new ETagResolver(this.client, options.state, async () => (await capabilities()).ifMatchPut);
    this.versions = new Versions(this.client, this.etags);
    this.versionReads = new VersionReads(this.client, this.etags);
    this.bucketVersioning = new BucketVersioning(this.client);
    // A versioned bucket is trusted with no condition (bucket-versioning.ts).
    const committer = new Committer(this.versions, async (bucket) => ((await this.bucketVersioning.isVersioned(bucket)) ? NOTHING_ENFORCED : capabilities()), options.replicas ?? false);
    this.objects = new Objects(this.client, this.spool, this.etags, this.versions, committer, capabilities);
    this.multipart = new Multipart(this.client, options.state, this.spool, this.etags, this.versions, committer);
    if (options.capabilities) this.probe = Promise.resolve(options.capabilities);
    else void this.capabilities().catch(() => {});
  }

  /** What the upstream enforces: probed once (retried after a failure). */
  capabilities(): Promise<Capabilities> {
    this.probe ??= probeCapabilities(this.client).then(
      (result) => {
        this.options.onProbe?.(result);
        return result.capabilities;
      },
      (error: unknown) => {
        this.probe = undefined;
        this.options.onProbeError?.(error);
        throw error;
      },
    );
    return this.probe;
  }

  /** Spooled bodies on disk right now (tests). */
  get spooledFiles(): number {
    return this.spool.count();
  }

  listBuckets(): Promise<BucketInfo[]> {
    return buckets.listBuckets(this.client);
  }

  async createBucket(bucket: string, headers?: Record<string, string>): Promise<'created' | 'exists'> {
    // Object Lock turns versioning on with the bucket (API_CreateBucket): learnt before, the safe side.
    const locked = headers?.['x-amz-bucket-object-lock-enabled']?.toLowerCase() === 'true';
    if (locked) this.bucketVersioning.learned(bucket);
    const outcome = await buckets.createBucket(this.client, this.options.region, bucket, headers);
    if (outcome === 'created' && !locked) this.bucketVersioning.created(bucket);
    return outcome;
  }

  headBucket(bucket: string): Promise<BucketInfo> {
    return buckets.headBucket(this.client, bucket);
  }

  deleteBucket(bucket: string): Promise<void> {
    this.bucketVersioning.forget(bucket);
    return buckets.deleteBucket(this.client, bucket, (uploadId) => this.options.state.deletePartDigests(uploadId).catch(() => {}));
  }

  async headObject(bucket: string, key: string, versionId?: string): Promise<ObjectInfo | null> {
    if (await this.byVersion(bucket, versionId)) return (await this.versionReads.head(bucket, key, versionId!)).info;
    return this.objects.headObject(bucket, key);
  }

  async getObject(bucket: string, key: string, versionId?: string): Promise<ObjectReader | null> {
    if (await this.byVersion(bucket, versionId)) return this.versionReads.get(bucket, key, versionId!);
    return this.objects.getObject(bucket, key);
  }

  /**
   * Whether a read names a version the upstream must find. In a bucket never
   * versioned, "null" is the one version there is — the current object — and
   * is read as such: moto answers 400 to `?versionId=null` there, where AWS
   * serves the object.
   */
  private async byVersion(bucket: string, versionId: string | undefined): Promise<boolean> {
    if (versionId === undefined) return false;
    return versionId !== 'null' || (await this.bucketVersioning.isVersioned(bucket));
  }

  listObjectVersions(bucket: string, params: ListVersionsParams): Promise<ListVersionsResult | undefined> {
    return this.versionReads.list(bucket, params);
  }

  currentDeleteMarker(bucket: string, key: string): Promise<string | undefined> {
    return this.versionReads.currentDeleteMarker(bucket, key);
  }

  putObject(bucket: string, key: string, payload: Payload, options: PutObjectOptions): Promise<ObjectInfo> {
    return this.objects.putObject(bucket, key, payload, options);
  }

  deleteObject(bucket: string, key: string, options: DeleteOptions): Promise<DeleteResult> {
    return this.objects.deleteObject(bucket, key, options);
  }

  listObjects(bucket: string, params: ListObjectsParams): Promise<ListObjectsResult> {
    return listObjects(this.client, this.etags, this.versions, bucket, params);
  }

  createMultipartUpload(bucket: string, key: string, headers: ObjectHeaders, metadata: Record<string, string>, writer?: string, checksum?: UploadChecksum): Promise<MultipartUploadInfo> {
    return this.multipart.createMultipartUpload(bucket, key, headers, metadata, writer, checksum);
  }

  uploadPart(bucket: string, key: string, uploadId: string, partNumber: number, payload: Payload, options?: UploadPartOptions): Promise<PartInfo> {
    return this.multipart.uploadPart(bucket, key, uploadId, partNumber, payload, options);
  }

  completeMultipartUpload(bucket: string, key: string, uploadId: string, parts: CompletedPart[], options: CompleteOptions): Promise<ObjectInfo> {
    return this.multipart.completeMultipartUpload(bucket, key, uploadId, parts, options);
  }

  abortMultipartUpload(bucket: string, key: string, uploadId: string): Promise<void> {
    return this.multipart.abortMultipartUpload(bucket, key, uploadId);
  }

  listParts(bucket: string, key: string, uploadId: string, params: ListPartsParams): Promise<ListPartsResult> {
    return this.multipart.listParts(bucket, key, uploadId, params);
  }

  listMultipartUploads(bucket: string, params: ListUploadsParams): Promise<ListUploadsResult> {
    return this.multipart.listMultipartUploads(bucket, params);
  }

  /** Operations casket does not model go upstream as they are, re-signed (s3/operations/unmodeled.ts). */
  async forward(request: ForwardRequest): Promise<ForwardResponse> {
    // Learnt before it is sent: a write racing the change is then checked by casket, the safe side.
    if (request.method === 'PUT' && request.key === undefined && 'versioning' in request.query) this.bucketVersioning.learned(request.bucket);
    return forwardUpstream(this.client, request);
  }

  async close(): Promise<void> {
    await this.probe?.catch(() => {});
    this.client.close();
  }
}

export function spoolDirFor(dataDir: string): string {
  return join(dataDir, 'spool');
}
