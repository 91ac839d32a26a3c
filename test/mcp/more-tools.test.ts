/**
 * The rest of the file tools over MCP (docs/design.md §8): apply_patch (each file
 * conditioned on the agent's last full read, never half-patched),
 * search_files, move_file (conditional on both ends), delete_file,
 * read_media_file and what_changed — with the SDK's Client against a real
 * casket.
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytes, sdk } from '../helpers/clients.js';
import { call, data, httpClient, mintToken, startMcpCasket, text, type McpCasket } from '../helpers/mcp.js';

let casket: McpCasket;
let ann: Client;
let ben: Client;
const bucket = 'tools';

beforeAll(async () => {
  casket = await startMcpCasket({ agents: ['ann', 'ben'] });
  await sdk(casket.url, casket.admin).send(new CreateBucketCommand({ Bucket: bucket }));
  ann = await httpClient(casket, mintToken(casket.agents.ann!), 'ann');
  ben = await httpClient(casket, mintToken(casket.agents.ben!), 'ben');
});
afterAll(async () => {
  await ann?.close();
  await ben?.close();
  await casket?.stop();
});

async function content(key: string): Promise<string | undefined> {
  const s3 = sdk(casket.url, casket.admin);
  try {
    return (await bytes((await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body)).toString();
  } catch (e) {
    if ((e as { name?: string }).name === 'NoSuchKey') return undefined;
    throw e;
  }
}

describe('apply_patch', () => {
  it('patches the files the agent read, creates and deletes; one file changed since: it is refused with its diff and nothing is written', async () => {
    for (const [k, v] of [['p/a.txt', 'a1\na2\na3\n'], ['p/b.txt', 'b1\nb2\nb3\n'], ['p/gone.txt', 'bye\n']] as const) await call(ann, 'write_file', { path: `${bucket}/${k}`, content: v, create_only: true });
    for (const k of ['p/a.txt', 'p/b.txt', 'p/gone.txt']) await call(ben, 'read_text_file', { path: `${bucket}/${k}` });
    // ann changes b.txt after ben read it.
    await call(ann, 'edit_file', { path: `${bucket}/p/b.txt`, edits: [{ oldText: 'b1', newText: 'B1' }] });
    const patch = [
      `--- a/${bucket}/p/a.txt`, `+++ b/${bucket}/p/a.txt`, '@@ -1,3 +1,3 @@', ' a1', '-a2', '+A2', ' a3',
      `--- a/${bucket}/p/b.txt`, `+++ b/${bucket}/p/b.txt`, '@@ -1,3 +1,3 @@', ' b1', ' b2', '-b3', '+B3',
      '--- /dev/null', `+++ b/${bucket}/p/new.txt`, '@@ -0,0 +1,1 @@', '+fresh',
      `--- a/${bucket}/p/gone.txt`, '+++ /dev/null', '@@ -1,1 +0,0 @@', '-bye', '',
    ].join('\n');
    const r = await call(ben, 'apply_patch', { patch });
    expect(r.isError).toBe(true);
    const d = data(r) as { landed: Array<{ path: string }>; refused: Array<Record<string, unknown>>; written: boolean };
    expect(d.landed).toEqual([]);
    expect(d.written).toBe(false);
    expect(d.refused).toEqual([expect.objectContaining({ path: `${bucket}/p/b.txt`, last_writer: 'ann', written: false })]);
    expect(String(d.refused[0]!.diff)).toContain('-b1\n+B1');
    expect(text(r)).toMatch(/^Nothing was written: the patch lands whole or not at all/);
    // Not one file of the patch landed: a.txt, new.txt and gone.txt are as they were.
    expect(await content('p/a.txt')).toBe('a1\na2\na3\n');
    expect(await content('p/b.txt')).toBe('B1\nb2\nb3\n');
    expect(await content('p/new.txt')).toBeUndefined();
    expect(await content('p/gone.txt')).toBe('bye\n');
    // Read again, patched again: the whole patch lands.
    await call(ben, 'read_text_file', { path: `${bucket}/p/b.txt` });
    const again = await call(ben, 'apply_patch', { patch: patch.replace(' b1\n', ' B1\n') });
    expect(again.isError, text(again)).toBeFalsy();
    expect((data(again).landed as Array<{ path: string }>).map((l) => l.path).sort()).toEqual([`${bucket}/p/a.txt`, `${bucket}/p/b.txt`, `${bucket}/p/gone.txt`, `${bucket}/p/new.txt`]);
    expect(await content('p/a.txt')).toBe('a1\nA2\na3\n');
    expect(await content('p/b.txt')).toBe('B1\nb2\nB3\n');
    expect(await content('p/new.txt')).toBe('fresh\n');
    expect(await content('p/gone.txt')).toBeUndefined();
  });

  it('a patch that does not apply writes nothing, not even to the files it fits', async () => {
    await call(ann, 'write_file', { path: `${bucket}/q/one.txt`, content: 'x\n', create_only: true });
    await call(ann, 'write_file', { path: `${bucket}/q/two.txt`, content: 'y\n', create_only: true });
    const patch = [`--- a/${bucket}/q/one.txt`, `+++ b/${bucket}/q/one.txt`, '@@ -1 +1 @@', '-x', '+X', `--- a/${bucket}/q/two.txt`, `+++ b/${bucket}/q/two.txt`, '@@ -1 +1 @@', '-not there', '+Y', ''].join('\n');
    const r = await call(ann, 'apply_patch', { patch });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/does not apply to tools\/q\/two.txt[\s\S]*Nothing was written/);
    expect(await content('q/one.txt')).toBe('x\n');
    expect(await content('q/two.txt')).toBe('y\n');
  });
});

describe('search_files, move_file, delete_file, read_media_file, what_changed', () => {
  it('search_files matches key globs under a prefix', async () => {
    for (const k of ['s/readme.md', 's/docs/guide.md', 's/docs/img.png', 's/src/main.ts']) await call(ann, 'write_file', { path: `${bucket}/${k}`, content: k, create_only: true });
    const md = await call(ben, 'search_files', { path: `${bucket}/s`, pattern: '*.md' });
    expect((data(md).matches as Array<{ path: string }>).map((m) => m.path).sort()).toEqual([`${bucket}/s/docs/guide.md`, `${bucket}/s/readme.md`]);
    const top = await call(ben, 'search_files', { path: `${bucket}/s`, pattern: 'docs/*', excludePatterns: ['*.png'] });
    expect((data(top).matches as Array<{ path: string }>).map((m) => m.path)).toEqual([`${bucket}/s/docs/guide.md`]);
  });

  it('move_file moves the version read, and refuses when the source changed since', async () => {
    const made = await call(ann, 'write_file', { path: `${bucket}/m/from.txt`, content: 'move me\n', create_only: true });
    const moved = await call(ann, 'move_file', { source: `${bucket}/m/from.txt`, destination: `${bucket}/m/to.txt`, expected_etag: data(made).etag });
    expect(moved.isError, text(moved)).toBeFalsy();
    expect(await content('m/from.txt')).toBeUndefined();
    expect(await content('m/to.txt')).toBe('move me\n');
    // ben read it; ann changes it; ben's move is refused and nothing moves.
    const read = await call(ben, 'read_text_file', { path: `${bucket}/m/to.txt` });
    await call(ann, 'edit_file', { path: `${bucket}/m/to.txt`, edits: [{ oldText: 'move me', newText: 'moved' }] });
    const refused = await call(ben, 'move_file', { source: `${bucket}/m/to.txt`, destination: `${bucket}/m/elsewhere.txt`, expected_etag: data(read).etag });
    expect(refused.isError).toBe(true);
    expect(data(refused)).toMatchObject({ written: false, last_writer: 'ann' });
    expect(await content('m/elsewhere.txt')).toBeUndefined();
    // An existing destination is not overwritten.
    await call(ann, 'write_file', { path: `${bucket}/m/taken.txt`, content: 'mine\n', create_only: true });
    const now = await call(ann, 'read_text_file', { path: `${bucket}/m/to.txt` });
    const clash = await call(ann, 'move_file', { source: `${bucket}/m/to.txt`, destination: `${bucket}/m/taken.txt`, expected_etag: data(now).etag });
    expect(clash.isError).toBe(true);
    expect(await content('m/taken.txt')).toBe('mine\n');
    expect(await content('m/to.txt')).toBe('moved\n');
  });

  it('delete_file deletes the version read; a stale one is refused', async () => {
    const made = await call(ann, 'write_file', { path: `${bucket}/d.txt`, content: 'v1\n', create_only: true });
    const read = await call(ben, 'read_text_file', { path: `${bucket}/d.txt` });
    await call(ann, 'write_file', { path: `${bucket}/d.txt`, content: 'v2\n', expected_etag: data(made).etag });
    const stale = await call(ben, 'delete_file', { path: `${bucket}/d.txt`, expected_etag: data(read).etag });
    expect(stale.isError).toBe(true);
    expect(await content('d.txt')).toBe('v2\n');
    const again = await call(ben, 'read_text_file', { path: `${bucket}/d.txt` });
    const gone = await call(ben, 'delete_file', { path: `${bucket}/d.txt`, expected_etag: data(again).etag });
    expect(gone.isError, text(gone)).toBeFalsy();
    expect(await content('d.txt')).toBeUndefined();
  });

  it('read_media_file answers base64 with the MIME type and etag, beside the image (no structuredContent, which clients show instead of it)', async () => {
    const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
    const put = await sdk(casket.url, casket.admin).send(new PutObjectCommand({ Bucket: bucket, Key: 'pixel.png', Body: png, ContentType: 'image/png' }));
    const r = await call(ben, 'read_media_file', { path: `${bucket}/pixel.png` });
    expect(r.content[0]).toEqual({ type: 'image', mimeType: 'image/png', data: png.toString('base64') });
    expect(text(r)).toContain(`image/png, ${png.length} bytes, etag ${put.ETag}`);
    expect(r.structuredContent).toBeUndefined();
  });

  it('what_changed lists files others changed since this agent read them, with the diff and a cursor', async () => {
    await call(ann, 'write_file', { path: `${bucket}/w.txt`, content: 'old line\n', create_only: true });
    await call(ben, 'read_text_file', { path: `${bucket}/w.txt` });
    const first = await call(ben, 'what_changed', {});
    await call(ann, 'edit_file', { path: `${bucket}/w.txt`, edits: [{ oldText: 'old', newText: 'new' }] });
    const feed = await call(ben, 'what_changed', { since: data(first).cursor });
    const changes = data(feed).changes as Array<Record<string, unknown>>;
    expect(changes).toEqual([expect.objectContaining({ path: `${bucket}/w.txt`, writer: 'ann' })]);
    expect(String(changes[0]!.diff)).toContain('-old line\n+new line');
    const later = await call(ben, 'what_changed', { since: data(feed).cursor });
    expect(data(later).changes).toEqual([]);
  });
});
