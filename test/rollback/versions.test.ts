/**
 * Rollback from the bucket's own versions (docs/design.md §10, README
 * "Rollback"): with retention off and no pre-images, the version to restore
 * is held only by the bucket — found by ListObjectVersions of the key through
 * casket, read with GET ?versionId=. That is also the one way back for a
 * multipart version (its ETag is not the SHA-256 of its bytes, so casket
 * never keeps it itself).
 */
import { CreateBucketCommand, PutBucketVersioningCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdk } from '../helpers/clients.js';
import { agentMultipartCreate, agentPut, cliRollback, content, type RollbackCasket, startRollbackCasket } from './helpers.js';

const bucket = `rollback-versions-${randomBytes(3).toString('hex')}`;
const MiB = 1024 * 1024;

let casket: RollbackCasket;
let admin: S3Client;
let alice: S3Client;
let person: S3Client;

beforeAll(async () => {
  casket = await startRollbackCasket({ retainMaxSize: '0' });
  admin = sdk(casket.url, casket.admin);
  alice = sdk(casket.url, casket.agents.alice!, { agentHeader: 'alice' });
  person = sdk(casket.url, casket.keys.person!);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  await admin.send(new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: 'Enabled' } }));
});

afterAll(async () => {
  for (const c of [admin, alice, person]) c?.destroy();
  await casket?.stop();
});

describe('rollback from the bucket\'s versions', () => {
  it('restores a plain and a multipart version byte for byte, naming versions as the source', async () => {
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'plain.txt', Body: 'before\n' }));
    const parts = [randomBytes(5 * MiB), randomBytes(999)];
    // A person's multipart object: made create-only by the same helper an agent would use.
    await agentMultipartCreate(person, bucket, 'big.bin', parts);
    const since = new Date().toISOString();
    await agentPut(alice, bucket, 'plain.txt', 'after\n');
    await agentPut(alice, bucket, 'big.bin', 'replaced\n');
    const run = await cliRollback(casket, ['--agent', 'alice', '--since', since, '--bucket', bucket, '--json']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.answer!.restored.map((r) => [r.key, r.source]).sort()).toEqual([['big.bin', 'versions'], ['plain.txt', 'versions']]);
    expect((await content(admin, bucket, 'plain.txt'))?.body.toString()).toBe('before\n');
    expect((await content(admin, bucket, 'big.bin'))?.body.equals(Buffer.concat(parts))).toBe(true);
  });
});
