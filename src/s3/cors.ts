/**
 * CORS on the wire, from the bucket's rules (vocabulary/cors.ts):
 * - a preflight `OPTIONS` (https://docs.aws.amazon.com/AmazonS3/latest/API/RESTOPTIONSobject.html)
 *   is answered before authentication, as browsers send it unsigned: 400
 *   without an Origin or an Access-Control-Request-Method, 403 when the
 *   bucket has no rules or none allows the request, else 200 with the
 *   matching rule's Access-Control-* headers;
 * - an actual request carrying `Origin` gets the matching rule's headers on
 *   its response, errors included (a browser must be able to read them). As
 *   AWS and Ceph RGW do, the method matched is Access-Control-Request-Method
 *   when the request names one, else the request's own.
 */
import type { Backend } from '../backends/types.js';
import { corsResponseHeaders, matchCorsRule, requestedHeaders } from '../vocabulary/cors.js';
import { S3Error } from '../vocabulary/errors.js';
import { bucketCorsRules } from './operations/bucket-cors.js';
import type { S3Response } from './respond.js';

export async function preflight(backend: Backend, bucket: string | undefined, headers: Record<string, string>): Promise<S3Response> {
  const origin = headers.origin;
  if (origin === undefined) throw new S3Error('BadRequest');
  const method = headers['access-control-request-method'];
  if (method === undefined) throw new S3Error('BadRequest', `Invalid Access-Control-Request-Method: null`);
  if (bucket === undefined) throw new S3Error('AccessForbidden', 'CORSResponse: Bucket not found');
  const rules = await bucketCorsRules(backend, bucket);
  if (!rules) throw new S3Error('AccessForbidden', 'CORSResponse: CORS is not enabled for this bucket.');
  const asked = requestedHeaders(headers['access-control-request-headers']);
  const rule = matchCorsRule(rules, origin, method, asked);
  if (!rule) {
    throw new S3Error('AccessForbidden', "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec.");
  }
  return { status: 200, headers: { ...corsResponseHeaders(rule, origin, asked), 'content-length': '0' } };
}

/** The Access-Control-* headers for an actual request's response; none without Origin or a matching rule. */
export async function actualRequestHeaders(backend: Backend, bucket: string | undefined, method: string, headers: Record<string, string>): Promise<Record<string, string>> {
  const origin = headers.origin;
  if (origin === undefined || bucket === undefined) return {};
  const rules = await bucketCorsRules(backend, bucket).catch(() => null);
  if (!rules) return {};
  const rule = matchCorsRule(rules, origin, headers['access-control-request-method'] ?? method);
  return rule ? corsResponseHeaders(rule, origin) : {};
}
