/**
 * Policy wildcards and conditions beyond the truth table of policy.test.ts:
 * `*` and `?` anywhere in a Resource or condition value, the Not operators,
 * several policies in either order, and which buckets ListBuckets shows.
 * IAM wildcards: https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_resource.html
 * Condition operators: https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html#Conditions_String
 */
import { describe, expect, it } from 'vitest';
import { evaluate, evaluateAll, globMatch, parsePolicy, touchesBucket, type Access } from '../../src/auth/policy.js';

const get = (key: string): Access => ({ action: 's3:GetObject', resource: `arn:aws:s3:::shared/${key}` });
const list = (prefix?: string): Access => ({ action: 's3:ListBucket', resource: 'arn:aws:s3:::shared', ...(prefix !== undefined && { context: { 's3:prefix': prefix } }) });
const allowResource = (Resource: string | string[]) => parsePolicy({ Statement: [{ Effect: 'Allow', Action: 's3:GetObject', Resource }] });
const listIf = (operator: string, values: string | string[]) =>
  parsePolicy({ Statement: [{ Effect: 'Allow', Action: 's3:ListBucket', Resource: '*', Condition: { [operator]: { 's3:prefix': values } } }] });

describe('Resource wildcards in the middle of a pattern', () => {
  it.each([
    ['shared/*/notes.md', 'alice/notes.md', 'allow'],
    ['shared/*/notes.md', 'alice/todo.md', 'implicit-deny'],
    ['shared/agent?/*', 'agent1/x', 'allow'],
    ['shared/agent?/*', 'agent12/x', 'implicit-deny'],
    ['shared/agent?/*', 'agent/x', 'implicit-deny'],
    ['shared/a?c', 'abc', 'allow'],
    ['shared/a?c', 'xbc', 'implicit-deny'],
  ])('arn:aws:s3:::%s on %s → %s', (pattern, key, expected) => {
    expect(evaluate(allowResource(`arn:aws:s3:::${pattern}`), get(key))).toBe(expected);
  });
});

describe('globMatch (IAM `*` and `?`)', () => {
  it.each([
    ['a*c', 'ac', true],
    ['a*', 'a', true],
    ['abc', 'xbc', false],
    ['a?c', 'xbc', false],
    ['a?c', 'xabc', false],
    ['ab', 'abc', false],
    ['abc', 'ab', false],
    ['*?', '', false],
    ['a**', 'a', true],
  ])('%s ~ %s → %s', (pattern, text, expected) => {
    expect(globMatch(pattern, text)).toBe(expected);
  });
});

describe('conditions', () => {
  it.each<[string, string | string[], string | undefined, string]>([
    ['StringNotLike', ['a/*'], 'a/b', 'implicit-deny'],
    ['StringNotLike', ['a/*'], 'b/', 'allow'],
    ['StringNotEquals', ['a/'], undefined, 'allow'],
    ['StringNotEquals', ['a/'], 'b/', 'allow'],
    ['StringEquals', ['a/', 'b/'], 'b/', 'allow'],
    ['StringEquals', ['a/', 'b/'], 'c/', 'implicit-deny'],
    ['StringEquals', ['a/'], undefined, 'implicit-deny'],
    // A value without a wildcard matches only itself, under StringLike too.
    ['StringLike', 'a', 'ab', 'implicit-deny'],
    ['StringLike', 'a', 'a', 'allow'],
    ['StringLike', ['x', 'a?'], 'ab', 'allow'],
  ])('%s %j, s3:prefix %j → %s', (operator, values, prefix, expected) => {
    expect(evaluate(listIf(operator, values), list(prefix))).toBe(expected);
  });
});

describe('evaluateAll: every policy must allow, whatever the order', () => {
  const all = parsePolicy({ Statement: [{ Effect: 'Allow', Action: 's3:*', Resource: '*' }] });
  const readOnly = parsePolicy({ Statement: [{ Effect: 'Allow', Action: 's3:GetObject', Resource: '*' }] });
  const put: Access = { action: 's3:PutObject', resource: 'arn:aws:s3:::shared/k' };
  it('the narrower first or last, a write stays denied', () => {
    expect(evaluateAll([all, readOnly], put)).toBe('implicit-deny');
    expect(evaluateAll([readOnly, all], put)).toBe('implicit-deny');
    expect(evaluateAll([readOnly, all], get('k'))).toBe('allow');
  });
});

describe('touchesBucket: which buckets ListBuckets shows', () => {
  const policy = (Effect: string, Action: string | string[], Resource: string | string[]) => parsePolicy({ Statement: [{ Effect, Action, Resource }] });
  it.each<[string, ReturnType<typeof policy>, boolean]>([
    ['a Deny alone shows nothing', policy('Deny', 's3:GetObject', 'arn:aws:s3:::shared/*'), false],
    ['Action "*" shows the bucket', policy('Allow', '*', 'arn:aws:s3:::shared/*'), true],
    ['an action of another service shows nothing', policy('Allow', 'sts:AssumeRole', '*'), false],
    ['ListAllMyBuckets beside GetObject: GetObject shows it', policy('Allow', ['s3:ListAllMyBuckets', 's3:GetObject'], 'arn:aws:s3:::shared/*'), true],
    ['one of several resources in the bucket', policy('Allow', 's3:GetObject', ['arn:aws:s3:::other/*', 'arn:aws:s3:::shared/*']), true],
    ['a prefix in every bucket', policy('Allow', 's3:GetObject', 'arn:aws:s3:::*/reports/*'), true],
    ['`?` standing for a letter of the bucket', policy('Allow', 's3:GetObject', 'arn:aws:s3:::sh?red/*'), true],
    ['a bucket whose name starts the same is another bucket', policy('Allow', 's3:GetObject', 'arn:aws:s3:::shared-archive/*'), false],
    ['a resource that stops inside the bucket name', policy('Allow', 's3:GetObject', 'arn:aws:s3:::sh'), false],
  ])('%s', (_name, p, expected) => {
    expect(touchesBucket(p, 'shared')).toBe(expected);
  });
});
