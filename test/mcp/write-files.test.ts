/**
 * write_files as the model sees it (issue 39, docs/design.md §8): the answer
 * names every file with its bytes in UTF-8 and its new etag, and S3 then
 * serves each as UTF-8 text; a call the model got wrong — too many files,
 * one file named twice, one file over --mcp-max-file-bytes, expected_etag
 * with create_only — is refused before anything is written; and a refusal
 * counts the files refused, each as write_file would refuse it. The model's
 * views are the clients' (test/helpers/model-view.ts).
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, HeadObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytes, sdk } from '../helpers/clients.js';
import { call, data, httpClient, mintToken, startMcpCasket, text, type McpCasket } from '../helpers/mcp.js';
import { missing, textOnlyOnError } from '../helpers/model-view.js';

const bucket = 'batch';
const MAX = 64;
let casket: McpCasket;
let admin: S3Client;
let ivy: Client;

beforeAll(async () => {
  casket = await startMcpCasket({ agents: ['ivy'], flags: { mcpMaxFileBytes: String(MAX) } });
  admin = sdk(casket.url, casket.admin);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  ivy = await httpClient(casket, mintToken(casket.agents.ivy!), 'ivy');
});
afterAll(async () => {
  await ivy?.close();
  admin?.destroy();
  await casket?.stop();
});

const stored = async (key: string) => (await bytes((await admin.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body)).toString();
const keysUnder = async (prefix: string) => ((await admin.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }))).Contents ?? []).map((o) => o.Key);

describe('write_files', () => {
  it('names every file written with its bytes (UTF-8, not characters) and new etag; S3 serves each as UTF-8 text', async () => {
    const r = await call(ivy, 'write_files', { files: [{ path: `${bucket}/ok/é.txt`, content: 'café\n', create_only: true }, { path: `s3://${bucket}/ok/b.txt`, content: 'b\n', create_only: true }] });
    expect(r.isError, text(r)).toBeFalsy();
    const [e1, e2] = (data(r).files as Array<{ etag: string }>).map((f) => f.etag);
    expect(data(r).written).toBe(true);
    expect(text(r)).toBe(`Wrote 2 file(s), all together:\n${bucket}/ok/é.txt: 6 bytes, new etag ${e1}\n${bucket}/ok/b.txt: 2 bytes, new etag ${e2}`);
    expect(missing(r, [`${bucket}/ok/é.txt`, e1!, `${bucket}/ok/b.txt`, e2!])).toEqual([]);
    const head = await admin.send(new HeadObjectCommand({ Bucket: bucket, Key: 'ok/é.txt' }));
    expect(head.ContentType).toBe('text/plain; charset=utf-8');
    expect(head.ETag).toBe(e1);
  });

  it('refuses a call it cannot carry out before writing any of it: too many files, a file named twice, one file over the limit, expected_etag with create_only', async () => {
    const one = { path: `${bucket}/bad/one.txt`, content: 'one\n', create_only: true };
    const cases: Array<[Array<Record<string, unknown>>, string, string]> = [
      [[one, ...Array.from({ length: 1000 }, (_, i) => ({ path: `${bucket}/bad/many-${i}`, content: '', create_only: true }))], 'invalid-argument', 'write_files takes at most 1000 files; split the 1001 into several calls.'],
      [[one, { path: `s3://${bucket}/bad/one.txt`, content: 'again\n', create_only: true }], 'invalid-argument', `${bucket}/bad/one.txt is named twice: give each file once.`],
      [[one, { path: `${bucket}/bad/big.txt`, content: 'x'.repeat(MAX + 1), create_only: true }], 'too-large', `the content of ${bucket}/bad/big.txt is ${MAX + 1} bytes, more than the ${MAX} bytes`],
      [[one, { path: `${bucket}/bad/both.txt`, content: 'x', create_only: true, expected_etag: `"${'a'.repeat(64)}"` }], 'invalid-argument', `${bucket}/bad/both.txt: give expected_etag or create_only, not both.`],
    ];
    for (const [files, error, said] of cases) {
      const r = await call(ivy, 'write_files', { files });
      expect(r.isError, said).toBe(true);
      expect(data(r).error, said).toBe(error);
      expect(missing(r, [said, 'Nothing was written'])).toEqual([]);
    }
    expect(await keysUnder('bad/')).toEqual([]);
  });

  it('a refusal counts the files refused, and says of each what write_file would: the version named, who changed it since', async () => {
    const made = await call(ivy, 'write_files', { files: [{ path: `${bucket}/two/a.txt`, content: 'a1\n', create_only: true }, { path: `${bucket}/two/b.txt`, content: 'b1\n', create_only: true }] });
    const [a1, b1] = (data(made).files as Array<{ etag: string }>).map((f) => f.etag);
    const b2 = await call(ivy, 'write_file', { path: `${bucket}/two/b.txt`, content: 'b2\n', expected_etag: b1 });
    const r = await call(ivy, 'write_files', { files: [{ path: `${bucket}/two/a.txt`, content: 'a3\n', expected_etag: a1 }, { path: `${bucket}/two/b.txt`, content: 'b3\n', expected_etag: b1 }] });
    expect(r.isError).toBe(true);
    expect(data(r)).toMatchObject({ error: 'some-files-refused', written: false });
    expect(data(r).refused).toEqual([expect.objectContaining({ path: `${bucket}/two/b.txt`, current_etag: data(b2).etag, your_version: b1, last_writer: 'ivy' })]);
    expect(text(r)).toMatch(/^Nothing was written: write_files lands all its files or none, and 1 of the 2 file\(s\) was refused:/);
    expect(missing(r, [`${bucket}/two/b.txt changed since version ${b1}, the one you named`, '-b1\n+b2'])).toEqual([]);
    expect(await stored('two/a.txt')).toBe('a1\n');
    expect(await stored('two/b.txt')).toBe('b2\n');
  });

  it('takes as many as 1000 files, one of them exactly --mcp-max-file-bytes long', async () => {
    const files = Array.from({ length: 1000 }, (_, i) => ({ path: `${bucket}/max/${String(i).padStart(4, '0')}`, content: i === 0 ? 'x'.repeat(MAX) : '', create_only: true }));
    const r = await call(ivy, 'write_files', { files });
    expect(r.isError, text(r).slice(0, 300)).toBeFalsy();
    expect(text(r)).toMatch(new RegExp(`^Wrote 1000 file\\(s\\), all together:\\n${bucket}/max/0000: ${MAX} bytes, new etag `));
    expect(await keysUnder('max/')).toHaveLength(1000);
    expect(await stored('max/0000')).toBe('x'.repeat(MAX));
  });

  it('a client that shows only an error\'s text reads the count, then each refused file\'s refusal — the version named or the one last read', async () => {
    const made = await call(ivy, 'write_files', { files: [{ path: `${bucket}/both/a.txt`, content: 'a1\n', create_only: true }, { path: `${bucket}/both/b.txt`, content: 'b1\n', create_only: true }] });
    const [a1, b1] = (data(made).files as Array<{ etag: string }>).map((f) => f.etag);
    await call(ivy, 'read_text_file', { path: `${bucket}/both/b.txt` });
    await call(ivy, 'write_file', { path: `${bucket}/both/a.txt`, content: 'a2\n', expected_etag: a1 });
    // Another writer's, so ivy's last read of b.txt stays b1: her write of it names no version and is conditioned on that read.
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'both/b.txt', Body: 'b2\n' }));
    const r = await call(ivy, 'write_files', { files: [{ path: `${bucket}/both/a.txt`, content: 'a3\n', expected_etag: a1 }, { path: `${bucket}/both/b.txt`, content: 'b3\n' }] });
    expect(r.isError).toBe(true);
    const [summary, ...each] = textOnlyOnError(r).text.split('\n\n');
    expect(summary).toBe('Nothing was written: write_files lands all its files or none, and 2 of the 2 file(s) were refused:');
    expect(each.join('\n\n')).toMatch(new RegExp(`^Refused: ${bucket}/both/a\\.txt changed since version ${a1}, the one you named`));
    expect(each.join('\n\n')).toContain(`${bucket}/both/b.txt changed since version ${b1}, the one you last read`);
    expect(await stored('both/a.txt')).toBe('a2\n');
    expect(await stored('both/b.txt')).toBe('b2\n');
  });
});
