/**
 * Multipart upload on the upstream
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/mpuoverview.html).
 * casket knows each part's SHA-256 and MD5 (kept in the state store): the
 * object's ETag at completion is casket's `<sha256 of part digests>-<N>`,
 * part ETags shown to clients are MD5s. CompleteMultipartUpload commits
 * through commit.ts under its condition.
 *
 * UploadPart: a part larger than 64 KiB whose decoded length the request
 * states goes upstream as it arrives, as PutObject bodies do (objects.ts):
 * the last chunk held back until the payload ended clean — every signature,
 * length and checksum checked (client.ts HoldBack) — so a part that fails a
 * check, or a client that disconnects, leaves nothing upstream (the part
 * number keeps what it held before). A SHA-256 the client declared goes
 * with it (the upstream refuses other bytes); otherwise it goes as
 * UNSIGNED-PAYLOAD, and the upstream's part ETag, when it is an MD5, must be
 * the MD5 of what the client sent, else the part is refused. Other parts are
 * received first (spool.ts: ≤ 64 KiB in memory, else a file): no length up
 * front (Transfer-Encoding: chunked), or small; so is UploadPartCopy's
 * source (it has no length passed down). A streamed part's upstream request
 * lives as long as the client's upload: a client silent for the upstream
 * idle timeout (60 s) gets a 503.
 *
 * A part number sent more than once (a retry, or two uploads at once):
 * digests are recorded per part number AND MD5 (a streamed part holds no
 * lock across the client's upload, so uploads of one part number overlap
 * freely), and completion, like ListParts, takes for each part the digest
 * whose MD5 is the part ETag the upstream lists: the part it kept, whichever
 * finished last, on this replica or another (and Complete may list the part
 * number twice: completed-parts.ts). A part whose recorded digests all
 * differ from what the upstream holds is refused (InvalidPart) rather than
 * assembled under a wrong ETag. Known gap: where the upstream's part ETags
 * are not MD5s (SSE-KMS), the digest recorded last is taken; spooled parts
 * of one number are serialized in this process (the upload that finishes
 * last records last), streamed ones and other replicas' are not.
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
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { S3Error } from '../../vocabulary/errors.js';
import { multipartETag } from '../../vocabulary/etag.js';
import { validateKey } from '../../vocabulary/names.js';
import type { PartDigest, StateStore } from '../../state/types.js';
import { checkNamedPartChecksums, decodePartChecksum, decodeUploadChecksum, encodePartChecksum, encodeUploadChecksum, multipartChecksum } from '../multipart-checksum.js';
import type { CompletedPart, CompleteOptions, ListPartsParams, ListPartsResult, ListUploadsParams, ListUploadsResult, MultipartUploadInfo, ObjectHeaders, ObjectInfo, PartChecksum, PartInfo, Payload, UploadChecksum, UploadPartOptions, WriteOptions } from '../types.js';
import { unquote } from './capabilities.js';
import { drain, readText, rootOf, type UpstreamClient, type UpstreamRequest } from './client.js';
import { requestedParts } from '../completed-parts.js';
import { REFUSED, refusedUpstream, type Committer } from './commit.js';
import { KeyLock } from './key-lock.js';
import { META_WRITER, upstreamObjectHeaders, withoutCasketMeta, type ETagResolver } from './etags.js';
import { INLINE_LIMIT, type Spool } from './spool.js';
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

  async uploadPart(bucket: string, key: string, uploadId: string, partNumber: number, payload: Payload, options: UploadPartOptions = {}): Promise<PartInfo> {
    validateKey(key);
    const length = options.contentLength;
    if (length !== undefined && Number.isSafeInteger(length) && length > INLINE_LIMIT) return this.uploadStreamed(bucket, key, uploadId, partNumber, payload, length, options.declaredSha256);
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
      // One spooled part number at a time per upload in this process (the
      // body is here: the lock never waits on a client): the upload that
      // finishes last is also the digest recorded last, which completion
      // takes where the upstream's part ETags are not MD5s.
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

  /**
   * A part whose length is known before its body goes upstream as it
   * arrives (client.ts HoldBack: the last chunk only once the payload ended
   * clean), with the SHA-256 the client declared, so the upstream itself
   * refuses other bytes, else as UNSIGNED-PAYLOAD. The payload computes the
   * MD5 (the part ETag), the SHA-256 and the checksum on the way; a plain
   * upstream part ETag must be that MD5, else the part is refused and
   * nothing recorded. No lock: concurrent uploads of one part number each
   * record their digest under their own MD5, and completion takes the one
   * the upstream kept.
   */
  private async uploadStreamed(bucket: string, key: string, uploadId: string, partNumber: number, payload: Payload, size: number, declaredSha256: string | undefined): Promise<PartInfo> {
    const declared = declaredSha256 !== undefined && /^[0-9a-f]{64}$/i.test(declaredSha256) ? declaredSha256.toLowerCase() : undefined;
    const req: UpstreamRequest = {
      method: 'PUT',
      bucket,
      key,
      query: { partNumber: String(partNumber), uploadId },
      body: { stream: payload.stream, size, ...(declared !== undefined && { sha256: declared }) },
    };
    const res = await this.client.ok(req);
    const upstreamETag = unquote(res.headers.etag ?? '').toLowerCase();
    await drain(res);
    // The upstream accepted the body: it had the last chunk, so the payload ended clean.
    const digest = payload.digest();
    if (digest.md5 === undefined) throw new S3Error('InternalError', 'UploadPart needs the MD5 of the part.');
    const md5 = digest.md5.toString('hex');
    if (/^[0-9a-f]{32}$/.test(upstreamETag) && upstreamETag !== md5) {
      throw new S3Error('InternalError', `The upstream stored other bytes than casket sent for part ${partNumber} (ETag ${upstreamETag}, sent MD5 ${md5}); please upload the part again.`);
    }
    const checksum: PartChecksum | undefined = digest.checksum && { algorithm: digest.checksum.algorithm, value: digest.checksum.value.toString('base64') };
    await this.state.putPartDigest(uploadId, { partNumber, sha256: digest.sha256.toString('hex'), md5, size: digest.size, ...(checksum && { checksum: encodePartChecksum(checksum) }) });
    return { partNumber, etag: md5, size: digest.size, lastModified: new Date(), sha256: digest.sha256, ...(checksum && { checksum }) };
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
    const recorded = byPartNumber(await this.state.getPartDigests(uploadId));
    const chosen = wanted.map((p) => {
      const up = upstreamParts.get(p.partNumber);
      const candidates = recorded.get(p.partNumber) ?? [];
      const digest = up && digestOf(candidates, up.etag);
      const asked = p.etags.map((etag) => unquote(etag).toLowerCase());
      // Part ETags shown to clients are MD5s (ours); the upstream's may
      // differ (SSE). Digests recorded, none of them the part upstream: its
      // bytes are not what casket received (a part uploaded around casket
      // since, or one that failed its check after the upstream took it).
      const ours = digest?.md5 ?? up?.etag;
      const consistent = candidates.length === 0 || digest !== undefined;
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
    // an empty <ETag> (measured). Known to this process at once; with
    // options.index, in the state store with the rest of the write's records.
    if (etag !== null && chosen.every((c) => c.upstreamETag === c.digest!.md5)) {
      const md5s = createHash('md5');
      for (const c of chosen) md5s.update(Buffer.from(c.digest!.md5, 'hex'));
      await this.etags.remember(bucket, key, `${md5s.digest('hex')}-${chosen.length}`, etag, sizes, indexedChecksum, options.index);
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
        await this.etags.remember(bucket, key, upstreamETag, etag, sizes, indexedChecksum, options.index).catch(() => {});
        return { bucket, key, etag, size: sizes.reduce((a, b) => a + b, 0), lastModified: res.headers.date ? new Date(res.headers.date) : new Date(), headers: {}, metadata: {}, partSizes: sizes, ...indexedChecksum } satisfies ObjectInfo;
      }
      // No ETag in the answer (RGW 16), or a part uploaded around casket: read it back (index, else computed).
      const current = await this.versions.current(bucket, key);
      if (!current) throw new S3Error('InternalError', 'The completed object vanished upstream.');
      return current.info;
    });
    await this.state.deletePartDigests(uploadId).catch(() => {});
    const records = [
      ...(uploadChecksum ? [{ bucket, key, upstreamETag: `${uploadId}${UPLOAD_CHECKSUM_SUFFIX}`, value: '' }] : []),
      // A retry of this completion whose answer was lost must succeed (completedBefore).
      { bucket, key, upstreamETag: `${uploadId}${COMPLETED_UPLOAD_SUFFIX}`, value: info.etag },
    ];
    // With options.index: recorded with the write, before the answer leaves, in its one round trip.
    if (options.index) options.index.push(...records);
    else for (const r of records) await this.state.putIndexedETag(r.bucket, r.key, r.upstreamETag, r.value).catch(() => {});
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
    const recorded = byPartNumber(await this.state.getPartDigests(uploadId));
    const parts = (result.Part ?? []).map((p): PartInfo => {
      const partNumber = Number(p.PartNumber);
      const digest = digestOf(recorded.get(partNumber) ?? [], unquote(p.ETag ?? '').toLowerCase());
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

/** Digests recorded per part number, each list oldest first. */
function byPartNumber(digests: PartDigest[]): Map<number, PartDigest[]> {
  const out = new Map<number, PartDigest[]>();
  for (const d of digests) {
    const list = out.get(d.partNumber);
    if (list) list.push(d);
    else out.set(d.partNumber, [d]);
  }
  return out;
}

/**
 * The digest of the part the upstream holds: the one whose MD5 is its part
 * ETag; where the upstream's part ETags are not MD5s (SSE-KMS), the latest
 * recorded. Undefined: none recorded matches.
 */
function digestOf(candidates: PartDigest[], upstreamETag: string): PartDigest | undefined {
  if (/^[0-9a-f]{32}$/.test(upstreamETag)) return candidates.find((d) => d.md5 === upstreamETag);
  return candidates.at(-1);
}

async function md5Of(file: string): Promise<Buffer> {
  const hash = createHash('md5');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest();
}
