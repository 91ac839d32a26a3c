/**
 * move_file's two conditions as the model sees them (docs/design.md §8;
 * test/helpers/model-view.ts): the source version the agent last read whole
 * moves, to a key of any characters; a destination that exists moves only
 * over the version destination_etag names; a source that is gone, or changed
 * since, is refused on the source (since the version named, or the one last
 * read when the call named none), a destination taken or changed is refused
 * on the destination — each with the path it is about and the next call.
 */
import { CreateBucketCommand, HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdk, storedText } from '../helpers/clients.js';
import { call, data, httpClient, mintToken, startMcpCasket, text, type McpCasket } from '../helpers/mcp.js';
import { contentFirst, missing, showing } from '../helpers/model-view.js';

const bucket = 'moves';
let casket: McpCasket;
let admin: S3Client;
let ann: Client;
let keeper: Client;

beforeAll(async () => {
  casket = await startMcpCasket({
    agents: ['ann'],
    // May copy but not delete: its moves are refused before the copy.
    keys: { keeper: { agent: 'keeper', policy: { Statement: [{ Effect: 'Allow', Action: ['s3:GetObject', 's3:PutObject', 's3:ListBucket'], Resource: [`arn:aws:s3:::${bucket}`, `arn:aws:s3:::${bucket}/*`] }] } } },
  });
  admin = sdk(casket.url, casket.admin);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  ann = await httpClient(casket, mintToken(casket.agents.ann!), 'ann');
  keeper = await httpClient(casket, mintToken(casket.keys.keeper!, { agent: 'keeper' }), 'keeper');
});
afterAll(async () => {
  await ann?.close();
  await keeper?.close();
  admin?.destroy();
  await casket?.stop();
});

const stored = (key: string) => storedText(admin, bucket, key);
const put = (key: string, body: string) => admin.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
const readEtag = async (key: string) => String(data(await call(ann, 'read_text_file', { path: `${bucket}/${key}` })).etag);

describe('move_file', () => {
  it('moves the version read whole, named by no expected_etag, between keys of spaces, accents, % and ?', async () => {
    await put('a b/50% é.txt', 'spaced\n');
    const read = await readEtag('a b/50% é.txt');
    const r = await call(ann, 'move_file', { source: `${bucket}/a b/50% é.txt`, destination: `${bucket}/c d/ü?.txt` });
    expect(r.isError, text(r)).toBeFalsy();
    expect(data(r)).toMatchObject({ source: `${bucket}/a b/50% é.txt`, destination: `${bucket}/c d/ü?.txt`, etag: read, written: true });
    expect(missing(r, [`${bucket}/a b/50% é.txt`, `${bucket}/c d/ü?.txt`, read])).toEqual([]);
    expect(contentFirst(r).text).toBe(`Moved ${bucket}/a b/50% é.txt (version ${read}) to ${bucket}/c d/ü?.txt.`);
    expect(await stored('c d/ü?.txt')).toBe('spaced\n');
    expect(await stored('a b/50% é.txt')).toBeUndefined();
  });

  it('a source read only in part has no version to move: refused, read it whole', async () => {
    await put('part.txt', 'one\ntwo\nthree\n');
    await call(ann, 'read_text_file', { path: `${bucket}/part.txt`, head: 1 });
    const r = await call(ann, 'move_file', { source: `${bucket}/part.txt`, destination: `${bucket}/part2.txt` });
    expect(r.isError).toBe(true);
    expect(data(r)).toMatchObject({ error: 'not-read', path: `${bucket}/part.txt`, written: false });
    expect(missing(r, [`not read ${bucket}/part.txt in full`, `read_text_file {"path": "${bucket}/part.txt"}`, 'Nothing was written'])).toEqual([]);
    expect(await stored('part.txt')).toBe('one\ntwo\nthree\n');
    expect(await stored('part2.txt')).toBeUndefined();
  });

  it('over an existing destination only at the version destination_etag names: a changed one is refused, on the destination', async () => {
    await put('src.txt', 'src\n');
    await put('dst.txt', 'dst\n');
    const src = await readEtag('src.txt');
    const dst = await readEtag('dst.txt');
    await put('dst.txt', 'dst changed\n');
    const r = await call(ann, 'move_file', { source: `${bucket}/src.txt`, destination: `${bucket}/dst.txt`, expected_etag: src, destination_etag: dst });
    expect(r.isError).toBe(true);
    expect(data(r)).toMatchObject({ error: 'precondition-failed', path: `${bucket}/dst.txt`, your_version: dst, written: false });
    expect(missing(r, [`${bucket}/dst.txt changed since version ${dst}, the one you named`, '+dst changed', 'Nothing was written'])).toEqual([]);
    expect(await stored('src.txt')).toBe('src\n');
    expect(await stored('dst.txt')).toBe('dst changed\n');
    const now = await readEtag('dst.txt');
    // The next call names the destination's version by the argument that takes it, not the source's expected_etag.
    expect(missing(r, [`then move_file again with "destination_etag": ${JSON.stringify(now)}`])).toEqual([]);
    const moved = await call(ann, 'move_file', { source: `${bucket}/src.txt`, destination: `${bucket}/dst.txt`, expected_etag: src, destination_etag: now });
    expect(moved.isError, text(moved)).toBeFalsy();
    expect(await stored('dst.txt')).toBe('src\n');
    expect(await stored('src.txt')).toBeUndefined();
  });

  it('onto a destination that exists, named by no destination_etag: refused as taken, and the next call is move_file with its version as destination_etag', async () => {
    await put('from.txt', 'from\n');
    await put('taken.txt', 'taken\n');
    const from = await readEtag('from.txt');
    const taken = await readEtag('taken.txt');
    const r = await call(ann, 'move_file', { source: `${bucket}/from.txt`, destination: `${bucket}/taken.txt`, expected_etag: from });
    expect(r.isError).toBe(true);
    expect(data(r)).toMatchObject({ path: `${bucket}/taken.txt`, current_etag: taken, written: false });
    expect(missing(r, [`${bucket}/taken.txt already exists`, `then move_file with "destination_etag": ${JSON.stringify(taken)} to replace it`])).toEqual([]);
    expect(await stored('taken.txt')).toBe('taken\n');
    expect(await stored('from.txt')).toBe('from\n');
  });

  it('a source changed since the version named is refused on the source, with its change; nothing moves', async () => {
    await put('changed.txt', 'first\n');
    const read = await readEtag('changed.txt');
    await put('changed.txt', 'second\n');
    const r = await call(ann, 'move_file', { source: `${bucket}/changed.txt`, destination: `${bucket}/changed2.txt`, expected_etag: read });
    expect(r.isError).toBe(true);
    expect(data(r)).toMatchObject({ error: 'precondition-failed', path: `${bucket}/changed.txt`, your_version: read, written: false });
    expect(missing(r, [`${bucket}/changed.txt changed since version ${read}, the one you named`, String(data(r).current_etag), '+second', 'Nothing was written', 'then move_file again with "expected_etag"'])).toEqual([]);
    expect(await stored('changed2.txt')).toBeUndefined();
  });

  it('a source changed since the agent read it, named by no expected_etag, is refused as changed since that read', async () => {
    await put('drifted.txt', 'first\n');
    const read = await readEtag('drifted.txt');
    await put('drifted.txt', 'second\n');
    const r = await call(ann, 'move_file', { source: `${bucket}/drifted.txt`, destination: `${bucket}/drifted2.txt` });
    expect(data(r)).toMatchObject({ error: 'precondition-failed', path: `${bucket}/drifted.txt`, your_version: read, written: false });
    expect(missing(r, [`${bucket}/drifted.txt changed since version ${read}, the one you last read`, '+second'])).toEqual([]);
    expect(showing(r, 'the one you named')).toEqual([]);
    expect(await stored('drifted2.txt')).toBeUndefined();
  });

  it('a source deleted since it was read is refused as gone, on the source; nothing moves', async () => {
    await put('gone.txt', 'g\n');
    const read = await readEtag('gone.txt');
    await call(ann, 'delete_file', { path: `${bucket}/gone.txt`, expected_etag: read });
    const r = await call(ann, 'move_file', { source: `${bucket}/gone.txt`, destination: `${bucket}/gone2.txt`, expected_etag: read });
    expect(r.isError).toBe(true);
    // The same word delete_file answers for a file that is not there (delete-file.test.ts).
    expect(data(r)).toMatchObject({ error: 'no-such-key', path: `${bucket}/gone.txt`, written: false });
    expect(missing(r, [`${bucket}/gone.txt does not exist`, 'Nothing was written'])).toEqual([]);
    expect(await stored('gone2.txt')).toBeUndefined();
  });

  it('a source its key may not delete: refused before the copy, so nothing is written (no copy left behind)', async () => {
    await put('kept.txt', 'kept\n');
    await call(keeper, 'read_text_file', { path: `${bucket}/kept.txt` });
    const r = await call(keeper, 'move_file', { source: `${bucket}/kept.txt`, destination: `${bucket}/copy.txt` });
    expect(r.isError).toBe(true);
    expect(data(r)).toMatchObject({ error: 'AccessDenied', path: `${bucket}/kept.txt`, written: false });
    expect(missing(r, [`Refused: your credential may not do this on ${bucket}/kept.txt: `, 'Nothing was written.'])).toEqual([]);
    expect(await stored('copy.txt')).toBeUndefined();
    expect(await stored('kept.txt')).toBe('kept\n');
  });

  it('a version named that the agent never read whole, though current: refused before the copy, as the delete would be; nothing moves', async () => {
    await put('unread.txt', 'v1\n');
    const v1 = await readEtag('unread.txt');
    await put('unread.txt', 'v2\n');
    const v2 = `"${(await admin.send(new HeadObjectCommand({ Bucket: bucket, Key: 'unread.txt' }))).ETag!.replace(/"/g, '')}"`;
    const r = await call(ann, 'move_file', { source: `${bucket}/unread.txt`, destination: `${bucket}/unread2.txt`, expected_etag: v2 });
    expect(r.isError).toBe(true);
    expect(data(r)).toMatchObject({ error: 'stale-read', path: `${bucket}/unread.txt`, written: false });
    expect(missing(r, [`${bucket}/unread.txt changed since version ${v1}, the one you last read (you named ${v2}, which you have not read whole)`, 'Nothing was written'])).toEqual([]);
    expect(await stored('unread2.txt')).toBeUndefined();
    expect(await stored('unread.txt')).toBe('v2\n');
  });

  it('moves the version expected_etag names, not the one last read: an older one named is refused as changed since', async () => {
    await put('reread.txt', 'old\n');
    const old = await readEtag('reread.txt');
    await put('reread.txt', 'new\n');
    await readEtag('reread.txt');
    const r = await call(ann, 'move_file', { source: `${bucket}/reread.txt`, destination: `${bucket}/reread2.txt`, expected_etag: old });
    expect(r.isError).toBe(true);
    expect(missing(r, [`${bucket}/reread.txt changed since version ${old}, the one you named`, 'Nothing was written'])).toEqual([]);
    expect(await stored('reread2.txt')).toBeUndefined();
    expect(await stored('reread.txt')).toBe('new\n');
  });

  it('a destination_etag that is no etag is refused by its own name before anything is written', async () => {
    await put('named.txt', 'n\n');
    const r = await call(ann, 'move_file', { source: `${bucket}/named.txt`, destination: `${bucket}/named2.txt`, expected_etag: await readEtag('named.txt'), destination_etag: 'latest' });
    expect(r.isError).toBe(true);
    expect(missing(r, ['destination_etag "latest" is not a casket ETag'])).toEqual([]);
    expect(await stored('named.txt')).toBe('n\n');
  });
});
