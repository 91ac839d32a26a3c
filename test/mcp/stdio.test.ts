/**
 * `casket mcp`, the stdio bridge (docs/design.md §8), with the SDK's own Client
 * spawning it as a desktop agent would: the same tools as the HTTP endpoint,
 * run by the casket it points at, under the same guard; `--agent` names the
 * agent of a key bound to none, and a key bound to one agent cannot claim
 * another.
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { bytes, sdk } from '../helpers/clients.js';
import { call, data, stdioClient, text } from '../helpers/mcp.js';

let casket: RunningCasket;
const open: Client[] = [];
const bucket = 'desk';

beforeAll(async () => {
  casket = await startCasket({ agents: ['dora'], keys: { shared: {} } });
  await sdk(casket.url, casket.admin).send(new CreateBucketCommand({ Bucket: bucket }));
});
afterAll(async () => {
  for (const c of open) await c.close();
  await casket?.stop();
});

async function client(...args: Parameters<typeof stdioClient>): Promise<Client> {
  const c = await stdioClient(...args);
  open.push(c);
  return c;
}

describe('casket mcp (stdio)', () => {
  it('serves the tools of the casket it points at, and writes as the key\'s agent', async () => {
    const dora = await client(casket, casket.agents.dora!);
    const names = (await dora.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['read_text_file', 'write_file', 'edit_file', 'get_file_info', 'list_directory']));
    const made = await call(dora, 'write_file', { path: `${bucket}/todo.md`, content: '- [ ] ship\n', create_only: true });
    expect(made.isError, text(made)).toBeFalsy();
    const read = await call(dora, 'read_text_file', { path: `${bucket}/todo.md` });
    const edited = await call(dora, 'edit_file', { path: `${bucket}/todo.md`, edits: [{ oldText: '[ ]', newText: '[x]' }], expected_etag: data(read).etag });
    expect(edited.isError, text(edited)).toBeFalsy();
    const info = await call(dora, 'get_file_info', { path: `${bucket}/todo.md` });
    expect(data(info)).toMatchObject({ last_writer: 'dora', your_read: 'full', etag: data(edited).etag });
    const s3 = await sdk(casket.url, casket.admin).send(new GetObjectCommand({ Bucket: bucket, Key: 'todo.md' }));
    expect((await bytes(s3.Body)).toString()).toBe('- [x] ship\n');
  });

  it('--agent names the agent of a key bound to none; the guard then judges that agent', async () => {
    // dora writes scout.md over S3; scout never read it: an edit is refused as not-read, nothing written.
    await sdk(casket.url, casket.agents.dora!).send(new PutObjectCommand({ Bucket: bucket, Key: 'scout.md', Body: 'ship\n', IfNoneMatch: '*' }));
    const scout = await client(casket, casket.keys.shared!, 'scout');
    const refused = await call(scout, 'edit_file', { path: `${bucket}/scout.md`, edits: [{ oldText: 'ship', newText: 'sink' }] });
    expect(refused.isError).toBe(true);
    expect(data(refused)).toMatchObject({ error: 'not-read', written: false, last_writer: 'dora' });
    const info = await call(scout, 'get_file_info', { path: `${bucket}/scout.md` });
    expect(data(info).your_read).toBe('none');
    // Once scout has read it whole, the same edit lands, as scout's.
    await call(scout, 'read_text_file', { path: `${bucket}/scout.md` });
    const edited = await call(scout, 'edit_file', { path: `${bucket}/scout.md`, edits: [{ oldText: 'ship', newText: 'sink' }] });
    expect(edited.isError, text(edited)).toBeFalsy();
    expect(data(await call(scout, 'get_file_info', { path: `${bucket}/scout.md` })).last_writer).toBe('scout');
  });

  it('a key bound to one agent cannot act as another through --agent', async () => {
    // Refused from the first message on: the bridge cannot even initialize.
    await expect(client(casket, casket.agents.dora!, 'mallory')).rejects.toThrow(/bound to agent \\?"dora\\?"/);
  });
});
