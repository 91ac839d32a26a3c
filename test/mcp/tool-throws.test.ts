/**
 * A tool whose S3 request fails in a way that is no S3 answer — the disk
 * failing mid-read — is answered as the SDK's McpServer answers a handler
 * that throws (src/mcp/tool-calls.ts): a tool error the model can read,
 * naming the failure, once; its S3 request logged as the wire logs a read cut
 * short (aborted); and casket goes on answering. The disk fails
 * on cue through test/helpers/faults.ts, in a casket in this process.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { tornBody, withReads } from '../helpers/faults.js';
import { inProcessWithBucket, type InProcessCasket } from '../helpers/in-process.js';
import { call, data, httpClient, mintToken, text } from '../helpers/mcp.js';

const bucket = 'torn';
const stops: Array<() => Promise<void>> = [];
let casket: InProcessCasket;
let ann: Client;

beforeAll(async () => {
  const made = await inProcessWithBucket(bucket, stops, ['ann'], { logLevel: 'info' });
  casket = made.c;
  await made.admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'notes.md', Body: 'first bytes, and the rest\n'.repeat(100) }));
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
