/**
 * The event stream (docs/design.md §9), end to end: a real casket, writes
 * through the AWS SDK, /_casket/events read as Server-Sent Events. Every
 * kind of write is one record shaped as an S3 event notification, after
 * its commit; a refusal, a merge and an exact retry are casket's own;
 * Last-Event-ID (header or query) resumes after that record; bucket,
 * prefix and event-name filters hold; only admin credentials may listen.
 */
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytes, failure, sdk } from '../helpers/clients.js';
import { raw } from '../helpers/raw.js';
import { subscribe, type Subscription } from './sse.js';
import { startStreamCasket, type StreamCasket } from './stream-casket.js';

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

describe('GET /_casket/events', () => {
  let casket: StreamCasket;
  let admin: S3Client;
  let alice: S3Client;
  let bob: S3Client;
  const open: Subscription[] = [];
  const listen = async (path = '/_casket/events', headers: Record<string, string> = {}) => {
    const s = await subscribe(casket.url, casket.admin, path, headers);
    open.push(s);
    return s;
  };

  beforeAll(async () => {
    casket = await startStreamCasket({ agents: ['alice', 'bob'], keys: ['reader'], flags: { minPartSize: '1' } });
    admin = sdk(casket.url, casket.admin);
    alice = sdk(casket.url, casket.agents.alice!);
    bob = sdk(casket.url, casket.agents.bob!);
    await admin.send(new CreateBucketCommand({ Bucket: 'events' }));
    await admin.send(new CreateBucketCommand({ Bucket: 'other' }));
  });

  afterAll(async () => {
    for (const s of open) s.close();
    for (const c of [admin, alice, bob]) c?.destroy();
    await casket?.stop();
  });

  it('streams a record per put, copy, multipart upload, delete, refusal, merge and exact retry, each after its commit', async () => {
    const stream = await listen();
    expect(stream.status).toBe(200);
    expect(stream.headers['content-type']).toMatch(/^text\/event-stream/);

    const put = await admin.send(new PutObjectCommand({ Bucket: 'events', Key: 'docs/red flower.txt', Body: 'hello' }));
    await admin.send(new CopyObjectCommand({ Bucket: 'events', Key: 'docs/copy.txt', CopySource: 'events/docs/red%20flower.txt' }));
    const upload = await admin.send(new CreateMultipartUploadCommand({ Bucket: 'events', Key: 'big.bin' }));
    const part = await admin.send(new UploadPartCommand({ Bucket: 'events', Key: 'big.bin', UploadId: upload.UploadId, PartNumber: 1, Body: 'part one' }));
    const done = await admin.send(new CompleteMultipartUploadCommand({ Bucket: 'events', Key: 'big.bin', UploadId: upload.UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] } }));
    await admin.send(new DeleteObjectCommand({ Bucket: 'events', Key: 'docs/copy.txt' }));
    // A refusal: alice names a version that is not current.
    const refused = await failure(alice.send(new PutObjectCommand({ Bucket: 'events', Key: 'docs/red flower.txt', Body: 'mine', IfMatch: `"${sha('other')}"` })));
    expect(refused.status).toBe(412);

    const records = await stream.until((r) => r.length >= 5);
    expect(records.map((r) => [r.eventName, r.s3.bucket.name, r.s3.object.key])).toEqual([
      ['s3:ObjectCreated:Put', 'events', 'docs/red+flower.txt'],
      ['s3:ObjectCreated:Copy', 'events', 'docs/copy.txt'],
      ['s3:ObjectCreated:CompleteMultipartUpload', 'events', 'big.bin'],
      ['s3:ObjectRemoved:Delete', 'events', 'docs/copy.txt'],
      ['casket:WriteRefused', 'events', 'docs/red+flower.txt'],
    ]);
    const [created, copied, completed, deleted, refusal] = records;
    expect(created!.eventSource).toBe('aws:s3');
    expect(`"${created!.s3.object.eTag}"`).toBe(put.ETag);
    expect(created!.s3.object.size).toBe(5);
    expect(created!.casket).toMatchObject({ operation: 'PutObject', accessKey: casket.admin.accessKeyId });
    expect(copied!.s3.object.eTag).toBe(sha('hello'));
    expect(`"${completed!.s3.object.eTag}"`).toBe(done.ETag);
    expect(deleted!.casket.previousETag).toBe(sha('hello'));
    expect(refusal!.eventSource).toBe('casket');
    expect(refusal!.casket).toMatchObject({ operation: 'PutObject', agent: 'alice', accessKey: casket.agents.alice!.accessKeyId, reason: 'precondition-failed', status: 412, code: 'PreconditionFailed', currentETag: sha('hello') });
    // Ids and sequencers both grow, in the order of the log.
    const ids = records.map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
    const seq = records.map((r) => r.s3.object.sequencer);
    expect([...seq].sort()).toEqual(seq);
    // Nothing was written by the refusal: no ObjectCreated for alice's body.
    expect(records.filter((r) => r.eventName.startsWith('s3:') && r.casket.agent === 'alice')).toEqual([]);
  });

  it('marks a three-way merge and an exact retry', async () => {
    const stream = await listen('/_casket/events?prefix=merge/');
    const base = Array.from({ length: 30 }, (_, i) => `line ${i}`).join('\n') + '\n';
    const first = await alice.send(new PutObjectCommand({ Bucket: 'events', Key: 'merge/notes.md', Body: base, IfNoneMatch: '*' }));
    const read = await bob.send(new GetObjectCommand({ Bucket: 'events', Key: 'merge/notes.md' }));
    await bytes(read.Body);
    const ours = await alice.send(new PutObjectCommand({ Bucket: 'events', Key: 'merge/notes.md', Body: base.replace('line 1\n', 'line 1 (alice)\n'), IfMatch: first.ETag }));
    // bob edits the base far from alice's change and asks for a merge.
    bob.middlewareStack.add((next) => async (args) => {
      (args.request as { headers: Record<string, string> }).headers['x-casket-merge'] = 'text';
      return next(args);
    }, { step: 'build', name: 'merge' });
    const merged = await bob.send(new PutObjectCommand({ Bucket: 'events', Key: 'merge/notes.md', Body: base.replace('line 28\n', 'line 28 (bob)\n'), IfMatch: first.ETag }));
    bob.middlewareStack.remove('merge');
    // An exact retry: the same call (same invocation id) sent again after it landed.
    const retryBody = 'retry me';
    const send = () => raw(casket.url, casket.agents.alice!, { method: 'PUT', path: '/events/merge/retry.txt', headers: { 'if-none-match': '*', 'amz-sdk-invocation-id': 'a0b1c2d3-0000-4000-8000-000000000001' }, body: retryBody });
    expect((await send()).status).toBe(200);
    expect((await send()).status).toBe(200);

    const records = await stream.until((r) => r.length >= 5);
    expect(records.map((r) => [r.eventName, r.s3.object.key, r.casket.agent])).toEqual([
      ['s3:ObjectCreated:Put', 'merge/notes.md', 'alice'],
      ['s3:ObjectCreated:Put', 'merge/notes.md', 'alice'],
      ['s3:ObjectCreated:Put', 'merge/notes.md', 'bob'],
      ['s3:ObjectCreated:Put', 'merge/retry.txt', 'alice'],
      ['casket:ExactRetry', 'merge/retry.txt', 'alice'],
    ]);
    expect(records[2]!.casket.merged).toBe(true);
    expect(`"${records[2]!.s3.object.eTag}"`).toBe(merged.ETag);
    expect(`"${records[2]!.casket.previousETag}"`).toBe(ours.ETag);
    expect(records[1]!.casket.merged).toBeUndefined();
    expect(records[4]!.s3.object.eTag).toBe(sha(retryBody));
  });

  it('resumes after Last-Event-ID (header or ?lastEventId=) and filters by bucket, prefix and event name', async () => {
    const all = await listen();
    for (const [bucket, key] of [['events', 'a/1'], ['other', 'a/2'], ['events', 'b/3'], ['events', 'a/4']] as const) {
      await admin.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: key }));
    }
    await admin.send(new DeleteObjectCommand({ Bucket: 'events', Key: 'a/1' }));
    const seen = await all.until((r) => r.length >= 5);
    const second = seen[1]!.id;

    const resumed = await listen('/_casket/events', { 'last-event-id': second });
    const byQuery = await listen(`/_casket/events?lastEventId=${encodeURIComponent(second)}`);
    for (const s of [resumed, byQuery]) {
      const got = await s.until((r) => r.length >= 3);
      expect(got.map((r) => r.id)).toEqual(seen.slice(2).map((r) => r.id));
    }
    const from = encodeURIComponent(seen[0]!.id);
    const bucketOnly = await listen(`/_casket/events?lastEventId=${from}&bucket=other`);
    const prefixOnly = await listen(`/_casket/events?lastEventId=${from}&prefix=a/`);
    const removedOnly = await listen(`/_casket/events?lastEventId=${from}&event=s3:ObjectRemoved:`);
    // A marker after the last record: once a filtered stream shows it, it has skipped all it should.
    await admin.send(new PutObjectCommand({ Bucket: 'other', Key: 'a/marker', Body: 'm' }));
    await admin.send(new DeleteObjectCommand({ Bucket: 'other', Key: 'a/marker' }));
    const last = (s: Subscription) => s.until((r) => r.some((x) => x.s3.object.key === 'a/marker' && x.eventName.startsWith('s3:ObjectRemoved:')));
    expect((await last(bucketOnly)).map((r) => r.s3.object.key)).toEqual(['a/2', 'a/marker', 'a/marker']);
    expect((await last(prefixOnly)).map((r) => r.s3.object.key)).toEqual(['a/2', 'a/4', 'a/1', 'a/marker', 'a/marker']);
    expect((await last(removedOnly)).map((r) => [r.eventName, r.s3.object.key])).toEqual([
      ['s3:ObjectRemoved:Delete', 'a/1'],
      ['s3:ObjectRemoved:Delete', 'a/marker'],
    ]);
    // An id this stream never gave: a clear 400, not a silent start from nowhere.
    const bad = await listen('/_casket/events?lastEventId=nonsense');
    expect(bad.status).toBe(400);
  });

  it('names the version a write made in a versioned bucket, and a delete marker as DeleteMarkerCreated', async () => {
    await admin.send(new CreateBucketCommand({ Bucket: 'versioned' }));
    await admin.send(new PutBucketVersioningCommand({ Bucket: 'versioned', VersioningConfiguration: { Status: 'Enabled' } }));
    const stream = await listen('/_casket/events?bucket=versioned');
    const put = await admin.send(new PutObjectCommand({ Bucket: 'versioned', Key: 'v.txt', Body: 'one' }));
    const del = await admin.send(new DeleteObjectCommand({ Bucket: 'versioned', Key: 'v.txt' }));
    expect(put.VersionId).toBeTruthy();
    expect(del.DeleteMarker).toBe(true);
    const records = await stream.until((r) => r.length >= 2);
    expect(records.map((r) => [r.eventName, r.s3.object.versionId])).toEqual([
      ['s3:ObjectCreated:Put', put.VersionId],
      ['s3:ObjectRemoved:DeleteMarkerCreated', del.VersionId],
    ]);
  });

  it('refuses non-admin and unsigned subscribers', async () => {
    const reader = await subscribe(casket.url, casket.keys.reader!);
    const agent = await subscribe(casket.url, casket.agents.alice!);
    const anonymous = await subscribe(casket.url, undefined);
    const forged = await subscribe(casket.url, { accessKeyId: casket.admin.accessKeyId, secretAccessKey: 'not-the-secret' });
    for (const s of [reader, agent, anonymous, forged]) {
      await s.ended;
      expect(s.status).toBe(403);
      expect(s.messages).toEqual([]);
    }
    expect(JSON.parse(reader.body).error).toBe('AccessDenied');
  });

});
