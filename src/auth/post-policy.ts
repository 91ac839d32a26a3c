/**
 * The POST Object policy: the base64 JSON document a browser form carries,
 * its SigV4 signature, and every condition it states.
 * https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-HTTPPOSTConstructPolicy.html
 * https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-authentication-HTTPPOST.html
 *
 * AWS refuses a form whose policy is expired, whose signature does not match,
 * whose field breaks a condition, or that carries a field no condition names
 * ("Invalid according to Policy: Extra input fields: ..."). Fields AWS exempts
 * from that rule: x-amz-signature, file, policy, and those prefixed x-ignore-;
 * casket also exempts x-amz-checksum-* (an integrity check, as RGW does).
 * content-length-range is checked by the caller while the file streams
 * (EntityTooLarge / EntityTooSmall), so the range is returned, not checked here.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { S3Error } from '../vocabulary/errors.js';
import type { Credential, CredentialLookup } from './credentials.js';
import { hmac, signaturesEqual, signingKeyFor, type AuthResult } from './sigv4.js';

export interface PostPolicy {
  expiration: Date;
  conditions: Condition[];
}

export type Condition =
  | { kind: 'eq'; field: string; value: string }
  | { kind: 'starts-with'; field: string; value: string }
  | { kind: 'content-length-range'; min: number; max: number };

export interface LengthRange { min: number; max: number }

/**
 * Fields no condition has to name: the signature and policy themselves and
 * the file (sigv4-HTTPPOSTConstructPolicy.html), and their Signature Version
 * 2 forms (HTTPPOSTForms.html: AWSAccessKeyId, signature). `bucket` is not
 * exempt: the URL's bucket is a field every policy must name.
 */
const EXEMPT = new Set(['x-amz-signature', 'file', 'policy', 'awsaccesskeyid', 'signature']);

/** ISO 8601 in UTC, as the policy's expiration must be written ("2013-08-01T12:00:00.000Z"). */
const EXPIRATION = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;

function invalid(why: string): S3Error {
  return new S3Error('AccessDenied', `Invalid according to Policy: ${why}`);
}

function malformed(why: string): S3Error {
  return new S3Error('InvalidPolicyDocument', `Invalid Policy: ${why}`);
}

/** Decode and shape-check the form's `policy` field (base64 of a JSON object). */
export function parsePostPolicy(base64: string): PostPolicy {
  let doc: unknown;
  try {
    doc = JSON.parse(Buffer.from(base64, 'base64').toString('utf8'));
  } catch {
    throw malformed('Invalid JSON.');
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw malformed('Invalid JSON.');
  const { expiration, conditions } = doc as Record<string, unknown>;
  if (typeof expiration !== 'string' || !EXPIRATION.test(expiration) || Number.isNaN(Date.parse(expiration))) throw malformed('Invalid \'expiration\' value.');
  if (!Array.isArray(conditions)) throw malformed('Policy missing conditions.');
  return { expiration: new Date(expiration), conditions: conditions.map(parseCondition) };
}

function parseCondition(raw: unknown): Condition {
  if (Array.isArray(raw)) {
    const [op, a, b] = raw as unknown[];
    if (typeof op !== 'string') throw malformed('Invalid condition.');
    const kind = op.toLowerCase();
    if (kind === 'content-length-range') {
      const min = Number(a);
      const max = Number(b);
      if (!Number.isInteger(min) || !Number.isInteger(max) || min < 0 || max < min) throw malformed('Invalid content-length-range.');
      return { kind, min, max };
    }
    if ((kind === 'eq' || kind === 'starts-with') && typeof a === 'string' && a.startsWith('$') && typeof b === 'string') {
      return { kind, field: a.slice(1).toLowerCase(), value: b };
    }
    throw malformed(`Invalid condition: ${JSON.stringify(raw)}.`);
  }
  if (typeof raw === 'object' && raw !== null) {
    const entries = Object.entries(raw);
    if (entries.length === 1 && typeof entries[0]![1] === 'string') {
      return { kind: 'eq', field: entries[0]![0].toLowerCase(), value: entries[0]![1] };
    }
  }
  throw malformed(`Invalid condition: ${JSON.stringify(raw)}.`);
}

/** x-amz-signature = hex HMAC of the base64 policy under the credential's SigV4 signing key. */
export function postSignatureMatches(secret: string, date: string, region: string, policyBase64: string, signatureHex: string): boolean {
  const expected = hmac(signingKeyFor(secret, date, region, 's3'), policyBase64).toString('hex');
  return signaturesEqual(expected, signatureHex);
}

/**
 * Check expiration and every condition against the form fields (names
 * lower-cased; `bucket` set by the caller from the URL; `key` with
 * ${filename} already substituted). Returns the content-length-range, if any.
 */
export function checkPostPolicy(policy: PostPolicy, fields: ReadonlyMap<string, string>, now: Date = new Date()): LengthRange | undefined {
  if (now.getTime() > policy.expiration.getTime()) throw invalid('Policy expired.');
  const covered = new Set<string>();
  let range: LengthRange | undefined;
  for (const c of policy.conditions) {
    if (c.kind === 'content-length-range') {
      range = { min: c.min, max: c.max };
      continue;
    }
    covered.add(c.field);
    const value = fields.get(c.field) ?? '';
    // Content-Type may be a comma-separated list: starts-with applies to each (AWS).
    const ok = c.kind === 'eq'
      ? value === c.value
      : (c.field === 'content-type' ? value.split(',').every((v) => v.trim().startsWith(c.value)) : value.startsWith(c.value));
    if (!ok) throw invalid(`Policy Condition failed: ["${c.kind}", "$${c.field}", "${c.value}"]`);
  }
  // An x-amz-checksum-* field only adds a check the file must pass (a wrong one is refused, nothing
  // lands): it needs no condition, as RGW takes it (ceph/s3-tests test_post_object_upload_checksum).
  const extra = [...fields.keys()].filter((f) => !EXEMPT.has(f) && !f.startsWith('x-ignore-') && !f.startsWith('x-amz-checksum-') && !covered.has(f));
  if (extra.length > 0) throw invalid(`Extra input fields: ${extra.join(', ')}`);
  return range;
}

/** x-amz-signature-less Signature Version 2 form: base64 HMAC-SHA1 of the base64 policy (HTTPPOSTForms.html). */
export function postSignatureV2Matches(secret: string, policyBase64: string, signatureBase64: string): boolean {
  const expected = createHmac('sha1', Buffer.from(secret, 'utf8')).update(policyBase64, 'latin1').digest();
  const provided = Buffer.from(signatureBase64, 'base64');
  return expected.length === provided.length && timingSafeEqual(expected, provided);
}

/** The access key a form names (x-amz-credential or AWSAccessKeyId), unverified: for session lookups. */
export function postFormAccessKey(fields: ReadonlyMap<string, string>): string | undefined {
  const credential = fields.get('x-amz-credential');
  if (credential !== undefined) {
    const parts = credential.split('/');
    return parts.length >= 5 ? parts.slice(0, -4).join('/') : undefined;
  }
  return fields.get('awsaccesskeyid');
}

function missingField(name: string): S3Error {
  return new S3Error('InvalidArgument', {
    message: `Bucket POST must contain a field named '${name}'.  If it is specified, please check the order of the fields.`,
    fields: { ArgumentName: name, ArgumentValue: '' },
  });
}

export interface PostFormAuth {
  auth: AuthResult;
  policy: PostPolicy;
}

/**
 * Who signed a form: null when it carries no credential at all (an
 * anonymous form, refused unless anonymous writes are allowed); throws
 * InvalidArgument for a missing signature or policy, InvalidAccessKeyId for
 * a key casket never issued, SignatureDoesNotMatch for a wrong signature
 * (compared in constant time), InvalidPolicyDocument for a policy that does
 * not parse. SigV4 (x-amz-algorithm, x-amz-credential, x-amz-date,
 * x-amz-signature) and SigV2 (AWSAccessKeyId, signature: boto3's
 * generate_presigned_post with no signature_version configured) forms.
 * The policy's conditions are the caller's to check, once the key is known.
 */
export function verifyPostForm(fields: ReadonlyMap<string, string>, lookup: CredentialLookup): PostFormAuth | null {
  const policyBase64 = fields.get('policy');
  const v4 = fields.has('x-amz-signature') || fields.has('x-amz-credential') || fields.has('x-amz-algorithm');
  if (!v4 && policyBase64 === undefined && !fields.has('signature') && !fields.has('awsaccesskeyid')) return null;
  let credential: Credential | undefined;
  let region = 'us-east-1';
  if (v4) {
    const algorithm = fields.get('x-amz-algorithm');
    if (algorithm === undefined) throw missingField('x-amz-algorithm');
    if (algorithm !== 'AWS4-HMAC-SHA256') throw new S3Error('InvalidArgument', { message: 'Only AWS4-HMAC-SHA256 is supported as x-amz-algorithm.', fields: { ArgumentName: 'x-amz-algorithm', ArgumentValue: algorithm } });
    const scope = fields.get('x-amz-credential');
    if (scope === undefined) throw missingField('x-amz-credential');
    if (!fields.has('x-amz-date')) throw missingField('x-amz-date');
    const signature = fields.get('x-amz-signature');
    if (signature === undefined) throw missingField('x-amz-signature');
    if (policyBase64 === undefined) throw missingField('policy');
    const parts = scope.split('/');
    const [date, scopeRegion, service, terminator] = parts.slice(-4);
    if (parts.length < 5 || !/^\d{8}$/.test(date!) || service !== 's3' || terminator !== 'aws4_request') {
      throw new S3Error('InvalidArgument', { message: 'x-amz-credential must be <key>/<yyyymmdd>/<region>/s3/aws4_request.', fields: { ArgumentName: 'x-amz-credential', ArgumentValue: scope } });
    }
    const accessKeyId = parts.slice(0, -4).join('/');
    credential = lookup(accessKeyId);
    if (!credential) throw new S3Error('InvalidAccessKeyId', { fields: { AWSAccessKeyId: accessKeyId } });
    region = scopeRegion!;
    if (!postSignatureMatches(credential.secretAccessKey, date!, region, policyBase64, signature)) {
      throw new S3Error('SignatureDoesNotMatch', { fields: { AWSAccessKeyId: accessKeyId, StringToSign: policyBase64, SignatureProvided: signature } });
    }
  } else {
    const accessKeyId = fields.get('awsaccesskeyid');
    if (accessKeyId === undefined) throw missingField('AWSAccessKeyId');
    const signature = fields.get('signature');
    if (signature === undefined) throw missingField('Signature');
    if (policyBase64 === undefined) throw missingField('Policy');
    credential = lookup(accessKeyId);
    if (!credential) throw new S3Error('InvalidAccessKeyId', { fields: { AWSAccessKeyId: accessKeyId } });
    if (!postSignatureV2Matches(credential.secretAccessKey, policyBase64, signature)) {
      throw new S3Error('SignatureDoesNotMatch', { fields: { AWSAccessKeyId: accessKeyId, StringToSign: policyBase64, SignatureProvided: signature } });
    }
  }
  // Parsed only once the signature holds: an unsigned document is not read.
  const policy = parsePostPolicy(policyBase64);
  return { auth: { credential, presigned: false, payloadMode: 'unsigned', signedHeaders: [], region }, policy };
}
