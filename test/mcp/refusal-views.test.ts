/**
 * Each kind of refusal a write tool answers (src/mcp/refusals.ts), as every
 * client rule shows it to the model (helpers/model-view.ts): what happened
 * in words the model can act on — the version it read or named, the current
 * one and who wrote it, whether its content is already there — and the
 * exact next call, which a program also finds in `structuredContent.next`.
 * One refusal per guard reason (src/guard/guard.ts): a partial read, a file
 * never read, a write that named no version under --agent-writes require
 * (the 428 of S3), a stale read and a file deleted since it was read under
 * --agent-writes read-stamp, and the S3 refusals (NoSuchKey, AccessDenied,
 * If-None-Match). Started with startMcpCasket, so `npm run mutate:rooms`
 * (ROOM=mcp) runs them in-process, where refusals.ts's mutants are.
 */
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdk } from '../helpers/clients.js';
import { call, data, httpClient, mintToken, startMcpCasket, text, type McpCasket, type ToolResult } from '../helpers/mcp.js';
import { missing, showing, type Need } from '../helpers/model-view.js';

const bucket = 'refusals';
/**
 * The default, --agent-writes require; and --agent-writes read-stamp (the
 * guard derives the condition) with --etag-suffix always, where every etag
 * an answer names is "<sha256>-1" but a refusal's diff link names the
 * versions as stored (s3/write.ts diffPath).
 */
let require_: McpCasket;
let stamp: McpCasket;
let alice: Client;
let bob: Client;
let carol: Client;
let ann: Client;
let ben: Client;

const READ_ONLY = { Statement: [{ Effect: 'Allow', Action: ['s3:GetObject', 's3:ListBucket'], Resource: [`arn:aws:s3:::${bucket}`, `arn:aws:s3:::${bucket}/*`] }] };

beforeAll(async () => {
  require_ = await startMcpCasket({ agents: ['alice', 'bob'], keys: { person: {}, reader: { agent: 'carol', policy: READ_ONLY } } });
  await sdk(require_.url, require_.admin).send(new CreateBucketCommand({ Bucket: bucket }));
  alice = await httpClient(require_, mintToken(require_.agents.alice!), 'alice');
  bob = await httpClient(require_, mintToken(require_.agents.bob!), 'bob');
  carol = await httpClient(require_, mintToken(require_.keys.reader!), 'carol');
  stamp = await startMcpCasket({ agents: ['ann', 'ben'], flags: { agentWrites: 'read-stamp', etagSuffix: 'always' } });
  await sdk(stamp.url, stamp.admin).send(new CreateBucketCommand({ Bucket: bucket }));
  ann = await httpClient(stamp, mintToken(stamp.agents.ann!), 'ann');
  ben = await httpClient(stamp, mintToken(stamp.agents.ben!), 'ben');
});
afterAll(async () => {
  for (const c of [alice, bob, carol, ann, ben]) await c?.close();
  await require_?.stop();
  await stamp?.stop();
});

/** Asserts every client view of `r` holds `needs`. */
function seen(r: ToolResult, needs: readonly Need[]): void {
  expect(r.isError, text(r)).toBe(true);
  expect(missing(r, needs), JSON.stringify(r).slice(0, 2000)).toEqual([]);
}

const etagOf = (r: ToolResult) => String(data(r).etag);
/** An etag as the next call quotes it inside a JSON argument. */
const asArgument = (etag: string) => `"expected_etag": "${etag.replace(/"/g, '\\"')}"`;
const reread = (key: string) => `read_text_file {"path": "${bucket}/${key}"} (the whole file: no head, tail, offset or limit)`;
const create = (key: string) => `write_file {"path": "${bucket}/${key}", "content": …, "create_only": true}`;

async function made(client: Client, key: string, content: string): Promise<string> {
  const r = await call(client, 'write_file', { path: `${bucket}/${key}`, content, create_only: true });
  expect(r.isError, text(r)).toBeFalsy();
  return etagOf(r);
}

describe('a refusal of the guard\'s agent rules, as the model sees it', () => {
  it('a partial read: only part was read, which entitles no write; no diff, since the version read is the current one', async () => {
    const etag = await made(alice, 'partial.md', 'l1\nl2\nl3\n');
    await call(bob, 'read_text_file', { path: `${bucket}/partial.md`, head: 1 });
    const r = await call(bob, 'write_file', { path: `${bucket}/partial.md`, content: 'new\n' });
    const next = `${reread('partial.md')}, then write_file again with ${asArgument(etag)}`;
    seen(r, [`Refused: you read only part of ${bucket}/partial.md (version ${etag}). A partial read does not entitle a write. Nothing was written.`, `Next: ${next}.`]);
    expect(data(r)).toMatchObject({ error: 'partial-read', current_etag: etag, your_version: etag, next, written: false });
    expect(data(r).diff).toBeUndefined();
    expect(showing(r, 'What changed')).toEqual([]);
  });

  it('a file never read: it exists, written by whom and when, and the whole read comes first', async () => {
    const etag = await made(alice, 'unread.md', 'a\n');
    const r = await call(bob, 'write_file', { path: `${bucket}/unread.md`, content: 'b\n', expected_etag: etag });
    const when = String(data(r).last_modified);
    const next = `${reread('unread.md')}, then write_file again with ${asArgument(etag)}`;
    seen(r, [`Refused: you have not read ${bucket}/unread.md, which exists (version ${etag}, written by agent "alice" at ${when}). Nothing was written.`, `Next: ${next}.`]);
    expect(data(r)).toMatchObject({ error: 'not-read', current_etag: etag, last_writer: 'alice', next, written: false });
    expect(when).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it('a write that named no version of a file it never read, under --agent-writes require: the 428, with the current version', async () => {
    const etag = await made(alice, 'blind.md', 'a\n');
    const r = await call(bob, 'write_file', { path: `${bucket}/blind.md`, content: 'b\n' });
    const when = String(data(r).last_modified);
    const next = `${reread('blind.md')}, then write_file again with ${asArgument(etag)}`;
    seen(r, [`Refused: agents write conditionally, and this write named no version of ${bucket}/blind.md (current ${etag}, written by agent "alice" at ${when}). Nothing was written.`, `Next: ${next}.`]);
    expect(data(r)).toMatchObject({ error: 'precondition-required', current_etag: etag, next, written: false });
  });

  it('a version named that was never read whole: changed since the one last read, and the one named is said apart', async () => {
    const path = `${bucket}/named.md`;
    const first = await made(alice, 'named.md', 'one\n');
    await call(bob, 'read_text_file', { path });
    await call(alice, 'read_text_file', { path });
    const now = etagOf(await call(alice, 'write_file', { path, content: 'two\n', expected_etag: first }));
    // bob names the current version, taken from a listing, not a read.
    const r = await call(bob, 'write_file', { path, content: 'three\n', expected_etag: now });
    const when = String(data(r).last_modified);
    seen(r, [`Refused: ${path} changed since version ${first}, the one you last read (you named ${now}, which you have not read whole): it is now ${now}, written by agent "alice" at ${when}. Nothing was written.`, reread('named.md')]);
    expect(data(r)).toMatchObject({ error: 'stale-read', current_etag: now, your_version: first, written: false });
  });

  it('a version named and read, changed since: the one named, and who changed it', async () => {
    const path = `${bucket}/read-named.md`;
    const first = await made(alice, 'read-named.md', 'one\n');
    await call(bob, 'read_text_file', { path });
    await call(alice, 'read_text_file', { path });
    const now = etagOf(await call(alice, 'write_file', { path, content: 'two\n', expected_etag: first }));
    const r = await call(bob, 'edit_file', { path, edits: [{ oldText: 'one', newText: 'ONE' }], expected_etag: first });
    seen(r, [`Refused: ${path} changed since version ${first}, the one you named: it is now ${now}, written by agent "alice" at `]);
  });

  it('a stale read under --agent-writes read-stamp: changed since the version last read, by whom, the diff, and the retry', async () => {
    const path = `${bucket}/stale.md`;
    const first = await made(ann, 'stale.md', 'one\ntwo\n');
    await call(ben, 'read_text_file', { path });
    await call(ann, 'read_text_file', { path });
    const edited = await call(ann, 'edit_file', { path, edits: [{ oldText: 'two', newText: 'TWO' }] });
    const now = etagOf(edited);
    const r = await call(ben, 'write_file', { path, content: 'three\n' });
    const when = String(data(r).last_modified);
    seen(r, [
      `Refused: ${path} changed since version ${first}, the one you last read: it is now ${now}, written by agent "ann" at ${when}. Nothing was written.`,
      `Next: ${reread('stale.md')}, then write_file again with ${asArgument(now)}.`,
      `What changed since ${first}:\n`,
      '-two\n+TWO',
    ]);
    expect(data(r)).toMatchObject({ error: 'stale-read', current_etag: now, your_version: first, last_writer: 'ann', diff_truncated: false, identical: false, written: false });
  });

  it('a file deleted since it was read, under --agent-writes read-stamp: it no longer exists, and the call that creates it', async () => {
    const path = `${bucket}/gone.md`;
    await made(ann, 'gone.md', 'x\n');
    await call(ben, 'read_text_file', { path });
    await call(ann, 'read_text_file', { path });
    expect((await call(ann, 'delete_file', { path })).isError).toBeFalsy();
    const r = await call(ben, 'write_file', { path, content: 'y\n' });
    seen(r, [`Refused: ${path} no longer exists. Nothing was written.`, `Next: ${create('gone.md')} to create it.`]);
    expect(data(r)).toMatchObject({ error: 'stale-read', next: `${create('gone.md')} to create it`, written: false });
    expect(data(r).current_etag).toBeUndefined();
  });
});

describe('a diff past --diff-max-bytes (64 KiB by default)', () => {
  it('is shown cut short, and the refusal says so', async () => {
    const path = `${bucket}/big.md`;
    const lines = (word: string) => Array.from({ length: 2000 }, (_, i) => `${word} line ${i} of a long file\n`).join('');
    const first = await made(alice, 'big.md', lines('old'));
    await call(bob, 'read_text_file', { path });
    await call(alice, 'read_text_file', { path });
    expect((await call(alice, 'write_file', { path, content: lines('new'), expected_etag: first })).isError).toBeFalsy();
    const r = await call(bob, 'write_file', { path, content: 'mine\n', expected_etag: first });
    seen(r, [`What changed since ${first} (cut short):\n`, '-old line 0 of a long file\n']);
    expect(data(r)).toMatchObject({ error: 'precondition-failed', diff_truncated: true, written: false });
  });
});

describe('content that is already there', () => {
  it('says the current content is what was sent, and who made that change: an agent, or a person\'s access key', async () => {
    const path = `${bucket}/same.md`;
    const first = await made(alice, 'same.md', 'v1\n');
    await call(bob, 'read_text_file', { path });
    await call(alice, 'read_text_file', { path });
    await call(alice, 'write_file', { path, content: 'v2\n', expected_etag: first });
    const byAgent = await call(bob, 'write_file', { path, content: 'v2\n', expected_etag: first });
    seen(byAgent, ['The current content is byte-for-byte what you sent: if that was your own earlier call, it landed; if not, agent "alice" made the same change, and yours would be a second one.']);
    expect(data(byAgent)).toMatchObject({ identical: true, written: false });

    const person = require_.keys.person!;
    await sdk(require_.url, person).send(new PutObjectCommand({ Bucket: bucket, Key: 'same.md', Body: 'v3\n' }));
    const byPerson = await call(bob, 'write_file', { path, content: 'v3\n', expected_etag: first });
    seen(byPerson, [`if not, access key "${person.accessKeyId}" made the same change, and yours would be a second one.`]);
    expect(data(byPerson)).toMatchObject({ identical: true, last_writer_access_key: person.accessKeyId, written: false });
    expect(showing(byPerson, 'undefined')).toEqual([]);
  });
});

describe('the S3 refusals, in the tool\'s own terms', () => {
  it('create_only on a file that exists: the call that replaces it is the refused tool\'s own', async () => {
    const etag = await made(alice, 'exists.md', 'a\n');
    const one = await call(bob, 'write_file', { path: `${bucket}/exists.md`, content: 'b\n', create_only: true });
    seen(one, [`Next: ${reread('exists.md')}, then write_file with "expected_etag": ${JSON.stringify(etag)} to replace it.`]);
    const many = await call(bob, 'write_files', { files: [{ path: `${bucket}/exists.md`, content: 'b\n', create_only: true }] });
    seen(many, [`Next: ${reread('exists.md')}, then write_files with "expected_etag": ${JSON.stringify(etag)} to replace it.`]);
  });

  it('a version named of a file deleted since: it does not exist, create it or find it', async () => {
    const path = `${bucket}/deleted.md`;
    const etag = await made(alice, 'deleted.md', 'a\n');
    await call(alice, 'read_text_file', { path });
    expect((await call(alice, 'delete_file', { path, expected_etag: etag })).isError).toBeFalsy();
    const r = await call(alice, 'write_file', { path, content: 'b\n', expected_etag: etag });
    const next = `${create('deleted.md')} to create it, or list_directory {"path": "${bucket}/"} to find the file`;
    seen(r, [`Refused: ${path} does not exist. Nothing was written.`, `Next: ${next}.`]);
    expect(data(r)).toMatchObject({ error: 'no-such-key', next, written: false });
  });

  it('a changeset the door could not start: which bucket does not exist, that nothing was written, and what to call', async () => {
    const r = await call(alice, 'write_files', { files: [{ path: `${bucket}/before-missing.md`, content: 'x\n', create_only: true }, { path: 'no-such-bucket/x.md', content: 'x\n', create_only: true }] });
    const next = 'list_directory on a bucket that exists (paths are bucket/key)';
    seen(r, ['Refused: there is no bucket "no-such-bucket". Nothing was written.', `Next: ${next}.`]);
    expect(data(r)).toMatchObject({ error: 'NoSuchBucket', bucket: 'no-such-bucket', next, written: false });
    expect((await call(alice, 'get_file_info', { path: `${bucket}/before-missing.md` })).isError).toBe(true);
  });

  it('a write the key\'s policy denies: the refusal and nothing to call next', async () => {
    const r = await call(carol, 'write_file', { path: `${bucket}/denied.md`, content: 'x\n', create_only: true });
    // AWS words AccessDenied without a full stop: the refusal ends its sentence before its own.
    seen(r, [`Refused: your credential may not do this on ${bucket}/denied.md: `, 'because no policy allows the action. Nothing was written.']);
    expect(text(r)).toMatch(/ Nothing was written\.$/);
    const many = await call(carol, 'write_files', { files: [{ path: `${bucket}/denied.md`, content: 'x\n', create_only: true }] });
    seen(many, ['because no policy allows the action. Nothing was written.']);
    expect(data(many)).toMatchObject({ error: 'AccessDenied', written: false });
    expect(data(r)).toMatchObject({ error: 'AccessDenied', written: false });
    expect(data(r).next).toBeUndefined();
  });
});
