/**
 * Agents (docs/design.md §4): identity, required preconditions, read stamps,
 * partial and stale reads — each scenario asserting status, error code,
 * reason and the ETags returned, with per-agent keys.
 */
import { CreateBucketCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, DeleteObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { abortedGet, eventually, introspect } from '../helpers/agents.js';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { bytes, failure, sdk } from '../helpers/clients.js';
import { raw, xmlField } from '../helpers/raw.js';

const quoted = (b: Buffer | string) => `"${createHash('sha256').update(b).digest('hex')}"`;
const bucket = 'agents';

/** The 412/428 an SDK call ended in, with casket's extra fields. */
async function refusal(p: Promise<unknown>) {
  const f = await failure(p);
  const e = f.error as { Reason?: string; CurrentETag?: string; LastWriter?: string; LastReadETag?: string; message: string };
  return { name: f.name, status: f.status, reason: e.Reason, currentETag: e.CurrentETag, lastWriter: e.LastWriter, lastReadETag: e.LastReadETag, message: e.message };
}

let casket: RunningCasket;
let admin: S3Client;
let alice: S3Client;
let bob: S3Client;

async function read(client: S3Client, key: string, range?: string): Promise<string> {
  const r = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key, ...(range && { Range: range }) }));
  await bytes(r.Body);
  return r.ETag!;
}

beforeAll(async () => {
  casket = await startCasket({ agents: ['alice', 'bob'] });
  admin = sdk(casket.url, casket.admin);
  alice = sdk(casket.url, casket.agents.alice!);
  bob = sdk(casket.url, casket.agents.bob!);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
});
afterAll(async () => {
  for (const c of [admin, alice, bob]) c?.destroy();
  await casket?.stop();
});

describe('identity', () => {
  it('a key bound to alice cannot claim to be bob', async () => {
    const r = await raw(casket.url, casket.agents.alice!, { method: 'GET', path: `/${bucket}?list-type=2`, headers: { 'x-agent-id': 'bob' } });
    expect(r.status).toBe(403);
    expect(xmlField(r.body, 'Code')).toBe('AccessDenied');
  });

  it('the agent header makes an admin-key request an agent request', async () => {
    const tagged = sdk(casket.url, casket.admin, { agentHeader: 'carol' });
    const r = await refusal(tagged.send(new PutObjectCommand({ Bucket: bucket, Key: 'carol', Body: 'x' })));
    expect(r).toMatchObject({ status: 428, reason: 'precondition-required' });
    tagged.destroy();
  });
});

describe('writes by agents must be conditional', () => {
  it('no condition → 428 with the current ETag; If-None-Match: * creates', async () => {
    const created = await alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'cond', Body: 'v1', IfNoneMatch: '*' }));
    expect(created.ETag).toBe(quoted('v1'));
    const r = await refusal(alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'cond', Body: 'v2' })));
    expect(r).toMatchObject({ name: 'PreconditionRequired', status: 428, reason: 'precondition-required', currentETag: quoted('v1') });
    expect(r.message).toContain('If-Match');
    const del = await refusal(alice.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'cond' })));
    expect(del).toMatchObject({ status: 428 });
    expect((await admin.send(new HeadObjectCommand({ Bucket: bucket, Key: 'cond' }))).ETag).toBe(quoted('v1'));
  });
});

describe('read stamps', () => {
  it('two agents read; A writes; B is refused naming A and its ETag; B re-reads and wins', async () => {
    const v1 = (await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'shared', Body: 'v1' }))).ETag!;
    expect(await read(alice, 'shared')).toBe(v1);
    expect(await read(bob, 'shared')).toBe(v1);
    const a = await alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'shared', Body: 'alice', IfMatch: v1 }));
    const r = await refusal(bob.send(new PutObjectCommand({ Bucket: bucket, Key: 'shared', Body: 'bob', IfMatch: v1 })));
    expect(r).toMatchObject({ name: 'PreconditionFailed', status: 412, reason: 'precondition-failed', currentETag: a.ETag, lastWriter: 'alice' });
    expect(await read(bob, 'shared')).toBe(a.ETag);
    const b = await bob.send(new PutObjectCommand({ Bucket: bucket, Key: 'shared', Body: 'bob', IfMatch: a.ETag }));
    expect(b.ETag).toBe(quoted('bob'));
  });

  it('a Range read does not entitle a write; a full read does', async () => {
    const v = (await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'ranged', Body: '0123456789' }))).ETag!;
    await read(alice, 'ranged', 'bytes=0-4');
    const r = await refusal(alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'ranged', Body: 'new', IfMatch: v })));
    expect(r).toMatchObject({ status: 412, reason: 'partial-read', currentETag: v });
    // The rest of the object, in a second range: together they cover it.
    await read(alice, 'ranged', 'bytes=5-9');
    const ok = await alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'ranged', Body: 'new', IfMatch: v }));
    expect(ok.ETag).toBe(quoted('new'));
  });

  it('a GET aborted half-way is partial', async () => {
    const big = randomBytes(32 * 1024 * 1024);
    const v = (await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'aborted', Body: big }))).ETag!;
    await abortedGet(casket.url, casket.agents.alice!, `/${bucket}/aborted`, 1024 * 1024);
    await eventually(async () => {
      const s = await introspect(casket.url, casket.admin, '/_casket/agents/alice/stamps');
      return s.body.stamps.some((x: { key: string; etag: string }) => x.key === 'aborted' && x.etag === v);
    }, 'the aborted read to be recorded');
    const r = await refusal(alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'aborted', Body: 'x', IfMatch: v })));
    expect(r).toMatchObject({ status: 412, reason: 'partial-read' });
    await read(alice, 'aborted');
    await alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'aborted', Body: 'x', IfMatch: v }));
  });

  it('a HEAD is not a read: A reads v1, B writes v2, A HEADs v2 and writes If-Match v2 → 412 stale', async () => {
    const v1 = (await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'stale', Body: 'v1' }))).ETag!;
    await read(alice, 'stale');
    await read(bob, 'stale');
    const v2 = (await bob.send(new PutObjectCommand({ Bucket: bucket, Key: 'stale', Body: 'v2', IfMatch: v1 }))).ETag!;
    const head = await alice.send(new HeadObjectCommand({ Bucket: bucket, Key: 'stale' }));
    expect(head.ETag).toBe(v2);
    const r = await refusal(alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'stale', Body: 'a', IfMatch: v2 })));
    expect(r).toMatchObject({ status: 412, reason: 'stale-read', currentETag: v2, lastReadETag: v1, lastWriter: 'bob' });
    expect(r.message).toContain('s3://agents/stale');
  });

  it("an agent's own write counts as a full read of what it wrote", async () => {
    const v1 = (await alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'own', Body: 'v1', IfNoneMatch: '*' }))).ETag!;
    const v2 = (await alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'own', Body: 'v2', IfMatch: v1 }))).ETag!;
    expect(v2).toBe(quoted('v2'));
  });

  it("a person's unconditional PUT succeeds, and an agent holding the old version is then refused", async () => {
    const v1 = (await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'human', Body: 'v1' }))).ETag!;
    await read(alice, 'human');
    const v2 = (await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'human', Body: 'person' }))).ETag!;
    const r = await refusal(alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'human', Body: 'a', IfMatch: v1 })));
    expect(r).toMatchObject({ status: 412, currentETag: v2 });
  });

  it('a multipart upload by an agent names it as the writer to the next agent refused', async () => {
    const v1 = (await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'mp-writer', Body: 'v1' }))).ETag!;
    await read(alice, 'mp-writer');
    await read(bob, 'mp-writer');
    const { Upload } = await import('@aws-sdk/lib-storage');
    const data = randomBytes(6 * 1024 * 1024);
    await new Upload({ client: alice, params: { Bucket: bucket, Key: 'mp-writer', Body: data, IfMatch: v1 }, partSize: 5 * 1024 * 1024 }).done();
    const r = await refusal(bob.send(new PutObjectCommand({ Bucket: bucket, Key: 'mp-writer', Body: 'bob', IfMatch: v1 })));
    expect(r).toMatchObject({ status: 412, lastWriter: 'alice' });
    expect(r.currentETag).toMatch(/-2"$/);
  });

  it('boto3 download_file (ranged GETs with If-Match) is a full read', async () => {
    const data = randomBytes(40 * 1024 * 1024);
    const v = (await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'boto', Body: data }))).ETag!;
    const script = `
import boto3, sys
from boto3.s3.transfer import TransferConfig
s3 = boto3.client('s3', endpoint_url=sys.argv[1], aws_access_key_id=sys.argv[2], aws_secret_access_key=sys.argv[3], region_name='us-east-1')
s3.download_file('${bucket}', 'boto', sys.argv[4], Config=TransferConfig(multipart_threshold=8*1024*1024, multipart_chunksize=8*1024*1024))
`;
    const out = `${casket.dataDir}/boto.download`;
    const cred = casket.agents.alice!;
    execFileSync('python3', ['-c', script, casket.url, cred.accessKeyId, cred.secretAccessKey, out], { env: { ...process.env, AWS_CONFIG_FILE: '/dev/null', AWS_SHARED_CREDENTIALS_FILE: '/dev/null' } });
    const { readFileSync } = await import('node:fs');
    expect(createHash('sha256').update(readFileSync(out)).digest('hex')).toBe(v.slice(1, -1));
    const ok = await alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'boto', Body: 'after download', IfMatch: v }));
    expect(ok.ETag).toBe(quoted('after download'));
  });
});

describe('introspection', () => {
  it('lists an agent’s stamps with what went stale, and the write log; admins only', async () => {
    const v1 = (await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'watched', Body: 'v1' }))).ETag!;
    await read(bob, 'watched');
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'watched', Body: 'v2' }));
    const s = await introspect(casket.url, casket.admin, '/_casket/agents/bob/stamps');
    expect(s.status).toBe(200);
    const stamp = s.body.stamps.find((x: { key: string }) => x.key === 'watched');
    expect(stamp).toMatchObject({ bucket, etag: v1, full: true, stale: true, currentETag: quoted('v2') });
    expect(s.body.stale).toContainEqual({ bucket, key: 'watched' });
    // The write log of a key of its own: a person, then alice, then bob, each agent after a full read.
    const p1 = (await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'logged', Body: 'person' }))).ETag!;
    expect(await read(alice, 'logged')).toBe(p1);
    const a1 = (await alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'logged', Body: 'alice', IfMatch: p1 }))).ETag!;
    expect(await read(bob, 'logged')).toBe(a1);
    await bob.send(new PutObjectCommand({ Bucket: bucket, Key: 'logged', Body: 'bob', IfMatch: a1 }));
    const log = await introspect(casket.url, casket.admin, `/_casket/writes?bucket=${bucket}&key=logged`);
    expect(log.body.writes.map((w: { agent?: string }) => w.agent ?? 'person')).toEqual(['bob', 'alice', 'person']);
    expect(log.body.writes[0]).toMatchObject({ operation: 'PutObject', newETag: quoted('bob'), previousETag: a1 });
    const denied = await introspect(casket.url, casket.agents.bob!, '/_casket/agents/bob/stamps');
    expect(denied.status).toBe(403);
  });
});

describe('modes and persistence', () => {
  it('observe mode refuses nothing and counts what it would have refused', async () => {
    const observed = await startCasket({ agents: ['dora'], args: ['--guard', 'observe'] });
    try {
      const dora = sdk(observed.url, observed.agents.dora!);
      const a = sdk(observed.url, observed.admin);
      await a.send(new CreateBucketCommand({ Bucket: bucket }));
      await a.send(new PutObjectCommand({ Bucket: bucket, Key: 'k', Body: 'v1' }));
      const put = await dora.send(new PutObjectCommand({ Bucket: bucket, Key: 'k', Body: 'dora' }));
      expect(put.ETag).toBe(quoted('dora'));
      const metrics = await (await fetch(`${observed.url}/_casket/metrics`)).text();
      expect(metrics).toMatch(/casket_refusals_total\{reason="precondition-required",enforced="false"\} 1/);
      dora.destroy();
      a.destroy();
    } finally {
      await observed.stop();
    }
  });

  it('stamps survive a restart on the same data dir', async () => {
    const v1 = (await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'persist', Body: 'v1' }))).ETag!;
    await read(alice, 'persist');
    const v2 = (await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'persist', Body: 'v2' }))).ETag!;
    casket = await casket.restart();
    for (const c of [admin, alice, bob]) c.destroy();
    admin = sdk(casket.url, casket.admin);
    alice = sdk(casket.url, casket.agents.alice!);
    bob = sdk(casket.url, casket.agents.bob!);
    const r = await refusal(alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'persist', Body: 'a', IfMatch: v2 })));
    expect(r).toMatchObject({ status: 412, reason: 'stale-read', lastReadETag: v1 });
  });
});
