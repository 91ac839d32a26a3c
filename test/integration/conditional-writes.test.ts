/**
 * S3 conditional writes (docs/design.md §3) through casket, by a person (admin key,
 * no agent): If-Match / If-None-Match on PutObject, CopyObject,
 * CompleteMultipartUpload, DeleteObject; 412 with the current ETag; identical bytes
 * still refused (PutObject, CopyObject, DeleteObjects entries); and the races: 16 writers, one ETag, exactly one winner; 16
 * agents (bound keys) creating one key with the same bytes, and 8 identical
 * If-Match writes by a person: one 200, every other a 412 naming the winner.
 */
import {
  CompleteMultipartUploadCommand, CopyObjectCommand, CreateMultipartUploadCommand,
  DeleteObjectCommand, HeadObjectCommand, PutObjectCommand, UploadPartCommand,
} from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { casketWithBucket, etagOf } from '../helpers/suite.js';
import { failure } from '../helpers/clients.js';
import { errorCode, raw, xmlField } from '../helpers/raw.js';
import { introspect } from '../helpers/agents.js';

const quoted = etagOf;

/** Agents with a bound key each, for the create-only race. */
const RACERS = Array.from({ length: 16 }, (_, i) => `racer-${i}`);
const t = casketWithBucket('cond', { agents: RACERS });
const bucket = t.bucket;

describe('PutObject conditions', () => {
  it('If-None-Match: * creates once, then 412 with the current ETag', async () => {
    const put = await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'create', Body: 'one', IfNoneMatch: '*' }));
    expect(put.ETag).toBe(quoted('one'));
    const r = await raw(t.casket.url, t.casket.admin, { method: 'PUT', path: `/${bucket}/create`, headers: { 'if-none-match': '*' }, body: 'two' });
    expect(r.status).toBe(412);
    expect(errorCode(r.body)).toBe('PreconditionFailed');
    expect(r.headers.etag).toBe(quoted('one'));
    expect(xmlField(r.body, 'CurrentETag')).toBe(quoted('one'));
    expect(r.headers['last-modified']).toBeTruthy();
  });

  it('If-Match replaces only the version named, quoted or not', async () => {
    const v1 = await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'cas', Body: 'v1' }));
    const v2 = await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'cas', Body: 'v2', IfMatch: v1.ETag }));
    expect(v2.ETag).toBe(quoted('v2'));
    const stale = await failure(t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'cas', Body: 'v3', IfMatch: v1.ETag })));
    expect(stale).toMatchObject({ name: 'PreconditionFailed', status: 412 });
    const unquoted = await raw(t.casket.url, t.casket.admin, { method: 'PUT', path: `/${bucket}/cas`, headers: { 'if-match': v2.ETag!.slice(1, -1) }, body: 'v3' });
    expect(unquoted.status).toBe(200);
    const head = await t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'cas' }));
    expect(head.ETag).toBe(quoted('v3'));
  });

  it('If-Match on a missing key is 404 NoSuchKey (If-None-Match with an ETag: if-none-match-etag.test.ts)', async () => {
    expect(await failure(t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'absent', Body: 'x', IfMatch: quoted('x') })))).toMatchObject({ name: 'NoSuchKey', status: 404 });
    expect(await failure(t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'absent' })))).toMatchObject({ status: 404 });
  });

  it('the same bytes under a replaced If-Match are a 412 that says the content is identical (signed hash and streamed body)', async () => {
    const v1 = await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'retry', Body: 'old' }));
    const first = await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'retry', Body: 'new', IfMatch: v1.ETag }));
    // A second call (a new invocation, not an SDK retry) with the same bytes
    // is the counter case — two increments from "10" to "11": S3 says 412.
    expect(await failure(t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'retry', Body: 'new', IfMatch: v1.ETag })))).toMatchObject({ status: 412 });
    expect(await failure(t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'retry', Body: Readable.from([Buffer.from('new')]), ContentLength: 3, IfMatch: v1.ETag })))).toMatchObject({ status: 412 });
    const same = await raw(t.casket.url, t.casket.admin, { method: 'PUT', path: `/${bucket}/retry`, headers: { 'if-match': v1.ETag! }, body: 'new' });
    expect(same.status).toBe(412);
    expect(same.headers['x-casket-identical-content']).toBe('true');
    expect(xmlField(same.body, 'IdenticalContent')).toBe('true');
    expect(xmlField(same.body, 'CurrentETag')).toBe(first.ETag);
    expect(xmlField(same.body, 'Message')).toMatch(/byte-for-byte what you sent/);
    // Different content with the stale ETag loses without the note.
    const other = await raw(t.casket.url, t.casket.admin, { method: 'PUT', path: `/${bucket}/retry`, headers: { 'if-match': v1.ETag! }, body: 'other' });
    expect(other.status).toBe(412);
    expect(other.headers['x-casket-identical-content']).toBeUndefined();
    expect((await t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'retry' }))).ETag).toBe(first.ETag);
  });

  it('If-None-Match: * on an existing key names If-None-Match and says the key exists', async () => {
    await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'exists', Body: 'here' }));
    const r = await raw(t.casket.url, t.casket.admin, { method: 'PUT', path: `/${bucket}/exists`, headers: { 'if-none-match': '*' }, body: 'here' });
    expect(r.status).toBe(412);
    expect(xmlField(r.body, 'Condition')).toBe('If-None-Match');
    expect(xmlField(r.body, 'Message')).toMatch(/already exists .*If-None-Match: \* only creates/);
  });

  it('a refused body is not written: the object keeps its version', async () => {
    await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'keep', Body: 'kept' }));
    await failure(t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'keep', Body: Readable.from([Buffer.from('lost')]), ContentLength: 4, IfMatch: quoted('nope') })));
    expect((await t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'keep' }))).ETag).toBe(quoted('kept'));
  });
});

describe('other writes', () => {
  it('DeleteObject honours If-Match', async () => {
    const v = await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'del', Body: 'd' }));
    expect(await failure(t.s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'del', IfMatch: quoted('other') })))).toMatchObject({ status: 412 });
    await t.s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'del', IfMatch: v.ETag }));
    expect(await failure(t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'del' })))).toMatchObject({ status: 404 });
  });

  it('CopyObject honours If-Match / If-None-Match on the destination', async () => {
    await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'csrc', Body: 'src' }));
    await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'cdst', Body: 'dst' }));
    expect(await failure(t.s3.send(new CopyObjectCommand({ Bucket: bucket, Key: 'cdst', CopySource: `${bucket}/csrc`, IfNoneMatch: '*' })))).toMatchObject({ status: 412 });
    expect(await failure(t.s3.send(new CopyObjectCommand({ Bucket: bucket, Key: 'cdst', CopySource: `${bucket}/csrc`, IfMatch: quoted('x') })))).toMatchObject({ status: 412 });
    const ok = await t.s3.send(new CopyObjectCommand({ Bucket: bucket, Key: 'cdst', CopySource: `${bucket}/csrc`, IfMatch: quoted('dst') }));
    expect(ok.CopyObjectResult?.ETag).toBe(quoted('src'));
  });

  it('the counter case holds for CopyObject and DeleteObjects: a replaced version named is a 412, though the bytes now current are the ones sent', async () => {
    // Alice and Bob read "10"; Alice makes it "11"; Bob copies an "11" of his own over it, conditioned on "10".
    const v10 = await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'counter-copy', Body: '10' }));
    const v11 = await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'counter-copy', Body: '11', IfMatch: v10.ETag }));
    await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'bobs-11', Body: '11' }));
    const copy = await raw(t.casket.url, t.casket.admin, { method: 'PUT', path: `/${bucket}/counter-copy`, headers: { 'x-amz-copy-source': `/${bucket}/bobs-11`, 'if-match': v10.ETag! } });
    expect(copy.status).toBe(412);
    expect(errorCode(copy.body)).toBe('PreconditionFailed');
    expect(copy.headers.etag).toBe(v11.ETag);
    expect(copy.headers['x-casket-identical-content']).toBe('true');
    // DeleteObjects: an entry naming the replaced version is refused in its <Error>, and the key stays.
    const xml = `<Delete><Object><Key>counter-copy</Key><ETag>${v10.ETag}</ETag></Object></Delete>`;
    const md5 = createHash('md5').update(xml).digest('base64');
    const batch = await raw(t.casket.url, t.casket.admin, { method: 'POST', path: `/${bucket}?delete`, headers: { 'content-md5': md5, 'content-type': 'application/xml' }, body: xml });
    expect(batch.status).toBe(200);
    expect(xmlField(batch.body, 'Code')).toBe('PreconditionFailed');
    expect(batch.body).not.toContain('<Deleted>');
    expect((await t.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'counter-copy' }))).ETag).toBe(v11.ETag);
  });

  it('CompleteMultipartUpload honours If-None-Match: *', async () => {
    await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'mpu', Body: 'exists' }));
    const { UploadId } = await t.s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'mpu' }));
    const part = await t.s3.send(new UploadPartCommand({ Bucket: bucket, Key: 'mpu', UploadId, PartNumber: 1, Body: 'only part' }));
    expect(part.ETag).toBe(`"${createHash('md5').update('only part').digest('hex')}"`);
    const refused = await failure(t.s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: 'mpu', UploadId, IfNoneMatch: '*', MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] } })));
    expect(refused).toMatchObject({ status: 412 });
    const done = await t.s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: 'mpu', UploadId, IfMatch: quoted('exists'), MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] } }));
    expect(done.ETag).toMatch(/^"[0-9a-f]{64}-1"$/);
  });
});

describe('the race', () => {
  it('16 concurrent PutObject with one If-Match: exactly one 200, fifteen 412 naming the winner — 50 rounds', async () => {
    const key = 'race';
    let current = (await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'round -1' }))).ETag!;
    for (let round = 0; round < 50; round++) {
      const results = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          raw(t.casket.url, t.casket.admin, { method: 'PUT', path: `/${bucket}/${key}`, headers: { 'if-match': current }, body: `round ${round} writer ${i}` }),
        ),
      );
      const winners = results.filter((r) => r.status === 200);
      const losers = results.filter((r) => r.status === 412);
      expect(winners.length, `round ${round}`).toBe(1);
      expect(losers.length, `round ${round}`).toBe(15);
      const winner = winners[0]!.headers.etag as string;
      for (const l of losers) {
        expect(l.headers.etag).toBe(winner);
        expect(xmlField(l.body, 'CurrentETag')).toBe(winner);
      }
      current = winner;
    }
  });

  it('16 agents (bound keys) race If-None-Match: * with the same bytes on a new key: one 200, fifteen 412 naming that agent', async () => {
    const key = 'created-once';
    const body = 'the same content from every agent';
    const results = await Promise.all(
      RACERS.map((name) => raw(t.casket.url, t.casket.agents[name]!, { method: 'PUT', path: `/${bucket}/${key}`, headers: { 'if-none-match': '*' }, body })),
    );
    const won = RACERS.filter((_, i) => results[i]!.status === 200);
    expect(won, 'the agents that got 200').toHaveLength(1);
    const winner = won[0]!;
    expect(results[RACERS.indexOf(winner)]!.headers.etag).toBe(quoted(body));
    for (const [i, r] of results.entries()) {
      if (RACERS[i] === winner) continue;
      // Identical bytes are no reason to succeed: each loser is told the key exists, and who made it.
      expect([RACERS[i], r.status, errorCode(r.body)]).toEqual([RACERS[i], 412, 'PreconditionFailed']);
      expect(xmlField(r.body, 'Condition'), RACERS[i]).toBe('If-None-Match');
      expect(r.headers.etag, RACERS[i]).toBe(quoted(body));
      expect(r.headers['x-casket-writer'], RACERS[i]).toBe(winner);
    }
    // One write happened, by the winner.
    const log = await introspect(t.casket.url, t.casket.admin, `/_casket/writes?bucket=${bucket}&key=${key}`);
    expect(log.status).toBe(200);
    expect(log.body.writes.map((w: { agent?: string; newETag?: string }) => [w.agent, w.newETag])).toEqual([[winner, quoted(body)]]);
    const head = await raw(t.casket.url, t.casket.admin, { method: 'HEAD', path: `/${bucket}/${key}` });
    expect([head.status, head.headers.etag, head.headers['x-casket-writer']]).toEqual([200, quoted(body), winner]);
  });

  it("8 identical If-Match: <E0> writes by a person's key: one 200, seven 412 naming the version it made", async () => {
    const key = 'same-eight';
    const e0 = (await t.s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: '10' }))).ETag!;
    // The counter case eight times over: all read "10", all write "11".
    const results = await Promise.all(
      Array.from({ length: 8 }, () => raw(t.casket.url, t.casket.admin, { method: 'PUT', path: `/${bucket}/${key}`, headers: { 'if-match': e0 }, body: '11' })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 412, 412, 412, 412, 412, 412, 412]);
    expect(results.find((r) => r.status === 200)!.headers.etag).toBe(quoted('11'));
    for (const [i, r] of results.entries()) {
      if (r.status === 200) continue;
      expect([i, errorCode(r.body), r.headers.etag, xmlField(r.body, 'CurrentETag')]).toEqual([i, 'PreconditionFailed', quoted('11'), quoted('11')]);
      expect(r.headers['x-casket-identical-content'], `writer ${i}`).toBe('true');
    }
    // One increment, not eight: the write log has E0 and the one write made on it.
    const log = await introspect(t.casket.url, t.casket.admin, `/_casket/writes?bucket=${bucket}&key=${key}`);
    expect(log.body.writes.map((w: { previousETag?: string; newETag?: string }) => w.newETag)).toEqual([quoted('11'), e0]);
    expect(log.body.writes[0]).toMatchObject({ previousETag: e0 });
  });
});
