/**
 * Forwarding an operation casket does not model (object tagging, ACLs,
 * versioning, bucket configuration... — see s3/detect.ts) to the upstream,
 * after casket authenticated the client: re-signed with the upstream's
 * credentials, the answer streamed back as is (the caller consumes or
 * destroys the body, as client.ts requires).
 *
 * Headers: hop-by-hop ones (RFC 9110 §7.6.1), `expect`, and everything casket
 * signs itself are dropped both ways; casket's own `x-amz-meta-casket-*`
 * never crosses.
 *
 * No upstream ETag leaks (docs/design.md §2): an `ETag` response header is dropped,
 * and a text answer (XML configuration documents, at most 1 MiB, read whole)
 * that carries an `<ETag>` element is refused with 501 rather than passed on
 * — the upstream's MD5 ETags are not casket's SHA-256 ones, and casket shows
 * an object under one ETag everywhere. Operations whose answers name object
 * ETags are modeled instead (ListObjectVersions, GetObjectAttributes).
 * Binary answers (torrents, Select event streams) stream through unread.
 */
import { Readable } from 'node:stream';
import { S3Error } from '../../vocabulary/errors.js';
import type { ForwardRequest, ForwardResponse } from '../types.js';
import { readBytes, type UpstreamClient, type UpstreamRequest } from './client.js';

/** The most of a text answer read to look for ETags in it. */
const MAX_TEXT_ANSWER = 1024 * 1024;

const NOT_FORWARDED = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'expect',
  'host', 'content-length', 'authorization', 'x-amz-date', 'x-amz-content-sha256', 'x-amz-security-token',
  'proxy-authorization', 'proxy-authenticate',
]);

function passes(name: string): boolean {
  return !NOT_FORWARDED.has(name) && !name.startsWith('x-amz-meta-casket-');
}

/** Upstream answers that may name an object ETag in their text: XML, and moto's text/html. */
function textual(contentType: string | undefined): boolean {
  return contentType === undefined || /xml|html|text\//i.test(contentType);
}

export async function forwardUpstream(client: UpstreamClient, request: ForwardRequest): Promise<ForwardResponse> {
  const method = request.method.toUpperCase();
  if (method !== 'GET' && method !== 'HEAD' && method !== 'PUT' && method !== 'POST' && method !== 'DELETE') throw new S3Error('MethodNotAllowed');
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) if (passes(name.toLowerCase())) headers[name.toLowerCase()] = value;
  const req: UpstreamRequest = {
    method,
    bucket: request.bucket,
    ...(request.key !== undefined && { key: request.key }),
    query: request.query,
    headers,
    ...(request.body !== undefined && { body: { data: request.body } }),
  };
  const res = await client.send(req);
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(res.headers)) if (passes(name) && name !== 'etag') out[name] = value;
  if (method === 'HEAD' || !textual(res.headers['content-type'])) return { status: res.status, headers: out, body: res.body };
  const text = await readBytes(res, MAX_TEXT_ANSWER);
  if (/<ETag>/i.test(text.toString('utf8'))) {
    throw new S3Error('NotImplemented', `casket does not forward this answer to ${method} ?${Object.keys(request.query).join('&')}: it carries the upstream's own ETags, which are not casket's.`);
  }
  out['content-length'] = String(text.length);
  return { status: res.status, headers: out, body: Readable.from(text.length > 0 ? [text] : []) };
}
