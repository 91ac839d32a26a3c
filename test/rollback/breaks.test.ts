/**
 * Two ways a rollback could lose someone's data while saying it restored
 * (docs/design.md §10; issue 43's audit broke each and no test noticed):
 *   - a person writes the very bytes of the agent's last version after it
 *     (an identical write, or a revert to it): the ETag is the agent's, but
 *     the version is the person's — the write log, not the bytes, says who
 *     wrote it (STYLE.md habit 8: identical bytes are where lost updates hide);
 *   - the retained bytes of the goal are corrupt on disk: restoring them
 *     would write garbage back as "the goal version"; their SHA-256 must
 *     match the goal ETag first.
 */
import { CreateBucketCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdk } from '../helpers/clients.js';
import { raw } from '../helpers/raw.js';
import type { RollbackAnswer } from '../../src/rollback/plan.js';
import { agentPut, content, keysOf, type RollbackCasket, startRollbackCasket } from './helpers.js';

let casket: RollbackCasket;
let admin: S3Client;
let alice: S3Client;
let person: S3Client;
let bucket: string;

beforeAll(async () => {
  casket = await startRollbackCasket();
  admin = sdk(casket.url, casket.admin);
  alice = sdk(casket.url, casket.agents.alice!, { agentHeader: 'alice' });
  person = sdk(casket.url, casket.keys.person!);
  bucket = `rollback-breaks-${randomBytes(3).toString('hex')}`;
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
});

afterAll(async () => {
  for (const c of [admin, alice, person]) c?.destroy();
  await casket?.stop();
});

async function rollback(request: Record<string, unknown>): Promise<RollbackAnswer> {
  const res = await raw(casket.url, casket.admin, { method: 'POST', path: '/_casket/rollback', headers: { 'content-type': 'application/json' }, body: JSON.stringify(request) });
  if (res.status !== 200) throw new Error(`rollback answered ${res.status}: ${res.body}`);
  return JSON.parse(res.body) as RollbackAnswer;
}

describe('rollback breaks', () => {
  it('a person who wrote the agent\'s very bytes after it (an identical write, a revert) is a conflict: their version stays', async () => {
    for (const k of ['identical', 'revert']) await person.send(new PutObjectCommand({ Bucket: bucket, Key: k, Body: `${k}: the person's draft` }));
    const since = new Date().toISOString();
    await agentPut(alice, bucket, 'identical', "alice's text");
    await agentPut(alice, bucket, 'revert', "alice's text");
    // The person writes alice's bytes again; and the person edits, then reverts to alice's version.
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'identical', Body: "alice's text" }));
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'revert', Body: 'an edit' }));
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'revert', Body: "alice's text" }));

    const answer = await rollback({ agent: 'alice', since, bucket, prefix: '' });
    expect(keysOf(answer.restored)).toEqual([]);
    expect(keysOf(answer.conflicts)).toEqual(['identical', 'revert']);
    for (const c of answer.conflicts) {
      // Same ETag as alice's (same bytes): the writer tells them apart.
      expect(c.currentETag).toBe(c.agentETag);
      expect(c.currentWriter).toBe(casket.keys.person!.accessKeyId);
    }
    for (const k of ['identical', 'revert']) expect((await content(person, bucket, k))?.body.toString()).toBe("alice's text");
  });

  it('retained bytes corrupted on disk are not written back: the key is unrecoverable and untouched', async () => {
    const before = 'the version before alice';
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'corrupt', Body: before }));
    const since = new Date().toISOString();
    // alice reads the key in full (retained) and overwrites it.
    await agentPut(alice, bucket, 'corrupt', "alice's bad write");
    const goal = createHash('sha256').update(before).digest('hex');
    const dir = join(casket.dataDir, 'retained');
    const files = readdirSync(dir).filter((n) => n.startsWith(`${goal}.`));
    expect(files).toHaveLength(1);
    // One byte changed, same length: only the SHA-256 tells.
    writeFileSync(join(dir, files[0]!), 'the version before alicE');

    const answer = await rollback({ agent: 'alice', since, bucket, prefix: 'corrupt' });
    expect(answer.restored).toEqual([]);
    expect(answer.unrecoverable).toMatchObject([{ key: 'corrupt', goalETag: `"${goal}"` }]);
    expect((await content(person, bucket, 'corrupt'))?.body.toString()).toBe("alice's bad write");
  });
});
