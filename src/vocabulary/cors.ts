/**
 * A bucket's CORS configuration as AWS S3 reads and applies it
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/cors.html,
 * https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketCors.html):
 * at most 100 rules; each names AllowedMethod (GET, PUT, POST, DELETE, HEAD)
 * and AllowedOrigin (at most one `*` wildcard each), optionally
 * AllowedHeader (one `*` wildcard each), ExposeHeader, MaxAgeSeconds and ID.
 * A request is allowed by the FIRST rule whose origin matches, whose methods
 * include the method asked for, and whose AllowedHeaders cover every header
 * the preflight names ("How does Amazon S3 evaluate the CORS configuration
 * on a bucket?", same page). Origins match case-sensitively; headers do not.
 */
import { S3Error } from './errors.js';
import type { XmlObject } from './xml.js';

export interface CorsRule {
  id?: string;
  allowedMethods: string[];
  allowedOrigins: string[];
  allowedHeaders: string[];
  exposeHeaders: string[];
  maxAgeSeconds?: number;
}

const METHODS = new Set(['GET', 'PUT', 'POST', 'DELETE', 'HEAD']);
const MAX_RULES = 100;

function list(value: unknown): string[] {
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).map((v) => (typeof v === 'string' ? v.trim() : ''));
}

function malformed(message: string): S3Error {
  return new S3Error('MalformedXML', message);
}

/** The rules of a PutBucketCors body (parsed XML), checked as AWS checks them. */
export function parseCorsConfiguration(doc: Record<string, unknown>): CorsRule[] {
  const root = doc.CORSConfiguration as Record<string, unknown> | undefined;
  if (!root || typeof root !== 'object') throw malformed('The XML you provided was not well-formed or did not validate against our published schema.');
  const raw = root.CORSRule === undefined ? [] : Array.isArray(root.CORSRule) ? root.CORSRule : [root.CORSRule];
  if (raw.length === 0) throw malformed('The XML you provided was not well-formed or did not validate against our published schema.');
  if (raw.length > MAX_RULES) throw new S3Error('InvalidRequest', `The number of CORS rules should not exceed allowed limit of ${MAX_RULES} rules.`);
  return raw.map((entry): CorsRule => {
    const r = (entry ?? {}) as Record<string, unknown>;
    const allowedMethods = list(r.AllowedMethod);
    const allowedOrigins = list(r.AllowedOrigin);
    if (allowedMethods.length === 0 || allowedOrigins.length === 0) throw malformed('A CORSRule needs at least one AllowedMethod and one AllowedOrigin.');
    const unsupported = allowedMethods.find((m) => !METHODS.has(m));
    if (unsupported !== undefined) throw new S3Error('InvalidRequest', `Found unsupported HTTP method in CORS config. Unsupported method is ${unsupported}`);
    const origin = allowedOrigins.find((o) => o.split('*').length > 2);
    if (origin !== undefined) throw new S3Error('InvalidRequest', `AllowedOrigin "${origin}" can not have more than one wildcard.`);
    const allowedHeaders = list(r.AllowedHeader);
    const header = allowedHeaders.find((h) => h.split('*').length > 2);
    if (header !== undefined) throw new S3Error('InvalidRequest', `AllowedHeader "${header}" can not have more than one wildcard.`);
    const rule: CorsRule = { allowedMethods, allowedOrigins, allowedHeaders, exposeHeaders: list(r.ExposeHeader) };
    if (typeof r.ID === 'string') rule.id = r.ID;
    if (r.MaxAgeSeconds !== undefined) {
      const age = String(r.MaxAgeSeconds).trim();
      if (!/^\d+$/.test(age)) throw malformed('MaxAgeSeconds must be a whole number of seconds.');
      rule.maxAgeSeconds = Number(age);
    }
    return rule;
  });
}

/** The GetBucketCors body: the rules in the documented element order. */
export function corsConfigurationXml(rules: CorsRule[]): XmlObject {
  return {
    CORSRule: rules.map((r) => ({
      ID: r.id,
      AllowedHeader: r.allowedHeaders.length ? r.allowedHeaders : undefined,
      AllowedMethod: r.allowedMethods,
      AllowedOrigin: r.allowedOrigins,
      ExposeHeader: r.exposeHeaders.length ? r.exposeHeaders : undefined,
      MaxAgeSeconds: r.maxAgeSeconds,
    })),
  };
}

/** `pattern` with at most one `*`: the parts around it must be a prefix and a suffix that do not overlap. */
function wildcardMatch(pattern: string, value: string): boolean {
  const star = pattern.indexOf('*');
  if (star < 0) return pattern === value;
  const head = pattern.slice(0, star);
  const tail = pattern.slice(star + 1);
  return value.length >= head.length + tail.length && value.startsWith(head) && value.endsWith(tail);
}

/**
 * The first rule that allows `origin` to use `method` with `requestHeaders`
 * (the Access-Control-Request-Headers of a preflight, lower-cased), if any.
 */
export function matchCorsRule(rules: CorsRule[], origin: string, method: string, requestHeaders: string[] = []): CorsRule | undefined {
  return rules.find(
    (rule) =>
      rule.allowedOrigins.some((o) => wildcardMatch(o, origin)) &&
      rule.allowedMethods.includes(method) &&
      requestHeaders.every((h) => rule.allowedHeaders.some((a) => wildcardMatch(a.toLowerCase(), h))),
  );
}

/**
 * The Access-Control-* headers a matched rule gives a response: the origin
 * echoed (or `*` when the rule allows any origin, without credentials), the
 * rule's methods, its ExposeHeaders and MaxAgeSeconds; `Vary` names what the
 * answer depends on, so caches keep one per origin.
 */
export function corsResponseHeaders(rule: CorsRule, origin: string, requestHeaders: string[] = []): Record<string, string> {
  const any = rule.allowedOrigins.includes('*');
  const headers: Record<string, string> = {
    'access-control-allow-origin': any ? '*' : origin,
    'access-control-allow-methods': rule.allowedMethods.join(', '),
    vary: 'Origin, Access-Control-Request-Headers, Access-Control-Request-Method',
  };
  if (!any) headers['access-control-allow-credentials'] = 'true';
  if (requestHeaders.length) headers['access-control-allow-headers'] = requestHeaders.join(', ');
  if (rule.exposeHeaders.length) headers['access-control-expose-headers'] = rule.exposeHeaders.join(', ');
  if (rule.maxAgeSeconds !== undefined) headers['access-control-max-age'] = String(rule.maxAgeSeconds);
  return headers;
}

/** Access-Control-Request-Headers as a list of lower-case names. */
export function requestedHeaders(value: string | undefined): string[] {
  return (value ?? '').split(',').map((h) => h.trim().toLowerCase()).filter(Boolean);
}
