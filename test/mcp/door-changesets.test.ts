/**
 * A changeset through the MCP endpoint's door (src/mcp-door.ts `commit`):
 * write_files hands its files to the changeset engine (src/changesets/) as
 * the caller — its agent, its access key, its policy — and reads back what
 * landed or why not, in the ETag form every other tool answers (the plain
 * `"<sha256>"`, never the `-1` suffix some SDKs are given, s3/handle.ts).
 * Started with startMcpCasket, so `npm run mutate:rooms` (ROOM=mcp) runs
 * these in-process.
 */
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdk } from '../helpers/clients.js';
import { call, data, httpClient, mintToken, startMcpCasket, type McpCasket } from '../helpers/mcp.js';
import { missing } from '../helpers/model-view.js';

const bucket = 'sets';
let casket: McpCasket;
let ana: Client;
let bob: Client;

beforeAll(async () => {
  casket = await startMcpCasket({ agents: ['ana', 'bob'] });
  const admin = sdk(casket.url, casket.admin);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  admin.destroy();
  ana = await httpClient(casket, mintToken(casket.agents.ana!), 'ana');
  bob = await httpClient(casket, mintToken(casket.agents.bob!), 'bob');
});
afterAll(async () => {
  await ana?.close();
  await bob?.close();
  await casket?.stop();
});

/** get_file_info's etag, writer and content type of a file, as the model reads them. */
async function info(path: string): Promise<{ etag: string; last_writer: string | null; content_type: string | null }> {
  return data(await call(ana, 'get_file_info', { path })) as { etag: string; last_writer: string | null; content_type: string | null };
}

describe('write_files through the door', () => {
  it('lands every file as the caller\'s agent, as text, each with the etag get_file_info then shows', async () => {
    const r = await call(ana, 'write_files', { files: [{ path: `${bucket}/one.txt`, content: 'one\n', create_only: true }, { path: `${bucket}/two.txt`, content: 'two\n', create_only: true }] });
    expect(r.isError, JSON.stringify(r.content)).toBeFalsy();
    for (const key of ['one.txt', 'two.txt']) {
      const now = await info(`${bucket}/${key}`);
      expect(now).toMatchObject({ last_writer: 'ana', content_type: 'text/plain; charset=utf-8' });
      // The etag the model is told to pass as expected_etag next time is the file's own.
      expect(missing(r, [`${bucket}/${key}`, now.etag])).toEqual([]);
    }
  });

  it('refuses a file that exists under create_only, naming its current etag as get_file_info gives it, and writes none', async () => {
    await call(ana, 'write_file', { path: `${bucket}/taken.txt`, content: 'taken\n', create_only: true });
    const taken = await info(`${bucket}/taken.txt`);
    const r = await call(ana, 'write_files', { files: [{ path: `${bucket}/taken.txt`, content: 'mine\n', create_only: true }, { path: `${bucket}/free.txt`, content: 'free\n', create_only: true }] });
    expect(r.isError).toBe(true);
    expect(missing(r, ['Nothing was written', `${bucket}/taken.txt already exists (version ${taken.etag}`, 'create_only only creates', `then write_files with "expected_etag": ${JSON.stringify(taken.etag)}`])).toEqual([]);
    expect((await call(ana, 'get_file_info', { path: `${bucket}/free.txt` })).isError).toBe(true);
  });

  it('reaches the agents that read a file it changed: a reminder with the whole diff, and the next call to make', async () => {
    await call(ana, 'write_file', { path: `${bucket}/shared.txt`, content: 'one\n', create_only: true });
    await call(bob, 'read_text_file', { path: `${bucket}/shared.txt` });
    const taken = await info(`${bucket}/shared.txt`);
    expect((await call(ana, 'write_files', { files: [{ path: `${bucket}/shared.txt`, content: 'two\n', expected_etag: taken.etag }] })).isError).toBeFalsy();
    const next = await call(bob, 'list_directory', { path: `${bucket}/` });
    expect(missing(next, ['-one\n+two', `read_text_file {"path": "${bucket}/shared.txt"} before you edit it`])).toEqual([]);
  });
});
