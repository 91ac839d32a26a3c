/**
 * apply_patch on the patches models and tools write (docs/design.md §8,
 * issue 39): git's headers with timestamps after a tab and bare paths both
 * name the file; a person's patch, with no read stamp to stand on, applies to
 * the current version; the answer names each file landed, a deleted one as
 * deleted; a patch the model got wrong — a rename, no hunks, a file named
 * twice, hunks that do not parse — is refused before anything is written; a
 * file that does not exist is refused as it is, with the call that creates it;
 * a file changed since the agent read it is refused as changed since that
 * read, and the next call is another patch, which takes no etag.
 * The model's views are the clients' (test/helpers/model-view.ts).
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytes, sdk, storedText } from '../helpers/clients.js';
import { call, data, httpClient, mintToken, startMcpCasket, text, type McpCasket } from '../helpers/mcp.js';
import { missing, showing } from '../helpers/model-view.js';

const bucket = 'patches';
let casket: McpCasket;
let admin: S3Client;
let eve: Client;
let person: Client;

beforeAll(async () => {
  casket = await startMcpCasket({ agents: ['eve'], keys: { person: {} } });
  admin = sdk(casket.url, casket.admin);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  eve = await httpClient(casket, mintToken(casket.agents.eve!), 'eve');
  person = await httpClient(casket, mintToken(casket.keys.person!), 'person');
});
afterAll(async () => {
  await eve?.close();
  await person?.close();
  admin?.destroy();
  await casket?.stop();
});

const put = (key: string, body: string) => admin.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
const stored = (key: string) => storedText(admin, bucket, key);
const readWhole = (client: Client, key: string) => call(client, 'read_text_file', { path: `${bucket}/${key}` });

describe('apply_patch', () => {
  it("git's headers with timestamps after a tab, and bare paths, both name the file", async () => {
    await put('hdr.txt', 'a\nb\n');
    await readWhole(eve, 'hdr.txt');
    const stamped = await call(eve, 'apply_patch', { patch: `--- a/${bucket}/hdr.txt\t2026-01-01 00:00:00.000000000 +0000\n+++ b/${bucket}/hdr.txt\t2026-01-01 00:00:01.000000000 +0000\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n` });
    expect(stamped.isError, text(stamped)).toBeFalsy();
    await readWhole(eve, 'hdr.txt');
    const bare = await call(eve, 'apply_patch', { patch: `--- ${bucket}/hdr.txt\n+++ ${bucket}/hdr.txt\n@@ -1,2 +1,2 @@\n A\n-b\n+B\n` });
    expect(bare.isError, text(bare)).toBeFalsy();
    expect(await stored('hdr.txt')).toBe('A\nB\n');
  });

  it('a person, with no read stamp, patches the current version; the answer names each file landed, a deleted one as deleted', async () => {
    await put('p/keep.txt', 'one\ntwo\n');
    await put('p/drop.txt', 'bye\n');
    const patch = [`--- a/${bucket}/p/keep.txt`, `+++ b/${bucket}/p/keep.txt`, '@@ -1,2 +1,2 @@', ' one', '-two', '+TWO', `--- a/${bucket}/p/drop.txt`, '+++ /dev/null', '@@ -1 +0,0 @@', '-bye', ''].join('\n');
    const r = await call(person, 'apply_patch', { patch });
    expect(r.isError, text(r)).toBeFalsy();
    const etag = String((data(r).landed as Array<{ path: string; etag: string | null }>).find((l) => l.path === `${bucket}/p/keep.txt`)!.etag);
    expect(data(r).landed).toEqual(expect.arrayContaining([{ path: `${bucket}/p/drop.txt`, etag: null }]));
    expect(text(r)).toContain(`Landed: ${bucket}/p/keep.txt (new etag ${etag})`);
    expect(text(r)).toContain(`Landed: ${bucket}/p/drop.txt (deleted)`);
    expect(missing(r, [`${bucket}/p/keep.txt`, etag, `${bucket}/p/drop.txt`])).toEqual([]);
    expect(await stored('p/keep.txt')).toBe('one\nTWO\n');
    expect(await stored('p/drop.txt')).toBeUndefined();
  });

  it('refuses a patch it cannot carry out before writing any of it: a rename, no hunks, a file named twice, hunks that do not parse', async () => {
    await put('bad/t.txt', 'x\ny\n');
    await readWhole(eve, 'bad/t.txt');
    const first = `--- a/${bucket}/bad/t.txt\n+++ b/${bucket}/bad/t.txt\n@@ -1,2 +1,2 @@\n-x\n+X\n y\n`;
    const cases: Array<[string, string]> = [
      [`--- a/${bucket}/bad/t.txt\n+++ b/${bucket}/bad/u.txt\n@@ -1,2 +1,2 @@\n-x\n+X\n y\n`, `The patch renames ${bucket}/bad/t.txt to ${bucket}/bad/u.txt: use move_file for that, then patch.`],
      ['just a sentence, no diff\n', 'The patch has no hunks: give --- / +++ headers and @@ hunks.'],
      [`${first}--- a/${bucket}/bad/t.txt\n+++ b/${bucket}/bad/t.txt\n@@ -2,1 +2,1 @@\n-y\n+Y\n`, `The patch names ${bucket}/bad/t.txt twice: merge its hunks into one file section.`],
      [`${first}@@ not a hunk header\n`, 'The patch does not parse as a unified diff:'],
    ];
    for (const [patch, said] of cases) {
      const r = await call(eve, 'apply_patch', { patch });
      expect(r.isError, said).toBe(true);
      expect(data(r).error, said).toBe('invalid-argument');
      expect(missing(r, [said, 'Nothing was written'])).toEqual([]);
    }
    expect(await stored('bad/t.txt')).toBe('x\ny\n');
    expect(await stored('bad/u.txt')).toBeUndefined();
  });

  it('a file that does not exist is refused as it is, with the call that creates it; the rest of the patch is not written', async () => {
    await put('miss/real.txt', 'r\n');
    await readWhole(eve, 'miss/real.txt');
    const patch = `--- a/${bucket}/miss/real.txt\n+++ b/${bucket}/miss/real.txt\n@@ -1 +1 @@\n-r\n+R\n--- a/${bucket}/miss/none.txt\n+++ b/${bucket}/miss/none.txt\n@@ -1 +1 @@\n-x\n+y\n`;
    const r = await call(eve, 'apply_patch', { patch });
    expect(r.isError).toBe(true);
    expect(data(r)).toMatchObject({ error: 'some-files-refused', landed: [], written: false });
    expect(data(r).refused).toEqual([expect.objectContaining({ path: `${bucket}/miss/none.txt`, written: false })]);
    expect(missing(r, ['1 of its 2 file(s) was refused', `${bucket}/miss/none.txt does not exist`, `write_file {"path": "${bucket}/miss/none.txt", "content": …, "create_only": true}`])).toEqual([]);
    expect(await stored('miss/real.txt')).toBe('r\n');
  });

  it('a file changed since the agent read it is refused as changed since that read, which the patch named no version of', async () => {
    await put('moved.txt', 'one\n');
    const read = String(data(await readWhole(eve, 'moved.txt')).etag);
    await put('moved.txt', 'two\n');
    const r = await call(eve, 'apply_patch', { patch: `--- a/${bucket}/moved.txt\n+++ b/${bucket}/moved.txt\n@@ -1 +1 @@\n-one\n+ONE\n` });
    expect(r.isError).toBe(true);
    expect(missing(r, [`${bucket}/moved.txt changed since version ${read}, the one you last read`, '+two', 'then apply_patch again with a patch of its current content'])).toEqual([]);
    // apply_patch has no expected_etag to pass, nor did the patch name a version.
    expect(showing(r, 'the one you named')).toEqual([]);
    expect(showing(r, 'expected_etag')).toEqual([]);
    expect(await stored('moved.txt')).toBe('two\n');
  });

  it('a patch that creates a file that exists is refused with the apply_patch call that changes it, not a write_file one', async () => {
    await put('exists.txt', 'here\n');
    const r = await call(eve, 'apply_patch', { patch: `--- /dev/null\n+++ b/${bucket}/exists.txt\n@@ -0,0 +1 @@\n+new\n` });
    expect(r.isError).toBe(true);
    expect(missing(r, [`${bucket}/exists.txt already exists`, 'then apply_patch with a patch of its current content'])).toEqual([]);
    expect(JSON.stringify(r)).not.toContain('then write_file');
    expect(await stored('exists.txt')).toBe('here\n');
  });

  it('a patched file keeps its Content-Type, as edit_file keeps it; a file the patch creates is text', async () => {
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'typed.md', Body: '# title\nbody\n', ContentType: 'text/markdown' }));
    await readWhole(eve, 'typed.md');
    const r = await call(eve, 'apply_patch', { patch: `--- a/${bucket}/typed.md\n+++ b/${bucket}/typed.md\n@@ -1,2 +1,2 @@\n # title\n-body\n+BODY\n--- /dev/null\n+++ b/${bucket}/made.txt\n@@ -0,0 +1 @@\n+made\n` });
    expect(r.isError, text(r)).toBeFalsy();
    const typed = await admin.send(new GetObjectCommand({ Bucket: bucket, Key: 'typed.md' }));
    expect(typed.ContentType).toBe('text/markdown');
    expect((await bytes(typed.Body)).toString()).toBe('# title\nBODY\n');
    expect((await admin.send(new GetObjectCommand({ Bucket: bucket, Key: 'made.txt' }))).ContentType).toBe('text/plain; charset=utf-8');
  });
});

