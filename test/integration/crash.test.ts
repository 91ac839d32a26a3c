/**
 * Crash safety (docs/design.md §1): kill -9 casket while large PutObjects
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
import { until } from '../helpers/poll.js';

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

/**
 * One writer's record for a round: how many writes completed, whether one is
 * in flight now, and the error it stopped on — expected only once the kill
 * has begun (a write cut off), a failure of casket's before it. `attempt` is
 * the ETag of the write started last, `acknowledged` that of the last one
 * casket answered 200: after the restart the key must hold one of the two.
 */
interface Writer {
  completed: number;
  inFlight: boolean;
  attempt?: string;
  acknowledged?: string;
  failed?: { error: unknown; afterKill: boolean };
}

interface Round {
  killing: boolean;
}

async function writeLoop(round: Round, writer: Writer, write: (writer: Writer) => Promise<void>): Promise<void> {
  while (!round.killing) {
    writer.inFlight = true;
    try {
      await write(writer);
      writer.acknowledged = writer.attempt;
    } catch (error) {
      writer.failed = { error, afterKill: round.killing };
      break;
    } finally {
      writer.inFlight = false;
    }
    writer.completed++;
  }
}

function putObject(s3: S3Client, key: string): (writer: Writer) => Promise<void> {
  return async (writer) => {
    const body = randomBytes(4 * MiB + Math.floor(Math.random() * MiB));
    writer.attempt = plain(body);
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
  };
}

function multipartUpload(s3: S3Client, key: string): (writer: Writer) => Promise<void> {
  return async (writer) => {
    const parts = [randomBytes(5 * MiB), randomBytes(MiB + 7)];
    writer.attempt = multipart(parts);
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
    const done = [];
    for (const [i, p] of parts.entries()) {
      const r = await s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: i + 1, Body: p }));
      done.push({ PartNumber: i + 1, ETag: r.ETag });
    }
    await s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId, MultipartUpload: { Parts: done } }));
  };
}

/**
 * The test's own budget, in the terms of its waits: each round may wait
 * ROUND_WAIT_MS for the writers, then kills, restarts (the helper's own
 * 20 s) and reads every object back. On an idle machine all three rounds
 * take under 10 s; at the load of a full CI run (load ~19 on two cores,
 * fsync on every write) they once took over vitest's default 60 s, which
 * then failed the test while its own waits still held.
 */
const CRASHES = 3;
const ROUND_WAIT_MS = 120_000;
const ROUND_REST_MS = 60_000;

describe('kill -9 in flight', () => {
  it('every object is whole after a restart, three crashes in a row', { timeout: CRASHES * (ROUND_WAIT_MS + ROUND_REST_MS) }, async () => {
    casket = await startCasket();
    let s3 = sdk(casket.url, casket.admin);
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    const keys = ['p0', 'p1', 'p2', 'm0', 'm1'];
    for (const key of keys) {
      const body = Buffer.from(`initial ${key}`);
      plain(body);
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
    }
    for (let crash = 0; crash < CRASHES; crash++) {
      const round: Round = { killing: false };
      const writers: Writer[] = keys.map(() => ({ completed: 0, inFlight: false }));
      const loops = keys.map((k, i) => writeLoop(round, writers[i]!, k.startsWith('p') ? putObject(s3, k) : multipartUpload(s3, k)));
      // Kill once every writer has completed crash + 1 writes (later each round): the others are mid-write then.
      const failedEarly = () => writers.find((w) => w.failed !== undefined)?.failed?.error;
      await until(() => {
        if (failedEarly() !== undefined) throw new Error(`a write failed before the kill (crash ${crash}): ${String(failedEarly())}`);
        return writers.every((w) => w.completed > crash);
      }, `every writer to complete ${crash + 1} writes`, ROUND_WAIT_MS);
      round.killing = true;
      const inFlightAtKill = writers.filter((w) => w.inFlight).length;
      await casket.kill();
      await Promise.all(loops);
      expect(inFlightAtKill, `crash ${crash}: no write was in flight at the kill`).toBeGreaterThan(0);
      for (const [i, w] of writers.entries()) {
        expect(w.completed, `${keys[i]} completed no write before crash ${crash}`).toBeGreaterThan(crash);
        // A write may end in an error only because the kill cut it off.
        if (w.failed) expect(w.failed.afterKill, `${keys[i]} failed before crash ${crash}: ${String(w.failed.error)}`).toBe(true);
      }
      expect(writers.filter((w) => w.failed).length, `crash ${crash}: the kill cut off no write`).toBeGreaterThan(0);
      s3.destroy();
      casket = await casket.restart();
      s3 = sdk(casket.url, casket.admin);
      const listed = await s3.send(new ListObjectsV2Command({ Bucket: bucket }));
      expect(listed.Contents?.map((o) => o.Key).sort()).toEqual([...keys].sort());
      for (const [i, key] of keys.entries()) {
        const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
        expect(versions.has(head.ETag!), `${key} after crash ${crash}: unknown ETag ${head.ETag}`).toBe(true);
        // A write answered 200 survives kill -9; only the one the kill cut off may or may not have landed.
        const { acknowledged, attempt } = writers[i]!;
        expect([acknowledged, attempt], `${key} after crash ${crash}: holds ${head.ETag}, not its last acknowledged write or the one in flight`).toContain(head.ETag);
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
