/**
 * POST /_casket/commit attacked on purpose: a key whose policy covers some of
 * a changeset's keys, or another bucket, writes none of it (each entry is
 * authorized with that request's caller, commit.ts); a body that stops
 * arriving is answered 408 and a client that hangs up mid-body leaves nothing
 * written, nothing staged and no key held (body-timeout.ts, endpoint.ts).
 */
import { existsSync, readdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { CreateBucketCommand, GetObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { commit, multipart } from '../helpers/changeset.js';
import { bytes, sdk } from '../helpers/clients.js';
import { signRequest } from '../helpers/raw.js';
import { until } from '../helpers/poll.js';

const IDLE_MS = 500;
const bucket = 'guarded';
const other = 'elsewhere';
let casket: RunningCasket;

beforeAll(async () => {
  casket = await startCasket({
    args: ['--body-timeout-ms', String(IDLE_MS)],
    keys: {
      pubOnly: {
        policy: {
          Statement: [
            { Effect: 'Allow', Action: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'], Resource: `arn:aws:s3:::${bucket}/pub/*` },
            { Effect: 'Allow', Action: 's3:ListBucket', Resource: `arn:aws:s3:::${bucket}` },
          ],
        },
      },
    },
  });
  const admin = sdk(casket.url, casket.admin);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  await admin.send(new CreateBucketCommand({ Bucket: other }));
});
afterAll(async () => casket?.stop());

async function content(b: string, key: string): Promise<string | undefined> {
  try {
    return (await bytes((await sdk(casket.url, casket.admin).send(new GetObjectCommand({ Bucket: b, Key: key }))).Body)).toString();
  } catch (e) {
    if ((e as { name?: string }).name === 'NoSuchKey') return undefined;
    throw e;
  }
}

/** What is staged in the data dir: changesets not yet landed or discarded (intent.ts). */
const staged = (): string[] => {
  const dir = join(casket.dataDir, 'changesets');
  return existsSync(dir) ? readdirSync(dir) : [];
};

/**
 * Sends a signed commit's head and the first `sendBytes` of its body on a raw
 * socket, then nothing (or hangs up when `hangUp`); resolves with what casket
 * sent before it closed.
 */
async function partial(key: string, sendBytes: number, hangUp: boolean): Promise<string> {
  const { body, contentType } = multipart([{ key, body: Buffer.alloc(256 * 1024, 'x'), 'if-none-match': '*' }]);
  const { headers, path } = await signRequest(casket.url, casket.admin, { method: 'POST', path: `/_casket/commit?bucket=${bucket}`, headers: { 'content-type': contentType, 'content-length': String(body.length) }, payloadHash: 'UNSIGNED-PAYLOAD' });
  const head = [`POST ${path} HTTP/1.1`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), '', ''].join('\r\n');
  const u = new URL(casket.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(u.port), u.hostname);
    let answer = '';
    const timer = setTimeout(() => socket.destroy(), 5000);
    socket.on('data', (d: Buffer) => (answer += d.toString()));
    socket.on('error', reject);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(answer);
    });
    socket.write(head);
    socket.write(body.subarray(0, sendBytes), () => {
      // Long enough for casket to stage what came: the hang-up then cuts a body being written.
      if (hangUp) setTimeout(() => socket.destroy(), 200);
    });
  });
}

describe('POST /_casket/commit, attacked', () => {
  it("a key allowed pub/* only: a changeset with one key outside it is 403 AccessDenied, and none of it is written", async () => {
    const r = await commit(casket.url, casket.keys.pubOnly!, bucket, [
      { key: 'pub/ok.txt', body: 'allowed', 'if-none-match': '*' },
      { key: 'secret/plan.txt', body: 'not allowed', 'if-none-match': '*' },
    ]);
    expect(r.status, JSON.stringify(r.json)).toBe(403);
    expect(r.json.error).toBe('AccessDenied');
    expect([await content(bucket, 'pub/ok.txt'), await content(bucket, 'secret/plan.txt')]).toEqual([undefined, undefined]);
    // The same key's changeset inside its policy lands: the refusal was the policy's.
    const fine = await commit(casket.url, casket.keys.pubOnly!, bucket, [{ key: 'pub/ok.txt', body: 'allowed', 'if-none-match': '*' }]);
    expect(fine.status, JSON.stringify(fine.json)).toBe(200);
  });

  it("the same key in another bucket: 403 AccessDenied, nothing written there", async () => {
    const r = await commit(casket.url, casket.keys.pubOnly!, other, [{ key: 'pub/ok.txt', body: 'not here', 'if-none-match': '*' }]);
    expect(r.status, JSON.stringify(r.json)).toBe(403);
    expect(r.json.error).toBe('AccessDenied');
    expect(await content(other, 'pub/ok.txt')).toBeUndefined();
  });

  it('a body that stops arriving: 408 after the body timeout, nothing written, nothing staged, the key free', async () => {
    const answer = await partial('slow.txt', 64 * 1024, false);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(answer).toContain('"RequestTimeout"');
    expect(await content(bucket, 'slow.txt')).toBeUndefined();
    await until(() => staged().length === 0, 'the stalled changeset to be discarded');
    const next = await commit(casket.url, casket.admin, bucket, [{ key: 'slow.txt', body: 'whole', 'if-none-match': '*' }]);
    expect(next.status, JSON.stringify(next.json)).toBe(200);
  });

  it('a client that hangs up mid-body: nothing written, nothing staged, the key free', async () => {
    await partial('cut.txt', 100 * 1024, true);
    expect(await content(bucket, 'cut.txt')).toBeUndefined();
    await until(() => staged().length === 0, 'the cut changeset to be discarded');
    const next = await commit(casket.url, casket.admin, bucket, [{ key: 'cut.txt', body: 'whole', 'if-none-match': '*' }]);
    expect(next.status, JSON.stringify(next.json)).toBe(200);
  });
});
