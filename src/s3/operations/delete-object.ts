/**
 * DeleteObject and DeleteObjects
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_DeleteObject.html,
 * https://docs.aws.amazon.com/AmazonS3/latest/API/API_DeleteObjects.html):
 * a delete is a write — If-Match on DeleteObject, a per-object <ETag> in
 * DeleteObjects, and the agent rules — through the same guarded path as
 * PutObject. The conditional deletes AWS added in 2024 —
 * `x-amz-if-match-size` and `x-amz-if-match-last-modified-time`
 * (DeleteObjects: `<Size>`, `<LastModifiedTime>`) — are checked atomically at
 * commit like If-Match: 412 when the object differs, 204 when it does not
 * exist. In a versioned bucket (docs/design.md §10) a delete without a
 * version id makes a delete marker (x-amz-delete-marker, x-amz-version-id;
 * DeleteObjects: <DeleteMarker>, <DeleteMarkerVersionId>), and one with a
 * version id (`?versionId=`, `<VersionId>`) removes that version for good;
 * the conditions are checked against the current version either way.
 * DeleteObjects takes at most 1000 keys, needs
 * Content-MD5 or an x-amz-checksum-* header, and reports each key on its own
 * (Quiet: errors only).
 */
import type { DeleteResult } from '../../backends/types.js';
import { Refusal } from '../../guard/refusal.js';
import type { WriteConditions } from '../../guard/preconditions.js';
import { S3Error, isS3Error } from '../../vocabulary/errors.js';
import { parseETagList } from '../../vocabulary/etag.js';
import type { Handler, RequestContext, Services } from '../context.js';
import { requireBucket, requireKey } from '../context.js';
import { objectResource } from '../actions.js';
import { refusalError } from '../refusal-error.js';
import { emptyResponse, xmlResponse } from '../respond.js';
import { guardedWrite, writeConditionsFrom } from '../write.js';
import { readXmlBody, type XmlObject } from '../../vocabulary/xml.js';

/** x-amz-bypass-governance-retention (API_DeleteObject, API_DeleteObjects): authorized in actions.ts / per key, carried to the upstream. */
function bypassesGovernance(ctx: RequestContext): boolean {
  return ctx.headers['x-amz-bypass-governance-retention']?.toLowerCase() === 'true';
}

async function deleteOne(ctx: RequestContext, services: Services, bucket: string, key: string, conditions: WriteConditions, operation: string, versionId: string | undefined): Promise<DeleteResult> {
  return guardedWrite<DeleteResult>({
    ctx,
    services,
    bucket,
    key,
    operation,
    conditions,
    deletes: true,
    bodyComing: false,
    commit: (permit) => services.backend.deleteObject(bucket, key, { ...permit, ...(ctx.agent !== undefined && { writer: ctx.agent }), ...(versionId !== undefined && { versionId }), ...(bypassesGovernance(ctx) && { bypassGovernanceRetention: true as const }) }),
    written: () => null,
    replaced: (result) => result.replaced,
    madeVersion: (result) => (versionId === undefined && result.deleteMarker ? result.versionId : undefined),
    landed: () => ({ replaced: null }),
  });
}

/** A conditional-delete size: bytes, a non-negative integer. */
function parseSize(value: string, name: string): number {
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(Number(value))) throw new S3Error('InvalidArgument', { message: `Invalid ${name}`, fields: { ArgumentName: name, ArgumentValue: value } });
  return Number(value);
}

/** A conditional-delete time: RFC 822 / HTTP date as the SDKs send it (header and XML alike), or ISO 8601. */
function parseTime(value: string, name: string): Date {
  const ms = Date.parse(value.trim());
  if (Number.isNaN(ms)) throw new S3Error('InvalidArgument', { message: `Invalid ${name}`, fields: { ArgumentName: name, ArgumentValue: value } });
  return new Date(ms);
}

/** DeleteObject's write conditions: If-Match / If-None-Match and the two AWS added in 2024. */
function deleteConditionsFrom(headers: Record<string, string>): WriteConditions {
  const c = writeConditionsFrom(headers);
  const size = headers['x-amz-if-match-size'];
  const time = headers['x-amz-if-match-last-modified-time'];
  if (size !== undefined) c.ifMatchSize = parseSize(size, 'x-amz-if-match-size');
  if (time !== undefined) c.ifMatchLastModifiedTime = parseTime(time, 'x-amz-if-match-last-modified-time');
  return c;
}

export const DeleteObject: Handler = async (ctx, services) => {
  const { bucket, key } = requireKey(ctx);
  const versionId = ctx.query.get('versionId') ?? undefined;
  const result = await deleteOne(ctx, services, bucket, key, deleteConditionsFrom(ctx.headers), 'DeleteObject', versionId);
  return emptyResponse(204, {
    ...(result.versionId !== undefined && { 'x-amz-version-id': result.versionId }),
    ...(result.deleteMarker && { 'x-amz-delete-marker': 'true' }),
  });
};

export const MAX_DELETE_KEYS = 1000;

interface DeleteEntry {
  key: string;
  versionId?: string;
  conditions: WriteConditions;
}

function optionalText(value: unknown): string | undefined {
  if (value !== undefined && typeof value !== 'string') throw new S3Error('MalformedXML');
  return value;
}

function parseDelete(doc: Record<string, unknown>): { quiet: boolean; entries: DeleteEntry[] } {
  const root = doc.Delete as { Quiet?: string; Object?: Array<{ Key?: unknown; ETag?: unknown; VersionId?: unknown; Size?: unknown; LastModifiedTime?: unknown }> } | undefined;
  if (!root || typeof root !== 'object') throw new S3Error('MalformedXML');
  const objects = root.Object ?? [];
  if (objects.length === 0 || objects.length > MAX_DELETE_KEYS) throw new S3Error('MalformedXML');
  const entries = objects.map((o): DeleteEntry => {
    if (typeof o !== 'object' || o === null || typeof o.Key !== 'string' || o.Key === '') throw new S3Error('MalformedXML');
    if (o.VersionId !== undefined && typeof o.VersionId !== 'string') throw new S3Error('MalformedXML');
    const etag = optionalText(o.ETag);
    const size = optionalText(o.Size);
    const time = optionalText(o.LastModifiedTime);
    const conditions: WriteConditions = {
      ...(etag !== undefined && { ifMatch: parseETagList(etag) }),
      ...(size !== undefined && { ifMatchSize: parseSize(size, 'Size') }),
      ...(time !== undefined && { ifMatchLastModifiedTime: parseTime(time, 'LastModifiedTime') }),
    };
    return { key: o.Key, ...(o.VersionId !== undefined && { versionId: o.VersionId }), conditions };
  });
  return { quiet: String(root.Quiet ?? '').trim().toLowerCase() === 'true', entries };
}

export const DeleteObjects: Handler = async (ctx, services) => {
  const bucket = requireBucket(ctx);
  if (ctx.headers['content-md5'] === undefined && !Object.keys(ctx.headers).some((h) => h.startsWith('x-amz-checksum-') && h !== 'x-amz-checksum-type')) {
    throw new S3Error('InvalidRequest', 'Missing required header for this request: Content-MD5');
  }
  await services.backend.headBucket(bucket);
  const { quiet, entries } = parseDelete(await readXmlBody(ctx.payload().stream));
  const deleted: XmlObject[] = [];
  const errors: XmlObject[] = [];
  for (const entry of entries) {
    const version = entry.versionId !== undefined ? { VersionId: entry.versionId } : {};
    try {
      // Policies (docs/design.md §7) per key: a refused key is an <Error> of its own, the others go on.
      ctx.access.authorize({ action: entry.versionId !== undefined ? 's3:DeleteObjectVersion' : 's3:DeleteObject', resource: objectResource(bucket, entry.key) });
      if (bypassesGovernance(ctx)) ctx.access.authorize({ action: 's3:BypassGovernanceRetention', resource: objectResource(bucket, entry.key) });
      const result = await deleteOne(ctx, services, bucket, entry.key, entry.conditions, 'DeleteObjects', entry.versionId);
      // API_DeletedObject: DeleteMarker and DeleteMarkerVersionId name a marker made or removed.
      const marker = result.deleteMarker ? { DeleteMarker: true, ...(result.versionId !== undefined && { DeleteMarkerVersionId: result.versionId }) } : {};
      if (!quiet) deleted.push({ Key: entry.key, ...version, ...marker });
    } catch (e) {
      if (e instanceof Refusal) services.guard.report(e, ctx.agent, { accessKey: ctx.accessKey, requestId: ctx.requestId, operation: 'DeleteObjects' });
      let err = e instanceof Refusal ? refusalError(e, ctx.etagSuffix) : isS3Error(e) ? e : undefined;
      // A version id of the wrong form: DeleteObjects names it NoSuchVersion where DeleteObject says InvalidArgument (as AWS).
      if (err?.code === 'InvalidArgument' && entry.versionId !== undefined) err = new S3Error('NoSuchVersion');
      if (!err) throw e;
      errors.push({ Key: entry.key, ...version, Code: err.code, Message: err.message, ...(err.fields.CurrentETag !== undefined && { CurrentETag: err.fields.CurrentETag }) });
    }
  }
  return xmlResponse('DeleteResult', { Deleted: deleted, Error: errors });
};
