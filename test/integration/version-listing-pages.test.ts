/**
 * ListObjectVersions in front of an upstream: a versioned bucket's page is
 * the upstream's (backends/s3/version-listing-xml.ts scans its bytes,
 * s3/operations/version-entries.ts copies Key, VersionId, LastModified, Size
 * and Owner through) with casket's ETag on every version — what the JS SDK
 * reads is what the upstream lists, every ETag the SHA-256 of that version's
 * body, and the raw answer is byte for byte what casket's XML writer gives for
 * those values, for a versioned bucket and one that never had versioning.
 */
import {
  CreateBucketCommand, DeleteObjectCommand, ListObjectVersionsCommand, PutBucketVersioningCommand, PutObjectCommand, S3Client,
  type ListObjectVersionsCommandOutput,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { versionEntry } from '../../src/s3/operations/version-entries.js';
import type { VersionEntry } from '../../src/backends/types.js';
import { toXml } from '../../src/vocabulary/xml.js';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { sdk } from '../helpers/clients.js';
import { raw } from '../helpers/raw.js';
import { etagOf } from '../helpers/suite.js';
import { startUpstream, upstreamKindFromEnv, type Upstream } from '../helpers/upstream.js';

const versioned = 'version-pages';
const plain = 'null-version-pages';
// Keys with each character the XML writer escapes, a CR (`&#xD;` on the wire at AWS), non-ASCII, and plain ones.
const KEYS = ['plain/a.txt', 'odd/a&b <c> "d" \'e\'.txt', 'odd/ünï ☃ 𝄞', 'plain/b.txt'];

describe('ListObjectVersions in front of an upstream', () => {
  let upstream: Upstream;
  let casket: RunningCasket;
  let s3: S3Client;
  let direct: S3Client;
  /** Each version's body, by version id. */
  const bodies = new Map<string, string>();

  beforeAll(async () => {
    upstream = await startUpstream(upstreamKindFromEnv() ?? 'moto');
    casket = await startCasket({ upstream });
    s3 = sdk(casket.url, casket.admin);
    direct = new S3Client({ endpoint: upstream.url, region: upstream.region, forcePathStyle: true, credentials: { accessKeyId: upstream.accessKey, secretAccessKey: upstream.secretKey } });
    await s3.send(new CreateBucketCommand({ Bucket: versioned }));
    await s3.send(new PutBucketVersioningCommand({ Bucket: versioned, VersioningConfiguration: { Status: 'Enabled' } }));
    await s3.send(new CreateBucketCommand({ Bucket: plain }));
    for (const [i, key] of [...KEYS, KEYS[0]!, KEYS[1]!].entries()) {
      const body = `body ${i} of ${key}`;
      const put = await s3.send(new PutObjectCommand({ Bucket: versioned, Key: key, Body: body }));
      bodies.set(put.VersionId!, body);
      if (i < KEYS.length) await s3.send(new PutObjectCommand({ Bucket: plain, Key: key, Body: body }));
    }
    await s3.send(new DeleteObjectCommand({ Bucket: versioned, Key: KEYS[3]! }));
  });
  afterAll(async () => {
    s3?.destroy();
    direct?.destroy();
    await casket?.stop();
    await upstream?.stop();
  });

  /** The writer's answer for a listing's values, with casket's ETag for each version (every Version, then every DeleteMarker). */
  function written(name: string, r: ListObjectVersionsCommandOutput, etag: (v: { Key?: string; VersionId?: string }) => string, owner: boolean): string {
    const entry = (v: { Key?: string; VersionId?: string; IsLatest?: boolean; LastModified?: Date; Owner?: { ID?: string; DisplayName?: string } }, size?: number): VersionEntry => ({
      key: v.Key!, versionId: v.VersionId!, isLatest: v.IsLatest!, lastModified: v.LastModified!,
      ...(owner && { owner: { ID: v.Owner!.ID!, DisplayName: v.Owner!.DisplayName ?? '' } }),
      ...(size !== undefined && { info: { bucket: name, key: v.Key!, etag: JSON.parse(etag(v)) as string, size, lastModified: v.LastModified!, headers: {}, metadata: {} } }),
    });
    return toXml('ListVersionsResult', {
      Name: name, Prefix: '', KeyMarker: '', VersionIdMarker: '', MaxKeys: 1000, IsTruncated: false,
      Version: (r.Versions ?? []).map((v) => versionEntry(entry(v, v.Size!), { etagSuffix: false })),
      DeleteMarker: (r.DeleteMarkers ?? []).map((m) => versionEntry(entry(m), { etagSuffix: false })),
    });
  }

  it('the JS SDK reads the upstream\'s versions and delete markers, each version with the SHA-256 of its body, page after page', async () => {
    const upstreamListing = await direct.send(new ListObjectVersionsCommand({ Bucket: versioned }));
    const listing = await s3.send(new ListObjectVersionsCommand({ Bucket: versioned }));
    const ids = (r: ListObjectVersionsCommandOutput) => [r.Versions?.map((v) => [v.Key, v.VersionId, v.IsLatest, v.Size, v.LastModified?.getTime(), v.Owner?.ID]), r.DeleteMarkers?.map((m) => [m.Key, m.VersionId, m.IsLatest, m.Owner?.ID])];
    expect(ids(listing)).toEqual(ids(upstreamListing));
    expect(listing.Versions).toHaveLength(KEYS.length + 2);
    expect(listing.DeleteMarkers?.map((m) => m.Key)).toEqual([KEYS[3]]);
    expect(new Set(listing.Versions!.map((v) => v.Key))).toEqual(new Set(KEYS));
    for (const v of listing.Versions!) expect(v.ETag, v.Key).toBe(etagOf(bodies.get(v.VersionId!)!));
    // Pages of 2 (versions and markers count alike) add up to the same listing.
    const seen: string[] = [];
    let markers: { KeyMarker?: string; VersionIdMarker?: string } = {};
    for (let page = 0; page < 10; page++) {
      const r = await s3.send(new ListObjectVersionsCommand({ Bucket: versioned, MaxKeys: 2, ...markers }));
      seen.push(...[...(r.Versions ?? []), ...(r.DeleteMarkers ?? [])].map((v) => v.VersionId!));
      if (!r.IsTruncated) break;
      markers = { KeyMarker: r.NextKeyMarker, VersionIdMarker: r.NextVersionIdMarker };
    }
    expect(seen.sort()).toEqual([...listing.Versions!, ...listing.DeleteMarkers!].map((v) => v.VersionId!).sort());
  });

  it('a raw request gets byte for byte what the XML writer gives for the upstream\'s values with casket\'s ETags', async () => {
    const values = await direct.send(new ListObjectVersionsCommand({ Bucket: versioned }));
    const answer = await raw(casket.url, casket.admin, { method: 'GET', path: `/${versioned}?versions` });
    expect(answer.status).toBe(200);
    expect(answer.body).toBe(written(versioned, values, (v) => etagOf(bodies.get(v.VersionId!)!), true));
  });

  it('a bucket that never had versioning: byte for byte the writer\'s, each object once as its null version', async () => {
    const values = await s3.send(new ListObjectVersionsCommand({ Bucket: plain }));
    expect(values.Versions?.map((v) => [v.VersionId, v.IsLatest])).toEqual(KEYS.map(() => ['null', true]));
    const answer = await raw(casket.url, casket.admin, { method: 'GET', path: `/${plain}?versions` });
    const byKey = new Map(values.Versions!.map((v) => [v.Key!, v.ETag!]));
    // casket's owner, not the upstream's: these versions are casket's null versions.
    expect(answer.body).toBe(written(plain, values, (v) => byKey.get(v.Key!)!, false));
    for (const [i, key] of KEYS.entries()) expect(byKey.get(key), key).toBe(etagOf(`body ${i} of ${key}`));
  });
});
