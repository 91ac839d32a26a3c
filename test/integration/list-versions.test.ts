/**
 * ListObjectVersions on casket's (unversioned) buckets, as AWS S3 answers it
 * for a bucket that never had versioning: every object once,
 * VersionId `null`, IsLatest true, casket's SHA-256 ETag; key-marker /
 * version-id-marker paging, prefix, delimiter, encoding-type=url; and the
 * cleanup every tool does with it — DeleteObject / DeleteObjects with
 * VersionId=null — through the JS SDK, boto3 and awscli. Runs on the
 * embedded store and through moto and RGW: the upstream's own version listing
 * (MD5 ETags, its version ids) never shows.
 */
import {
  CreateBucketCommand, DeleteObjectCommand, DeleteObjectsCommand, HeadObjectCommand, ListObjectVersionsCommand, PutObjectCommand,
  type ListObjectVersionsCommandOutput,
} from '@aws-sdk/client-s3';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { failure } from '../helpers/clients.js';
import { awsCli, hasPythonModule, ok, python3, run } from '../helpers/cli-tools.js';
import { errorCode, raw } from '../helpers/raw.js';
import { casketWithBucket, etagOf } from '../helpers/suite.js';
import { need } from '../helpers/tools.js';
import { upstreamKindFromEnv } from '../helpers/upstream.js';

const t = casketWithBucket('versions');
const bucket = t.bucket;
const KEYS = ['a.txt', 'dir/one', 'dir/sub/two', 'sp ace+plus/é.txt', 'z'];

async function putAll(b: string, keys: string[]): Promise<void> {
  for (const key of keys) await t.s3.send(new PutObjectCommand({ Bucket: b, Key: key, Body: `body of ${key}` }));
}

describe('ListObjectVersions', () => {
  it('lists every object once as its null version, with casket ETags, and no delete markers', async () => {
    await putAll(bucket, KEYS);
    const r = await t.s3.send(new ListObjectVersionsCommand({ Bucket: bucket }));
    expect(r.DeleteMarkers ?? []).toEqual([]);
    expect(r.IsTruncated).toBe(false);
    expect(r.Versions!.map((v) => v.Key)).toEqual(KEYS);
    for (const v of r.Versions!) {
      expect(v).toMatchObject({ VersionId: 'null', IsLatest: true, ETag: etagOf(`body of ${v.Key}`), Size: Buffer.byteLength(`body of ${v.Key}`), StorageClass: 'STANDARD' });
      expect(v.Owner?.ID).toBeTruthy();
      const head = await t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: v.Key! }));
      expect(head.ETag).toBe(v.ETag);
      expect(Math.abs(head.LastModified!.getTime() - v.LastModified!.getTime())).toBeLessThan(1000);
    }
  });

  it('pages with key-marker / version-id-marker, max-keys, prefix and delimiter', async () => {
    const seen: string[] = [];
    let keyMarker: string | undefined;
    let versionIdMarker: string | undefined;
    for (let page = 0; page < 10; page++) {
      const r: ListObjectVersionsCommandOutput = await t.s3.send(new ListObjectVersionsCommand({ Bucket: bucket, MaxKeys: 2, KeyMarker: keyMarker, VersionIdMarker: versionIdMarker }));
      expect(r.MaxKeys).toBe(2);
      seen.push(...r.Versions!.map((v) => v.Key!));
      if (!r.IsTruncated) break;
      expect(r.NextVersionIdMarker).toBe('null');
      keyMarker = r.NextKeyMarker;
      versionIdMarker = r.NextVersionIdMarker;
    }
    expect(seen).toEqual(KEYS);
    const rolled = await t.s3.send(new ListObjectVersionsCommand({ Bucket: bucket, Delimiter: '/' }));
    expect(rolled.Versions!.map((v) => v.Key)).toEqual(['a.txt', 'z']);
    expect(rolled.CommonPrefixes!.map((p) => p.Prefix)).toEqual(['dir/', 'sp ace+plus/']);
    expect(rolled.Delimiter).toBe('/');
    const under = await t.s3.send(new ListObjectVersionsCommand({ Bucket: bucket, Prefix: 'dir/', Delimiter: '/' }));
    expect([under.Versions!.map((v) => v.Key), under.CommonPrefixes!.map((p) => p.Prefix), under.Prefix]).toEqual([['dir/one'], ['dir/sub/'], 'dir/']);
    // A page that ends on a common prefix resumes after everything under it.
    const first = await t.s3.send(new ListObjectVersionsCommand({ Bucket: bucket, Delimiter: '/', MaxKeys: 2 }));
    expect([first.IsTruncated, first.NextKeyMarker, first.NextVersionIdMarker]).toEqual([true, 'dir/', undefined]);
    const rest = await t.s3.send(new ListObjectVersionsCommand({ Bucket: bucket, Delimiter: '/', KeyMarker: first.NextKeyMarker }));
    expect([rest.Versions!.map((v) => v.Key), rest.CommonPrefixes!.map((p) => p.Prefix)]).toEqual([['z'], ['sp ace+plus/']]);
  });

  it('encodes keys, prefixes and markers as AWS does with encoding-type=url', async () => {
    const r = await raw(t.casket.url, t.casket.admin, { method: 'GET', path: `/${bucket}?versions&encoding-type=url&prefix=sp%20ace&key-marker=sp%20ace%2Bplus%2F`, headers: {} });
    expect(r.status).toBe(200);
    expect(r.body).toContain('<Key>sp%20ace%2Bplus/%C3%A9.txt</Key>');
    expect(r.body).toContain('<Prefix>sp%20ace</Prefix>');
    expect(r.body).toContain('<KeyMarker>sp%20ace%2Bplus/</KeyMarker>');
    expect(r.body).toContain('<EncodingType>url</EncodingType>');
  });

  it('refuses a version-id-marker without a key-marker, or a version id other than null', async () => {
    const alone = await raw(t.casket.url, t.casket.admin, { method: 'GET', path: `/${bucket}?versions&version-id-marker=null` });
    expect([alone.status, errorCode(alone.body)]).toEqual([400, 'InvalidArgument']);
    const bogus = await raw(t.casket.url, t.casket.admin, { method: 'GET', path: `/${bucket}?versions&key-marker=a.txt&version-id-marker=3HL4kqtJlcpXroDTDmJ` });
    // (an id the bucket could never have had: the embedded store's form; an unversioned upstream bucket has only `null`)
    expect([bogus.status, errorCode(bogus.body)]).toEqual([400, 'InvalidArgument']);
    const missing = await failure(t.s3.send(new ListObjectVersionsCommand({ Bucket: 'no-such-bucket-here' })));
    expect(missing).toMatchObject({ name: 'NoSuchBucket', status: 404 });
  });
});

describe('deleting the null version', () => {
  it('DeleteObject and DeleteObjects take VersionId=null; a version id of another form is refused', async () => {
    await putAll(bucket, ['del/one', 'del/two', 'del/three']);
    await t.s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'del/one', VersionId: 'null' }));
    expect(await failure(t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'del/one' })))).toMatchObject({ status: 404 });
    // In front of an upstream, the upstream judges version ids (moto deletes nothing and says so with a 204).
    const embedded = upstreamKindFromEnv() === undefined;
    if (embedded) expect(await failure(t.s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'del/two', VersionId: 'L4kqtJlcpXroDTDmpUMLUo' })))).toMatchObject({ name: 'InvalidArgument', status: 400 });
    const r = await t.s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: [{ Key: 'del/two', VersionId: 'null' }, ...(embedded ? [{ Key: 'del/three', VersionId: 'L4kqtJlcpXroDTDmpUMLUo' }] : [])] } }));
    expect(r.Deleted).toEqual([{ Key: 'del/two', VersionId: 'null' }]);
    if (embedded) expect(r.Errors).toEqual([expect.objectContaining({ Key: 'del/three', VersionId: 'L4kqtJlcpXroDTDmpUMLUo', Code: 'NoSuchVersion' })]);
    const left = await t.s3.send(new ListObjectVersionsCommand({ Bucket: bucket, Prefix: 'del/' }));
    expect(left.Versions!.map((v) => [v.Key, v.ETag])).toEqual([['del/three', etagOf('body of del/three')]]);
  });
});

const haveBoto3 = need('boto3 (python3)', hasPythonModule('boto3'));

/** The script every "empty a versioned bucket" guide gives: page through the versions, delete them all, delete the bucket. */
const EMPTY_BUCKET = `
import json, sys
import boto3
from botocore.config import Config
a = json.loads(sys.argv[1])
s3 = boto3.client("s3", endpoint_url=a["endpoint"], aws_access_key_id=a["key"], aws_secret_access_key=a["secret"], region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
versions = []
for page in s3.get_paginator("list_object_versions").paginate(Bucket=a["bucket"], PaginationConfig={"PageSize": 2}):
    versions += [{"Key": v["Key"], "VersionId": v["VersionId"], "ETag": v["ETag"], "IsLatest": v["IsLatest"]} for v in page.get("Versions", [])]
    versions += [{"Key": m["Key"], "VersionId": m["VersionId"], "marker": True} for m in page.get("DeleteMarkers", [])]
r = s3.delete_objects(Bucket=a["bucket"], Delete={"Objects": [{"Key": v["Key"], "VersionId": v["VersionId"]} for v in versions]})
s3.delete_bucket(Bucket=a["bucket"])
print(json.dumps({"versions": versions, "deleted": r.get("Deleted", []), "errors": r.get("Errors", [])}))
`;

describe.runIf(haveBoto3)('cleanup tools', () => {
  it('boto3: the list_object_versions paginator (encoding-type=url) and delete_objects with VersionId empty the bucket', async () => {
    const b = 'versions-boto3';
    await t.s3.send(new CreateBucketCommand({ Bucket: b }));
    await putAll(b, KEYS);
    const args = JSON.stringify({ endpoint: t.casket.url, key: t.casket.admin.accessKeyId, secret: t.casket.admin.secretAccessKey, bucket: b });
    const out = JSON.parse(ok(await run('boto3', python3(), ['-c', EMPTY_BUCKET, args])).stdout) as {
      versions: Array<{ Key: string; VersionId: string; ETag?: string; IsLatest?: boolean; marker?: boolean }>;
      deleted: Array<{ Key: string; VersionId?: string }>;
      errors: unknown[];
    };
    expect(out.versions).toEqual(KEYS.map((key) => ({ Key: key, VersionId: 'null', ETag: etagOf(`body of ${key}`), IsLatest: true })));
    expect(out.errors).toEqual([]);
    expect(out.deleted.map((d) => d.Key).sort()).toEqual([...KEYS].sort());
  });

  it('awscli: s3api list-object-versions shows the null versions with casket ETags', async () => {
    const cli = awsCli(mkdtempSync(join(tmpdir(), 'casket-versions-')), { url: t.casket.url }, t.casket.admin);
    const r = ok(await cli.run(['s3api', 'list-object-versions', '--bucket', bucket, '--prefix', 'dir/', '--output', 'json']));
    const parsed = JSON.parse(r.stdout) as { Versions: Array<{ Key: string; VersionId: string; IsLatest: boolean; ETag: string }> };
    expect(parsed.Versions.map((v) => [v.Key, v.VersionId, v.IsLatest, v.ETag])).toEqual([
      ['dir/one', 'null', true, etagOf('body of dir/one')],
      ['dir/sub/two', 'null', true, etagOf('body of dir/sub/two')],
    ]);
  });
});
