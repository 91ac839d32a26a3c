/**
 * POST Object (https://docs.aws.amazon.com/AmazonS3/latest/API/RESTObjectPOST.html)
 * as a browser-form upload is built by a real client: boto3's
 * generate_presigned_post makes the form (SigV4, and its default SigV2),
 * urllib3 posts it. The upload is a PutObject: the SHA-256 ETag, the
 * fields stored as its headers, `${filename}` in the key, the answers AWS
 * gives for success_action_status / success_action_redirect, and the write
 * log naming it PostObject. Refusals: post-object-refusals.test.ts.
 */
import { CreateBucketCommand, GetObjectCommand, HeadObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { introspect } from '../helpers/agents.js';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { hasPythonModule } from '../helpers/cli-tools.js';
import { bytes, sdk } from '../helpers/clients.js';
import { boto3Forms, type FormClient } from '../helpers/post-forms.js';
import { need } from '../helpers/tools.js';

const bucket = 'forms';
const quotedSha256 = (s: string) => `"${createHash('sha256').update(s).digest('hex')}"`;

// In CI a missing tool fails the run (need throws); elsewhere the file is skipped.
const available = need('boto3 (python3)', hasPythonModule('boto3'));

describe.runIf(available)('POST Object: browser-form uploads', () => {
  let casket: RunningCasket;
  let admin: S3Client;
  let forms: FormClient;

  beforeAll(async () => {
    casket = await startCasket();
    admin = sdk(casket.url, casket.admin);
    await admin.send(new CreateBucketCommand({ Bucket: bucket }));
    forms = boto3Forms(casket.url);
  });
  afterAll(async () => {
    await forms?.close();
    await casket?.stop();
  });

  it('a SigV4 form from generate_presigned_post uploads: 204 with the SHA-256 ETag, the bytes readable under it', async () => {
    const form = await forms.presign(casket.admin, bucket, 'plain.txt');
    const reply = await forms.post(form, 'local.txt', 'hello form');
    expect(reply.status, reply.body).toBe(204);
    expect(reply.headers.etag).toBe(quotedSha256('hello form'));
    const got = await admin.send(new GetObjectCommand({ Bucket: bucket, Key: 'plain.txt' }));
    expect(got.ETag).toBe(reply.headers.etag);
    expect((await bytes(got.Body)).toString()).toBe('hello form');
  });

  it("boto3's default form (Signature Version 2: AWSAccessKeyId, signature) uploads too", async () => {
    const form = await forms.presign(casket.admin, bucket, 'v2.txt', { v4: false });
    expect(form.fields.signature).toBeDefined();
    const reply = await forms.post(form, 'v2.txt', 'signed the old way');
    expect(reply.status, reply.body).toBe(204);
    expect((await admin.send(new HeadObjectCommand({ Bucket: bucket, Key: 'v2.txt' }))).ETag).toBe(quotedSha256('signed the old way'));
  });

  it('${filename} in the key is the file part\'s name; Content-Type and x-amz-meta-* fields are stored', async () => {
    const form = await forms.presign(casket.admin, bucket, 'uploads/${filename}', {
      fields: { 'Content-Type': 'text/plain', 'x-amz-meta-owner': 'ada' },
      conditions: [['starts-with', '$Content-Type', 'text/'], { 'x-amz-meta-owner': 'ada' }],
    });
    const reply = await forms.post(form, 'notes.txt', 'from a form');
    expect(reply.status, reply.body).toBe(204);
    const head = await admin.send(new HeadObjectCommand({ Bucket: bucket, Key: 'uploads/notes.txt' }));
    expect(head.ContentType).toBe('text/plain');
    expect(head.Metadata).toEqual({ owner: 'ada' });
  });

  it('success_action_status 201 answers a PostResponse, 200 an empty 200; success_action_redirect a 303 carrying bucket, key and etag', async () => {
    const created = await forms.post(await forms.presign(casket.admin, bucket, 's201.txt', { fields: { success_action_status: '201' }, conditions: [{ success_action_status: '201' }] }), 'a', 'one');
    expect(created.status, created.body).toBe(201);
    expect(created.body).toContain('<PostResponse');
    expect(created.body).toContain('<Key>s201.txt</Key>');
    expect(created.body).toContain(`<ETag>${quotedSha256('one').replace(/"/g, '&quot;')}</ETag>`);
    const ok = await forms.post(await forms.presign(casket.admin, bucket, 's200.txt', { fields: { success_action_status: '200' }, conditions: [{ success_action_status: '200' }] }), 'a', 'two');
    expect([ok.status, ok.body]).toEqual([200, '']);
    const back = 'http://app.example/done';
    const redirected = await forms.post(await forms.presign(casket.admin, bucket, 'redirect me.txt', { fields: { success_action_redirect: back }, conditions: [{ success_action_redirect: back }] }), 'a', 'three');
    expect(redirected.status, redirected.body).toBe(303);
    expect(redirected.headers.location).toBe(`${back}?bucket=${bucket}&key=redirect%20me.txt&etag=${encodeURIComponent(quotedSha256('three'))}`);
  });

  it('the write log names the upload PostObject, with the key that signed the form', async () => {
    const reply = await forms.post(await forms.presign(casket.admin, bucket, 'logged.txt'), 'a', 'logged');
    expect(reply.status, reply.body).toBe(204);
    const log = await introspect(casket.url, casket.admin, `/_casket/writes?bucket=${bucket}&key=logged.txt`);
    expect(log.body.writes[0]).toMatchObject({ operation: 'PostObject', newETag: quotedSha256('logged'), accessKey: casket.admin.accessKeyId });
  });
});
