/**
 * Signature Version 2 with real clients: boto3's default
 * presigner against a custom endpoint in us-east-1 (no signature_version —
 * it produces `?AWSAccessKeyId=…&Signature=…&Expires=…`, README "Clients") for GET
 * and PUT; a tampered signature → 403 SignatureDoesNotMatch; an expired URL
 * → 403 AccessDenied; an agent-bound key signing V2 is that agent; boto3 with
 * `signature_version="s3"` (V2 header auth) for a whole object round trip.
 * Virtual-hosted style (`<bucket>.<domain>`) signs the bucket into the
 * resource. s3cmd `signature_v2 = True` runs in test/clients/s3cmd.test.ts.
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { execFileSync } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type Cred, type RunningCasket } from '../helpers/casket.js';
import { bytes, sdk } from '../helpers/clients.js';
import { cleanEnv, hasPythonModule, python3 } from '../helpers/cli-tools.js';
import { errorCode, send, signRequest, xmlField } from '../helpers/raw.js';
import { need } from '../helpers/tools.js';
import { etagOf } from '../helpers/suite.js';

const available = need('boto3 (python3)', hasPythonModule('boto3'));
const bucket = 'sigv2';
/** casket's virtual-host domain here: `<bucket>.sigv2.test` (sent as Host; the socket goes to 127.0.0.1). */
const DOMAIN = 'sigv2.test';

/**
 * boto3 as a user writes it: `boto3.client("s3", endpoint_url=…,
 * region_name="us-east-1")`, nothing else configured. Each job is a
 * presigned URL (`presign`) or, with signature_version "s3", a call signed
 * with V2 headers (`call`).
 */
const SCRIPT = `
import json, sys, boto3, hashlib
from botocore.config import Config
s = json.loads(sys.argv[1])
def client(**config):
    return boto3.client("s3", endpoint_url=s["endpoint"], region_name="us-east-1",
        aws_access_key_id=s["key"], aws_secret_access_key=s["secret"], **({"config": Config(**config)} if config else {}))
out = []
default = client()
v2 = client(signature_version="s3", s3={"addressing_style": "path"}, retries={"max_attempts": 1})
for job in s["jobs"]:
    if "presign" in job:
        out.append(default.generate_presigned_url(job["presign"], Params=job["params"], ExpiresIn=job.get("expires", 300)))
    else:
        r = getattr(v2, job["call"])(**job["params"])
        if "Body" in r and hasattr(r["Body"], "read"):
            r["Body"] = r["Body"].read().decode("utf-8", "replace")
        r.pop("ResponseMetadata", None)
        out.append(json.loads(json.dumps(r, default=str)))
print(json.dumps(out))
`;

type Job = { presign: string; params: Record<string, unknown>; expires?: number } | { call: string; params: Record<string, unknown> };

function boto3Jobs<T = unknown>(casket: RunningCasket, cred: Cred, jobs: Job[]): T[] {
  const settings = { endpoint: casket.url, key: cred.accessKeyId, secret: cred.secretAccessKey, jobs };
  const stdout = execFileSync(python3(), ['-c', SCRIPT, JSON.stringify(settings)], { env: cleanEnv({ AWS_CONFIG_FILE: '/dev/null', AWS_SHARED_CREDENTIALS_FILE: '/dev/null' }), encoding: 'utf8' });
  return JSON.parse(stdout) as T[];
}

/** Path and query of a URL, for send(). */
const target = (url: string) => {
  const u = new URL(url);
  return u.pathname + u.search;
};

describe.runIf(available)('Signature Version 2', () => {
  let casket: RunningCasket;
  beforeAll(async () => {
    casket = await startCasket({ agents: ['alice'] });
    const admin = sdk(casket.url, casket.admin);
    await admin.send(new CreateBucketCommand({ Bucket: bucket }));
    admin.destroy();
  });
  afterAll(async () => casket?.stop());

  it("boto3's default presigned URLs are V2, and a PUT and a GET through them work", async () => {
    const key = 'presigned/a b/é.txt';
    const [put, get] = boto3Jobs<string>(casket, casket.admin, [
      { presign: 'put_object', params: { Bucket: bucket, Key: key } },
      { presign: 'get_object', params: { Bucket: bucket, Key: key } },
    ]);
    expect(put, 'boto3 default presigner form').toMatch(/[?&]AWSAccessKeyId=.*&Signature=.*&Expires=\d+$/);
    const body = 'uploaded through a V2 presigned URL\n';
    const host = new URL(casket.url).host;
    const ua = { 'user-agent': 'python-requests/2.32' };
    const r = await send(casket.url, 'PUT', target(put!), { host, ...ua, 'content-length': String(Buffer.byteLength(body)) }, body);
    expect([r.status, r.body]).toEqual([200, '']);
    expect(r.headers.etag).toBe(etagOf(body));

    const g = await send(casket.url, 'GET', target(get!), { host, ...ua });
    expect([g.status, g.body, g.headers.etag]).toEqual([200, body, etagOf(body)]);

    // The SDK (SigV4) sees the same object.
    const s3 = sdk(casket.url, casket.admin);
    const o = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    expect((await bytes(o.Body)).toString()).toBe(body);
    s3.destroy();
  });

  it('a tampered signature → 403 SignatureDoesNotMatch; an expired URL → 403 AccessDenied "Request has expired"', async () => {
    const key = 'presigned/refused.txt';
    const s3 = sdk(casket.url, casket.admin);
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'x' }));
    s3.destroy();
    const [good, expired, otherKey] = boto3Jobs<string>(casket, casket.admin, [
      { presign: 'get_object', params: { Bucket: bucket, Key: key } },
      { presign: 'get_object', params: { Bucket: bucket, Key: key }, expires: -60 },
      { presign: 'get_object', params: { Bucket: bucket, Key: 'presigned/another.txt' } },
    ]);
    const host = new URL(casket.url).host;
    const ua = { 'user-agent': 'python-requests/2.32' };
    const otherSignature = /Signature=([^&]+)/.exec(otherKey!)![1]!;
    const tampered = good!.replace(/Signature=[^&]+/, `Signature=${otherSignature}`);
    const bad = await send(casket.url, 'GET', target(tampered), { host, ...ua });
    expect([bad.status, errorCode(bad.body)], bad.body).toEqual([403, 'SignatureDoesNotMatch']);
    expect(xmlField(bad.body, 'StringToSign')).toMatch(new RegExp(`^GET\n\n\n\\d+\n/${bucket}/presigned/refused.txt$`));

    const late = await send(casket.url, 'GET', target(expired!), { host, ...ua });
    expect([late.status, errorCode(late.body), xmlField(late.body, 'Message')], late.body).toEqual([403, 'AccessDenied', 'Request has expired']);

    const ok = await send(casket.url, 'GET', target(good!), { host, ...ua });
    expect([ok.status, ok.body]).toEqual([200, 'x']);
  });

  it('an agent-bound key signing V2 is that agent: its unconditional PUT → 428, its create-only PUT is its write', async () => {
    const key = 'agent/notes.txt';
    const alice = casket.agents.alice!;
    const [put] = boto3Jobs<string>(casket, alice, [{ presign: 'put_object', params: { Bucket: bucket, Key: key } }]);
    const host = new URL(casket.url).host;
    const ua = { 'user-agent': 'python-requests/2.32' };
    const unconditional = await send(casket.url, 'PUT', target(put!), { host, ...ua, 'content-length': '2' }, 'v1');
    expect([unconditional.status, errorCode(unconditional.body)], unconditional.body).toEqual([428, 'PreconditionRequired']);

    // If-None-Match is not part of a V2 signature; casket honours it as sent.
    const created = await send(casket.url, 'PUT', target(put!), { host, ...ua, 'content-length': '2', 'if-none-match': '*' }, 'v1');
    expect(created.status, created.body).toBe(200);
    const head = await send(casket.url, 'HEAD', `/${bucket}/${key}`, { host, ...ua, ...(await adminAuth(casket, 'HEAD', `/${bucket}/${key}`)) });
    expect([head.headers.etag, head.headers['x-casket-writer']]).toEqual([etagOf('v1'), 'alice']);
  });

  it('boto3 with signature_version="s3" (V2 header auth): put, head, get, list, delete, as person and as agent', async () => {
    const body = randomBytes(24).toString('hex');
    const results = boto3Jobs<Record<string, unknown>>(casket, casket.admin, [
      { call: 'put_object', params: { Bucket: bucket, Key: 'header/a.txt', Body: body, ContentType: 'text/plain', Metadata: { colour: 'blue' } } },
      { call: 'head_object', params: { Bucket: bucket, Key: 'header/a.txt' } },
      { call: 'get_object', params: { Bucket: bucket, Key: 'header/a.txt', ResponseContentDisposition: 'attachment; filename="a b.txt"' } },
      { call: 'list_objects', params: { Bucket: bucket, Prefix: 'header/' } },
      { call: 'get_object_acl', params: { Bucket: bucket, Key: 'header/a.txt' } },
      { call: 'delete_object', params: { Bucket: bucket, Key: 'header/a.txt' } },
    ]);
    const [put, head, get, list] = results as [{ ETag: string }, { ETag: string; Metadata: Record<string, string>; ContentType: string }, { Body: string; ContentDisposition: string }, { Contents: { Key: string }[] }];
    expect(put.ETag).toBe(etagOf(body));
    expect([head.ETag, head.Metadata, head.ContentType]).toEqual([etagOf(body), { colour: 'blue' }, 'text/plain']);
    expect([get.Body, get.ContentDisposition]).toEqual([body, 'attachment; filename="a b.txt"']);
    expect(list.Contents.map((c) => c.Key)).toEqual(['header/a.txt']);

    // As an agent: a create-only put is alice's write.
    const [agentPut] = boto3Jobs<{ ETag: string }>(casket, casket.agents.alice!, [{ call: 'put_object', params: { Bucket: bucket, Key: 'header/agent.txt', Body: 'by alice', IfNoneMatch: '*' } }]);
    expect(agentPut!.ETag).toBe(etagOf('by alice'));
    const host = new URL(casket.url).host;
    const ua = { 'user-agent': 'python-requests/2.32' };
    const written = await send(casket.url, 'HEAD', `/${bucket}/header/agent.txt`, { host, ...ua, ...(await adminAuth(casket, 'HEAD', `/${bucket}/header/agent.txt`)) });
    expect([written.headers.etag, written.headers['x-casket-writer']]).toEqual([etagOf('by alice'), 'alice']);
  });
});

describe.runIf(available)('Signature Version 2, virtual-hosted style', () => {
  let casket: RunningCasket;
  beforeAll(async () => {
    casket = await startCasket({ args: ['--domain', DOMAIN] });
    const admin = sdk(casket.url, casket.admin);
    await admin.send(new CreateBucketCommand({ Bucket: bucket }));
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'vhost/a b.txt', Body: 'virtual' }));
    admin.destroy();
  });
  afterAll(async () => casket?.stop());

  /** HMAC-SHA1 V2 signature, computed here as the AWS page describes (bucket first in the resource). */
  const v2 = (stringToSign: string) => createHmac('sha1', casket.admin.secretAccessKey).update(stringToSign, 'utf8').digest('base64');

  it('header auth and a presigned URL sign "/<bucket>/<key>" while the path is "/<key>"', async () => {
    const host = `${bucket}.${DOMAIN}:${casket.port}`;
    const date = new Date().toUTCString();
    const header = await send(casket.url, 'GET', '/vhost/a%20b.txt', { host, date, 'user-agent': 'v2-test', authorization: `AWS ${casket.admin.accessKeyId}:${v2(`GET\n\n\n${date}\n/${bucket}/vhost/a%20b.txt`)}` });
    expect([header.status, header.body], header.body).toEqual([200, 'virtual']);

    const expires = Math.floor(Date.now() / 1000) + 60;
    const query = `AWSAccessKeyId=${casket.admin.accessKeyId}&Expires=${expires}&Signature=${encodeURIComponent(v2(`GET\n\n\n${expires}\n/${bucket}/vhost/a%20b.txt`))}`;
    const presigned = await send(casket.url, 'GET', `/vhost/a%20b.txt?${query}`, { host, 'user-agent': 'v2-test' });
    expect([presigned.status, presigned.body], presigned.body).toEqual([200, 'virtual']);

    // Signed without the bucket (as if path style): not this request's signature.
    const wrong = await send(casket.url, 'GET', '/vhost/a%20b.txt', { host, date, 'user-agent': 'v2-test', authorization: `AWS ${casket.admin.accessKeyId}:${v2(`GET\n\n\n${date}\n/vhost/a%20b.txt`)}` });
    expect([wrong.status, errorCode(wrong.body)]).toEqual([403, 'SignatureDoesNotMatch']);
  });
});

/** SigV4 headers for an admin request. */
async function adminAuth(casket: RunningCasket, method: string, path: string): Promise<Record<string, string>> {
  const { headers } = await signRequest(casket.url, casket.admin, { method, path });
  return headers;
}
