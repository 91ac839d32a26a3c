/**
 * The `s3` backend in-process against a real upstream (moto by default, Ceph
 * RGW with CASKET_TEST_UPSTREAM=rgw; upstream-suite.ts): the capability
 * probe, ETags of objects written around casket (read, listed, conditionally
 * overwritten, never stale), refusals where atomicity is impossible
 * (replicas), upstream timeouts, and bodies that fail before their end
 * leaving nothing upstream or in the spool.
 */
import { CompleteMultipartUploadCommand, CreateMultipartUploadCommand, PutObjectCommand, UploadPartCommand } from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:net';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createPayload } from '../../../src/auth/payload.js';
import { forwardUpstream, probeCapabilities, type S3BackendOptions } from '../../../src/backends/s3/index.js';
import { UpstreamClient } from '../../../src/backends/s3/client.js';
import { ConditionFailed, type CommitCondition, type Payload } from '../../../src/backends/types.js';
import { S3Error } from '../../../src/vocabulary/errors.js';
import { bytes, dyingSource, upstreamSuite } from './upstream-suite.js';

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const md5 = (b: Buffer | string) => createHash('md5').update(b).digest('hex');

function payload(data: Buffer | string, md5 = false): Payload {
  const bytes = Buffer.from(data);
  return createPayload(Readable.from([bytes]), { auth: null, headers: { 'content-length': String(bytes.length) }, md5 });
}

/** A payload whose source dies half-way, as a client disconnecting mid-upload: once the first half was taken, asked for more. */
function brokenPayload(size: number): Payload {
  return createPayload(dyingSource(randomBytes(size / 2)), { auth: null, headers: { 'content-length': String(size) }, md5: true });
}



const suite = upstreamSuite();
const backend = (options: Partial<S3BackendOptions> = {}) => suite.backend(options);

describe('capability probe', () => {
  // moto 5: If-Match (quoted) and If-None-Match on PUT, If-Match on DELETE, If-None-Match but not If-Match on Complete.
  // Ceph RGW 16: If-Match on PUT unquoted only, If-None-Match on PUT; nothing on DELETE or Complete.
  it('finds exactly what the upstream is measured to enforce (moto 5, Ceph RGW 16)', async () => {
    const { upstream } = suite;
    const client = new UpstreamClient({ url: upstream.url, accessKey: upstream.accessKey, secretKey: upstream.secretKey, region: upstream.region });
    const result = await probeCapabilities(client);
    client.close();
    expect(result.capabilities).toEqual(suite.measured);
    expect(result.note).toMatch(/scratch bucket casket-probe-/);
    // The scratch bucket is gone.
    const b = backend();
    expect((await b.listBuckets()).map((x) => x.name).filter((n) => n.startsWith('casket-probe-'))).toEqual([]);
  });
});

describe('objects written around casket', () => {
  it('are read, listed and conditionally overwritten with their SHA-256 ETag, never a stale one', async () => {
    const b = backend();
    await b.createBucket('around');
    await suite.direct.send(new PutObjectCommand({ Bucket: 'around', Key: 'doc', Body: 'written directly', Metadata: { who: 'someone' } }));
    const head = await b.headObject('around', 'doc');
    expect(head?.etag).toBe(sha('written directly'));
    expect(head?.metadata).toEqual({ who: 'someone' });
    const reader = await b.getObject('around', 'doc');
    expect(reader?.info.etag).toBe(sha('written directly'));
    expect((await bytes(reader!.open())).toString()).toBe('written directly');
    const list = await b.listObjects('around', { prefix: '', maxKeys: 1000 });
    expect(list.objects.map((o) => [o.key, o.etag])).toEqual([['doc', sha('written directly')]]);

    // Changed directly again: the new ETag shows everywhere, not the indexed one.
    await suite.direct.send(new PutObjectCommand({ Bucket: 'around', Key: 'doc', Body: 'changed directly' }));
    expect((await b.headObject('around', 'doc'))?.etag).toBe(sha('changed directly'));
    expect((await b.listObjects('around', { prefix: '', maxKeys: 1000 })).objects[0]?.etag).toBe(sha('changed directly'));

    // A write conditioned on the first version loses, with the current one.
    const stale = await b.putObject('around', 'doc', payload('mine'), { condition: { type: 'if-match', etags: [sha('written directly')] }, headers: {}, metadata: {} }).catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(ConditionFailed);
    expect((stale as ConditionFailed).current?.etag).toBe(sha('changed directly'));
    const ok = await b.putObject('around', 'doc', payload('mine'), { condition: { type: 'if-match', etags: [sha('changed directly')] }, headers: {}, metadata: { 'casket-sha256': 'forged' }, writer: 'agent-a' });
    expect(ok.etag).toBe(sha('mine'));
    const after = await b.headObject('around', 'doc');
    expect(after).toMatchObject({ etag: sha('mine'), writer: 'agent-a', metadata: {} });
  });

  it('gets a SHA-256 ETag for a multipart object uploaded directly (whole-content: moto 5 and RGW 16 ignore ?partNumber=)', async () => {
    const b = backend();
    await b.createBucket('around-mp');
    const part1 = randomBytes(5 * 1024 * 1024);
    const part2 = Buffer.from('tail');
    const { UploadId } = await suite.direct.send(new CreateMultipartUploadCommand({ Bucket: 'around-mp', Key: 'big' }));
    const p1 = await suite.direct.send(new UploadPartCommand({ Bucket: 'around-mp', Key: 'big', UploadId, PartNumber: 1, Body: part1 }));
    const p2 = await suite.direct.send(new UploadPartCommand({ Bucket: 'around-mp', Key: 'big', UploadId, PartNumber: 2, Body: part2 }));
    await suite.direct.send(new CompleteMultipartUploadCommand({ Bucket: 'around-mp', Key: 'big', UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: p1.ETag }, { PartNumber: 2, ETag: p2.ETag }] } }));
    // moto 5 and Ceph RGW 16 ignore GET ?partNumber= (measured: they answer
    // with the whole object), so
    // the part boundaries are unknowable: the ETag is the SHA-256 of the whole
    // content. (On an upstream that honours partNumber it is the composite.)
    const expected = sha(Buffer.concat([part1, part2]));
    const list = await b.listObjects('around-mp', { prefix: '', maxKeys: 10 });
    expect(list.objects[0]?.etag).toBe(expected);
    const head = await b.headObject('around-mp', 'big');
    expect(head).toMatchObject({ etag: expected, size: part1.length + 4 });
  });
});

describe('multipart through casket', () => {
  it('part ETags are MD5s, the object ETag the SHA-256 composite, indexed for listing', async () => {
    const b = backend();
    await b.createBucket('mpu');
    const upload = await b.createMultipartUpload('mpu', 'k', { contentType: 'text/x-parts' }, { a: '1' });
    const one = randomBytes(5 * 1024 * 1024);
    const p1 = await b.uploadPart('mpu', 'k', upload.uploadId, 1, payload(one, true));
    const p2 = await b.uploadPart('mpu', 'k', upload.uploadId, 2, payload('two', true));
    expect([p1.etag, p2.etag]).toEqual([md5(one), md5('two')]);
    const listed = await b.listParts('mpu', 'k', upload.uploadId, { partNumberMarker: 0, maxParts: 100 });
    expect(listed.parts.map((p) => [p.partNumber, p.etag, p.size])).toEqual([[1, md5(one), one.length], [2, md5('two'), 3]]);
    const info = await b.completeMultipartUpload('mpu', 'k', upload.uploadId, [{ partNumber: 1, etag: p1.etag }, { partNumber: 2, etag: `"${p2.etag}"` }], { condition: { type: 'if-none-match' } });
    const expected = `${createHash('sha256').update(Buffer.concat([createHash('sha256').update(one).digest(), createHash('sha256').update('two').digest()])).digest('hex')}-2`;
    expect(info.etag).toBe(expected);
    expect(info).toMatchObject({ headers: { contentType: 'text/x-parts' }, metadata: { a: '1' }, partSizes: [one.length, 3] });
    expect((await b.listObjects('mpu', { prefix: '', maxKeys: 10 })).objects[0]?.etag).toBe(expected);
    const reader = await b.getObject('mpu', 'k');
    expect((await bytes(reader!.open({ start: one.length, end: one.length + 2 }))).toString()).toBe('two');
  });

  it('a wrong part ETag is InvalidPart', async () => {
    const b = backend();
    await b.createBucket('mpu-bad');
    const upload = await b.createMultipartUpload('mpu-bad', 'k', {}, {});
    await b.uploadPart('mpu-bad', 'k', upload.uploadId, 1, payload('x', true));
    await expect(b.completeMultipartUpload('mpu-bad', 'k', upload.uploadId, [{ partNumber: 1, etag: md5('y') }], { condition: { type: 'none' } })).rejects.toMatchObject({ code: 'InvalidPart' });
  });
});

describe('atomicity', () => {
  it.each([
    { label: 'If-Match, distinct bytes', bucket: 'race', createOnly: false, body: (i: number) => `w${i}` },
    // The counter case: 16 agents read "10", all write "11".
    { label: 'If-Match, identical bytes', bucket: 'race-same', createOnly: false, body: () => '11' },
    // 16 agents create the same file with the same content: one creates it, the others are told it exists.
    { label: 'If-None-Match: *, identical bytes', bucket: 'race-create', createOnly: true, body: () => 'the same body' },
  ])('16 concurrent conditional PutObject on one backend: exactly one wins, every loser refused naming it ($label)', async ({ bucket, createOnly, body }) => {
    const b = backend();
    await b.createBucket(bucket);
    let condition: CommitCondition = { type: 'if-none-match' };
    if (!createOnly) {
      const v0 = await b.putObject(bucket, 'k', payload('v0'), { condition: { type: 'none' }, headers: {}, metadata: {} });
      condition = { type: 'if-match', etags: [v0.etag] };
    }
    const bodies = Array.from({ length: 16 }, (_, i) => body(i));
    const results = await Promise.allSettled(bodies.map((data) => b.putObject(bucket, 'k', payload(data), { condition, headers: {}, metadata: {} })));
    const won = results.flatMap((r, i) => (r.status === 'fulfilled' ? [{ info: r.value, body: bodies[i]! }] : []));
    expect(won).toHaveLength(1);
    const winner = won[0]!;
    expect(winner.info.etag).toBe(sha(winner.body));
    // Every loser: a failed condition (casket's 412 PreconditionFailed) naming
    // the winner as current and its own bytes as attempted — what tells a
    // client "someone else wrote" from "your bytes are already there".
    for (const [i, r] of results.entries()) {
      if (r.status === 'fulfilled') continue;
      expect(r.reason, `writer ${i}`).toBeInstanceOf(ConditionFailed);
      const refusal = r.reason as ConditionFailed;
      expect(refusal.current?.etag, `writer ${i}: the current version it names`).toBe(winner.info.etag);
      expect(refusal.attemptedETag, `writer ${i}: the version it attempted`).toBe(sha(bodies[i]!));
    }
    // The stored bytes are the winner's.
    expect((await b.headObject(bucket, 'k'))?.etag).toBe(winner.info.etag);
    const reader = await b.getObject(bucket, 'k');
    expect((await bytes(reader!.open())).toString()).toBe(winner.body);
  });

  it('16 concurrent conditional CompleteMultipartUpload (moto ignores If-Match there): serialized, exactly one wins', async () => {
    const b = backend();
    await b.createBucket('race-mpu');
    const v0 = await b.putObject('race-mpu', 'k', payload('v0'), { condition: { type: 'none' }, headers: {}, metadata: {} });
    const uploads = await Promise.all(
      Array.from({ length: 16 }, async (_, i) => {
        const u = await b.createMultipartUpload('race-mpu', 'k', {}, {});
        const p = await b.uploadPart('race-mpu', 'k', u.uploadId, 1, payload(`part ${i}`, true));
        return { id: u.uploadId, etag: p.etag };
      }),
    );
    const results = await Promise.allSettled(uploads.map((u) => b.completeMultipartUpload('race-mpu', 'k', u.id, [{ partNumber: 1, etag: u.etag }], { condition: { type: 'if-match', etags: [v0.etag] } })));
    const won = results.flatMap((r, i) => (r.status === 'fulfilled' ? [{ info: r.value, index: i }] : []));
    expect(won).toHaveLength(1);
    const winner = won[0]!;
    // The composite ETag of the winner's one part: what it completed is what it got.
    expect(winner.info.etag).toBe(`${sha(createHash('sha256').update(`part ${winner.index}`).digest())}-1`);
    // Every loser: a failed condition naming the winner as the current version.
    for (const [i, r] of results.entries()) {
      if (r.status === 'fulfilled') continue;
      expect(r.reason, `upload ${i}`).toBeInstanceOf(ConditionFailed);
      expect((r.reason as ConditionFailed).current?.etag, `upload ${i}: the current version it names`).toBe(winner.info.etag);
    }
    // The object is the winner's: its version, and its bytes.
    expect(await b.headObject('race-mpu', 'k')).toEqual(winner.info);
    const reader = await b.getObject('race-mpu', 'k');
    expect((await bytes(reader!.open())).toString()).toBe(`part ${winner.index}`);
  });

  it('with replicas, a condition the upstream does not enforce is refused with 501, never checked-then-written', async () => {
    const b = backend({ replicas: true });
    await b.createBucket('replicas');
    const v0 = await b.putObject('replicas', 'k', payload('v0'), { condition: { type: 'none' }, headers: {}, metadata: {} });
    // Enforced by moto and RGW: allowed.
    const v1 = await b.putObject('replicas', 'k', payload('v1'), { condition: { type: 'if-match', etags: [v0.etag] }, headers: {}, metadata: {} });
    const u = await b.createMultipartUpload('replicas', 'k', {}, {});
    const p = await b.uploadPart('replicas', 'k', u.uploadId, 1, payload('p', true));
    const refused = await b.completeMultipartUpload('replicas', 'k', u.uploadId, [{ partNumber: 1, etag: p.etag }], { condition: { type: 'if-match', etags: [v1.etag] } }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(S3Error);
    expect(refused).toMatchObject({ code: 'NotImplemented', status: 501 });
    expect((refused as Error).message).toMatch(/does not enforce If-Match on CompleteMultipartUpload/);
    expect((await b.headObject('replicas', 'k'))?.etag).toBe(v1.etag);
    // If-None-Match on Complete: enforced by moto, so allowed even with
    // replicas (and refused there, the key exists); ignored by RGW, so 501.
    const createOnly = b.completeMultipartUpload('replicas', 'k', u.uploadId, [{ partNumber: 1, etag: p.etag }], { condition: { type: 'if-none-match' } });
    if (suite.measured.ifNoneMatchComplete) await expect(createOnly).rejects.toBeInstanceOf(ConditionFailed);
    else await expect(createOnly).rejects.toMatchObject({ code: 'NotImplemented', status: 501, message: expect.stringMatching(/does not enforce If-None-Match on CompleteMultipartUpload/) });
    expect((await b.headObject('replicas', 'k'))?.etag).toBe(v1.etag);
  });
});

describe('forwarding (not wired yet, see forward.ts)', () => {
  it('sends an unmodeled operation upstream re-signed and streams the answer back (object tagging)', async () => {
    const b = backend();
    await b.createBucket('forward');
    await b.putObject('forward', 'k', payload('x'), { condition: { type: 'none' }, headers: {}, metadata: {} });
    const tagging = Buffer.from('<Tagging><TagSet><Tag><Key>team</Key><Value>agents</Value></Tag></TagSet></Tagging>');
    const put = await forwardUpstream(b.client, { method: 'PUT', bucket: 'forward', key: 'k', query: { tagging: '' }, headers: { 'content-type': 'application/xml', expect: '100-continue', connection: 'close' }, body: tagging });
    await bytes(put.body);
    expect(put.status).toBe(200);
    const get = await forwardUpstream(b.client, { method: 'GET', bucket: 'forward', key: 'k', query: { tagging: '' }, headers: {} });
    expect(get.status).toBe(200);
    expect((await bytes(get.body)).toString()).toMatch(/<Key>team<\/Key>\s*<Value>agents<\/Value>/);
    expect(get.headers.connection).toBeUndefined();
  });
});

describe('failures', () => {
  it('a body that fails before its end leaves nothing upstream and nothing in the spool (PutObject and UploadPart)', async () => {
    const b = backend();
    await b.createBucket('broken');
    await expect(b.putObject('broken', 'k', brokenPayload(1 << 20), { condition: { type: 'none' }, headers: {}, metadata: {} })).rejects.toMatchObject({ code: 'IncompleteBody' });
    expect(await b.headObject('broken', 'k')).toBeNull();
    const u = await b.createMultipartUpload('broken', 'k', {}, {});
    await expect(b.uploadPart('broken', 'k', u.uploadId, 1, brokenPayload(1 << 20))).rejects.toMatchObject({ code: 'IncompleteBody' });
    expect((await b.listParts('broken', 'k', u.uploadId, { partNumberMarker: 0, maxParts: 100 })).parts).toEqual([]);
    expect(b.spooledFiles).toBe(0);
  });

  it('an upstream that is down answers 503 at once (the refused connection, not a timeout); one that stalls answers 503 after the idle timeout', async () => {
    // The defaults are 5 s to connect and 60 s idle: the causes named in the
    // messages, and a 10 s bound on the stall, tell "at once" and "after the
    // configured idle timeout" from waiting out a default.
    const down = backend({ url: 'http://127.0.0.1:1' });
    await expect(down.headObject('x-bucket', 'k')).rejects.toMatchObject({ code: 'ServiceUnavailable', status: 503, message: expect.stringContaining('ECONNREFUSED') });

    const sockets: import('node:net').Socket[] = [];
    // Accepts and reads (so it sees the connection end), never answers.
    const silent: Server = createServer((s) => sockets.push(s.resume()));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    const port = (silent.address() as { port: number }).port;
    const stalled = backend({ url: `http://127.0.0.1:${port}`, idleTimeoutMs: 500 });
    const t1 = Date.now();
    await expect(stalled.getObject('x-bucket', 'k')).rejects.toMatchObject({ code: 'ServiceUnavailable', status: 503, message: expect.stringContaining('UPSTREAM_TIMEOUT') });
    expect(Date.now() - t1).toBeLessThan(10_000);
    // casket gave up on the connection: the silent upstream sees it closed.
    await Promise.all(sockets.map((s) => (s.destroyed ? undefined : new Promise((r) => s.once('close', r)))));
    await new Promise<void>((r) => silent.close(() => r()));
  });

  it('maps upstream NoSuchBucket / BucketNotEmpty / idempotent CreateBucket', async () => {
    const b = backend();
    await expect(b.headObject('no-such-bucket', 'k')).rejects.toMatchObject({ code: 'NoSuchBucket' });
    expect(await b.createBucket('twice')).toBe('created');
    expect(['created', 'exists']).toContain(await b.createBucket('twice'));
    await b.putObject('twice', 'k', payload('x'), { condition: { type: 'none' }, headers: {}, metadata: {} });
    await expect(b.deleteBucket('twice')).rejects.toMatchObject({ code: 'BucketNotEmpty' });
  });
});
