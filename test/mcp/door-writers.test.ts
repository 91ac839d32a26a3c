/**
 * Who a refusal says wrote the current version when the object itself does
 * not say (it was written around casket, straight to the store, which keeps
 * no x-casket-writer): the door (src/mcp-door.ts `writerOf`) asks the write
 * log for the writer of that very version, and names nobody when the log
 * never saw it — never the writer of another version of the file. The store
 * is written behind casket's back, so casket runs in this process
 * (test/helpers/in-process.ts).
 */
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inProcessWithBucket, type InProcessCasket } from '../helpers/in-process.js';
import { call, data, httpClient, mintToken } from '../helpers/mcp.js';
import { missing } from '../helpers/model-view.js';

const bucket = 'writers';
const stops: Array<() => Promise<void>> = [];
let c: InProcessCasket;
let person: S3Client;
let ana: Client;
let bob: Client;

beforeAll(async () => {
  ({ c, person } = await inProcessWithBucket(bucket, stops, ['ana', 'bob']));
  ana = await httpClient(c, mintToken(c.agents.ana!), 'ana');
  bob = await httpClient(c, mintToken(c.agents.bob!), 'bob');
});
afterAll(async () => {
  await ana?.close();
  await bob?.close();
  for (const s of stops.splice(0).reverse()) await s();
});

/** Writes `body` to bucket/key straight into the store, as a tool other than casket would: no write log, no writer. */
async function behindCasket(key: string, body: string): Promise<void> {
  const bytes = Buffer.from(body);
  await c.casket.services.backend.putObject(bucket, key, { stream: Readable.from([bytes]), digest: () => ({ sha256: createHash('sha256').update(bytes).digest(), size: bytes.length }) }, { condition: { type: 'none' }, headers: {}, metadata: {} });
}

const quoted = (body: string) => `"${createHash('sha256').update(body).digest('hex')}"`;

/** ana's edit of bucket/key conditioned on the version she read, `read`, which is no longer current. */
async function staleEdit(key: string, read: string) {
  return call(ana, 'edit_file', { path: `${bucket}/${key}`, edits: [{ oldText: 'v1', newText: 'v9' }], expected_etag: quoted(read) });
}

describe('the writer a refusal names, when the object does not carry one', () => {
  it('a version the write log never saw is written by nobody it can name, not by the last writer it logged', async () => {
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'unlogged.txt', Body: 'v1\n' }));
    await call(ana, 'read_text_file', { path: `${bucket}/unlogged.txt` });
    await behindCasket('unlogged.txt', 'v2\n');
    const r = await staleEdit('unlogged.txt', 'v1\n');
    expect(r.isError).toBe(true);
    expect(missing(r, [`it is now ${quoted('v2\n')}, written by a request without an agent`])).toEqual([]);
  });

  it('a version the write log saw an agent write is written by that agent', async () => {
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'logged.txt', Body: 'v1\n' }));
    await call(ana, 'read_text_file', { path: `${bucket}/logged.txt` });
    await call(bob, 'read_text_file', { path: `${bucket}/logged.txt` });
    expect(data(await call(bob, 'write_file', { path: `${bucket}/logged.txt`, content: 'v2\n' })).etag).toBe(quoted('v2\n'));
    // The same bytes again behind casket: the object no longer names bob, the log still does.
    await behindCasket('logged.txt', 'v2\n');
    const r = await staleEdit('logged.txt', 'v1\n');
    expect(r.isError).toBe(true);
    expect(missing(r, [`it is now ${quoted('v2\n')}, written by agent "bob"`])).toEqual([]);
  });
});
