/**
 * Crash safety (DESIGN §1, issue 2): kill -9 casket while large PutObjects
 * and multipart completions are in flight, restart it on the same data dir,
 * and every object must be whole — exactly one of the versions a client
 * tried to write (or the one before), its bytes matching its ETag — and
 * listings must agree with HEAD.
 */
import {
  CompleteMultipartUploadCommand, CreateBucketCommand, CreateMultipartUploadCommand, GetObjectCommand,
  HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client, UploadPartCommand,
} from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { bytes, sdk } from '../helpers/clients.js';

const bucket = 'crash';
const MiB = 1024 * 1024;
const sha = (b: Buffer) => createHash('sha256').update(b).digest();

let casket: RunningCasket | undefined;
afterAll(async () => {
  await casket?.stop();
});

/** ETag → SHA-256 hex of the content that ETag stands for, for every version any writer tried. */
const versions = new Map<string, string>();

function plain(body: Buffer): string {
  const etag = `"${sha(body).toString('hex')}"`;
  versions.set(etag, sha(body).toString('hex'));
  return etag;
}

function multipart(parts: Buffer[]): string {
  const etag = `"${createHash('sha256').update(Buffer.concat(parts.map(sha))).digest('hex')}-${parts.length}"`;
  versions.set(etag, sha(Buffer.concat(parts)).toString('hex'));
  return etag;
}

async function putLoop(s3: S3Client, key: string, stop: { now: boolean }) {
  while (!stop.now) {
    const body = randomBytes(4 * MiB + Math.floor(Math.random() * MiB));
    plain(body);
    try {
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
    } catch {
      return;
    }
  }
}

async function multipartLoop(s3: S3Client, key: string, stop: { now: boolean }) {
  while (!stop.now) {
    const parts = [randomBytes(5 * MiB), randomBytes(MiB + 7)];
    multipart(parts);
    try {
      const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
      const done = [];
      for (const [i, p] of parts.entries()) {
        const r = await s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: i + 1, Body: p }));
        done.push({ PartNumber: i + 1, ETag: r.ETag });
      }
      await s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId, MultipartUpload: { Parts: done } }));
    } catch {
      return;
    }
  }
}

describe('kill -9 in flight', () => {
  it('every object is whole after a restart, three crashes in a row', async () => {
    casket = await startCasket();
    let s3 = sdk(casket.url, casket.admin);
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    const keys = ['p0', 'p1', 'p2', 'm0', 'm1'];
    for (const key of keys) {
      const body = Buffer.from(`initial ${key}`);
      plain(body);
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
    }
    for (let crash = 0; crash < 3; crash++) {
      const stop = { now: false };
      const loops = keys.map((k) => (k.startsWith('p') ? putLoop(s3, k, stop) : multipartLoop(s3, k, stop)));
      await new Promise((r) => setTimeout(r, 700 + crash * 300));
      await casket.kill();
      stop.now = true;
      await Promise.all(loops);
      s3.destroy();
      casket = await casket.restart();
      s3 = sdk(casket.url, casket.admin);
      const listed = await s3.send(new ListObjectsV2Command({ Bucket: bucket }));
      expect(listed.Contents?.map((o) => o.Key).sort()).toEqual([...keys].sort());
      for (const key of keys) {
        const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
        expect(versions.has(head.ETag!), `${key} after crash ${crash}: unknown ETag ${head.ETag}`).toBe(true);
        expect(listed.Contents?.find((o) => o.Key === key)?.ETag).toBe(head.ETag);
        const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        const content = await bytes(got.Body);
        expect(got.ETag).toBe(head.ETag);
        expect(content.length).toBe(head.ContentLength);
        expect(sha(content).toString('hex'), `${key} after crash ${crash}: torn content`).toBe(versions.get(head.ETag!));
      }
    }
    s3.destroy();
  });
});
