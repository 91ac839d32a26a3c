/**
 * casket ETags for objects that live on an upstream (docs/design.md §2).
 *
 * The ETag casket shows is the SHA-256 of the content (or, for a multipart
 * object, the SHA-256 of the concatenated 32-byte part digests, `-N`). An
 * upstream has its own ETags (usually MD5-based), so casket keeps its ETag:
 *   1. with the object, as `x-amz-meta-casket-sha256` (single-part writes
 *      whose SHA-256 was known before the body: spooled, or declared by the
 *      client; a body streamed upstream as it arrives has none, objects.ts);
 *   2. in the StateStore, keyed by (bucket, key, upstream ETag), so
 *      ListObjects can rewrite every ETag without a HEAD per key. The key
 *      includes the upstream's ETag, which changes whenever the object does,
 *      so an entry can be missing but never stale. Multipart objects also
 *      keep their part sizes (for GET ?partNumber=) under `<etag>#parts`.
 *   3. otherwise — objects written around casket — it is computed by reading
 *      the object once (each part by ?partNumber= for a multipart one, as in
 *      https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html),
 *      with If-Match on the upstream ETag so the bytes hashed are exactly that
 *      version, and then indexed. An upstream that ignores ?partNumber=
 *      (moto 5, measured) gives no part boundaries: such an object's ETag is
 *      then the SHA-256 of its whole content, without the `-N` suffix.
 * What losing the index costs (a state store wiped, or its TTL or size cap
 * reached): for each object that has no metadata — streamed PutObjects,
 * multipart objects — one read of the whole object to hash it again, on its
 * first HEAD, GET or listing by casket (a listing of many such objects is
 * slow once), and the checksum a trailer carried (GetObject with
 * x-amz-checksum-mode then answers none). Never a wrong ETag: every entry
 * is keyed by the upstream's ETag of the version it describes.
 * Additional checksums (x-amz-checksum-*) are kept the same way, casket's own
 * rather than the upstream's (Ceph RGW 16 keeps none): with the object as
 * `x-amz-meta-casket-checksum` (single-part writes), and in the index under
 * `<upstream etag>#checksum` with the part checksums (every write that has
 * one, so listings and multipart objects need no HEAD).
 * Metadata casket writes (`casket-*`) is hidden from clients.
 *
 * Index entries this process wrote or read are also kept in memory (bounded):
 * an entry never goes stale (its key includes the upstream ETag), so the copy
 * is as good as the store, and a read of a known version costs no state-store
 * round trip or write.
 */
import { createHash } from 'node:crypto';
import { multipartETag } from '../../vocabulary/etag.js';
import type { StateStore } from '../../state/types.js';
import { decodeChecksum, encodeChecksum } from '../multipart-checksum.js';
import { ANSWERED_HEADER_NAMES, ENCRYPTION_HEADER_NAMES, LOCK_HEADER_NAMES, OBJECT_HEADER_NAMES, WRITE_ONLY_HEADER_NAMES, type ObjectChecksum, type ObjectHeaders, type ObjectInfo } from '../types.js';
import { drain, errorFrom, unreachable, type UpstreamClient, type UpstreamResponse } from './client.js';
import { formatFor, unquote, type ETagForm } from './capabilities.js';
import { fromUpstreamMetadataValue, toUpstreamMetadataValue } from './metadata-encoding.js';
import { Recent } from './recent.js';

export const META_SHA256 = 'casket-sha256';
export const META_WRITER = 'casket-writer';
export const META_CHECKSUM = 'casket-checksum';
const CASKET_META = 'casket-';

/** The current version as the upstream describes it, with casket's ETag resolved. */
export interface UpstreamObject {
  info: ObjectInfo;
  upstreamETag: string;
}

/** The object changed under a read that was pinned to one upstream ETag. */
export class VersionChanged extends Error {
  constructor() {
    super('the upstream object changed while it was being read');
    this.name = 'VersionChanged';
  }
}

/** User metadata without what casket keeps there (`casket-*`): clients never see it. */
export function withoutCasketMeta(metadata: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(metadata).filter(([k]) => !k.toLowerCase().startsWith(CASKET_META)));
}

/** What a write sends up: stored, encryption, Object Lock, tags and ACL (issue 44: nothing dropped). */
const SENT = [...OBJECT_HEADER_NAMES, ...ENCRYPTION_HEADER_NAMES, ...LOCK_HEADER_NAMES, ...WRITE_ONLY_HEADER_NAMES];
/** What GET/HEAD answers carry back: stored, encryption, Object Lock, tag count. */
const READ = [...OBJECT_HEADER_NAMES, ...ENCRYPTION_HEADER_NAMES, ...ANSWERED_HEADER_NAMES];

/** ObjectHeaders and user metadata as upstream request headers (casket-* names dropped from user metadata). */
export function upstreamObjectHeaders(headers: ObjectHeaders, metadata: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [field, name] of SENT) if (headers[field] !== undefined) out[name] = headers[field]!;
  for (const [name, value] of Object.entries(metadata)) if (!name.toLowerCase().startsWith(CASKET_META)) out[`x-amz-meta-${name.toLowerCase()}`] = toUpstreamMetadataValue(value);
  return out;
}

export function objectHeadersFrom(h: Record<string, string>): ObjectHeaders {
  const out: ObjectHeaders = {};
  for (const [field, name] of READ) if (h[name] !== undefined) out[field] = h[name];
  return out;
}

/** x-amz-meta-* from upstream response headers, casket's own entries hidden. */
export function userMetadataFrom(h: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(h)) {
    if (!name.startsWith('x-amz-meta-')) continue;
    const short = name.slice('x-amz-meta-'.length);
    if (!short.startsWith(CASKET_META)) out[short] = fromUpstreamMetadataValue(value);
  }
  return out;
}

/** Index entries kept in memory. */
const KNOWN_ENTRIES = 50_000;

type Resolved = { etag: string; partSizes?: number[]; checksum?: ObjectChecksum; partChecksums?: string[] };

/** An object's checksum as the index keeps it. */
export interface IndexedChecksum {
  checksum: ObjectChecksum;
  partChecksums?: string[];
}

function encodeIndexedChecksum(c: IndexedChecksum): string {
  return JSON.stringify({ checksum: encodeChecksum(c.checksum), ...(c.partChecksums && { parts: c.partChecksums }) });
}

function decodeIndexedChecksum(text: string | undefined): IndexedChecksum | undefined {
  if (text === undefined) return undefined;
  const raw = JSON.parse(text) as { checksum?: string; parts?: string[] };
  const checksum = decodeChecksum(raw.checksum);
  return checksum ? { checksum, ...(raw.parts && { partChecksums: raw.parts }) } : undefined;
}

export class ETagResolver {
  private readonly computing = new Map<string, Promise<Resolved>>();
  private readonly known = new Recent<Resolved>(KNOWN_ENTRIES);

  constructor(
    private readonly client: UpstreamClient,
    private readonly state: StateStore,
    private readonly ifMatchForm: () => Promise<ETagForm | false>,
  ) {}

  async remember(bucket: string, key: string, upstreamETag: string, etag: string, partSizes?: number[], checksum?: IndexedChecksum): Promise<void> {
    const id = `${bucket}\0${key}\0${upstreamETag}`;
    const known = this.known.get(id);
    if (known?.etag === etag && (partSizes === undefined || known.partSizes !== undefined) && (checksum === undefined || known.checksum !== undefined)) return;
    await Promise.all([
      this.state.putIndexedETag(bucket, key, upstreamETag, etag),
      partSizes && this.state.putIndexedETag(bucket, key, `${upstreamETag}#parts`, JSON.stringify(partSizes)),
      checksum && this.state.putIndexedETag(bucket, key, `${upstreamETag}#checksum`, encodeIndexedChecksum(checksum)),
    ]);
    this.known.set(id, { etag, ...(partSizes && { partSizes }), ...(checksum && { checksum: checksum.checksum }), ...(checksum?.partChecksums && { partChecksums: checksum.partChecksums }) });
  }

  /** From the index only (listing); undefined when not indexed. */
  async indexed(bucket: string, key: string, upstreamETag: string): Promise<Resolved | undefined> {
    const id = `${bucket}\0${key}\0${upstreamETag}`;
    const known = this.known.get(id);
    if (known) return known;
    // The index is a cache of what can be computed again: a state store that
    // cannot answer means "not indexed", so reads keep working through an outage.
    const lookup = (id: string) => this.state.getIndexedETag(bucket, key, id).catch(() => undefined);
    const etag = await lookup(upstreamETag);
    if (etag === undefined) return undefined;
    let resolved: Resolved = { etag };
    const [sizes, checksumText] = await Promise.all([etag.includes('-') ? lookup(`${upstreamETag}#parts`) : undefined, lookup(`${upstreamETag}#checksum`)]);
    if (sizes !== undefined) resolved = { etag, partSizes: JSON.parse(sizes) as number[] };
    const checksum = decodeIndexedChecksum(checksumText);
    if (checksum) resolved = { ...resolved, checksum: checksum.checksum, ...(checksum.partChecksums && { partChecksums: checksum.partChecksums }) };
    this.known.set(id, resolved);
    return resolved;
  }

  /**
   * indexed() for a listing page, in one state-store round trip
   * (getIndexedETags) rather than one per key: the same entries, so the same
   * answer per key — an entry is keyed by the upstream ETag the listing
   * shows, so a key rewritten around casket is simply not indexed (undefined,
   * and the caller HEADs it). A state store that cannot answer means none indexed.
   */
  async indexedMany(bucket: string, listed: ReadonlyArray<readonly [key: string, upstreamETag: string]>): Promise<Array<Resolved | undefined>> {
    const out: Array<Resolved | undefined> = listed.map(([key, upstreamETag]) => this.known.get(`${bucket}\0${key}\0${upstreamETag}`));
    const asked: number[] = [];
    const ids: Array<readonly [string, string]> = [];
    for (const [i, [key, upstreamETag]] of listed.entries()) {
      if (out[i] !== undefined) continue;
      asked.push(i);
      ids.push([key, upstreamETag], [key, `${upstreamETag}#checksum`]);
      // Part sizes exist only for composite ETags, which only a multipart upstream object has.
      if (upstreamETag.includes('-')) ids.push([key, `${upstreamETag}#parts`]);
    }
    if (ids.length === 0) return out;
    const values = await this.state.getIndexedETags(bucket, ids).catch(() => undefined);
    if (values === undefined) return out;
    let at = 0;
    for (const i of asked) {
      const [key, upstreamETag] = listed[i]!;
      const etag = values[at++];
      const checksumText = values[at++];
      const sizes = upstreamETag.includes('-') ? values[at++] : undefined;
      if (etag === undefined) continue;
      let resolved: Resolved = { etag };
      if (etag.includes('-') && sizes !== undefined) resolved = { etag, partSizes: JSON.parse(sizes) as number[] };
      const checksum = decodeIndexedChecksum(checksumText);
      if (checksum) resolved = { ...resolved, checksum: checksum.checksum, ...(checksum.partChecksums && { partChecksums: checksum.partChecksums }) };
      // Kept for HEAD/GET only when as complete as indexed() makes it: a
      // composite ETag of an upstream ETag without `-` had its sizes unasked.
      if (!etag.includes('-') || upstreamETag.includes('-')) this.known.set(`${bucket}\0${key}\0${upstreamETag}`, resolved);
      out[i] = resolved;
    }
    return out;
  }

  /**
   * casket's ETag of the version a HEAD/GET response describes: its casket
   * metadata, else the index, else computed by reading it (throws
   * VersionChanged if the object changed meanwhile). `versionId`: the
   * response was of that version of a versioned upstream (docs/design.md §10);
   * computing reads that version. The index serves every version alike: its
   * entries are keyed by the upstream's ETag of the bytes they describe.
   */
  async resolve(bucket: string, key: string, h: Record<string, string>, versionId?: string): Promise<UpstreamObject> {
    const upstreamETag = unquote(h.etag ?? '');
    const size = Number(h['content-length'] ?? 0);
    const meta = h[`x-amz-meta-${META_SHA256}`];
    let resolved: Resolved | undefined;
    if (meta !== undefined && /^[0-9a-f]{64}$/.test(meta) && !upstreamETag.includes('-')) {
      const checksum = decodeChecksum(h[`x-amz-meta-${META_CHECKSUM}`]);
      resolved = { etag: meta, ...(checksum && { checksum }) };
      // Index it so listings need no HEAD for this version.
      void this.remember(bucket, key, upstreamETag, meta, undefined, checksum && { checksum }).catch(() => {});
    } else {
      resolved = (await this.indexed(bucket, key, upstreamETag)) ?? (await this.compute(bucket, key, upstreamETag, size, versionId));
      // A streamed PutObject carries a checksum sent as a header with the
      // object, though not its SHA-256: it outlives a lost index entry.
      const checksum = upstreamETag.includes('-') ? undefined : decodeChecksum(h[`x-amz-meta-${META_CHECKSUM}`]);
      if (resolved.checksum === undefined && checksum) resolved = { ...resolved, checksum };
    }
    const writer = h[`x-amz-meta-${META_WRITER}`];
    const checksum = resolved.checksum;
    const info: ObjectInfo = {
      bucket,
      key,
      etag: resolved.etag,
      size,
      lastModified: h['last-modified'] ? new Date(h['last-modified']) : new Date(0),
      headers: objectHeadersFrom(h),
      metadata: userMetadataFrom(h),
      ...(resolved.partSizes && { partSizes: resolved.partSizes }),
      ...(writer !== undefined && { writer }),
      ...(checksum && { checksum }),
      ...(resolved.partChecksums && { partChecksums: resolved.partChecksums }),
      // A versioned upstream names the version (docs/design.md §10).
      ...(h['x-amz-version-id'] !== undefined && { versionId: h['x-amz-version-id'] }),
    };
    return { info, upstreamETag };
  }

  /** Reads the version once and indexes its SHA-256 ETag (deduplicated across concurrent callers). */
  compute(bucket: string, key: string, upstreamETag: string, size: number, versionId?: string): Promise<{ etag: string; partSizes?: number[] }> {
    const id = `${bucket}\0${key}\0${upstreamETag}`;
    let pending = this.computing.get(id);
    if (!pending) {
      pending = this.read(bucket, key, upstreamETag, size, versionId).finally(() => this.computing.delete(id));
      this.computing.set(id, pending);
    }
    return pending;
  }

  private async read(bucket: string, key: string, upstreamETag: string, size: number, versionId?: string): Promise<{ etag: string; partSizes?: number[] }> {
    const form = await this.ifMatchForm();
    const pin: Record<string, string> = form ? { 'if-match': formatFor(form, upstreamETag) } : {};
    const version: Record<string, string> = versionId !== undefined ? { versionId } : {};
    const m = /-(\d+)$/.exec(upstreamETag);
    if (!m) {
      const { sha256 } = await this.hash(await this.client.send({ method: 'GET', bucket, key, headers: pin, query: version }), bucket, key, upstreamETag);
      const etag = sha256.toString('hex');
      await this.remember(bucket, key, upstreamETag, etag).catch(() => {});
      return { etag };
    }
    const count = Number(m[1]);
    const digests: Buffer[] = [];
    const sizes: number[] = [];
    for (let n = 1; n <= count; n++) {
      const res = await this.client.send({ method: 'GET', bucket, key, query: { partNumber: String(n), ...version }, headers: pin });
      const honoured = res.headers['x-amz-mp-parts-count'] !== undefined || res.status === 206;
      const part = await this.hash(res, bucket, key, upstreamETag);
      if (n === 1 && !honoured && res.status === 200) {
        // The upstream ignores ?partNumber= (moto 5 answers with the whole
        // object): part boundaries are unknowable, so the ETag is the SHA-256
        // of the whole content, as for a single-part object. Consistent and
        // never stale, but not the composite form.
        if (part.size !== size) throw new VersionChanged();
        const etag = part.sha256.toString('hex');
        await this.remember(bucket, key, upstreamETag, etag).catch(() => {});
        return { etag };
      }
      digests.push(part.sha256);
      sizes.push(part.size);
    }
    if (sizes.reduce((a, b) => a + b, 0) !== size && size !== 0) throw new VersionChanged();
    const etag = multipartETag(digests);
    await this.remember(bucket, key, upstreamETag, etag, sizes).catch(() => {});
    return { etag, partSizes: sizes };
  }

  private async hash(res: UpstreamResponse, bucket: string, key: string, upstreamETag: string): Promise<{ sha256: Buffer; size: number }> {
    if (res.status === 412 || res.status === 404) {
      await drain(res);
      throw new VersionChanged();
    }
    if (res.status >= 300) throw await errorFrom(res, { method: 'GET', bucket, key });
    if (res.headers.etag !== undefined && unquote(res.headers.etag) !== upstreamETag) {
      res.body.destroy();
      throw new VersionChanged();
    }
    const hash = createHash('sha256');
    let size = 0;
    try {
      for await (const chunk of res.body) {
        hash.update(chunk as Buffer);
        size += (chunk as Buffer).length;
      }
    } catch (e) {
      throw unreachable(e as Error);
    }
    return { sha256: hash.digest(), size };
  }
}
