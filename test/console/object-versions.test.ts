/**
 * The console's object view lists the versions the bucket itself holds
 * (S3 versioning, docs/design.md §10) beside the write log: an operator sees
 * each version's id, ETag, writer and the delete markers, newest first.
 */
import { CreateBucketCommand, DeleteObjectCommand, GetObjectCommand, PutBucketVersioningCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdk } from '../helpers/clients.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';

type Held = { versionId: string; isLatest: boolean; deleteMarker: boolean; etag?: string; writer: string | null };

describe('console object view: versions the bucket holds', () => {
  let c: InProcessCasket;
  let admin: S3Client;
  let alice: S3Client;
  let cookie: string;

  const object = async (bucket: string, key: string): Promise<{ held: Held[] }> => {
    const res = await fetch(`${c.url}/_casket/console/api/object?${new URLSearchParams({ bucket, key })}`, { headers: { cookie } });
    expect(res.status).toBe(200);
    return (await res.json()) as { held: Held[] };
  };

  beforeAll(async () => {
    c = await startInProcess({ agents: ['alice'], flags: { state: 'sqlite' } });
    admin = sdk(c.url, c.admin);
    alice = sdk(c.url, c.agents.alice!);
    const login = await fetch(`${c.url}/_casket/console/login`, { method: 'POST', redirect: 'manual', headers: { origin: c.url }, body: new URLSearchParams({ accessKeyId: c.admin.accessKeyId, secretAccessKey: c.admin.secretAccessKey }) });
    cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!;
  });

  afterAll(async () => {
    admin?.destroy();
    alice?.destroy();
    await c?.stop();
  });

  it('lists every version of the key, newest first, with its writer and the delete marker', async () => {
    await admin.send(new CreateBucketCommand({ Bucket: 'held' }));
    await admin.send(new PutBucketVersioningCommand({ Bucket: 'held', VersioningConfiguration: { Status: 'Enabled' } }));
    const first = await admin.send(new PutObjectCommand({ Bucket: 'held', Key: 'notes.txt', Body: 'one' }));
    // An agent writes only what it has read (docs/design.md §4).
    await (await alice.send(new GetObjectCommand({ Bucket: 'held', Key: 'notes.txt' }))).Body!.transformToString();
    const second = await alice.send(new PutObjectCommand({ Bucket: 'held', Key: 'notes.txt', Body: 'two', IfMatch: first.ETag }));
    const marker = await admin.send(new DeleteObjectCommand({ Bucket: 'held', Key: 'notes.txt' }));
    // Another key with the same prefix is not this object's history.
    await admin.send(new PutObjectCommand({ Bucket: 'held', Key: 'notes.txt.bak', Body: 'x' }));

    const { held } = await object('held', 'notes.txt');
    expect(held.map((v) => [v.versionId, v.isLatest, v.deleteMarker, v.etag ?? null])).toEqual([
      [marker.VersionId, true, true, null],
      [second.VersionId, false, false, second.ETag],
      [first.VersionId, false, false, first.ETag],
    ]);
    expect(held[1]!.writer).toBe('alice');
  });

  it('lists nothing more for an unversioned bucket than its one version', async () => {
    await admin.send(new CreateBucketCommand({ Bucket: 'plain' }));
    await admin.send(new PutObjectCommand({ Bucket: 'plain', Key: 'k', Body: 'one' }));
    await admin.send(new PutObjectCommand({ Bucket: 'plain', Key: 'k', Body: 'two' }));
    const { held } = await object('plain', 'k');
    expect(held.map((v) => [v.versionId, v.isLatest])).toEqual([['null', true]]);
  });
});
