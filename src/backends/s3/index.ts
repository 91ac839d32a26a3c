/**
 * The `s3` backend: casket in front of any S3-compatible bucket (AWS S3,
 * MinIO, R2, Ceph RGW, moto...). DESIGN §1–2, issue 4.
 *
 * Every Backend method maps to the upstream's own S3 operation
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_Operations_Amazon_Simple_Storage_Service.html),
 * re-signed with the upstream's credentials (client.ts). What casket adds:
 *
 * - SHA-256 ETags (etags.ts): kept with the object and indexed by the
 *   upstream's ETag; objects written around casket get theirs computed once.
 * - GetObject is one upstream GET: its headers give the ObjectInfo, its body
 *   is what open() hands over (getObject).
 * - PutObject bodies whose SHA-256 and length are declared up front stream
 *   straight through, sent with that SHA-256 so the upstream itself refuses
 *   bytes that do not match, the last chunk held back until casket's own
 *   checks passed (client.ts HoldBack). Other bodies are received first
 *   (spool.ts: ≤ 64 KiB in memory, else a file) until the payload ended clean
 *   and verified. Either way a client that disconnects or fails a check
 *   leaves nothing upstream.
 * - Atomic commits. A CommitCondition is translated to the upstream's own
 *   conditional request: 'if-match' casket ETags → the current version's
 *   upstream ETag (it must carry one of those casket ETags: the version this
 *   process last saw of the key, else a HEAD) is sent as `If-Match` (quoted
 *   or not, as the upstream matches it);
 *   'if-none-match' → `If-None-Match: *`. A refusal (412, 409
 *   ConditionalRequestConflict, 404 NoSuchKey on If-Match) is re-evaluated
 *   against a fresh HEAD: the same casket ETag under a new upstream ETag is
 *   retried, anything else throws ConditionFailed with the fresh version.
 *   Which conditions the upstream enforces is probed at start-up
 *   (capabilities.ts). For the rest, casket serializes writes per key in this
 *   process (key-lock.ts) and checks, then writes — atomic for everything
 *   that goes through this casket process. With several replicas
 *   (`replicas: true`) that cannot be atomic, so such writes are refused with
 *   501 NotImplemented naming the missing upstream feature: never a silent
 *   check-then-write.
 * - Every write to a key (conditional or not) runs under that key's lock in
 *   this process, so an unconditional write can never slip between another
 *   write's check and its commit here.
 *
 * - A CompleteMultipartUpload retried after a lost response succeeds while its
 *   object is current (completed upload ids are kept in the state store).
 *
 * Known gaps: CreateMultipartUpload does not know the writing agent, so
 * multipart objects carry no casket-writer. A streamed PutObject body can be
 * sent once: when the upstream refuses it and a fresh look says the write
 * should be retried (the same content under a new upstream ETag), the client
 * gets 503 SlowDown and retries.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { S3Error } from '../../s3/errors.js';
import type { StateStore } from '../../state/types.js';
import {
  ConditionFailed,
  type Backend,
  type BucketInfo,
  type ByteRange,
  type CommitCondition,
  type CompletedPart,
  type ForwardRequest,
  type ForwardResponse,
  type ListObjectsParams,
  type ListObjectsResult,
  type ListPartsParams,
  type ListPartsResult,
  type ListUploadsParams,
  type ListUploadsResult,
  type MultipartUploadInfo,
  type ObjectHeaders,
  type ObjectInfo,
  type ObjectReader,
  type PartInfo,
  type Payload,
  type PutObjectOptions,
  type WriteOptions,
} from '../types.js';
import { NOTHING_ENFORCED, formatFor, probeCapabilities, unquote, type Capabilities, type ProbeResult } from './capabilities.js';
import { drain, errorFrom, errorFromText, readBytes, readText, rootOf, UpstreamClient, type UpstreamBody, type UpstreamRequest, type UpstreamResponse } from './client.js';
import { multipartETag } from '../etag.js';
import { ETagResolver, META_SHA256, META_WRITER, upstreamObjectHeaders, VersionChanged, type UpstreamObject } from './etags.js';
import { KeyLock } from './key-lock.js';
import { compareKeys, validateBucketName, validateKey } from '../../s3/names.js';
import { INLINE_LIMIT, Spool } from './spool.js';
import { Recent } from './recent.js';
import { forwardUpstream } from './forward.js';

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

type WriteKind = 'PutObject' | 'DeleteObject' | 'CompleteMultipartUpload';

/** What a write attempt reports back to the commit loop. */
const REFUSED = Symbol('refused');

/** The most times a write refused upstream is re-evaluated before giving up with the fresh state. */
const MAX_ATTEMPTS = 5;

/** Keys whose last seen version is remembered (lastSeen). */
const LAST_SEEN_ENTRIES = 50_000;

/** How long a GET's body waits for open() before it is released (the Backend interface cannot say "never": a 304 or 412 does not open). */
const READER_LEASE_MS = 30_000;

/**
 * A completed upload id is remembered in the state-store index under
 * (bucket, key, `<uploadId>#completed-upload`) — no upstream ETag contains
 * '#' — so a retried CompleteMultipartUpload succeeds on any replica.
 */
const COMPLETED_UPLOAD_SUFFIX = '#completed-upload';

export function openS3Backend(options: S3BackendOptions): S3Backend {
  return new S3Backend(options);
}

export class S3Backend implements Backend {
  readonly client: UpstreamClient;
  private readonly spool: Spool;
  private readonly etags: ETagResolver;
  private readonly lock = new KeyLock();
  /**
   * The version this process last saw of each key (HEAD, GET, its own
   * writes): a conditional write whose If-Match names it goes upstream with
   * that version's upstream ETag at once, no HEAD first. Only a hint: the
   * upstream's If-Match is the arbiter, and a stale entry costs a 412 and
   * then the HEAD that would have come first anyway.
   */
  private readonly lastSeen = new Recent<UpstreamObject>(LAST_SEEN_ENTRIES);
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
    this.etags = new ETagResolver(this.client, options.state, async () => (await this.capabilities()).ifMatchPut);
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

  // ---- buckets ----

  async listBuckets(): Promise<BucketInfo[]> {
    const { doc } = await this.client.xml({ method: 'GET' });
    const list = rootOf<{ Buckets?: { Bucket?: Array<{ Name?: string; CreationDate?: string }> } }>(doc).Buckets?.Bucket ?? [];
    return list
      .filter((b) => typeof b.Name === 'string' && !b.Name.startsWith('casket-probe-'))
      .map((b) => ({ name: b.Name!, creationDate: b.CreationDate ? new Date(b.CreationDate) : new Date(0) }));
  }

  async createBucket(bucket: string): Promise<'created' | 'exists'> {
    validateBucketName(bucket);
    const body =
      this.options.region === 'us-east-1'
        ? undefined
        : { data: Buffer.from(`<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><LocationConstraint>${this.options.region}</LocationConstraint></CreateBucketConfiguration>`) };
    const req: UpstreamRequest = { method: 'PUT', bucket, ...(body && { body }) };
    const res = await this.client.send(req);
    if (res.status < 300) {
      await drain(res);
      return 'created';
    }
    const error = await errorFrom(res, req);
    if (error.code === 'BucketAlreadyOwnedByYou') return 'exists';
    throw error;
  }

  async headBucket(bucket: string): Promise<BucketInfo> {
    const res = await this.client.send({ method: 'HEAD', bucket });
    await drain(res);
    if (res.status === 404) throw new S3Error('NoSuchBucket', { fields: { BucketName: bucket } });
    if (res.status >= 300) throw await errorFrom(res, { method: 'HEAD', bucket });
    return { name: bucket, creationDate: new Date(0) };
  }

  async deleteBucket(bucket: string): Promise<void> {
    await drain(await this.client.ok({ method: 'DELETE', bucket }));
  }

  // ---- objects ----

  async headObject(bucket: string, key: string): Promise<ObjectInfo | null> {
    return (await this.current(bucket, key))?.info ?? null;
  }

  /**
   * ONE upstream GET: its headers give the ObjectInfo, its body is kept for
   * open(). A small body (≤ 64 KiB) is read at once and served inline; a
   * larger one waits for open() (the whole object, or a range that covers
   * it) for at most READER_LEASE_MS, then is released. open() of a true
   * range, or a second open(), is a new ranged GET pinned to this version's
   * upstream ETag (If-Match), as before.
   */
  async getObject(bucket: string, key: string): Promise<ObjectReader | null> {
    validateKey(key);
    const form = (await this.capabilities().catch(() => NOTHING_ENFORCED)).ifMatchPut;
    for (let attempt = 0; ; attempt++) {
      const req: UpstreamRequest = { method: 'GET', bucket, key };
      const res = await this.client.send(req);
      if (res.status === 404) {
        const error = await errorFrom(res, req);
        if (error.code !== 'NoSuchKey') throw error;
        this.unseen(bucket, key);
        return null;
      }
      if (res.status >= 300) throw await errorFrom(res, req);
      if (res.headers['content-length'] === undefined || res.headers['content-encoding']?.includes('aws-chunked')) {
        // No length to build the ObjectInfo from: the HEAD way.
        res.body.destroy();
        const current = await this.current(bucket, key);
        if (!current) return null;
        return { info: current.info, open: (range) => this.openBody(bucket, key, current.upstreamETag, form, range) };
      }
      let current: UpstreamObject;
      try {
        current = await this.etags.resolve(bucket, key, res.headers);
      } catch (e) {
        res.body.destroy();
        if (e instanceof VersionChanged && attempt < MAX_ATTEMPTS) continue;
        throw e instanceof VersionChanged ? new S3Error('SlowDown', 'The object keeps changing upstream; please retry.') : e;
      }
      this.seen(bucket, key, current);
      const { info } = current;
      if (info.size <= INLINE_LIMIT) {
        const data = await readBytes(res, INLINE_LIMIT);
        if (data.length !== info.size) throw new S3Error('SlowDown', 'The object changed upstream while it was being read; please retry.');
        return inlineReader(info, data);
      }
      return this.heldReader(bucket, key, current, res, form);
    }
  }

  async putObject(bucket: string, key: string, payload: Payload, options: PutObjectOptions): Promise<ObjectInfo> {
    validateKey(key);
    const declared = options.declaredSha256?.toLowerCase();
    const length = options.contentLength;
    if (declared !== undefined && /^[0-9a-f]{64}$/.test(declared) && length !== undefined && Number.isSafeInteger(length) && length > INLINE_LIMIT) {
      // The SHA-256 and length are known before the body: stream it straight
      // through (client.ts HoldBack), once — a write refused upstream cannot be resent.
      let sent = false;
      const body = (): UpstreamBody => {
        if (sent) throw new S3Error('SlowDown', 'The object changed upstream while the body was being sent; please retry.');
        sent = true;
        return { stream: payload.stream, size: length, sha256: declared };
      };
      return this.put(bucket, key, options, declared, length, body);
    }
    const spooled = await this.spool.receive(payload);
    try {
      const { sha256, size } = spooled.digest;
      const etag = sha256.toString('hex');
      const body: UpstreamBody = 'data' in spooled.body ? { data: spooled.body.data, sha256: etag } : { file: spooled.body.file, size, sha256: etag };
      return await this.put(bucket, key, options, etag, size, () => body);
    } finally {
      await spooled.discard();
    }
  }

  /** PutObject upstream of a body whose SHA-256 (`etag`) and size are known, through the commit loop. */
  private put(bucket: string, key: string, options: PutObjectOptions, etag: string, size: number, body: () => UpstreamBody): Promise<ObjectInfo> {
    const headers: Record<string, string> = {
      ...upstreamObjectHeaders(options.headers, options.metadata),
      [`x-amz-meta-${META_SHA256}`]: etag,
      ...(options.writer !== undefined && { [`x-amz-meta-${META_WRITER}`]: options.writer }),
    };
    return this.commit(bucket, key, 'PutObject', options, etag, async (condition) => {
      const req: UpstreamRequest = { method: 'PUT', bucket, key, headers: { ...headers, ...condition }, body: body() };
      const res = await this.client.send(req);
      if (await refusedUpstream(res, req)) return REFUSED;
      const upstreamETag = unquote(res.headers.etag ?? '');
      const info: ObjectInfo = {
        bucket,
        key,
        etag,
        size,
        lastModified: res.headers.date ? new Date(res.headers.date) : new Date(),
        headers: options.headers,
        metadata: withoutCasketMeta(options.metadata),
        ...(options.writer !== undefined && { writer: options.writer }),
      };
      if (upstreamETag !== '') {
        await this.etags.remember(bucket, key, upstreamETag, etag);
        this.seen(bucket, key, { info, upstreamETag });
      } else this.unseen(bucket, key);
      return info;
    });
  }

  async deleteObject(bucket: string, key: string, options: WriteOptions): Promise<ObjectInfo | null> {
    validateKey(key);
    return this.commit(bucket, key, 'DeleteObject', options, null, async (condition, current) => {
      const req: UpstreamRequest = { method: 'DELETE', bucket, key, headers: condition };
      const res = await this.client.send(req);
      if (await refusedUpstream(res, req)) return REFUSED;
      this.unseen(bucket, key);
      return current?.info ?? null;
    }, true);
  }

  async listObjects(bucket: string, params: ListObjectsParams): Promise<ListObjectsResult> {
    const query: Record<string, string> = { 'list-type': '2', prefix: params.prefix, 'max-keys': String(params.maxKeys) };
    if (params.delimiter !== undefined && params.delimiter !== '') query.delimiter = params.delimiter;
    const after = startAfter(params);
    if (after !== undefined) query['start-after'] = after;
    if (params.maxKeys <= 0) {
      await this.headBucket(bucket);
      return { objects: [], commonPrefixes: [], isTruncated: false };
    }
    const { doc } = await this.client.xml({ method: 'GET', bucket, query });
    const result = rootOf<{
      Contents?: Array<{ Key?: string; ETag?: string; Size?: string; LastModified?: string }>;
      CommonPrefixes?: Array<{ Prefix?: string }>;
      IsTruncated?: string;
    }>(doc);
    const contents = (result.Contents ?? []).filter((c) => typeof c.Key === 'string');
    const objects = await mapLimit(contents, 8, async (c): Promise<ObjectInfo | undefined> => {
      const key = c.Key!;
      const upstreamETag = unquote(c.ETag ?? '');
      const size = Number(c.Size ?? 0);
      const lastModified = c.LastModified ? new Date(c.LastModified) : new Date(0);
      const known = await this.etags.indexed(bucket, key, upstreamETag);
      if (known) return { bucket, key, etag: known.etag, size, lastModified, headers: {}, metadata: {}, ...(known.partSizes && { partSizes: known.partSizes }) };
      // Not indexed (written around casket, or by another replica): HEAD, then compute if need be.
      const current = await this.current(bucket, key);
      return current?.info; // undefined: deleted since the listing
    });
    const commonPrefixes = (result.CommonPrefixes ?? []).map((p) => p.Prefix).filter((p): p is string => typeof p === 'string');
    const kept = objects.filter((o): o is ObjectInfo => o !== undefined);
    const isTruncated = result.IsTruncated === 'true';
    const last = [...kept.map((o) => o.key), ...commonPrefixes].sort(compareKeys).at(-1);
    return { objects: kept, commonPrefixes, isTruncated, ...(last !== undefined && { nextAfter: last }) };
  }

  // ---- multipart ----

  async createMultipartUpload(bucket: string, key: string, headers: ObjectHeaders, metadata: Record<string, string>, writer?: string): Promise<MultipartUploadInfo> {
    validateKey(key);
    // Metadata cannot change after completion: the writer goes on at the start.
    const upstreamHeaders = { ...upstreamObjectHeaders(headers, metadata), ...(writer !== undefined && { [`x-amz-meta-${META_WRITER}`]: writer }) };
    const { doc } = await this.client.xml({ method: 'POST', bucket, key, query: { uploads: '' }, headers: upstreamHeaders });
    const uploadId = rootOf<{ UploadId?: string }>(doc).UploadId;
    if (!uploadId) throw new S3Error('InternalError', 'The upstream did not return an UploadId.');
    return { bucket, key, uploadId, initiated: new Date(), headers, metadata: withoutCasketMeta(metadata) };
  }

  async uploadPart(bucket: string, key: string, uploadId: string, partNumber: number, payload: Payload): Promise<PartInfo> {
    validateKey(key);
    const spooled = await this.spool.receive(payload);
    try {
      const { sha256, size } = spooled.digest;
      const stored = spooled.body;
      const md5 = spooled.digest.md5 ?? ('data' in stored ? createHash('md5').update(stored.data).digest() : await md5Of(stored.file));
      const req: UpstreamRequest = {
        method: 'PUT',
        bucket,
        key,
        query: { partNumber: String(partNumber), uploadId },
        headers: { 'content-md5': md5.toString('base64') },
        body: 'data' in stored ? { data: stored.data, sha256: sha256.toString('hex') } : { file: stored.file, size, sha256: sha256.toString('hex') },
      };
      await drain(await this.client.ok(req));
      await this.options.state.putPartDigest(uploadId, { partNumber, sha256: sha256.toString('hex'), md5: md5.toString('hex'), size });
      return { partNumber, etag: md5.toString('hex'), size, lastModified: new Date(), sha256 };
    } finally {
      await spooled.discard();
    }
  }

  async completeMultipartUpload(bucket: string, key: string, uploadId: string, parts: CompletedPart[], options: WriteOptions): Promise<ObjectInfo> {
    validateKey(key);
    if (parts.length === 0) throw new S3Error('MalformedXML', 'You must specify at least one part');
    for (let i = 1; i < parts.length; i++) if (parts[i]!.partNumber <= parts[i - 1]!.partNumber) throw new S3Error('InvalidPartOrder');
    let upstreamParts: Map<number, { etag: string; size: number }>;
    try {
      upstreamParts = await this.allUpstreamParts(bucket, key, uploadId);
    } catch (e) {
      if (e instanceof S3Error && e.code === 'NoSuchUpload') return this.completedBefore(bucket, key, uploadId, e);
      throw e;
    }
    const digests = new Map((await this.options.state.getPartDigests(uploadId)).map((d) => [d.partNumber, d]));
    const chosen = parts.map((p) => {
      const up = upstreamParts.get(p.partNumber);
      const digest = digests.get(p.partNumber);
      const asked = unquote(p.etag).toLowerCase();
      // Part ETags shown to clients are MD5s (ours); the upstream's may differ (SSE), and must agree when they are MD5s.
      const ours = digest?.md5 ?? up?.etag;
      const consistent = !digest || !up || !/^[0-9a-f]{32}$/.test(up.etag) || up.etag === digest.md5;
      if (!up || asked !== ours || !consistent) throw new S3Error('InvalidPart', { fields: { UploadId: uploadId, PartNumber: p.partNumber, ETag: p.etag } });
      return { partNumber: p.partNumber, upstreamETag: up.etag, size: up.size, digest };
    });
    const known = chosen.every((c) => c.digest !== undefined);
    const etag = known ? multipartETag(chosen.map((c) => Buffer.from(c.digest!.sha256, 'hex'))) : null;
    const sizes = chosen.map((c) => c.size);
    // The upstream ETag S3 gives a multipart object: MD5 of the part MD5s, -N.
    // Indexed before completing, so the object resolves from its first HEAD or
    // listing — and because Ceph RGW 16 answers CompleteMultipartUpload with
    // an empty <ETag> (measured).
    if (etag !== null && chosen.every((c) => c.upstreamETag === c.digest!.md5)) {
      const md5s = createHash('md5');
      for (const c of chosen) md5s.update(Buffer.from(c.digest!.md5, 'hex'));
      await this.etags.remember(bucket, key, `${md5s.digest('hex')}-${chosen.length}`, etag, sizes);
    }
    const xmlBody = `<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${chosen.map((c) => `<Part><PartNumber>${c.partNumber}</PartNumber><ETag>"${c.upstreamETag}"</ETag></Part>`).join('')}</CompleteMultipartUpload>`;
    const info = await this.commit(bucket, key, 'CompleteMultipartUpload', options, etag, async (condition) => {
      const req: UpstreamRequest = { method: 'POST', bucket, key, query: { uploadId }, headers: { ...condition, 'content-type': 'application/xml' }, body: { data: Buffer.from(xmlBody) } };
      const res = await this.client.send(req);
      if (await refusedUpstream(res, req, true)) return REFUSED;
      const text = await readText(res);
      if (/<Error>/.test(text)) {
        if (/<Code>(PreconditionFailed|ConditionalRequestConflict)<\/Code>/.test(text)) return REFUSED;
        throw new S3Error('InternalError', `The upstream failed CompleteMultipartUpload: ${text.slice(0, 300)}`);
      }
      const upstreamETag = unquote(/<ETag>([^<]*)<\/ETag>/.exec(text)?.[1]?.replace(/&quot;/g, '"') ?? '');
      if (etag !== null && upstreamETag !== '') {
        await this.etags.remember(bucket, key, upstreamETag, etag, sizes);
        return { bucket, key, etag, size: sizes.reduce((a, b) => a + b, 0), lastModified: res.headers.date ? new Date(res.headers.date) : new Date(), headers: {}, metadata: {}, partSizes: sizes } satisfies ObjectInfo;
      }
      // No ETag in the answer (RGW 16), or a part uploaded around casket: read it back (index, else computed).
      const current = await this.current(bucket, key);
      if (!current) throw new S3Error('InternalError', 'The completed object vanished upstream.');
      return current.info;
    }, false, async () => {
      // Same content already there: the upload is no longer needed.
      await this.client.send({ method: 'DELETE', bucket, key, query: { uploadId } }).then(drain, () => {});
    });
    await this.options.state.deletePartDigests(uploadId).catch(() => {});
    // A retry of this completion whose answer was lost must succeed (completedBefore).
    await this.options.state.putIndexedETag(bucket, key, `${uploadId}${COMPLETED_UPLOAD_SUFFIX}`, info.etag).catch(() => {});
    // The commit returned what it knows; HEAD fills in headers and metadata set at CreateMultipartUpload.
    if (Object.keys(info.headers).length === 0 && Object.keys(info.metadata).length === 0) {
      const fresh = await this.current(bucket, key).catch(() => null);
      if (fresh && fresh.info.etag === info.etag) return fresh.info;
    }
    return info;
  }

  /**
   * A CompleteMultipartUpload of an upload the upstream no longer knows:
   * success when this upload completed (remembered in the state store, so on
   * any replica, for the store's TTL) and its object is still the current
   * version — an SDK retrying after a lost response must not fail — else
   * NoSuchUpload, as the embedded store answers.
   */
  private async completedBefore(bucket: string, key: string, uploadId: string, noSuchUpload: S3Error): Promise<ObjectInfo> {
    const etag = await this.options.state.getIndexedETag(bucket, key, `${uploadId}${COMPLETED_UPLOAD_SUFFIX}`);
    if (etag === undefined) throw noSuchUpload;
    const current = await this.current(bucket, key);
    if (current === null || current.info.etag !== etag) throw noSuchUpload;
    return current.info;
  }

  async abortMultipartUpload(bucket: string, key: string, uploadId: string): Promise<void> {
    validateKey(key);
    await drain(await this.client.ok({ method: 'DELETE', bucket, key, query: { uploadId } }));
    await this.options.state.deletePartDigests(uploadId);
  }

  async listParts(bucket: string, key: string, uploadId: string, params: ListPartsParams): Promise<ListPartsResult> {
    validateKey(key);
    const query: Record<string, string> = { uploadId, 'max-parts': String(Math.max(1, params.maxParts)) };
    if (params.partNumberMarker > 0) query['part-number-marker'] = String(params.partNumberMarker);
    const { doc } = await this.client.xml({ method: 'GET', bucket, key, query });
    const result = rootOf<{ Part?: Array<{ PartNumber?: string; ETag?: string; Size?: string; LastModified?: string }>; IsTruncated?: string; NextPartNumberMarker?: string }>(doc);
    const upload: MultipartUploadInfo = { bucket, key, uploadId, initiated: new Date(0), headers: {}, metadata: {} };
    if (params.maxParts <= 0) return { upload, parts: [], isTruncated: false };
    const digests = new Map((await this.options.state.getPartDigests(uploadId)).map((d) => [d.partNumber, d]));
    const parts = (result.Part ?? []).map((p): PartInfo => {
      const partNumber = Number(p.PartNumber);
      const digest = digests.get(partNumber);
      return {
        partNumber,
        etag: digest?.md5 ?? unquote(p.ETag ?? ''),
        size: Number(p.Size ?? 0),
        lastModified: p.LastModified ? new Date(p.LastModified) : new Date(0),
        sha256: digest ? Buffer.from(digest.sha256, 'hex') : Buffer.alloc(0),
      };
    });
    const isTruncated = result.IsTruncated === 'true';
    return { upload, parts, isTruncated, ...(isTruncated && parts.length > 0 && { nextPartNumberMarker: Number(result.NextPartNumberMarker ?? parts.at(-1)!.partNumber) }) };
  }

  async listMultipartUploads(bucket: string, params: ListUploadsParams): Promise<ListUploadsResult> {
    const query: Record<string, string> = { uploads: '', 'max-uploads': String(Math.max(1, params.maxUploads)) };
    if (params.prefix !== '') query.prefix = params.prefix;
    if (params.delimiter) query.delimiter = params.delimiter;
    if (params.keyMarker) query['key-marker'] = params.keyMarker;
    if (params.keyMarker && params.uploadIdMarker) query['upload-id-marker'] = params.uploadIdMarker;
    const { doc } = await this.client.xml({ method: 'GET', bucket, query });
    if (params.maxUploads <= 0) return { uploads: [], commonPrefixes: [], isTruncated: false };
    const result = rootOf<{
      Upload?: Array<{ Key?: string; UploadId?: string; Initiated?: string }>;
      CommonPrefixes?: Array<{ Prefix?: string }>;
      IsTruncated?: string;
      NextKeyMarker?: string;
      NextUploadIdMarker?: string;
    }>(doc);
    const uploads = (result.Upload ?? []).map((u): MultipartUploadInfo => ({
      bucket,
      key: u.Key ?? '',
      uploadId: u.UploadId ?? '',
      initiated: u.Initiated ? new Date(u.Initiated) : new Date(0),
      headers: {},
      metadata: {},
    }));
    const isTruncated = result.IsTruncated === 'true';
    return {
      uploads,
      commonPrefixes: (result.CommonPrefixes ?? []).map((p) => p.Prefix).filter((p): p is string => typeof p === 'string'),
      isTruncated,
      ...(isTruncated && result.NextKeyMarker && { nextKeyMarker: result.NextKeyMarker }),
      ...(isTruncated && result.NextUploadIdMarker && { nextUploadIdMarker: result.NextUploadIdMarker }),
    };
  }

  /** Operations casket does not model go upstream as they are, re-signed (s3/operations/unmodeled.ts). */
  forward(request: ForwardRequest): Promise<ForwardResponse> {
    return forwardUpstream(this.client, request);
  }

  async close(): Promise<void> {
    await this.probe?.catch(() => {});
    this.client.close();
  }

  // ---- internals ----

  /** The current version with its casket ETag (null: no such key; throws NoSuchBucket). */
  private async current(bucket: string, key: string): Promise<UpstreamObject | null> {
    validateKey(key);
    for (let attempt = 0; ; attempt++) {
      const res = await this.client.send({ method: 'HEAD', bucket, key });
      await drain(res);
      if (res.status === 404) {
        this.unseen(bucket, key);
        await this.headBucket(bucket);
        return null;
      }
      if (res.status >= 300) throw await errorFrom(res, { method: 'HEAD', bucket, key });
      try {
        const current = await this.etags.resolve(bucket, key, res.headers);
        this.seen(bucket, key, current);
        return current;
      } catch (e) {
        // Replaced while its ETag was being computed: look again.
        if (!(e instanceof VersionChanged) || attempt >= MAX_ATTEMPTS) throw e instanceof VersionChanged ? new S3Error('SlowDown', 'The object keeps changing upstream; please retry.') : e;
      }
    }
  }

  /** A reader over a GET response whose body is still to be read (see getObject). */
  private heldReader(bucket: string, key: string, current: UpstreamObject, res: UpstreamResponse, form: Capabilities['ifMatchPut']): ObjectReader {
    const { info, upstreamETag } = current;
    let held: UpstreamResponse['body'] | undefined = res.body;
    // Until handed over, an upstream failure only marks the body unusable (open() then GETs again).
    const ignore = () => {};
    held.on('error', ignore);
    const release = () => {
      clearTimeout(lease);
      const body = held;
      held = undefined;
      // Unread bytes of a large body: closing the connection is cheaper than reading them.
      if (body && !body.complete) body.destroy();
    };
    const lease = setTimeout(release, READER_LEASE_MS);
    lease.unref();
    return {
      info,
      release,
      open: (range) => {
        const whole = range === undefined || (range.start === 0 && range.end === info.size - 1);
        if (whole && held && !held.destroyed && !held.readableDidRead) {
          clearTimeout(lease);
          const body = held;
          held = undefined;
          body.off('error', ignore);
          return body;
        }
        release();
        return this.openBody(bucket, key, upstreamETag, form, range);
      },
    };
  }

  private seen(bucket: string, key: string, current: UpstreamObject): void {
    this.lastSeen.set(`${bucket}\0${key}`, current);
  }

  private unseen(bucket: string, key: string): void {
    this.lastSeen.delete(`${bucket}\0${key}`);
  }

  /** A Readable of one version's bytes, pinned to its upstream ETag; backpressure through pipe, upstream cancelled if the reader goes away. */
  private openBody(bucket: string, key: string, upstreamETag: string, form: Capabilities['ifMatchPut'], range?: ByteRange): Readable {
    const out = new PassThrough();
    const headers: Record<string, string> = {};
    if (form) headers['if-match'] = formatFor(form, upstreamETag);
    if (range) headers.range = `bytes=${range.start}-${range.end}`;
    let upstream: UpstreamResponse | undefined;
    out.on('close', () => {
      if (upstream && !upstream.body.complete) upstream.body.destroy();
    });
    this.client.send({ method: 'GET', bucket, key, headers }).then(
      async (res) => {
        upstream = res;
        if (out.destroyed) return void res.body.destroy();
        if (res.status >= 300 || (res.headers.etag !== undefined && unquote(res.headers.etag) !== upstreamETag)) {
          const error = res.status >= 300 && res.status !== 412 ? await errorFrom(res, { method: 'GET', bucket, key }) : new S3Error('SlowDown', 'The object changed upstream while it was being read; please retry.');
          res.body.destroy();
          out.destroy(error);
          return;
        }
        res.body.on('error', (e) => out.destroy(e));
        res.body.pipe(out);
      },
      (error: unknown) => out.destroy(error as Error),
    );
    return out;
  }

  private async allUpstreamParts(bucket: string, key: string, uploadId: string): Promise<Map<number, { etag: string; size: number }>> {
    const parts = new Map<number, { etag: string; size: number }>();
    let marker = 0;
    for (;;) {
      const query: Record<string, string> = { uploadId, 'max-parts': '1000' };
      if (marker > 0) query['part-number-marker'] = String(marker);
      const { doc } = await this.client.xml({ method: 'GET', bucket, key, query });
      const result = rootOf<{ Part?: Array<{ PartNumber?: string; ETag?: string; Size?: string }>; IsTruncated?: string; NextPartNumberMarker?: string }>(doc);
      for (const p of result.Part ?? []) parts.set(Number(p.PartNumber), { etag: unquote(p.ETag ?? '').toLowerCase(), size: Number(p.Size ?? 0) });
      if (result.IsTruncated !== 'true' || !result.NextPartNumberMarker || Number(result.NextPartNumberMarker) <= marker) return parts;
      marker = Number(result.NextPartNumberMarker);
    }
  }

  /** Whether the upstream enforces this condition on this operation itself. */
  private enforced(caps: Capabilities, kind: WriteKind, condition: CommitCondition): boolean {
    if (condition.type === 'none') return true;
    const ifMatch = condition.type === 'if-match';
    switch (kind) {
      case 'PutObject':
        return ifMatch ? caps.ifMatchPut !== false : caps.ifNoneMatchPut;
      case 'DeleteObject':
        // If-None-Match on a delete is decided by casket (it deletes nothing when it holds).
        return ifMatch ? caps.ifMatchDelete : false;
      case 'CompleteMultipartUpload':
        return ifMatch ? caps.ifMatchComplete : caps.ifNoneMatchComplete;
    }
  }

  /**
   * The commit loop shared by every write: under the key's in-process lock,
   * evaluate the condition against the current version and have the
   * upstream enforce it where it can (see the file comment).
   *
   * @param newETag the casket ETag the write creates (null: a delete, or not known before the write).
   * @param write performs the upstream request with the given condition headers; REFUSED when the upstream refused the condition.
   * @param isDelete a delete's "same content" is the key being absent.
   * @param onSameContent cleanup when the write is skipped because its content is already current.
   */
  private async commit<T extends ObjectInfo | null>(
    bucket: string,
    key: string,
    kind: WriteKind,
    options: WriteOptions,
    newETag: string | null,
    write: (condition: Record<string, string>, current: UpstreamObject | null) => Promise<T | typeof REFUSED>,
    isDelete = false,
    onSameContent?: () => Promise<void>,
  ): Promise<T> {
    const { condition, sameContentWins } = options;
    const caps = condition.type === 'none' ? NOTHING_ENFORCED : await this.capabilities().catch(() => NOTHING_ENFORCED);
    const byUpstream = this.enforced(caps, kind, condition);
    if (!byUpstream && this.options.replicas) {
      const header = condition.type === 'if-match' ? 'If-Match' : 'If-None-Match';
      throw new S3Error('NotImplemented', `A conditional ${kind} (${header}) cannot be made atomic here: the upstream S3 endpoint does not enforce ${header} on ${kind}, and several casket replicas share it. Run one casket replica, or use an upstream that enforces it.`);
    }
    const form = caps.ifMatchPut || 'quoted';
    const same = async (current: UpstreamObject | null): Promise<T> => {
      await onSameContent?.();
      return (current?.info ?? null) as T;
    };
    // Does the condition hold for this version? If not, is the write already done (same content)?
    const verdict = (current: UpstreamObject | null): 'write' | 'same' | 'fail' => {
      const etag = current?.info.etag ?? null;
      const holds =
        condition.type === 'none' ||
        (condition.type === 'if-match' ? etag !== null && (condition.etags === '*' || condition.etags.includes(etag)) : etag === null);
      if (holds) return 'write';
      if (sameContentWins && (isDelete ? etag === null : etag !== null && etag === newETag)) return 'same';
      return 'fail';
    };

    return this.lock.run(`${bucket}\0${key}`, async () => {
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        // Unconditional writes and upstream-enforced If-None-Match need no look
        // first; nor does an upstream-enforced If-Match naming the version last
        // seen here (a stale one is refused upstream, then looked at).
        const seen = attempt === 0 && condition.type === 'if-match' && byUpstream && !isDelete ? this.lastSeen.get(`${bucket}\0${key}`) : undefined;
        const hinted = seen !== undefined && verdict(seen) === 'write';
        const look = !hinted && (condition.type === 'if-match' || !byUpstream || isDelete);
        const current = hinted ? seen : look ? await this.current(bucket, key) : null;
        if (look) {
          const v = verdict(current);
          if (v === 'same') return same(current);
          if (v === 'fail') throw new ConditionFailed(current?.info ?? null);
          if (isDelete && current === null && condition.type !== 'none') return null as T;
        }
        const headers: Record<string, string> = {};
        if (byUpstream && condition.type === 'if-match') headers['if-match'] = formatFor(form, current!.upstreamETag);
        if (byUpstream && condition.type === 'if-none-match') headers['if-none-match'] = '*';
        const result = await write(headers, current);
        if (result !== REFUSED) return result;
        this.unseen(bucket, key);
        // Let a concurrent writer finish before looking again (a stale hint needs no wait: look now).
        if (!hinted) await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * (attempt + 1)));
        // Refused upstream: something changed since we looked. Look again.
        if (condition.type === 'if-none-match') {
          const now = await this.current(bucket, key);
          if (now === null) continue;
          if (verdict(now) === 'same') return same(now);
          throw new ConditionFailed(now.info);
        }
      }
      const now = await this.current(bucket, key);
      const v = verdict(now);
      if (v === 'same') return same(now);
      if (v === 'write') throw new S3Error('SlowDown', `The upstream kept refusing or failing this conditional ${kind}; please retry.`);
      throw new ConditionFailed(now?.info ?? null);
    });
  }
}

/**
 * Whether an upstream response is a refused condition (412; 409
 * ConditionalRequestConflict, which AWS returns for a concurrent conditional
 * write; 404 NoSuchKey for If-Match on a missing key) or, for a conditional
 * request, a 5xx to re-evaluate. Other failures throw;
 * success drains the body unless `keepBody`.
 */
async function refusedUpstream(res: UpstreamResponse, req: UpstreamRequest, keepBody = false): Promise<boolean> {
  if (res.status >= 200 && res.status < 300) {
    if (!keepBody) await drain(res);
    return false;
  }
  if (res.status === 412) {
    await drain(res);
    return true;
  }
  const conditional = req.headers?.['if-match'] !== undefined || req.headers?.['if-none-match'] !== undefined;
  if (conditional && res.status >= 500) {
    // Ceph RGW 16 answers 500 UnknownError to a conditional PUT that lost a
    // race (measured: 16 concurrent If-Match PUTs). Whether it applied is
    // decided by looking again, against the fresh version.
    await drain(res);
    return true;
  }
  const text = await readText(res).catch(() => '');
  const code = /<Code>([^<]*)<\/Code>/.exec(text)?.[1];
  if (conditional && (code === 'ConditionalRequestConflict' || (res.status === 404 && code === 'NoSuchKey' && req.headers?.['if-match'] !== undefined))) return true;
  throw errorFromText(res.status, text, req);
}

/** A reader over a small body already in memory: served in one write (ObjectReader.inline). */
function inlineReader(info: ObjectInfo, data: Buffer): ObjectReader {
  const slice = (range?: ByteRange): Buffer => {
    if (range === undefined) return data;
    if (range.start < 0 || range.start > range.end || range.end >= data.length) {
      throw new S3Error('InvalidRange', { fields: { RangeRequested: `bytes=${range.start}-${range.end}`, ActualObjectSize: data.length } });
    }
    return data.subarray(range.start, range.end + 1);
  };
  return { info, inline: slice, open: (range) => Readable.from([slice(range)].filter((b) => b.length > 0)) };
}

function withoutCasketMeta(metadata: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(metadata).filter(([k]) => !k.toLowerCase().startsWith('casket-')));
}

/**
 * ListObjectsV2 `start-after` for casket's `after`: a key, or a common prefix
 * returned last on the previous page — then everything under that prefix is
 * skipped (U+10FFFF sorts after every character a key can continue with).
 */
function startAfter(params: ListObjectsParams): string | undefined {
  const after = params.after;
  if (after === undefined || after === '') return undefined;
  const d = params.delimiter;
  if (d && after.startsWith(params.prefix)) {
    const i = after.indexOf(d, params.prefix.length);
    if (i >= 0) return after.slice(0, i + d.length) + '\u{10FFFF}';
  }
  return after;
}

async function md5Of(file: string): Promise<Buffer> {
  const hash = createHash('md5');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest();
}

async function mapLimit<A, B>(items: A[], limit: number, fn: (a: A) => Promise<B>): Promise<B[]> {
  const out: B[] = new Array(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  });
  await Promise.all(workers);
  return out;
}

export function spoolDirFor(dataDir: string): string {
  return join(dataDir, 'spool');
}
