/**
 * boto3 through casket, one python process per client (fixtures/boto3_driver.py):
 * put_object, upload_file (multipart), download_file (HEAD, then ranged GETs
 * carrying If-Match), copy (UploadPartCopy with x-amz-copy-source-if-match),
 * list_objects_v2 (encoding-type=url), its default presigned URLs (Signature
 * Version 2) for GET and PUT — over HTTP and HTTPS (where boto3
 * sends every PUT aws-chunked with a CRC32 trailer), as a person and as an
 * agent (bound key, and the x-agent-id header from the before-sign event).
 * The transfer manager cannot put a condition on its writes, so this casket
 * runs `--agent-writes read-stamp`; put_object sends IfMatch itself.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cred } from '../helpers/casket.js';
import { boto3, cleanEnv, hasPythonModule, python3, sha256File, type Boto3, type Endpoint } from '../helpers/cli-tools.js';
import { need } from '../helpers/tools.js';
import { MiB, PROTOCOLS, ROLES, multipartETag, plainETag, sha256, startClientCasket, type ClientCasket, type Role } from './harness.js';

const PART = 5 * MiB;

/**
 * boto3's default presigner as a user writes it — `boto3.client("s3",
 * endpoint_url=…, region_name="us-east-1")`, no signature_version, no config —
 * which makes Signature Version 2 URLs (`?AWSAccessKeyId=…&Signature=…&Expires=…`),
 * and urllib3 (botocore's own HTTP library) sending requests to them, as a
 * script handing the URL on would. One JSON request per stdin line:
 * `presign` → {url}; `http` → {status, etag, reason, body}.
 */
const PRESIGNER = `
import json, sys, boto3, urllib3
s = json.loads(sys.argv[1])
s3 = boto3.client("s3", endpoint_url=s["endpoint"], region_name="us-east-1",
                  aws_access_key_id=s["access_key"], aws_secret_access_key=s["secret_key"])
http = urllib3.PoolManager(ca_certs=s["ca"]) if s["ca"] else urllib3.PoolManager()
for line in sys.stdin:
    r = json.loads(line)
    if r["op"] == "presign":
        out = {"url": s3.generate_presigned_url(r["method"], Params={"Bucket": r["bucket"], "Key": r["key"]}, ExpiresIn=300)}
    else:
        body = r["body"].encode() if r.get("body") is not None else None
        res = http.request(r["method"], r["url"], body=body, headers=r.get("headers", {}), retries=False)
        out = {"status": res.status, "etag": res.headers.get("ETag"), "reason": res.headers.get("x-casket-reason"), "body": res.data.decode("utf-8", "replace")}
    print(json.dumps(out), flush=True)
`;

interface Presigner {
  url(method: 'get_object' | 'put_object', bucket: string, key: string): Promise<string>;
  send(method: 'GET' | 'PUT', url: string, options?: { body?: string; headers?: Record<string, string> }): Promise<{ status: number; etag: string | null; reason: string | null; body: string }>;
  close(): Promise<void>;
}

function presigner(endpoint: Endpoint, cred: Cred): Presigner {
  const settings = { endpoint: endpoint.url, access_key: cred.accessKeyId, secret_key: cred.secretAccessKey, ca: endpoint.caFile ?? null };
  const child = spawn(python3(), ['-c', PRESIGNER, JSON.stringify(settings)], { env: cleanEnv({ AWS_CONFIG_FILE: '/dev/null', AWS_SHARED_CREDENTIALS_FILE: '/dev/null' }), stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const exited = new Promise<void>((r) => child.once('close', () => r()));
  const call = async (request: Record<string, unknown>): Promise<any> => {
    child.stdin.write(`${JSON.stringify(request)}\n`);
    const line = await lines.next();
    if (line.done) throw new Error(`presigner ${JSON.stringify(request)}: python exited\n${stderr}`);
    return JSON.parse(line.value);
  };
  return {
    url: async (method, bucket, key) => (await call({ op: 'presign', method, bucket, key })).url,
    send: (method, url, options = {}) => call({ op: 'http', method, url, ...options }),
    close: async () => {
      child.stdin.end();
      await exited;
    },
  };
}

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

    it("boto3's default presigned URLs (Signature Version 2): PUT and GET through them", async () => {
      const pre = presigner(env.endpoint, env.cred(role));
      try {
        const key = 'presigned/a b é.txt';
        const put = await pre.url('put_object', bucket, key);
        const get = await pre.url('get_object', bucket, key);
        for (const url of [put, get]) {
          expect(url, 'boto3 default presigner form').toMatch(/\?AWSAccessKeyId=[^&]+&Signature=[^&]+&Expires=\d+$/);
          expect(url.startsWith(`${env.endpoint.url}/${bucket}/`)).toBe(true);
        }
        const v1 = `v1 through a presigned URL (${role}, ${protocol})\n`;
        // No header beyond the URL: a person's write, and an agent's first one (read-stamp: create-only).
        expect(await pre.send('PUT', put, { body: v1 }), `boto3 presigned PUT (${role}, ${protocol})`).toMatchObject({ status: 200, etag: plainETag(Buffer.from(v1)) });
        expect(await pre.send('GET', get), `boto3 presigned GET (${role}, ${protocol})`).toMatchObject({ status: 200, body: v1, etag: plainETag(Buffer.from(v1)) });
        expect((await env.head(bucket, key)).ETag).toBe(plainETag(Buffer.from(v1)));

        // Someone else replaces it. Headers a V2 signature does not cover (If-Match,
        // If-None-Match) may be added to a presigned PUT, and casket honours them.
        const v2 = await env.overwrite(bucket, key, 'v2 by someone else\n');
        const v3 = `v3 (${role})\n`;
        const stale = await pre.send('PUT', put, { body: v3, headers: { 'If-Match': plainETag(Buffer.from(v1)) } });
        expect([stale.status, stale.reason], stale.body).toEqual([412, 'precondition-failed']);
        const exists = await pre.send('PUT', put, { body: v3, headers: { 'If-None-Match': '*' } });
        expect([exists.status, exists.reason], exists.body).toEqual([412, 'precondition-failed']);
        expect((await env.head(bucket, key)).ETag, 'nothing was written').toBe(v2);
        if (role === 'person') {
          // A person's URL with no condition: last writer wins.
          expect(await pre.send('PUT', put, { body: v3 })).toMatchObject({ status: 200, etag: plainETag(Buffer.from(v3)) });
        } else {
          // The agent's URL with no condition is conditioned on its last read (v1): refused, naming it.
          const unread = await pre.send('PUT', put, { body: v3 });
          expect([unread.status, unread.reason], unread.body).toEqual([412, 'stale-read']);
          // If-Match of the version it never read: refused, naming the one it read.
          const never = await pre.send('PUT', put, { body: v3, headers: { 'If-Match': v2 } });
          expect([never.status, never.reason], never.body).toEqual([412, 'stale-read']);
          expect((await env.head(bucket, key)).ETag, 'nothing was written').toBe(v2);
          // Once it read v2 through the presigned GET, both forms write.
          expect(await pre.send('GET', get)).toMatchObject({ status: 200, etag: v2 });
          expect(await pre.send('PUT', put, { body: v3, headers: { 'If-Match': v2 } })).toMatchObject({ status: 200, etag: plainETag(Buffer.from(v3)) });
          const v4 = `v4 (${role})\n`;
          expect(await pre.send('PUT', put, { body: v4 })).toMatchObject({ status: 200, etag: plainETag(Buffer.from(v4)) });
        }
      } finally {
        await pre.close();
      }
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
