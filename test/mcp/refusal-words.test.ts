/**
 * A refusal says who and what in the same words everywhere (issue 41, found 8):
 * a file a person's key wrote is "written by access key "…"" in the refusal's
 * sentence as in its diff; the diff names files a/bucket/key as edit_file's
 * diffs do; a merge refused for edits of adjacent lines says so, not that both
 * changed "the same lines".
 */
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sdk } from '../helpers/clients.js';
import { call, data, httpClient, mintToken, startMcpCasket, text, type McpCasket } from '../helpers/mcp.js';

const bucket = 'words';
let casket: McpCasket;
let alice: Client;
let bob: Client;

beforeAll(async () => {
  casket = await startMcpCasket({ agents: ['alice', 'bob'], keys: { carol: {} } });
  await sdk(casket.url, casket.admin).send(new CreateBucketCommand({ Bucket: bucket }));
  alice = await httpClient(casket, mintToken(casket.agents.alice!), 'alice');
  bob = await httpClient(casket, mintToken(casket.agents.bob!), 'bob');
});
afterAll(async () => {
  await alice?.close();
  await bob?.close();
  await casket?.stop();
});

it('names the person\'s access key in the sentence and the diff, and the diff\'s paths are bucket/key', async () => {
  const path = `${bucket}/plan.md`;
  const created = await call(alice, 'write_file', { path, content: 'one\ntwo\nthree\n', create_only: true });
  expect(created.isError, text(created)).toBeFalsy();
  const read = await call(bob, 'read_text_file', { path });
  const carol = casket.keys.carol!;
  await sdk(casket.url, carol).send(new PutObjectCommand({ Bucket: bucket, Key: 'plan.md', Body: 'one\nTWO\nthree\n' }));
  // what_changed names the writer as the refusal and the diff do.
  const changed = await call(bob, 'what_changed', {});
  expect(text(changed)).toContain(`by access key "${carol.accessKeyId}"`);
  expect(text(changed)).not.toContain('a request without an agent');
  expect((data(changed).changes as Array<Record<string, unknown>>)[0]).toMatchObject({ path, writer: null, writer_access_key: carol.accessKeyId });
  const refused = await call(bob, 'edit_file', { path, edits: [{ oldText: 'three', newText: 'THREE' }], expected_etag: data(read).etag });
  expect(refused.isError).toBe(true);
  const said = text(refused);
  expect(said).toContain(`written by access key "${carol.accessKeyId}"`);
  expect(said).not.toContain('a request without an agent');
  const diff = String(data(refused).diff);
  expect(diff).toContain(`--- a/${bucket}/plan.md\t`);
  expect(diff).toContain(`+++ b/${bucket}/plan.md\t`);
  expect(diff).toContain(`(written by access key "${carol.accessKeyId}")`);
  expect(data(refused).last_writer_access_key).toBe(carol.accessKeyId);
  // edit_file's own diff names the file the same way.
  const edited = await call(bob, 'edit_file', { path, edits: [{ oldText: 'three', newText: 'THREE' }], expected_etag: data(refused).current_etag });
  expect(text(edited)).toContain(`--- a/${bucket}/plan.md`);
});

it('a merge refused for edits of adjacent lines says adjacent, not "the same lines"', async () => {
  const path = `${bucket}/adjacent.md`;
  await call(alice, 'write_file', { path, content: 'l1\nl2\nl3\nl4\n', create_only: true });
  const read = await call(bob, 'read_text_file', { path });
  await call(alice, 'edit_file', { path, edits: [{ oldText: 'l1', newText: 'L1' }] });
  const refused = await call(bob, 'edit_file', { path, edits: [{ oldText: 'l2', newText: 'L2' }], expected_etag: data(read).etag, merge: true });
  expect(data(refused)).toMatchObject({ error: 'merge-conflict', written: false });
  expect(text(refused)).toContain('change the same or adjacent lines');
  expect(text(refused)).not.toMatch(/change the same lines/);
});
