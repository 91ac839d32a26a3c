/**
 * A GetObject whose body fails after its first bytes — a disk that fails
 * mid-read, an upstream connection reset after its headers — through
 * casket's HTTP front in this process. The client learns the answer is
 * broken (never the whole body, never a 200 it can take for complete), no
 * agent is credited with a whole read, and casket goes on answering: the
 * failure must not escape as an uncaught exception, which would end the
 * process and every other request in it.
 *
 * The failure is injected where the bytes come from (the backend's reader),
 * at the one moment no consumer listens yet: right after the first chunk,
 * while the 200 is being prepared (get-object.ts primed()).
 */
import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytes } from '../helpers/clients.js';
import { tornBody, withReads } from '../helpers/faults.js';
import { inProcessWithBucket, type InProcessCasket } from '../helpers/in-process.js';

const bucket = 'torn';
const stops: Array<() => Promise<void>> = [];
let casket: InProcessCasket;
let admin: S3Client;
let alice: S3Client;

beforeAll(async () => {
  const made = await inProcessWithBucket(bucket, stops, ['alice']);
  ({ c: casket, admin } = made);
  alice = made.agents.alice!;
});
afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
});

/** The backend's reader of `key`, its body failing right after its first chunk (the rest of the backend as it is). */
function tornReads<T>(key: string, run: () => Promise<T>): Promise<T> {
  return withReads(casket.casket.services.backend, async (k, v, real) => {
    const r = await real(v);
    return k === key && r ? { info: r.info, open: () => tornBody('first bytes, ') } : r;
  }, run);
}

describe('a GetObject whose body fails after its first bytes', () => {
  it('the client gets a broken answer, not the object; casket goes on answering; the agent has no whole read', async () => {
    const body = 'first bytes, and the rest of the object\n'.repeat(100);
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'torn.txt', Body: body }));
    const read = tornReads('torn.txt', async () => {
      const r = await alice.send(new GetObjectCommand({ Bucket: bucket, Key: 'torn.txt' }));
      return Buffer.from(await bytes(r.Body)).toString('utf8');
    });
    await expect(read).rejects.toThrow();
    // What alice was shown is not the object: no whole read to write on (docs/design.md §4).
    await new Promise((r) => setTimeout(r, 100));
    expect((await casket.casket.services.state.getStamp('alice', bucket, 'torn.txt'))?.full).not.toBe(true);
    // Still answering, the same object whole once its bytes come clean.
    const again = await alice.send(new GetObjectCommand({ Bucket: bucket, Key: 'torn.txt' }));
    expect(Buffer.from(await bytes(again.Body)).toString('utf8')).toBe(body);
  });

  it('several at once, while another object is read whole: each torn read fails alone', async () => {
    const body = 'x'.repeat(4096);
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'many.txt', Body: body }));
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'fine.txt', Body: 'fine\n' }));
    const results = await tornReads('many.txt', () =>
      Promise.allSettled([
        ...Array.from({ length: 4 }, async () => bytes((await alice.send(new GetObjectCommand({ Bucket: bucket, Key: 'many.txt' }))).Body)),
        (async () => Buffer.from(await bytes((await admin.send(new GetObjectCommand({ Bucket: bucket, Key: 'fine.txt' }))).Body)).toString('utf8'))(),
      ]),
    );
    expect(results.slice(0, 4).map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
    expect(results[4]).toEqual({ status: 'fulfilled', value: 'fine\n' });
  });
});
