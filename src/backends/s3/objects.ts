/**
 * Object operations on the upstream: HeadObject, GetObject, PutObject,
 * DeleteObject (https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutObject.html).
 *
 * - GetObject is one upstream GET: its headers give the ObjectInfo, its body
 *   is what open() hands over (readers.ts).
 * - PutObject bodies whose SHA-256 and length are declared up front stream
 *   straight through, sent with that SHA-256 so the upstream itself refuses
 *   bytes that do not match, the last chunk held back until casket's own
 *   checks passed (client.ts HoldBack). Other bodies are received first
 *   (spool.ts: ≤ 64 KiB in memory, else a file) until the payload ended clean
 *   and verified. Either way a client that disconnects or fails a check
 *   leaves nothing upstream.
 * - Writes commit through commit.ts, atomically under their condition. A
 *   write whose condition casket checks itself (the upstream does not
 *   enforce it) is received first, then committed, so the key's lock is
 *   never held across a client's upload.
 *
 * Known gap: a streamed PutObject body can be sent once: when the upstream
 * refuses it and a fresh look says the write should be retried (the same
 * content under a new upstream ETag), the client gets 503 SlowDown and retries.
 */
import { S3Error } from '../../vocabulary/errors.js';
import { validateKey } from '../../vocabulary/names.js';
import { encodeChecksum } from '../multipart-checksum.js';
import type { ObjectChecksum, ObjectInfo, ObjectReader, PartChecksum, Payload, PutObjectOptions, WriteOptions } from '../types.js';
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
    // A write casket must check itself holds the key's lock exclusively
    // (commit.ts): its body is received first, never streamed under the lock.
    const streamable = declared !== undefined && /^[0-9a-f]{64}$/.test(declared) && length !== undefined && Number.isSafeInteger(length) && length > INLINE_LIMIT;
    if (streamable && !(await this.committer.checksItself('PutObject', options.condition))) {
      // The SHA-256 and length are known before the body: stream it straight
      // through (client.ts HoldBack), once — a write refused upstream cannot be resent.
      let sent = false;
      const body = (): UpstreamBody => {
        if (sent) throw new S3Error('SlowDown', 'The object changed upstream while the body was being sent; please retry.');
        sent = true;
        return { stream: payload.stream, size: length, sha256: declared };
      };
      return this.put(bucket, key, options, declared, length, body, options.declaredChecksum);
    }
    const spooled = await this.spool.receive(payload);
    try {
      const { sha256, size } = spooled.digest;
      const etag = sha256.toString('hex');
      const body: UpstreamBody = 'data' in spooled.body ? { data: spooled.body.data, sha256: etag } : { file: spooled.body.file, size, sha256: etag };
      const checksum = spooled.digest.checksum;
      return await this.put(bucket, key, options, etag, size, () => body, checksum && { algorithm: checksum.algorithm, value: checksum.value.toString('base64') });
    } finally {
      await spooled.discard();
    }
  }

  /** PutObject upstream of a body whose SHA-256 (`etag`) and size are known, through the commit loop. */
  private put(bucket: string, key: string, options: PutObjectOptions, etag: string, size: number, body: () => UpstreamBody, sent?: PartChecksum): Promise<ObjectInfo> {
    // A single PUT's checksum is of the whole object (S3: PutObject is always FULL_OBJECT).
    const checksum: ObjectChecksum | undefined = sent && { algorithm: sent.algorithm, type: 'FULL_OBJECT', value: sent.value };
    const headers: Record<string, string> = {
      ...upstreamObjectHeaders(options.headers, options.metadata),
      [`x-amz-meta-${META_SHA256}`]: etag,
      ...(options.writer !== undefined && { [`x-amz-meta-${META_WRITER}`]: options.writer }),
      ...(checksum && { [`x-amz-meta-${META_CHECKSUM}`]: encodeChecksum(checksum) }),
    };
    return this.committer.run(bucket, key, 'PutObject', options, etag, async (condition) => {
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
        ...(checksum && { checksum }),
      };
      if (upstreamETag !== '') {
        // Committed upstream: a state store that fails now costs the index
        // entry (re-derived from the object's SHA-256 metadata on its next
        // read), never the answer — a 503 here would say "nothing written".
        await this.etags.remember(bucket, key, upstreamETag, etag, undefined, checksum && { checksum }).catch(() => {});
        this.versions.seen(bucket, key, { info, upstreamETag });
      } else this.versions.unseen(bucket, key);
      return info;
    });
  }

  async deleteObject(bucket: string, key: string, options: WriteOptions): Promise<ObjectInfo | null> {
    validateKey(key);
    return this.committer.run(bucket, key, 'DeleteObject', options, null, async (condition, current) => {
      const req: UpstreamRequest = { method: 'DELETE', bucket, key, headers: condition };
      const res = await this.client.send(req);
      if (await refusedUpstream(res, req)) return REFUSED;
      this.versions.unseen(bucket, key);
      return current?.info ?? null;
    }, true);
  }
}
