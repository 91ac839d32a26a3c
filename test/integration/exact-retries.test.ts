/**
 * docs/design.md §3 through a real casket: a failed condition is a 412 whatever the
 * bytes — the counter that two writers both move from "10" to "11" — and
 * the one exception, an exact retry (same access key, same
 * amz-sdk-invocation-id) of the write that made the current version, which
 * real SDKs send after a lost answer: a proxy that cuts the connection once
 * casket has committed stands in for the network.
 */
import {
  CompleteMultipartUploadCommand, CreateMultipartUploadCommand, DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { introspect } from '../helpers/agents.js';
import { startCasket, type Cred, type RunningCasket } from '../helpers/casket.js';
import { cleanEnv, hasPythonModule, python3 } from '../helpers/cli-tools.js';
import { bytes, failure, sdk } from '../helpers/clients.js';
import { lossyProxy, type LossyProxy } from '../helpers/lossy-proxy.js';
import { raw, xmlField } from '../helpers/raw.js';
import { etagOf } from '../helpers/suite.js';
import { need } from '../helpers/tools.js';

const bucket = 'retries';
let casket: RunningCasket;
let stamped: RunningCasket;
let proxy: LossyProxy;
const clients: S3Client[] = [];

function client(url: string, cred: Cred, retries = 1): S3Client {
  const c = sdk(url, cred, { retries });
  clients.push(c);
  return c;
}

beforeAll(async () => {
  [casket, stamped] = await Promise.all([startCasket({ agents: ['alice', 'bob'] }), startCasket({ agents: ['alice', 'bob'], args: ['--agent-writes', 'read-stamp'] })]);
  for (const c of [casket, stamped]) await raw(c.url, c.admin, { method: 'PUT', path: `/${bucket}` });
  proxy = await lossyProxy(casket.url);
});

afterAll(async () => {
  for (const c of clients) c.destroy();
  await proxy?.close();
  await Promise.all([casket?.stop(), stamped?.stop()]);
});

async function read(s3: S3Client, key: string): Promise<{ etag: string; body: string }> {
  const r = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return { etag: r.ETag!, body: (await bytes(r.Body)).toString() };
}

async function writesOf(c: RunningCasket, key: string): Promise<Array<{ operation: string; agent?: string; previousETag?: string; newETag?: string }>> {
  const log = await introspect(c.url, c.admin, `/_casket/writes?bucket=${bucket}&key=${key}`);
  expect(log.status).toBe(200);
  return log.body.writes;
}

describe('the counter: two writers read "10", both write "11"', () => {
  it('with a person\'s key: the second If-Match is a 412 that says the bytes are identical and who wrote them', async () => {
    const s3 = client(casket.url, casket.admin);
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'counter-person', Body: '10' }));
    const [a, b] = await Promise.all([read(s3, 'counter-person'), read(s3, 'counter-person')]);
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'counter-person', Body: String(Number(a.body) + 1), IfMatch: a.etag }));
    const second = await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}/counter-person`, headers: { 'if-match': b.etag }, body: String(Number(b.body) + 1) });
    expect(second.status).toBe(412);
    expect(xmlField(second.body, 'Code')).toBe('PreconditionFailed');
    expect(second.headers.etag).toBe(etagOf('11'));
    expect(second.headers['x-casket-identical-content']).toBe('true');
    // Named by the person's access key, as the write log names the write.
    expect(xmlField(second.body, 'Message')).toContain(`byte-for-byte what you sent (written by access key "${casket.admin.accessKeyId}" at `);
    expect(second.headers['x-casket-writer-access-key']).toBe(casket.admin.accessKeyId);
    expect((await writesOf(casket, 'counter-person')).map((w) => w.newETag)).toEqual([etagOf('11'), etagOf('10')]);
  });

  it('with bound agent keys: bob gets 412 naming alice', async () => {
    const admin = client(casket.url, casket.admin);
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'counter-agents', Body: '10' }));
    const alice = client(casket.url, casket.agents.alice!);
    const bob = client(casket.url, casket.agents.bob!);
    const [a, b] = await Promise.all([read(alice, 'counter-agents'), read(bob, 'counter-agents')]);
    await alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'counter-agents', Body: '11', IfMatch: a.etag }));
    expect(await failure(bob.send(new PutObjectCommand({ Bucket: bucket, Key: 'counter-agents', Body: '11', IfMatch: b.etag })))).toMatchObject({ status: 412 });
    const again = await raw(casket.url, casket.agents.bob!, { method: 'PUT', path: `/${bucket}/counter-agents`, headers: { 'if-match': b.etag }, body: '11' });
    expect(again.status).toBe(412);
    expect(again.headers['x-casket-writer']).toBe('alice');
    expect(again.headers['x-casket-identical-content']).toBe('true');
    expect(xmlField(again.body, 'Message')).toMatch(/written by agent "alice"/);
    expect((await read(admin, 'counter-agents')).body).toBe('11');
  });

  it('under --agent-writes read-stamp (no If-Match sent): bob gets 412 stale-read', async () => {
    const admin = client(stamped.url, stamped.admin);
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'counter', Body: '10' }));
    const alice = client(stamped.url, stamped.agents.alice!);
    const bob = client(stamped.url, stamped.agents.bob!);
    await Promise.all([read(alice, 'counter'), read(bob, 'counter')]);
    await alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'counter', Body: '11' }));
    const second = await raw(stamped.url, stamped.agents.bob!, { method: 'PUT', path: `/${bucket}/counter`, body: '11' });
    expect(second.status).toBe(412);
    expect(second.headers['x-casket-reason']).toBe('stale-read');
    expect(second.headers['x-casket-identical-content']).toBe('true');
  });
});

describe('an agent cannot overwrite what it never read', () => {
  it('If-Match with an ETag from a HEAD or a listing → 412 not-read; after a GET it writes; If-None-Match: * creates without a read', async () => {
    const admin = client(casket.url, casket.admin);
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'unread', Body: 'theirs' }));
    const bob = client(casket.url, casket.agents.bob!);
    const head = await bob.send(new HeadObjectCommand({ Bucket: bucket, Key: 'unread' }));
    const blind = await raw(casket.url, casket.agents.bob!, { method: 'PUT', path: `/${bucket}/unread`, headers: { 'if-match': head.ETag! }, body: 'mine' });
    expect(blind.status).toBe(412);
    expect(blind.headers['x-casket-reason']).toBe('not-read');
    const blindDelete = await raw(casket.url, casket.agents.bob!, { method: 'DELETE', path: `/${bucket}/unread`, headers: { 'if-match': head.ETag! } });
    expect(blindDelete.status).toBe(412);
    expect(blindDelete.headers['x-casket-reason']).toBe('not-read');
    expect((await read(admin, 'unread')).body).toBe('theirs');
    const { etag } = await read(bob, 'unread');
    await bob.send(new PutObjectCommand({ Bucket: bucket, Key: 'unread', Body: 'mine', IfMatch: etag }));
    await bob.send(new PutObjectCommand({ Bucket: bucket, Key: 'fresh', Body: 'new', IfNoneMatch: '*' }));
    expect((await read(admin, 'unread')).body).toBe('mine');
  });
});

describe('exact retries: the same key and invocation id as the write that made the current version', () => {
  it('a repeated request is answered as the first one; another invocation, another key or other bytes get 412', async () => {
    const admin = client(casket.url, casket.admin);
    const v1 = await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'exact', Body: 'one' }));
    const put = (cred: Cred, invocation: string, body: string) =>
      raw(casket.url, cred, { method: 'PUT', path: `/${bucket}/exact`, headers: { 'if-match': v1.ETag!, 'amz-sdk-invocation-id': invocation }, body });
    const first = await put(casket.admin, 'inv-1', 'two');
    expect(first.status).toBe(200);
    const retry = await put(casket.admin, 'inv-1', 'two');
    expect(retry.status).toBe(200);
    expect(retry.headers.etag).toBe(first.headers.etag);
    const otherCall = await put(casket.admin, 'inv-2', 'two');
    expect(otherCall.status).toBe(412);
    expect(otherCall.headers['x-casket-identical-content']).toBe('true');
    expect((await put(casket.agents.bob!, 'inv-1', 'two')).status).toBe(412);
    expect((await put(casket.admin, 'inv-1', 'TWO')).status).toBe(412);
    // One write in the log: the retry changed nothing.
    expect((await writesOf(casket, 'exact')).map((w) => w.newETag)).toEqual([etagOf('two'), etagOf('one')]);
  });

  it('AWS SDK for JavaScript v3: a PutObject whose answer is lost is retried and gets 200, one write in the log', async () => {
    const admin = client(casket.url, casket.admin);
    const v1 = await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'lost-js', Body: 'one' }));
    const through = client(proxy.url, casket.admin, 3);
    const before = proxy.lost;
    proxy.loseNext();
    const put = await through.send(new PutObjectCommand({ Bucket: bucket, Key: 'lost-js', Body: 'two', IfMatch: v1.ETag }));
    expect(proxy.lost).toBe(before + 1);
    expect(put.ETag).toBe(etagOf('two'));
    expect(put.$metadata.attempts).toBe(2);
    expect((await writesOf(casket, 'lost-js')).map((w) => w.newETag)).toEqual([etagOf('two'), etagOf('one')]);
  });

  it('an agent\'s PutObject and DeleteObject whose answers are lost are retried and succeed', async () => {
    const admin = client(casket.url, casket.admin);
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'lost-agent', Body: 'one' }));
    const alice = client(proxy.url, casket.agents.alice!, 3);
    const { etag } = await read(alice, 'lost-agent');
    proxy.loseNext();
    const put = await alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'lost-agent', Body: 'two', IfMatch: etag }));
    expect(put.ETag).toBe(etagOf('two'));
    expect(put.$metadata.attempts).toBe(2);
    proxy.loseNext();
    const del = await alice.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'lost-agent', IfMatch: put.ETag }));
    expect(del.$metadata.httpStatusCode).toBe(204);
    expect(del.$metadata.attempts).toBe(2);
    expect(await failure(admin.send(new HeadObjectCommand({ Bucket: bucket, Key: 'lost-agent' })))).toMatchObject({ status: 404 });
    expect((await writesOf(casket, 'lost-agent')).map((w) => [w.operation, w.agent ?? 'person'])).toEqual([
      ['DeleteObject', 'alice'],
      ['PutObject', 'alice'],
      ['PutObject', 'person'],
    ]);
  });
});

describe('CompleteMultipartUpload after a lost answer', () => {
  it('the SDK\'s retry of the completion answers as the first did (200, the same ETag), and a third repeat too', async () => {
    const through = client(proxy.url, casket.admin, 3);
    const parts = [randomBytes(5 << 20), randomBytes(1024)];
    const { UploadId } = await through.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'lost-complete' }));
    const etags: string[] = [];
    for (const [i, part] of parts.entries()) etags.push((await through.send(new UploadPartCommand({ Bucket: bucket, Key: 'lost-complete', UploadId, PartNumber: i + 1, Body: part }))).ETag!);
    const complete = new CompleteMultipartUploadCommand({ Bucket: bucket, Key: 'lost-complete', UploadId, MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) } });
    proxy.loseNext();
    const done = await through.send(complete);
    expect(done.$metadata.attempts).toBe(2);
    // docs/design.md §2: SHA-256 of the concatenated part digests, -N.
    const composite = createHash('sha256').update(Buffer.concat(parts.map((p) => createHash('sha256').update(p).digest()))).digest('hex');
    expect(done.ETag).toBe(`"${composite}-2"`);
    const again = await client(casket.url, casket.admin).send(complete);
    expect(again.ETag).toBe(done.ETag);
    const got = await client(casket.url, casket.admin).send(new GetObjectCommand({ Bucket: bucket, Key: 'lost-complete' }));
    expect(got.ETag).toBe(done.ETag);
    expect((await bytes(got.Body)).equals(Buffer.concat(parts))).toBe(true);
  });
});

const haveBoto3 = need('python3 with boto3', hasPythonModule('boto3'));

/** boto3 (botocore's standard retry mode, 3 attempts) puts once through the proxy; prints the answer as JSON. */
const BOTO3_PUT = `
import json, sys
import boto3
from botocore.config import Config
a = json.loads(sys.argv[1])
s3 = boto3.client("s3", endpoint_url=a["url"], aws_access_key_id=a["key"], aws_secret_access_key=a["secret"], region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3, "mode": "standard"}))
r = s3.put_object(Bucket=a["bucket"], Key=a["object"], Body=a["body"].encode(), IfMatch=a["if_match"])
print(json.dumps({"etag": r["ETag"], "attempts": r["ResponseMetadata"]["RetryAttempts"] + 1}))
`;

describe.runIf(haveBoto3)('exact retries with boto3', () => {
  it('a put_object whose answer is lost is retried by botocore and gets 200', async () => {
    const admin = client(casket.url, casket.admin);
    const v1 = await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'lost-boto3', Body: 'one' }));
    proxy.loseNext();
    const args = { url: proxy.url, key: casket.admin.accessKeyId, secret: casket.admin.secretAccessKey, bucket, object: 'lost-boto3', body: 'two', if_match: v1.ETag };
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn(python3(), ['-c', BOTO3_PUT, JSON.stringify(args)], { env: cleanEnv({ AWS_CONFIG_FILE: '/dev/null', AWS_SHARED_CREDENTIALS_FILE: '/dev/null' }) });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.once('close', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`boto3 exited ${code}: ${stderr}`))));
    });
    expect(JSON.parse(out)).toEqual({ etag: etagOf('two'), attempts: 2 });
    expect((await writesOf(casket, 'lost-boto3')).map((w) => w.newETag)).toEqual([etagOf('two'), etagOf('one')]);
  });
});
