/**
 * The POST Object policy checker (src/auth/post-policy.ts): what a browser
 * form's policy allows and the AccessDenied text AWS gives for each refusal.
 * https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-HTTPPOSTConstructPolicy.html
 */
import { describe, expect, it } from 'vitest';
import { createHmac } from 'node:crypto';
import { checkPostPolicy, parsePostPolicy, postSignatureMatches, postSignatureV2Matches } from '../../src/auth/post-policy.js';
import { hmac, signingKeyFor } from '../../src/auth/sigv4.js';

const encode = (doc: unknown) => Buffer.from(JSON.stringify(doc)).toString('base64');
const policy = (conditions: unknown[], expiration = '2030-01-01T00:00:00Z') => parsePostPolicy(encode({ expiration, conditions }));
const fields = (o: Record<string, string>) => new Map(Object.entries(o));
const now = new Date('2026-11-28T00:00:00Z');

describe('checkPostPolicy', () => {
  const p = policy([{ bucket: 'b' }, ['starts-with', '$key', 'uploads/'], ['content-length-range', 1, 10]]);

  it('accepts a form every condition covers and returns the length range', () => {
    expect(checkPostPolicy(p, fields({ bucket: 'b', key: 'uploads/a.txt' }), now)).toEqual({ min: 1, max: 10 });
  });

  it('refuses a key outside starts-with', () => {
    expect(() => checkPostPolicy(p, fields({ bucket: 'b', key: 'other/a.txt' }), now))
      .toThrow('Invalid according to Policy: Policy Condition failed: ["starts-with", "$key", "uploads/"]');
  });

  it('refuses an expired policy', () => {
    const old = policy([{ bucket: 'b' }], '2020-01-01T00:00:00Z');
    expect(() => checkPostPolicy(old, fields({ bucket: 'b' }), now)).toThrow('Invalid according to Policy: Policy expired.');
  });

  it('refuses a field no condition names, as AWS does', () => {
    expect(() => checkPostPolicy(p, fields({ bucket: 'b', key: 'uploads/a', 'x-amz-meta-who': 'x' }), now))
      .toThrow('Invalid according to Policy: Extra input fields: x-amz-meta-who');
  });
});

describe('postSignatureMatches', () => {
  const b64 = encode({ expiration: '2030-01-01T00:00:00Z', conditions: [] });
  const good = hmac(signingKeyFor('secret', '20261128', 'us-east-1', 's3'), b64).toString('hex');
  it('matches the SigV4 HMAC of the base64 policy and nothing else', () => {
    expect(postSignatureMatches('secret', '20261128', 'us-east-1', b64, good)).toBe(true);
    expect(postSignatureMatches('wrong', '20261128', 'us-east-1', b64, good)).toBe(false);
  });
});

describe('what a policy must say', () => {
  it('an expiration not written as ISO 8601 UTC is InvalidPolicyDocument (ceph/s3-tests test_post_object_invalid_date_format)', () => {
    expect(() => parsePostPolicy(encode({ expiration: '2030-01-01 00:00:00.123456+00:00', conditions: [] }))).toThrow("Invalid 'expiration' value.");
  });

  it('an x-amz-checksum-* field needs no condition: it only adds a check the file must pass', () => {
    expect(checkPostPolicy(policy([{ bucket: 'b' }, ['starts-with', '$key', '']]), fields({ bucket: 'b', key: 'k', 'x-amz-checksum-sha256': 'x' }), now)).toBeUndefined();
  });

  it("the URL's bucket is a field like any other: a policy that does not name it is refused", () => {
    expect(() => checkPostPolicy(policy([['starts-with', '$key', '']]), fields({ bucket: 'b', key: 'k' }), now)).toThrow('Extra input fields: bucket');
  });
});

describe('postSignatureV2Matches', () => {
  it('matches the base64 HMAC-SHA1 of the base64 policy (boto3 generate_presigned_post without signature_version)', () => {
    const b64 = encode({ expiration: '2030-01-01T00:00:00Z', conditions: [] });
    const good = createHmac('sha1', 'secret').update(b64).digest('base64');
    expect(postSignatureV2Matches('secret', b64, good)).toBe(true);
    expect(postSignatureV2Matches('wrong', b64, good)).toBe(false);
  });
});
