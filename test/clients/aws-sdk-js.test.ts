/**
 * @aws-sdk/client-s3 (v3) through casket, driven as its users drive it:
 * virtual-hosted style with a hostname endpoint (its default), Buffer and
 * stream bodies (a stream goes aws-chunked with a CRC32 trailer), lib-storage
 * multipart, ranged GETs, listing, copy, batch delete and IfMatch/IfNoneMatch —
 * over HTTP and HTTPS, as a person (admin key) and as an agent (its own bound
 * key, under the default `--agent-writes require`: every agent write carries
 * a condition, and one without is refused with PreconditionRequired).
 */
import {
  CopyObjectCommand, DeleteObjectsCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytes, failure } from '../helpers/clients.js';
import { MiB, PROTOCOLS, ROLES, multipartETag, plainETag, sdkClient, sha256, startClientCasket, type ClientCasket, type Role } from './harness.js';

const who = (role: Role, protocol: string) => `@aws-sdk/client-s3 (${role}, ${protocol})`;

describe.each(PROTOCOLS)('@aws-sdk/client-s3 over %s', (protocol) => {
  let env: ClientCasket;
  beforeAll(async () => {
    env = await startClientCasket(protocol, { client: 'sdk', buckets: ['sdk-person', 'sdk-agent'] });
  });
  afterAll(async () => env?.stop());

  describe.each(ROLES)('as %s', (role) => {
    const bucket = `sdk-${role}`;
    let s3: S3Client;
    const hosts = new Set<string>();
    // A person writes as plain S3 lets it; an agent must name what it replaces.
    const create = () => (role === 'agent' ? { IfNoneMatch: '*' } : {});
    const replace = (etag: string | undefined) => (role === 'agent' ? { IfMatch: etag } : {});
    beforeAll(() => {
      s3 = sdkClient(env.endpoint, env.cred(role), { virtualHosted: true, hosts });
    });
    afterAll(() => s3?.destroy());

    it('PutObject (Buffer, stream), GetObject (whole, Range), ListObjectsV2: bytes and ETags agree with HeadObject', async () => {
      const small = randomBytes(64 * 1024 + 3);
      const put = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'docs/buffer.bin', Body: small, ...create() }));
      expect(put.ETag, `${who(role, protocol)} PutObject Buffer`).toBe(plainETag(small));

      const streamed = randomBytes(3 * MiB + 11);
      const putStream = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'docs/stream.bin', Body: Readable.from([streamed.subarray(0, MiB), streamed.subarray(MiB)]), ContentLength: streamed.length, ...create() }));
      expect(putStream.ETag, `${who(role, protocol)} PutObject stream (aws-chunked, CRC32 trailer)`).toBe(plainETag(streamed));

      for (const [key, data, etag] of [['docs/buffer.bin', small, put.ETag], ['docs/stream.bin', streamed, putStream.ETag]] as const) {
        expect((await env.head(bucket, key)).ETag, `HeadObject ${key}`).toBe(etag);
        const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        expect(got.ETag, `${who(role, protocol)} GetObject ${key} ETag`).toBe(etag);
        expect(sha256(await bytes(got.Body)), `${who(role, protocol)} GetObject ${key} bytes`).toBe(sha256(data));
      }
      const range = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'docs/stream.bin', Range: 'bytes=1000-1999' }));
      expect(range.ContentRange).toBe(`bytes 1000-1999/${streamed.length}`);
      expect(range.ETag).toBe(putStream.ETag);
      expect(sha256(await bytes(range.Body)), `${who(role, protocol)} GetObject Range`).toBe(sha256(streamed.subarray(1000, 2000)));

      const list = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'docs/' }));
      expect(list.Contents?.map((o) => [o.Key, o.ETag, o.Size]), `${who(role, protocol)} ListObjectsV2`).toEqual([
        ['docs/buffer.bin', put.ETag, small.length],
        ['docs/stream.bin', putStream.ETag, streamed.length],
      ]);
      expect([...hosts], 'virtual-hosted style').toEqual([`${bucket}.s3.casket.test`]);
    });

    it('lib-storage Upload: a 12 MiB stream in 5 MiB parts, read back whole', async () => {
      const data = randomBytes(12 * MiB + 5);
      const upload = new Upload({ client: s3, params: { Bucket: bucket, Key: 'big/upload.bin', Body: Readable.from([data]), ...create() }, partSize: 5 * MiB, queueSize: 2 });
      const done = await upload.done();
      const expected = multipartETag(data, 5 * MiB);
      expect(done.ETag, `${who(role, protocol)} lib-storage Upload`).toBe(expected);
      expect((await env.head(bucket, 'big/upload.bin')).ETag).toBe(expected);
      const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'big/upload.bin' }));
      expect(got.ETag).toBe(expected);
      expect(sha256(await bytes(got.Body)), `${who(role, protocol)} GetObject after multipart`).toBe(sha256(data));
    });

    it('CopyObject and DeleteObjects (with per-object ETags)', async () => {
      const data = randomBytes(4096);
      const put = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'copy/source', Body: data, ...create() }));
      const copy = await s3.send(new CopyObjectCommand({ Bucket: bucket, Key: 'copy/target', CopySource: `${bucket}/copy/source`, ...create() }));
      expect(copy.CopyObjectResult?.ETag, `${who(role, protocol)} CopyObject`).toBe(put.ETag);
      expect((await env.head(bucket, 'copy/target')).ETag).toBe(put.ETag);
      const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'copy/target' }));
      expect(sha256(await bytes(got.Body))).toBe(sha256(data));

      const del = await s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: [{ Key: 'copy/source', ETag: put.ETag }, { Key: 'copy/target', ETag: put.ETag }] } }));
      expect(del.Errors ?? [], `${who(role, protocol)} DeleteObjects`).toEqual([]);
      expect(del.Deleted?.map((d) => d.Key).sort()).toEqual(['copy/source', 'copy/target']);
      const left = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'copy/' }));
      expect(left.KeyCount).toBe(0);
    });

    it('IfMatch / IfNoneMatch: a stale write is PreconditionFailed and writes nothing', async () => {
      const key = 'cas/state.json';
      const v1 = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: '{"v":1}', IfNoneMatch: '*' }));
      expect(await failure(s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'again', IfNoneMatch: '*' }))), `${who(role, protocol)} IfNoneMatch on an existing key`).toMatchObject({ name: 'PreconditionFailed', status: 412 });
      const read = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      expect((await bytes(read.Body)).toString()).toBe('{"v":1}');
      const v2 = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: '{"v":2}', IfMatch: v1.ETag }));
      expect(v2.ETag).toBe(plainETag(Buffer.from('{"v":2}')));

      // Someone else writes v3; a write still conditioned on v2 must lose.
      const v3 = await env.overwrite(bucket, key, '{"v":3,"by":"someone else"}');
      const stale = await failure(s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: '{"v":"lost"}', IfMatch: v2.ETag })));
      expect(stale, `${who(role, protocol)} PutObject IfMatch stale`).toMatchObject({ name: 'PreconditionFailed', status: 412 });
      expect((await env.head(bucket, key)).ETag, 'nothing was written').toBe(v3);
    });

    if (role === 'agent') {
      it('agent: a write without a condition is PreconditionRequired, a read-then-IfMatch write goes through', async () => {
        const key = 'agent/notes.txt';
        const v1 = await env.overwrite(bucket, key, 'from a person');
        const refused = await failure(s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'unconditional' })));
        expect(refused, `${who(role, protocol)} unconditional PutObject`).toMatchObject({ name: 'PreconditionRequired', status: 428 });
        expect((await env.head(bucket, key)).ETag).toBe(v1);
        const read = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        expect((await bytes(read.Body)).toString()).toBe('from a person');
        const put = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'agent edit', ...replace(read.ETag) }));
        expect((await env.head(bucket, key)).ETag).toBe(put.ETag);
      });
    }
  });

  it('path style with an IP endpoint, agent named by the x-agent-id header (signed)', async () => {
    const hosts = new Set<string>();
    const s3 = sdkClient(env.endpoint, env.casket.admin, { agentHeader: 'sdk-header-agent', hosts });
    try {
      const data = randomBytes(1000);
      const refused = await failure(s3.send(new PutObjectCommand({ Bucket: 'sdk-person', Key: 'path/x', Body: data })));
      expect(refused, `@aws-sdk/client-s3 (header agent, ${protocol}) unconditional PutObject`).toMatchObject({ name: 'PreconditionRequired', status: 428 });
      const put = await s3.send(new PutObjectCommand({ Bucket: 'sdk-person', Key: 'path/x', Body: data, IfNoneMatch: '*' }));
      expect(put.ETag).toBe(plainETag(data));
      const got = await s3.send(new GetObjectCommand({ Bucket: 'sdk-person', Key: 'path/x' }));
      expect(sha256(await bytes(got.Body))).toBe(sha256(data));
      expect([...hosts], 'path style').toEqual(['127.0.0.1']);
    } finally {
      s3.destroy();
    }
  });
});
