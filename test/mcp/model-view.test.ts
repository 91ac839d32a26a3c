/**
 * Every tool answer, success and refusal, as each client rule shows it to a
 * model (docs/design.md §12, helpers/model-view.ts): the view must hold what
 * the model needs to act — the text and etag of a read and how much of the
 * file it showed, listings and matches, the new etag of a write, the diff,
 * the current etag and who wrote it, and the exact next call. Driven by the
 * SDK's Client over Streamable HTTP against a real casket; having listed the
 * tools (helpers/mcp.ts), the Client checks every structuredContent against
 * the tool's outputSchema (additionalProperties: false) as it answers.
 */
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdk } from '../helpers/clients.js';
import { call, data, httpClient, mintToken, startMcpCasket, text, type McpCasket, type ToolResult } from '../helpers/mcp.js';
import { missing, type Need } from '../helpers/model-view.js';

let casket: McpCasket;
let alice: Client;
let bob: Client;
const bucket = 'views';

beforeAll(async () => {
  casket = await startMcpCasket({ agents: ['alice', 'bob'] });
  await sdk(casket.url, casket.admin).send(new CreateBucketCommand({ Bucket: bucket }));
  alice = await httpClient(casket, mintToken(casket.agents.alice!), 'alice');
  bob = await httpClient(casket, mintToken(casket.agents.bob!), 'bob');
});
afterAll(async () => {
  await alice?.close();
  await bob?.close();
  await casket?.stop();
});

/** Asserts every client view of `r` holds `needs` (and shows the `media` parts). */
function seen(r: ToolResult, needs: readonly Need[], media: readonly string[] = []): void {
  expect(missing(r, needs, media), JSON.stringify(r).slice(0, 2000)).toEqual([]);
}

const etagOf = (r: ToolResult) => String(data(r).etag);
/** A file alice creates, bob reads whole; answers bob's read. */
async function readByBob(key: string, content: string): Promise<ToolResult> {
  const made = await call(alice, 'write_file', { path: `${bucket}/${key}`, content, create_only: true });
  expect(made.isError, text(made)).toBeFalsy();
  return call(bob, 'read_text_file', { path: `${bucket}/${key}` });
}
/** alice changes a file bob has read. */
async function aliceEdits(key: string, oldText: string, newText: string): Promise<string> {
  await call(alice, 'read_text_file', { path: `${bucket}/${key}` });
  const e = await call(alice, 'edit_file', { path: `${bucket}/${key}`, edits: [{ oldText, newText }] });
  expect(e.isError, text(e)).toBeFalsy();
  return etagOf(e);
}
const reread = (key: string) => `read_text_file {"path": "${bucket}/${key}"}`;

describe('what the model sees of each tool answer, in every client', () => {
  it('read_text_file: the text, its etag, who wrote it, the lines shown and whether the read was whole', async () => {
    const full = await readByBob('read.md', 'alpha\nbeta\ngamma\n');
    expect(full.isError, text(full)).toBeFalsy();
    seen(full, ['alpha\nbeta\ngamma\n', etagOf(full), 'alice', 'full', ['all 3 lines', '"total":3']]);
    const part = await call(bob, 'read_text_file', { path: `${bucket}/read.md`, head: 2 });
    seen(part, ['alpha\nbeta\n', etagOf(full), 'partial', ['lines 1-2 of 3', '"from":1,"to":2,"total":3'], reread('read.md')]);
    expect(missing(part, ['gamma'])).toHaveLength(2);
    const gone = await call(bob, 'read_text_file', { path: `${bucket}/nothing.md` });
    expect(gone.isError).toBe(true);
    seen(gone, [`${bucket}/nothing.md does not exist`, `list_directory {"path": "${bucket}/"}`]);
  });

  it('read_media_file: the image itself, with its MIME type and etag', async () => {
    const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
    const put = await sdk(casket.url, casket.admin).send(new PutObjectCommand({ Bucket: bucket, Key: 'pixel.png', Body: png, ContentType: 'image/png' }));
    const r = await call(bob, 'read_media_file', { path: `${bucket}/pixel.png` });
    expect(r.isError, text(r)).toBeFalsy();
    seen(r, [put.ETag!, 'image/png', `${bucket}/pixel.png`], ['image/png']);
    const gone = await call(bob, 'read_media_file', { path: `${bucket}/none.png` });
    seen(gone, [`${bucket}/none.png does not exist`]);
  });

  it('write_file: the new etag; refused: the current etag, who wrote it, the next call', async () => {
    const made = await call(alice, 'write_file', { path: `${bucket}/w.md`, content: 'one\n', create_only: true });
    seen(made, [etagOf(made), `${bucket}/w.md`]);
    const again = await call(bob, 'write_file', { path: `${bucket}/w.md`, content: 'two\n', create_only: true });
    expect(again.isError).toBe(true);
    seen(again, ['already exists', etagOf(made), 'alice', reread('w.md'), 'Nothing was written']);
  });

  it('edit_file: the diff and the new etag; refused: the current etag, who, their change, the next call', async () => {
    const read = await readByBob('e.md', 'a\nb\nc\n');
    const dry = await call(bob, 'edit_file', { path: `${bucket}/e.md`, edits: [{ oldText: 'b', newText: 'B' }], dryRun: true });
    seen(dry, ['-b\n+B', etagOf(read), ['nothing written', '"written":false']]);
    const edited = await call(bob, 'edit_file', { path: `${bucket}/e.md`, edits: [{ oldText: 'b', newText: 'B' }], expected_etag: etagOf(read) });
    expect(edited.isError, text(edited)).toBeFalsy();
    seen(edited, ['-b\n+B', etagOf(edited)]);
    const now = await aliceEdits('e.md', 'c', 'c by alice');
    const stale = await call(bob, 'edit_file', { path: `${bucket}/e.md`, edits: [{ oldText: 'a', newText: 'A' }], expected_etag: etagOf(edited) });
    expect(stale.isError).toBe(true);
    seen(stale, [now, 'alice', '+c by alice', reread('e.md'), `"expected_etag": "${now.replace(/"/g, '\\"')}"`, 'Nothing was written']);
  });

  it('apply_patch: each landed file and its new etag; refused: that file\'s current etag, who, the next call', async () => {
    await readByBob('p.md', 'x\ny\n');
    const patch = (from: string, to: string) => `--- a/${bucket}/p.md\n+++ b/${bucket}/p.md\n@@ -1,2 +1,2 @@\n-${from}\n+${to}\n y\n`;
    const landed = await call(bob, 'apply_patch', { patch: patch('x', 'X') });
    expect(landed.isError, text(landed)).toBeFalsy();
    const etag = String((data(landed).landed as Array<{ etag: string }>)[0]!.etag);
    seen(landed, [`${bucket}/p.md`, etag]);
    const now = await aliceEdits('p.md', 'y', 'y by alice');
    const refused = await call(bob, 'apply_patch', { patch: `--- a/${bucket}/p.md\n+++ b/${bucket}/p.md\n@@ -1,2 +1,2 @@\n-X\n+XX\n y\n` });
    expect(refused.isError).toBe(true);
    seen(refused, [`${bucket}/p.md`, now, 'alice', reread('p.md'), 'Nothing was written']);
  });

  it('write_files: every file and its new etag; refused: each stale file, its current etag, who, the next call', async () => {
    const files = ['f1', 'f2'].map((n) => ({ path: `${bucket}/wf/${n}.md`, content: `${n}\n`, create_only: true }));
    const made = await call(bob, 'write_files', { files });
    expect(made.isError, text(made)).toBeFalsy();
    const etags = (data(made).files as Array<{ etag: string }>).map((f) => f.etag);
    seen(made, [`${bucket}/wf/f1.md`, etags[0]!, `${bucket}/wf/f2.md`, etags[1]!]);
    const now = await aliceEdits('wf/f2.md', 'f2', 'f2 by alice');
    const stale = await call(bob, 'write_files', { files: files.map((f, i) => ({ path: f.path, content: 'again\n', expected_etag: etags[i] })) });
    expect(stale.isError).toBe(true);
    seen(stale, [`${bucket}/wf/f2.md`, now, 'alice', 'write_files again', 'Nothing was written']);
  });

  it('list_directory and search_files: every entry and its etag; refused: what to call instead', async () => {
    const made = await call(alice, 'write_file', { path: `${bucket}/dir/sub/deep.txt`, content: 'deep\n', create_only: true });
    await call(alice, 'write_file', { path: `${bucket}/dir/top.txt`, content: 'top\n', create_only: true });
    const listed = await call(bob, 'list_directory', { path: `${bucket}/dir` });
    seen(listed, ['top.txt', 'sub/', String((data(listed).files as Array<{ etag: string }>)[0]!.etag)]);
    const found = await call(bob, 'search_files', { path: `${bucket}/dir`, pattern: '*.txt' });
    seen(found, [`${bucket}/dir/sub/deep.txt`, etagOf(made), `${bucket}/dir/top.txt`]);
    for (const r of [await call(bob, 'list_directory', { path: 'nobucket/' }), await call(bob, 'search_files', { path: 'nobucket', pattern: '*' })]) {
      expect(r.isError).toBe(true);
      seen(r, ['no bucket "nobucket"', 'list_directory']);
    }
  });

  it('get_file_info: size, etag, who wrote it and whether you may write; refused: the next call', async () => {
    const read = await readByBob('i.md', 'info\n');
    const info = await call(bob, 'get_file_info', { path: `${bucket}/i.md` });
    seen(info, [etagOf(read), 'alice', ['your_read: full', '"your_read":"full"'], ['size: 5', '"size":5']]);
    const gone = await call(bob, 'get_file_info', { path: `${bucket}/none.md` });
    seen(gone, [`${bucket}/none.md does not exist`, `list_directory {"path": "${bucket}/"}`]);
  });

  it('move_file: both paths and the version moved; refused: the next call', async () => {
    const read = await readByBob('m.md', 'move me\n');
    const moved = await call(bob, 'move_file', { source: `${bucket}/m.md`, destination: `${bucket}/moved.md`, expected_etag: etagOf(read) });
    expect(moved.isError, text(moved)).toBeFalsy();
    seen(moved, [`${bucket}/m.md`, `${bucket}/moved.md`, etagOf(read)]);
    await call(alice, 'write_file', { path: `${bucket}/unread.md`, content: 'x\n', create_only: true });
    const refused = await call(bob, 'move_file', { source: `${bucket}/unread.md`, destination: `${bucket}/elsewhere.md` });
    expect(refused.isError).toBe(true);
    seen(refused, ['not read', reread('unread.md'), 'Nothing was written']);
  });

  it('delete_file: what was deleted; refused: the current etag, who, their change, the next call', async () => {
    const read = await readByBob('d.md', 'keep\n');
    const now = await aliceEdits('d.md', 'keep', 'keep, alice says');
    const refused = await call(bob, 'delete_file', { path: `${bucket}/d.md`, expected_etag: etagOf(read) });
    expect(refused.isError).toBe(true);
    seen(refused, [now, 'alice', '+keep, alice says', reread('d.md'), 'Nothing was written']);
    const again = await call(bob, 'read_text_file', { path: `${bucket}/d.md` });
    const deleted = await call(bob, 'delete_file', { path: `${bucket}/d.md`, expected_etag: etagOf(again) });
    seen(deleted, [`${bucket}/d.md`, ['Deleted', '"deleted":true']]);
  });

  it('what_changed: the file, who changed it, the diff and the cursor; refused: why', async () => {
    await readByBob('c.md', 'before\n');
    const first = await call(bob, 'what_changed', {});
    const now = await aliceEdits('c.md', 'before', 'after');
    const feed = await call(bob, 'what_changed', { since: data(first).cursor });
    expect(feed.isError, text(feed)).toBeFalsy();
    seen(feed, [`${bucket}/c.md`, now, 'alice', '-before\n+after', String(data(feed).cursor)]);
    const bad = await call(bob, 'what_changed', { since: 'yesterday' });
    expect(bad.isError).toBe(true);
    seen(bad, ['since must be a cursor']);
  });
});
