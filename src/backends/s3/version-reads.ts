/**
 * S3 versioning in front of an upstream (docs/design.md §10): the upstream
 * keeps the versions, casket passes them through with its own ETag for each.
 *
 * - HeadObject / GetObject ?versionId= go upstream with that version id; the
 *   version's casket ETag comes from its metadata or the ETag index (etags.ts:
 *   keyed by the upstream's ETag, so every version has its own entry), else
 *   is computed by reading that version. The upstream's own answers for a
 *   version it has not (404 NoSuchVersion) or a delete marker (405, with
 *   x-amz-delete-marker) pass through.
 * - ListObjectVersions of a bucket with versioning goes upstream (?versions)
 *   and every version's ETag is rewritten to casket's the same way; delete
 *   markers, version ids, IsLatest and the paging markers are the upstream's.
 *   The page is scanned as bytes (version-listing-xml.ts), not parsed, and goes
 *   back with the result so the answer copies each entry's bytes through.
 *   A bucket that never had versioning is listed from ListObjectsV2
 *   (s3/operations/list-object-versions.ts): one GetBucketVersioning decides.
 * - A key whose current version is a delete marker: the upstream's 404 says
 *   so (x-amz-delete-marker, x-amz-version-id), read by a HEAD only once a
 *   GET/HEAD has found no current version.
 */
import { S3Error } from '../../vocabulary/errors.js';
import { validateKey } from '../../vocabulary/names.js';
import type { ByteRange, ListVersionsParams, ListVersionsResult, ObjectInfo, ObjectReader, VersionEntry } from '../types.js';
import { unquote } from './capabilities.js';
import { documentOf, drain, errorFrom, readBytes, rootOf, type UpstreamClient, type UpstreamRequest } from './client.js';
import type { ListedObject } from './listing-scan.js';
import { scanVersionListing } from './version-listing-xml.js';
import type { ETagResolver } from './etags.js';
import { PassThrough, type Readable } from 'node:stream';

/** A version's answer that is an error: its code, and the delete-marker headers S3 adds (API_GetObject). */
async function versionError(res: Awaited<ReturnType<UpstreamClient['send']>>, req: UpstreamRequest, versionId: string): Promise<S3Error> {
  const marker = res.headers['x-amz-delete-marker'] === 'true';
  if (req.method === 'HEAD') await drain(res);
  const error =
    res.status === 405 || marker
      ? new S3Error('MethodNotAllowed', { fields: { Method: req.method, ResourceType: 'DeleteMarker' } })
      : res.status === 404 && req.method === 'HEAD'
        ? new S3Error('NoSuchVersion', { fields: { Key: req.key, VersionId: versionId } })
        : await errorFrom(res, req);
  if (!marker) return error;
  return new S3Error(error.code, {
    message: error.message,
    fields: error.fields,
    headers: { 'x-amz-delete-marker': 'true', 'x-amz-version-id': res.headers['x-amz-version-id'] ?? versionId, ...(res.headers['last-modified'] && { 'last-modified': res.headers['last-modified'] }) },
  });
}

export class VersionReads {
  constructor(
    private readonly client: UpstreamClient,
    private readonly etags: ETagResolver,
  ) {}

  /** One version with casket's ETag (throws NoSuchVersion, MethodNotAllowed for a delete marker). */
  async head(bucket: string, key: string, versionId: string): Promise<{ info: ObjectInfo; upstreamETag: string }> {
    validateKey(key);
    const req: UpstreamRequest = { method: 'HEAD', bucket, key, query: { versionId } };
    const res = await this.client.send(req);
    if (res.status >= 300) throw await versionError(res, req, versionId);
    await drain(res);
    const resolved = await this.etags.resolve(bucket, key, res.headers, versionId);
    // Whether it is the current version would cost another HEAD: a read by id never counts as a read of the key (no read stamp).
    return { info: { ...resolved.info, versionId: res.headers['x-amz-version-id'] ?? versionId, noncurrent: true }, upstreamETag: resolved.upstreamETag };
  }

  /** A version's bytes: a HEAD for its casket ETag, then a GET of that version (a range of it) on open(). */
  async get(bucket: string, key: string, versionId: string): Promise<ObjectReader> {
    const { info, upstreamETag } = await this.head(bucket, key, versionId);
    return { info, open: (range) => this.open(bucket, key, versionId, upstreamETag, range) };
  }

  private open(bucket: string, key: string, versionId: string, upstreamETag: string, range?: ByteRange): Readable {
    const out = new PassThrough();
    const req: UpstreamRequest = { method: 'GET', bucket, key, query: { versionId }, headers: range ? { range: `bytes=${range.start}-${range.end}` } : {} };
    this.client.send(req).then(
      async (res) => {
        if (out.destroyed) return void res.body.destroy();
        // A version never changes; an ETag other than the one hashed means another object than the one described.
        if (res.status >= 300 || (res.headers.etag !== undefined && unquote(res.headers.etag) !== upstreamETag)) {
          const error = res.status >= 300 ? await versionError(res, req, versionId) : new S3Error('InternalError', 'The upstream answered another version than the one asked for.');
          res.body.destroy();
          out.destroy(error);
          return;
        }
        out.on('close', () => {
          if (!res.body.complete) res.body.destroy();
        });
        res.body.on('error', (e) => out.destroy(e));
        res.body.pipe(out);
      },
      (error: unknown) => out.destroy(error as Error),
    );
    return out;
  }

  /** The id of the delete marker that is the key's current version, if the upstream says it is one. */
  async currentDeleteMarker(bucket: string, key: string): Promise<string | undefined> {
    const res = await this.client.send({ method: 'HEAD', bucket, key });
    await drain(res);
    return res.status === 404 && res.headers['x-amz-delete-marker'] === 'true' ? res.headers['x-amz-version-id'] : undefined;
  }

  /** undefined when the bucket never had versioning (GetBucketVersioning answers no Status). */
  async list(bucket: string, params: ListVersionsParams): Promise<ListVersionsResult | undefined> {
    const { doc: config } = await this.client.xml({ method: 'GET', bucket, query: { versioning: '' } });
    if (typeof rootOf<{ Status?: string }>(config).Status !== 'string') return undefined;
    const query: Record<string, string> = { versions: '', prefix: params.prefix, 'max-keys': String(params.maxKeys) };
    if (params.delimiter) query.delimiter = params.delimiter;
    if (params.keyMarker) query['key-marker'] = params.keyMarker;
    if (params.versionIdMarker) query['version-id-marker'] = params.versionIdMarker;
    const req: UpstreamRequest = { method: 'GET', bucket, query };
    const page = await readBytes(await this.client.ok(req), 64 * 1024 * 1024);
    // The plain form every S3 server sends, scanned; anything else parsed in full (version-listing-xml.ts).
    const scanned = scanVersionListing(page);
    type Listed = ListedObject;
    const result = scanned ?? rootOf<{ Version?: Listed | Listed[]; DeleteMarker?: Listed | Listed[]; CommonPrefixes?: Array<{ Prefix?: string }>; IsTruncated?: string; NextKeyMarker?: string; NextVersionIdMarker?: string }>(documentOf(page.toString('utf8'), req));
    const many = <T>(x: T | T[] | undefined): T[] => (x === undefined ? [] : Array.isArray(x) ? x : [x]);
    // The upstream's owner, as its GetObjectAcl answers it (forwarded: passthrough).
    const owner = (v: Listed) => (typeof v.Owner?.ID === 'string' ? { owner: { ID: v.Owner.ID, DisplayName: typeof v.Owner.DisplayName === 'string' ? v.Owner.DisplayName : '' } } : {});
    const entry = (v: Listed): VersionEntry => ({ key: v.Key!, versionId: v.VersionId ?? 'null', isLatest: v.IsLatest === 'true', lastModified: v.LastModified ? new Date(v.LastModified) : new Date(0), ...owner(v) });
    // Entries without a key are passed over, and their spans with them.
    const named = <S>(list: Listed[], spans: S[] | undefined) => {
      const at = list.flatMap((v, i) => (typeof v.Key === 'string' ? [i] : []));
      return { list: at.map((i) => list[i]!), spans: spans && at.map((i) => spans[i]!) };
    };
    const { list: versions, spans: versionSpans } = named(many(result.Version), scanned?.versionSpans);
    const { list: markers, spans: markerSpans } = named(many(result.DeleteMarker), scanned?.deleteMarkerSpans);
    const entries: VersionEntry[] = [];
    // One state-store round trip for the page's ETags, not one per version.
    const indexed = await this.etags.indexedMany(bucket, versions.map((v) => [v.Key!, unquote(v.ETag ?? '')] as const));
    // Few at a time: a version casket has not indexed costs a HEAD (and, written around casket, a read).
    for (let i = 0; i < versions.length; i += 8) {
      entries.push(
        ...(await Promise.all(
          versions.slice(i, i + 8).map(async (v, j): Promise<VersionEntry> => {
            const size = Number(v.Size ?? 0);
            const known = indexed[i + j];
            const info: ObjectInfo = known
              ? { bucket, key: v.Key!, etag: known.etag, size, lastModified: entry(v).lastModified, headers: {}, metadata: {} }
              : (await this.head(bucket, v.Key!, v.VersionId ?? 'null')).info;
            return { ...entry(v), info };
          }),
        )),
      );
    }
    entries.push(...markers.map(entry));
    // Spans only for indexed versions (a HEAD's answer may differ from the page: a newer write) and for every delete marker.
    const spans = scanned && [...(versionSpans ?? []).map((s, i) => (indexed[i] ? s : undefined)), ...(markerSpans ?? [])];
    const commonPrefixes = (result.CommonPrefixes ?? []).map((p) => p.Prefix).filter((p): p is string => typeof p === 'string');
    return {
      entries,
      commonPrefixes,
      isTruncated: result.IsTruncated === 'true',
      ...(typeof result.NextKeyMarker === 'string' && result.NextKeyMarker !== '' && { nextKeyMarker: result.NextKeyMarker }),
      ...(typeof result.NextVersionIdMarker === 'string' && result.NextVersionIdMarker !== '' && { nextVersionIdMarker: result.NextVersionIdMarker }),
      ...(spans && { listed: { page, spans } }),
    };
  }
}
