/**
 * What counts as a whole read (docs/design.md §4), through casket's HTTP front in
 * this process: a Range that misses the first or the last byte leaves the
 * agent's stamp partial, and its If-Match write is refused as
 * partial-read; the missing byte, read alone, completes it.
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytes, failure, sdk } from '../helpers/clients.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { until } from '../helpers/poll.js';

const bucket = 'reads';
let casket: InProcessCasket;
let admin: S3Client;
let alice: S3Client;

beforeAll(async () => {
  casket = await startInProcess({ agents: ['alice'] });
  admin = sdk(casket.url, casket.admin);
  alice = sdk(casket.url, casket.agents.alice!);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
});
afterAll(async () => {
  admin?.destroy();
  alice?.destroy();
  await casket?.stop();
});

/** alice GETs `range` of `key` and waits until casket has recorded it (after the response): her stamp changes. */
async function readRange(key: string, range: string): Promise<void> {
  const stamp = async () => JSON.stringify((await casket.casket.services.state.getStamp('alice', bucket, key)) ?? null);
  const before = await stamp();
  const r = await alice.send(new GetObjectCommand({ Bucket: bucket, Key: key, Range: range }));
  await bytes(r.Body);
  await until(async () => (await stamp()) !== before, `alice's read of ${range} of ${key} to be recorded`);
}

async function write(key: string, ifMatch: string) {
  return alice.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'by alice', IfMatch: ifMatch }));
}

describe('a Range that misses an edge is a partial read', () => {
  it('bytes=0-8 of ten bytes (the last byte missing): 412 partial-read; then bytes=9-9: the write lands', async () => {
    const v = (await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'tail', Body: '0123456789' }))).ETag!;
    await readRange('tail', 'bytes=0-8');
    const refused = await failure(write('tail', v));
    expect([refused.status, (refused.error as { Reason?: string }).Reason]).toEqual([412, 'partial-read']);
    await readRange('tail', 'bytes=9-9');
    expect((await write('tail', v)).ETag).toBeDefined();
  });

  it('bytes=1-9 of ten bytes (the first byte missing): 412 partial-read; then bytes=0-0: the write lands', async () => {
    const v = (await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'head', Body: '0123456789' }))).ETag!;
    await readRange('head', 'bytes=1-9');
    const refused = await failure(write('head', v));
    expect([refused.status, (refused.error as { Reason?: string }).Reason]).toEqual([412, 'partial-read']);
    await readRange('head', 'bytes=0-0');
    expect((await write('head', v)).ETag).toBeDefined();
  });
});
