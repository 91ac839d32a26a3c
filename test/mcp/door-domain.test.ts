/**
 * The MCP door's tools under --domain (virtual-hosted-style buckets,
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/VirtualHosting.html):
 * a tool names its bucket in its path, and the door makes its S3 request
 * in-process (src/mcp-door.ts). Its Host must never read as `bucket.<domain>`
 * (s3/addressing.ts), or under --domain mcp a Host of "casket.mcp" sent every
 * tool to a bucket "casket". Started with startMcpCasket, so
 * `npm run mutate:rooms` (ROOM=mcp) runs it in-process.
 */
import { CreateBucketCommand, GetObjectCommand } from '@aws-sdk/client-s3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { bytes, sdk } from '../helpers/clients.js';
import { call, data, httpClient, mintToken, startMcpCasket, text, type McpCasket } from '../helpers/mcp.js';
import { missing } from '../helpers/model-view.js';

let casket: McpCasket;
let alice: Client;

beforeAll(async () => {
  casket = await startMcpCasket({ agents: ['alice'], flags: { domain: 'mcp' } });
  await sdk(casket.url, casket.admin).send(new CreateBucketCommand({ Bucket: 'notes' }));
  alice = await httpClient(casket, mintToken(casket.agents.alice!), 'alice');
});
afterAll(async () => {
  await alice?.close();
  await casket?.stop();
});

it('under --domain mcp, a tool writes and reads the bucket its path names', async () => {
  const made = await call(alice, 'write_file', { path: 'notes/todo.md', content: 'one\n', create_only: true });
  expect(made.isError, text(made)).toBeFalsy();
  const read = await call(alice, 'read_text_file', { path: 'notes/todo.md' });
  expect(read.isError, text(read)).toBeFalsy();
  expect(read.content[0]).toMatchObject({ type: 'text', text: 'one\n' });
  expect(data(read).etag).toBe(data(made).etag);
  const s3 = await sdk(casket.url, casket.admin).send(new GetObjectCommand({ Bucket: 'notes', Key: 'todo.md' }));
  expect((await bytes(s3.Body)).toString()).toBe('one\n');
  const listed = await call(alice, 'list_directory', { path: 'notes/' });
  expect(missing(listed, ['todo.md'])).toEqual([]);
});
