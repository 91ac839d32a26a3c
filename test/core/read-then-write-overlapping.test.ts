/**
 * Two ranged reads of one key in flight at once, the write right after
 * (read-then-write.test.ts has them one after the other). The guard waits for
 * every read of that key still being recorded (guard.ts, readDelivering), not
 * only for the first: when one read's record lands, the other's is still
 * awaited. Here the first range's record lands only once the second read is
 * being answered too, the second's is held until the test lets it go, and the
 * write is sent in between: a guard that stopped waiting when the first
 * landed judges the write on half the object (a 412 partial-read for an agent
 * that read it all).
 */
import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytes } from '../helpers/clients.js';
import { startRecordingReads, type RecordingReads } from './recording-reads.js';

const bucket = 'read-then-write-overlapping';
let c: RecordingReads;
let admin: S3Client;
let alice: S3Client;
const gate = () => {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
};
const secondAnswered = gate();
const firstRecorded = gate();
const secondReleased = gate();

beforeAll(async () => {
  c = await startRecordingReads(bucket, (recordRead) => async (agent, b, key, read) => {
    if (read.start === 0) await secondAnswered.opened;
    if (read.start === 5) {
      secondAnswered.open();
      await secondReleased.opened;
    }
    const stamp = await recordRead(agent, b, key, read);
    if (read.start === 0) firstRecorded.open();
    return stamp;
  });
  ({ admin, alice } = c);
});
afterAll(async () => {
  secondAnswered.open();
  secondReleased.open();
  await c?.stop();
});

describe('two reads of one key still being recorded', () => {
  it('a write waits for both, not only for the first to land', async () => {
    const v = (await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'k', Body: '0123456789' }))).ETag!;
    const [a, b] = await Promise.all([
      alice.send(new GetObjectCommand({ Bucket: bucket, Key: 'k', Range: 'bytes=0-4' })),
      alice.send(new GetObjectCommand({ Bucket: bucket, Key: 'k', Range: 'bytes=5-9' })),
    ]);
    expect(Buffer.concat([await bytes(a.Body), await bytes(b.Body)]).toString()).toBe('0123456789');
    await firstRecorded.opened;
    const write = alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'k', Body: 'by alice', IfMatch: v }));
    // Time for the write to reach the guard and wait there; then the second record lands.
    await new Promise((resolve) => setTimeout(resolve, 300));
    secondReleased.open();
    expect((await write).ETag).not.toBe(v);
  });
});
