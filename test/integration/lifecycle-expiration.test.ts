/**
 * Lifecycle Expiration on the embedded store (issue 44 item 3), as an S3 user
 * meets it: a rule written with the AWS SDK deletes the objects it selects at
 * the next sweep (--multipart-abandon-after 3: a sweep a second), through the
 * guarded delete path — the write log names it LifecycleExpiration with no
 * agent, an agent that read the key is told — while objects outside its
 * prefix or size bounds are kept, a versioned bucket gets a delete marker,
 * GET/HEAD/PUT answer x-amz-expiration, and bad rules are refused as AWS
 * refuses them. The race (a PUT between judging and deleting) is driven with
 * CASKET_TEST_EXPIRY_PAUSE_MS, which holds the sweep between the two.
 * In front of an upstream the upstream expires (passthrough.test.ts): the suites
 * in front of one run this file on the embedded store all the same, never skipped.
 */
import {
  CreateBucketCommand,
  DeleteBucketLifecycleCommand,
  GetBucketLifecycleConfigurationCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectVersionsCommand,
  PutBucketLifecycleConfigurationCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  type LifecycleRule,
  type S3Client,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { subscribe, type Subscription } from '../events/sse.js';
import { introspect } from '../helpers/agents.js';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { bytes, failure, sdk } from '../helpers/clients.js';
import { until } from '../helpers/poll.js';

const PAST = new Date('2020-01-01T00:00:00Z');
const DAY = 24 * 60 * 60 * 1000;
let casket: RunningCasket;
let s3: S3Client;
let events: Subscription | undefined;

beforeAll(async () => {
  casket = await startCasket({ embedded: true, agents: ['bob'], args: ['--multipart-abandon-after', '3'] });
  s3 = sdk(casket.url, casket.admin);
  events = await subscribe(casket.url, casket.admin);
});
afterAll(async () => {
  events?.close();
  await casket?.stop();
});

const rules = (Bucket: string, Rules: LifecycleRule[]) => s3.send(new PutBucketLifecycleConfigurationCommand({ Bucket, LifecycleConfiguration: { Rules } }));
const exists = (Bucket: string, Key: string) => s3.send(new HeadObjectCommand({ Bucket, Key })).then(() => true, (e: { name: string }) => (e.name === 'NotFound' ? false : Promise.reject(e)));

describe('lifecycle Expiration on the embedded store', () => {
  it('expires the objects a rule selects by prefix and size at the next sweep, through the guarded delete: logged as LifecycleExpiration, told to the agent that read them; others are kept', async () => {
    const Bucket = 'expiring';
    await s3.send(new CreateBucketCommand({ Bucket }));
    const old = (await s3.send(new PutObjectCommand({ Bucket, Key: 'logs/old', Body: 'old log' }))).ETag!;
    await s3.send(new PutObjectCommand({ Bucket, Key: 'keep/this', Body: 'kept' }));
    await s3.send(new PutObjectCommand({ Bucket, Key: 'sized/small', Body: 'tiny' }));
    await s3.send(new PutObjectCommand({ Bucket, Key: 'sized/large', Body: 'x'.repeat(100) }));
    const bob = sdk(casket.url, casket.agents.bob!);
    await bytes((await bob.send(new GetObjectCommand({ Bucket, Key: 'logs/old' }))).Body);

    await rules(Bucket, [
      { ID: 'old-logs', Status: 'Enabled', Filter: { Prefix: 'logs/' }, Expiration: { Date: PAST } },
      { ID: 'large', Status: 'Enabled', Filter: { And: { Prefix: 'sized/', ObjectSizeGreaterThan: 10 } }, Expiration: { Date: PAST } },
    ]);
    const got = await s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket }));
    expect(got.Rules?.map((r) => [r.ID, r.Expiration?.Date?.toISOString(), r.Filter])).toEqual([
      ['old-logs', PAST.toISOString(), { Prefix: 'logs/' }],
      ['large', PAST.toISOString(), { And: { Prefix: 'sized/', ObjectSizeGreaterThan: 10 } }],
    ]);

    await until(async () => !(await exists(Bucket, 'logs/old')) && !(await exists(Bucket, 'sized/large')), 'the sweep to expire logs/old and sized/large');
    expect(await exists(Bucket, 'keep/this')).toBe(true);
    expect(await exists(Bucket, 'sized/small')).toBe(true);

    const log = await introspect(casket.url, casket.admin, `/_casket/writes?bucket=${Bucket}&key=logs/old`);
    expect(log.body.writes[0]).toMatchObject({ operation: 'LifecycleExpiration', previousETag: old });
    expect(log.body.writes[0].agent).toBeUndefined();
    expect(log.body.writes[0].accessKey).toBeUndefined();
    const feed = await introspect(casket.url, casket.agents.bob!, '/_casket/agents/bob/changes');
    expect(feed.body.changes.filter((c: { key: string }) => c.key === 'logs/old')).toHaveLength(1);
    const records = await events!.until((rs) => rs.some((r) => r.s3.object.key === 'sized/large'));
    expect(records.filter((r) => r.s3.bucket.name === Bucket && r.casket.operation === 'LifecycleExpiration').map((r) => [r.eventName, r.s3.object.key, r.casket.operation, r.casket.previousETag?.replace(/"/g, '') === old.replace(/"/g, '') || undefined]).sort()).toEqual([
      ['s3:LifecycleExpiration:Delete', 'logs/old', 'LifecycleExpiration', true],
      ['s3:LifecycleExpiration:Delete', 'sized/large', 'LifecycleExpiration', undefined],
    ]);
  });

  it('in a versioned bucket, expiring the current version makes a delete marker and keeps the version, as AWS does', async () => {
    const Bucket = 'expiring-versioned';
    await s3.send(new CreateBucketCommand({ Bucket }));
    await s3.send(new PutBucketVersioningCommand({ Bucket, VersioningConfiguration: { Status: 'Enabled' } }));
    const v1 = await s3.send(new PutObjectCommand({ Bucket, Key: 'doc', Body: 'v1' }));
    await rules(Bucket, [{ ID: 'all', Status: 'Enabled', Filter: {}, Expiration: { Date: PAST } }]);
    await until(async () => !(await exists(Bucket, 'doc')), 'the sweep to expire doc');
    const versions = await s3.send(new ListObjectVersionsCommand({ Bucket }));
    expect(versions.DeleteMarkers?.map((m) => [m.Key, m.IsLatest])).toEqual([['doc', true]]);
    expect(versions.Versions?.map((v) => [v.VersionId, v.IsLatest])).toEqual([[v1.VersionId, false]]);
    const records = await events!.until((rs) => rs.some((r) => r.s3.bucket.name === Bucket && r.casket.operation === 'LifecycleExpiration'));
    expect(records.filter((r) => r.s3.bucket.name === Bucket && r.casket.operation === 'LifecycleExpiration').map((r) => [r.eventName, r.s3.object.versionId])).toEqual([
      ['s3:LifecycleExpiration:DeleteMarkerCreated', versions.DeleteMarkers![0]!.VersionId],
    ]);
    // The marker is no object: later sweeps leave it (and the old version) alone.
    await s3.send(new DeleteBucketLifecycleCommand({ Bucket }));
  });

  it('answers x-amz-expiration on PUT, GET and HEAD: the next midnight UTC after last-modified plus Days, and the rule id', async () => {
    const Bucket = 'expiring-later';
    await s3.send(new CreateBucketCommand({ Bucket }));
    await rules(Bucket, [
      { ID: 'month', Status: 'Enabled', Filter: { Prefix: 'tmp/' }, Expiration: { Days: 30 } },
      { ID: 'week', Status: 'Enabled', Filter: { Prefix: 'tmp/week/' }, Expiration: { Days: 7 } },
    ]);
    const put = await s3.send(new PutObjectCommand({ Bucket, Key: 'tmp/week/a', Body: 'a' }));
    const head = await s3.send(new HeadObjectCommand({ Bucket, Key: 'tmp/week/a' }));
    const midnight = Math.ceil((head.LastModified!.getTime() + 7 * DAY) / DAY) * DAY;
    const expected = `expiry-date="${new Date(midnight).toUTCString()}", rule-id="week"`;
    expect(put.Expiration).toBe(expected);
    expect(head.Expiration).toBe(expected);
    expect((await s3.send(new GetObjectCommand({ Bucket, Key: 'tmp/week/a' }))).Expiration).toBe(expected);
    // The sooner of two rules; and none outside every prefix.
    expect((await s3.send(new PutObjectCommand({ Bucket, Key: 'tmp/b', Body: 'b' }))).Expiration).toMatch(/rule-id="month"$/);
    expect((await s3.send(new PutObjectCommand({ Bucket, Key: 'other', Body: 'c' }))).Expiration).toBeUndefined();
    // Not due: the sweeps keep it.
    expect(await exists(Bucket, 'tmp/week/a')).toBe(true);
  });

  it('refuses bad rules as AWS does, and what it cannot keep, saying why', async () => {
    const Bucket = 'expiring-refused';
    await s3.send(new CreateBucketCommand({ Bucket }));
    const refused = async (rule: LifecycleRule) => {
      const f = await failure(rules(Bucket, [rule]));
      return [f.status, f.name, f.error.message as string] as const;
    };
    const base = { ID: 'r', Status: 'Enabled' as const, Filter: { Prefix: '' } };
    expect(await refused({ ...base, Expiration: { Days: 0 } })).toEqual([400, 'InvalidArgument', "'Days' for Expiration action must be a positive integer"]);
    expect(await refused({ ...base, Expiration: { Date: new Date('2030-01-01T12:00:00Z') } })).toEqual([400, 'InvalidArgument', "'Date' must be at midnight GMT"]);
    expect((await refused({ ...base, Expiration: { Days: 1, Date: PAST } })).slice(0, 2)).toEqual([400, 'MalformedXML']);
    expect((await refused({ ...base, Expiration: {} })).slice(0, 2)).toEqual([400, 'MalformedXML']);
    const tag = await refused({ ID: 'r', Status: 'Enabled', Filter: { Tag: { Key: 'a', Value: 'b' } }, Expiration: { Days: 1 } });
    expect(tag.slice(0, 2)).toEqual([400, 'InvalidRequest']);
    expect(tag[2]).toMatch(/keeps no object tags/);
    const sizes = await refused({ ID: 'r', Status: 'Enabled', Filter: { And: { ObjectSizeGreaterThan: 10, ObjectSizeLessThan: 5 } }, Expiration: { Days: 1 } });
    expect(sizes.slice(0, 2)).toEqual([400, 'InvalidArgument']);
    const transition = await refused({ ...base, Transitions: [{ Days: 30, StorageClass: 'GLACIER' }] });
    expect(transition.slice(0, 2)).toEqual([501, 'NotImplemented']);
    expect(transition[2]).toMatch(/Transition.*storage class/);
    expect((await refused({ ...base, NoncurrentVersionExpiration: { NoncurrentDays: 1 } })).slice(0, 2)).toEqual([501, 'NotImplemented']);
    expect((await refused({ ...base, Expiration: { ExpiredObjectDeleteMarker: true } })).slice(0, 2)).toEqual([501, 'NotImplemented']);
    // Nothing was kept from any of them.
    expect((await failure(s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket })))).name).toBe('NoSuchLifecycleConfiguration');
  });
});

describe('lifecycle Expiration racing a write', () => {
  let racing: RunningCasket;
  afterAll(async () => {
    await racing?.stop();
  });

  it('a PUT that lands between judging and deleting wins: the expiry is conditional on the ETag it judged', async () => {
    racing = await startCasket({ embedded: true, args: ['--multipart-abandon-after', '3'], env: { CASKET_TEST_EXPIRY_PAUSE_MS: '1500' } });
    const c = sdk(racing.url, racing.admin);
    const Bucket = 'racing';
    await c.send(new CreateBucketCommand({ Bucket }));
    const judged = (await c.send(new PutObjectCommand({ Bucket, Key: 'race/x', Body: 'judged' }))).ETag!;
    await c.send(new PutBucketLifecycleConfigurationCommand({ Bucket, LifecycleConfiguration: { Rules: [{ ID: 'race', Status: 'Enabled', Filter: { Prefix: 'race/' }, Expiration: { Date: PAST } }] } }));
    const due = (line: string) => line.includes('lifecycle expiration: objects due') && line.includes('race/x');
    await until(() => racing.logs.some(due), 'the sweep to judge race/x');
    // The sweep holds between judging and deleting: rewrite the object, and drop the rule so no later sweep judges the new version.
    const rewritten = (await c.send(new PutObjectCommand({ Bucket, Key: 'race/x', Body: 'rewritten' }))).ETag!;
    await c.send(new DeleteBucketLifecycleCommand({ Bucket }));
    await until(() => racing.logs.some((l) => l.includes('"key":"race/x"') && /"outcome":"(expired|kept)"/.test(l)), 'the sweep to act on race/x');
    const now = await c.send(new GetObjectCommand({ Bucket, Key: 'race/x' }));
    expect([now.ETag, (await bytes(now.Body)).toString()]).toEqual([rewritten, 'rewritten']);
    const log = await introspect(racing.url, racing.admin, `/_casket/writes?bucket=${Bucket}&key=race/x`);
    expect(log.body.writes.map((w: { operation: string }) => w.operation)).toEqual(['PutObject', 'PutObject']);
    expect(judged).not.toBe(rewritten);
  });
});
