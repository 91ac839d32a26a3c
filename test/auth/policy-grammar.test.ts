/**
 * What parsePolicy (src/auth/policy.ts) accepts and what it refuses, with the
 * message the operator reads: config.ts prefixes it with the credential
 * ("credentials[0].policy: …") and STS AssumeRole answers
 * MalformedPolicyDocument "The session policy is not valid: …".
 * Grammar: https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_grammar.html
 */
import { describe, expect, it } from 'vitest';
import { evaluate, parsePolicy, PolicyError } from '../../src/auth/policy.js';

const allow = (over: Record<string, unknown> = {}) => ({ Effect: 'Allow', Action: 's3:GetObject', Resource: '*', ...over });
const get = { action: 's3:GetObject', resource: 'arn:aws:s3:::b/k' };

describe('parsePolicy: the message for each refusal', () => {
  it.each<[string, unknown, string]>([
    ['null', null, 'a policy must be a JSON object'],
    ['a string', 'Allow everything', 'a policy must be a JSON object'],
    ['an array', [allow()], 'a policy must be a JSON object'],
    ['an unknown top-level element', { Statement: [allow()], Principal: '*' }, 'unsupported policy element "Principal"'],
    ['an unknown Version', { Version: '2012-10-18', Statement: [allow()] }, 'unsupported Version "2012-10-18"'],
    ['no Statement', { Version: '2012-10-17' }, 'a policy needs a Statement'],
    ['a statement that is a string', { Statement: ['Allow'] }, 'Statement[0] must be an object'],
    ['a statement that is null', { Statement: [allow(), null] }, 'Statement[1] must be an object'],
    ['an unknown statement element', { Statement: [allow({ Principal: '*' })] }, 'Statement[0]: unsupported element "Principal" (casket knows Sid, Effect, Action, Resource, Condition)'],
    ['an Effect other than Allow or Deny', { Statement: [allow({ Effect: 'allow' })] }, 'Statement[0].Effect must be "Allow" or "Deny"'],
    ['an empty Action', { Statement: [allow({ Action: '' })] }, 'Statement[0].Action must be a non-empty string or list of strings'],
    ['an empty Action list', { Statement: [allow({ Action: [] })] }, 'Statement[0].Action must be a non-empty string or list of strings'],
    ['an Action list holding a number', { Statement: [allow({ Action: ['s3:GetObject', 7] })] }, 'Statement[0].Action must be a non-empty string or list of strings'],
    ['an Action list holding ""', { Statement: [allow({ Action: ['s3:GetObject', ''] })] }, 'Statement[0].Action must be a non-empty string or list of strings'],
    ['a Resource that is an object', { Statement: [allow({ Resource: { arn: '*' } })] }, 'Statement[0].Resource must be a non-empty string or list of strings'],
    ['an Action without its service', { Statement: [allow({ Action: 'GetObject' })] }, 'Statement[0].Action "getobject" is not service:Action'],
    ['an Action with text before it', { Statement: [allow({ Action: 'x s3:GetObject' })] }, 'Statement[0].Action "x s3:getobject" is not service:Action'],
    ['an Action with text after it', { Statement: [allow({ Action: 's3:GetObject x' })] }, 'Statement[0].Action "s3:getobject x" is not service:Action'],
    ['a Condition that is a string', { Statement: [allow({ Condition: 'StringEquals' })] }, 'Statement[0].Condition must be an object'],
    ['a Condition that is null', { Statement: [allow({ Condition: null })] }, 'Statement[0].Condition must be an object'],
    ['an unknown operator', { Statement: [allow({ Condition: { NumericLessThan: { 's3:max-keys': '10' } } })] }, 'Statement[0].Condition: unsupported operator "NumericLessThan" (casket knows StringEquals, StringNotEquals, StringLike, StringNotLike)'],
    ['an operator block that is a string', { Statement: [allow({ Condition: { StringEquals: 's3:prefix' } })] }, 'Statement[0].Condition.StringEquals must be an object'],
    ['an operator block that is null', { Statement: [allow({ Condition: { StringEquals: null } })] }, 'Statement[0].Condition.StringEquals must be an object'],
    ['a condition value that is a number', { Statement: [allow({ Condition: { StringEquals: { 's3:prefix': 3 } } })] }, 'Statement[0].Condition.StringEquals.s3:prefix must be a string or list of strings'],
    ['a condition list holding a number', { Statement: [allow({ Condition: { StringLike: { 's3:prefix': ['a/', 3] } } })] }, 'Statement[0].Condition.StringLike.s3:prefix must be a string or list of strings'],
  ])('%s', (_name, doc, message) => {
    expect(() => parsePolicy(doc)).toThrow(PolicyError);
    expect(() => parsePolicy(doc)).toThrow(message);
  });
});

describe('parsePolicy: what it accepts, and that it enforces what it read', () => {
  it('both policy Versions, an Id, and a single Statement object', () => {
    for (const Version of ['2012-10-17', '2008-10-17']) {
      expect(evaluate(parsePolicy({ Version, Id: 'p1', Statement: allow() }), get)).toBe('allow');
    }
  });

  it('a Deny statement is read, and beats the Allow', () => {
    const p = parsePolicy({ Statement: [allow(), { Effect: 'Deny', Action: 's3:GetObject', Resource: 'arn:aws:s3:::b/k' }] });
    expect(evaluate(p, get)).toBe('explicit-deny');
  });

  it('a Sid is kept with its statement', () => {
    expect(parsePolicy({ Statement: [allow({ Sid: 'ReadAll' })] }).statements[0]).toMatchObject({ sid: 'ReadAll', effect: 'Allow' });
    expect(parsePolicy({ Statement: [allow()] }).statements[0]).not.toHaveProperty('sid');
  });

  it('Action and Resource as a single string or a list', () => {
    const p = parsePolicy({ Statement: [allow({ Action: ['s3:PutObject', 's3:GetObject'], Resource: ['arn:aws:s3:::a/*', 'arn:aws:s3:::b/*'] })] });
    expect(evaluate(p, get)).toBe('allow');
    expect(evaluate(p, { action: 's3:DeleteObject', resource: 'arn:aws:s3:::b/k' })).toBe('implicit-deny');
  });

  it.each(['*', 's3:*', 's3:Get?bject', 'my-service:Do1'])('the Action %s is service:Action', (action) => {
    expect(() => parsePolicy({ Statement: [allow({ Action: action })] })).not.toThrow();
  });

  it('a condition value given as one string, and condition key names in any case', () => {
    const p = parsePolicy({ Statement: [allow({ Action: 's3:ListBucket', Condition: { StringEquals: { 'S3:Prefix': 'a/' } } })] });
    expect(evaluate(p, { action: 's3:ListBucket', resource: 'arn:aws:s3:::b', context: { 's3:prefix': 'a/' } })).toBe('allow');
    expect(evaluate(p, { action: 's3:ListBucket', resource: 'arn:aws:s3:::b', context: { 's3:prefix': 'b/' } })).toBe('implicit-deny');
  });

  it('an empty string is a condition value (listing the top of a bucket)', () => {
    const p = parsePolicy({ Statement: [allow({ Action: 's3:ListBucket', Condition: { StringEquals: { 's3:prefix': [''] } } })] });
    expect(evaluate(p, { action: 's3:ListBucket', resource: 'arn:aws:s3:::b', context: { 's3:prefix': '' } })).toBe('allow');
  });
});
