/**
 * GetObjectAttributes (https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObjectAttributes.html):
 * `GET /bucket/key?attributes` with `x-amz-object-attributes` naming what to
 * answer — ETag, Checksum, ObjectParts, StorageClass, ObjectSize — and
 * `x-amz-max-parts` / `x-amz-part-number-marker` paging the parts.
 *
 * casket models it on both backends (never forwarded), so the ETag is always
 * casket's SHA-256 one, never an upstream's MD5 (docs/design.md §2). It reads
 * the object's metadata only (HeadObject): no content, so no read stamp.
 *
 * Known differences from AWS S3: `Part` entries are listed with their sizes
 * for every multipart object whose part sizes casket knows (AWS lists them
 * only when the object has an additional checksum); `?versionId=` names a
 * version (docs/design.md §10). As AWS does, the ETag element is unquoted.
 */
import { versionHeader } from '../object-headers.js';
import type { ObjectInfo } from '../../backends/types.js';
import { checksumElementName } from '../../vocabulary/checksums.js';
import { S3Error } from '../../vocabulary/errors.js';
import { formatETag, unquoteETag } from '../../vocabulary/etag.js';
import type { XmlObject } from '../../vocabulary/xml.js';
import type { Handler } from '../context.js';
import { requireKey } from '../context.js';
import { httpDate, xmlResponse } from '../respond.js';

const ATTRIBUTES = ['ETag', 'Checksum', 'ObjectParts', 'StorageClass', 'ObjectSize'] as const;
type Attribute = (typeof ATTRIBUTES)[number];

const MAX_PARTS = 1000;

function requestedAttributes(header: string | undefined): Set<Attribute> {
  const names = (header ?? '').split(',').map((n) => n.trim()).filter((n) => n !== '');
  if (names.length === 0) throw new S3Error('InvalidArgument', { message: 'Missing required header for this request: x-amz-object-attributes', fields: { ArgumentName: 'x-amz-object-attributes' } });
  const wanted = new Set<Attribute>();
  for (const name of names) {
    const attribute = ATTRIBUTES.find((a) => a.toLowerCase() === name.toLowerCase());
    if (!attribute) throw new S3Error('InvalidArgument', { message: 'Invalid attribute name specified.', fields: { ArgumentName: 'x-amz-object-attributes', ArgumentValue: name } });
    wanted.add(attribute);
  }
  return wanted;
}

function nonNegative(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value.trim())) throw new S3Error('InvalidArgument', { message: `Provided ${name} not an integer or within integer range`, fields: { ArgumentName: name, ArgumentValue: value } });
  return Number(value.trim());
}

function objectParts(info: ObjectInfo, headers: Record<string, string>): XmlObject | undefined {
  const sizes = info.partSizes;
  if (!sizes) return undefined;
  const maxParts = Math.min(nonNegative(headers['x-amz-max-parts'], 'x-amz-max-parts', MAX_PARTS), MAX_PARTS);
  const marker = nonNegative(headers['x-amz-part-number-marker'], 'x-amz-part-number-marker', 0);
  const numbers = sizes.map((_, i) => i + 1).filter((n) => n > marker);
  const page = numbers.slice(0, maxParts);
  const isTruncated = numbers.length > page.length;
  const checksum = info.checksum;
  return {
    // TotalPartsCount is serialised as <PartsCount> (the S3 API model's xmlName).
    PartsCount: sizes.length,
    PartNumberMarker: marker,
    ...(isTruncated && page.length > 0 && { NextPartNumberMarker: page[page.length - 1]! }),
    MaxParts: maxParts,
    IsTruncated: isTruncated,
    Part: page.map((n) => ({
      PartNumber: n,
      Size: sizes[n - 1]!,
      ...(checksum && info.partChecksums?.[n - 1] !== undefined && { [checksumElementName(checksum.algorithm)]: info.partChecksums[n - 1]! }),
    })),
  };
}

export const GetObjectAttributes: Handler = async (ctx, { backend }) => {
  const { bucket, key } = requireKey(ctx);
  const versionId = ctx.query.get('versionId') ?? undefined;
  const wanted = requestedAttributes(ctx.headers['x-amz-object-attributes']);
  const info = await backend.headObject(bucket, key, versionId);
  if (!info) throw new S3Error('NoSuchKey', { fields: { Key: key } });
  const body: XmlObject = {};
  if (wanted.has('ETag')) body.ETag = unquoteETag(formatETag(info.etag, ctx.etagSuffix));
  if (wanted.has('Checksum') && info.checksum) {
    body.Checksum = { [checksumElementName(info.checksum.algorithm)]: info.checksum.value, ChecksumType: info.checksum.type };
  }
  if (wanted.has('ObjectParts')) {
    const parts = objectParts(info, ctx.headers);
    if (parts) body.ObjectParts = parts;
  }
  if (wanted.has('StorageClass')) body.StorageClass = 'STANDARD';
  if (wanted.has('ObjectSize')) body.ObjectSize = info.size;
  return xmlResponse('GetObjectAttributesResponse', body, 200, { 'last-modified': httpDate(info.lastModified), ...versionHeader(info) });
};
