/**
 * delete_file's conditions as the model sees them (docs/design.md §4, §8;
 * test/helpers/model-view.ts): without expected_etag an agent deletes the
 * version it last read whole, and the answer names that version; a file it
 * never read is refused, whether it exists (read it first) or not (nothing
 * to delete), and one changed since it read it is refused as changed since
 * that read, not since a version it named; a person's key deletes as a plain S3 DeleteObject, naming no
 * version.
 */
import { CreateBucketCommand, DeleteObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdk, storedText } from '../helpers/clients.js';
import { call, data, httpClient, mintToken, startMcpCasket, text, type McpCasket } from '../helpers/mcp.js';
import { contentFirst, missing, showing, structuredOnly } from '../helpers/model-view.js';

const bucket = 'deletes';
let casket: McpCasket;
let admin: S3Client;
let ann: Client;
let person: Client;

beforeAll(async () => {
  casket = await startMcpCasket({ agents: ['ann'] });
  admin = sdk(casket.url, casket.admin);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  ann = await httpClient(casket, mintToken(casket.agents.ann!), 'ann');
  person = await httpClient(casket, mintToken(casket.admin), 'person');
});
afterAll(async () => {
  await ann?.close();
  await person?.close();
  admin?.destroy();
  await casket?.stop();
});

const stored = (key: string) => storedText(admin, bucket, key);

describe('delete_file', () => {
  it('an agent deletes the version it read whole, and the answer names that version', async () => {
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'read.txt', Body: 'read me\n' }));
    const read = String(data(await call(ann, 'read_text_file', { path: `${bucket}/read.txt` })).etag);
    const r = await call(ann, 'delete_file', { path: `${bucket}/read.txt` });
    expect(r.isError, text(r)).toBeFalsy();
    expect(missing(r, [`${bucket}/read.txt`, ['Deleted', '"deleted":true']])).toEqual([]);
    expect(contentFirst(r).text).toBe(`Deleted ${bucket}/read.txt (version ${read}).`);
    expect(await stored('read.txt')).toBeUndefined();
  });

  it('an agent is refused a file it never read: read it first, with the current version', async () => {
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'unread.txt', Body: 'not read\n' }));
    const r = await call(ann, 'delete_file', { path: `${bucket}/unread.txt` });
    expect(r.isError).toBe(true);
    expect(data(r)).toMatchObject({ error: 'precondition-required', written: false });
    expect(missing(r, ['named no version', String(data(r).current_etag), `read_text_file {"path": "${bucket}/unread.txt"}`, 'then delete_file again', 'Nothing was written'])).toEqual([]);
    expect(await stored('unread.txt')).toBe('not read\n');
  });

  it('a version no longer current is refused: the answer names the version the call named, and the one to name next', async () => {
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'stale.txt', Body: 'one\n' }));
    const read = String(data(await call(ann, 'read_text_file', { path: `${bucket}/stale.txt` })).etag);
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'stale.txt', Body: 'two\n' }));
    const r = await call(ann, 'delete_file', { path: `${bucket}/stale.txt`, expected_etag: read });
    expect(r.isError).toBe(true);
    expect(data(r)).toMatchObject({ error: 'precondition-failed', your_version: read, written: false });
    const now = String(data(r).current_etag);
    expect(missing(r, [`changed since version ${read}`, `then delete_file again with "expected_etag": ${JSON.stringify(now)}`, '+two'])).toEqual([]);
    expect(await stored('stale.txt')).toBe('two\n');
    // A person's key keeps no read: the version named is the call's own.
    const v2 = String((await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'stale.txt', Body: 'three\n' }))).ETag);
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'stale.txt', Body: 'four\n' }));
    const theirs = await call(person, 'delete_file', { path: `${bucket}/stale.txt`, expected_etag: v2 });
    expect(data(theirs)).toMatchObject({ error: 'precondition-failed', your_version: v2, written: false });
    expect(missing(theirs, [`changed since version ${v2}`])).toEqual([]);
  });

  it('without expected_etag, a file changed since the agent read it is refused as changed since the version it last read, not one it named', async () => {
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'moved-on.txt', Body: 'one\n' }));
    const read = String(data(await call(ann, 'read_text_file', { path: `${bucket}/moved-on.txt` })).etag);
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'moved-on.txt', Body: 'two\n' }));
    const r = await call(ann, 'delete_file', { path: `${bucket}/moved-on.txt` });
    expect(data(r)).toMatchObject({ error: 'precondition-failed', your_version: read, written: false });
    expect(missing(r, [`changed since version ${read}, the one you last read`, '+two'])).toEqual([]);
    expect(showing(r, 'the one you named')).toEqual([]);
    expect(await stored('moved-on.txt')).toBe('two\n');
  });

  it('an agent deleting a file that does not exist is told so, and how to make it', async () => {
    const r = await call(ann, 'delete_file', { path: `${bucket}/none.txt` });
    expect(r.isError).toBe(true);
    expect(data(r)).toMatchObject({ error: 'no-such-key', written: false });
    expect(missing(r, [`${bucket}/none.txt does not exist`, '"create_only": true', 'Nothing was written'])).toEqual([]);
  });

  it('an agent deleting a file someone deleted since it read it is told the file is already deleted, not that its content matches', async () => {
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'gone.txt', Body: 'gone\n' }));
    expect((await call(ann, 'read_text_file', { path: `${bucket}/gone.txt` })).isError).toBeFalsy();
    await admin.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'gone.txt' }));
    const r = await call(ann, 'delete_file', { path: `${bucket}/gone.txt` });
    expect(r.isError).toBe(true);
    expect(data(r)).toMatchObject({ identical: true, written: false });
    expect(missing(r, ['The file is already deleted: if that was your own earlier call, it landed'])).toEqual([]);
    expect(showing(r, 'byte-for-byte')).toEqual([]);
  });

  it("a person's key deletes as S3 does, unconditionally, naming no version", async () => {
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'p.txt', Body: 'p\n' }));
    const r = await call(person, 'delete_file', { path: `${bucket}/p.txt` });
    expect(r.isError, text(r)).toBeFalsy();
    expect(contentFirst(r).text).toBe(`Deleted ${bucket}/p.txt.`);
    expect(structuredOnly(r).text).toBe(JSON.stringify({ path: `${bucket}/p.txt`, deleted: true, written: true }));
    expect(await stored('p.txt')).toBeUndefined();
  });
});
