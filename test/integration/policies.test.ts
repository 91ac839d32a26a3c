/**
 * Per-key policies (docs/design.md §7): a key allowed `policies/agents/alice/*`
 * reads and writes there and gets 403 AccessDenied everywhere else — GET, PUT,
 * DELETE, CopyObject both ways, DeleteObjects with a mixed list, multipart,
 * listings outside its prefix, ListBuckets, bucket deletion — and a Deny beats
 * an Allow. A read-only reviewer reads and cannot write; a key without a
 * policy keeps full rights. Refusals are logged with action and resource and
 * counted in the metrics by reason.
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListBucketsCommand,
  ListObjectsV2Command,
  ListPartsCommand,
  PutObjectCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { bytes, failure, sdk } from '../helpers/clients.js';
import { signRequest } from '../helpers/raw.js';
import { until } from '../helpers/poll.js';

const bucket = 'policies';
const other = 'policies-elsewhere';
const arn = (path: string) => `arn:aws:s3:::${path}`;

const ALICE_POLICY = {
  Version: '2012-10-17',
  Statement: [
    { Sid: 'OwnPrefix', Effect: 'Allow', Action: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject', 's3:AbortMultipartUpload', 's3:ListMultipartUploadParts'], Resource: arn(`${bucket}/agents/alice/*`) },
    { Sid: 'ListOwnPrefix', Effect: 'Allow', Action: 's3:ListBucket', Resource: arn(bucket), Condition: { StringLike: { 's3:prefix': ['agents/alice/', 'agents/alice/*'] } } },
    { Effect: 'Allow', Action: 's3:ListAllMyBuckets', Resource: '*' },
    { Sid: 'NotThePrivateFolder', Effect: 'Deny', Action: 's3:*', Resource: arn(`${bucket}/agents/alice/private/*`) },
  ],
};

const REVIEWER_POLICY = {
  Statement: [{ Effect: 'Allow', Action: ['s3:Get*', 's3:List*'], Resource: [arn(bucket), arn(`${bucket}/*`)] }],
};

let casket: RunningCasket;
let admin: S3Client;
let alice: S3Client;
let reviewer: S3Client;
let legacy: S3Client;

async function denied(p: Promise<unknown>): Promise<void> {
  const f = await failure(p);
  expect({ name: f.name, status: f.status }).toEqual({ name: 'AccessDenied', status: 403 });
}

async function put(client: S3Client, key: string, body: string, b = bucket): Promise<string> {
  return (await client.send(new PutObjectCommand({ Bucket: b, Key: key, Body: body, IfNoneMatch: '*' }))).ETag!;
}

async function read(client: S3Client, key: string, b = bucket): Promise<string> {
  return (await bytes((await client.send(new GetObjectCommand({ Bucket: b, Key: key }))).Body)).toString();
}

beforeAll(async () => {
  casket = await startCasket({
    keys: {
      alice: { agent: 'alice', policy: ALICE_POLICY },
      reviewer: { policy: REVIEWER_POLICY },
      legacy: {},
    },
  });
  admin = sdk(casket.url, casket.admin);
  alice = sdk(casket.url, casket.keys.alice!);
  reviewer = sdk(casket.url, casket.keys.reviewer!);
  legacy = sdk(casket.url, casket.keys.legacy!);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  await admin.send(new CreateBucketCommand({ Bucket: other }));
  await put(admin, 'shared/readme.md', 'shared');
  await put(admin, 'agents/bob/notes.md', 'bob');
  await put(admin, 'agents/alice/private/key', 'secret');
  await put(admin, 'x', 'elsewhere', other);
});
afterAll(async () => {
  for (const c of [admin, alice, reviewer, legacy]) c?.destroy();
  await casket?.stop();
});

describe('a key limited to its prefix', () => {
  it('reads, writes and deletes inside it (still as agent alice: conditional writes)', async () => {
    const etag = await put(alice, 'agents/alice/notes.md', 'v1');
    expect(await read(alice, 'agents/alice/notes.md')).toBe('v1');
    const head = await alice.send(new HeadObjectCommand({ Bucket: bucket, Key: 'agents/alice/notes.md' }));
    expect(head.ETag).toBe(etag);
    const v2 = (await alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'agents/alice/notes.md', Body: 'v2', IfMatch: etag }))).ETag!;
    // The agent rules still hold under a policy: an unconditional write is 428.
    const f = await failure(alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'agents/alice/notes.md', Body: 'v3' })));
    expect(f.status).toBe(428);
    await alice.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'agents/alice/notes.md', IfMatch: v2 }));
  });

  it('gets 403 AccessDenied for GET, HEAD, PUT and DELETE elsewhere', async () => {
    await denied(alice.send(new GetObjectCommand({ Bucket: bucket, Key: 'shared/readme.md' })));
    await denied(alice.send(new GetObjectCommand({ Bucket: bucket, Key: 'agents/bob/notes.md' })));
    await denied(alice.send(new GetObjectCommand({ Bucket: other, Key: 'x' })));
    const head = await failure(alice.send(new HeadObjectCommand({ Bucket: bucket, Key: 'shared/readme.md' })));
    expect(head.status).toBe(403);
    await denied(alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'shared/alice-was-here', Body: 'x', IfNoneMatch: '*' })));
    await denied(alice.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'agents/bob/notes.md' })));
    // Nothing changed.
    expect(await read(admin, 'agents/bob/notes.md')).toBe('bob');
    expect((await failure(admin.send(new HeadObjectCommand({ Bucket: bucket, Key: 'shared/alice-was-here' })))).status).toBe(404);
  });

  it('Deny beats Allow: the private folder inside its prefix is refused', async () => {
    await denied(alice.send(new GetObjectCommand({ Bucket: bucket, Key: 'agents/alice/private/key' })));
    await denied(alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'agents/alice/private/new', Body: 'x', IfNoneMatch: '*' })));
  });

  it('copies inside its prefix, and neither out of it nor into it from elsewhere', async () => {
    await put(alice, 'agents/alice/src.txt', 'copy me');
    const copied = await alice.send(new CopyObjectCommand({ Bucket: bucket, Key: 'agents/alice/dst.txt', CopySource: `${bucket}/agents/alice/src.txt`, IfNoneMatch: '*' }));
    expect(copied.CopyObjectResult?.ETag).toBeDefined();
    expect(await read(alice, 'agents/alice/dst.txt')).toBe('copy me');
    // Out: reading the source is allowed, writing the destination is not.
    await denied(alice.send(new CopyObjectCommand({ Bucket: bucket, Key: 'shared/stolen.txt', CopySource: `${bucket}/agents/alice/src.txt`, IfNoneMatch: '*' })));
    // In: writing the destination is allowed, reading the source is not.
    await denied(alice.send(new CopyObjectCommand({ Bucket: bucket, Key: 'agents/alice/bob-notes.md', CopySource: `${bucket}/agents/bob/notes.md`, IfNoneMatch: '*' })));
    await denied(alice.send(new CopyObjectCommand({ Bucket: bucket, Key: 'agents/alice/from-other', CopySource: `${other}/x`, IfNoneMatch: '*' })));
    expect((await failure(admin.send(new HeadObjectCommand({ Bucket: bucket, Key: 'shared/stolen.txt' })))).status).toBe(404);
    expect((await failure(admin.send(new HeadObjectCommand({ Bucket: bucket, Key: 'agents/alice/bob-notes.md' })))).status).toBe(404);
  });

  it('DeleteObjects: keys inside are deleted, each key outside is its own AccessDenied error', async () => {
    const mine = await put(alice, 'agents/alice/batch.txt', 'batch');
    const result = await alice.send(
      new DeleteObjectsCommand({
        Bucket: bucket,
        Delete: { Objects: [{ Key: 'agents/alice/batch.txt', ETag: mine }, { Key: 'agents/bob/notes.md' }, { Key: 'shared/readme.md' }] },
      }),
    );
    // Failed once in a full run at load ~19 (Deleted absent) and not since in
    // ~40 runs at load 6–19 on the embedded store, moto and RGW: the answer's
    // errors and casket's last log lines name the cause if it comes back.
    const why = () => JSON.stringify({ errors: result.Errors, log: casket.logs.slice(-8) });
    expect(result.Deleted?.map((d) => d.Key), why()).toEqual(['agents/alice/batch.txt']);
    expect(result.Errors?.map((e) => [e.Key, e.Code])).toEqual([
      ['agents/bob/notes.md', 'AccessDenied'],
      ['shared/readme.md', 'AccessDenied'],
    ]);
    expect(await read(admin, 'agents/bob/notes.md')).toBe('bob');
    expect(await read(admin, 'shared/readme.md')).toBe('shared');
  });

  it('multipart uploads inside its prefix work; outside they are refused at the start', async () => {
    const key = 'agents/alice/big.bin';
    const { UploadId } = await alice.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
    const part = await alice.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: 1, Body: 'part one' }));
    const parts = await alice.send(new ListPartsCommand({ Bucket: bucket, Key: key, UploadId }));
    expect(parts.Parts?.map((p) => p.PartNumber)).toEqual([1]);
    await alice.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId, IfNoneMatch: '*', MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag! }] } }));
    expect(await read(alice, key)).toBe('part one');

    await denied(alice.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'shared/big.bin' })));
    // An upload someone else started outside the prefix: alice can neither add to it, list it, finish it nor abort it.
    const theirs = await admin.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'shared/theirs.bin' }));
    const upload = { Bucket: bucket, Key: 'shared/theirs.bin', UploadId: theirs.UploadId };
    await denied(alice.send(new UploadPartCommand({ ...upload, PartNumber: 1, Body: 'x' })));
    await denied(alice.send(new ListPartsCommand(upload)));
    await denied(alice.send(new CompleteMultipartUploadCommand({ ...upload, IfNoneMatch: '*', MultipartUpload: { Parts: [{ PartNumber: 1, ETag: '"x"' }] } })));
    await denied(alice.send(new AbortMultipartUploadCommand(upload)));
    await admin.send(new AbortMultipartUploadCommand(upload));
  });

  it('lists its prefix only, and sees only the buckets it may touch', async () => {
    await put(alice, 'agents/alice/listed.txt', 'listed');
    const mine = await alice.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'agents/alice/' }));
    expect(mine.Contents?.map((o) => o.Key)).toContain('agents/alice/listed.txt');
    expect(mine.Contents?.every((o) => o.Key!.startsWith('agents/alice/'))).toBe(true);
    await denied(alice.send(new ListObjectsV2Command({ Bucket: bucket })));
    await denied(alice.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'agents/' })));
    await denied(alice.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'agents/bob/' })));
    const buckets = await alice.send(new ListBucketsCommand({}));
    expect(buckets.Buckets?.map((b) => b.Name)).toEqual([bucket]);
    const all = await admin.send(new ListBucketsCommand({}));
    expect(all.Buckets?.map((b) => b.Name).sort()).toEqual([bucket, other].sort());
  });

  it('cannot create or delete buckets', async () => {
    await denied(alice.send(new DeleteBucketCommand({ Bucket: other })));
    await denied(alice.send(new CreateBucketCommand({ Bucket: 'policies-alice' })));
    expect((await admin.send(new ListBucketsCommand({}))).Buckets?.map((b) => b.Name)).toContain(other);
  });
});

describe('a read-only reviewer', () => {
  it('reads and lists the whole bucket and writes nothing', async () => {
    expect(await read(reviewer, 'shared/readme.md')).toBe('shared');
    expect(await read(reviewer, 'agents/bob/notes.md')).toBe('bob');
    const listed = await reviewer.send(new ListObjectsV2Command({ Bucket: bucket }));
    expect(listed.Contents?.map((o) => o.Key)).toContain('shared/readme.md');
    await denied(reviewer.send(new PutObjectCommand({ Bucket: bucket, Key: 'shared/review.md', Body: 'lgtm' })));
    await denied(reviewer.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'shared/readme.md' })));
    await denied(reviewer.send(new GetObjectCommand({ Bucket: other, Key: 'x' })));
    // s3:List* on the bucket's ARNs does not reach ListAllMyBuckets, whose resource is "*".
    await denied(reviewer.send(new ListBucketsCommand({})));
  });
});

describe('what changed, under a policy', () => {
  it('/_casket/diff and /_casket/merge show content only to a key that may read the object', async () => {
    const etag = await put(admin, 'agents/bob/diffed.md', 'one\n');
    const path = (endpoint: string) => `/_casket/${endpoint}?bucket=${bucket}&key=agents/bob/diffed.md&from=${encodeURIComponent(etag)}&to=current`;
    const statusOf = async (who: 'alice' | 'reviewer', endpoint: string) => {
      const { headers } = await signRequest(casket.url, casket.keys[who]!, { method: 'GET', path: path(endpoint) });
      const res = await fetch(`${casket.url}${path(endpoint)}`, { headers });
      await res.arrayBuffer();
      return res.status;
    };
    expect(await statusOf('alice', 'diff')).toBe(403);
    expect(await statusOf('alice', 'merge')).toBe(403);
    // The reviewer may read it: the diff is served.
    expect(await statusOf('reviewer', 'diff')).toBe(200);
  });
});

describe('a key without a policy', () => {
  it('keeps full rights', async () => {
    await legacy.send(new CreateBucketCommand({ Bucket: 'policies-legacy' }));
    await legacy.send(new PutObjectCommand({ Bucket: 'policies-legacy', Key: 'k', Body: 'v' }));
    expect(await read(legacy, 'x', other)).toBe('elsewhere');
    await legacy.send(new DeleteObjectCommand({ Bucket: 'policies-legacy', Key: 'k' }));
    await legacy.send(new DeleteBucketCommand({ Bucket: 'policies-legacy' }));
  });
});

describe('refusals are reported', () => {
  it('logged with action and resource, counted by reason', async () => {
    await denied(alice.send(new GetObjectCommand({ Bucket: bucket, Key: 'shared/never-read-by-alice' })));
    const resource = arn(`${bucket}/shared/never-read-by-alice`);
    type Line = { accessKey?: string; status?: number; denied?: Array<{ action: string; resource: string; reason: string }> };
    const lines = () => casket.logs.map((l) => JSON.parse(l) as Line).filter((l) => l.denied?.some((d) => d.resource === resource));
    await until(() => lines().length > 0, 'the refusal logged');
    expect(lines()[0]).toMatchObject({ accessKey: casket.keys.alice!.accessKeyId, status: 403, denied: [{ action: 's3:GetObject', resource, reason: 'no-allow' }] });
    const metrics = await (await fetch(`${casket.url}/_casket/metrics`)).text();
    expect(metrics).toMatch(/casket_access_denied_total\{reason="no-allow",action="s3:GetObject"\} [1-9]/);
    expect(metrics).toMatch(/casket_access_denied_total\{reason="explicit-deny",action="s3:GetObject"\} [1-9]/);
    expect(metrics).toMatch(/casket_access_denied_total\{reason="no-allow",action="s3:DeleteObject"\} [1-9]/);
  });
});

describe('reloading credentials without a restart', () => {
  let c: RunningCasket;
  let key: S3Client;
  let original: string;
  const readOnly = { Statement: [{ Effect: 'Allow', Action: 's3:GetObject', Resource: '*' }] };
  const readWrite = { Statement: [{ Effect: 'Allow', Action: ['s3:GetObject', 's3:PutObject'], Resource: '*' }] };

  /** Rewrites the key's policy in casket's credentials file (same file, same mode). */
  function setPolicy(policy: unknown): void {
    const doc = JSON.parse(original) as { credentials: Array<{ accessKey: string; policy?: unknown }> };
    for (const e of doc.credentials) if (e.accessKey === c.keys.k!.accessKeyId) e.policy = policy;
    writeFileSync(c.credentialsFile, JSON.stringify(doc));
  }
  const canPut = async (name: string) => {
    try {
      await key.send(new PutObjectCommand({ Bucket: 'reload', Key: name, Body: 'x' }));
      return true;
    } catch (e) {
      if ((e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode !== 403) throw e;
      return false;
    }
  };

  beforeAll(async () => {
    c = await startCasket({ keys: { k: { policy: readOnly } } });
    key = sdk(c.url, c.keys.k!);
    original = readFileSync(c.credentialsFile, 'utf8');
    const a = sdk(c.url, c.admin);
    await a.send(new CreateBucketCommand({ Bucket: 'reload' }));
    a.destroy();
  });
  afterAll(async () => {
    key?.destroy();
    await c?.stop();
  });

  it('SIGHUP, and a change of the file, apply new policies; an invalid file keeps the old ones', async () => {
    expect(await canPut('a')).toBe(false);
    // A change of the file is picked up by itself...
    setPolicy(readWrite);
    await until(() => canPut('b'), 'the new policy from the changed file', 20_000);
    // ...and SIGHUP reloads at once.
    setPolicy(readOnly);
    c.proc.kill('SIGHUP');
    await until(async () => !(await canPut('c')), 'the policy reloaded on SIGHUP', 20_000);
    // A file that does not parse: logged, and the credentials in force stay.
    writeFileSync(c.credentialsFile, '{"credentials": [ not json');
    c.proc.kill('SIGHUP');
    await until(() => c.logs.some((l) => l.includes('credentials not reloaded')), 'the refusal to reload logged');
    expect(c.logs.find((l) => l.includes('credentials not reloaded'))).toMatch(/not JSON/);
    expect(await canPut('d')).toBe(false);
    expect((await key.send(new GetObjectCommand({ Bucket: 'reload', Key: 'b' }))).ETag).toBeDefined();
  });

  it('warns at start when the credentials file is readable by group or others', async () => {
    expect(c.logs.some((l) => l.includes('readable by group or others'))).toBe(false);
    chmodSync(c.credentialsFile, 0o644);
    setPolicy(readOnly);
    c = await c.restart();
    key.destroy();
    key = sdk(c.url, c.keys.k!);
    expect(c.logs.find((l) => l.includes('readable by group or others'))).toMatch(/"mode":"644"/);
  });
});
