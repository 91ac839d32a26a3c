/**
 * What a handler answers, independent of Hono: status, headers and a body that
 * may be a stream. server.ts writes it to the socket with backpressure. Also
 * the one place that renders S3 error XML
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html).
 */
import type { Readable } from 'node:stream';
import type { S3Error } from '../vocabulary/errors.js';
import { toXml, type XmlObject } from '../vocabulary/xml.js';

export interface S3Response {
  status: number;
  headers: Record<string, string>;
  body?: string | Buffer | Readable;
  /**
   * Called once when the exchange is over; `complete` is true only when every
   * byte of the body was handed to the client's connection (a read stamp is
   * full only then — docs/design.md §4). Resolves once what it records is recorded
   * (the read stamp, the retained version): the socket path does not wait
   * for it; an in-process caller (the MCP tools) does, so its next call
   * sees the stamp.
   */
  onFinish?: (complete: boolean) => void | Promise<void>;
  /**
   * Called once when casket starts sending this response on a connection,
   * before its first byte; onFinish always follows. A GetObject to an agent
   * marks its read as in flight here (guard.ts, readDelivering).
   */
  onSend?: () => void;
}

/**
 * Sent with every S3 answer, object bodies first of all: whatever a key
 * stores (text/html, an SVG, bytes a browser would sniff into HTML) must not
 * run as a page of casket's origin, where the console and its session cookie
 * live (docs/design.md §14).
 *
 * - `Content-Security-Policy: sandbox` (CSP3 §6.3.2): the document gets an
 *   opaque origin, no scripts, no forms, no plugins, no popups; a script it
 *   carries never runs, and even if it did it could not read casket's
 *   cookies or same-origin answers. No allow-* token on purpose.
 * - `X-Content-Type-Options: nosniff` (Fetch §X-Content-Type-Options): the
 *   declared Content-Type is the type; `binary/octet-stream` is not sniffed
 *   into HTML, and a stored "image" is not run as a script.
 *
 * The anchors: MinIO sends X-Content-Type-Options: nosniff and
 * X-XSS-Protection on every answer (cmd/generic-handlers.go, its security
 * headers middleware) and `Content-Security-Policy: block-all-mixed-content`,
 * which stops nothing of this; AWS S3 sends neither and relies on the bucket
 * being another origin than the AWS console. casket shares its origin with
 * its console, so it sends the stricter pair. SDKs and CLIs ignore both
 * (they are response headers for browsers only); a page that must run
 * scripts is served by a web server, not by an object store's API.
 */
export const OBJECT_BODY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': 'sandbox',
  'x-content-type-options': 'nosniff',
};

/** RFC 9110 §5.6.7 IMF-fixdate, as S3 sends Last-Modified. */
export function httpDate(date: Date): string {
  return date.toUTCString();
}

/** ISO 8601 with milliseconds, as S3 XML carries dates. */
export function xmlDate(date: Date): string {
  return date.toISOString();
}

export function xmlResponse(rootName: string, body: XmlObject, status = 200, headers: Record<string, string> = {}): S3Response {
  return { status, headers: { 'content-type': 'application/xml', ...headers }, body: toXml(rootName, body) };
}

export function emptyResponse(status = 200, headers: Record<string, string> = {}): S3Response {
  return { status, headers };
}

export function errorResponse(err: S3Error, requestId: string, resource: string, method: string): S3Response {
  const headers: Record<string, string> = { ...err.headers };
  // HEAD responses and 304 carry no body (RFC 9110 §9.3.2, §15.4.5).
  if (method === 'HEAD' || err.status === 304) {
    if (err.status !== 304) headers['x-amz-error-code'] = err.code;
    return { status: err.status, headers };
  }
  const body: XmlObject = { Code: err.code, Message: err.message };
  for (const [name, value] of Object.entries(err.fields)) if (value !== undefined) body[name] = value;
  body.Resource = resource;
  body.RequestId = requestId;
  return { status: err.status, headers: { ...headers, 'content-type': 'application/xml' }, body: toXml('Error', body, false) };
}
