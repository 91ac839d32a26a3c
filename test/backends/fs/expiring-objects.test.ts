/**
 * The embedded store judges which objects a bucket's Expiration rules make
 * due (backends/fs/expiring-objects.ts), each at the ETag it has then: Days
 * counted from last-modified and rounded up to the next midnight UTC, as AWS
 * counts them, within the rule's prefix and strict size bounds; a Disabled
 * rule judges nothing. Time is passed to the sweep, so
 * days need no waiting; the deleting itself is the guarded write path's
 * (test/integration/lifecycle-expiration.test.ts).
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { openFsBackend, type FsBackend } from '../../../src/backends/fs/index.js';
import type { ExpiredObject } from '../../../src/backends/types.js';
import { PUT_DEFAULTS, payloadOf, tempDataDir } from './helpers.js';

const DAY = 24 * 60 * 60 * 1000;
let temp: ReturnType<typeof tempDataDir>;
let store: FsBackend;
let judged: ExpiredObject[] = [];

beforeEach(async () => {
  temp = tempDataDir();
  store = openFsBackend({ dataDir: temp.dir, fsync: false, multipartAbandonAfterMs: 0 });
  store.setExpirer(async (judge) => {
    judged = judge();
  });
  await store.createBucket('bkt');
});
afterEach(async () => {
  await store.close();
  temp.cleanup();
});

async function dueAt(now: number): Promise<string[]> {
  // A sweep already running (the one setExpirer starts) is joined, not restarted: the second call is ours, at `now`.
  await store.sweepAbandonedUploads(now);
  await store.sweepAbandonedUploads(now);
  return judged.map((o) => `${o.key}@${o.ruleId}`).sort();
}

it('judges an object due at the first midnight UTC after its last-modified time plus Days, under the prefix and within the size bounds, at its ETag', async () => {
  const put = (key: string, body: string) => store.putObject('bkt', key, payloadOf(body), PUT_DEFAULTS);
  const a = await put('tmp/a', 'a');
  await put('tmp/large', 'x'.repeat(100));
  await put('keep/b', 'b');
  await store.putBucketLifecycle('bkt', [
    { id: 'tmp', enabled: true, prefix: 'tmp/', prefixForm: 'filter', objectSizeLessThan: 50, expiration: { days: 2 } },
    { id: 'off', enabled: false, prefix: '', prefixForm: 'filter', expiration: { days: 1 } },
  ]);
  const midnight = Math.ceil((a.lastModified.getTime() + 2 * DAY) / DAY) * DAY;
  expect(await dueAt(midnight - 1)).toEqual([]);
  expect(await dueAt(midnight)).toEqual(['tmp/a@tmp']);
  expect(judged[0]).toEqual({ bucket: 'bkt', key: 'tmp/a', etag: a.etag, ruleId: 'tmp' });
  // A Date rule covers every object it selects once the date has come, whatever its age.
  await store.putBucketLifecycle('bkt', [{ id: 'all', enabled: true, prefix: '', prefixForm: 'filter', expiration: { date: new Date(midnight).toISOString() } }]);
  expect(await dueAt(midnight - 1)).toEqual([]);
  expect(await dueAt(midnight)).toEqual(['keep/b@all', 'tmp/a@all', 'tmp/large@all']);
});
