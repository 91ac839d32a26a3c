/**
 * Multipart clean-up on the embedded store, as an S3 user meets it: the
 * lifecycle rule AWS users write for it (AbortIncompleteMultipartUpload)
 * round-trips through PutBucketLifecycleConfiguration, Get… and
 * DeleteBucketLifecycle with the AWS SDK, while rules casket cannot enforce
 * (Transition) are refused; and with a short --multipart-abandon-after, an upload
 * left idle is aborted by itself — gone from ListMultipartUploads, its parts
 * gone from store/, the metric down — while one still receiving parts lives.
 * In front of an upstream the flag does nothing (the upstream's rules apply).
 */
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketLifecycleCommand,
  GetBucketLifecycleConfigurationCommand,
  ListMultipartUploadsCommand,
  PutBucketLifecycleConfigurationCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { failure, sdk } from '../helpers/clients.js';
import { until } from '../helpers/poll.js';

const embedded = !process.env.CASKET_TEST_UPSTREAM;
let casket: RunningCasket;
let s3: S3Client;

beforeAll(async () => {
  casket = await startCasket({ args: ['--multipart-abandon-after', '3'] });
  s3 = sdk(casket.url, casket.admin);
  await s3.send(new CreateBucketCommand({ Bucket: 'uploads' }));
});
afterAll(async () => {
  await casket?.stop();
});

function storedBytes(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    total += entry.isDirectory() ? storedBytes(path) : statSync(path).size;
  }
  return total;
}

async function metric(): Promise<number> {
  const text = await (await fetch(`${casket.url}/_casket/metrics`)).text();
  return Number(/^casket_multipart_incomplete_bytes (\d+)/m.exec(text)?.[1] ?? NaN);
}

describe('lifecycle configuration', () => {
  it('keeps an AbortIncompleteMultipartUpload rule, answers it back, deletes it', async () => {
    const Bucket = 'uploads';
    expect((await failure(s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket })))).name).toBe('NoSuchLifecycleConfiguration');
    await s3.send(new PutBucketLifecycleConfigurationCommand({
      Bucket,
      LifecycleConfiguration: {
        Rules: [
          { ID: 'abort-stale-uploads', Status: 'Enabled', Filter: { Prefix: '' }, AbortIncompleteMultipartUpload: { DaysAfterInitiation: 7 } },
          { ID: 'tmp', Status: 'Disabled', Filter: { Prefix: 'tmp/' }, AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 } },
        ],
      },
    }));
    const got = await s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket }));
    // In front of an upstream its own answer comes back: Ceph RGW 16 gives the
    // prefix as the rule's Prefix, not Filter/Prefix (the older form AWS still takes).
    const prefix = (r: { Filter?: { Prefix?: string }; Prefix?: string }) => r.Filter?.Prefix ?? r.Prefix;
    expect(got.Rules?.map((r) => ({ ID: r.ID, Status: r.Status, prefix: prefix(r), days: r.AbortIncompleteMultipartUpload?.DaysAfterInitiation }))).toEqual([
      { ID: 'abort-stale-uploads', Status: 'Enabled', prefix: '', days: 7 },
      { ID: 'tmp', Status: 'Disabled', prefix: 'tmp/', days: 1 },
    ]);
    if (embedded) expect(got.Rules?.map((r) => r.Filter)).toEqual([{ Prefix: '' }, { Prefix: 'tmp/' }]);
    await s3.send(new DeleteBucketLifecycleCommand({ Bucket }));
    expect((await failure(s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket })))).name).toBe('NoSuchLifecycleConfiguration');
  });

  it('on the embedded store, refuses rules it cannot enforce through the guard, and bad ones, saying why (in front of an upstream they go there whole: passthrough.test.ts)', async () => {
    const Bucket = 'uploads';
    if (!embedded) {
      // In front of an upstream the rule casket cannot enforce goes there whole and is taken (not refused).
      await s3.send(new PutBucketLifecycleConfigurationCommand({ Bucket, LifecycleConfiguration: { Rules: [{ ID: 'expire', Status: 'Enabled', Filter: { Prefix: '' }, Expiration: { Days: 30 } }] } }));
      expect((await s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket }))).Rules?.map((r) => r.Expiration?.Days)).toEqual([30]);
      await s3.send(new DeleteBucketLifecycleCommand({ Bucket }));
      return;
    }
    // Expiration is kept (lifecycle-expiration.test.ts); Transition has no storage class to go to.
    const transition = await failure(s3.send(new PutBucketLifecycleConfigurationCommand({
      Bucket,
      LifecycleConfiguration: { Rules: [{ ID: 'archive', Status: 'Enabled', Filter: { Prefix: '' }, Transitions: [{ Days: 30, StorageClass: 'GLACIER' }] }] },
    })));
    expect([transition.status, transition.name]).toEqual([501, 'NotImplemented']);
    expect(transition.error.message).toMatch(/Transition.*storage class/);
    const tagged = await failure(s3.send(new PutBucketLifecycleConfigurationCommand({
      Bucket,
      LifecycleConfiguration: { Rules: [{ Status: 'Enabled', Filter: { Tag: { Key: 'a', Value: 'b' } }, AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 } }] },
    })));
    expect([tagged.status, tagged.name]).toEqual([400, 'InvalidRequest']);
    const zero = await failure(s3.send(new PutBucketLifecycleConfigurationCommand({
      Bucket,
      LifecycleConfiguration: { Rules: [{ Status: 'Enabled', Filter: { Prefix: '' }, AbortIncompleteMultipartUpload: { DaysAfterInitiation: 0 } }] },
    })));
    expect([zero.status, zero.name]).toEqual([400, 'InvalidArgument']);
    expect((await failure(s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket })))).name).toBe('NoSuchLifecycleConfiguration');
  });
});

describe('--multipart-abandon-after', () => {
  it('aborts an upload left idle and frees its parts; an upload still receiving parts survives', async () => {
    const Bucket = 'uploads';
    if (!embedded) {
      // In front of an upstream the flag does nothing: the upstream's own lifecycle rules clean up there.
      const left = await s3.send(new CreateMultipartUploadCommand({ Bucket, Key: 'upstream-idle' }));
      await new Promise((r) => setTimeout(r, 4_500));
      const { Uploads = [] } = await s3.send(new ListMultipartUploadsCommand({ Bucket }));
      expect(Uploads.map((u) => u.UploadId)).toContain(left.UploadId);
      return;
    }
    const store = join(casket.dataDir, 'store', 'blobs');
    const before = storedBytes(store);
    const abandoned = await s3.send(new CreateMultipartUploadCommand({ Bucket, Key: 'abandoned' }));
    await s3.send(new UploadPartCommand({ Bucket, Key: 'abandoned', UploadId: abandoned.UploadId, PartNumber: 1, Body: randomBytes(2 * 1024 * 1024) }));
    const live = await s3.send(new CreateMultipartUploadCommand({ Bucket, Key: 'live' }));
    const parts: { PartNumber: number; ETag: string }[] = [];
    const part = async (n: number) => {
      const r = await s3.send(new UploadPartCommand({ Bucket, Key: 'live', UploadId: live.UploadId, PartNumber: n, Body: randomBytes(n === 1 ? 5 * 1024 * 1024 : 1024) }));
      parts.push({ PartNumber: n, ETag: r.ETag! });
    };
    await part(1);
    expect(await metric()).toBe(7 * 1024 * 1024);
    // Every 1.5 s a part for the live upload, under the 3 s idle limit, until the other one is gone.
    let n = 1;
    await until(async () => {
      await new Promise((r) => setTimeout(r, 1500));
      await part(++n);
      const { Uploads = [] } = await s3.send(new ListMultipartUploadsCommand({ Bucket }));
      return !Uploads.some((u) => u.Key === 'abandoned');
    }, 'the idle upload to be aborted', 12_000);
    const { Uploads = [] } = await s3.send(new ListMultipartUploadsCommand({ Bucket }));
    expect(Uploads.map((u) => u.Key)).toEqual(['live']);
    await until(async () => (await metric()) === 5 * 1024 * 1024 + (n - 1) * 1024, 'the metric to count only the live upload', 3_000);
    // The 2 MiB part is gone from the disk; the live upload's parts are there.
    expect(storedBytes(store) - before).toBe(5 * 1024 * 1024 + (n - 1) * 1024);
    await s3.send(new CompleteMultipartUploadCommand({ Bucket, Key: 'live', UploadId: live.UploadId, MultipartUpload: { Parts: [parts[0]!, parts.at(-1)!] } }));
    expect(await metric()).toBe(0);
  });
});
