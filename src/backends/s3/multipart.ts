/**
 * Multipart upload on the upstream
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/mpuoverview.html).
 * Parts are received and hashed (spool.ts) before they go upstream, so
 * casket knows each part's SHA-256 and MD5 (kept in the state store): the
 * object's ETag at completion is casket's `<sha256 of part digests>-<N>`,
 * part ETags shown to clients are MD5s. CompleteMultipartUpload commits
 * through commit.ts under its condition.
 *
 * Why parts are not streamed upstream as PutObject bodies are (objects.ts):
 * uploadPart is given no length, and the upstream needs its Content-Length
 * before the first byte; and the per-part lock below (see "A part sent twice
 * concurrently") is held across the upstream PUT, which for a streamed part
 * would be across the client's upload, so a slow client would block a retry
 * of its own part. Streaming parts needs the decoded length passed down
 * (Backend.uploadPart), and, in place of the lock, digests recorded per part
 * number AND MD5, with Complete taking the one whose MD5 is the part ETag the
 * upstream lists (not possible where part ETags are not MD5s: SSE-KMS).
 *
 * Checksums: the upload's algorithm and type are kept in the state store
 * (`<uploadId>#checksum`), each part's with its digests; the object's
 * checksum, made at completion (multipart-checksum.ts), is indexed with its
 * upstream ETag like its part sizes (etags.ts). Nothing of it goes upstream:
 * not every upstream keeps checksums (Ceph RGW 16 does not).
 *
 * A CompleteMultipartUpload retried after a lost response succeeds while its
 * object is current (completed upload ids are kept in the state store, so on
 * any replica).
 *
 * A part sent twice concurrently: each upload's upstream PUT and its digest
 * record run under one per-part lock, so the upload that finishes last is
 * both the upstream's part and the digest casket keeps (and Complete may list
 * the part number twice: completed-parts.ts). Known gap: two replicas
 * receiving the same part at once are not serialized; Complete then refuses
 * the part (InvalidPart: the upstream's MD5 part ETag and the digest
 * disagree) rather than assemble it under a wrong ETag — where the
 * upstream's part ETags are MD5s (not under SSE-KMS).
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { S3Error } from '../../vocabulary/errors.js';
import { multipartETag } from '../../vocabulary/etag.js';
import { validateKey } from '../../vocabulary/names.js';
import type { StateStore } from '../../state/types.js';
import { checkNamedPartChecksums, decodePartChecksum, decodeUploadChecksum, encodePartChecksum, encodeUploadChecksum, multipartChecksum } from '../multipart-checksum.js';
import type { CompletedPart, CompleteOptions, ListPartsParams, ListPartsResult, ListUploadsParams, ListUploadsResult, MultipartUploadInfo, ObjectHeaders, ObjectInfo, PartChecksum, PartInfo, Payload, UploadChecksum, WriteOptions } from '../types.js';
import { unquote } from './capabilities.js';
import { drain, readText, rootOf, type UpstreamClient, type UpstreamRequest } from './client.js';
import { requestedParts } from '../completed-parts.js';
import { REFUSED, refusedUpstream, type Committer } from './commit.js';
import { KeyLock } from './key-lock.js';
import { META_WRITER, upstreamObjectHeaders, withoutCasketMeta, type ETagResolver } from './etags.js';
import type { Spool } from './spool.js';
import type { Versions } from './versions.js';

/**
 * A completed upload id is remembered in the state-store index under
 * (bucket, key, `<uploadId>#completed-upload`) — no upstream ETag contains
 * '#' — so a retried CompleteMultipartUpload succeeds on any replica.
 */
const COMPLETED_UPLOAD_SUFFIX = '#completed-upload';
/** The checksum an upload was created with, under (bucket, key, `<uploadId>#checksum`): `<algorithm> <type>`. */
const UPLOAD_CHECKSUM_SUFFIX = '#checksum';


export class Multipart {
  private readonly partLock = new KeyLock();

  constructor(
    private readonly client: UpstreamClient,
    private readonly state: StateStore,
    private readonly spool: Spool,
    private readonly etags: ETagResolver,
    private readonly versions: Versions,
    private readonly committer: Committer,
  ) {}

  async createMultipartUpload(bucket: string, key: string, headers: ObjectHeaders, metadata: Record<string, string>, writer?: string, checksum?: UploadChecksum): Promise<MultipartUploadInfo> {
    validateKey(key);
    // Metadata cannot change after completion: the writer goes on at the start.
    const upstreamHeaders = { ...upstreamObjectHeaders(headers, metadata), ...(writer !== undefined && { [`x-amz-meta-${META_WRITER}`]: writer }) };
    const { doc } = await this.client.xml({ method: 'POST', bucket, key, query: { uploads: '' }, headers: upstreamHeaders });
    const uploadId = rootOf<{ UploadId?: string }>(doc).UploadId;
    if (!uploadId) throw new S3Error('InternalError', 'The upstream did not return an UploadId.');
    if (checksum) await this.state.putIndexedETag(bucket, key, `${uploadId}${UPLOAD_CHECKSUM_SUFFIX}`, encodeUploadChecksum(checksum));
    return { bucket, key, uploadId, initiated: new Date(), headers, metadata: withoutCasketMeta(metadata), ...(checksum && { checksum }) };
  }

  /** The checksum the upload was created with (the state store's; undefined: none, or forgotten). */
  private async uploadChecksum(bucket: string, key: string, uploadId: string): Promise<UploadChecksum | undefined> {
    return decodeUploadChecksum(await this.state.getIndexedETag(bucket, key, `${uploadId}${UPLOAD_CHECKSUM_SUFFIX}`));
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
      // One part number at a time per upload in this process: the upload
      // that finishes last is the part upstream AND the digest recorded, so
      // the two never disagree when a part is sent twice concurrently.
      const checksum: PartChecksum | undefined = spooled.digest.checksum && { algorithm: spooled.digest.checksum.algorithm, value: spooled.digest.checksum.value.toString('base64') };
      await this.partLock.exclusive(`${uploadId}\0${partNumber}`, async () => {
        await drain(await this.client.ok(req));
        await this.state.putPartDigest(uploadId, { partNumber, sha256: sha256.toString('hex'), md5: md5.toString('hex'), size, ...(checksum && { checksum: encodePartChecksum(checksum) }) });
      });
      return { partNumber, etag: md5.toString('hex'), size, lastModified: new Date(), sha256, ...(checksum && { checksum }) };
    } finally {
      await spooled.discard();
    }
  }

  async completeMultipartUpload(bucket: string, key: string, uploadId: string, parts: CompletedPart[], options: CompleteOptions): Promise<ObjectInfo> {
    validateKey(key);
    const wanted = requestedParts(parts);
    let upstreamParts: Map<number, { etag: string; size: number }>;
    try {
      upstreamParts = await this.allUpstreamParts(bucket, key, uploadId);
    } catch (e) {
      if (e instanceof S3Error && e.code === 'NoSuchUpload') return this.completedBefore(bucket, key, uploadId, e);
      throw e;
    }
    const digests = new Map((await this.state.getPartDigests(uploadId)).map((d) => [d.partNumber, d]));
    const chosen = wanted.map((p) => {
      const up = upstreamParts.get(p.partNumber);
      const digest = digests.get(p.partNumber);
      const asked = p.etags.map((etag) => unquote(etag).toLowerCase());
      // Part ETags shown to clients are MD5s (ours); the upstream's may differ (SSE), and must agree when they are MD5s.
      const ours = digest?.md5 ?? up?.etag;
      const consistent = !digest || !up || !/^[0-9a-f]{32}$/.test(up.etag) || up.etag === digest.md5;
      if (!up || ours === undefined || !asked.includes(ours) || !consistent) throw new S3Error('InvalidPart', { fields: { UploadId: uploadId, PartNumber: p.partNumber, ETag: p.etags.at(-1) } });
      const checksum = decodePartChecksum(digest?.checksum);
      checkNamedPartChecksums(uploadId, p, checksum);
      return { partNumber: p.partNumber, upstreamETag: up.etag, size: up.size, digest, ...(checksum && { checksum }) };
    });
    const uploadChecksum = await this.uploadChecksum(bucket, key, uploadId);
    const checksum = multipartChecksum(uploadChecksum, chosen, options.expectedChecksum);
    const indexedChecksum = checksum && { checksum, partChecksums: chosen.map((c) => c.checksum!.value) };
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
      await this.etags.remember(bucket, key, `${md5s.digest('hex')}-${chosen.length}`, etag, sizes, indexedChecksum);
    }
    const xmlBody = `<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${chosen.map((c) => `<Part><PartNumber>${c.partNumber}</PartNumber><ETag>"${c.upstreamETag}"</ETag></Part>`).join('')}</CompleteMultipartUpload>`;
    const info = await this.committer.run(bucket, key, 'CompleteMultipartUpload', options, etag, async (condition) => {
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
        // Completed upstream: an index the state store cannot take now is
        // re-derived on the next read; the answer must say it completed.
        await this.etags.remember(bucket, key, upstreamETag, etag, sizes, indexedChecksum).catch(() => {});
        return { bucket, key, etag, size: sizes.reduce((a, b) => a + b, 0), lastModified: res.headers.date ? new Date(res.headers.date) : new Date(), headers: {}, metadata: {}, partSizes: sizes, ...indexedChecksum } satisfies ObjectInfo;
      }
      // No ETag in the answer (RGW 16), or a part uploaded around casket: read it back (index, else computed).
      const current = await this.versions.current(bucket, key);
      if (!current) throw new S3Error('InternalError', 'The completed object vanished upstream.');
      return current.info;
    });
    await this.state.deletePartDigests(uploadId).catch(() => {});
    if (uploadChecksum) await this.state.putIndexedETag(bucket, key, `${uploadId}${UPLOAD_CHECKSUM_SUFFIX}`, '').catch(() => {});
    // A retry of this completion whose answer was lost must succeed (completedBefore).
    await this.state.putIndexedETag(bucket, key, `${uploadId}${COMPLETED_UPLOAD_SUFFIX}`, info.etag).catch(() => {});
    // The commit returned what it knows; HEAD fills in headers and metadata set at CreateMultipartUpload.
    if (Object.keys(info.headers).length === 0 && Object.keys(info.metadata).length === 0) {
      const fresh = await this.versions.current(bucket, key).catch(() => null);
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
    const etag = await this.state.getIndexedETag(bucket, key, `${uploadId}${COMPLETED_UPLOAD_SUFFIX}`);
    if (etag === undefined) throw noSuchUpload;
    const current = await this.versions.current(bucket, key);
    if (current === null || current.info.etag !== etag) throw noSuchUpload;
    return current.info;
  }

  async abortMultipartUpload(bucket: string, key: string, uploadId: string): Promise<void> {
    validateKey(key);
    await drain(await this.client.ok({ method: 'DELETE', bucket, key, query: { uploadId } }));
    await this.state.deletePartDigests(uploadId);
    await this.state.putIndexedETag(bucket, key, `${uploadId}${UPLOAD_CHECKSUM_SUFFIX}`, '').catch(() => {});
  }

  async listParts(bucket: string, key: string, uploadId: string, params: ListPartsParams): Promise<ListPartsResult> {
    validateKey(key);
    const query: Record<string, string> = { uploadId, 'max-parts': String(Math.max(1, params.maxParts)) };
    if (params.partNumberMarker > 0) query['part-number-marker'] = String(params.partNumberMarker);
    const { doc } = await this.client.xml({ method: 'GET', bucket, key, query });
    const result = rootOf<{ Part?: Array<{ PartNumber?: string; ETag?: string; Size?: string; LastModified?: string }>; IsTruncated?: string; NextPartNumberMarker?: string }>(doc);
    const uploadChecksum = await this.uploadChecksum(bucket, key, uploadId);
    const upload: MultipartUploadInfo = { bucket, key, uploadId, initiated: new Date(0), headers: {}, metadata: {}, ...(uploadChecksum && { checksum: uploadChecksum }) };
    if (params.maxParts <= 0) return { upload, parts: [], isTruncated: false };
    const digests = new Map((await this.state.getPartDigests(uploadId)).map((d) => [d.partNumber, d]));
    const parts = (result.Part ?? []).map((p): PartInfo => {
      const partNumber = Number(p.PartNumber);
      const digest = digests.get(partNumber);
      const checksum = decodePartChecksum(digest?.checksum);
      return {
        partNumber,
        etag: digest?.md5 ?? unquote(p.ETag ?? ''),
        size: Number(p.Size ?? 0),
        lastModified: p.LastModified ? new Date(p.LastModified) : new Date(0),
        sha256: digest ? Buffer.from(digest.sha256, 'hex') : Buffer.alloc(0),
        ...(checksum && { checksum }),
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
    const uploads = await Promise.all(
      (result.Upload ?? []).map(async (u): Promise<MultipartUploadInfo> => {
        const checksum = u.Key && u.UploadId ? await this.uploadChecksum(bucket, u.Key, u.UploadId) : undefined;
        return {
          bucket,
          key: u.Key ?? '',
          uploadId: u.UploadId ?? '',
          initiated: u.Initiated ? new Date(u.Initiated) : new Date(0),
          headers: {},
          metadata: {},
          ...(checksum && { checksum }),
        };
      }),
    );
    const isTruncated = result.IsTruncated === 'true';
    return {
      uploads,
      commonPrefixes: (result.CommonPrefixes ?? []).map((p) => p.Prefix).filter((p): p is string => typeof p === 'string'),
      isTruncated,
      ...(isTruncated && result.NextKeyMarker && { nextKeyMarker: result.NextKeyMarker }),
      ...(isTruncated && result.NextUploadIdMarker && { nextUploadIdMarker: result.NextUploadIdMarker }),
    };
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
}

async function md5Of(file: string): Promise<Buffer> {
  const hash = createHash('md5');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest();
}
