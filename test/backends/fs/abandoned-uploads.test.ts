/**
 * The embedded store aborts multipart uploads nobody will finish
 * (backends/fs/abandoned-uploads.ts): a bucket's AbortIncompleteMultipartUpload
 * rule, under its prefix, once its days have passed (rounded up to midnight
 * UTC, as AWS counts), and the store-wide idle limit; their parts leave the
 * disk, and the bytes held by incomplete uploads are counted. Time is passed
 * to the sweep, so days need no waiting.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { openFsBackend, type FsBackend } from '../../../src/backends/fs/index.js';
import { abortTime } from '../../../src/vocabulary/lifecycle.js';
import { blobFiles, bytes, payloadOf, tempDataDir } from './helpers.js';

const DAY = 24 * 60 * 60 * 1000;
let temp: ReturnType<typeof tempDataDir>;
let store: FsBackend;

beforeEach(async () => {
  temp = tempDataDir();
  store = openFsBackend({ dataDir: temp.dir, fsync: false, minPartSize: 1024, multipartAbandonAfterMs: 0 });
  await store.createBucket('bkt');
});
afterEach(async () => {
  await store.close();
  temp.cleanup();
});

async function started(key: string, size: number): Promise<string> {
  const { uploadId } = await store.createMultipartUpload('bkt', key, {}, {});
  await store.uploadPart('bkt', key, uploadId, 1, payloadOf(bytes(size), { md5: true }));
  return uploadId;
}

async function listed(): Promise<string[]> {
  return (await store.listMultipartUploads('bkt', { prefix: '', maxUploads: 1000 })).uploads.map((u) => u.key);
}

it('counts days as AWS does: initiation plus the days, rounded up to the next midnight UTC', () => {
  const initiated = Date.UTC(2026, 10, 3, 15, 30);
  expect(new Date(abortTime(initiated, 1)).toISOString()).toBe('2026-11-05T00:00:00.000Z');
  expect(new Date(abortTime(Date.UTC(2026, 10, 3), 7)).toISOString()).toBe('2026-11-10T00:00:00.000Z');
});

it('a lifecycle rule aborts the uploads under its prefix once its days have passed, and frees their parts', async () => {
  await store.putBucketLifecycle!('bkt', [{ id: 'tmp-uploads', enabled: true, prefix: 'tmp/', prefixForm: 'filter', abortDaysAfterInitiation: 2 }]);
  await started('tmp/abandoned', 4096);
  await started('kept/other', 1024);
  expect(store.incompleteUploadBytes()).toBe(5120);
  await store.sweepAbandonedUploads(Date.now() + DAY);
  expect(await listed()).toEqual(['kept/other', 'tmp/abandoned']);
  await store.sweepAbandonedUploads(Date.now() + 3 * DAY);
  await store.flushDeletes();
  expect(await listed()).toEqual(['kept/other']);
  expect(store.incompleteUploadBytes()).toBe(1024);
  expect(blobFiles(temp.dir)).toHaveLength(1);
});

it('a Disabled rule aborts nothing; with no rule only the idle limit applies', async () => {
  await store.putBucketLifecycle!('bkt', [{ enabled: false, prefix: '', prefixForm: 'filter', abortDaysAfterInitiation: 1 }]);
  await started('a', 1024);
  await store.sweepAbandonedUploads(Date.now() + 30 * DAY);
  expect(await listed()).toEqual(['a']);
  await store.close();
  store = openFsBackend({ dataDir: temp.dir, fsync: false, minPartSize: 1024, multipartAbandonAfterMs: 7 * DAY });
  await store.putBucketLifecycle!('bkt', null);
  await store.sweepAbandonedUploads(Date.now() + 6 * DAY);
  expect(await listed()).toEqual(['a']);
  await store.sweepAbandonedUploads(Date.now() + 8 * DAY);
  await store.flushDeletes();
  expect(await listed()).toEqual([]);
  expect(blobFiles(temp.dir)).toHaveLength(0);
  expect(store.incompleteUploadBytes()).toBe(0);
});
