/**
 * Real casket processes in front of one upstream (moto by default; Ceph RGW
 * with CASKET_TEST_UPSTREAM=rgw): the race through TWO casket processes on
 * one upstream (conditional PutObject, and conditional DeleteObject racing
 * PutObject) — only the upstream's own conditional requests, or casket's
 * per-key serialization where the upstream ignores them, can keep exactly one
 * winner; an object written directly upstream, then read, listed and
 * conditionally overwritten through casket; the upstream going down (503,
 * quickly); a client disconnecting mid-upload (nothing upstream).
 */
import { CreateBucketCommand, ListMultipartUploadsCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../../helpers/casket.js';
import { sdk } from '../../helpers/clients.js';
import { until } from '../../helpers/poll.js';
import { raw, signRequest, xmlField } from '../../helpers/raw.js';
import { relayTo, startUpstream, upstreamKindFromEnv, type Upstream } from '../../helpers/upstream.js';
import { probeCapabilities, openS3Backend, type Capabilities } from '../../../src/backends/s3/index.js';
import { UpstreamClient } from '../../../src/backends/s3/client.js';
import { createPayload } from '../../../src/auth/payload.js';
import { MemoryStateStore } from '../../../src/state/memory.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';

const quoted = (b: string | Buffer) => `"${createHash('sha256').update(b).digest('hex')}"`;
const ROUNDS = Number(process.env.CASKET_TEST_RACE_ROUNDS ?? 20);

let upstream: Upstream;
let one: RunningCasket;
let two: RunningCasket;
let direct: S3Client;
let caps: Capabilities;
const bucket = 'shared';

beforeAll(async () => {
  upstream = await startUpstream(upstreamKindFromEnv() ?? 'moto');
  one = await startCasket({ upstream });
  // The second replica uses the first one's credentials file contents: same admin key.
  two = await startCasket({ upstream });
  const client = new UpstreamClient({ url: upstream.url, accessKey: upstream.accessKey, secretKey: upstream.secretKey, region: upstream.region });
  caps = (await probeCapabilities(client)).capabilities;
  client.close();
  direct = new S3Client({ endpoint: upstream.url, region: upstream.region, forcePathStyle: true, credentials: { accessKeyId: upstream.accessKey, secretAccessKey: upstream.secretKey } });
  await sdk(one.url, one.admin).send(new CreateBucketCommand({ Bucket: bucket }));
});
afterAll(async () => {
  direct?.destroy();
  await one?.stop();
  await two?.stop();
  await upstream?.stop();
});

/** Waits (helpers/poll.ts) for a request log line after `from` that satisfies `match`: casket is done with that request. */
async function logged(casket: RunningCasket, from: number, match: (line: Record<string, unknown>) => boolean): Promise<void> {
  const parsed = (text: string): Record<string, unknown> => {
    try {
      return JSON.parse(text) as Record<string, unknown>;
    } catch {
      return {};
    }
  };
  await until(() => casket.logs.slice(from).some((text) => match(parsed(text))), 'casket to log the request');
}

/** Alternate requests between the two casket processes. */
function via(i: number): RunningCasket {
  return i % 2 === 0 ? one : two;
}

describe('two casket processes, one upstream', () => {
  it(`16 concurrent If-Match PutObject split over two caskets: exactly one 200, fifteen 412 — ${ROUNDS} rounds`, async () => {
    let current = (await raw(one.url, one.admin, { method: 'PUT', path: `/${bucket}/race-put`, body: 'start' })).headers.etag as string;
    for (let round = 0; round < ROUNDS; round++) {
      const results = await Promise.all(
        Array.from({ length: 16 }, (_, i) => raw(via(i).url, via(i).admin, { method: 'PUT', path: `/${bucket}/race-put`, headers: { 'if-match': current }, body: `round ${round} writer ${i}` })),
      );
      const winners = results.filter((r) => r.status === 200);
      expect(winners.length, `round ${round}: ${results.map((r) => r.status).join(',')}`).toBe(1);
      expect(results.filter((r) => r.status === 412).length, results.map((r) => `${r.status} ${r.status >= 500 ? r.body : ''}`).join(',')).toBe(15);
      current = winners[0]!.headers.etag as string;
      for (const [i, r] of results.entries()) {
        if (r.status === 200) {
          expect(current, `round ${round}: the winner's ETag`).toBe(quoted(`round ${round} writer ${i}`));
          continue;
        }
        expect([xmlField(r.body, 'Code'), xmlField(r.body, 'CurrentETag')], `round ${round} writer ${i}`).toEqual(['PreconditionFailed', current]);
      }
      // The stored bytes are the winner's, through either casket.
      const winner = `round ${round} writer ${results.findIndex((r) => r.status === 200)}`;
      for (const c of [one, two]) expect((await raw(c.url, c.admin, { method: 'GET', path: `/${bucket}/race-put` })).body, `round ${round}`).toBe(winner);
    }
  });

  it(`8 If-Match DeleteObject racing 8 If-Match PutObject (over two caskets where the upstream enforces If-Match on DELETE, else one): never both a delete and a put — ${ROUNDS} rounds`, async () => {
    // Where the upstream ignores If-Match on DeleteObject (Ceph RGW 16, MinIO),
    // only one casket process can make it atomic (it serializes per key);
    // replicas refuse it (next test).
    const via = (i: number) => (caps.ifMatchDelete && i % 2 === 1 ? two : one);
    for (let round = 0; round < ROUNDS; round++) {
      const path = `/${bucket}/race-delete`;
      const v = (await raw(one.url, one.admin, { method: 'PUT', path, body: `base ${round}` })).headers.etag as string;
      const results = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          i % 2 === 0
            ? raw(via(i >> 1).url, via(i >> 1).admin, { method: 'DELETE', path, headers: { 'if-match': v } }).then((r) => ({ op: 'delete', r }))
            : raw(via(i >> 1).url, via(i >> 1).admin, { method: 'PUT', path, headers: { 'if-match': v }, body: `put ${round} ${i}` }).then((r) => ({ op: 'put', r })),
        ),
      );
      const puts = results.filter((x) => x.op === 'put' && x.r.status === 200);
      const deletes = results.filter((x) => x.op === 'delete' && x.r.status === 204);
      const statuses = results.map((x) => `${x.op}:${x.r.status}`).join(',');
      // A put that won means the base version was replaced: no delete of the base may have succeeded, and vice versa.
      expect(puts.length, statuses).toBeLessThanOrEqual(1);
      if (puts.length === 1) expect(deletes.length, statuses).toBe(0);
      else expect(deletes.length, statuses).toBeGreaterThanOrEqual(1);
      for (const x of results) expect([200, 204, 404, 412], statuses).toContain(x.r.status);
      const head = await raw(two.url, two.admin, { method: 'HEAD', path });
      expect(head.status).toBe(puts.length === 1 ? 200 : 404);
      if (puts.length === 1) expect(head.headers.etag).toBe(puts[0]!.r.headers.etag);
    }
  });

  it('replicas refuse a conditional delete the upstream does not enforce (501), and allow it where it does', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'casket-replica-'));
    const b = openS3Backend({ url: upstream.url, accessKey: upstream.accessKey, secretKey: upstream.secretKey, region: upstream.region, state: new MemoryStateStore(), spoolDir: join(dir, 'spool'), replicas: true, capabilities: caps });
    try {
      const body = Buffer.from('replica');
      const v = await b.putObject(bucket, 'replica-delete', createPayload(Readable.from([body]), { auth: null, headers: { 'content-length': String(body.length) } }), { condition: { type: 'none' }, headers: {}, metadata: {} });
      const outcome = await b.deleteObject(bucket, 'replica-delete', { condition: { type: 'if-match', etags: [v.etag] } }).then(
        () => 'deleted',
        (e: { code?: string; message?: string }) => `${e.code}: ${e.message}`,
      );
      if (caps.ifMatchDelete) expect(outcome).toBe('deleted');
      else {
        expect(outcome).toMatch(/^NotImplemented: .*does not enforce If-Match on DeleteObject/);
        expect((await b.headObject(bucket, 'replica-delete'))?.etag).toBe(v.etag);
      }
    } finally {
      await b.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('an object written directly to the upstream', () => {
  it('is read, listed and conditionally overwritten through casket with its SHA-256 ETag', async () => {
    await direct.send(new PutObjectCommand({ Bucket: bucket, Key: 'direct/doc', Body: 'from elsewhere' }));
    const get = await raw(two.url, two.admin, { method: 'GET', path: `/${bucket}/direct/doc` });
    expect(get.body).toBe('from elsewhere');
    expect(get.headers.etag).toBe(quoted('from elsewhere'));
    const list = await sdk(one.url, one.admin).send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'direct/' }));
    expect(list.Contents?.map((o) => o.ETag)).toEqual([quoted('from elsewhere')]);
    const stale = await raw(one.url, one.admin, { method: 'PUT', path: `/${bucket}/direct/doc`, headers: { 'if-match': quoted('something else') }, body: 'mine' });
    expect(stale.status).toBe(412);
    expect(stale.headers.etag).toBe(quoted('from elsewhere'));
    const ok = await raw(one.url, one.admin, { method: 'PUT', path: `/${bucket}/direct/doc`, headers: { 'if-match': quoted('from elsewhere') }, body: 'mine' });
    expect(ok.status).toBe(200);
    expect(ok.headers.etag).toBe(quoted('mine'));
    // Overwritten directly again: casket never shows the indexed, now stale ETag.
    await direct.send(new PutObjectCommand({ Bucket: bucket, Key: 'direct/doc', Body: 'again elsewhere' }));
    expect((await raw(one.url, one.admin, { method: 'HEAD', path: `/${bucket}/direct/doc` })).headers.etag).toBe(quoted('again elsewhere'));
    const relist = await sdk(two.url, two.admin).send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'direct/' }));
    expect(relist.Contents?.map((o) => o.ETag)).toEqual([quoted('again elsewhere')]);
  });
});

describe('failures', () => {
  it('a client that disconnects mid-upload leaves nothing upstream (PutObject and UploadPart)', async () => {
    const size = 4 * 1024 * 1024;
    /**
     * Sends half a body and disconnects: once casket has answered 100
     * Continue (it checked the request and reads the body now) and the half
     * is written; then waits for casket to log the request's end.
     */
    const cut = async (path: string, operation: string) => {
      const { headers } = await signRequest(one.url, one.admin, { method: 'PUT', path, headers: { 'content-length': String(size), expect: '100-continue' }, payloadHash: 'UNSIGNED-PAYLOAD' });
      const u = new URL(one.url);
      const from = one.logs.length;
      await new Promise<void>((resolve, reject) => {
        const socket = connect(Number(u.port), u.hostname, () => {
          socket.write(`PUT ${path} HTTP/1.1\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n`);
        });
        socket.once('data', (answer: Buffer) => {
          if (!answer.toString().startsWith('HTTP/1.1 100 ')) reject(new Error(`expected 100 Continue, got ${answer.toString()}`));
          else socket.write(randomBytes(size / 2), () => {
            socket.destroy();
            resolve();
          });
        });
        socket.on('error', reject);
      });
      await logged(one, from, (line) => line.operation === operation && line.bucket === bucket && line.key === path.slice(bucket.length + 2).split('?')[0]);
    };
    await cut(`/${bucket}/cut/object`, 'PutObject');
    expect((await raw(one.url, one.admin, { method: 'HEAD', path: `/${bucket}/cut/object` })).status).toBe(404);
    expect((await direct.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'cut/' }))).KeyCount ?? 0).toBe(0);

    const created = await raw(one.url, one.admin, { method: 'POST', path: `/${bucket}/cut/multi?uploads` });
    const uploadId = xmlField(created.body, 'UploadId')!;
    await cut(`/${bucket}/cut/multi?partNumber=1&uploadId=${encodeURIComponent(uploadId)}`, 'UploadPart');
    const parts = await raw(one.url, one.admin, { method: 'GET', path: `/${bucket}/cut/multi?uploadId=${encodeURIComponent(uploadId)}` });
    expect(parts.status).toBe(200);
    expect(parts.body).not.toContain('<Part>');
    const uploads = await direct.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: 'cut/' }));
    expect(uploads.Uploads?.length).toBe(1);
  });

  it('an upstream that goes down gives a retryable 503, quickly', async () => {
    // Neither upstream is ours to stop here (RGW is shared): casket reaches
    // it through a relay, and cutting the relay takes it down.
    const relay = await relayTo(upstream);
    const c = await startCasket({ upstream: relay.upstream });
    try {
      const path = `/${bucket}/down/k`;
      expect((await raw(c.url, c.admin, { method: 'PUT', path, body: 'before' })).status).toBe(200);
      await relay.cut();
      const t0 = Date.now();
      const get = await raw(c.url, c.admin, { method: 'GET', path });
      const put = await raw(c.url, c.admin, { method: 'PUT', path, body: 'x' });
      expect(Date.now() - t0).toBeLessThan(10_000);
      for (const r of [get, put]) {
        expect([r.status, xmlField(r.body, 'Code')]).toEqual([503, 'ServiceUnavailable']);
        // Quickly: the refused or reset connection, not a timeout waited out.
        expect(xmlField(r.body, 'Message')).toMatch(/upstream S3 endpoint is unavailable \((ECONNREFUSED|ECONNRESET)\)/);
      }
    } finally {
      await c.stop();
      await relay.cut();
    }
    // Nothing was written while it was down.
    expect((await raw(one.url, one.admin, { method: 'GET', path: `/${bucket}/down/k` })).body).toBe('before');
  });
});
