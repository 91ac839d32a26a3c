/**
 * AWS Signature Version 2 verification for S3: the `Authorization: AWS
 * AccessKeyId:Signature` header and presigned URLs (`AWSAccessKeyId`,
 * `Signature`, `Expires` in the query).
 *
 * Spec followed: "Signing and authenticating REST requests (AWS signature
 * version 2)", https://docs.aws.amazon.com/AmazonS3/latest/userguide/RESTAuthentication.html
 *
 *   Signature    = Base64(HMAC-SHA1(secret, UTF-8(StringToSign)))
 *   StringToSign = Verb \n Content-MD5 \n Content-Type \n Date \n
 *                  CanonicalizedAmzHeaders CanonicalizedResource
 *
 * Date is empty when x-amz-date is present (it is signed among the amz
 * headers instead); a presigned URL puts Expires (epoch seconds) in its place.
 * CanonicalizedResource is "/bucket" for a virtual-hosted request, then the
 * path as received, then the signed sub-resources, sorted, values decoded.
 *
 * Who sends it: boto3 / botocore's default presigner against a custom
 * endpoint in us-east-1 (README "Clients"), s3cmd with `signature_v2 = True`,
 * older tools. Same credentials, agent binding and error codes as SigV4.
 *
 * Known gaps / leniencies:
 * - V2 signs no payload hash: the body is treated as UNSIGNED-PAYLOAD (a
 *   literal x-amz-content-sha256 or a Content-MD5 is still checked by the
 *   payload code). Signed streaming (aws-chunked) modes need SigV4.
 * - Clients disagree on which sub-resources V2 signs (botocore signs
 *   `tagging` and the response-* overrides, s3cmd and the AWS page do not):
 *   both lists are tried, and the path both as received and normalised (and
 *   "/bucket/" for a path-style "/bucket").
 * - Presigned URLs: x-amz-* query parameters (botocore hoists signed x-amz-*
 *   headers into the query) and content-type / content-md5 parameters are
 *   signed as if they were headers; they are not applied as headers.
 * - AWS puts no upper bound on a V2 URL's Expires; neither does casket.
 * - x-amz-security-token (session credentials) is not supported.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { S3Error } from '../vocabulary/errors.js';
import type { CredentialLookup } from './credentials.js';
import {
  MAX_SKEW_MS,
  STREAMING_UNSIGNED_TRAILER,
  UNSIGNED_PAYLOAD,
  canonicalUri,
  percentDecode,
  type AuthResult,
  type PayloadMode,
  type SignedRequest,
} from './sigv4.js';

/** Sub-resources the AWS page names (and s3cmd signs). */
const DOCUMENTED_SUBRESOURCES = [
  'acl', 'cors', 'delete', 'lifecycle', 'location', 'logging', 'notification', 'partNumber', 'policy', 'requestPayment',
  'restore', 'torrent', 'uploadId', 'uploads', 'versionId', 'versioning', 'versions', 'website',
  'response-cache-control', 'response-content-disposition', 'response-content-encoding', 'response-content-language',
  'response-content-type', 'response-expires',
];
/** What botocore's HmacV1Auth signs besides: newer sub-resources V2 clients sign. */
const WIDER_SUBRESOURCES = [
  ...DOCUMENTED_SUBRESOURCES,
  'accelerate', 'analytics', 'defaultObjectAcl', 'inventory', 'legal-hold', 'metrics', 'object-lock', 'replication',
  'retention', 'select', 'select-type', 'storageClass', 'tagging',
];
/** Each list in the order V2 signs sub-resources: by name (code units, as botocore's sort). */
const SUBRESOURCE_ORDERS = [WIDER_SUBRESOURCES, DOCUMENTED_SUBRESOURCES].map((names) => [...names].sort());

export interface SigV2Options {
  /** casket's virtual-host domain: a request to `bucket.<domain>` signs "/bucket" before its path. */
  domain?: string;
  now?: Date;
}

/** Whether a request is signed with Signature Version 2 (header or query form). */
export function isSigV2(req: SignedRequest): boolean {
  const authorization = req.headers['authorization'];
  // Two mechanisms at once (a V2 or V4 query besides the header) is SigV4's InvalidArgument to report.
  if (authorization !== undefined) {
    return /^AWS\s/.test(authorization.trim()) && !/(?:^|&)(?:Signature|AWSAccessKeyId)(?:=|&|$)/.test(req.rawQuery) && !/(?:^|&)x-amz-(?:signature|algorithm)=/i.test(req.rawQuery);
  }
  // This runs on every request: the query is parsed only when it names a V2 parameter.
  return /(?:^|&)(?:Signature|AWSAccessKeyId)(?:=|&|$)/.test(req.rawQuery) && !queryParams(req.rawQuery).some((p) => /^x-amz-(signature|algorithm)$/i.test(p.name));
}

/**
 * Verifies a Signature Version 2 request (isSigV2 said it is one); throws
 * S3Error when it does not verify.
 */
export function verifySigV2(req: SignedRequest, lookup: CredentialLookup, options: SigV2Options = {}): AuthResult {
  const now = options.now ?? new Date();
  const query = queryParams(req.rawQuery);
  const authorization = req.headers['authorization'];
  const presigned = authorization === undefined;

  let accessKeyId: string;
  let signature: string;
  let datePosition: string;
  if (!presigned) {
    // "AWS AKIAIOSFODNN7EXAMPLE:frJIUN8DYpKDtOLCwo//yllqDzg=": the signature is after the last colon.
    const value = authorization.trim().slice(3).trim();
    const colon = value.lastIndexOf(':');
    if (colon <= 0 || colon === value.length - 1) {
      throw new S3Error('InvalidArgument', { message: 'Authorization header is invalid -- one and only one \' \' (space) required', fields: { ArgumentName: 'Authorization', ArgumentValue: authorization } });
    }
    accessKeyId = value.slice(0, colon);
    signature = value.slice(colon + 1);
    datePosition = checkRequestTime(req.headers, now);
  } else {
    const param = (name: string) => query.find((p) => p.name === name)?.value;
    const key = param('AWSAccessKeyId');
    const sig = param('Signature');
    const expires = param('Expires');
    if (key === undefined || sig === undefined || expires === undefined) {
      throw new S3Error('AccessDenied', 'Query-string authentication requires the Signature, Expires and AWSAccessKeyId parameters');
    }
    if (!/^\d+$/.test(expires)) throw new S3Error('AccessDenied', `Invalid date (should be seconds since epoch): ${expires}`);
    accessKeyId = key;
    signature = sig;
    datePosition = expires;
    const expiresAt = Number(expires) * 1000;
    if (now.getTime() > expiresAt) {
      throw new S3Error('AccessDenied', {
        message: 'Request has expired',
        fields: { Expires: new Date(expiresAt).toISOString(), ServerTime: now.toISOString() },
      });
    }
  }

  const credential = lookup(accessKeyId);
  if (!credential) throw new S3Error('InvalidAccessKeyId', { fields: { AWSAccessKeyId: accessKeyId } });

  const amzHeaders = canonicalAmzHeaders(req.headers, presigned ? query : []);
  const positional = (name: string) => req.headers[name] ?? (presigned ? query.find((p) => p.name.toLowerCase() === name)?.value : undefined) ?? '';
  const head = (date: string, amz: string) => `${req.method.toUpperCase()}\n${positional('content-md5')}\n${positional('content-type')}\n${date}\n${amz}`;
  const heads = [head(datePosition, amzHeaders.text)];
  const amzDate = req.headers['x-amz-date'];
  if (!presigned && amzDate !== undefined) {
    // The AWS page's own DELETE example signs x-amz-date in the Date position
    // and not among the amz headers; some clients sign it in both places.
    heads.push(head(amzDate, canonicalAmzHeaders(req.headers, [], 'x-amz-date').text), head(amzDate, amzHeaders.text));
  }

  const provided = Buffer.from(signature, 'base64');
  const secret = Buffer.from(credential.secretAccessKey, 'utf8');
  let first: string | undefined;
  const resources = canonicalResources(req, query, options.domain);
  for (const stringToSign of heads.flatMap((h) => resources.map((resource) => h + resource))) {
    first ??= stringToSign;
    const expected = createHmac('sha1', secret).update(bytesOf(stringToSign)).digest();
    if (expected.length === provided.length && timingSafeEqual(expected, provided)) {
      return {
        credential,
        presigned,
        ...payloadOf(req.headers['x-amz-content-sha256']),
        signedHeaders: [...['content-md5', 'content-type', 'date'].filter((n) => req.headers[n] !== undefined), ...amzHeaders.names],
        region: 'us-east-1',
      };
    }
  }
  throw new S3Error('SignatureDoesNotMatch', {
    fields: {
      AWSAccessKeyId: accessKeyId,
      StringToSign: first!,
      SignatureProvided: signature,
      StringToSignBytes: [...bytesOf(first!)].map((b) => b.toString(16).padStart(2, '0')).join(' '),
    },
  });
}

/** Header auth must be dated within 15 minutes; returns what goes in the Date position. */
function checkRequestTime(headers: Record<string, string>, now: Date): string {
  const amzDate = headers['x-amz-date'];
  const text = amzDate ?? headers['date'];
  const time = text === undefined ? NaN : Date.parse(text);
  // A date before the epoch is no valid date at all: AccessDenied, as S3 and
  // Ceph RGW answer it (s3-tests test_*_bad_date_before_epoch_aws2), not a skew.
  if (Number.isNaN(time) || time < 0) throw new S3Error('AccessDenied', 'AWS authentication requires a valid Date or x-amz-date header');
  if (Math.abs(now.getTime() - time) > MAX_SKEW_MS) {
    throw new S3Error('RequestTimeTooSkewed', { fields: { RequestTime: text!, ServerTime: now.toISOString(), MaxAllowedSkewMilliseconds: MAX_SKEW_MS } });
  }
  // With x-amz-date the Date position is empty (x-amz-date is signed among the amz headers).
  return amzDate !== undefined ? '' : text!;
}

/**
 * "x-amz-a:v\nx-amz-b:v1,v2\n": lowercased names, sorted, repeated values
 * joined by ',', folded whitespace unfolded. A presigned URL may carry them
 * as query parameters (botocore moves them there).
 */
function canonicalAmzHeaders(headers: Record<string, string>, query: QueryParam[], except?: string): { text: string; names: string[] } {
  const found = new Map<string, string>();
  for (const [name, value] of Object.entries(headers)) if (name.startsWith('x-amz-') && name !== except) found.set(name, value);
  for (const p of query) {
    const name = p.name.toLowerCase();
    if (name.startsWith('x-amz-') && !found.has(name)) found.set(name, p.value);
  }
  const names = [...found.keys()].sort();
  const text = names.map((n) => `${n}:${found.get(n)!.replace(/\s*\r?\n\s*/g, ' ').trim()}\n`).join('');
  return { text, names };
}

/** The CanonicalizedResource candidates, most likely first (see "Known gaps"). */
function canonicalResources(req: SignedRequest, query: QueryParam[], domain: string | undefined): string[] {
  const hostname = req.headers['host']?.replace(/:\d+$/, '').toLowerCase();
  // The domain alone names no bucket: it does not end with "." and itself.
  const bucketPrefix = domain && hostname && hostname.endsWith(`.${domain}`) ? `/${hostname.slice(0, -(domain.length + 1))}` : '';
  const rawPath = req.rawPath === '' ? '/' : req.rawPath;
  const paths = [rawPath, canonicalUri(req.rawPath)];
  // A bucket's own resource is "/bucket/" (the AWS page); botocore signs that
  // for path-style bucket requests while it sends "/bucket".
  if (bucketPrefix === '' && /^\/[^/]+$/.test(rawPath)) paths.push(`${rawPath}/`);
  // A Set: candidates that coincide are tried once.
  const out = new Set<string>();
  for (const subresources of SUBRESOURCE_ORDERS) {
    // Sorted by name; a repeated name keeps its order in the query (botocore sorts stably by name).
    const signed = subresources.flatMap((name) => query.filter((p) => p.name === name)).map((p) => (p.hasValue ? `${p.name}=${p.value}` : p.name));
    const suffix = signed.length > 0 ? `?${signed.join('&')}` : '';
    for (const path of paths) out.add(bucketPrefix + path + suffix);
  }
  return [...out];
}

/** The AuthResult's payload fields: declaredSha256 only for a literal hash. */
function payloadOf(value: string | undefined): { payloadMode: PayloadMode; declaredSha256?: string } {
  const v = value?.trim();
  if (v === undefined || v === UNSIGNED_PAYLOAD) return { payloadMode: 'unsigned' };
  if (/^[0-9a-fA-F]{64}$/.test(v)) return { payloadMode: 'literal', declaredSha256: v.toLowerCase() };
  if (v === STREAMING_UNSIGNED_TRAILER) return { payloadMode: 'streaming-unsigned-trailer' };
  throw new S3Error('InvalidRequest', `x-amz-content-sha256 ${v} needs a request signed with AWS4-HMAC-SHA256.`);
}

interface QueryParam {
  /** Decoded, as a byte string (one char per byte, like Node's headers). */
  name: string;
  value: string;
  hasValue: boolean;
}

/**
 * Every '&'-separated pair, split at its first '='. An empty pair, or one
 * that starts with '=', has the name "", which nothing here looks up.
 */
function queryParams(rawQuery: string): QueryParam[] {
  return rawQuery.split('&').map((pair) => {
    const [name, ...value] = pair.split('=');
    return { name: latin1(name!), value: latin1(value.join('=')), hasValue: value.length > 0 };
  });
}

function latin1(encoded: string): string {
  return percentDecode(encoded).toString('latin1');
}

/**
 * The bytes signed: request values arrive as byte strings (Node's latin1
 * convention), so one char is one byte; test callers may pass real Unicode,
 * which only UTF-8 can carry.
 */
function bytesOf(text: string): Buffer {
  // eslint-disable-next-line no-control-regex
  return /[^\u0000-\u00ff]/.test(text) ? Buffer.from(text, 'utf8') : Buffer.from(text, 'latin1');
}
