/**
 * Per-credential policies (docs/design.md §7): the subset of the IAM JSON policy
 * language that limits a key to buckets, prefixes and actions, and its
 * evaluation. Pure: no I/O, no casket types beyond plain values.
 *
 * Specs followed:
 * - Grammar: https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_grammar.html
 * - Evaluation (an explicit Deny wins, otherwise an Allow is needed, otherwise
 *   implicit deny): https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html
 * - Wildcards `*` and `?` in Action (case-insensitive) and Resource
 *   (case-sensitive): .../reference_policies_elements_action.html, ..._resource.html
 * - Condition operators StringEquals, StringNotEquals, StringLike,
 *   StringNotLike: .../reference_policies_elements_condition_operators.html
 *   A key absent from the request fails every operator but the Not forms,
 *   as in IAM. casket gives ListBucket the `s3:prefix` key always, "" when the
 *   request names no prefix (so `"s3:prefix": [""]` allows listing the top,
 *   as in AWS's own examples).
 * - Session policies: the effective rights are the intersection of the
 *   caller's policy and the session policy,
 *   .../reference_policies_evaluation-logic.html#policy-eval-basics — here a
 *   credential carries a list of policies and a request must pass every one.
 *
 * Known gaps: no NotAction / NotResource / Principal (identity policies only),
 * no policy variables (${aws:username}), no condition operators beyond the
 * string ones, no IfExists suffix. Unknown elements are refused at load time,
 * never ignored: a policy that silently grants more than it reads is worse
 * than one that fails to load.
 */

export type Effect = 'Allow' | 'Deny';
export type ConditionOperator = 'StringEquals' | 'StringNotEquals' | 'StringLike' | 'StringNotLike';

export interface Statement {
  sid?: string;
  effect: Effect;
  /** Lowercased patterns, e.g. "s3:get*". */
  actions: string[];
  resources: string[];
  /** operator → condition key (lowercased) → values; all must hold. */
  conditions: Array<{ operator: ConditionOperator; key: string; values: string[] }>;
}

export interface Policy {
  statements: Statement[];
}

/** One thing a request needs: an action on a resource, with its condition keys. */
export interface Access {
  action: string;
  resource: string;
  /** Condition keys the request supplies (lowercase names), e.g. { 's3:prefix': 'agents/' }. */
  context?: Record<string, string>;
}

export type Decision = 'allow' | 'explicit-deny' | 'implicit-deny';

export class PolicyError extends Error {}

const OPERATORS: readonly ConditionOperator[] = ['StringEquals', 'StringNotEquals', 'StringLike', 'StringNotLike'];
const STATEMENT_KEYS = new Set(['Sid', 'Effect', 'Action', 'Resource', 'Condition']);

function stringList(value: unknown, what: string): string[] {
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || list.length === 0 || list.some((v) => typeof v !== 'string' || v === '')) {
    throw new PolicyError(`${what} must be a non-empty string or list of strings`);
  }
  return list as string[];
}

/** Parses a policy document (the object, not its JSON text); throws PolicyError naming what is wrong. */
export function parsePolicy(doc: unknown): Policy {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new PolicyError('a policy must be a JSON object');
  const d = doc as Record<string, unknown>;
  for (const key of Object.keys(d)) if (key !== 'Version' && key !== 'Statement' && key !== 'Id') throw new PolicyError(`unsupported policy element "${key}"`);
  if (d.Version !== undefined && d.Version !== '2012-10-17' && d.Version !== '2008-10-17') throw new PolicyError(`unsupported Version "${String(d.Version)}"`);
  const raw = Array.isArray(d.Statement) ? d.Statement : d.Statement !== undefined ? [d.Statement] : undefined;
  if (!raw || raw.length === 0) throw new PolicyError('a policy needs a Statement');
  return {
    statements: raw.map((s, i) => {
      const where = `Statement[${i}]`;
      if (typeof s !== 'object' || s === null) throw new PolicyError(`${where} must be an object`);
      const st = s as Record<string, unknown>;
      for (const key of Object.keys(st)) {
        if (!STATEMENT_KEYS.has(key)) throw new PolicyError(`${where}: unsupported element "${key}" (casket knows ${[...STATEMENT_KEYS].join(', ')})`);
      }
      if (st.Effect !== 'Allow' && st.Effect !== 'Deny') throw new PolicyError(`${where}.Effect must be "Allow" or "Deny"`);
      const actions = stringList(st.Action, `${where}.Action`).map((a) => a.toLowerCase());
      for (const a of actions) if (a !== '*' && !/^[a-z0-9-]+:[a-z0-9*?]+$/i.test(a)) throw new PolicyError(`${where}.Action "${a}" is not service:Action`);
      const resources = stringList(st.Resource, `${where}.Resource`);
      const conditions: Statement['conditions'] = [];
      if (st.Condition !== undefined) {
        if (typeof st.Condition !== 'object' || st.Condition === null) throw new PolicyError(`${where}.Condition must be an object`);
        for (const [operator, block] of Object.entries(st.Condition as Record<string, unknown>)) {
          if (!(OPERATORS as readonly string[]).includes(operator)) throw new PolicyError(`${where}.Condition: unsupported operator "${operator}" (casket knows ${OPERATORS.join(', ')})`);
          if (typeof block !== 'object' || block === null) throw new PolicyError(`${where}.Condition.${operator} must be an object`);
          for (const [key, values] of Object.entries(block as Record<string, unknown>)) {
            const list = typeof values === 'string' ? [values] : values;
            if (!Array.isArray(list) || list.some((v) => typeof v !== 'string')) throw new PolicyError(`${where}.Condition.${operator}.${key} must be a string or list of strings`);
            conditions.push({ operator: operator as ConditionOperator, key: key.toLowerCase(), values: list as string[] });
          }
        }
      }
      return { ...(typeof st.Sid === 'string' && { sid: st.Sid }), effect: st.Effect, actions, resources, conditions };
    }),
  };
}

/** IAM wildcard match: `*` any run of characters, `?` exactly one. */
export function globMatch(pattern: string, text: string): boolean {
  // Iterative with backtracking to the last `*`: linear for typical patterns, no regex building per request.
  let p = 0;
  let t = 0;
  let star = -1;
  let mark = 0;
  while (t < text.length) {
    // Past the pattern's end pattern[p] is undefined and equals nothing.
    if (pattern[p] === '?' || pattern[p] === text[t]) {
      p++;
      t++;
    } else if (pattern[p] === '*') {
      star = p++;
      mark = t;
    } else if (star >= 0) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (pattern[p] === '*') p++;
  return p === pattern.length;
}

/** Whether some string starting with `prefix` matches `pattern`. */
export function globCouldMatchPrefix(pattern: string, prefix: string): boolean {
  for (let i = 0; i < prefix.length; i++) {
    // Past the pattern's end pattern[i] is undefined: no `*`, no `?`, no match.
    if (pattern[i] === '*') return true;
    if (pattern[i] !== '?' && pattern[i] !== prefix[i]) return false;
  }
  return true;
}

/**
 * Patterns compiled once (a bounded cache shared by every policy, including
 * session policies read back from the state store): most are a literal or a
 * literal followed by one `*`, which need no backtracking at all.
 */
const MATCHERS = new Map<string, (text: string) => boolean>();
const MAX_MATCHERS = 10_000;

function matcher(pattern: string): (text: string) => boolean {
  let m = MATCHERS.get(pattern);
  if (m) return m;
  const star = pattern.indexOf('*');
  // Two fast paths, a literal and a literal followed by one trailing `*`:
  // globMatch answers the same for both, so taking or skipping either
  // changes no decision. (A `next-line` comment does not reach an `else if`:
  // hence a block.)
  // Stryker disable ConditionalExpression,ArithmeticOperator,StringLiteral: fast paths only, globMatch gives the same answer (a path taken wrongly is caught by the policy-wildcards tests)
  const wild = star >= 0 || pattern.includes('?');
  if (!wild) m = (text) => text === pattern;
  else if (star === pattern.length - 1 && !pattern.includes('?')) {
    const prefix = pattern.slice(0, -1);
    m = (text) => text.startsWith(prefix);
  } else m = (text) => globMatch(pattern, text);
  // Stryker restore ConditionalExpression,ArithmeticOperator,StringLiteral
  // Stryker disable next-line ConditionalExpression,EqualityOperator: the cache holds pure matchers, so clearing it sooner, later or never changes no decision, only memory and speed.
  if (MATCHERS.size >= MAX_MATCHERS) MATCHERS.clear();
  MATCHERS.set(pattern, m);
  return m;
}

function conditionHolds(c: Statement['conditions'][number], context: Record<string, string> | undefined): boolean {
  const value = context?.[c.key];
  const negated = c.operator === 'StringNotEquals' || c.operator === 'StringNotLike';
  if (value === undefined) return negated;
  const like = c.operator === 'StringLike' || c.operator === 'StringNotLike';
  const any = c.values.some((v) => (like ? matcher(v)(value) : v === value));
  return negated ? !any : any;
}

/** `action` already lowercased. */
function statementApplies(s: Statement, action: string, access: Access): boolean {
  return (
    s.actions.some((a) => matcher(a)(action)) &&
    s.resources.some((r) => matcher(r)(access.resource)) &&
    s.conditions.every((c) => conditionHolds(c, access.context))
  );
}

/** One policy's decision on one access: a matching Deny wins over any Allow. */
export function evaluate(policy: Policy, access: Access): Decision {
  let allowed = false;
  const action = access.action.toLowerCase();
  for (const s of policy.statements) {
    if (!statementApplies(s, action, access)) continue;
    if (s.effect === 'Deny') return 'explicit-deny';
    allowed = true;
  }
  return allowed ? 'allow' : 'implicit-deny';
}

/** The decision of several policies that must all allow (a caller's policy and a session policy). */
export function evaluateAll(policies: readonly Policy[], access: Access): Decision {
  let result: Decision = 'allow';
  for (const p of policies) {
    const d = evaluate(p, access);
    if (d === 'explicit-deny') return d;
    if (d === 'implicit-deny') result = d;
  }
  return result;
}

export const S3_ARN = 'arn:aws:s3:::';

/**
 * Whether the policy grants anything at all in a bucket (ListBuckets shows
 * only those): some Allow statement names an s3 action other than
 * ListAllMyBuckets and a resource that matches the bucket or objects in it.
 * Deny statements are not weighed here: a bucket with every action denied
 * still shows, but nothing in it can be done.
 */
export function touchesBucket(policy: Policy, bucket: string): boolean {
  const arn = S3_ARN + bucket;
  return policy.statements.some(
    (s) =>
      s.effect === 'Allow' &&
      s.actions.some((a) => globCouldMatchPrefix(a, 's3:') && a !== 's3:listallmybuckets') &&
      s.resources.some((r) => globMatch(r, arn) || globCouldMatchPrefix(r, `${arn}/`)),
  );
}
