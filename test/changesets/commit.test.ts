/**
 * Changesets (issue 39) through a real casket: POST /_casket/commit signed
 * with SigV4 by @smithy/signature-v4, and MCP write_files with the SDK's
 * Client. Several writes and deletes land together or not at all; a refusal
 * lists every refused entry as its single write's refusal says it.
 */
import { createHash } from 'node:crypto';
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { commit, multipart } from '../helpers/changeset.js';
import { bytes, sdk } from '../helpers/clients.js';
import { call, data, httpClient, mintToken, text } from '../helpers/mcp.js';
import { textOnlyOnError } from '../helpers/model-view.js';
import { raw, sha256hex } from '../helpers/raw.js';

let casket: RunningCasket;
let ann: Client;
const bucket = 'changes';
const quoted = (s: string) => `"${createHash('sha256').update(s).digest('hex')}"`;

beforeAll(async () => {
  casket = await startCasket({ agents: ['ann', 'ben'] });
  await sdk(casket.url, casket.admin).send(new CreateBucketCommand({ Bucket: bucket }));
  ann = await httpClient(casket, mintToken(casket.agents.ann!), 'ann');
});
afterAll(async () => {
  await ann?.close();
  await casket?.stop();
});

async function content(key: string): Promise<string | undefined> {
  try {
    return (await bytes((await sdk(casket.url, casket.admin).send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body)).toString();
  } catch (e) {
    if ((e as { name?: string }).name === 'NoSuchKey') return undefined;
    throw e;
  }
}

async function put(key: string, body: string): Promise<void> {
  await sdk(casket.url, casket.admin).send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
}

describe('POST /_casket/commit', () => {
  it('writes, creates and deletes together; the write log groups the entries under the changeset id', async () => {
    await put('h/a.txt', 'a1');
    await put('h/gone.txt', 'bye');
    const r = await commit(casket.url, casket.admin, bucket, [
      { key: 'h/a.txt', body: 'a2', 'if-match': quoted('a1') },
      { key: 'h/new.txt', body: 'fresh', 'if-none-match': '*' },
      { key: 'h/gone.txt', 'if-match': quoted('bye') },
    ]);
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(r.json.landed).toEqual([
      { key: 'h/a.txt', etag: quoted('a2') },
      { key: 'h/new.txt', etag: quoted('fresh') },
      { key: 'h/gone.txt', etag: null },
    ]);
    expect([await content('h/a.txt'), await content('h/new.txt'), await content('h/gone.txt')]).toEqual(['a2', 'fresh', undefined]);
    const log = await raw(casket.url, casket.admin, { method: 'GET', path: `/_casket/writes?bucket=${bucket}` });
    const entries = (JSON.parse(log.body) as { writes: Array<{ key: string; changeset?: string }> }).writes.filter((e) => e.key.startsWith('h/') && e.changeset !== undefined);
    expect(entries.map((e) => e.key).sort()).toEqual(['h/a.txt', 'h/gone.txt', 'h/new.txt']);
    expect(new Set(entries.map((e) => e.changeset))).toEqual(new Set([r.json.changeset]));
  });

  it('a changeset of deletes only lands (no body staged)', async () => {
    await put('d/x.txt', 'x');
    await put('d/y.txt', 'y');
    const r = await commit(casket.url, casket.admin, bucket, [
      { key: 'd/x.txt', 'if-match': quoted('x') },
      { key: 'd/y.txt', 'if-match': quoted('y') },
    ]);
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect([await content('d/x.txt'), await content('d/y.txt')]).toEqual([undefined, undefined]);
  });

  it('one stale entry: 412, every refused entry listed with its current ETag, and nothing written', async () => {
    await put('s/a.txt', 'a1');
    await put('s/b.txt', 'b1');
    await put('s/c.txt', 'c1');
    await put('s/b.txt', 'b2'); // b changed since the program read b1
    const r = await commit(casket.url, casket.admin, bucket, [
      { key: 's/a.txt', body: 'A', 'if-match': quoted('a1') },
      { key: 's/b.txt', body: 'B', 'if-match': quoted('b1') },
      { key: 's/c.txt', body: 'C', 'if-none-match': '*' },
      { key: 's/d.txt', body: 'D', 'if-none-match': '*' },
    ]);
    expect(r.status).toBe(412);
    expect(r.json.error).toBe('PreconditionFailed');
    expect(r.json.refused!.map((x) => [x.key, x.reason, x.CurrentETag])).toEqual([
      ['s/b.txt', 'precondition-failed', quoted('b2')],
      ['s/c.txt', 'precondition-failed', quoted('c1')],
    ]);
    expect(r.json.refused![1]!.Condition).toBe('If-None-Match');
    expect([await content('s/a.txt'), await content('s/b.txt'), await content('s/c.txt'), await content('s/d.txt')]).toEqual(['a1', 'b2', 'c1', undefined]);
  });

  it("an agent's entries follow the read-stamp rules per entry: a key it never read is refused not-read, with the rest unwritten", async () => {
    await put('g/read.txt', 'r1');
    await put('g/unread.txt', 'u1');
    await sdk(casket.url, casket.agents.ben!).send(new GetObjectCommand({ Bucket: bucket, Key: 'g/read.txt' })).then((o) => bytes(o.Body));
    const r = await commit(casket.url, casket.agents.ben!, bucket, [
      { key: 'g/read.txt', body: 'r2', 'if-match': quoted('r1') },
      { key: 'g/unread.txt', body: 'u2', 'if-match': quoted('u1') },
    ]);
    expect(r.status).toBe(412);
    expect(r.json.refused!.map((x) => [x.key, x.reason])).toEqual([['g/unread.txt', 'not-read']]);
    expect(await content('g/read.txt')).toBe('r1');
  });

  it('past the limits, or malformed: a clear 400 and nothing written', async () => {
    const many = Array.from({ length: 1001 }, (_, i) => ({ key: `l/${i}`, body: 'x', 'if-none-match': '*' }));
    const tooMany = await commit(casket.url, casket.admin, bucket, many);
    expect(tooMany.status).toBe(400);
    expect(tooMany.json.message).toMatch(/at most 1000 entries/);
    const twice = await commit(casket.url, casket.admin, bucket, [{ key: 'l/x', body: '1' }, { key: 'l/x', body: '2' }]);
    expect(twice.status).toBe(400);
    expect(twice.json.message).toMatch(/twice/);
    const noBody = await commit(casket.url, casket.admin, bucket, [{ key: 'l/y', body: '1' }]).then(async () => raw(casket.url, casket.admin, { method: 'POST', path: `/_casket/commit?bucket=${bucket}`, headers: { 'content-type': 'application/json' }, body: '{}' }));
    expect(noBody.status).toBe(400);
    expect(await content('l/x')).toBeUndefined();
    expect(await content('l/0')).toBeUndefined();
  });

  it('a body that is not the one signed (x-amz-content-sha256) is refused before anything lands', async () => {
    const { body, contentType } = multipart([{ key: 'p/x.txt', body: 'what was sent', 'if-none-match': '*' }]);
    const r = await raw(casket.url, casket.admin, { method: 'POST', path: `/_casket/commit?bucket=${bucket}`, headers: { 'content-type': contentType }, body, payloadHash: sha256hex('another body') });
    expect(r.status).toBe(400);
    expect(JSON.parse(r.body).error).toBe('XAmzContentSHA256Mismatch');
    expect(await content('p/x.txt')).toBeUndefined();
  });

  it('unsigned or wrongly signed: refused', async () => {
    const r = await raw(casket.url, { accessKeyId: casket.admin.accessKeyId, secretAccessKey: 'wrong' }, { method: 'POST', path: `/_casket/commit?bucket=${bucket}`, headers: { 'content-type': 'multipart/form-data; boundary=x' }, body: '--x--\r\n' });
    expect(r.status).toBe(403);
  });
});

describe('MCP write_files', () => {
  it('writes every file together; with stale files, nothing is written and every refused file is listed in the text Claude Code shows', async () => {
    const made = await call(ann, 'write_files', { files: [{ path: `${bucket}/w/a.md`, content: 'a\n', create_only: true }, { path: `${bucket}/w/b.md`, content: 'b\n', create_only: true }, { path: `${bucket}/w/c.md`, content: 'c\n', create_only: true }] });
    expect(made.isError, text(made)).toBeFalsy();
    expect((data(made).files as Array<{ etag: string }>).map((f) => f.etag)).toEqual([quoted('a\n'), quoted('b\n'), quoted('c\n')]);
    // ben changes a and b behind ann's back.
    const ben = sdk(casket.url, casket.agents.ben!);
    for (const n of ['a', 'b']) {
      await bytes((await ben.send(new GetObjectCommand({ Bucket: bucket, Key: `w/${n}.md` }))).Body);
      await ben.send(new PutObjectCommand({ Bucket: bucket, Key: `w/${n}.md`, Body: `${n.toUpperCase()} by ben\n`, IfMatch: quoted(`${n}\n`) }));
    }
    const r = await call(ann, 'write_files', { files: ['a', 'b', 'c'].map((n) => ({ path: `${bucket}/w/${n}.md`, content: `${n}2\n`, expected_etag: quoted(`${n}\n`) })) });
    expect(r.isError).toBe(true);
    const refused = data(r).refused as Array<Record<string, unknown>>;
    expect(refused.map((x) => [x.path, x.current_etag, x.last_writer])).toEqual([
      [`${bucket}/w/a.md`, quoted('A by ben\n'), 'ben'],
      [`${bucket}/w/b.md`, quoted('B by ben\n'), 'ben'],
    ]);
    const seen = textOnlyOnError(r).text;
    for (const s of ['Nothing was written', `${bucket}/w/a.md`, `${bucket}/w/b.md`, quoted('A by ben\n'), quoted('B by ben\n'), 'ben', 'write_files again']) expect(seen).toContain(s);
    expect([await content('w/a.md'), await content('w/b.md'), await content('w/c.md')]).toEqual(['A by ben\n', 'B by ben\n', 'c\n']);
  });
});
