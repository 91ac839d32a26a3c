/**
 * The per-agent changes feed (GET /_casket/agents/{agent}/changes, docs/design.md §6)
 * through casket's HTTP front in this process: it lists the keys an agent
 * read that someone else wrote since — not a key the agent has read again
 * since, and never the agent's own write.
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytes, sdk } from '../helpers/clients.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { until } from '../helpers/poll.js';
import { raw } from '../helpers/raw.js';

const bucket = 'feed';
let casket: InProcessCasket;
let admin: S3Client;
let alice: S3Client;

beforeAll(async () => {
  casket = await startInProcess({ agents: ['alice'] });
  admin = sdk(casket.url, casket.admin);
  alice = sdk(casket.url, casket.agents.alice!);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
});
afterAll(async () => {
  admin?.destroy();
  alice?.destroy();
  await casket?.stop();
});

/** alice reads `key` whole and waits until casket has recorded that read (after the response). */
async function read(key: string): Promise<string> {
  const r = await alice.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  await bytes(r.Body);
  await until(async () => (await casket.casket.services.state.getStamp('alice', bucket, key))?.etag === r.ETag!.slice(1, -1), `alice's read of ${key} to be recorded`);
  return r.ETag!;
}

async function changedKeys(): Promise<string[]> {
  const r = await raw(casket.url, casket.agents.alice!, { method: 'GET', path: '/_casket/agents/alice/changes' });
  expect(r.status, r.body).toBe(200);
  return (JSON.parse(r.body).changes as Array<{ key: string }>).map((c) => c.key);
}

describe("alice's changes feed", () => {
  it('lists a key someone else wrote after her read, until she reads it again', async () => {
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'reread', Body: 'v1' }));
    await read('reread');
    expect(await changedKeys()).not.toContain('reread');
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'reread', Body: 'v2 by a person' }));
    expect(await changedKeys()).toContain('reread');
    await read('reread');
    expect(await changedKeys()).not.toContain('reread');
  });

  it('never lists her own write, even when the state store lost the stamp of that write', async () => {
    const v1 = (await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'own', Body: 'v1' }))).ETag!;
    await read('own');
    // The stamp write after her commit is lost (a Redis failover loses
    // acknowledged writes: replication is asynchronous); the write log keeps
    // the write. Her stamp still names v1, the version she read.
    const state = casket.casket.services.state;
    const recordWrite = state.recordWrite.bind(state);
    state.recordWrite = async () => {
      state.recordWrite = recordWrite;
    };
    await alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'own', Body: 'v2 by alice', IfMatch: v1 }));
    expect(state.recordWrite).toBe(recordWrite);
    expect((await state.getStamp('alice', bucket, 'own'))?.etag).toBe(v1.slice(1, -1));
    expect((await state.lastWrite(bucket, 'own'))?.agent).toBe('alice');
    expect(await changedKeys()).not.toContain('own');
  });
});
