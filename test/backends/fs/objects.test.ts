/**
 * The embedded store's object operations: buckets, put/get/head/delete with
 * metadata, ranges, snapshot reads under concurrent overwrite, refused bodies
 * leaving nothing behind, key validation. Inline (small) and file-backed
 * bodies are both exercised, by running the shared cases with the inline
 * threshold at its default and at -1 (every body a blob file).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openFsBackend, type FsBackend } from '../../../src/backends/fs/index.js';
import { S3Error } from '../../../src/vocabulary/errors.js';
import { compareKeys } from '../../../src/vocabulary/names.js';
import { blobFiles, bytes, payloadOf, PayloadCheckFailed, PUT_DEFAULTS, readAll, sameBytes, sha256Hex, tempDataDir } from './helpers.js';
import { until } from '../../helpers/poll.js';

let temp: ReturnType<typeof tempDataDir>;
let store: FsBackend;

async function expectS3Error(promise: Promise<unknown>, code: string): Promise<void> {
  await expect(promise).rejects.toSatisfy((e: unknown) => e instanceof S3Error && e.code === code);
}

describe('buckets', () => {
  beforeEach(() => {
    temp = tempDataDir();
    store = openFsBackend({ dataDir: temp.dir, fsync: false });
  });
  afterEach(async () => {
    await store.close();
    temp.cleanup();
  });

  it('creates idempotently, lists in order, heads and deletes', async () => {
    expect(await store.createBucket('zeta')).toBe('created');
    expect(await store.createBucket('alpha')).toBe('created');
    expect(await store.createBucket('alpha')).toBe('exists');
    expect((await store.listBuckets()).map((b) => b.name)).toEqual(['alpha', 'zeta']);
    expect((await store.headBucket('alpha')).creationDate).toBeInstanceOf(Date);
    await store.deleteBucket('zeta');
    await expectS3Error(store.headBucket('zeta'), 'NoSuchBucket');
    await expectS3Error(store.deleteBucket('zeta'), 'NoSuchBucket');
  });

  it.each(['ab', 'a'.repeat(64), 'Upper', '-start', 'end-', 'under_score', '192.168.1.1', 'a..b', 'a.-b', 'xn--abc', 'name-s3alias', ''])(
    'rejects the bucket name %j',
    async (name) => {
      await expectS3Error(store.createBucket(name), 'InvalidBucketName');
    },
  );

  it.each(['abc', 'a'.repeat(63), 'my.bucket-1', '1bucket', '192.168.1.1x'])('accepts the bucket name %j', async (name) => {
    expect(await store.createBucket(name)).toBe('created');
  });

  it('refuses to delete a bucket with objects in it, and aborts the uploads of one without (as S3)', async () => {
    await store.createBucket('full');
    await store.putObject('full', 'k', payloadOf('x'), PUT_DEFAULTS);
    const upload = await store.createMultipartUpload('full', 'm', {}, {});
    await expectS3Error(store.deleteBucket('full'), 'BucketNotEmpty');
    // Refused: the upload is still there.
    expect((await store.listMultipartUploads('full', { prefix: '', maxUploads: 10 })).uploads.map((u) => u.uploadId)).toEqual([upload.uploadId]);
    await store.deleteObject('full', 'k', { condition: { type: 'none' } });
    await store.deleteBucket('full');
    await expectS3Error(store.headBucket('full'), 'NoSuchBucket');
    await store.createBucket('full');
    expect((await store.listMultipartUploads('full', { prefix: '', maxUploads: 10 })).uploads).toEqual([]);
    await expectS3Error(store.listParts('full', 'm', upload.uploadId, { partNumberMarker: 0, maxParts: 10 }), 'NoSuchUpload');
  });

  it('reports NoSuchBucket for object operations on a missing bucket', async () => {
    await expectS3Error(store.headObject('nope', 'k'), 'NoSuchBucket');
    await expectS3Error(store.getObject('nope', 'k'), 'NoSuchBucket');
    await expectS3Error(store.putObject('nope', 'k', payloadOf('x'), PUT_DEFAULTS), 'NoSuchBucket');
    await expectS3Error(store.deleteObject('nope', 'k', { condition: { type: 'none' } }), 'NoSuchBucket');
    await expectS3Error(store.listObjects('nope', { prefix: '', maxKeys: 10 }), 'NoSuchBucket');
    await expectS3Error(store.createMultipartUpload('nope', 'k', {}, {}), 'NoSuchBucket');
  });
});

describe.each([
  { label: 'inline bodies', inlineThreshold: undefined },
  { label: 'file bodies', inlineThreshold: -1 },
])('objects ($label)', ({ inlineThreshold }) => {
  beforeEach(async () => {
    temp = tempDataDir();
    store = openFsBackend({ dataDir: temp.dir, ...(inlineThreshold !== undefined && { inlineThreshold }) });
    await store.createBucket('bkt');
  });
  afterEach(async () => {
    await store.close();
    temp.cleanup();
  });

  it('round-trips body, ETag, headers, metadata and writer', async () => {
    const body = bytes(10_000, 7);
    const before = Date.now();
    const put = await store.putObject('bkt', 'dir/file.txt', payloadOf(body, { chunkSize: 999 }), {
      condition: { type: 'none' },
      headers: { contentType: 'text/plain', cacheControl: 'no-cache', contentDisposition: 'inline' },
      metadata: { color: 'blue', 'x-y': 'z' },
      writer: 'agent-7',
    });
    expect(put).toMatchObject({ bucket: 'bkt', key: 'dir/file.txt', etag: sha256Hex(body), size: 10_000, writer: 'agent-7' });
    expect(put.partSizes).toBeUndefined();
    // Stamped at the commit, which happened during the call.
    expect(put.lastModified.getTime()).toBeGreaterThanOrEqual(before);
    expect(put.lastModified.getTime()).toBeLessThanOrEqual(Date.now());
    const head = await store.headObject('bkt', 'dir/file.txt');
    expect(head).toEqual(put);
    expect(head!.headers).toEqual({ contentType: 'text/plain', cacheControl: 'no-cache', contentDisposition: 'inline' });
    expect(head!.metadata).toEqual({ color: 'blue', 'x-y': 'z' });
    const reader = await store.getObject('bkt', 'dir/file.txt');
    expect(reader!.info).toEqual(put);
    expect(sameBytes(await readAll(reader!.open()), body)).toBe(true);
    // The listing shows the same ETag.
    expect((await store.listObjects('bkt', { prefix: '', maxKeys: 10 })).objects[0]).toEqual(put);
  });

  it('returns null for a missing key and deletes idempotently', async () => {
    expect(await store.headObject('bkt', 'missing')).toBeNull();
    expect(await store.getObject('bkt', 'missing')).toBeNull();
    expect((await store.deleteObject('bkt', 'missing', { condition: { type: 'none' } })).replaced).toBeNull();
    const put = await store.putObject('bkt', 'k', payloadOf('hello'), PUT_DEFAULTS);
    expect((await store.deleteObject('bkt', 'k', { condition: { type: 'none' } })).replaced).toEqual(put);
    expect(await store.headObject('bkt', 'k')).toBeNull();
    await store.flushDeletes();
    expect(blobFiles(temp.dir)).toEqual([]);
  });

  it('stores empty objects', async () => {
    const put = await store.putObject('bkt', 'empty', payloadOf(Buffer.alloc(0)), PUT_DEFAULTS);
    expect(put.etag).toBe(sha256Hex(''));
    expect(put.size).toBe(0);
    const reader = await store.getObject('bkt', 'empty');
    expect((await readAll(reader!.open())).length).toBe(0);
    expect(() => reader!.open({ start: 0, end: 0 })).toThrow(S3Error);
  });

  it('serves byte ranges and refuses unsatisfiable ones', async () => {
    const body = bytes(300_000, 3);
    await store.putObject('bkt', 'r', payloadOf(body), PUT_DEFAULTS);
    const reader = (await store.getObject('bkt', 'r'))!;
    for (const [start, end] of [
      [0, 0],
      [0, 299_999],
      [299_999, 299_999],
      [1, 262_145],
      [100_000, 200_000],
    ] as const) {
      expect(sameBytes(await readAll(reader.open({ start, end })), body.subarray(start, end + 1))).toBe(true);
    }
    for (const range of [
      { start: 0, end: 300_000 },
      { start: 10, end: 5 },
      { start: -1, end: 5 },
    ]) {
      expect(() => reader.open(range)).toThrow(expect.objectContaining({ code: 'InvalidRange' }));
    }
  });

  it('overwrites, and the last writer wins without a condition', async () => {
    await store.putObject('bkt', 'k', payloadOf('one'), PUT_DEFAULTS);
    const two = await store.putObject('bkt', 'k', payloadOf(bytes(100_000, 2)), { ...PUT_DEFAULTS, metadata: { v: '2' } });
    expect(await store.headObject('bkt', 'k')).toEqual(two);
    expect(sameBytes(await readAll((await store.getObject('bkt', 'k'))!.open()), bytes(100_000, 2))).toBe(true);
    await store.flushDeletes();
    // Only the current version's blob remains (100 kB is above the default inline limit too).
    expect(blobFiles(temp.dir)).toHaveLength(1);
  });

  it('commits nothing and leaves no file when the payload stream fails mid-way', async () => {
    await store.putObject('bkt', 'k', payloadOf('original'), PUT_DEFAULTS);
    const before = blobFiles(temp.dir);
    for (const [size, failAfter] of [
      [1_000_000, 300_000],
      [1_000, 500],
      [1_000, 0],
    ] as const) {
      await expect(store.putObject('bkt', 'k', payloadOf(bytes(size), { failAfter, chunkSize: 4096 }), PUT_DEFAULTS)).rejects.toBeInstanceOf(PayloadCheckFailed);
      await expect(store.putObject('bkt', `new-${size}-${failAfter}`, payloadOf(bytes(size), { failAfter }), PUT_DEFAULTS)).rejects.toBeInstanceOf(
        PayloadCheckFailed,
      );
    }
    expect(sameBytes(await readAll((await store.getObject('bkt', 'k'))!.open()), Buffer.from('original'))).toBe(true);
    expect((await store.listObjects('bkt', { prefix: '', maxKeys: 100 })).objects.map((o) => o.key)).toEqual(['k']);
    expect(blobFiles(temp.dir)).toEqual(before);
  });

  it('accepts any key up to 1024 UTF-8 bytes and never maps keys to paths', async () => {
    const keys = ['../../etc/passwd', '/abs/path', 'a/../../b', 'spaces and\ttabs', 'ünïcødé/日本語/🎉', 'nul\u0000byte', '.', '..', 'x'.repeat(1024), 'é'.repeat(512)];
    for (const [i, key] of keys.entries()) {
      await store.putObject('bkt', key, payloadOf(`body ${i}`), PUT_DEFAULTS);
    }
    for (const [i, key] of keys.entries()) {
      expect(sameBytes(await readAll((await store.getObject('bkt', key))!.open()), Buffer.from(`body ${i}`))).toBe(true);
    }
    // Whole and in UTF-8 order: a driver that cuts text at U+0000 would list 'nul' here.
    expect((await store.listObjects('bkt', { prefix: '', maxKeys: 100 })).objects.map((o) => o.key)).toEqual([...keys].sort(compareKeys));
    await expectS3Error(store.putObject('bkt', 'x'.repeat(1025), payloadOf('x'), PUT_DEFAULTS), 'KeyTooLongError');
    await expectS3Error(store.putObject('bkt', 'é'.repeat(513), payloadOf('x'), PUT_DEFAULTS), 'KeyTooLongError');
    await expectS3Error(store.putObject('bkt', 'lone\uD800surrogate', payloadOf('x'), PUT_DEFAULTS), 'InvalidArgument');
    await expectS3Error(store.putObject('bkt', '', payloadOf('x'), PUT_DEFAULTS), 'InvalidArgument');
  });
});

describe('snapshot reads', () => {
  beforeEach(async () => {
    temp = tempDataDir();
    store = openFsBackend({ dataDir: temp.dir, fsync: false });
    await store.createBucket('bkt');
  });
  afterEach(async () => {
    await store.close();
    temp.cleanup();
  });

  it('a reader streaming the old version gets it intact while the key is overwritten and deleted', async () => {
    const oldBody = bytes(3_000_000, 11);
    await store.putObject('bkt', 'k', payloadOf(oldBody), PUT_DEFAULTS);
    const reader = (await store.getObject('bkt', 'k'))!;
    const stream = reader.open();
    const chunks: Buffer[] = [];
    const iterator = stream[Symbol.asyncIterator]();
    chunks.push((await iterator.next()).value as Buffer);
    await store.putObject('bkt', 'k', payloadOf(bytes(2_000_000, 12)), PUT_DEFAULTS);
    await store.putObject('bkt', 'k', payloadOf('tiny'), PUT_DEFAULTS);
    await store.flushDeletes();
    for (let r = await iterator.next(); !r.done; r = await iterator.next()) chunks.push(r.value as Buffer);
    expect(Buffer.concat(chunks).equals(oldBody)).toBe(true);
    expect(reader.info.etag).toBe(sha256Hex(oldBody));
    expect(sameBytes(await readAll((await store.getObject('bkt', 'k'))!.open()), Buffer.from('tiny'))).toBe(true);
  });

  it('a reader opened after the key was replaced still reads the version it returned', async () => {
    const oldBody = bytes(500_000, 21);
    await store.putObject('bkt', 'k', payloadOf(oldBody), PUT_DEFAULTS);
    const reader = (await store.getObject('bkt', 'k'))!;
    await store.deleteObject('bkt', 'k', { condition: { type: 'none' } });
    await store.flushDeletes();
    expect(sameBytes(await readAll(reader.open({ start: 1000, end: 499_999 })), oldBody.subarray(1000))).toBe(true);
    expect(sameBytes(await readAll(reader.open()), oldBody)).toBe(true);
  });

  it('unlinks a replaced blob once its readers are done', async () => {
    const temp2 = tempDataDir();
    const short = openFsBackend({ dataDir: temp2.dir, fsync: false, readerLeaseMs: 50 });
    try {
      await short.createBucket('bkt');
      await short.putObject('bkt', 'k', payloadOf(bytes(200_000)), PUT_DEFAULTS);
      const reader = (await short.getObject('bkt', 'k'))!;
      const stream = reader.open();
      await short.putObject('bkt', 'k', payloadOf(bytes(200_000, 5)), PUT_DEFAULTS);
      await short.flushDeletes();
      expect(blobFiles(temp2.dir)).toHaveLength(2);
      await readAll(stream);
      // The reader's pin goes when its stream closes, and the unlink follows.
      await until(() => blobFiles(temp2.dir).length === 1, 'the replaced blob to be unlinked');
    } finally {
      await short.close();
      temp2.cleanup();
    }
  });
});
