/**
 * The whole API passes through to an upstream (issue 44 items 2 and 3):
 * tags, Object Lock, bucket policy, ACLs and lifecycle rules go up as sent
 * and come back as the upstream answers them; casket changes only the ETag.
 * A key's policy is checked for the exact IAM action of each. An object the
 * upstream removes on its own (lifecycle expiry, here an out-of-band delete:
 * expiry is too slow to wait for) is noticed: no stale ETag served, no
 * conditional write landing on what is gone. On the embedded store, what it
 * does not model is refused (501), never accepted and dropped.
 * SDK v3; runs on the embedded store and through moto / Ceph RGW.
 */
import {
  CopyObjectCommand, CreateBucketCommand, DeleteBucketPolicyCommand, DeleteObjectCommand, DeleteObjectTaggingCommand, GetBucketLifecycleConfigurationCommand, GetBucketPolicyCommand,
  GetObjectAclCommand, GetObjectCommand, GetObjectRetentionCommand, GetObjectTaggingCommand, HeadObjectCommand, ListObjectsCommand, ListObjectsV2Command, PutBucketLifecycleConfigurationCommand, PutBucketPolicyCommand,
  PutObjectAclCommand, PutObjectCommand, PutObjectTaggingCommand, S3Client,
} from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { bytes, failure, sdk } from '../helpers/clients.js';
import { casketWithBucket, etagOf } from '../helpers/suite.js';
import { upstreamKindFromEnv } from '../helpers/upstream.js';

const bucket = 'passthrough';
const arn = (path: string) => `arn:aws:s3:::${path}`;
/** An agent key that may read and write objects and read the bucket policy, but not change it. */
const AGENT_POLICY = {
  Version: '2012-10-17',
  Statement: [{ Effect: 'Allow', Action: ['s3:GetObject', 's3:PutObject', 's3:GetBucketPolicy', 's3:ListBucket'], Resource: [arn(bucket), arn(`${bucket}/*`)] }],
};
/** May read objects and list in every passthrough bucket, and nothing of their locks (s3:GetObjectRetention, s3:GetObjectLegalHold). */
const READER_POLICY = { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: ['s3:GetObject', 's3:ListBucket'], Resource: [arn('passthrough*')] }] };
const t = casketWithBucket(bucket, { keys: { bot: { agent: 'bot', policy: AGENT_POLICY }, reader: { policy: READER_POLICY } } });
const UPSTREAM = upstreamKindFromEnv();

function direct(): S3Client {
  const u = t.casket.upstream!;
  return new S3Client({ endpoint: u.url, region: u.region, forcePathStyle: true, credentials: { accessKeyId: u.accessKey, secretAccessKey: u.secretKey }, maxAttempts: 1 });
}

async function notImplemented(p: Promise<unknown>): Promise<void> {
  expect(await failure(p)).toMatchObject({ name: 'NotImplemented', status: 501 });
}

describe('tagging', () => {
  it('x-amz-tagging on PutObject comes back as x-amz-tagging-count on GET and HEAD; Put/Get/DeleteObjectTagging and a copy keep them (501 on the embedded store)', async () => {
    const body = 'tagged body';
    const put = await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'tags/one', Body: body, Tagging: 'team=agents&stage=draft' }));
    expect(put.ETag).toBe(etagOf(body));
    if (!UPSTREAM) return notImplemented(t.s3.send(new GetObjectTaggingCommand({ Bucket: bucket, Key: 'tags/one' })));
    const head = await t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'tags/one' }));
    expect([head.TagCount, head.ETag]).toEqual([2, etagOf(body)]);
    expect((await t.s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'tags/one' }))).TagCount).toBe(2);
    const tags = await t.s3.send(new GetObjectTaggingCommand({ Bucket: bucket, Key: 'tags/one' }));
    expect(tags.TagSet?.map((tag) => `${tag.Key}=${tag.Value}`).sort()).toEqual(['stage=draft', 'team=agents']);

    // A copy takes the source's tags (x-amz-tagging-directive COPY, the default), or the request's (REPLACE).
    await t.s3.send(new CopyObjectCommand({ Bucket: bucket, Key: 'tags/copy', CopySource: `${bucket}/tags/one` }));
    expect((await t.s3.send(new GetObjectTaggingCommand({ Bucket: bucket, Key: 'tags/copy' }))).TagSet).toHaveLength(2);
    await t.s3.send(new CopyObjectCommand({ Bucket: bucket, Key: 'tags/replaced', CopySource: `${bucket}/tags/one`, TaggingDirective: 'REPLACE', Tagging: 'only=one' }));
    expect((await t.s3.send(new GetObjectTaggingCommand({ Bucket: bucket, Key: 'tags/replaced' }))).TagSet).toEqual([{ Key: 'only', Value: 'one' }]);

    await t.s3.send(new PutObjectTaggingCommand({ Bucket: bucket, Key: 'tags/one', Tagging: { TagSet: [{ Key: 'stage', Value: 'final' }] } }));
    expect((await t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'tags/one' }))).TagCount).toBe(1);
    await t.s3.send(new DeleteObjectTaggingCommand({ Bucket: bucket, Key: 'tags/one' }));
    expect((await t.s3.send(new GetObjectTaggingCommand({ Bucket: bucket, Key: 'tags/one' }))).TagSet ?? []).toEqual([]);
  });
});

describe('Object Lock', () => {
  it('a bucket created with Object Lock takes a retention on PutObject, answered on HEAD and GetObjectRetention (501 on the embedded store)', async () => {
    const locked = 'passthrough-locked';
    const until = new Date(Date.now() + 24 * 3600_000);
    until.setUTCMilliseconds(0);
    if (!UPSTREAM) {
      await notImplemented(t.s3.send(new CreateBucketCommand({ Bucket: locked, ObjectLockEnabledForBucket: true })));
      return notImplemented(t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'locked', Body: 'x', ObjectLockMode: 'GOVERNANCE', ObjectLockRetainUntilDate: until })));
    }
    await t.s3.send(new CreateBucketCommand({ Bucket: locked, ObjectLockEnabledForBucket: true }));
    const body = 'kept until tomorrow';
    const put = await t.s3.send(new PutObjectCommand({ Bucket: locked, Key: 'record', Body: body, ObjectLockMode: 'GOVERNANCE', ObjectLockRetainUntilDate: until }));
    expect(put.ETag).toBe(etagOf(body));
    const head = await t.s3.send(new HeadObjectCommand({ Bucket: locked, Key: 'record' }));
    expect([head.ObjectLockMode, head.ObjectLockRetainUntilDate?.toISOString(), head.ETag]).toEqual(['GOVERNANCE', until.toISOString(), etagOf(body)]);
    // A key without s3:GetObjectRetention reads the object, not its lock (API_HeadObject: shown only with that permission).
    const reader = sdk(t.casket.url, t.casket.keys.reader!);
    for (const seen of [await reader.send(new HeadObjectCommand({ Bucket: locked, Key: 'record' })), await reader.send(new GetObjectCommand({ Bucket: locked, Key: 'record' }))]) {
      expect([seen.ObjectLockMode, seen.ObjectLockRetainUntilDate, seen.ETag]).toEqual([undefined, undefined, etagOf(body)]);
    }
    // moto 5.2 has no GetObjectRetention (it answers the object).
    if (UPSTREAM === 'rgw') expect((await t.s3.send(new GetObjectRetentionCommand({ Bucket: locked, Key: 'record' }))).Retention?.Mode).toBe('GOVERNANCE');
    // The lock is the upstream's: deleting the version without the bypass is refused there.
    const refused = await failure(t.s3.send(new DeleteObjectCommand({ Bucket: locked, Key: 'record', VersionId: put.VersionId })));
    expect(refused.status).toBe(403);
    await t.s3.send(new DeleteObjectCommand({ Bucket: locked, Key: 'record', VersionId: put.VersionId, BypassGovernanceRetention: true }));
  });
});

describe('bucket policy', () => {
  const policy = JSON.stringify({
    Version: '2012-10-17',
    Statement: [{ Sid: 'ReadAll', Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: arn(`${bucket}/*`) }],
  });

  it("Put/Get/DeleteBucketPolicy round-trip to the upstream; a key whose policy lacks s3:PutBucketPolicy is refused 403 and the policy stays (the embedded store: none, 501)", async () => {
    const bot = sdk(t.casket.url, t.casket.keys.bot!);
    try {
      const denied = await failure(bot.send(new PutBucketPolicyCommand({ Bucket: bucket, Policy: policy })));
      expect([denied.name, denied.status]).toEqual(['AccessDenied', 403]);
      expect(String(denied.error.message)).toContain('s3:PutBucketPolicy');
      if (!UPSTREAM) {
        expect(await failure(t.s3.send(new GetBucketPolicyCommand({ Bucket: bucket })))).toMatchObject({ name: 'NoSuchBucketPolicy', status: 404 });
        return notImplemented(t.s3.send(new PutBucketPolicyCommand({ Bucket: bucket, Policy: policy })));
      }
      await t.s3.send(new PutBucketPolicyCommand({ Bucket: bucket, Policy: policy }));
      const got = await bot.send(new GetBucketPolicyCommand({ Bucket: bucket }));
      expect(JSON.parse(got.Policy!).Statement[0].Sid).toBe('ReadAll');
      expect(await failure(bot.send(new DeleteBucketPolicyCommand({ Bucket: bucket })))).toMatchObject({ name: 'AccessDenied', status: 403 });
      await t.s3.send(new DeleteBucketPolicyCommand({ Bucket: bucket }));
      expect(await failure(t.s3.send(new GetBucketPolicyCommand({ Bucket: bucket })))).toMatchObject({ name: 'NoSuchBucketPolicy', status: 404 });
    } finally {
      bot.destroy();
    }
  });

  it('a write asking for an ACL needs s3:PutObjectAcl as well as s3:PutObject', async () => {
    const bot = sdk(t.casket.url, t.casket.keys.bot!);
    try {
      const denied = await failure(bot.send(new PutObjectCommand({ Bucket: bucket, Key: 'acl/bot', Body: 'x', ACL: 'public-read' })));
      expect([denied.name, denied.status]).toEqual(['AccessDenied', 403]);
      expect(String(denied.error.message)).toContain('s3:PutObjectAcl');
      expect(await failure(t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'acl/bot' })))).toMatchObject({ status: 404 });
    } finally {
      bot.destroy();
    }
  });
});

describe('ACLs', () => {
  it('a canned ACL on PutObject is kept by the upstream and answered by GetObjectAcl (the embedded store keeps objects private)', async () => {
    await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'acl/public', Body: 'x', ACL: 'public-read' }));
    if (!UPSTREAM) return notImplemented(t.s3.send(new PutObjectAclCommand({ Bucket: bucket, Key: 'acl/public', ACL: 'public-read' })));
    const acl = await t.s3.send(new GetObjectAclCommand({ Bucket: bucket, Key: 'acl/public' }));
    expect(acl.Grants?.some((g) => g.Grantee?.URI === 'http://acs.amazonaws.com/groups/global/AllUsers' && g.Permission === 'READ')).toBe(true);
    await t.s3.send(new PutObjectAclCommand({ Bucket: bucket, Key: 'acl/public', ACL: 'private' }));
    const after = await t.s3.send(new GetObjectAclCommand({ Bucket: bucket, Key: 'acl/public' }));
    expect(after.Grants?.some((g) => g.Grantee?.URI?.endsWith('/AllUsers'))).toBe(false);
  });
});

describe('listing owners', () => {
  it("ListObjects names each key's owner as GetObjectAcl does: the upstream's, whose ACLs pass through (s3-tests test_bucket_list_return_data)", async () => {
    await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'owned/one', Body: 'x' }));
    const v1 = await t.s3.send(new ListObjectsCommand({ Bucket: bucket, Prefix: 'owned/' }));
    const v2 = await t.s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'owned/', FetchOwner: true }));
    expect(v1.Contents?.[0]?.Owner).toEqual(v2.Contents?.[0]?.Owner);
    if (!UPSTREAM) return void expect(v1.Contents?.[0]?.Owner?.ID).toBeDefined();
    const acl = await t.s3.send(new GetObjectAclCommand({ Bucket: bucket, Key: 'owned/one' }));
    expect(v1.Contents?.[0]?.Owner).toEqual({ ID: acl.Owner?.ID, DisplayName: acl.Owner?.DisplayName });
    // Without fetch-owner a V2 listing names none, as S3.
    expect((await t.s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'owned/' }))).Contents?.[0]?.Owner).toBeUndefined();
  });
});

describe('lifecycle', () => {
  it('an Expiration rule goes up whole and comes back (on the embedded store, kept and enforced by casket: lifecycle-expiration.test.ts)', async () => {
    await t.s3.send(new PutBucketLifecycleConfigurationCommand({
      Bucket: bucket,
      LifecycleConfiguration: { Rules: [{ ID: 'expire-logs', Status: 'Enabled', Filter: { Prefix: 'logs/' }, Expiration: { Days: 1 } }] },
    }));
    const got = await t.s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: bucket }));
    expect(got.Rules?.map((r) => ({ ID: r.ID, days: r.Expiration?.Days, prefix: r.Filter?.Prefix ?? r.Prefix }))).toEqual([{ ID: 'expire-logs', days: 1, prefix: 'logs/' }]);
  });

  it('an object removed behind casket (as an expiry does): a conditional write with its old ETag is refused, a GET is 404, no stale ETag', async () => {
    const key = 'tmp/expiring';
    const put = await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'v1' }));
    // casket has seen this version: HEAD, GET and a listing.
    expect((await t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }))).ETag).toBe(put.ETag);
    expect(await bytes((await t.s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body)).toEqual(Buffer.from('v1'));
    if (UPSTREAM) {
      const up = direct();
      try {
        await up.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
      } finally {
        up.destroy();
      }
    } else {
      await t.s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    }
    const write = await failure(t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'v2 based on v1', IfMatch: put.ETag })));
    expect([write.name, write.status]).toEqual(['NoSuchKey', 404]);
    expect(await failure(t.s3.send(new GetObjectCommand({ Bucket: bucket, Key: key })))).toMatchObject({ name: 'NoSuchKey', status: 404 });
    expect(await failure(t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key })))).toMatchObject({ status: 404 });
    const listed = await t.s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'tmp/' }));
    expect(listed.Contents ?? []).toEqual([]);
  });
});
