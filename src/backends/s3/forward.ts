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
 */
import { S3Error } from '../../vocabulary/errors.js';
import type { ForwardRequest, ForwardResponse } from '../types.js';
import type { UpstreamClient, UpstreamRequest } from './client.js';

const NOT_FORWARDED = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'expect',
  'host', 'content-length', 'authorization', 'x-amz-date', 'x-amz-content-sha256', 'x-amz-security-token',
  'proxy-authorization', 'proxy-authenticate',
]);

function passes(name: string): boolean {
  return !NOT_FORWARDED.has(name) && !name.startsWith('x-amz-meta-casket-');
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
  for (const [name, value] of Object.entries(res.headers)) if (passes(name)) out[name] = value;
  return { status: res.status, headers: out, body: res.body };
}
