/**
 * POST Object (https://docs.aws.amazon.com/AmazonS3/latest/API/RESTObjectPOST.html):
 * a browser-form upload. What PutObject takes as headers arrives as form
 * fields before the `file` part (s3/post-form.ts); the signature is over the
 * base64 policy (auth/post-policy.ts), checked with every condition once the
 * key is known (handle.ts). The write itself is PutObject's: the same
 * guarded path (s3/write.ts), the SHA-256 ETag, the write log and events —
 * named PostObject there, as AWS names it (`s3:ObjectCreated:Post`) — and for
 * an agent the same rules as any agent write.
 *
 * Answers, as AWS: `success_action_redirect` (or the older `redirect`) that
 * parses as an http(s) URL → 303 to it with bucket, key and etag appended;
 * otherwise `success_action_status` 200 or 201 (an XML PostResponse) and
 * 204 for anything else or nothing.
 *
 * Known differences from AWS:
 * - Conditional writes: AWS documents If-Match / If-None-Match for PutObject
 *   and CompleteMultipartUpload only (conditional-writes.html); a form field
 *   of that name means nothing there. casket honours `If-Match` and
 *   `If-None-Match` form fields as PutObject honours the headers — like every
 *   field they must be named in the signed policy, so whoever signs the form
 *   decides (`{"if-none-match": "*"}`: create only). An agent's form without
 *   one is refused as its unconditional PutObject is (428, or conditioned on
 *   its last full read under --agent-writes read-stamp): a browser form is no
 *   way around the agent rules.
 * - `acl`, `tagging`, `x-amz-storage-class` fields are accepted (when the
 *   policy names them) and not applied, as PutObject's headers are not.
 * - The object's Content-Type is the `Content-Type` field only, never the
 *   file part's own header (AWS: binary/octet-stream without the field).
 */
import type { Payload } from '../../backends/types.js';
import { S3Error } from '../../vocabulary/errors.js';
import { formatETag } from '../../vocabulary/etag.js';
import { validateKey } from '../../vocabulary/names.js';
import { checksumHeaders, declaredChecksum } from '../checksum-headers.js';
import type { Handler } from '../context.js';
import { encryptionHeaders, madeVersionHeader } from '../object-headers.js';
import { emptyResponse, xmlResponse } from '../respond.js';
import { writeConditionsFrom } from '../write.js';
import { putKeepingAgentBody } from './put-object.js';

/** Form fields that stand for the PutObject request headers of the same name (RESTObjectPOST "Form fields"). */
const HEADER_FIELDS = new Set([
  'cache-control', 'content-type', 'content-disposition', 'content-encoding', 'content-language', 'expires',
  'content-md5', 'if-match', 'if-none-match',
]);
const HEADER_PREFIXES = ['x-amz-meta-', 'x-amz-checksum-', 'x-amz-server-side-encryption'];

/**
 * The fields as the headers PutObject would have carried. Header values in
 * casket are byte strings (one char per received byte, object-headers.ts);
 * form fields arrive as UTF-8 text, so they are turned into the same form.
 * Only fields: the POST's own headers (its Content-Type is the form's, an
 * If-Match header on it means nothing to S3) never reach the object.
 */
export function postObjectHeaders(fields: ReadonlyMap<string, string>, request: Record<string, string>): Record<string, string> {
  const headers: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const name of ['host', 'user-agent', 'amz-sdk-invocation-id']) if (request[name] !== undefined) headers[name] = request[name];
  for (const [name, value] of fields) {
    if (HEADER_FIELDS.has(name) || HEADER_PREFIXES.some((p) => name.startsWith(p))) headers[name] = Buffer.from(value, 'utf8').toString('latin1');
  }
  return headers;
}

/** The payload's view of those headers: the object's Content-Encoding is not a transfer framing of the file part. */
export function postPayloadHeaders(headers: Record<string, string>): Record<string, string> {
  const { 'content-encoding': _encoding, ...rest } = headers;
  return rest;
}

/** The `key` field with `${filename}` replaced by the file part's filename (RESTObjectPOST "key"). */
export function postObjectKey(fields: ReadonlyMap<string, string>, filename: string): string {
  const key = fields.get('key');
  if (key === undefined) {
    throw new S3Error('InvalidArgument', {
      message: "Bucket POST must contain a field named 'key'.  If it is specified, please check the order of the fields.",
      fields: { ArgumentName: 'key', ArgumentValue: '' },
    });
  }
  const substituted = key.split('${filename}').join(filename);
  validateKey(substituted);
  return substituted;
}

/** A redirect target AWS would follow: an absolute http(s) URL, as written; anything else is "as if the field is not present". */
function redirectTarget(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:' ? value : undefined;
  } catch {
    return undefined;
  }
}

export const PostObject: Handler = async (ctx, services) => {
  const form = ctx.postForm;
  if (!form || !ctx.bucket || ctx.key === undefined) throw new Error('PostObject without its form');
  const { bucket, key } = { bucket: ctx.bucket, key: ctx.key };
  const checksum = declaredChecksum(ctx.headers);
  const retainer = services.retainer;
  const info = await putKeepingAgentBody(
    ctx,
    services,
    { conditions: writeConditionsFrom(ctx.headers), operation: 'PostObject', ...(checksum !== undefined && { declaredChecksum: checksum }) },
    (): Payload => ctx.payload(),
    retainer !== undefined,
  );
  const etag = formatETag(info.etag, ctx.etagSuffix);
  const path = `/${encodeURIComponent(bucket)}/${key.split('/').map(encodeURIComponent).join('/')}`;
  const location = ctx.headers.host !== undefined ? `${form.secure ? 'https' : 'http'}://${ctx.headers.host}${path}` : path;
  const headers = { etag, location, ...checksumHeaders(info.checksum), ...madeVersionHeader(info), ...encryptionHeaders(info.headers) };
  const redirect = redirectTarget(form.fields.get('success_action_redirect') ?? form.fields.get('redirect'));
  if (redirect) {
    const query = `bucket=${encodeURIComponent(bucket)}&key=${encodeURIComponent(key)}&etag=${encodeURIComponent(etag)}`;
    const joint = !redirect.includes('?') ? '?' : redirect.endsWith('?') || redirect.endsWith('&') ? '' : '&';
    return emptyResponse(303, { ...headers, location: `${redirect}${joint}${query}` });
  }
  switch (form.fields.get('success_action_status')) {
    case '200':
      return emptyResponse(200, headers);
    case '201':
      return xmlResponse('PostResponse', { Location: location, Bucket: bucket, Key: key, ETag: etag }, 201, headers);
    default:
      return emptyResponse(204, headers);
  }
};
