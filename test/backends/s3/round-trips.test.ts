/**
 * The `s3` backend's round trips to the upstream, counted against a real one
 * (moto by default, Ceph RGW with CASKET_TEST_UPSTREAM=rgw; upstream-suite.ts):
 * GetObject is one GET; a PutObject whose SHA-256 and length are declared
 * streams straight through (no spool) yet commits nothing when the body fails
 * a check; a conditional PutObject naming the version last seen goes upstream
 * without a HEAD first, and a stale hint still ends in the right 412; a
 * CompleteMultipartUpload retried after a lost response succeeds.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createPayload } from '../../../src/auth/payload.js';
import type { S3Backend, S3BackendOptions } from '../../../src/backends/s3/index.js';
import { ConditionFailed, type Payload, type PutObjectOptions } from '../../../src/backends/types.js';
import { bytes, dyingSource, upstreamSuite } from './upstream-suite.js';

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

/** A payload as a client sends it; `declared` signs a literal x-amz-content-sha256 (anonymous: still checked). */
function payload(data: Buffer | string, declared?: string): Payload {
  const bytes = Buffer.from(data);
  const headers: Record<string, string> = { 'content-length': String(bytes.length) };
  if (declared !== undefined) headers['x-amz-content-sha256'] = declared;
  // Several chunks, so the stream really streams.
  const chunks: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += 64 * 1024) chunks.push(bytes.subarray(i, i + 64 * 1024));
  return createPayload(Readable.from(chunks), { auth: null, headers, md5: false });
}

/** PutObjectOptions of a body whose SHA-256 and length were declared up front. */
function declared(body: Buffer, options: Partial<PutObjectOptions> = {}): PutObjectOptions {
  return { condition: { type: 'none' }, headers: {}, metadata: {}, declaredSha256: sha(body), contentLength: body.length, ...options };
}



const suite = upstreamSuite();

/** A backend whose upstream requests are counted by method. */
function counted(options: Partial<S3BackendOptions> = {}): { b: S3Backend; calls: string[] } {
  const calls: string[] = [];
  const b = suite.backend({
    // Configured (what the probe finds there, backend.test.ts), so no probe requests are counted.
    capabilities: suite.measured,
    observe: (method) => calls.push(method),
    ...options,
  });
  return { b, calls };
}


describe('GetObject', () => {
  it('is one upstream GET, for a small object (served inline) and a large one (its body handed over)', async () => {
    const { b, calls } = counted();
    await b.createBucket('get-one');
    const small = Buffer.from('small body');
    const large = randomBytes(1024 * 1024 + 3);
    await b.putObject('get-one', 'small', payload(small), { condition: { type: 'none' }, headers: { contentType: 'text/plain' }, metadata: { a: '1' } });
    await b.putObject('get-one', 'large', payload(large), { condition: { type: 'none' }, headers: {}, metadata: {} });
    calls.length = 0;

    const s = await b.getObject('get-one', 'small');
    expect(s?.info).toMatchObject({ etag: sha(small), size: small.length, headers: { contentType: 'text/plain' }, metadata: { a: '1' } });
    expect(s?.inline?.()).toEqual(small);
    expect(s?.inline?.({ start: 6, end: 9 }).toString()).toBe('body');
    expect((await bytes(s!.open())).equals(small)).toBe(true);

    const l = await b.getObject('get-one', 'large');
    expect(l?.info).toMatchObject({ etag: sha(large), size: large.length });
    expect(l?.inline).toBeUndefined();
    expect((await bytes(l!.open())).equals(large)).toBe(true);
    expect(calls).toEqual(['GET', 'GET']);

    // A range is a second, ranged GET; so is a second open().
    const r = await b.getObject('get-one', 'large');
    expect((await bytes(r!.open({ start: 10, end: 19 }))).equals(large.subarray(10, 20))).toBe(true);
    expect((await bytes(r!.open())).equals(large)).toBe(true);
    // A range that covers the whole object is the body at hand.
    calls.length = 0;
    const w = await b.getObject('get-one', 'large');
    expect((await bytes(w!.open({ start: 0, end: large.length - 1 }))).equals(large)).toBe(true);
    expect(calls).toEqual(['GET']);

    expect(await b.getObject('get-one', 'missing')).toBeNull();
    await expect(b.getObject('no-such-bucket-here', 'k')).rejects.toMatchObject({ code: 'NoSuchBucket' });
  });

  it('a version replaced after getObject is not served for it: a ranged read of the old version fails', async () => {
    const { b } = counted();
    await b.createBucket('get-changed');
    await b.putObject('get-changed', 'k', payload(randomBytes(200_000)), { condition: { type: 'none' }, headers: {}, metadata: {} });
    const reader = await b.getObject('get-changed', 'k');
    await suite.direct.send(new PutObjectCommand({ Bucket: 'get-changed', Key: 'k', Body: randomBytes(200_000) }));
    await expect(bytes(reader!.open({ start: 0, end: 9 }))).rejects.toMatchObject({ code: 'SlowDown' });
  });
});

describe('PutObject with a declared SHA-256', () => {
  it('streams through: one PUT, nothing spooled, the content and ETag right', async () => {
    const { b, calls } = counted();
    await b.createBucket('put-stream');
    const body = randomBytes(3 * 1024 * 1024 + 5);
    calls.length = 0;
    const info = await b.putObject('put-stream', 'k', payload(body, sha(body)), declared(body, { writer: 'agent-a' }));
    expect(info).toMatchObject({ etag: sha(body), size: body.length, writer: 'agent-a' });
    expect(calls).toEqual(['PUT']);
    expect(b.spooledFiles).toBe(0);
    const reader = await b.getObject('put-stream', 'k');
    expect(reader?.info).toMatchObject({ etag: sha(body), writer: 'agent-a' });
    expect((await bytes(reader!.open())).equals(body)).toBe(true);
  });

  it('a body that does not match its declared SHA-256, or ends early, commits nothing', async () => {
    const { b } = counted();
    await b.createBucket('put-stream-bad');
    const body = randomBytes(1024 * 1024);
    const other = randomBytes(1024 * 1024);
    // The client declared (and signed) one hash and sent other bytes.
    await expect(b.putObject('put-stream-bad', 'k', payload(other, sha(body)), declared(body))).rejects.toMatchObject({ code: 'XAmzContentSHA256Mismatch' });
    expect(await b.headObject('put-stream-bad', 'k')).toBeNull();
    // A client that goes away half-way.
    const broken = createPayload(dyingSource(body.subarray(0, body.length / 2)), { auth: null, headers: { 'content-length': String(body.length), 'x-amz-content-sha256': sha(body) } });
    await expect(b.putObject('put-stream-bad', 'k', broken, declared(body))).rejects.toMatchObject({ code: 'IncompleteBody' });
    expect(await b.headObject('put-stream-bad', 'k')).toBeNull();
    // The backend still works (no socket left with half a body on it).
    await b.putObject('put-stream-bad', 'k', payload(body, sha(body)), declared(body));
    expect((await b.headObject('put-stream-bad', 'k'))?.etag).toBe(sha(body));
  });

  it('small bodies are received in memory, not spooled to a file', async () => {
    const { b } = counted();
    await b.createBucket('put-small');
    const info = await b.putObject('put-small', 'k', payload('tiny'), { condition: { type: 'none' }, headers: {}, metadata: {} });
    expect(info.etag).toBe(sha('tiny'));
    expect(b.spooledFiles).toBe(0);
  });
});

describe('conditional PutObject', () => {
  it('naming the version last seen: straight to the upstream If-Match, no HEAD', async () => {
    const { b, calls } = counted();
    await b.createBucket('cond');
    const v0 = await b.putObject('cond', 'k', payload('v0'), { condition: { type: 'none' }, headers: {}, metadata: {} });
    calls.length = 0;
    const v1 = await b.putObject('cond', 'k', payload('v1'), { condition: { type: 'if-match', etags: [v0.etag] }, headers: {}, metadata: {} });
    expect(calls).toEqual(['PUT']);
    // After a HEAD (what the guard does first), the same.
    await b.headObject('cond', 'k');
    calls.length = 0;
    const big = randomBytes(200_000);
    await b.putObject('cond', 'k', payload(big, sha(big)), declared(big, { condition: { type: 'if-match', etags: [v1.etag] } }));
    expect(calls).toEqual(['PUT']);
    expect((await b.headObject('cond', 'k'))?.etag).toBe(sha(big));
  });

  it('a stale hint (the key changed around this process) ends in the 412 it should, with the current version', async () => {
    const { b, calls } = counted();
    await b.createBucket('cond-stale');
    const v0 = await b.putObject('cond-stale', 'k', payload('v0'), { condition: { type: 'none' }, headers: {}, metadata: {} });
    await suite.direct.send(new PutObjectCommand({ Bucket: 'cond-stale', Key: 'k', Body: 'changed directly' }));
    calls.length = 0;
    const refused = await b.putObject('cond-stale', 'k', payload('mine'), { condition: { type: 'if-match', etags: [v0.etag] }, headers: {}, metadata: {} }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConditionFailed);
    expect((refused as ConditionFailed).current?.etag).toBe(sha('changed directly'));
    // Refused upstream, then a HEAD (and one GET: the version written around casket has its SHA-256 computed).
    expect(calls).toEqual(['PUT', 'HEAD', 'GET']);
    // Streamed too: refused upstream, nothing written.
    const big = randomBytes(200_000);
    await b.putObject('cond-stale', 'k', payload('v2'), { condition: { type: 'none' }, headers: {}, metadata: {} });
    await suite.direct.send(new PutObjectCommand({ Bucket: 'cond-stale', Key: 'k', Body: 'changed again' }));
    const refusedStreamed = await b.putObject('cond-stale', 'k', payload(big, sha(big)), declared(big, { condition: { type: 'if-match', etags: [sha('v2')] } })).catch((e: unknown) => e);
    expect(refusedStreamed).toBeInstanceOf(ConditionFailed);
    expect((await b.headObject('cond-stale', 'k'))?.etag).toBe(sha('changed again'));
    // The condition naming the version now current succeeds.
    await b.putObject('cond-stale', 'k', payload('v3'), { condition: { type: 'if-match', etags: [sha('changed again')] }, headers: {}, metadata: {} });
    expect((await b.headObject('cond-stale', 'k'))?.etag).toBe(sha('v3'));
  });

  it('16 concurrent streamed If-Match writes on the version last seen: exactly one wins', async () => {
    const { b } = counted();
    await b.createBucket('cond-race');
    const v0 = await b.putObject('cond-race', 'k', payload('v0'), { condition: { type: 'none' }, headers: {}, metadata: {} });
    const bodies = Array.from({ length: 16 }, () => randomBytes(100_000));
    const results = await Promise.allSettled(bodies.map((body) => b.putObject('cond-race', 'k', payload(body, sha(body)), declared(body, { condition: { type: 'if-match', etags: [v0.etag] } }))));
    const won = results.flatMap((r, i) => (r.status === 'fulfilled' ? [{ etag: r.value.etag, body: bodies[i]! }] : []));
    expect(won).toHaveLength(1);
    const winner = won[0]!;
    expect(winner.etag).toBe(sha(winner.body));
    // Every loser: a failed condition (casket's 412) naming the winner as current and its own bytes as attempted.
    for (const [i, r] of results.entries()) {
      if (r.status === 'fulfilled') continue;
      expect(r.reason, `writer ${i}`).toBeInstanceOf(ConditionFailed);
      expect((r.reason as ConditionFailed).current?.etag, `writer ${i}: the current version it names`).toBe(winner.etag);
      expect((r.reason as ConditionFailed).attemptedETag, `writer ${i}: the version it attempted`).toBe(sha(bodies[i]!));
    }
    // The stored bytes are the winner's.
    expect((await b.headObject('cond-race', 'k'))?.etag).toBe(winner.etag);
    expect(sha(await bytes((await b.getObject('cond-race', 'k'))!.open()))).toBe(winner.etag);
  });
});

describe('CompleteMultipartUpload', () => {
  it('retried after a lost response succeeds while its object is current; NoSuchUpload otherwise', async () => {
    const { b } = counted();
    await b.createBucket('complete-retry');
    const u = await b.createMultipartUpload('complete-retry', 'k', {}, {});
    const p = await b.uploadPart('complete-retry', 'k', u.uploadId, 1, createPayload(Readable.from([Buffer.from('only part')]), { auth: null, headers: { 'content-length': '9' }, md5: true }));
    const parts = [{ partNumber: 1, etag: p.etag }];
    const first = await b.completeMultipartUpload('complete-retry', 'k', u.uploadId, parts, { condition: { type: 'none' } });
    const again = await b.completeMultipartUpload('complete-retry', 'k', u.uploadId, parts, { condition: { type: 'none' } });
    expect(again.etag).toBe(first.etag);
    // Another key, or the object replaced since: NoSuchUpload.
    await expect(b.completeMultipartUpload('complete-retry', 'other', u.uploadId, parts, { condition: { type: 'none' } })).rejects.toMatchObject({ code: 'NoSuchUpload' });
    await b.putObject('complete-retry', 'k', payload('replaced'), { condition: { type: 'none' }, headers: {}, metadata: {} });
    await expect(b.completeMultipartUpload('complete-retry', 'k', u.uploadId, parts, { condition: { type: 'none' } })).rejects.toMatchObject({ code: 'NoSuchUpload' });
  });
});

describe('readers nobody opens', () => {
  it('release() frees the held upstream connection at once: a 304 does not hold it for the lease', async () => {
    // Two sockets: without release(), two unopened readers would hold both for 30 s.
    const { b } = counted({ maxSockets: 2 });
    await b.createBucket('release');
    const body = randomBytes(256 * 1024);
    await b.putObject('release', 'big', payload(body), { condition: { type: 'none' }, headers: {}, metadata: {} });
    const started = Date.now();
    for (let i = 0; i < 6; i++) {
      const reader = await b.getObject('release', 'big');
      expect(reader?.info.etag).toBe(sha(body));
      reader!.release!();
    }
    const last = await b.getObject('release', 'big');
    expect(sha(await bytes(last!.open()))).toBe(sha(body));
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
