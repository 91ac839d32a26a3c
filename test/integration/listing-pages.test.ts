/**
 * A listing in front of an upstream is the upstream's page with casket's
 * ETags in it (src/backends/s3/listing-xml.ts reads the page's bytes,
 * src/s3/operations/listing-contents.ts copies them through and rewrites each
 * ETag): what a client sees of keys with every character XML escapes,
 * owners, checksums and sizes is what it wrote, and every ETag is the SHA-256
 * of the body — in ListObjectsV2, ListObjects (v1) and encoding-type=url.
 * The upstream here answers through a relay that cuts every answer into
 * 7-byte pieces, so a page arrives split inside its elements and references.
 */
import { CreateBucketCommand, ListObjectsCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { sdk } from '../helpers/clients.js';
import { raw } from '../helpers/raw.js';
import { etagOf } from '../helpers/suite.js';
import { tcpRelay, type TcpRelay } from '../helpers/tcp-relay.js';
import { startUpstream, upstreamKindFromEnv, type Upstream } from '../helpers/upstream.js';

const bucket = 'pages';
// Keys with each character the XML writer escapes, non-ASCII, spaces, a tab, and plain ones.
const KEYS = ['plain/a.txt', 'plain/b.txt', 'odd/a&b <c> "d" \'e\'.txt', 'odd/ünï cødé ☃ 𝄞', 'odd/tab\tend', 'odd/%2F+ ~', 'odd/]]>'];
/** Bytes per piece of an upstream answer. */
const PIECE = 7;
const bodyOf = (key: string) => `body of ${key} `.repeat(1 + (key.length % 3));

/** A relay to the upstream that hands casket every answer in 7-byte pieces, each on its own turn of the event loop. */
function choppingRelay(target: Upstream): Promise<TcpRelay> {
  return tcpRelay(target, (inbound, outbound) => {
    inbound.pipe(outbound);
    // One piece per turn, in order, whatever the upstream's own chunks were.
    const queue: Buffer[] = [];
    let sending = false;
    let ended = false;
    const pump = () => {
      const chunk = queue[0];
      if (chunk === undefined || inbound.destroyed) {
        sending = false;
        // The upstream closed (moto answers Connection: close): after the last piece.
        if (ended) inbound.end();
        return;
      }
      inbound.write(chunk.subarray(0, PIECE));
      if (chunk.length > PIECE) queue[0] = chunk.subarray(PIECE);
      else queue.shift();
      setImmediate(pump);
    };
    outbound.on('data', (chunk: Buffer) => {
      queue.push(chunk);
      if (!sending) {
        sending = true;
        pump();
      }
    });
    inbound.once('close', () => outbound.destroy());
    outbound.once('close', () => {
      ended = true;
      if (!sending) inbound.end();
    });
  });
}

describe('listings in front of an upstream', () => {
  let upstream: Upstream;
  let relay: TcpRelay;
  let casket: RunningCasket;
  let s3: S3Client;

  beforeAll(async () => {
    upstream = await startUpstream(upstreamKindFromEnv() ?? 'moto');
    relay = await choppingRelay(upstream);
    casket = await startCasket({ upstream: relay.upstream });
    s3 = sdk(casket.url, casket.admin);
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    for (const key of KEYS) {
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: bodyOf(key), ...(key.startsWith('plain/b') && { ChecksumAlgorithm: 'CRC32C' }) }));
    }
  });
  afterAll(async () => {
    s3?.destroy();
    await casket?.stop();
    await relay?.close();
    await upstream?.stop();
  });

  const sorted = [...KEYS].sort();

  it('ListObjectsV2: every key as written, every ETag the SHA-256 of its body, the checksum it was written with, owners only when asked', async () => {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket }));
    expect(page.Contents?.map((c) => c.Key)).toEqual(sorted);
    for (const c of page.Contents!) {
      expect(c.ETag, c.Key).toBe(etagOf(bodyOf(c.Key!)));
      expect(c.Size, c.Key).toBe(Buffer.byteLength(bodyOf(c.Key!)));
      expect(c.Owner).toBeUndefined();
      expect(c.StorageClass).toBe('STANDARD');
    }
    expect(page.Contents!.find((c) => c.Key === 'plain/b.txt')!.ChecksumAlgorithm).toEqual(['CRC32C']);
    expect(page.Contents!.find((c) => c.Key === 'plain/a.txt')!.ChecksumAlgorithm).not.toEqual(['CRC32C']);
    const owned = await s3.send(new ListObjectsV2Command({ Bucket: bucket, FetchOwner: true }));
    expect(owned.Contents!.every((c) => typeof c.Owner?.ID === 'string' && c.Owner.ID !== '')).toBe(true);
  });

  it('ListObjects (v1) and paging: the same keys and ETags, with owners, page after page', async () => {
    const seen: string[] = [];
    let marker: string | undefined;
    do {
      const page = await s3.send(new ListObjectsCommand({ Bucket: bucket, MaxKeys: 3, ...(marker !== undefined && { Marker: marker }) }));
      for (const c of page.Contents ?? []) {
        expect(c.ETag, c.Key).toBe(etagOf(bodyOf(c.Key!)));
        expect(c.Owner?.ID, c.Key).toBeTruthy();
        seen.push(c.Key!);
      }
      marker = page.IsTruncated ? page.Contents!.at(-1)!.Key : undefined;
    } while (marker !== undefined);
    expect(seen).toEqual(sorted);
  });

  it('encoding-type=url: every key percent-encoded as AWS does, decoding to what was written', async () => {
    const page = await raw(casket.url, casket.admin, { method: 'GET', path: `/${bucket}?list-type=2&encoding-type=url` });
    expect(page.status).toBe(200);
    const keys = [...page.body.matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => m[1]!);
    expect(keys.every((k) => /^[A-Za-z0-9%/._~*-]*$/.test(k))).toBe(true);
    expect(keys.map((k) => decodeURIComponent(k))).toEqual(sorted);
    expect([...page.body.matchAll(/<ETag>([^<]*)<\/ETag>/g)].map((m) => m[1]!.replace(/&quot;/g, '"'))).toEqual(sorted.map((k) => etagOf(bodyOf(k))));
  });
});
