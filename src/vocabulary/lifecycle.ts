/**
 * A bucket's lifecycle configuration, as far as casket keeps one
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketLifecycleConfiguration.html,
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/mpu-abort-incomplete-mpu-lifecycle-config.html):
 * the rule AWS users write to clean up multipart uploads nobody finished,
 * `AbortIncompleteMultipartUpload { DaysAfterInitiation }`, scoped by a key
 * prefix (`Filter/Prefix`, `Filter/And/Prefix`, or the older rule-level
 * `Prefix`), `Status` Enabled or Disabled, an optional `ID`.
 *
 * And `Expiration { Days | Date }`
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/lifecycle-expire-general-considerations.html):
 * an object whose last-modified time plus Days, rounded up to the next
 * midnight UTC, has passed — or every object once Date (a midnight UTC) has
 * passed — is deleted, as a DeleteObject would (s3/lifecycle-expiration.ts,
 * through the guarded write path). Expiration may also filter by size
 * (`ObjectSizeGreaterThan`, `ObjectSizeLessThan`, strict bounds as AWS).
 *
 * Known gaps, refused rather than ignored: Transition and
 * NoncurrentVersionTransition move objects between storage classes the
 * embedded store does not have, NoncurrentVersionExpiration and
 * ExpiredObjectDeleteMarker would remove versions and markers without a
 * current ETag to guard the removal on (501 NotImplemented). A Tag filter
 * selects nothing on a store that keeps no tags (400 InvalidRequest); a size
 * filter cannot select an upload (400 InvalidRequest, as AWS for Tag).
 */
import { S3Error } from './errors.js';
import type { XmlObject } from './xml.js';

export interface LifecycleRule {
  id?: string;
  enabled: boolean;
  /** Keys the rule covers; '' for every key. */
  prefix: string;
  /** How the prefix was written, so GetBucketLifecycleConfiguration answers in the same form. */
  prefixForm: 'filter' | 'and' | 'rule';
  /** Objects strictly larger than this many bytes (Expiration only). */
  objectSizeGreaterThan?: number;
  /** Objects strictly smaller than this many bytes (Expiration only). */
  objectSizeLessThan?: number;
  /** Uploads initiated this many days ago or more are aborted. */
  abortDaysAfterInitiation?: number;
  /** Objects expire this many days after their last modification, or once this midnight-UTC date (ISO 8601) has come. */
  expiration?: { days: number } | { date: string };
}

const MAX_RULES = 1000;
const UNKEPT_ACTIONS: Record<string, string> = {
  Transition: 'the embedded store has one storage class, so there is nothing to transition to',
  NoncurrentVersionTransition: 'the embedded store has one storage class, so there is nothing to transition to',
  NoncurrentVersionExpiration: 'removing a noncurrent version has no current ETag to guard the removal on',
};

function malformed(message = 'The XML you provided was not well-formed or did not validate against our published schema.'): S3Error {
  return new S3Error('MalformedXML', message);
}

function text(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  return undefined;
}

type Selection = Pick<LifecycleRule, 'prefix' | 'prefixForm' | 'objectSizeGreaterThan' | 'objectSizeLessThan'>;

/** A size bound of a Filter: bytes, a non-negative integer. */
function sizeBound(value: unknown, name: string): number {
  const t = text(value)?.trim();
  if (t === undefined || !/^\d+$/.test(t) || !Number.isSafeInteger(Number(t))) throw new S3Error('InvalidArgument', `'${name}' must be a non-negative integer`);
  return Number(t);
}

function selectionOf(rule: Record<string, unknown>, aborts: boolean): Selection {
  if (rule.Filter !== undefined && rule.Prefix !== undefined) throw malformed('A lifecycle rule has either a Filter or a Prefix, not both.');
  if (rule.Filter === undefined) {
    if (rule.Prefix === undefined) throw malformed('A lifecycle rule needs a Filter (an empty one covers every key).');
    return { prefix: text(rule.Prefix) ?? '', prefixForm: 'rule' };
  }
  const filter = rule.Filter === '' ? {} : (rule.Filter as Record<string, unknown>);
  if (typeof filter !== 'object' || filter === null) throw malformed();
  const selectors = filter.And !== undefined ? (filter.And as Record<string, unknown>) : filter;
  if (typeof selectors !== 'object' || selectors === null) throw malformed();
  if (selectors.Tag !== undefined) {
    if (aborts) throw new S3Error('InvalidRequest', 'Tag-based filter cannot be used with AbortIncompleteMultipartUpload action.');
    throw new S3Error('InvalidRequest', "casket's embedded store keeps no object tags: a Tag filter would select nothing. Filter by Prefix or object size.");
  }
  const known = aborts ? ['Prefix'] : ['Prefix', 'ObjectSizeGreaterThan', 'ObjectSizeLessThan'];
  const other = Object.keys(selectors).find((name) => !known.includes(name));
  if (other !== undefined) {
    if (aborts) throw new S3Error('InvalidRequest', `A ${other} filter cannot select a multipart upload: casket's AbortIncompleteMultipartUpload rules filter by Prefix only.`);
    throw malformed(`A lifecycle Filter has no ${other} element.`);
  }
  // Outside And, a Filter holds one selector (the S3 schema's choice).
  if (filter.And === undefined && Object.keys(selectors).length > 1) throw malformed('A lifecycle Filter holds one of Prefix, Tag, ObjectSizeGreaterThan, ObjectSizeLessThan; combine them with And.');
  const greater = selectors.ObjectSizeGreaterThan !== undefined ? sizeBound(selectors.ObjectSizeGreaterThan, 'ObjectSizeGreaterThan') : undefined;
  const less = selectors.ObjectSizeLessThan !== undefined ? sizeBound(selectors.ObjectSizeLessThan, 'ObjectSizeLessThan') : undefined;
  if (greater !== undefined && less !== undefined && greater >= less) throw new S3Error('InvalidArgument', 'ObjectSizeGreaterThan must be less than ObjectSizeLessThan');
  return {
    prefix: text(selectors.Prefix) ?? '',
    prefixForm: filter.And !== undefined ? 'and' : 'filter',
    ...(greater !== undefined && { objectSizeGreaterThan: greater }),
    ...(less !== undefined && { objectSizeLessThan: less }),
  };
}

const DAY_MS = 24 * 60 * 60 * 1000;

/** The Expiration action of a rule, checked as AWS checks it. */
function expirationOf(value: unknown): LifecycleRule['expiration'] {
  const e = value === '' ? {} : (value as Record<string, unknown>);
  if (typeof e !== 'object' || e === null) throw malformed();
  if (e.ExpiredObjectDeleteMarker !== undefined) {
    if (e.Days !== undefined || e.Date !== undefined) throw new S3Error('InvalidArgument', 'ExpiredObjectDeleteMarker cannot be specified with Days or Date in a Lifecycle Expiration Policy.');
    throw new S3Error('NotImplemented', 'casket keeps no ExpiredObjectDeleteMarker rule: removing a delete marker has no current ETag to guard the removal on.');
  }
  if ((e.Days === undefined) === (e.Date === undefined)) throw malformed('A lifecycle Expiration has exactly one of Days and Date.');
  if (e.Days !== undefined) {
    const days = text(e.Days)?.trim();
    if (days === undefined || !/^\d+$/.test(days) || Number(days) < 1) throw new S3Error('InvalidArgument', "'Days' for Expiration action must be a positive integer");
    return { days: Number(days) };
  }
  const date = text(e.Date)?.trim() ?? '';
  const ms = /^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]00:?00)?)?$/.test(date) ? Date.parse(date.length === 10 ? `${date}T00:00:00Z` : date) : NaN;
  if (Number.isNaN(ms)) throw new S3Error('InvalidArgument', "'Date' must be an ISO 8601 date at midnight GMT");
  if (ms % DAY_MS !== 0) throw new S3Error('InvalidArgument', "'Date' must be at midnight GMT");
  return { date: new Date(ms).toISOString() };
}

/** The rules of a PutBucketLifecycleConfiguration body (parsed XML), checked as AWS checks them. */
export function parseLifecycleConfiguration(doc: Record<string, unknown>): LifecycleRule[] {
  const root = doc.LifecycleConfiguration as Record<string, unknown> | undefined;
  if (!root || typeof root !== 'object') throw malformed();
  const raw = root.Rule === undefined ? [] : Array.isArray(root.Rule) ? root.Rule : [root.Rule];
  if (raw.length === 0) throw malformed();
  if (raw.length > MAX_RULES) throw new S3Error('InvalidRequest', `A lifecycle configuration has at most ${MAX_RULES} rules.`);
  const ids = new Set<string>();
  return raw.map((entry): LifecycleRule => {
    const r = (entry ?? {}) as Record<string, unknown>;
    const unkept = Object.keys(UNKEPT_ACTIONS).find((name) => r[name] !== undefined);
    if (unkept !== undefined) throw new S3Error('NotImplemented', `casket keeps no ${unkept} rule: ${UNKEPT_ACTIONS[unkept]}.`);
    const status = text(r.Status);
    if (status !== 'Enabled' && status !== 'Disabled') throw malformed('A lifecycle rule\'s Status must be Enabled or Disabled.');
    const id = text(r.ID);
    if (id !== undefined) {
      if (id.length > 255) throw new S3Error('InvalidArgument', 'ID length should not exceed allowed limit of 255');
      if (ids.has(id)) throw new S3Error('InvalidArgument', 'Rule ID must be unique. Found same ID for more than one rule');
      ids.add(id);
    }
    const abort = r.AbortIncompleteMultipartUpload as Record<string, unknown> | undefined;
    if (abort === undefined && r.Expiration === undefined) throw malformed('A lifecycle rule needs an action: casket keeps Expiration and AbortIncompleteMultipartUpload.');
    let abortDays: number | undefined;
    if (abort !== undefined) {
      const days = text(typeof abort === 'object' && abort !== null ? abort.DaysAfterInitiation : undefined)?.trim();
      if (days === undefined || !/^\d+$/.test(days) || Number(days) < 1) {
        throw new S3Error('InvalidArgument', '\'DaysAfterInitiation\' for AbortIncompleteMultipartUpload action must be a positive integer');
      }
      abortDays = Number(days);
    }
    const expiration = r.Expiration !== undefined ? expirationOf(r.Expiration) : undefined;
    return {
      ...(id !== undefined && { id }),
      enabled: status === 'Enabled',
      ...selectionOf(r, abort !== undefined),
      ...(abortDays !== undefined && { abortDaysAfterInitiation: abortDays }),
      ...(expiration !== undefined && { expiration }),
    };
  });
}

/** The GetBucketLifecycleConfiguration body, elements in the documented order. */
export function lifecycleConfigurationXml(rules: LifecycleRule[]): XmlObject {
  return {
    Rule: rules.map((r) => {
      const sizes = {
        ...(r.objectSizeGreaterThan !== undefined && { ObjectSizeGreaterThan: r.objectSizeGreaterThan }),
        ...(r.objectSizeLessThan !== undefined && { ObjectSizeLessThan: r.objectSizeLessThan }),
      };
      const sized = Object.keys(sizes).length > 0;
      const filter = r.prefixForm === 'and' || (sized && r.prefix !== '') ? { And: { Prefix: r.prefix, ...sizes } } : sized ? sizes : { Prefix: r.prefix };
      return {
        ID: r.id,
        ...(r.prefixForm === 'rule' ? { Prefix: r.prefix } : { Filter: filter }),
        Status: r.enabled ? 'Enabled' : 'Disabled',
        ...(r.expiration !== undefined && { Expiration: 'days' in r.expiration ? { Days: r.expiration.days } : { Date: r.expiration.date } }),
        ...(r.abortDaysAfterInitiation !== undefined && { AbortIncompleteMultipartUpload: { DaysAfterInitiation: r.abortDaysAfterInitiation } }),
      };
    }),
  };
}

/**
 * A time `days` after `fromMs`, rounded up to the next midnight UTC, as AWS
 * counts lifecycle days (lifecycle-expire-general-considerations: "rounding
 * the resulting time to the next day midnight UTC").
 */
export function abortTime(initiatedMs: number, days: number): number {
  return Math.ceil((initiatedMs + days * DAY_MS) / DAY_MS) * DAY_MS;
}

/** The rule that aborts an upload of `key` initiated at `initiatedMs` by now: enabled, its prefix covers the key, its time has come. */
export function abortingRule(rules: readonly LifecycleRule[], key: string, initiatedMs: number, nowMs: number): LifecycleRule | undefined {
  return rules.find((r) => r.enabled && r.abortDaysAfterInitiation !== undefined && key.startsWith(r.prefix) && nowMs >= abortTime(initiatedMs, r.abortDaysAfterInitiation));
}

/** An object as the Expiration rules judge it. */
export interface ExpiryCandidate {
  key: string;
  size: number;
  lastModifiedMs: number;
}

/** When `rule` expires the object, or undefined when the rule does not select it. */
export function expiryTime(rule: LifecycleRule, o: ExpiryCandidate): number | undefined {
  if (!rule.enabled || rule.expiration === undefined || !o.key.startsWith(rule.prefix)) return undefined;
  if (rule.objectSizeGreaterThan !== undefined && !(o.size > rule.objectSizeGreaterThan)) return undefined;
  if (rule.objectSizeLessThan !== undefined && !(o.size < rule.objectSizeLessThan)) return undefined;
  return 'days' in rule.expiration ? abortTime(o.lastModifiedMs, rule.expiration.days) : Date.parse(rule.expiration.date);
}

/**
 * The rule that expires the object soonest, and when: what x-amz-expiration
 * names (API_GetObject: "expiry-date" and "rule-id") and what the sweep acts
 * on once that time has come.
 */
export function expiringRule(rules: readonly LifecycleRule[], o: ExpiryCandidate): { rule: LifecycleRule; at: number } | undefined {
  let best: { rule: LifecycleRule; at: number } | undefined;
  for (const rule of rules) {
    const at = expiryTime(rule, o);
    if (at !== undefined && (best === undefined || at < best.at)) best = { rule, at };
  }
  return best;
}

/** The x-amz-expiration header value: `expiry-date="<HTTP date>", rule-id="<ID>"`. */
export function expirationHeader(e: { rule: LifecycleRule; at: number }): string {
  return `expiry-date="${new Date(e.at).toUTCString()}", rule-id="${e.rule.id ?? ''}"`;
}
