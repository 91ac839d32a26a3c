/**
 * One casket per test file: started before the first test with a bucket
 * made, an admin SDK client, stopped after the last. Fields are filled in
 * beforeAll, so read them inside tests only.
 */
import { CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import { startCasket, type CasketOptions, type RunningCasket } from './casket.js';
import { sdk } from './clients.js';

export interface Suite {
  casket: RunningCasket;
  s3: S3Client;
  bucket: string;
}

export function casketWithBucket(bucket: string, options: CasketOptions = {}): Suite {
  const suite = { bucket } as Suite;
  beforeAll(async () => {
    suite.casket = await startCasket(options);
    suite.s3 = sdk(suite.casket.url, suite.casket.admin);
    await suite.s3.send(new CreateBucketCommand({ Bucket: bucket }));
  });
  afterAll(async () => {
    suite.s3?.destroy();
    await suite.casket?.stop();
  });
  return suite;
}

/** The ETag casket shows for this content: its SHA-256, quoted. */
export function etagOf(body: Buffer | string): string {
  return `"${createHash('sha256').update(body).digest('hex')}"`;
}
