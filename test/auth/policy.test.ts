/**
 * Policy evaluation as a truth table (src/auth/policy.ts): which access a
 * policy allows, denies explicitly, or leaves implicitly denied.
 */
import { describe, expect, it } from 'vitest';
import { evaluate, evaluateAll, globMatch, parsePolicy, PolicyError, touchesBucket, type Access, type Decision } from '../../src/auth/policy.js';

const alice = parsePolicy({
  Version: '2012-10-17',
  Statement: [
    { Effect: 'Allow', Action: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'], Resource: 'arn:aws:s3:::shared/agents/alice/*' },
    { Effect: 'Allow', Action: 's3:ListBucket', Resource: 'arn:aws:s3:::shared', Condition: { StringLike: { 's3:prefix': ['agents/alice/*', 'agents/alice/'] } } },
    { Effect: 'Allow', Action: 's3:ListAllMyBuckets', Resource: '*' },
    { Effect: 'Deny', Action: 's3:*', Resource: 'arn:aws:s3:::shared/agents/alice/secret*' },
  ],
});

const reviewer = parsePolicy({
  Statement: [{ Effect: 'Allow', Action: ['s3:Get*', 's3:List*'], Resource: ['arn:aws:s3:::shared', 'arn:aws:s3:::shared/*'] }],
});

const obj = (key: string, action: string, bucket = 'shared'): Access => ({ action, resource: `arn:aws:s3:::${bucket}/${key}` });
const list = (prefix: string, bucket = 'shared'): Access => ({ action: 's3:ListBucket', resource: `arn:aws:s3:::${bucket}`, context: { 's3:prefix': prefix } });

const table: Array<[string, typeof alice, Access, Decision]> = [
  ['alice reads in her prefix', alice, obj('agents/alice/notes.md', 's3:GetObject'), 'allow'],
  ['alice writes in her prefix', alice, obj('agents/alice/deep/x', 's3:PutObject'), 'allow'],
  ['action names are case-insensitive', alice, obj('agents/alice/x', 'S3:getobject'), 'allow'],
  ['alice reads outside her prefix', alice, obj('agents/bob/notes.md', 's3:GetObject'), 'implicit-deny'],
  ['the prefix itself is not a key under it', alice, obj('agents/alice', 's3:GetObject'), 'implicit-deny'],
  ['resources are case-sensitive', alice, obj('agents/Alice/x', 's3:GetObject'), 'implicit-deny'],
  ['an action not granted', alice, obj('agents/alice/x', 's3:AbortMultipartUpload'), 'implicit-deny'],
  ['another bucket', alice, obj('agents/alice/x', 's3:GetObject', 'other'), 'implicit-deny'],
  ['Deny beats Allow', alice, obj('agents/alice/secret.txt', 's3:GetObject'), 'explicit-deny'],
  ['Deny s3:* covers every s3 action', alice, obj('agents/alice/secrets/x', 's3:DeleteObject'), 'explicit-deny'],
  ['listing her prefix', alice, list('agents/alice/'), 'allow'],
  ['listing below her prefix', alice, list('agents/alice/drafts/'), 'allow'],
  ['listing the bucket top', alice, list(''), 'implicit-deny'],
  ['listing a sibling prefix', alice, list('agents/bob/'), 'implicit-deny'],
  ['ListAllMyBuckets on *', alice, { action: 's3:ListAllMyBuckets', resource: '*' }, 'allow'],
  ['s3:Get* covers GetObjectTagging', reviewer, obj('a/b', 's3:GetObjectTagging'), 'allow'],
  ['s3:List* covers ListBucket, any prefix', reviewer, list(''), 'allow'],
  ['reviewer cannot write', reviewer, obj('a/b', 's3:PutObject'), 'implicit-deny'],
  ['reviewer cannot delete the bucket', reviewer, { action: 's3:DeleteBucket', resource: 'arn:aws:s3:::shared' }, 'implicit-deny'],
  ['s3:* is not sts:AssumeRole', parsePolicy({ Statement: [{ Effect: 'Allow', Action: 's3:*', Resource: '*' }] }), { action: 'sts:AssumeRole', resource: 'arn:casket:iam::agent/x' }, 'implicit-deny'],
];

describe('evaluate', () => {
  it.each(table)('%s', (_name, policy, access, expected) => {
    expect(evaluate(policy, access)).toBe(expected);
  });

  it('condition operators: Equals, NotEquals, Like, NotLike; an absent key fails all but the Not forms', () => {
    const p = (operator: string, values: string[]) => parsePolicy({ Statement: [{ Effect: 'Allow', Action: 's3:ListBucket', Resource: '*', Condition: { [operator]: { 's3:prefix': values } } }] });
    const at = (prefix?: string): Access => ({ action: 's3:ListBucket', resource: 'arn:aws:s3:::b', ...(prefix !== undefined && { context: { 's3:prefix': prefix } }) });
    expect(evaluate(p('StringEquals', ['a/']), at('a/'))).toBe('allow');
    expect(evaluate(p('StringEquals', ['a/']), at('a/b'))).toBe('implicit-deny');
    expect(evaluate(p('StringEquals', ['a/*']), at('a/b'))).toBe('implicit-deny');
    expect(evaluate(p('StringLike', ['a/*']), at('a/b'))).toBe('allow');
    expect(evaluate(p('StringNotLike', ['a/*']), at('b/'))).toBe('allow');
    expect(evaluate(p('StringNotEquals', ['a/']), at('a/'))).toBe('implicit-deny');
    expect(evaluate(p('StringLike', ['*']), at())).toBe('implicit-deny');
    expect(evaluate(p('StringNotLike', ['a/*']), at())).toBe('allow');
  });

  it('a session policy narrows: every policy must allow, any Deny wins', () => {
    const session = parsePolicy({ Statement: [{ Effect: 'Allow', Action: 's3:GetObject', Resource: '*' }] });
    expect(evaluateAll([alice, session], obj('agents/alice/x', 's3:GetObject'))).toBe('allow');
    expect(evaluateAll([alice, session], obj('agents/alice/x', 's3:PutObject'))).toBe('implicit-deny');
    expect(evaluateAll([session, alice], obj('agents/alice/secret', 's3:GetObject'))).toBe('explicit-deny');
    expect(evaluateAll([], obj('anything', 's3:PutObject'))).toBe('allow');
  });
});

describe('globMatch', () => {
  it.each([
    ['*', '', true],
    ['a*c', 'abbbc', true],
    ['a*c', 'abbbd', false],
    ['a?c', 'abc', true],
    ['a?c', 'ac', false],
    ['*a*b*', 'xxaxxbxx', true],
    ['*a*b', 'xxaxxbxxc', false],
  ])('%s ~ %s → %s', (pattern, text, expected) => {
    expect(globMatch(pattern, text)).toBe(expected);
  });
});

describe('touchesBucket (what ListBuckets shows)', () => {
  it.each([
    ['shared', true],
    ['other', false],
  ])('alice: %s → %s', (bucket, expected) => expect(touchesBucket(alice, bucket)).toBe(expected));
  it('a wildcard resource touches every bucket', () => {
    expect(touchesBucket(parsePolicy({ Statement: [{ Effect: 'Allow', Action: 's3:GetObject', Resource: 'arn:aws:s3:::*' }] }), 'any')).toBe(true);
  });
  it('ListAllMyBuckets alone touches none', () => {
    expect(touchesBucket(parsePolicy({ Statement: [{ Effect: 'Allow', Action: 's3:ListAllMyBuckets', Resource: '*' }] }), 'any')).toBe(false);
  });
});

describe('parsePolicy refuses what it would not enforce', () => {
  it.each([
    [{ Statement: [{ Effect: 'Allow', NotAction: 's3:GetObject', Resource: '*' }] }, /NotAction/],
    [{ Statement: [{ Effect: 'Permit', Action: 's3:GetObject', Resource: '*' }] }, /Effect/],
    [{ Statement: [{ Effect: 'Allow', Action: 's3:GetObject' }] }, /Resource/],
    [{ Statement: [{ Effect: 'Allow', Action: 's3:GetObject', Resource: '*', Condition: { IpAddress: { 'aws:SourceIp': '1.2.3.4' } } }] }, /IpAddress/],
    [{ Statement: [] }, /Statement/],
    [[], /object/],
  ])('%j', (doc, message) => {
    expect(() => parsePolicy(doc)).toThrow(PolicyError);
    expect(() => parsePolicy(doc)).toThrow(message);
  });
});
