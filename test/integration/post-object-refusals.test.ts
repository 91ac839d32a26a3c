/**
 * POST Object refusals: what a browser form may not do, each answered as AWS
 * answers it and with nothing written — a file past the policy's
 * content-length-range (EntityTooLarge while it streams), an expired
 * policy, a tampered policy or field, a wrong signature, a key whose IAM
 * policy does not allow the bucket/key, an anonymous form, an agent's
 * unconditional overwrite (refused as its PutObject is), a client that
 * disconnects mid-upload or stops sending (--body-timeout-ms). Forms are built by boto3's
 * generate_presigned_post; what no client sends is written raw.
 */
import { CreateBucketCommand, HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { hasPythonModule } from '../helpers/cli-tools.js';
import { failure, sdk } from '../helpers/clients.js';
import { boto3Forms, multipart, rawPost, type FormClient } from '../helpers/post-forms.js';
import { need } from '../helpers/tools.js';

const bucket = 'form-refusals';
const quotedSha256 = (s: string | Buffer) => `"${createHash('sha256').update(s).digest('hex')}"`;
const code = (body: string) => /<Code>([^<]*)<\/Code>/.exec(body)?.[1];
const message = (body: string) => /<Message>([^<]*)<\/Message>/.exec(body)?.[1]?.replace(/&quot;/g, '"');

const available = need('boto3 (python3)', hasPythonModule('boto3'));

describe.runIf(available)('POST Object: refusals write nothing', () => {
  let casket: RunningCasket;
  let admin: S3Client;
  let forms: FormClient;
  const absent = async (key: string) => expect((await failure(admin.send(new HeadObjectCommand({ Bucket: bucket, Key: key })))).status, key).toBe(404);
  const etagOf = async (key: string) => (await admin.send(new HeadObjectCommand({ Bucket: bucket, Key: key }))).ETag;

  beforeAll(async () => {
    casket = await startCasket({
      agents: ['alice'],
      args: ['--body-timeout-ms', '400'],
      keys: { narrow: { policy: { Statement: [{ Effect: 'Allow', Action: 's3:PutObject', Resource: `arn:aws:s3:::${bucket}/allowed/*` }] } } },
    });
    admin = sdk(casket.url, casket.admin);
    await admin.send(new CreateBucketCommand({ Bucket: bucket }));
    forms = boto3Forms(casket.url);
  });
  afterAll(async () => {
    await forms?.close();
    await casket?.stop();
  });

  it('a file past content-length-range is 400 EntityTooLarge, one short of it EntityTooSmall; neither is written', async () => {
    const range = { conditions: [['content-length-range', 4, 10]] };
    const large = await forms.post(await forms.presign(casket.admin, bucket, 'large.txt', range), 'a', 'x'.repeat(11));
    expect([large.status, code(large.body)]).toEqual([400, 'EntityTooLarge']);
    await absent('large.txt');
    const small = await forms.post(await forms.presign(casket.admin, bucket, 'small.txt', range), 'a', 'xyz');
    expect([small.status, code(small.body)]).toEqual([400, 'EntityTooSmall']);
    await absent('small.txt');
    const within = await forms.post(await forms.presign(casket.admin, bucket, 'within.txt', range), 'a', 'x'.repeat(10));
    expect(within.status, within.body).toBe(204);
  });

  it('an expired policy is 403 AccessDenied "Invalid according to Policy: Policy expired."', async () => {
    const reply = await forms.post(await forms.presign(casket.admin, bucket, 'late.txt', { expires: -60 }), 'a', 'too late');
    expect([reply.status, code(reply.body), message(reply.body)]).toEqual([403, 'AccessDenied', 'Invalid according to Policy: Policy expired.']);
    await absent('late.txt');
  });

  it('a tampered policy is 403 SignatureDoesNotMatch; a field the policy does not name, or a key it does not allow, 403 AccessDenied', async () => {
    const form = await forms.presign(casket.admin, bucket, 'exact.txt');
    const doc = JSON.parse(Buffer.from(form.fields.policy!, 'base64').toString());
    doc.conditions = doc.conditions.map((c: unknown) => (Array.isArray(c) && c[1] === '$key' ? ['starts-with', '$key', ''] : c));
    const widened = { ...form.fields, key: 'anything.txt', policy: Buffer.from(JSON.stringify(doc)).toString('base64') };
    const tampered = await rawPost(form.url, multipart(widened, 'a', 'widened'));
    expect([tampered.status, code(tampered.body)]).toEqual([403, 'SignatureDoesNotMatch']);
    const extra = await rawPost(form.url, multipart({ ...form.fields, 'x-amz-meta-evil': '1' }, 'a', 'extra'));
    expect([extra.status, code(extra.body), message(extra.body)]).toEqual([403, 'AccessDenied', 'Invalid according to Policy: Extra input fields: x-amz-meta-evil']);
    const otherKey = await rawPost(form.url, multipart({ ...form.fields, key: 'other.txt' }, 'a', 'other'));
    expect([otherKey.status, code(otherKey.body)]).toEqual([403, 'AccessDenied']);
    for (const key of ['exact.txt', 'anything.txt', 'other.txt']) await absent(key);
  });

  it('a form signed with the wrong secret is 403 SignatureDoesNotMatch, an unknown key 403 InvalidAccessKeyId', async () => {
    const wrong = await forms.post(await forms.presign({ ...casket.admin, secretAccessKey: 'not-the-secret' }, bucket, 'forged.txt'), 'a', 'forged');
    expect([wrong.status, code(wrong.body)]).toEqual([403, 'SignatureDoesNotMatch']);
    const unknown = await forms.post(await forms.presign({ accessKeyId: 'AKIANOBODY', secretAccessKey: 'x' }, bucket, 'forged.txt'), 'a', 'forged');
    expect([unknown.status, code(unknown.body)]).toEqual([403, 'InvalidAccessKeyId']);
    await absent('forged.txt');
  });

  it("the signing key's IAM policy decides: s3:PutObject on that bucket/key, else 403 AccessDenied and nothing written", async () => {
    const denied = await forms.post(await forms.presign(casket.keys.narrow!, bucket, 'outside.txt'), 'a', 'outside');
    expect([denied.status, code(denied.body)]).toEqual([403, 'AccessDenied']);
    expect(message(denied.body)).toContain(`s3:PutObject on resource: "arn:aws:s3:::${bucket}/outside.txt"`);
    await absent('outside.txt');
    const allowed = await forms.post(await forms.presign(casket.keys.narrow!, bucket, 'allowed/inside.txt'), 'a', 'inside');
    expect(allowed.status, allowed.body).toBe(204);
  });

  it('an anonymous form (no signature) is 403 AccessDenied', async () => {
    const reply = await rawPost(`${casket.url}/${bucket}`, multipart({ key: 'anonymous.txt' }, 'a', 'anyone'));
    expect([reply.status, code(reply.body)]).toEqual([403, 'AccessDenied']);
    await absent('anonymous.txt');
  });

  it("an agent's form overwrites only conditionally: unconditional is 428 as its PutObject; If-None-Match in the policy creates once, then 412", async () => {
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'shared.txt', Body: 'the person\'s' }));
    const put = await failure(sdk(casket.url, casket.agents.alice!).send(new PutObjectCommand({ Bucket: bucket, Key: 'shared.txt', Body: 'agent' })));
    const form = await forms.post(await forms.presign(casket.agents.alice!, bucket, 'shared.txt'), 'a', 'agent');
    expect([form.status, code(form.body)]).toEqual([put.status, put.name]);
    expect(form.status).toBe(428);
    expect(await etagOf('shared.txt')).toBe(quotedSha256('the person\'s'));
    const createOnly = { fields: { 'If-None-Match': '*' }, conditions: [{ 'if-none-match': '*' }] };
    const created = await forms.post(await forms.presign(casket.agents.alice!, bucket, 'fresh.txt', createOnly), 'a', 'first');
    expect(created.status, created.body).toBe(204);
    const again = await forms.post(await forms.presign(casket.agents.alice!, bucket, 'fresh.txt', createOnly), 'a', 'second');
    expect([again.status, code(again.body)]).toEqual([412, 'PreconditionFailed']);
    expect(await etagOf('fresh.txt')).toBe(quotedSha256('first'));
  });

  it('a client that disconnects mid-upload writes nothing, and casket keeps serving', async () => {
    const form = await forms.presign(casket.admin, bucket, 'cut.bin');
    const body = multipart(form.fields, 'cut.bin', randomBytes(512 * 1024));
    const cut = await rawPost(form.url, body, body.body.length - 100 * 1024);
    expect(cut.status).toBe(0);
    await new Promise((r) => setTimeout(r, 300));
    await absent('cut.bin');
    const whole = await rawPost(form.url, body);
    expect(whole.status, whole.body).toBe(204);
  });

  it('a form whose file stops arriving is 400 RequestTimeout after --body-timeout-ms, and nothing is written', async () => {
    const form = await forms.presign(casket.admin, bucket, 'stalled.bin');
    const body = multipart(form.fields, 'stalled.bin', randomBytes(64 * 1024));
    const reply = await rawPost(form.url, body, body.body.length - 1024, true);
    expect([reply.status, code(reply.body)]).toEqual([400, 'RequestTimeout']);
    // The answer goes out as the body times out; a commit of what arrived would follow it.
    await new Promise((r) => setTimeout(r, 300));
    await absent('stalled.bin');
  });

  it('a large form refused before its file is read (a malformed x-amz-checksum-sha256) is 400, and casket keeps serving', async () => {
    const form = await forms.presign(casket.admin, bucket, 'bad-checksum.bin', { fields: { 'x-amz-checksum-sha256': 'sailorjerry' }, conditions: [{ 'x-amz-checksum-sha256': 'sailorjerry' }] });
    const reply = await rawPost(form.url, multipart(form.fields, 'a', Buffer.alloc(3 * 1024 * 1024, 'x'))).catch(() => ({ status: 0, body: '' }));
    expect([0, 400]).toContain(reply.status);
    await new Promise((r) => setTimeout(r, 300));
    await absent('bad-checksum.bin');
    const next = await forms.post(await forms.presign(casket.admin, bucket, 'after.txt'), 'a', 'still here');
    expect(next.status, next.body).toBe(204);
  });
});
