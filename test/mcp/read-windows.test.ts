/**
 * read_text_file's windows (docs/design.md §8, the reference filesystem
 * server's `head`/`tail`, and offset/limit as a 0-based line window): each
 * shows exactly the lines asked — at the first line, the last, past the end,
 * none — says which, and is a partial read that entitles no write (§4).
 * Issue 43's audit moved the windows by one line and no test noticed.
 */
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdk } from '../helpers/clients.js';
import { call, data, httpClient, mintToken, startMcpCasket, text, type McpCasket } from '../helpers/mcp.js';
import { missing } from '../helpers/model-view.js';

let casket: McpCasket;
let alice: Client;
const bucket = 'windows';
const path = `${bucket}/five.txt`;

beforeAll(async () => {
  casket = await startMcpCasket({ agents: ['alice'] });
  const admin = sdk(casket.url, casket.admin);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'five.txt', Body: 'l1\nl2\nl3\nl4\nl5\n' }));
  admin.destroy();
  alice = await httpClient(casket, mintToken(casket.agents.alice!), 'alice');
});
afterAll(async () => {
  await alice?.close();
  await casket?.stop();
});

/** The lines shown (the first text part), the 1-based range the answer names, and the read's kind. */
async function read(window: Record<string, number | undefined>): Promise<{ shown: string; lines: unknown; read: unknown }> {
  const r = await call(alice, 'read_text_file', { path, ...window });
  expect(r.isError).toBeFalsy();
  const first = r.content[0]!;
  return { shown: first.type === 'text' ? first.text : '', lines: data(r).lines, read: data(r).read };
}

describe('read_text_file windows', () => {
  it.each([
    ['head 1: the first line', { head: 1 }, 'l1\n', { from: 1, to: 1 }],
    ['tail 1: the last line', { tail: 1 }, 'l5\n', { from: 5, to: 5 }],
    ['tail 2', { tail: 2 }, 'l4\nl5\n', { from: 4, to: 5 }],
    ['offset 0, limit 1: the first line', { offset: 0, limit: 1 }, 'l1\n', { from: 1, to: 1 }],
    ['offset 1, limit 2', { offset: 1, limit: 2 }, 'l2\nl3\n', { from: 2, to: 3 }],
    ['offset 4, limit 1: the last line', { offset: 4, limit: 1 }, 'l5\n', { from: 5, to: 5 }],
    ['offset 3, limit 10: runs past the end', { offset: 3, limit: 10 }, 'l4\nl5\n', { from: 4, to: 5 }],
    ['offset 4: to the end', { offset: 4 }, 'l5\n', { from: 5, to: 5 }],
    ['offset 5: past the end, nothing', { offset: 5 }, '', { from: 6, to: 5 }],
    ['limit 0: nothing', { offset: 2, limit: 0 }, '', { from: 3, to: 2 }],
  ])('%s', async (_name, window, shown, lines) => {
    expect(await read(window)).toEqual({ shown, lines: { ...lines, total: 5 }, read: 'partial' });
  });

  it('a window that covers every line is the whole file, a full read', async () => {
    for (const window of [{ tail: 5 }, { head: 9 }, { offset: 0, limit: 5 }]) {
      expect(await read(window)).toEqual({ shown: 'l1\nl2\nl3\nl4\nl5\n', lines: { from: 1, to: 5, total: 5 }, read: 'full' });
    }
  });

  it('a window that covers every line entitles a write, as the whole file does: the read it says is the read recorded', async () => {
    const admin = sdk(casket.url, casket.admin);
    for (const [n, window] of [{ head: 9 }, { tail: 3 }, { offset: 0, limit: 3 }].entries()) {
      const key = `covered-${n}.txt`;
      await admin.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'a\nb\nc\n' }));
      const r = await call(alice, 'read_text_file', { path: `${bucket}/${key}`, ...window });
      expect(data(r).read).toBe('full');
      const written = await call(alice, 'write_file', { path: `${bucket}/${key}`, content: 'new\n', expected_etag: data(r).etag as string });
      expect(written.isError, JSON.stringify(window)).toBeFalsy();
    }
    admin.destroy();
  });

  it('a window alone entitles no write; the whole file does', async () => {
    // A key alice has only seen through a window (a full read of a version stays full: design §4).
    const admin = sdk(casket.url, casket.admin);
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'seen-in-part.txt', Body: 'a\nb\nc\n' }));
    admin.destroy();
    const part = await call(alice, 'read_text_file', { path: `${bucket}/seen-in-part.txt`, tail: 1 });
    expect(data(part).read).toBe('partial');
    const refused = await call(alice, 'write_file', { path: `${bucket}/seen-in-part.txt`, content: 'new\n', expected_etag: data(part).etag as string });
    expect(refused.isError).toBe(true);
    expect(data(refused).error).toBe('partial-read');
    await call(alice, 'read_text_file', { path: `${bucket}/seen-in-part.txt` });
    const written = await call(alice, 'write_file', { path: `${bucket}/seen-in-part.txt`, content: 'new\n', expected_etag: data(part).etag as string });
    expect(written.isError).toBeFalsy();
  });

  it('only a partial read tells the model to read the whole file before writing it; a full one says it was full', async () => {
    const whole = await call(alice, 'read_text_file', { path });
    expect(text(whole)).toContain(`[${path}: etag ${String(data(whole).etag)}, all 5 lines, a full read]`);
    expect(data(whole).next).toBeUndefined();
    expect(missing(whole, ['before writing'])).toHaveLength(2);
    const part = await call(alice, 'read_text_file', { path, tail: 2 });
    expect(data(part).next).toBe(`read_text_file {"path": "${path}"} (no head, tail, offset or limit) before writing this file`);
  });

  it('head with tail is refused as an invalid argument, saying to give one', async () => {
    const r = await call(alice, 'read_text_file', { path, head: 1, tail: 1 });
    expect(r.isError).toBe(true);
    expect(data(r).error).toBe('invalid-argument');
    expect(missing(r, ['Give head or tail, not both.'])).toEqual([]);
  });
});
