/**
 * minio (npm) through casket: putObject, fPutObject of a multipart-sized file
 * (minio-js numbers its parts from 2 — README "Clients"), getObject,
 * getPartialObject, listObjectsV2, statObject — over HTTP and HTTPS, as a
 * person and as an agent. minio-js cannot put a condition on the
 * CompleteMultipartUpload of fPutObject, so this casket runs
 * `--agent-writes read-stamp`; its putObject passes If-Match / If-None-Match
 * through as headers.
 */
import * as Minio from 'minio';
import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Agent as HttpsAgent } from 'node:https';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cred } from '../helpers/casket.js';
import { testTls } from '../helpers/tls.js';
import { MiB, PROTOCOLS, ROLES, multipartETag, plainETag, sha256, startClientCasket, type ClientCasket, type Role } from './harness.js';

const PART = 5 * MiB;

function minioClient(env: ClientCasket, cred: Cred): Minio.Client {
  const u = new URL(env.endpoint.url);
  const https = u.protocol === 'https:';
  return new Minio.Client({
    endPoint: u.hostname,
    port: Number(u.port),
    useSSL: https,
    accessKey: cred.accessKeyId,
    secretKey: cred.secretAccessKey,
    region: 'us-east-1',
    pathStyle: true,
    partSize: PART,
    ...(https && { transportAgent: new HttpsAgent({ ca: testTls().ca, keepAlive: true }) }),
  });
}

async function drain(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** minio-js reports ETags unquoted. */
const unquoted = (etag: string | undefined) => etag?.replace(/"/g, '');

async function minioError(p: Promise<unknown>): Promise<{ code?: string; message: string }> {
  try {
    await p;
  } catch (e) {
    return { code: (e as { code?: string }).code, message: (e as Error).message };
  }
  throw new Error('expected the minio-js call to fail, it succeeded');
}

describe.each(PROTOCOLS)('minio-js over %s', (protocol) => {
  let env: ClientCasket;
  beforeAll(async () => {
    env = await startClientCasket(protocol, { client: 'minio', agentWrites: 'read-stamp', buckets: ['minio-person', 'minio-agent'] });
  });
  afterAll(async () => env?.stop());

  describe.each(ROLES)('as %s', (role: Role) => {
    const bucket = `minio-${role}`;
    const who = (call: string) => `minio-js (${role}, ${protocol}) ${call}`;
    let mc: Minio.Client;
    beforeAll(() => {
      mc = minioClient(env, env.cred(role));
    });

    it('putObject, fPutObject (multipart, parts from 2), getObject, getPartialObject, statObject, listObjectsV2', async () => {
      const small = randomBytes(10_000);
      const put = await mc.putObject(bucket, 'files/small.bin', small, small.length, { 'Content-Type': 'application/octet-stream' });
      expect(put.etag, who('putObject')).toBe(unquoted(plainETag(small)));

      const big = randomBytes(12 * MiB + 1);
      const file = join(env.dir, `${role}-big.bin`);
      writeFileSync(file, big);
      const fput = await mc.fPutObject(bucket, 'files/big.bin', file, {});
      const expected = multipartETag(big, PART);
      expect(fput.etag, who('fPutObject')).toBe(unquoted(expected));
      expect((await env.head(bucket, 'files/big.bin')).ETag, 'HeadObject after fPutObject').toBe(expected);

      for (const [key, data] of [['files/small.bin', small], ['files/big.bin', big]] as const) {
        const stat = await mc.statObject(bucket, key);
        expect([stat.size, stat.etag], who(`statObject ${key}`)).toEqual([data.length, unquoted((await env.head(bucket, key)).ETag)]);
        expect(sha256(await drain(await mc.getObject(bucket, key))), who(`getObject ${key}`)).toBe(sha256(data));
      }
      const partial = await drain(await mc.getPartialObject(bucket, 'files/big.bin', 5 * MiB - 10, 20));
      expect(sha256(partial), who('getPartialObject')).toBe(sha256(big.subarray(5 * MiB - 10, 5 * MiB + 10)));

      const listed: Array<[string | undefined, string | undefined, number]> = [];
      for await (const item of mc.listObjectsV2(bucket, 'files/', true) as AsyncIterable<Minio.BucketItem>) listed.push([item.name, unquoted(item.etag), item.size]);
      expect(listed, who('listObjectsV2')).toEqual([
        ['files/big.bin', unquoted(expected), big.length],
        ['files/small.bin', unquoted(plainETag(small)), small.length],
      ]);
    });

    it('putObject with If-Match: a stale write fails PreconditionFailed and writes nothing', async () => {
      const key = 'cas/config.json';
      const v1 = await mc.putObject(bucket, key, Buffer.from('{"v":1}'), 7, { 'If-None-Match': '*' });
      const created = createHash('sha256').update('{"v":1}').digest('hex');
      expect(v1.etag).toBe(created);
      expect((await drain(await mc.getObject(bucket, key))).toString()).toBe('{"v":1}');
      const v2 = await env.overwrite(bucket, key, '{"v":2,"by":"someone else"}');
      const stale = await minioError(mc.putObject(bucket, key, Buffer.from('{"v":"lost"}'), 12, { 'If-Match': `"${v1.etag}"` }));
      expect(stale.code, who(`putObject If-Match stale: ${stale.message}`)).toBe('PreconditionFailed');
      expect((await env.head(bucket, key)).ETag, 'nothing was written').toBe(v2);
    });
  });
});
