/**
 * What the event stream (GET /_casket/events, docs/design.md §9) is told of
 * each guarded write (s3/write.ts), with casket in this process: who wrote
 * (agent, access key), the version made (ETag, size, version id) and the one
 * it replaced; a delete in a versioned bucket made a delete marker; an
 * exact retry, including a CompleteMultipartUpload the store had already
 * completed, is `casket:ExactRetry` and nothing else. test/events/ drives the
 * stream itself against a spawned casket.
 */
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  PutBucketVersioningCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cred } from '../helpers/casket.js';
import { bytes, sdk } from '../helpers/clients.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { until } from '../helpers/poll.js';
import { raw } from '../helpers/raw.js';
import { etagOf } from '../helpers/suite.js';
import { subscribe, type Rec, type Subscription } from '../events/sse.js';

const bucket = 'written';
const versioned = 'written-versions';
let casket: InProcessCasket;
let alice: Cred;
let aliceSdk: S3Client;
let stream: Subscription;

beforeAll(async () => {
  casket = await startInProcess({ agents: ['alice'], flags: { minPartSize: '1' } });
  alice = casket.agents.alice!;
  aliceSdk = sdk(casket.url, alice);
  const admin = sdk(casket.url, casket.admin);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  await admin.send(new CreateBucketCommand({ Bucket: versioned }));
  await admin.send(new PutBucketVersioningCommand({ Bucket: versioned, VersioningConfiguration: { Status: 'Enabled' } }));
  admin.destroy();
  stream = await subscribe(casket.url, casket.admin);
  expect(stream.status).toBe(200);
});
afterAll(async () => {
  stream?.close();
  aliceSdk?.destroy();
  await casket?.stop();
});

const put = (who: Cred, key: string, body: string, headers: Record<string, string> = {}, into = bucket) => raw(casket.url, who, { method: 'PUT', path: `/${into}/${key}`, headers, body });
const hex = (quoted: string) => quoted.slice(1, -1);

/** The records of `key` once there are `n` of them (the write appended each before it answered). */
async function recordsOf(key: string, n: number, of = bucket): Promise<Rec[]> {
  const mine = (all: Rec[]) => all.filter((r) => r.s3.bucket.name === of && r.s3.object.key === key);
  return mine(await stream.until((all) => mine(all).length >= n));
}

/** alice reads `key` whole; casket records the read after the response. */
async function read(key: string): Promise<string> {
  const r = await raw(casket.url, alice, { method: 'GET', path: `/${bucket}/${key}` });
  await until(async () => (await casket.casket.services.state.getStamp('alice', bucket, key))?.etag === hex(r.headers.etag as string), `alice's read of ${key} to be recorded`);
  return r.headers.etag as string;
}

describe('a write that landed', () => {
  it("a person's PutObject: its access key, the new ETag and size, no agent and nothing replaced", async () => {
    await put(casket.admin, 'first', 'hello');
    const [r] = await recordsOf('first', 1);
    expect([r!.eventName, r!.eventSource, r!.s3.object.eTag, r!.s3.object.size]).toEqual(['s3:ObjectCreated:Put', 'aws:s3', hex(etagOf('hello')), 5]);
    expect(r!.casket).toEqual({ operation: 'PutObject', accessKey: casket.admin.accessKeyId });
  });

  it("an agent's If-Match overwrite: the agent, its key, and the version it replaced", async () => {
    await put(casket.admin, 'over', 'one');
    const v1 = await read('over');
    expect((await put(alice, 'over', 'two!', { 'if-match': v1 })).status).toBe(200);
    const [, r] = await recordsOf('over', 2);
    expect([r!.s3.object.eTag, r!.s3.object.size]).toEqual([hex(etagOf('two!')), 4]);
    expect(r!.casket).toEqual({ operation: 'PutObject', agent: 'alice', accessKey: alice.accessKeyId, previousETag: hex(v1) });
  });

  it('If-Match naming the version in the "-1" form: the version replaced is the plain ETag', async () => {
    await put(casket.admin, 'dash-one', 'one');
    const v1 = hex(etagOf('one'));
    expect((await put(casket.admin, 'dash-one', 'two', { 'if-match': `"${v1}-1"` })).status).toBe(200);
    const [, r] = await recordsOf('dash-one', 2);
    expect(r!.casket.previousETag).toBe(v1);
  });

  it('If-Match naming two versions: which one was replaced is not known, so none is named', async () => {
    await put(casket.admin, 'either', 'one');
    expect((await put(casket.admin, 'either', 'two', { 'if-match': `${etagOf('one')}, ${etagOf('other')}` })).status).toBe(200);
    const [, r] = await recordsOf('either', 2);
    expect(r!.casket.previousETag).toBeUndefined();
    expect(r!.s3.object.eTag).toBe(hex(etagOf('two')));
  });

  it('a DeleteObject: s3:ObjectRemoved:Delete naming the version it removed', async () => {
    await put(casket.admin, 'removed', 'bye');
    expect((await raw(casket.url, casket.admin, { method: 'DELETE', path: `/${bucket}/removed` })).status).toBe(204);
    const [, r] = await recordsOf('removed', 2);
    expect([r!.eventName, r!.s3.object.eTag, r!.s3.object.versionId]).toEqual(['s3:ObjectRemoved:Delete', undefined, undefined]);
    expect(r!.casket).toEqual({ operation: 'DeleteObject', accessKey: casket.admin.accessKeyId, previousETag: hex(etagOf('bye')) });
  });
});

describe('a versioned bucket', () => {
  it('a PutObject names the version id it made; a DeleteObject made a delete marker, with its version id', async () => {
    const written = await put(casket.admin, 'doc', 'v1', {}, versioned);
    const versionId = written.headers['x-amz-version-id'] as string;
    expect(versionId).toBeTruthy();
    const deleted = await raw(casket.url, casket.admin, { method: 'DELETE', path: `/${versioned}/doc` });
    const marker = deleted.headers['x-amz-version-id'] as string;
    expect([deleted.status, deleted.headers['x-amz-delete-marker']]).toEqual([204, 'true']);
    const [p, d] = await recordsOf('doc', 2, versioned);
    expect([p!.eventName, p!.s3.object.versionId]).toEqual(['s3:ObjectCreated:Put', versionId]);
    expect([d!.eventName, d!.s3.object.versionId, d!.casket.previousETag]).toEqual(['s3:ObjectRemoved:DeleteMarkerCreated', marker, hex(etagOf('v1'))]);
    expect(marker).not.toBe(versionId);
  });

  it('a DeleteObject of one version id removes that version: no delete marker', async () => {
    const versionId = (await put(casket.admin, 'one-version', 'v1', {}, versioned)).headers['x-amz-version-id'] as string;
    const deleted = await raw(casket.url, casket.admin, { method: 'DELETE', path: `/${versioned}/one-version?versionId=${versionId}` });
    expect(deleted.status).toBe(204);
    const [, d] = await recordsOf('one-version', 2, versioned);
    expect([d!.eventName, d!.s3.object.versionId]).toEqual(['s3:ObjectRemoved:Delete', undefined]);
  });
});

describe('an exact retry', () => {
  it('is casket:ExactRetry with the version the first call made, and no second write', async () => {
    await put(casket.admin, 'again', 'one');
    const call = () => put(casket.admin, 'again', 'twice', { 'if-match': etagOf('one'), 'amz-sdk-invocation-id': 'inv-event' });
    expect((await call()).status).toBe(200);
    expect((await call()).status).toBe(200);
    const [, written, retry] = await recordsOf('again', 3);
    expect(written!.eventName).toBe('s3:ObjectCreated:Put');
    expect([retry!.eventName, retry!.eventSource, retry!.s3.object.eTag, retry!.s3.object.size]).toEqual(['casket:ExactRetry', 'casket', hex(etagOf('twice')), 5]);
    expect(retry!.casket).toEqual({ operation: 'PutObject', accessKey: casket.admin.accessKeyId });
  });

  it("an agent's CompleteMultipartUpload sent twice: the second is answered from the completed upload, an ExactRetry", async () => {
    await put(casket.admin, 'parts.bin', 'old');
    const v1 = await read('parts.bin');
    const upload = await aliceSdk.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'parts.bin' }));
    const part = await aliceSdk.send(new UploadPartCommand({ Bucket: bucket, Key: 'parts.bin', UploadId: upload.UploadId, PartNumber: 1, Body: 'part one' }));
    const complete = () =>
      aliceSdk.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: 'parts.bin', UploadId: upload.UploadId, IfMatch: v1, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] } }));
    const first = await complete();
    const second = await complete();
    expect(second.ETag).toBe(first.ETag);
    expect((await bytes((await aliceSdk.send(new GetObjectCommand({ Bucket: bucket, Key: 'parts.bin' }))).Body)).toString()).toBe('part one');
    const [, done, retry] = await recordsOf('parts.bin', 3);
    expect([done!.eventName, done!.casket.agent, done!.casket.previousETag]).toEqual(['s3:ObjectCreated:CompleteMultipartUpload', 'alice', hex(v1)]);
    expect([retry!.eventName, retry!.s3.object.eTag, retry!.s3.object.size, retry!.casket.agent]).toEqual(['casket:ExactRetry', hex(first.ETag!), 8, 'alice']);
  });
});
