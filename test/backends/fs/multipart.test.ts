/**
 * Multipart uploads in the embedded store: the object ETag formula
 * (recomputed here), part ETags (MD5), reading across part files, part
 * numbers that start anywhere with gaps, CompleteMultipartUpload's errors,
 * part replacement, abort, conditional completion, retried completion, and
 * ListParts / ListMultipartUploads paging.
 */
import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openFsBackend, type FsBackend } from '../../../src/backends/fs/index.js';
import { ConditionFailed, type CompletedPart } from '../../../src/backends/types.js';
import { S3Error } from '../../../src/vocabulary/errors.js';
import { blobFiles, bytes, hashingPayload, md5Hex, payloadOf, PUT_DEFAULTS, readAll, sameBytes, sha256Hex, tempDataDir } from './helpers.js';
import { PassThrough } from 'node:stream';
import { until } from '../../helpers/poll.js';

const MIN = 1024;
let temp: ReturnType<typeof tempDataDir>;
let store: FsBackend;

beforeEach(async () => {
  temp = tempDataDir();
  store = openFsBackend({ dataDir: temp.dir, fsync: false, minPartSize: MIN });
  await store.createBucket('bkt');
});
afterEach(async () => {
  await store.close();
  temp.cleanup();
});

async function expectS3Error(promise: Promise<unknown>, code: string): Promise<void> {
  await expect(promise).rejects.toSatisfy((e: unknown) => e instanceof S3Error && e.code === code);
}

function expectedETag(parts: Buffer[]): string {
  const digests = parts.map((p) => createHash('sha256').update(p).digest());
  return `${createHash('sha256').update(Buffer.concat(digests)).digest('hex')}-${parts.length}`;
}

async function upload(key: string, parts: Array<[number, Buffer]>): Promise<{ uploadId: string; completed: CompletedPart[] }> {
  const { uploadId } = await store.createMultipartUpload('bkt', key, { contentType: 'application/x-test' }, { origin: 'multipart' });
  const completed: CompletedPart[] = [];
  for (const [partNumber, body] of parts) {
    const part = await store.uploadPart('bkt', key, uploadId, partNumber, payloadOf(body, { md5: true }));
    expect(part).toMatchObject({ partNumber, etag: md5Hex(body), size: body.length });
    expect(part.sha256.toString('hex')).toBe(sha256Hex(body));
    completed.push({ partNumber, etag: part.etag });
  }
  return { uploadId, completed };
}

describe('CompleteMultipartUpload', () => {
  it('makes an object out of the parts without copying them; ETag is sha256 of the part digests, -N', async () => {
    const bodies = [bytes(3000, 1), bytes(5000, 2), bytes(700, 3)];
    // minio-js starts at 2; gaps are allowed.
    const { uploadId, completed } = await upload('mp', [
      [2, bodies[0]!],
      [5, bodies[1]!],
      [9, bodies[2]!],
    ]);
    const filesBefore = blobFiles(temp.dir).sort();
    const info = await store.completeMultipartUpload('bkt', 'mp', uploadId, completed, { condition: { type: 'none' }, writer: 'agent-m' });
    expect(info).toMatchObject({
      bucket: 'bkt',
      key: 'mp',
      etag: expectedETag(bodies),
      size: 8700,
      partSizes: [3000, 5000, 700],
      headers: { contentType: 'application/x-test' },
      metadata: { origin: 'multipart' },
      writer: 'agent-m',
    });
    // No copy: the object's blobs are the part files.
    expect(blobFiles(temp.dir).sort()).toEqual(filesBefore);
    expect(await store.headObject('bkt', 'mp')).toEqual(info);
    expect((await store.listObjects('bkt', { prefix: 'mp', maxKeys: 1 })).objects[0]).toEqual(info);
    const whole = Buffer.concat(bodies);
    const reader = (await store.getObject('bkt', 'mp'))!;
    expect(reader.info).toEqual(info);
    expect(sameBytes(await readAll(reader.open()), whole)).toBe(true);
    for (const [start, end] of [
      [0, 2999],
      [2999, 3000],
      [2500, 8100],
      [3000, 7999],
      [8000, 8699],
      [8699, 8699],
    ] as const) {
      expect(sameBytes(await readAll(reader.open({ start, end })), whole.subarray(start, end + 1)), `${start}-${end}`).toBe(true);
    }
    // The upload is gone.
    await expectS3Error(store.listParts('bkt', 'mp', uploadId, { partNumberMarker: 0, maxParts: 10 }), 'NoSuchUpload');
    await expectS3Error(store.abortMultipartUpload('bkt', 'mp', uploadId), 'NoSuchUpload');
    await expectS3Error(store.uploadPart('bkt', 'mp', uploadId, 1, payloadOf('x', { md5: true })), 'NoSuchUpload');
    expect((await store.listMultipartUploads('bkt', { prefix: '', maxUploads: 10 })).uploads).toEqual([]);
  });

  it('keeps a multipart version readable while it is overwritten mid-stream', async () => {
    const bodies = [bytes(400_000, 1), bytes(300_000, 2)];
    const { uploadId, completed } = await upload('mp', [
      [1, bodies[0]!],
      [2, bodies[1]!],
    ]);
    await store.completeMultipartUpload('bkt', 'mp', uploadId, completed, { condition: { type: 'none' } });
    const stream = (await store.getObject('bkt', 'mp'))!.open({ start: 100, end: 699_999 });
    const iterator = stream[Symbol.asyncIterator]();
    const chunks: Buffer[] = [(await iterator.next()).value as Buffer];
    await store.putObject('bkt', 'mp', payloadOf('replaced'), PUT_DEFAULTS);
    await store.flushDeletes();
    for (let r = await iterator.next(); !r.done; r = await iterator.next()) chunks.push(r.value as Buffer);
    expect(sameBytes(Buffer.concat(chunks), Buffer.concat(bodies).subarray(100))).toBe(true);
  });

  it('drops the parts the completion did not name', async () => {
    const { uploadId, completed } = await upload('mp', [
      [1, bytes(2000, 1)],
      [2, bytes(2000, 2)],
      [3, bytes(2000, 3)],
    ]);
    await store.completeMultipartUpload('bkt', 'mp', uploadId, [completed[0]!, completed[2]!], { condition: { type: 'none' } });
    await store.flushDeletes();
    expect(blobFiles(temp.dir)).toHaveLength(2);
    expect((await store.headObject('bkt', 'mp'))!.etag).toBe(expectedETag([bytes(2000, 1), bytes(2000, 3)]));
  });

  it('refuses parts out of order, missing, with the wrong ETag, too small, or none', async () => {
    const { uploadId, completed } = await upload('mp', [
      [1, bytes(MIN, 1)],
      [2, bytes(MIN - 1, 2)],
      [3, bytes(10, 3)],
    ]);
    const none = { condition: { type: 'none' as const } };
    await expectS3Error(store.completeMultipartUpload('bkt', 'mp', uploadId, [completed[1]!, completed[0]!], none), 'InvalidPartOrder');
    // A part number listed twice names one part (a part sent twice): one of its listed ETags must be the part's.
    await expectS3Error(store.completeMultipartUpload('bkt', 'mp', uploadId, [{ partNumber: 1, etag: md5Hex('a') }, { partNumber: 1, etag: md5Hex('b') }], none), 'InvalidPart');
    await expectS3Error(store.completeMultipartUpload('bkt', 'mp', uploadId, [completed[0]!, { partNumber: 4, etag: completed[0]!.etag }], none), 'InvalidPart');
    await expectS3Error(store.completeMultipartUpload('bkt', 'mp', uploadId, [{ partNumber: 1, etag: md5Hex('nope') }], none), 'InvalidPart');
    await expectS3Error(store.completeMultipartUpload('bkt', 'mp', uploadId, [completed[1]!, completed[2]!], none), 'EntityTooSmall');
    await expectS3Error(store.completeMultipartUpload('bkt', 'mp', uploadId, [], none), 'MalformedXML');
    await expectS3Error(store.completeMultipartUpload('bkt', 'mp', 'no-such-upload', completed, none), 'NoSuchUpload');
    await expectS3Error(store.completeMultipartUpload('bkt', 'other-key', uploadId, completed, none), 'NoSuchUpload');
    // Nothing above consumed the upload. Quoted, upper-case ETags are accepted; the last part may be small.
    const info = await store.completeMultipartUpload(
      'bkt',
      'mp',
      uploadId,
      [
        { partNumber: 1, etag: `"${completed[0]!.etag.toUpperCase()}"` },
        { partNumber: 3, etag: completed[2]!.etag },
      ],
      none,
    );
    expect(info.partSizes).toEqual([MIN, 10]);
  });

  it('enforces the 5 MiB default minimum part size', async () => {
    const temp2 = tempDataDir();
    const s = openFsBackend({ dataDir: temp2.dir, fsync: false });
    try {
      await s.createBucket('bkt');
      const { uploadId } = await s.createMultipartUpload('bkt', 'k', {}, {});
      const p1 = await s.uploadPart('bkt', 'k', uploadId, 1, payloadOf(bytes(5 * 1024 * 1024 - 1), { md5: true }));
      const p2 = await s.uploadPart('bkt', 'k', uploadId, 2, payloadOf('x', { md5: true }));
      await expect(s.completeMultipartUpload('bkt', 'k', uploadId, [p1, p2], { condition: { type: 'none' } })).rejects.toMatchObject({ code: 'EntityTooSmall' });
    } finally {
      await s.close();
      temp2.cleanup();
    }
  });

  it('evaluates the commit condition atomically; a refused completion keeps the upload', async () => {
    const existing = await store.putObject('bkt', 'mp', payloadOf('existing'), PUT_DEFAULTS);
    const bodies = [bytes(MIN, 1), bytes(50, 2)];
    const { uploadId, completed } = await upload('mp', [
      [1, bodies[0]!],
      [2, bodies[1]!],
    ]);
    const error = await store.completeMultipartUpload('bkt', 'mp', uploadId, completed, { condition: { type: 'if-none-match' } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConditionFailed);
    expect((error as ConditionFailed).current).toEqual(existing);
    expect((await store.listParts('bkt', 'mp', uploadId, { partNumberMarker: 0, maxParts: 10 })).parts).toHaveLength(2);
    const info = await store.completeMultipartUpload('bkt', 'mp', uploadId, completed, { condition: { type: 'if-match', etags: [existing.etag] } });
    expect(info.etag).toBe(expectedETag(bodies));
  });

  it('a second upload of identical parts is refused by If-None-Match, and stays open', async () => {
    const bodies: Array<[number, Buffer]> = [
      [1, bytes(MIN, 1)],
      [2, bytes(50, 2)],
    ];
    const first = await upload('mp', bodies);
    const info = await store.completeMultipartUpload('bkt', 'mp', first.uploadId, first.completed, { condition: { type: 'if-none-match' } });
    const second = await upload('mp', bodies);
    const refused = await store.completeMultipartUpload('bkt', 'mp', second.uploadId, second.completed, { condition: { type: 'if-none-match' } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(ConditionFailed);
    expect((refused as ConditionFailed).current).toEqual(info);
    expect((refused as ConditionFailed).attemptedETag).toBe(info.etag);
    // As in S3, a refused completion leaves the upload to retry or abort.
    expect((await store.listParts('bkt', 'mp', second.uploadId, { partNumberMarker: 0, maxParts: 10 })).parts).toHaveLength(2);
    await store.abortMultipartUpload('bkt', 'mp', second.uploadId);
    await store.flushDeletes();
    expect(blobFiles(temp.dir)).toHaveLength(2);
  });

  it('answers a retried completion (lost response) with the object it made', async () => {
    const { uploadId, completed } = await upload('mp', [[1, bytes(100, 1)]]);
    const info = await store.completeMultipartUpload('bkt', 'mp', uploadId, completed, { condition: { type: 'if-none-match' } });
    expect(await store.completeMultipartUpload('bkt', 'mp', uploadId, completed, { condition: { type: 'if-none-match' } })).toEqual(info);
    // Not once the key holds another version.
    await store.putObject('bkt', 'mp', payloadOf('newer'), PUT_DEFAULTS);
    await expectS3Error(store.completeMultipartUpload('bkt', 'mp', uploadId, completed, { condition: { type: 'none' } }), 'NoSuchUpload');
  });
});

describe('UploadPart', () => {
  it('replaces a part uploaded again under the same number', async () => {
    const { uploadId } = await upload('mp', [[1, bytes(MIN, 1)]]);
    const replacement = await store.uploadPart('bkt', 'mp', uploadId, 1, payloadOf(bytes(MIN, 9), { md5: true }));
    await store.flushDeletes();
    expect(blobFiles(temp.dir)).toHaveLength(1);
    const listed = await store.listParts('bkt', 'mp', uploadId, { partNumberMarker: 0, maxParts: 10 });
    expect(listed.parts).toEqual([{ ...replacement, lastModified: expect.any(Date) }]);
    const info = await store.completeMultipartUpload('bkt', 'mp', uploadId, [{ partNumber: 1, etag: replacement.etag }], { condition: { type: 'none' } });
    expect(info.etag).toBe(expectedETag([bytes(MIN, 9)]));
  });

  it('validates part numbers and needs an MD5-computing payload', async () => {
    const { uploadId } = await store.createMultipartUpload('bkt', 'mp', {}, {});
    for (const n of [0, 10_001, 1.5, -1]) await expectS3Error(store.uploadPart('bkt', 'mp', uploadId, n, payloadOf('x', { md5: true })), 'InvalidArgument');
    await store.uploadPart('bkt', 'mp', uploadId, 10_000, payloadOf('x', { md5: true }));
    await expectS3Error(store.uploadPart('bkt', 'mp', uploadId, 1, payloadOf('no md5')), 'InternalError');
    await expectS3Error(store.uploadPart('bkt', 'wrong-key', uploadId, 1, payloadOf('x', { md5: true })), 'NoSuchUpload');
    expect(blobFiles(temp.dir)).toHaveLength(1);
  });

  it('discards a part whose upload was aborted while it streamed', async () => {
    const { uploadId } = await store.createMultipartUpload('bkt', 'mp', {}, {});
    const source = new PassThrough();
    const pending = store.uploadPart('bkt', 'mp', uploadId, 1, hashingPayload(source, true));
    // Abort once the part is being received: its blob file exists.
    source.write(bytes(100_000));
    await until(() => blobFiles(temp.dir).length === 1, 'the part to be spooled to a blob file');
    await store.abortMultipartUpload('bkt', 'mp', uploadId);
    source.end(bytes(100_000, 2));
    await expectS3Error(pending, 'NoSuchUpload');
    await store.flushDeletes();
    expect(blobFiles(temp.dir)).toEqual([]);
  });
});

describe('AbortMultipartUpload', () => {
  it('removes the upload and its part files', async () => {
    const { uploadId, completed } = await upload('mp', [
      [1, bytes(MIN, 1)],
      [2, bytes(10, 2)],
    ]);
    await store.abortMultipartUpload('bkt', 'mp', uploadId);
    await store.flushDeletes();
    expect(blobFiles(temp.dir)).toEqual([]);
    await expectS3Error(store.completeMultipartUpload('bkt', 'mp', uploadId, completed, { condition: { type: 'none' } }), 'NoSuchUpload');
    await expectS3Error(store.abortMultipartUpload('bkt', 'mp', uploadId), 'NoSuchUpload');
    expect(await store.headObject('bkt', 'mp')).toBeNull();
  });
});

describe('listing', () => {
  it('pages ListParts by part number marker', async () => {
    const { uploadId } = await upload(
      'mp',
      [3, 1, 7, 2, 9].map((n): [number, Buffer] => [n, bytes(10, n)]),
    );
    const page1 = await store.listParts('bkt', 'mp', uploadId, { partNumberMarker: 0, maxParts: 2 });
    expect(page1.parts.map((p) => p.partNumber)).toEqual([1, 2]);
    expect(page1).toMatchObject({ isTruncated: true, nextPartNumberMarker: 2 });
    expect(page1.upload).toMatchObject({ bucket: 'bkt', key: 'mp', uploadId, headers: { contentType: 'application/x-test' } });
    const page2 = await store.listParts('bkt', 'mp', uploadId, { partNumberMarker: 2, maxParts: 2 });
    expect(page2.parts.map((p) => p.partNumber)).toEqual([3, 7]);
    const page3 = await store.listParts('bkt', 'mp', uploadId, { partNumberMarker: 7, maxParts: 2 });
    expect(page3.parts.map((p) => p.partNumber)).toEqual([9]);
    expect(page3.isTruncated).toBe(false);
    expect(page3.parts[0]!.etag).toBe(md5Hex(bytes(10, 9)));
  });

  it('lists uploads by key, then initiation order, with markers, prefix and delimiter', async () => {
    const made: Array<{ key: string; uploadId: string }> = [];
    for (const key of ['b', 'a/1', 'b', 'a/2', 'c', 'b', 'a/1']) {
      const u = await store.createMultipartUpload('bkt', key, {}, {});
      made.push({ key, uploadId: u.uploadId });
    }
    const utf8 = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
    // Stable sort keeps creation order within a key.
    const expected = [...made].sort((x, y) => utf8(x.key, y.key));
    const all = await store.listMultipartUploads('bkt', { prefix: '', maxUploads: 100 });
    expect(all.uploads.map((u) => ({ key: u.key, uploadId: u.uploadId }))).toEqual(expected);
    expect(all.isTruncated).toBe(false);

    // Page by (key-marker, upload-id-marker), two at a time.
    const seen: string[] = [];
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    for (;;) {
      const page = await store.listMultipartUploads('bkt', { prefix: '', maxUploads: 2, ...(keyMarker && { keyMarker }), ...(uploadIdMarker && { uploadIdMarker }) });
      seen.push(...page.uploads.map((u) => u.uploadId));
      if (!page.isTruncated) break;
      keyMarker = page.nextKeyMarker;
      uploadIdMarker = page.nextUploadIdMarker;
    }
    expect(seen).toEqual(expected.map((u) => u.uploadId));

    // key-marker alone skips every upload of that key.
    const afterB = await store.listMultipartUploads('bkt', { prefix: '', keyMarker: 'b', maxUploads: 100 });
    expect(afterB.uploads.map((u) => u.key)).toEqual(['c']);

    const rolled = await store.listMultipartUploads('bkt', { prefix: '', delimiter: '/', maxUploads: 2 });
    expect(rolled.commonPrefixes).toEqual(['a/']);
    expect(rolled.uploads.map((u) => u.key)).toEqual(['b']);
    expect(rolled).toMatchObject({ isTruncated: true, nextKeyMarker: 'b' });

    const prefixed = await store.listMultipartUploads('bkt', { prefix: 'a/', maxUploads: 100 });
    expect(prefixed.uploads.map((u) => u.key)).toEqual(['a/1', 'a/1', 'a/2']);
  });
});
