/**
 * boto3 through casket, one python process per client (fixtures/boto3_driver.py):
 * put_object, upload_file (multipart), download_file (HEAD, then ranged GETs
 * carrying If-Match), copy (UploadPartCopy with x-amz-copy-source-if-match),
 * list_objects_v2 (encoding-type=url) — over HTTP and HTTPS (where boto3
 * sends every PUT aws-chunked with a CRC32 trailer), as a person and as an
 * agent (bound key, and the x-agent-id header from the before-sign event).
 * The transfer manager cannot put a condition on its writes, so this casket
 * runs `--agent-writes read-stamp`; put_object sends IfMatch itself.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boto3, hasPythonModule, sha256File, type Boto3 } from '../helpers/cli-tools.js';
import { need } from '../helpers/tools.js';
import { MiB, PROTOCOLS, ROLES, multipartETag, plainETag, sha256, startClientCasket, type ClientCasket, type Role } from './harness.js';

const PART = 5 * MiB;

// In CI a missing tool fails the run (need throws); elsewhere the file is skipped.
const available = need('boto3 (python3)', hasPythonModule('boto3'));

describe.runIf(available).each(PROTOCOLS)('boto3 over %s', (protocol) => {
  let env: ClientCasket;
  beforeAll(async () => {
    env = await startClientCasket(protocol, { client: 'boto3', agentWrites: 'read-stamp', buckets: ['boto3-person', 'boto3-agent'] });
  });
  afterAll(async () => env?.stop());

  describe.each(ROLES)('as %s', (role: Role) => {
    const bucket = `boto3-${role}`;
    let py: Boto3;
    const file = (name: string) => join(env.dir, `${role}-${name}`);
    beforeAll(() => {
      py = boto3(env.endpoint, env.cred(role), { partSize: PART, ...(role === 'agent' && { agent: env.agentName }) });
    });
    afterAll(async () => py?.close());

    it('put_object, upload_file (multipart), download_file (ranged GETs with If-Match), copy (UploadPartCopy): bytes and ETags', async () => {
      const small = randomBytes(20_000);
      writeFileSync(file('small.bin'), small);
      const put = await py.ok<{ etag: string }>('put_object', { bucket, key: 'data/small.bin', file: file('small.bin') });
      expect(put.etag, `boto3 (${role}, ${protocol}) put_object`).toBe(plainETag(small));

      const big = randomBytes(12 * MiB + 7);
      writeFileSync(file('big.bin'), big);
      await py.ok('upload_file', { bucket, key: 'data/big.bin', file: file('big.bin') });
      const expected = multipartETag(big, PART);
      expect((await env.head(bucket, 'data/big.bin')).ETag, `boto3 (${role}, ${protocol}) upload_file → HeadObject`).toBe(expected);
      expect((await py.ok<{ etag: string }>('head_object', { bucket, key: 'data/big.bin' })).etag).toBe(expected);

      const down = await py.ok<{ sha256: string }>('download_file', { bucket, key: 'data/big.bin', file: file('big.down') });
      expect(down.sha256, `boto3 (${role}, ${protocol}) download_file`).toBe(sha256(big));
      expect(await sha256File(file('big.down'))).toBe(sha256(big));

      await py.ok('copy', { bucket, source: 'data/big.bin', key: 'data/big-copy.bin' });
      expect((await env.head(bucket, 'data/big-copy.bin')).ETag, `boto3 (${role}, ${protocol}) copy (UploadPartCopy) → HeadObject`).toBe(expected);
      const copied = await py.ok<{ sha256: string }>('download_file', { bucket, key: 'data/big-copy.bin', file: file('copy.down') });
      expect(copied.sha256, `boto3 (${role}, ${protocol}) download_file of the copy`).toBe(sha256(big));

      const ranged = await py.ok<{ sha256: string; etag: string }>('get_object', { bucket, key: 'data/small.bin', range: 'bytes=100-199' });
      expect([ranged.sha256, ranged.etag]).toEqual([sha256(small.subarray(100, 200)), put.etag]);
    });

    it('a download_file in ranged GETs counts as a full read: the object can be replaced after it', async () => {
      const key = 'data/reread.bin';
      const v1 = randomBytes(11 * MiB);
      const v2 = randomBytes(11 * MiB + 1);
      writeFileSync(file('v1.bin'), v1);
      writeFileSync(file('v2.bin'), v2);
      await py.ok('upload_file', { bucket, key, file: file('v1.bin') });
      const other = await env.overwrite(bucket, key, v1.subarray(0, 6 * MiB));
      const down = await py.ok<{ sha256: string }>('download_file', { bucket, key, file: file('reread.down') });
      expect(down.sha256).toBe(sha256(v1.subarray(0, 6 * MiB)));
      expect((await env.head(bucket, key)).ETag).toBe(other);
      await py.ok('upload_file', { bucket, key, file: file('v2.bin') });
      expect((await env.head(bucket, key)).ETag, `boto3 (${role}, ${protocol}) upload_file after download_file`).toBe(multipartETag(v2, PART));
    });

    it('list_objects_v2 (encoding-type=url) returns keys as written, with HeadObject ETags', async () => {
      const keys = ['list/a b.txt', 'list/plus+sign', 'list/ünï cødé', 'list/amp&lt;', 'list/tab\tkey', 'list/z/deep'];
      for (const key of keys) {
        writeFileSync(file('k'), key);
        await py.ok('put_object', { bucket, key, file: file('k') });
      }
      const listed = await py.ok<{ objects: Array<{ key: string; etag: string; size: number }> }>('list_objects_v2', { bucket, prefix: 'list/', page_size: 4 });
      expect(listed.objects.map((o) => o.key), `boto3 (${role}, ${protocol}) list_objects_v2`).toEqual([...keys].sort());
      for (const o of listed.objects) expect(o.etag, `list_objects_v2 ETag of ${o.key}`).toBe((await env.head(bucket, o.key)).ETag);
    });

    it('put_object with IfMatch: a stale write raises ClientError PreconditionFailed and writes nothing', async () => {
      const key = 'cas/plan.md';
      writeFileSync(file('plan1'), '# plan v1');
      const v1 = await py.ok<{ etag: string }>('put_object', { bucket, key, file: file('plan1'), if_none_match: '*' });
      await py.ok('get_object', { bucket, key });
      const v2 = await env.overwrite(bucket, key, '# plan v2, by someone else');
      writeFileSync(file('plan3'), '# plan v3, lost');
      const stale = await py.call('put_object', { bucket, key, file: file('plan3'), if_match: v1.etag });
      expect(stale.error, `boto3 (${role}, ${protocol}) put_object IfMatch stale: ${JSON.stringify(stale)}`).toMatchObject({ type: 'ClientError', code: 'PreconditionFailed', status: 412, etag: v2 });
      expect((await env.head(bucket, key)).ETag, 'nothing was written').toBe(v2);
    });
  });
});
