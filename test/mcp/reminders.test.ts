/**
 * "Changed since you read" as the model reads it (docs/design.md §12,
 * src/mcp/reminders.ts; test/helpers/model-view.ts): a long change's diff is
 * cut to 40 lines and 4 KiB, on a line (or character) boundary, says so in
 * both views and points to what_changed for the rest; a diff that fits is
 * whole; a file deleted since it was read says so, and how to make it again;
 * a version casket did not keep (--retain-max-size 0) is named, with no diff,
 * in the reminders and in what_changed.
 */
import { CreateBucketCommand, DeleteObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdk } from '../helpers/clients.js';
import { call, data, httpClient, mintToken, startMcpCasket, type McpCasket, type ToolResult } from '../helpers/mcp.js';
import { contentFirst, missing, showing } from '../helpers/model-view.js';
import { capDiff } from '../../src/mcp/reminders.js';

interface Reminder {
  path: string;
  etag: string;
  changed_by: string;
  diff: string;
  diff_truncated: boolean;
  next: string;
}
const reminders = (r: ToolResult) => (data(r).changed_since_read ?? []) as Reminder[];

describe('capDiff', () => {
  const lines = (n: number, width = 1) => Array.from({ length: n }, (_, i) => `${i}`.padEnd(width, 'x')).join('\n');

  it('keeps a diff of 40 lines whole, with or without its last newline; cuts the 41st', () => {
    expect(capDiff(lines(40))).toEqual({ diff: lines(40), truncated: false });
    expect(capDiff(`${lines(40)}\n`)).toEqual({ diff: `${lines(40)}\n`.slice(0, -1), truncated: false });
    expect(capDiff(lines(41))).toEqual({ diff: lines(40), truncated: true });
    expect(capDiff(`${lines(41)}\n`)).toEqual({ diff: lines(40), truncated: true });
  });

  it('cuts past 4096 bytes at the last whole line before them', () => {
    const text = lines(5, 1000);
    const { diff, truncated } = capDiff(text);
    expect(truncated).toBe(true);
    expect(diff).toBe(lines(4, 1000));
    expect(capDiff(lines(4, 1000))).toEqual({ diff: lines(4, 1000), truncated: false });
  });

  it('a single line past 4096 bytes is cut on a character, never inside one', () => {
    const euro = '€'.repeat(2000);
    const { diff, truncated } = capDiff(euro);
    expect(truncated).toBe(true);
    expect(diff).toBe('€'.repeat(1365));
    // A line break at the very start is no line to cut at.
    expect(capDiff(`\n${'a'.repeat(5000)}`)).toEqual({ diff: `\n${'a'.repeat(4095)}`, truncated: true });
  });
});

describe('changed since you read, as the model sees it', () => {
  const bucket = 'reminded';
  let casket: McpCasket;
  let admin: S3Client;
  let ann: Client;

  beforeAll(async () => {
    casket = await startMcpCasket({ agents: ['ann'] });
    admin = sdk(casket.url, casket.admin);
    await admin.send(new CreateBucketCommand({ Bucket: bucket }));
    ann = await httpClient(casket, mintToken(casket.agents.ann!), 'ann');
  });
  afterAll(async () => {
    await ann?.close();
    admin?.destroy();
    await casket?.stop();
  });

  const put = (key: string, body: string) => admin.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
  const read = (key: string) => call(ann, 'read_text_file', { path: `${bucket}/${key}` });

  it('a long change: the diff cut short in both views, and what_changed named for the rest', async () => {
    const before = Array.from({ length: 60 }, (_, i) => `line ${i}`).join('\n');
    await put('long.md', `${before}\n`);
    await read('long.md');
    await put('long.md', `${before.replace(/line/g, 'LINE')}\n`);
    const r = await call(ann, 'list_directory', { path: bucket });
    const [rem] = reminders(r);
    expect(reminders(r)).toHaveLength(1);
    expect(rem).toMatchObject({ path: `${bucket}/long.md`, diff_truncated: true, next: `what_changed {} for the whole diff, then read_text_file {"path": "${bucket}/long.md"}` });
    expect(rem!.diff.split('\n')).toHaveLength(40);
    expect(missing(r, [`${bucket}/long.md`, 'what_changed {} for the whole diff', '-line 0'])).toEqual([]);
    // The diff's four header lines and the first 36 of its own: the lines after are the rest what_changed shows.
    expect(contentFirst(r).text).toContain('-line 35\n[... diff cut short]\n  Next: what_changed {}');
    expect(rem!.diff).not.toContain('-line 36');
  });

  it('a short change: the whole diff, and the read to make before editing', async () => {
    await put('short.md', 'one\ntwo\n');
    await read('short.md');
    await put('short.md', 'one\nTWO\n');
    const r = await call(ann, 'list_directory', { path: bucket });
    const [rem] = reminders(r);
    expect(rem).toMatchObject({ path: `${bucket}/short.md`, diff_truncated: false, next: `read_text_file {"path": "${bucket}/short.md"} before you edit it` });
    expect(rem!.etag).toMatch(/^"[0-9a-f]{64}"$/);
    const t = contentFirst(r).text;
    expect(t).toContain(`- ${bucket}/short.md changed (etag now ${rem!.etag}) by `);
    expect(t).toContain('-two\n+TWO');
    expect(t).not.toContain('diff cut short');
  });

  it('a file deleted since it was read: said so, with no diff, and how to make it again', async () => {
    await put('gone.md', 'here\n');
    await read('gone.md');
    await admin.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'gone.md' }));
    const r = await call(ann, 'list_directory', { path: bucket });
    const [rem] = reminders(r);
    expect(rem).toMatchObject({ path: `${bucket}/gone.md`, etag: '', diff: '', diff_truncated: false, next: 'it was deleted: write_file with create_only: true to make it again' });
    expect(missing(r, [`${bucket}/gone.md`, 'write_file with create_only: true'])).toEqual([]);
    expect(contentFirst(r).text).toContain(`- ${bucket}/gone.md was deleted by `);
    expect(contentFirst(r).text).toContain('Diff from the version you read: (none kept)');
  });
});

describe('a version casket did not keep, as the model sees it', () => {
  const bucket = 'unkept';
  let casket: McpCasket;
  let admin: S3Client;
  let ann: Client;

  beforeAll(async () => {
    // No version is kept for diffs (the flag's "0: none"): the diff from the version read cannot be made.
    casket = await startMcpCasket({ agents: ['ann'], flags: { retainMaxSize: '0' } });
    admin = sdk(casket.url, casket.admin);
    await admin.send(new CreateBucketCommand({ Bucket: bucket }));
    ann = await httpClient(casket, mintToken(casket.agents.ann!), 'ann');
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'plan.md', Body: 'step one\n' }));
    await call(ann, 'read_text_file', { path: `${bucket}/plan.md` });
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'plan.md', Body: 'step ONE\n' }));
  });
  afterAll(async () => {
    await ann?.close();
    admin?.destroy();
    await casket?.stop();
  });

  it('the reminder names the change, says no diff was kept, and sends the model to read the file', async () => {
    const r = await call(ann, 'list_directory', { path: bucket });
    const [rem] = reminders(r);
    expect(reminders(r)).toHaveLength(1);
    expect(rem).toMatchObject({ path: `${bucket}/plan.md`, diff: '', diff_truncated: true, next: `read_text_file {"path": "${bucket}/plan.md"} (casket no longer keeps the version you read, so no diff)` });
    expect(missing(r, [`${bucket}/plan.md`, 'casket no longer keeps the version you read'])).toEqual([]);
    expect(contentFirst(r).text).toContain('Diff from the version you read: (none kept)');
  });

  it('what_changed lists the change with no diff', async () => {
    const r = await call(ann, 'what_changed', {});
    expect(r.isError, contentFirst(r).text).toBeFalsy();
    const changes = data(r).changes as Array<Record<string, unknown>>;
    expect(changes).toHaveLength(1);
    expect(changes[0]).toMatchObject({ path: `${bucket}/plan.md` });
    expect(changes[0]).not.toHaveProperty('diff');
    expect(missing(r, [`${bucket}/plan.md`])).toEqual([]);
    expect(contentFirst(r).text).toContain(`${bucket}/plan.md: changed to `);
    expect(showing(r, 'object Object')).toEqual([]);
  });
});
