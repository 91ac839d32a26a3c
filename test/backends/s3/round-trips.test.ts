/**
 * The `s3` backend's round trips to the upstream, counted against a real
 * moto: a PutObject whose SHA-256 and length are declared streams straight
 * through (no spool) yet commits nothing when the body fails a check; small
 * bodies stay in memory.
 */
import { S3Client } from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPayload } from '../../../src/auth/payload.js';
import { openS3Backend, type S3Backend } from '../../../src/backends/s3/index.js';
import { type Payload, type PutObjectOptions } from '../../../src/backends/types.js';
import { MemoryStateStore } from '../../../src/state/memory.js';
import { DEFAULT_STATE_LIMITS } from '../../../src/state/types.js';
import { startMoto, type Upstream } from '../../helpers/upstream.js';

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

async function bytes(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

let moto: Upstream;
let direct: S3Client;
const dirs: string[] = [];
const backends: S3Backend[] = [];

/** A backend whose upstream requests are counted by method. */
function counted(): { b: S3Backend; calls: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'casket-s3-rt-'));
  dirs.push(dir);
  const calls: string[] = [];
  const b = openS3Backend({
    url: moto.url,
    accessKey: moto.accessKey,
    secretKey: moto.secretKey,
    region: moto.region,
    state: new MemoryStateStore(DEFAULT_STATE_LIMITS),
    spoolDir: join(dir, 'spool'),
    // Configured, so no probe requests are counted.
    capabilities: { ifMatchPut: 'quoted', ifNoneMatchPut: true, ifMatchDelete: true, ifMatchComplete: false, ifNoneMatchComplete: true },
    observe: (method) => calls.push(method),
  });
  backends.push(b);
  return { b, calls };
}

beforeAll(async () => {
  moto = await startMoto();
  direct = new S3Client({ endpoint: moto.url, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: moto.accessKey, secretAccessKey: moto.secretKey } });
});
afterAll(async () => {
  direct?.destroy();
  for (const b of backends) await b.close();
  await moto?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
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
    const source = new Readable({ read() {} });
    source.push(body.subarray(0, body.length / 2));
    setTimeout(() => source.destroy(new Error('client went away')), 20);
    const broken = createPayload(source, { auth: null, headers: { 'content-length': String(body.length), 'x-amz-content-sha256': sha(body) } });
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
