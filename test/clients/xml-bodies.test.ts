/**
 * XML request bodies as real clients write them. rclone (Go's encoding/xml)
 * escapes `"` in a part ETag as `&#34;` and `'` in a key as `&#39;`:
 * numeric character references that every XML parser must decode (XML 1.0
 * §4.1). Text content is significant: a DeleteObjects key ` x ` names the key
 * with the spaces, never `x`.
 */
import { CreateBucketCommand, HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { failure, sdk } from '../helpers/clients.js';
import { raw, xmlField } from '../helpers/raw.js';

let casket: RunningCasket;
let s3: S3Client;
const bucket = 'xml-bodies';

beforeAll(async () => {
  casket = await startCasket();
  s3 = sdk(casket.url, casket.admin);
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
});
afterAll(async () => {
  s3?.destroy();
  await casket?.stop();
});

describe('XML request bodies', () => {
  it('CompleteMultipartUpload: a part ETag written with numeric character references (rclone) names the part', async () => {
    const create = await raw(casket.url, casket.admin, { method: 'POST', path: `/${bucket}/go-xml?uploads=` });
    const uploadId = xmlField(create.body, 'UploadId')!;
    const part = await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}/go-xml?partNumber=1&uploadId=${uploadId}`, body: 'only part' });
    expect(part.status).toBe(200);
    const etag = String(part.headers.etag).replace(/"/g, '');
    const body = `<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Part><ETag>&#34;${etag}&#34;</ETag><PartNumber>1</PartNumber></Part></CompleteMultipartUpload>`;
    const done = await raw(casket.url, casket.admin, { method: 'POST', path: `/${bucket}/go-xml?uploadId=${uploadId}`, body });
    expect(done.status, done.body).toBe(200);
  });

  it('DeleteObjects: keys keep their surrounding spaces and numerically escaped characters', async () => {
    const quoted = `it's "quoted"`;
    for (const key of ['spaced', ' spaced ', quoted]) await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: key }));
    // As Go's encoding/xml writes them: `'` → &#39;, `"` → &#34;.
    const body = `<Delete><Object><Key> spaced </Key></Object><Object><Key>it&#39;s &#34;quoted&#34;</Key></Object></Delete>`;
    const r = await raw(casket.url, casket.admin, { method: 'POST', path: `/${bucket}?delete=`, body, headers: { 'content-md5': createHash('md5').update(body).digest('base64') } });
    expect(r.status, r.body).toBe(200);
    await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'spaced' }));
    expect(await failure(s3.send(new HeadObjectCommand({ Bucket: bucket, Key: ' spaced ' })))).toMatchObject({ status: 404 });
    expect(await failure(s3.send(new HeadObjectCommand({ Bucket: bucket, Key: quoted })))).toMatchObject({ status: 404 });
  });
});
