/**
 * Policy conditions with an empty StringLike value (src/auth/policy.ts): "" has
 * no wildcard, so under StringLike it matches only the empty string, as it
 * does under StringEquals — AWS's own examples use `"s3:prefix": [""]` to
 * allow listing the bucket top and nothing else.
 * https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html#Conditions_String
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/amazon-s3-policy-keys.html
 */
import { describe, expect, it } from 'vitest';
import { evaluate, parsePolicy, type Access } from '../../src/auth/policy.js';

const list = (prefix: string): Access => ({ action: 's3:ListBucket', resource: 'arn:aws:s3:::shared', context: { 's3:prefix': prefix } });
const listIf = (operator: string, values: string[]) =>
  parsePolicy({ Statement: [{ Effect: 'Allow', Action: 's3:ListBucket', Resource: '*', Condition: { [operator]: { 's3:prefix': values } } }] });

describe('an empty condition value is a literal, not a wildcard', () => {
  it.each([
    ['StringLike', '', 'allow'],
    ['StringLike', 'agents/', 'implicit-deny'],
    ['StringNotLike', '', 'implicit-deny'],
    ['StringNotLike', 'agents/', 'allow'],
  ])('%s [""], s3:prefix %j → %s', (operator, prefix, expected) => {
    expect(evaluate(listIf(operator, ['']), list(prefix))).toBe(expected);
  });
});
