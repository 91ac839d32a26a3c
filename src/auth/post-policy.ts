/**
 * The POST Object policy: the base64 JSON document a browser form carries,
 * its SigV4 signature, and every condition it states.
 * https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-HTTPPOSTConstructPolicy.html
 * https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-authentication-HTTPPOST.html
 *
 * AWS refuses a form whose policy is expired, whose signature does not match,
 * whose field breaks a condition, or that carries a field no condition names
 * ("Invalid according to Policy: Extra input fields: ..."). Fields AWS exempts
 * from that rule: x-amz-signature, file, policy, and those prefixed x-ignore-.
 * content-length-range is checked by the caller while the file streams
 * (EntityTooLarge / EntityTooSmall), so the range is returned, not checked here.
 */
import { S3Error } from '../vocabulary/errors.js';
import { hmac, signaturesEqual, signingKeyFor } from './sigv4.js';

export interface PostPolicy {
  expiration: Date;
  conditions: Condition[];
}

export type Condition =
  | { kind: 'eq'; field: string; value: string }
  | { kind: 'starts-with'; field: string; value: string }
  | { kind: 'content-length-range'; min: number; max: number };

export interface LengthRange { min: number; max: number }

const EXEMPT = new Set(['x-amz-signature', 'file', 'policy']);

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
  if (typeof expiration !== 'string' || Number.isNaN(Date.parse(expiration))) throw malformed('Invalid \'expiration\' value.');
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
  const extra = [...fields.keys()].filter((f) => f !== 'bucket' && !EXEMPT.has(f) && !f.startsWith('x-ignore-') && !covered.has(f));
  if (extra.length > 0) throw invalid(`Extra input fields: ${extra.join(', ')}`);
  return range;
}
