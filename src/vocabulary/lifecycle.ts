/**
 * A bucket's lifecycle configuration, as far as casket keeps one
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketLifecycleConfiguration.html,
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/mpu-abort-incomplete-mpu-lifecycle-config.html):
 * the rule AWS users write to clean up multipart uploads nobody finished,
 * `AbortIncompleteMultipartUpload { DaysAfterInitiation }`, scoped by a key
 * prefix (`Filter/Prefix`, `Filter/And/Prefix`, or the older rule-level
 * `Prefix`), `Status` Enabled or Disabled, an optional `ID`.
 *
 * Known gaps, refused rather than ignored: Expiration, Transition and their
 * Noncurrent forms would delete or move objects without passing casket's
 * concurrency guard (501 NotImplemented, as before this rule was kept); a
 * Tag or object-size filter cannot select an upload — AWS refuses Tag
 * filters with this action (InvalidRequest), and so does casket for both.
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
  /** Uploads initiated this many days ago or more are aborted. */
  abortDaysAfterInitiation: number;
}

const MAX_RULES = 1000;
const UNGUARDED_ACTIONS = ['Expiration', 'Transition', 'NoncurrentVersionExpiration', 'NoncurrentVersionTransition'];

function malformed(message = 'The XML you provided was not well-formed or did not validate against our published schema.'): S3Error {
  return new S3Error('MalformedXML', message);
}

function text(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  return undefined;
}

function prefixOf(rule: Record<string, unknown>): { prefix: string; prefixForm: LifecycleRule['prefixForm'] } {
  if (rule.Filter !== undefined && rule.Prefix !== undefined) throw malformed('A lifecycle rule has either a Filter or a Prefix, not both.');
  if (rule.Filter === undefined) {
    if (rule.Prefix === undefined) throw malformed('A lifecycle rule needs a Filter (an empty one covers every key).');
    return { prefix: text(rule.Prefix) ?? '', prefixForm: 'rule' };
  }
  const filter = rule.Filter === '' ? {} : (rule.Filter as Record<string, unknown>);
  if (typeof filter !== 'object' || filter === null) throw malformed();
  const selectors = filter.And !== undefined ? (filter.And as Record<string, unknown>) : filter;
  if (typeof selectors !== 'object' || selectors === null) throw malformed();
  if (selectors.Tag !== undefined) throw new S3Error('InvalidRequest', 'Tag-based filter cannot be used with AbortIncompleteMultipartUpload action.');
  const other = Object.keys(selectors).find((name) => name !== 'Prefix');
  if (other !== undefined) throw new S3Error('InvalidRequest', `A ${other} filter cannot select a multipart upload: casket's AbortIncompleteMultipartUpload rules filter by Prefix only.`);
  return { prefix: text(selectors.Prefix) ?? '', prefixForm: filter.And !== undefined ? 'and' : 'filter' };
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
    const unguarded = UNGUARDED_ACTIONS.find((name) => r[name] !== undefined);
    if (unguarded !== undefined) {
      throw new S3Error('NotImplemented', `casket enforces only AbortIncompleteMultipartUpload lifecycle rules: ${unguarded} would change objects without passing its concurrency guard.`);
    }
    const status = text(r.Status);
    if (status !== 'Enabled' && status !== 'Disabled') throw malformed('A lifecycle rule\'s Status must be Enabled or Disabled.');
    const id = text(r.ID);
    if (id !== undefined) {
      if (id.length > 255) throw new S3Error('InvalidArgument', 'ID length should not exceed allowed limit of 255');
      if (ids.has(id)) throw new S3Error('InvalidArgument', 'Rule ID must be unique. Found same ID for more than one rule');
      ids.add(id);
    }
    const abort = r.AbortIncompleteMultipartUpload as Record<string, unknown> | undefined;
    if (abort === undefined) throw malformed('A lifecycle rule needs an action: casket keeps AbortIncompleteMultipartUpload.');
    const days = text(typeof abort === 'object' && abort !== null ? abort.DaysAfterInitiation : undefined)?.trim();
    if (days === undefined || !/^\d+$/.test(days) || Number(days) < 1) {
      throw new S3Error('InvalidArgument', '\'DaysAfterInitiation\' for AbortIncompleteMultipartUpload action must be a positive integer');
    }
    return { ...(id !== undefined && { id }), enabled: status === 'Enabled', ...prefixOf(r), abortDaysAfterInitiation: Number(days) };
  });
}

/** The GetBucketLifecycleConfiguration body, elements in the documented order. */
export function lifecycleConfigurationXml(rules: LifecycleRule[]): XmlObject {
  return {
    Rule: rules.map((r) => ({
      ID: r.id,
      ...(r.prefixForm === 'rule' ? { Prefix: r.prefix } : { Filter: r.prefixForm === 'and' ? { And: { Prefix: r.prefix } } : { Prefix: r.prefix } }),
      Status: r.enabled ? 'Enabled' : 'Disabled',
      AbortIncompleteMultipartUpload: { DaysAfterInitiation: r.abortDaysAfterInitiation },
    })),
  };
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * When a rule of `days` aborts an upload initiated at `initiatedMs`: as AWS
 * counts it, the initiation time plus the days, rounded up to the next
 * midnight UTC (lifecycle "Expiring objects": "rounding the resulting time to
 * the next day midnight UTC").
 */
export function abortTime(initiatedMs: number, days: number): number {
  return Math.ceil((initiatedMs + days * DAY_MS) / DAY_MS) * DAY_MS;
}

/** The rule that aborts an upload of `key` initiated at `initiatedMs` by now: enabled, its prefix covers the key, its time has come. */
export function abortingRule(rules: readonly LifecycleRule[], key: string, initiatedMs: number, nowMs: number): LifecycleRule | undefined {
  return rules.find((r) => r.enabled && key.startsWith(r.prefix) && nowMs >= abortTime(initiatedMs, r.abortDaysAfterInitiation));
}
