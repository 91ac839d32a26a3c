/**
 * Bucket names (vocabulary/names.ts): saying why a name is refused must not
 * change which names are refused — checked against AWS's rules written as
 * one predicate (https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html),
 * over generated names near the boundaries.
 */
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { bucketNameProblem, isValidBucketName } from '../../src/vocabulary/names.js';

function awsRules(name: string): boolean {
  return (
    /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(name) &&
    !/^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name) &&
    !name.includes('..') && !name.includes('.-') && !name.includes('-.') &&
    !['xn--', 'sthree-', 'amzn-s3-demo-'].some((p) => name.startsWith(p)) &&
    !['-s3alias', '--ol-s3', '.mrap', '--x-s3', '--table-s3'].some((s) => name.endsWith(s))
  );
}

it('refuses exactly the names AWS refuses, and gives a reason for each', () => {
  const chars = fc.constantFrom(...'ab1.-_A9x'.split(''));
  fc.assert(
    fc.property(fc.oneof(fc.string({ unit: chars, maxLength: 70 }), fc.stringMatching(/^(xn--|sthree-)?[a-z0-9.-]{1,8}(--ol-s3|\.mrap)?$/), fc.ipV4()), (name) => {
      expect(isValidBucketName(name)).toBe(awsRules(name));
      expect(bucketNameProblem(name) === undefined).toBe(awsRules(name));
    }),
    { numRuns: 2000 },
  );
});
