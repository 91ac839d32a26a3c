/**
 * A tool whose S3 request fails in a way that is no S3 answer — the disk
 * failing mid-read — is answered as the SDK's McpServer answers a handler
 * that throws (src/mcp/tool-calls.ts): a tool error the model can read,
 * naming the failure, once; its S3 request logged as the wire logs a read cut
 * short (aborted); and casket goes on answering. So is what_changed whose
 * diff (src/mcp-door.ts diff) fails on the disk: not the change listed as
 * though casket kept no version to diff (what an S3 error from it means). The disk fails
 * on cue through test/helpers/faults.ts, in a casket in this process.
 */
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { tornBody, withReads } from '../helpers/faults.js';
import { inProcessWithBucket, type InProcessCasket } from '../helpers/in-process.js';
import { call, data, httpClient, mintToken, text } from '../helpers/mcp.js';

const bucket = 'torn';
const stops: Array<() => Promise<void>> = [];
let casket: InProcessCasket;
let ann: Client;
let admin: S3Client;

beforeAll(async () => {
  const made = await inProcessWithBucket(bucket, stops, ['ann'], { logLevel: 'info' });
  casket = made.c;
  admin = made.admin;
  await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'notes.md', Body: 'first bytes, and the rest\n'.repeat(100) }));
  ann = await httpClient(casket, mintToken(casket.agents.ann!), 'ann');
  stops.push(() => ann.close());
});
afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
});

it('a read whose body fails midway is a tool error naming the failure, logged once as aborted; the next read is whole', async () => {
  interface Line { msg?: string; operation?: string; key?: string; status?: number; aborted?: boolean }
  const reads = () => casket.logs.map((l) => JSON.parse(l) as Line).filter((e) => e.msg === 'request' && e.operation === 'GetObject' && e.key === 'notes.md');
  const before = reads().length;
  const r = await withReads(casket.casket.services.backend, async (k, v, real) => {
    const reader = await real(v);
    return k === 'notes.md' && reader ? { info: reader.info, open: () => tornBody('first bytes, ') } : reader;
  }, () => call(ann, 'read_text_file', { path: `${bucket}/notes.md` }));
  expect(r).toEqual({ content: [{ type: 'text', text: 'disk failed mid-read' }], isError: true });
  // Logged once, as the wire logs a read cut short: the SDK's server did not run the tool a second time.
  expect(reads().slice(before).map((e) => [e.status, e.aborted])).toEqual([[200, true]]);
  const again = await call(ann, 'read_text_file', { path: `${bucket}/notes.md` });
  expect(again.isError, text(again)).toBeFalsy();
  expect(data(again).read).toBe('full');
});

it('what_changed whose diff fails on disk is a tool error naming the failure, not the change listed as if no diff were kept', async () => {
  await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'plan.md', Body: 'step one\n' }));
  expect(data(await call(ann, 'read_text_file', { path: `${bucket}/plan.md` })).read).toBe('full');
  await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'plan.md', Body: 'step ONE\n' }));
  // The diff reads the current version from the backend (the version ann read is kept): that read fails midway.
  const r = await withReads(casket.casket.services.backend, async (k, v, real) => {
    const reader = await real(v);
    return k === 'plan.md' && reader ? { info: reader.info, open: () => tornBody('step ') } : reader;
  }, () => call(ann, 'what_changed', {}));
  expect(r).toEqual({ content: [{ type: 'text', text: 'disk failed mid-read' }], isError: true });
  // The disk back, the same question is answered with the diff.
  const again = await call(ann, 'what_changed', {});
  expect(again.isError, text(again)).toBeFalsy();
  expect(text(again)).toContain('-step one\n+step ONE');
});
