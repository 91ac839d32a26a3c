/**
 * STS session policies (docs/design.md §7) through casket's HTTP front in this
 * process, a second test beside test/integration/sts.test.ts: credentials
 * minted with a session policy get the intersection of the caller's rights
 * and that policy — a prefix here — and a Deny in it wins.
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cred } from '../helpers/casket.js';
import { bytes, failure, sdk } from '../helpers/clients.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';

const bucket = 'sessions';
let casket: InProcessCasket;
const clients: Array<{ destroy(): void }> = [];

beforeAll(async () => {
  casket = await startInProcess({ flags: { stsMinDuration: '1' } });
  const admin = sdk(casket.url, casket.admin);
  clients.push(admin);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'drafts/a.txt', Body: 'draft' }));
  await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'final/a.txt', Body: 'final' }));
});
afterAll(async () => {
  for (const c of clients) c.destroy();
  await casket?.stop();
});

async function minted(policy: unknown): Promise<S3Client> {
  const sts = new STSClient({ endpoint: casket.url, region: 'us-east-1', credentials: casket.admin, maxAttempts: 1 });
  clients.push(sts);
  const out = await sts.send(new AssumeRoleCommand({ RoleArn: 'arn:casket:iam::agent/robot', RoleSessionName: 'run', DurationSeconds: 900, Policy: JSON.stringify(policy) }));
  const c = out.Credentials!;
  const s3 = sdk(casket.url, { accessKeyId: c.AccessKeyId!, secretAccessKey: c.SecretAccessKey!, sessionToken: c.SessionToken! } as Cred);
  clients.push(s3);
  return s3;
}

const text = async (s3: S3Client, key: string) => (await bytes((await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body)).toString();

describe('a session policy limited to a prefix', () => {
  it('reads and creates inside it; 403 AccessDenied outside it and where it denies', async () => {
    const s3 = await minted({
      Version: '2012-10-17',
      Statement: [
        { Effect: 'Allow', Action: ['s3:GetObject', 's3:PutObject'], Resource: `arn:aws:s3:::${bucket}/drafts/*` },
        { Effect: 'Deny', Action: 's3:PutObject', Resource: `arn:aws:s3:::${bucket}/drafts/locked/*` },
      ],
    });
    expect(await text(s3, 'drafts/a.txt')).toBe('draft');
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'drafts/new.txt', Body: 'robot', IfNoneMatch: '*' }));
    for (const refused of [
      s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'final/a.txt' })),
      s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'final/new.txt', Body: 'x', IfNoneMatch: '*' })),
      s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'drafts/locked/new.txt', Body: 'x', IfNoneMatch: '*' })),
    ]) {
      const f = await failure(refused);
      expect([f.name, f.status]).toEqual(['AccessDenied', 403]);
    }
    const admin = sdk(casket.url, casket.admin);
    clients.push(admin);
    expect(await text(admin, 'final/a.txt')).toBe('final');
  });
});
