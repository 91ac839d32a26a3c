/**
 * write_file as the model and the people after it see it (docs/design.md §8):
 * the answer says what was written in bytes, not characters; S3 then serves
 * the file as UTF-8 text; the size limit (--mcp-max-file-bytes) lets a file
 * of exactly the limit through and refuses one byte more; and an
 * expected_etag with create_only is a contradiction the model is told of,
 * not a write. The model's views are the clients' (test/helpers/model-view.ts).
 */
import { CreateBucketCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytes, sdk } from '../helpers/clients.js';
import { call, data, httpClient, mintToken, startMcpCasket, text, type McpCasket } from '../helpers/mcp.js';
import { missing } from '../helpers/model-view.js';

const bucket = 'writes';
const MAX = 64;
let casket: McpCasket;
let admin: S3Client;
let ada: Client;

beforeAll(async () => {
  casket = await startMcpCasket({ agents: ['ada'], flags: { mcpMaxFileBytes: String(MAX) } });
  admin = sdk(casket.url, casket.admin);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  ada = await httpClient(casket, mintToken(casket.agents.ada!), 'ada');
});
afterAll(async () => {
  await ada?.close();
  admin?.destroy();
  await casket?.stop();
});

const stored = async (key: string) => (await bytes((await admin.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body)).toString();

describe('write_file', () => {
  it('says how many bytes it wrote (UTF-8, not characters), where, and the new etag; S3 serves the file as UTF-8 text', async () => {
    const content = 'größe: 3 €\n';
    const size = Buffer.byteLength(content);
    expect(size).toBeGreaterThan(content.length);
    const r = await call(ada, 'write_file', { path: `${bucket}/utf8.txt`, content, create_only: true });
    expect(r.isError, text(r)).toBeFalsy();
    const etag = String(data(r).etag);
    expect(text(r)).toBe(`Wrote ${size} bytes to ${bucket}/utf8.txt: new etag ${etag}.`);
    expect(data(r)).toMatchObject({ path: `${bucket}/utf8.txt`, bytes: size, written: true });
    expect(missing(r, [etag, `${bucket}/utf8.txt`, [`Wrote ${size} bytes`, `"bytes":${size}`]])).toEqual([]);
    const head = await admin.send(new HeadObjectCommand({ Bucket: bucket, Key: 'utf8.txt' }));
    expect(head.ContentType).toBe('text/plain; charset=utf-8');
    expect(head.ContentLength).toBe(size);
    expect(head.ETag).toBe(etag);
  });

  it(`a file of exactly the limit (${MAX} bytes) is written; one byte more is refused with both sizes, and nothing is written`, async () => {
    const path = `${bucket}/limit.txt`;
    const atLimit = await call(ada, 'write_file', { path, content: 'a'.repeat(MAX), create_only: true });
    expect(atLimit.isError, text(atLimit)).toBeFalsy();
    const over = await call(ada, 'write_file', { path, content: 'b'.repeat(MAX + 1), expected_etag: data(atLimit).etag });
    expect(over.isError).toBe(true);
    expect(data(over)).toMatchObject({ error: 'too-large', bytes: MAX + 1, max_bytes: MAX, written: false });
    expect(missing(over, [`content is ${MAX + 1} bytes, more than the ${MAX} bytes these tools handle`, 'Nothing was written'])).toEqual([]);
    expect(await stored('limit.txt')).toBe('a'.repeat(MAX));
  });

  it('a stale expected_etag is refused with the version it named, the current one, and the write_file call to make after reading it', async () => {
    const path = `${bucket}/stale.txt`;
    const v1 = String(data(await call(ada, 'write_file', { path, content: 'v1\n', create_only: true })).etag);
    const v2 = String(data(await call(ada, 'write_file', { path, content: 'v2\n', expected_etag: v1 })).etag);
    const stale = await call(ada, 'write_file', { path, content: 'v3\n', expected_etag: v1 });
    expect(stale.isError).toBe(true);
    expect(data(stale)).toMatchObject({ error: 'precondition-failed', your_version: v1, current_etag: v2, written: false });
    expect(missing(stale, [`changed since version ${v1}, the one you named`, `then write_file again with "expected_etag": "${v2.replace(/"/g, '\\"')}"`, '-v1\n+v2'])).toEqual([]);
    expect(await stored('stale.txt')).toBe('v2\n');
  });

  it('without expected_etag, a write conditioned on the last read is refused naming that read, not a version the model never named', async () => {
    const path = `${bucket}/last-read.txt`;
    const v1 = String(data(await call(ada, 'write_file', { path, content: 'v1\n', create_only: true })).etag);
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'last-read.txt', Body: 'v2\n' }));
    const stale = await call(ada, 'write_file', { path, content: 'v3\n' });
    expect(stale.isError).toBe(true);
    expect(missing(stale, [`changed since version ${v1}, the one you last read`])).toEqual([]);
    expect(JSON.stringify(stale)).not.toContain('the one you named');
    expect(await stored('last-read.txt')).toBe('v2\n');
  });

  it('expected_etag and create_only together: refused as an invalid argument, and the file stays as it was', async () => {
    const path = `${bucket}/both.txt`;
    const made = await call(ada, 'write_file', { path, content: 'first\n', create_only: true });
    const both = await call(ada, 'write_file', { path, content: 'second\n', expected_etag: data(made).etag, create_only: true });
    expect(both.isError).toBe(true);
    expect(data(both).error).toBe('invalid-argument');
    expect(missing(both, ['Give expected_etag or create_only, not both.', 'Nothing was written'])).toEqual([]);
    expect(await stored('both.txt')).toBe('first\n');
  });
});
