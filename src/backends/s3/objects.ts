/**
 * Object operations on the upstream: HeadObject, GetObject, PutObject,
 * DeleteObject (https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutObject.html).
 *
 * - GetObject is one upstream GET: its headers give the ObjectInfo, its body
 *   is what open() hands over (readers.ts).
 * - PutObject bodies larger than 64 KiB whose length is known up front go
 *   upstream as they arrive, the last chunk held back until the payload
 *   ended clean — every signature, length and checksum checked (client.ts
 *   HoldBack): a body that fails a check, or a client that disconnects,
 *   leaves nothing upstream. A SHA-256 the client declared goes with the
 *   body, so the upstream itself refuses other bytes, and with the object as
 *   metadata; otherwise the body goes as UNSIGNED-PAYLOAD, and its SHA-256,
 *   known at its end, goes to the ETag index only (putStreamed says what
 *   that costs when the index is lost). Other bodies are received first
 *   (spool.ts: ≤ 64 KiB in memory, else a file): small ones, no length up
 *   front (Transfer-Encoding: chunked), a write whose condition casket
 *   checks itself, a refused write's probe. UploadPart bodies go the same
 *   two ways (multipart.ts).
 * - Writes commit through commit.ts, atomically under their condition. A
 *   write whose condition casket checks itself (the upstream does not
 *   enforce it) is received first, then committed, so the key's lock is
 *   never held exclusively across a client's upload.
 *
 * Known gap: a streamed PutObject body can be sent once: when the upstream
 * refuses it and a fresh look says the write should be retried (the same
 * content under a new upstream ETag), the client gets 503 SlowDown and
 * retries. A streamed body's upstream request lives as long as the client's
 * upload: a client silent for the upstream idle timeout (60 s) gets a 503.
 */
import { createHash } from 'node:crypto';
import { S3Error } from '../../vocabulary/errors.js';
import { validateKey } from '../../vocabulary/names.js';
import { encodeChecksum } from '../multipart-checksum.js';
import { ConditionFailed, type CommitCondition, type ObjectChecksum, type ObjectInfo, type ObjectReader, type PartChecksum, type Payload, type PutObjectOptions, type DeleteOptions, type DeleteResult } from '../types.js';
import { NOTHING_ENFORCED, unquote, type Capabilities } from './capabilities.js';
import { errorFrom, readBytes, type UpstreamBody, type UpstreamClient, type UpstreamRequest } from './client.js';
import { REFUSED, refusedUpstream, type Committer } from './commit.js';
import { META_CHECKSUM, META_SHA256, META_WRITER, upstreamObjectHeaders, VersionChanged, withoutCasketMeta, type ETagResolver, type UpstreamObject } from './etags.js';
import { heldReader, inlineReader, openBody } from './readers.js';
import { INLINE_LIMIT, type Spool } from './spool.js';
import { MAX_ATTEMPTS, type Versions } from './versions.js';

export class Objects {
  constructor(
    private readonly client: UpstreamClient,
    private readonly spool: Spool,
    private readonly etags: ETagResolver,
    private readonly versions: Versions,
    private readonly committer: Committer,
    private readonly capabilities: () => Promise<Capabilities>,
  ) {}

  async headObject(bucket: string, key: string): Promise<ObjectInfo | null> {
    return (await this.versions.current(bucket, key))?.info ?? null;
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
        this.versions.unseen(bucket, key);
        return null;
      }
      if (res.status >= 300) throw await errorFrom(res, req);
      if (res.headers['content-length'] === undefined || res.headers['content-encoding']?.includes('aws-chunked')) {
        // No length to build the ObjectInfo from: the HEAD way.
        res.body.destroy();
        const current = await this.versions.current(bucket, key);
        if (!current) return null;
        return { info: current.info, open: (range) => openBody(this.client, bucket, key, current.upstreamETag, form, range) };
      }
      let current: UpstreamObject;
      try {
        current = await this.etags.resolve(bucket, key, res.headers);
      } catch (e) {
        res.body.destroy();
        if (e instanceof VersionChanged && attempt < MAX_ATTEMPTS) continue;
        throw e instanceof VersionChanged ? new S3Error('SlowDown', 'The object keeps changing upstream; please retry.') : e;
      }
      this.versions.seen(bucket, key, current);
      const { info } = current;
      if (info.size <= INLINE_LIMIT) {
        const data = await readBytes(res, INLINE_LIMIT);
        if (data.length !== info.size) throw new S3Error('SlowDown', 'The object changed upstream while it was being read; please retry.');
        return inlineReader(info, data);
      }
      return heldReader(this.client, bucket, key, current, res, form);
    }
  }

  async putObject(bucket: string, key: string, payload: Payload, options: PutObjectOptions): Promise<ObjectInfo> {
    validateKey(key);
    const declared = options.declaredSha256?.toLowerCase();
    const length = options.contentLength;
    const known = declared !== undefined && /^[0-9a-f]{64}$/.test(declared);
    // Streamed only when its length is known up front (the upstream needs a
    // Content-Length) and it is large enough to be worth it. A write casket
    // must check itself holds the key's lock exclusively (commit.ts): its body
    // is received first, never streamed under the lock. So is a refused
    // write's probe commit (nothing can hold): it needs the body's SHA-256
    // for the 412, and no upstream request is ever made for it.
    const large = length !== undefined && Number.isSafeInteger(length) && length > INLINE_LIMIT;
    // A write with a retention must carry an integrity header up (locked()): its SHA-256, known before the body only when declared or received first.
    if (large && (known || (!isProbe(options.condition) && !locked(options))) && !(await this.committer.checksItself(bucket, 'PutObject', options.condition))) {
      return known ? this.putDeclared(bucket, key, payload, options, declared, length) : this.putStreamed(bucket, key, payload, options, length);
    }
    const spooled = await this.spool.receive(payload);
    try {
      const { sha256, size } = spooled.digest;
      const etag = sha256.toString('hex');
      const body: UpstreamBody = 'data' in spooled.body ? { data: spooled.body.data, sha256: etag } : { file: spooled.body.file, size, sha256: etag };
      const checksum = spooled.digest.checksum;
      return await this.put(bucket, key, options, { etag, size, body: () => body, ...(checksum && { checksum: { algorithm: checksum.algorithm, value: checksum.value.toString('base64') } }) });
    } finally {
      await spooled.discard();
    }
  }

  /**
   * The SHA-256 and length are known before the body: it streams straight
   * through (client.ts HoldBack), sent with that SHA-256 so the upstream
   * refuses other bytes, and the ETag goes with the object as metadata.
   */
  private putDeclared(bucket: string, key: string, payload: Payload, options: PutObjectOptions, etag: string, size: number): Promise<ObjectInfo> {
    const body = once((): UpstreamBody => ({ stream: payload.stream, size, sha256: etag }));
    return this.put(bucket, key, options, { etag, size, body, ...(options.declaredChecksum && { checksum: options.declaredChecksum }) });
  }

  /**
   * Only the length is known before the body (UNSIGNED-PAYLOAD, the
   * STREAMING-* forms, trailers: what SDKs send most of the time): it goes
   * upstream as it arrives, as UNSIGNED-PAYLOAD, hashed as it passes — the
   * payload computes the SHA-256 (casket's ETag) and verifies every
   * signature and checksum, HoldBack the MD5 of exactly what was sent and
   * holds the last chunk until the payload ended clean. The SHA-256 is known
   * only after the body, too late for metadata: it is kept in the ETag index
   * (etags.ts), with the checksum a trailer carried. Should the index lose
   * the entry, the object's ETag is computed again on its next read (a
   * rehash, as for objects written around casket), and a trailer's checksum
   * is gone; a checksum sent as a header still goes with the object.
   */
  private async putStreamed(bucket: string, key: string, payload: Payload, options: PutObjectOptions, size: number): Promise<ObjectInfo> {
    const md5 = createHash('md5');
    const body = once((): UpstreamBody => ({ stream: payload.stream, size, md5 }));
    // Valid once the upstream accepted the body: it got the last chunk only after the payload ended clean.
    let sent: Sent | undefined;
    const received = (): Sent => {
      if (sent) return sent;
      const digest = payload.digest();
      const checksum = digest.checksum && { algorithm: digest.checksum.algorithm, value: digest.checksum.value.toString('base64') };
      return (sent = { etag: digest.sha256.toString('hex'), md5: md5.digest('hex'), ...(checksum && { checksum }) });
    };
    try {
      return await this.put(bucket, key, options, { size, body, received, ...(options.declaredChecksum && { checksum: options.declaredChecksum }) });
    } catch (e) {
      // Refused after the whole body was sent: the 412 can still say what it would have made (s3/write.ts "identical").
      if (e instanceof ConditionFailed && e.attemptedETag === undefined && payload.stream.readableEnded) {
        const attempted = attemptedOf(received);
        if (attempted !== undefined) throw new ConditionFailed(e.current, attempted);
      }
      throw e;
    }
  }

  /** PutObject upstream through the commit loop. */
  private put(bucket: string, key: string, options: PutObjectOptions, out: Outgoing): Promise<ObjectInfo> {
    // A single PUT's checksum is of the whole object (S3: PutObject is always FULL_OBJECT).
    const full = (sent: PartChecksum | undefined): ObjectChecksum | undefined => sent && { algorithm: sent.algorithm, type: 'FULL_OBJECT', value: sent.value };
    const before = full(out.checksum);
    const headers: Record<string, string> = {
      ...upstreamObjectHeaders(options.headers, options.metadata),
      ...(out.etag !== undefined && { [`x-amz-meta-${META_SHA256}`]: out.etag }),
      ...(options.writer !== undefined && { [`x-amz-meta-${META_WRITER}`]: options.writer }),
      ...(before && { [`x-amz-meta-${META_CHECKSUM}`]: encodeChecksum(before) }),
      ...(locked(options) && out.etag !== undefined && { 'x-amz-checksum-sha256': Buffer.from(out.etag, 'hex').toString('base64'), 'x-amz-sdk-checksum-algorithm': 'SHA256' }),
    };
    return this.committer.run(bucket, key, 'PutObject', options, out.etag ?? null, async (condition) => {
      const req: UpstreamRequest = { method: 'PUT', bucket, key, headers: { ...headers, ...condition }, body: out.body() };
      const res = await this.client.send(req);
      if (await refusedUpstream(res, req)) return REFUSED;
      const upstreamETag = unquote(res.headers.etag ?? '');
      let etag = out.etag;
      let checksum = before;
      if (out.received) {
        const sent = out.received();
        // A plain upstream ETag is the MD5 of what it stored: anything else
        // than what was sent must not be shown under this SHA-256. (Not
        // checked where the upstream's ETag is no MD5: SSE-KMS, SSE-C — whose
        // ETag is 32 hex digits all the same, https://docs.aws.amazon.com/AmazonS3/latest/API/API_Object.html.)
        const md5ETag = !(res.headers['x-amz-server-side-encryption'] ?? '').startsWith('aws:kms');
        if (md5ETag && /^[0-9a-f]{32}$/i.test(upstreamETag) && upstreamETag.toLowerCase() !== sent.md5) {
          this.versions.unseen(bucket, key);
          throw new S3Error('InternalError', `The upstream stored other bytes than casket sent (ETag ${upstreamETag}, sent MD5 ${sent.md5}); its ETag will be computed from what it holds.`);
        }
        etag = sent.etag;
        checksum = full(sent.checksum) ?? before;
      }
      const info: ObjectInfo = {
        bucket,
        key,
        etag: etag!,
        size: out.size,
        lastModified: res.headers.date ? new Date(res.headers.date) : new Date(),
        // The upstream's lifecycle expiry of what was just written (API_PutObject x-amz-expiration).
        headers: res.headers['x-amz-expiration'] !== undefined ? { ...options.headers, expiration: res.headers['x-amz-expiration'] } : options.headers,
        metadata: withoutCasketMeta(options.metadata),
        ...(options.writer !== undefined && { writer: options.writer }),
        ...(checksum && { checksum }),
        // A versioned upstream names the version it made (docs/design.md §10: versioning passes through).
        ...(res.headers['x-amz-version-id'] !== undefined && { versionId: res.headers['x-amz-version-id'] }),
      };
      if (upstreamETag !== '') {
        // Committed upstream: a state store that fails now costs the index
        // entry (re-derived on the object's next read: from its SHA-256
        // metadata, or by hashing a streamed one), never the answer — a 503
        // here would say "nothing written".
        await this.etags.remember(bucket, key, upstreamETag, etag!, undefined, checksum && { checksum }).catch(() => {});
        this.versions.seen(bucket, key, { info, upstreamETag });
      } else this.versions.unseen(bucket, key);
      return info;
    });
  }

  async deleteObject(bucket: string, key: string, options: DeleteOptions): Promise<DeleteResult> {
    validateKey(key);
    let answered: Record<string, string> = {};
    const replaced = await this.committer.run(bucket, key, 'DeleteObject', options, null, async (condition, current) => {
      const headers = options.bypassGovernanceRetention ? { ...condition, 'x-amz-bypass-governance-retention': 'true' } : condition;
      const req: UpstreamRequest = { method: 'DELETE', bucket, key, headers, ...(options.versionId !== undefined && { query: { versionId: options.versionId } }) };
      const res = await this.client.send(req);
      if (await refusedUpstream(res, req)) return REFUSED;
      answered = res.headers;
      this.versions.unseen(bucket, key);
      return current?.info ?? null;
    }, true);
    // A versioned upstream's delete marker (or the version removed by id) passes through (docs/design.md §10).
    const versionId = answered['x-amz-version-id'];
    return { replaced, ...(versionId !== undefined && { versionId }), ...(answered['x-amz-delete-marker'] === 'true' && { deleteMarker: true }) };
  }
}

/** What a PutObject sends upstream. */
interface Outgoing {
  /** casket's ETag when known before the body: it goes with the object as metadata. */
  etag?: string;
  size: number;
  body(): UpstreamBody;
  /** The checksum known before the body (a header): it goes with the object as metadata. */
  checksum?: PartChecksum;
  /** A streamed body's digests, read once the upstream accepted it. */
  received?(): Sent;
}

/** The digests of a body streamed upstream, known after its end. */
interface Sent {
  etag: string;
  md5: string;
  checksum?: PartChecksum;
}

/**
 * A streamed body can be sent once: a second send (the commit loop retrying
 * after the upstream refused it) is 503 SlowDown, which clients retry whole.
 */
function once(body: () => UpstreamBody): () => UpstreamBody {
  let sent = false;
  return () => {
    if (sent) throw new S3Error('SlowDown', 'The object changed upstream while the body was being sent; please retry.');
    sent = true;
    return body();
  };
}

/**
 * The write asks for Object Lock: AWS refuses it without Content-MD5 or a
 * flexible checksum (MissingUploadObjectWithObjectLockHeaders,
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-lock-managing.html),
 * so its SHA-256 goes up as x-amz-checksum-sha256.
 */
function locked(options: PutObjectOptions): boolean {
  const h = options.headers;
  return h.objectLockMode !== undefined || h.objectLockRetainUntilDate !== undefined || h.objectLockLegalHold !== undefined;
}

/** A refused write's probe commit (s3/write.ts NOTHING_HOLDS): a condition no version can satisfy. */
function isProbe(condition: CommitCondition): boolean {
  return condition.type === 'if-match' && Array.isArray(condition.etags) && condition.etags.length === 0;
}

/** The SHA-256 of a body that ended clean, else undefined. */
function attemptedOf(received: () => Sent): string | undefined {
  try {
    return received().etag;
  } catch {
    return undefined;
  }
}
