/**
 * edit_file beyond the plain edit (docs/design.md §3, §6, §8), as the model
 * and the people after it see it: an edit keeps the file's Content-Type; a
 * named version that is no longer current is refused as changed — even when
 * the text to replace is gone from the current one — and, when the current
 * content is what the edit would have made, says so (an earlier call of its
 * own may have landed); the size limit (--mcp-max-file-bytes) holds for the
 * file read and the file the edits make; a merge's answer names the version
 * it merged into; a dry run never merges, and says in words that nothing was
 * written; several edits apply in order; a merge from a version casket does
 * not hold, or of the lines someone else changed, is refused with the next
 * edit to make; a refusal says whether the version was named or last read,
 * and names the writer from the file itself once the write log has let go
 * of the write. The model's views are the clients' (test/helpers/model-view.ts).
 */
import { CreateBucketCommand, DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytes, sdk } from '../helpers/clients.js';
import { call, data, httpClient, mintToken, startMcpCasket, text, type McpCasket } from '../helpers/mcp.js';
import { contentFirst, missing, showing } from '../helpers/model-view.js';

const bucket = 'edits';
const MAX = 64;
let casket: McpCasket;
let admin: S3Client;
let ann: Client;
let bob: Client;

beforeAll(async () => {
  casket = await startMcpCasket({ agents: ['ann', 'bob'], flags: { mcpMaxFileBytes: String(MAX) } });
  admin = sdk(casket.url, casket.admin);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  ann = await httpClient(casket, mintToken(casket.agents.ann!), 'ann');
  bob = await httpClient(casket, mintToken(casket.agents.bob!), 'bob');
});
afterAll(async () => {
  await ann?.close();
  await bob?.close();
  admin?.destroy();
  await casket?.stop();
});

const stored = async (key: string) => (await bytes((await admin.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body)).toString();
const etagOf = async (client: Client, key: string) => String(data(await call(client, 'read_text_file', { path: `${bucket}/${key}` })).etag);
const edit = (key: string, oldText: string, newText: string, more: Record<string, unknown> = {}) => ({ path: `${bucket}/${key}`, edits: [{ oldText, newText }], ...more });

describe('edit_file', () => {
  it('keeps the Content-Type the file had', async () => {
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'readme.md', Body: '# title\nbody\n', ContentType: 'text/markdown' }));
    const read = await etagOf(ann, 'readme.md');
    const r = await call(ann, 'edit_file', edit('readme.md', 'body', 'more body', { expected_etag: read }));
    expect(r.isError, text(r)).toBeFalsy();
    expect(data(r)).toMatchObject({ previous_etag: read, written: true });
    // Nobody else wrote since: no view tells the model its edit was merged.
    expect(data(r)).not.toHaveProperty('merged');
    expect(text(r)).not.toContain('merged');
    expect((await admin.send(new HeadObjectCommand({ Bucket: bucket, Key: 'readme.md' }))).ContentType).toBe('text/markdown');
  });

  it('a named version no longer current is refused as changed, with the diff, even when the text to replace is gone from the current one', async () => {
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'gone.txt', Body: 'keep\nold line\n' }));
    const read = await etagOf(bob, 'gone.txt');
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'gone.txt', Body: 'keep\nnew line\n' }));
    const r = await call(bob, 'edit_file', edit('gone.txt', 'old line', 'my line', { expected_etag: read }));
    expect(r.isError).toBe(true);
    expect(data(r)).toMatchObject({ error: 'precondition-failed', your_version: read, identical: false, written: false });
    expect(missing(r, [`changed since version ${read}, the one you named`, '-old line\n+new line', 'Nothing was written', `then edit_file again with "expected_etag": ${JSON.stringify(String(data(r).current_etag))}`])).toEqual([]);
    expect(text(r)).not.toContain('was not found');
    expect(await stored('gone.txt')).toBe('keep\nnew line\n');
  });

  it('when the current content is what the edit would have made, the refusal says so, with who made it and when', async () => {
    await call(ann, 'write_file', { path: `${bucket}/same.txt`, content: 'count: 1\n', create_only: true });
    const read = await etagOf(bob, 'same.txt');
    await call(ann, 'edit_file', edit('same.txt', 'count: 1', 'count: 2'));
    const r = await call(bob, 'edit_file', edit('same.txt', 'count: 1', 'count: 2', { expected_etag: read }));
    expect(r.isError).toBe(true);
    expect(data(r)).toMatchObject({ error: 'precondition-failed', identical: true, last_writer: 'ann', written: false });
    expect(String(data(r).last_modified)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(missing(r, ['byte-for-byte what you sent', 'agent "ann" made the same change', `at ${String(data(r).last_modified)}`])).toEqual([]);
    // The same call against content its edit does not make: not identical.
    const other = await call(bob, 'edit_file', edit('same.txt', 'count: 1', 'count: 3', { expected_etag: read }));
    expect(data(other)).toMatchObject({ error: 'precondition-failed', identical: false });
    expect(text(other)).not.toContain('byte-for-byte');
  });

  it(`refuses a file larger than the limit (${MAX} bytes) by its size, and an edit that would grow it past the limit; one that makes exactly the limit is written`, async () => {
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'big.txt', Body: 'y'.repeat(MAX + 36) }));
    const big = await call(ann, 'edit_file', edit('big.txt', 'y', 'z'));
    expect(big.isError).toBe(true);
    expect(data(big)).toMatchObject({ error: 'too-large', bytes: MAX + 36, max_bytes: MAX, written: false });
    expect(missing(big, [`${bucket}/big.txt is ${MAX + 36} bytes, more than the ${MAX} bytes these tools handle`, 'Nothing was written'])).toEqual([]);

    const start = 'x'.repeat(MAX - 4) + '\n';
    await call(ann, 'write_file', { path: `${bucket}/grow.txt`, content: start, create_only: true });
    const grown = await call(ann, 'edit_file', edit('grow.txt', '\n', 'abcde\n'));
    expect(grown.isError).toBe(true);
    expect(data(grown)).toMatchObject({ error: 'too-large', bytes: MAX + 2, max_bytes: MAX, written: false });
    expect(missing(grown, [`the edited file is ${MAX + 2} bytes`, 'Nothing was written'])).toEqual([]);
    expect(await stored('grow.txt')).toBe(start);
    const exact = await call(ann, 'edit_file', edit('grow.txt', '\n', 'abc\n'));
    expect(exact.isError, text(exact)).toBeFalsy();
    expect(Buffer.byteLength(await stored('grow.txt'))).toBe(MAX);
  });

  it('a merge answers the version it merged into, as previous_etag and in words, and keeps the Content-Type', async () => {
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'merge.txt', Body: 'top\nmiddle\nbottom\n', ContentType: 'text/markdown' }));
    const read = await etagOf(bob, 'merge.txt');
    const theirs = await call(ann, 'edit_file', edit('merge.txt', 'top', 'TOP', { expected_etag: await etagOf(ann, 'merge.txt') }));
    const theirEtag = String(data(theirs).etag);
    const r = await call(bob, 'edit_file', edit('merge.txt', 'bottom', 'BOTTOM', { expected_etag: read, merge: true }));
    expect(r.isError, text(r)).toBeFalsy();
    expect(data(r)).toMatchObject({ merged: true, previous_etag: theirEtag, written: true });
    expect(text(r)).toContain(`[merged into version ${theirEtag}, which someone else wrote since ${read}; new etag ${String(data(r).etag)}]`);
    expect(await stored('merge.txt')).toBe('TOP\nmiddle\nBOTTOM\n');
    expect((await admin.send(new HeadObjectCommand({ Bucket: bucket, Key: 'merge.txt' }))).ContentType).toBe('text/markdown');
  });

  it('a dry run of a merge onto a version no longer current is refused: it shows no diff of a version that is gone, and writes nothing', async () => {
    await call(ann, 'write_file', { path: `${bucket}/dry.txt`, content: 'one\ntwo\nthree\n', create_only: true });
    const read = await etagOf(bob, 'dry.txt');
    await call(ann, 'edit_file', edit('dry.txt', 'one', 'ONE'));
    const r = await call(bob, 'edit_file', edit('dry.txt', 'three', 'THREE', { expected_etag: read, merge: true, dryRun: true }));
    expect(r.isError).toBe(true);
    expect(data(r)).toMatchObject({ error: 'precondition-failed', last_writer: 'ann', written: false });
    expect(await stored('dry.txt')).toBe('ONE\ntwo\nthree\n');
  });

  it('without expected_etag, the edit applies to the version the agent last read: a file changed since is refused with that version, even where the edit would still apply', async () => {
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'last-read.txt', Body: 'head\ntail\n' }));
    const read = await etagOf(ann, 'last-read.txt');
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'last-read.txt', Body: 'head\ntail\nmore\n' }));
    const r = await call(ann, 'edit_file', edit('last-read.txt', 'head', 'HEAD'));
    expect(r.isError).toBe(true);
    expect(data(r)).toMatchObject({ error: 'precondition-failed', your_version: read, written: false });
    expect(missing(r, [`changed since version ${read}, the one you last read`, '+more', 'Nothing was written'])).toEqual([]);
    // The call named no version: no view tells the model it did.
    expect(showing(r, 'the one you named')).toEqual([]);
    expect(await stored('last-read.txt')).toBe('head\ntail\nmore\n');
  });

  it('applies several edits in one call, in order, each to the text the ones before it made', async () => {
    await call(ann, 'write_file', { path: `${bucket}/two.txt`, content: 'alpha\nbeta\n', create_only: true });
    const r = await call(ann, 'edit_file', { path: `${bucket}/two.txt`, edits: [{ oldText: 'alpha', newText: 'gamma' }, { oldText: 'gamma\nbeta', newText: 'gamma\ndelta' }] });
    expect(r.isError, text(r)).toBeFalsy();
    expect(missing(r, ['-alpha\n-beta\n+gamma\n+delta'])).toEqual([]);
    expect(await stored('two.txt')).toBe('gamma\ndelta\n');
  });

  it('a dry run shows the diff, and the text says nothing was written and which version the diff applies to', async () => {
    await call(ann, 'write_file', { path: `${bucket}/plan.txt`, content: 'draft\n', create_only: true });
    const read = await etagOf(ann, 'plan.txt');
    const r = await call(ann, 'edit_file', edit('plan.txt', 'draft', 'final', { dryRun: true }));
    expect(r.isError, text(r)).toBeFalsy();
    expect(missing(r, ['-draft\n+final', read])).toEqual([]);
    expect(data(r)).toMatchObject({ etag: read, written: false });
    // A client that shows the content (model-view.ts contentFirst) reads it in words, not as the answer's JSON.
    expect(contentFirst(r).text).toContain(`[dry run: nothing written; the file is version ${read}]`);
    expect(await stored('plan.txt')).toBe('draft\n');
  });

  it('a merge from a version casket does not hold is refused as changed, with the version to name next; nothing is written', async () => {
    await call(ann, 'write_file', { path: `${bucket}/unkept.txt`, content: 'a\nb\nc\n', create_only: true });
    const current = await etagOf(ann, 'unkept.txt');
    // A version casket never stored: no base to merge from, as one it no longer keeps.
    const never = `"${'0'.repeat(64)}"`;
    const r = await call(ann, 'edit_file', edit('unkept.txt', 'c', 'C', { expected_etag: never, merge: true }));
    expect(r.isError).toBe(true);
    expect(data(r)).toMatchObject({ error: 'precondition-failed', current_etag: current, your_version: never, written: false });
    expect(missing(r, [`changed since version ${never}, the one you named: it is now ${current}`, `then edit_file again with "expected_etag": ${JSON.stringify(current)}`])).toEqual([]);
    expect(await stored('unkept.txt')).toBe('a\nb\nc\n');
  });

  it('a merge whose edit touches a line someone else changed is refused as a conflict; the next call is another edit, of the current version', async () => {
    await call(ann, 'write_file', { path: `${bucket}/clash.txt`, content: 'one\ntwo\nthree\n', create_only: true });
    const read = await etagOf(bob, 'clash.txt');
    expect((await call(ann, 'edit_file', edit('clash.txt', 'two', 'TWO'))).isError).toBeFalsy();
    const r = await call(bob, 'edit_file', edit('clash.txt', 'two', '2', { expected_etag: read, merge: true }));
    expect(r.isError).toBe(true);
    const now = String(data(r).current_etag);
    expect(data(r)).toMatchObject({ error: 'merge-conflict', written: false });
    expect(missing(r, ['could not be merged', `then edit_file again with "expected_etag": ${JSON.stringify(now)}`])).toEqual([]);
    expect(await stored('clash.txt')).toBe('one\nTWO\nthree\n');
  });

  it('a version named that the agent never read whole is refused as a stale read of the one it did read, and the refusal says both', async () => {
    await call(ann, 'write_file', { path: `${bucket}/listed.txt`, content: 'v1\n', create_only: true });
    const first = await etagOf(bob, 'listed.txt');
    expect((await call(ann, 'edit_file', edit('listed.txt', 'v1', 'v2'))).isError).toBeFalsy();
    const now = await etagOf(ann, 'listed.txt');
    // bob names the current version, taken from someone else, not from a read.
    const r = await call(bob, 'edit_file', edit('listed.txt', 'v2', 'v3', { expected_etag: now }));
    expect(data(r)).toMatchObject({ error: 'stale-read', current_etag: now, your_version: first, written: false });
    expect(missing(r, [`changed since version ${first}, the one you last read (you named ${now}, which you have not read whole)`])).toEqual([]);
    expect(await stored('listed.txt')).toBe('v2\n');
  });

  it('a file deleted since the version named: it does not exist, and the next call creates it', async () => {
    const made = await call(ann, 'write_file', { path: `${bucket}/deleted.txt`, content: 'q\n', create_only: true });
    await admin.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'deleted.txt' }));
    const r = await call(ann, 'edit_file', edit('deleted.txt', 'q', 'Q', { expected_etag: data(made).etag }));
    expect(r.isError).toBe(true);
    expect(missing(r, [`${bucket}/deleted.txt does not exist`, `write_file {"path": "${bucket}/deleted.txt", "content": …, "create_only": true}`])).toEqual([]);
  });
});

describe('edit_file after the write log let go of the write (--state-max-entries)', () => {
  it('names the agent who wrote the current version from the file itself', async () => {
    const small = await startMcpCasket({ agents: ['ann', 'bob'], flags: { stateMaxEntries: '4' } });
    const s3 = sdk(small.url, small.admin);
    const a = await httpClient(small, mintToken(small.agents.ann!), 'ann');
    const b = await httpClient(small, mintToken(small.agents.bob!), 'bob');
    try {
      await s3.send(new CreateBucketCommand({ Bucket: bucket }));
      const path = `${bucket}/kept.txt`;
      await call(a, 'write_file', { path, content: 'one\n', create_only: true });
      const read = String(data(await call(b, 'read_text_file', { path })).etag);
      expect((await call(a, 'edit_file', { path, edits: [{ oldText: 'one', newText: 'two' }] })).isError).toBeFalsy();
      // More writes than the log keeps: ann's edit is no longer in it.
      for (let i = 0; i < 6; i++) await s3.send(new PutObjectCommand({ Bucket: bucket, Key: `other-${i}.txt`, Body: 'x' }));
      const r = await call(b, 'edit_file', { path, edits: [{ oldText: 'one', newText: 'three' }], expected_etag: read });
      expect(data(r)).toMatchObject({ error: 'precondition-failed', last_writer: 'ann', written: false });
      expect(missing(r, ['written by agent "ann"'])).toEqual([]);
    } finally {
      await a.close();
      await b.close();
      s3.destroy();
      await small.stop();
    }
  });
});
