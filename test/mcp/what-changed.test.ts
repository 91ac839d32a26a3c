/**
 * what_changed as each client shows it to the model (src/mcp/tools/what_changed.ts,
 * docs/design.md §6): a client that shows the text (the MCP Inspector, the
 * content-first clients) reads how many files changed, each with who changed
 * it to which version and when, the version the agent read and the diff; one
 * that shows only structuredContent reads the same as fields. Diffs are shown
 * for the first MAX_DIFFS (10) changes, the rest named only. In-process under
 * CASKET_TEST_IN_PROCESS, so `npm run mutate:rooms` sees it.
 */
import { CreateBucketCommand, DeleteObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sdk } from '../helpers/clients.js';
import { call, data, httpClient, mintToken, startMcpCasket, type McpCasket } from '../helpers/mcp.js';
import { contentFirst, missing } from '../helpers/model-view.js';

const bucket = 'changed';
let casket: McpCasket;
let admin: S3Client;
let ann: Client;
let bob: Client;

beforeAll(async () => {
  casket = await startMcpCasket({ agents: ['ann', 'bob'] });
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

const path = (key: string) => `${bucket}/${key}`;
const read = async (who: Client, key: string) => String(data(await call(who, 'read_text_file', { path: path(key) })).etag);

it('names each change: who changed it to which version, or deleted it, when, the version read, and the diff', async () => {
  await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'plan.md', Body: 'one\n' }));
  await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'gone.md', Body: 'gone\n' }));
  const planRead = await read(ann, 'plan.md');
  const goneRead = await read(ann, 'gone.md');
  const cursor = String(data(await call(ann, 'what_changed', {})).cursor);
  await read(bob, 'plan.md');
  const now = String(data(await call(bob, 'write_file', { path: path('plan.md'), content: 'two\n' })).etag);
  await admin.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'gone.md' }));

  const r = await call(ann, 'what_changed', { since: cursor });
  const changes = data(r).changes as Array<Record<string, unknown>>;
  expect(changes).toMatchObject([
    { path: path('plan.md'), your_version: planRead, current_etag: now, writer: 'bob', diff: expect.stringContaining('+two') },
    { path: path('gone.md'), your_version: goneRead, current_etag: null, writer: null, writer_access_key: casket.admin.accessKeyId },
  ]);
  expect(changes[1]).not.toHaveProperty('diff');
  // Every view: the structured one as fields, the text one as sentences.
  expect(missing(r, [path('plan.md'), now, planRead, '+two', path('gone.md')])).toEqual([]);
  const shown = contentFirst(r).text;
  expect(shown).toContain('2 file(s) changed by others since you read them:');
  expect(shown).toContain(`${path('plan.md')}: changed to ${now} by agent "bob" at ${String(changes[0]!.at)} (you read ${planRead})\n`);
  expect(shown).toContain(`${path('gone.md')}: deleted by access key "${casket.admin.accessKeyId}" at ${String(changes[1]!.at)} (you read ${goneRead})`);
  expect(shown).toContain(`[cursor: ${String(data(r).cursor)}; pass it as since next time]`);
  expect(contentFirst(r).text.startsWith('2 file(s) changed')).toBe(true);

  const quiet = await call(ann, 'what_changed', { since: String(data(r).cursor) });
  expect(contentFirst(quiet).text.startsWith('Nothing you read has changed since.\n[cursor: ')).toBe(true);
  expect(data(quiet).changes).toEqual([]);
});

it('shows the diffs of the first 10 changes and names the rest without one', async () => {
  const keys = Array.from({ length: 11 }, (_, i) => `many/${String(i).padStart(2, '0')}.md`);
  for (const key of keys) await admin.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: `${key} v1\n` }));
  for (const key of keys) await read(ann, key);
  const cursor = String(data(await call(ann, 'what_changed', {})).cursor);
  for (const key of keys) await admin.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: `${key} v2\n` }));
  const changes = data(await call(ann, 'what_changed', { since: cursor })).changes as Array<Record<string, unknown>>;
  expect(changes.map((c) => c.path)).toEqual(keys.map(path));
  expect(changes.map((c) => typeof c.diff === 'string')).toEqual([...Array<boolean>(10).fill(true), false]);
});

it('declares its answer: the cursor, and each change with a deleted file as null and who wrote it', async () => {
  const { tools } = await ann.listTools();
  const schema = tools.find((t) => t.name === 'what_changed')!.outputSchema as { properties: Record<string, { items?: { properties: Record<string, { description?: string }> } }> };
  expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(['cursor', 'changes']));
  const change = schema.properties.changes!.items!.properties;
  expect(Object.keys(change)).toEqual(expect.arrayContaining(['path', 'your_version', 'current_etag', 'writer', 'writer_access_key', 'operation', 'at', 'diff']));
  expect(change.current_etag!.description).toBe('null: deleted');
  expect(change.writer!.description).toBe('the agent that wrote it, or null for a person');
  expect(change.writer_access_key!.description).toBe("the access key of a person's write (never a secret)");
});
