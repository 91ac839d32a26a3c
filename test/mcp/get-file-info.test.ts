/**
 * get_file_info as clients show it to the model (src/mcp/tools/get_file_info.ts):
 * a text line per field for the clients that show the text, the same fields
 * as structuredContent for the others, and `your_read` — what this agent last
 * read of the file: none, partial, full, stale (a version before the current
 * one), or "not an agent" for a person's key — with the version it read. In-process
 * under CASKET_TEST_IN_PROCESS, so `npm run mutate:rooms` sees it.
 */
import { CreateBucketCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sdk } from '../helpers/clients.js';
import { call, data, httpClient, mintToken, startMcpCasket, type McpCasket } from '../helpers/mcp.js';
import { contentFirst, missing } from '../helpers/model-view.js';

const bucket = 'info';
const path = `${bucket}/notes.md`;
let casket: McpCasket;
let admin: S3Client;
let ann: Client;
let person: Client;

beforeAll(async () => {
  casket = await startMcpCasket({ agents: ['ann'] });
  admin = sdk(casket.url, casket.admin);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'notes.md', Body: 'a\nb\n', ContentType: 'text/markdown' }));
  ann = await httpClient(casket, mintToken(casket.agents.ann!), 'ann');
  person = await httpClient(casket, mintToken(casket.admin), 'person');
});
afterAll(async () => {
  await ann?.close();
  await person?.close();
  admin?.destroy();
  await casket?.stop();
});

const info = async (who: Client) => {
  const r = await call(who, 'get_file_info', { path });
  return { r, d: data(r) };
};

it('says what this agent last read of the file, and which version, in every view', async () => {
  const never = await info(ann);
  expect(never.d).toMatchObject({ path, size: 4, content_type: 'text/markdown', your_read: 'none' });
  expect(never.d).not.toHaveProperty('your_read_etag');
  expect(contentFirst(never.r).text).toBe(Object.entries(never.d).map(([k, v]) => `${k}: ${v}`).join('\n'));
  expect(contentFirst(never.r).text).toContain(`etag: ${String(never.d.etag)}\n`);

  await call(ann, 'read_text_file', { path, head: 1 });
  expect((await info(ann)).d).toMatchObject({ your_read: 'partial', your_read_etag: never.d.etag });
  await call(ann, 'read_text_file', { path });
  const full = await info(ann);
  expect(full.d).toMatchObject({ your_read: 'full', your_read_etag: never.d.etag });
  expect(missing(full.r, ['full', String(never.d.etag)])).toEqual([]);

  await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'notes.md', Body: 'c\n' }));
  const stale = await info(ann);
  expect(stale.d).toMatchObject({ your_read: 'stale', your_read_etag: never.d.etag });
  expect(stale.d.etag).not.toBe(never.d.etag);
  expect(contentFirst(stale.r).text).toContain('your_read: stale\n');

  expect((await info(person)).d).toMatchObject({ your_read: 'not an agent' });
});

it('declares your_read with its five words', async () => {
  const { tools } = await ann.listTools();
  const schema = tools.find((t) => t.name === 'get_file_info')!.outputSchema as { properties: Record<string, { enum?: string[] }> };
  expect(schema.properties.your_read!.enum).toEqual(['none', 'partial', 'full', 'stale', 'not an agent']);
  expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(['size', 'etag', 'last_modified', 'last_writer', 'content_type', 'your_read_etag']));
});
