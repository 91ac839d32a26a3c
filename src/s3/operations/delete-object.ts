/**
 * DeleteObject and DeleteObjects
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_DeleteObjects.html):
 * a delete is a write — If-Match on DeleteObject, a per-object <ETag> in
 * DeleteObjects, and the agent rules — through the same guarded path as
 * PutObject. DeleteObjects takes at most 1000 keys, needs Content-MD5 or an
 * x-amz-checksum-* header, and reports each key on its own (Quiet: errors only).
 */
import type { ObjectInfo } from '../../backends/types.js';
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

async function deleteOne(ctx: RequestContext, services: Services, bucket: string, key: string, conditions: WriteConditions, operation: string): Promise<ObjectInfo | null> {
  return guardedWrite({
    ctx,
    services,
    bucket,
    key,
    operation,
    conditions,
    deletes: true,
    bodyComing: false,
    commit: (permit) => services.backend.deleteObject(bucket, key, { ...permit, ...(ctx.agent !== undefined && { writer: ctx.agent }) }),
    written: () => null,
    replaced: (deleted) => deleted,
    landed: () => null,
  });
}

export const DeleteObject: Handler = async (ctx, services) => {
  const { bucket, key } = requireKey(ctx);
  const versionId = ctx.query.get('versionId');
  if (versionId !== null && versionId !== 'null') throw new S3Error('NoSuchVersion', { fields: { Key: key, VersionId: versionId } });
  await deleteOne(ctx, services, bucket, key, writeConditionsFrom(ctx.headers), 'DeleteObject');
  return emptyResponse(204);
};

export const MAX_DELETE_KEYS = 1000;

interface DeleteEntry {
  key: string;
  etag?: string;
}

function parseDelete(doc: Record<string, unknown>): { quiet: boolean; entries: DeleteEntry[] } {
  const root = doc.Delete as { Quiet?: string; Object?: Array<{ Key?: unknown; ETag?: unknown; VersionId?: unknown }> } | undefined;
  if (!root || typeof root !== 'object') throw new S3Error('MalformedXML');
  const objects = root.Object ?? [];
  if (objects.length === 0 || objects.length > MAX_DELETE_KEYS) throw new S3Error('MalformedXML');
  const entries = objects.map((o) => {
    if (typeof o !== 'object' || o === null || typeof o.Key !== 'string' || o.Key === '') throw new S3Error('MalformedXML');
    if (o.VersionId !== undefined && o.VersionId !== 'null') throw new S3Error('NotImplemented', 'casket buckets are unversioned: VersionId must be "null".');
    return { key: o.Key, ...(typeof o.ETag === 'string' && { etag: o.ETag }) };
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
    const conditions: WriteConditions = entry.etag !== undefined ? { ifMatch: parseETagList(entry.etag) } : {};
    try {
      // Policies (DESIGN §7) per key: a refused key is an <Error> of its own, the others go on.
      ctx.access.authorize({ action: 's3:DeleteObject', resource: objectResource(bucket, entry.key) });
      await deleteOne(ctx, services, bucket, entry.key, conditions, 'DeleteObjects');
      if (!quiet) deleted.push({ Key: entry.key });
    } catch (e) {
      const err = e instanceof Refusal ? refusalError(e, ctx.etagSuffix) : isS3Error(e) ? e : undefined;
      if (!err) throw e;
      errors.push({ Key: entry.key, Code: err.code, Message: err.message, ...(err.fields.CurrentETag !== undefined && { CurrentETag: err.fields.CurrentETag }) });
    }
  }
  return xmlResponse('DeleteResult', { Deleted: deleted, Error: errors });
};
