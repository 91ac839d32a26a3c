/**
 * A read entitles the write that follows it at once (docs/design.md §4).
 * casket records an agent's read after the response's last byte has gone,
 * so a client that has every byte can write before the record lands — boto3's
 * download_file does, its conditional PutObject right after its last ranged
 * GET. The guard waits for the agent's reads of that key still being
 * recorded (guard.ts, readDelivering). Here the state store records reads
 * slowly (as a loaded Redis or SQLite would), so the write always arrives
 * first: without the wait it is refused as not-read or partial-read.
 */
import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytes } from '../helpers/clients.js';
import { startRecordingReads, type RecordingReads } from './recording-reads.js';

const bucket = 'read-then-write';
const SLOW_MS = 400;
let c: RecordingReads;
let admin: S3Client;
let alice: S3Client;

beforeAll(async () => {
  c = await startRecordingReads(bucket, (recordRead) => async (...args) => {
    await new Promise((resolve) => setTimeout(resolve, SLOW_MS));
    return recordRead(...args);
  });
  ({ admin, alice } = c);
});
afterAll(async () => {
  await c?.stop();
});

const put = (who: S3Client, key: string, body: string, ifMatch: string) => who.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, IfMatch: ifMatch }));

describe('a write right after the read that entitles it', () => {
  it('a whole GET, then If-Match at once: the write lands', async () => {
    const v = (await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'whole', Body: 'version one' }))).ETag!;
    const r = await alice.send(new GetObjectCommand({ Bucket: bucket, Key: 'whole' }));
    expect(await bytes(r.Body).then(String)).toBe('version one');
    const w = await put(alice, 'whole', 'by alice', v);
    expect(w.ETag).not.toBe(v);
  });

  it('two ranges that make the whole, the second written at once after: the write lands', async () => {
    const v = (await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'ranged', Body: '0123456789' }))).ETag!;
    await bytes((await alice.send(new GetObjectCommand({ Bucket: bucket, Key: 'ranged', Range: 'bytes=0-4' }))).Body);
    await bytes((await alice.send(new GetObjectCommand({ Bucket: bucket, Key: 'ranged', Range: 'bytes=5-9' }))).Body);
    const w = await put(alice, 'ranged', 'by alice', v);
    expect(w.ETag).not.toBe(v);
  });

});
