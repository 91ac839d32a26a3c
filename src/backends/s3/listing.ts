/**
 * ListObjects on the upstream (ListObjectsV2 upstream, whatever the client
 * asked: s3/operations/list-objects.ts renders v1 or v2), with every ETag
 * rewritten to casket's: from the ETag index (etags.ts, one batched lookup
 * per page) when the upstream ETag is known, else by a HEAD of that key (written around casket, or by
 * another replica before it was indexed). The upstream's XML is scanned as
 * bytes rather than parsed in full (listing-xml.ts), and the page goes back
 * with the result, so the answer copies each indexed entry's bytes through.
 */
import { compareKeys } from '../../vocabulary/names.js';
import type { ListedSpans, ListObjectsParams, ListObjectsResult, ObjectInfo } from '../types.js';
import { headBucket } from './buckets.js';
import { unquote } from './capabilities.js';
import { documentOf, readBytes, rootOf, type UpstreamClient, type UpstreamRequest } from './client.js';
import { scanListing, type ListedObject, type UpstreamListing } from './listing-xml.js';
import type { ETagResolver } from './etags.js';
import type { Versions } from './versions.js';

export async function listObjects(client: UpstreamClient, etags: ETagResolver, versions: Versions, bucket: string, params: ListObjectsParams): Promise<ListObjectsResult> {
  // fetch-owner: each key's owner is the upstream's, as its forwarded GetObjectAcl answers it (s3-tests test_bucket_list_return_data).
  const query: Record<string, string> = { 'list-type': '2', prefix: params.prefix, 'max-keys': String(params.maxKeys), 'fetch-owner': 'true' };
  if (params.delimiter !== undefined && params.delimiter !== '') query.delimiter = params.delimiter;
  const after = startAfter(params);
  if (after !== undefined) query['start-after'] = after;
  if (params.maxKeys <= 0) {
    await headBucket(client, bucket);
    return { objects: [], commonPrefixes: [], isTruncated: false };
  }
  const req: UpstreamRequest = { method: 'GET', bucket, query };
  const page = await readBytes(await client.ok(req), 64 * 1024 * 1024);
  // The plain form every S3 server sends, scanned; anything else parsed in full (listing-xml.ts).
  const scanned = scanListing(page);
  const result: Partial<UpstreamListing> = scanned ?? rootOf<UpstreamListing>(documentOf(page.toString('utf8'), req));
  const listedSpans = scanned?.spans;
  const keep = (result.Contents ?? []).map((c) => typeof c.Key === 'string');
  const contents = (result.Contents ?? []).filter((_, i) => keep[i]);
  const spansOf = listedSpans?.filter((_, i) => keep[i]);
  // One state-store round trip for the page's ETags, not one per key.
  const indexed = await etags.indexedMany(bucket, contents.map((c) => [c.Key!, unquote(c.ETag ?? '')] as const));
  const objects: Array<ObjectInfo | undefined> = contents.map((c, i) => {
    const known = indexed[i];
    if (!known) return undefined;
    // Fields set one by one rather than spread from objects made for the purpose: 1,000 entries a page.
    const o: ObjectInfo = { bucket, key: c.Key!, etag: known.etag, size: Number(c.Size ?? 0), lastModified: c.LastModified ? new Date(c.LastModified) : new Date(0), headers: {}, metadata: {} };
    if (known.partSizes) o.partSizes = known.partSizes;
    if (known.checksum) o.checksum = known.checksum;
    const owner = ownerOf(c).owner;
    if (owner) o.owner = owner;
    return o;
  });
  // Not indexed (written around casket, or by another replica): HEAD, then
  // compute if need be, a few at a time; undefined: deleted since the listing.
  const missing = contents.flatMap((c, i) => (indexed[i] ? [] : [i]));
  const found = await mapLimit(missing, 8, async (i) => (await versions.current(bucket, contents[i]!.Key!))?.info);
  for (const [j, i] of missing.entries()) objects[i] = found[j] && { ...found[j]!, ...ownerOf(contents[i]!) };
  const commonPrefixes = (result.CommonPrefixes ?? []).map((p) => p.Prefix).filter((p): p is string => typeof p === 'string');
  const kept = objects.filter((o): o is ObjectInfo => o !== undefined);
  // Spans only for the indexed entries: a HEAD's answer may differ from the page (a newer write).
  const spans: Array<ListedSpans | undefined> | undefined = spansOf && objects.flatMap((o, i) => (o === undefined ? [] : [indexed[i] ? spansOf[i] : undefined]));
  const isTruncated = result.IsTruncated === 'true';
  const last = lastInOrder([...kept.map((o) => o.key), ...commonPrefixes]);
  return { objects: kept, commonPrefixes, isTruncated, ...(last !== undefined && { nextAfter: last }), ...(spans && { listed: { page, spans } }) };
}

/** The name that sorts last (compareKeys), in one pass: a page is read whole, never sorted for its end. */
function lastInOrder(names: string[]): string | undefined {
  let last: string | undefined;
  for (const name of names) if (last === undefined || compareKeys(name, last) > 0) last = name;
  return last;
}

function ownerOf(c: ListedObject): Pick<ObjectInfo, 'owner'> {
  return typeof c.Owner?.ID === 'string' ? { owner: { ID: c.Owner.ID, DisplayName: typeof c.Owner.DisplayName === 'string' ? c.Owner.DisplayName : '' } } : {};
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
