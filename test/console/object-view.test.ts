/**
 * The console's object view (src/console/api.ts object) as the page reads
 * it: the key's current version, its writes newest first — who made each,
 * with which ETags — and whether casket retained each written version, so
 * the page offers a diff only where one can be drawn (docs/design.md §6:
 * versions up to --retain-max-size are kept). Casket in this process, so
 * that `npm run mutate:rooms` sees it.
 */
import { CreateBucketCommand, DeleteObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdk } from '../helpers/clients.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { consoleLogin } from './login.js';

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

let c: InProcessCasket;
let cookie: string;
let alice: S3Client;

interface ObjectView {
  bucket: string;
  key: string;
  current: { etag: string; size: number; lastModified: string; writer: string | null } | null;
  versions: Array<{ at: string; operation: string; outcome: string; agent: string | null; previousETag: string | null; newETag: string | null; retained: boolean }>;
  refusalsFrom?: string;
}

const objectView = async (key: string): Promise<ObjectView> => {
  const res = await fetch(`${c.url}/_casket/console/api/object?${new URLSearchParams({ bucket: 'objects', key })}`, { headers: { cookie } });
  expect(res.status).toBe(200);
  return (await res.json()) as ObjectView;
};

beforeAll(async () => {
  // Versions up to 16 bytes are retained: the first write below is, the second is not.
  c = await startInProcess({ agents: ['alice'], flags: { retainMaxSize: '16' } });
  cookie = await consoleLogin(c.url, c.admin);
  alice = sdk(c.url, c.agents.alice!, { agentHeader: 'alice' });
  await sdk(c.url, c.admin).send(new CreateBucketCommand({ Bucket: 'objects' }));
});
afterAll(async () => {
  alice?.destroy();
  await c?.stop();
});

describe('console object view', () => {
  it('shows the current version, each write newest first, and which versions a diff can be drawn from', async () => {
    const v1 = (await alice.send(new PutObjectCommand({ Bucket: 'objects', Key: 'n.txt', Body: 'one\n', IfNoneMatch: '*' }))).ETag!;
    const v2 = (await alice.send(new PutObjectCommand({ Bucket: 'objects', Key: 'n.txt', Body: 'two, longer than sixteen bytes\n', IfMatch: v1 }))).ETag!;
    const view = await objectView('n.txt');
    expect(view).toMatchObject({ bucket: 'objects', key: 'n.txt', refusalsFrom: '0' });
    expect(view.current).toMatchObject({ etag: v2, size: 31, writer: 'alice' });
    expect(view.current!.lastModified).toMatch(ISO);
    expect(view.versions.map((v) => [v.operation, v.outcome, v.agent, v.previousETag, v.newETag, v.retained])).toEqual([
      ['PutObject', 'write', 'alice', v1, v2, false],
      ['PutObject', 'write', 'alice', null, v1, true],
    ]);

    // Deleted: no current version, and a delete retains nothing.
    await alice.send(new DeleteObjectCommand({ Bucket: 'objects', Key: 'n.txt', IfMatch: v2 }));
    const gone = await objectView('n.txt');
    expect(gone.current).toBeNull();
    expect(gone.versions.map((v) => [v.outcome, v.previousETag, v.newETag, v.retained])).toEqual([
      ['delete', v2, null, false],
      ['write', v1, v2, false],
      ['write', null, v1, true],
    ]);
    for (const v of gone.versions) expect(v.at).toMatch(ISO);
  });

  it('answers a key nobody wrote with no current version and no writes, and a bucket that does not exist with nothing held', async () => {
    const view = await objectView('never.txt');
    expect(view.current).toBeNull();
    expect(view.versions).toEqual([]);
    const res = await fetch(`${c.url}/_casket/console/api/object?${new URLSearchParams({ bucket: 'no-such-bucket', key: 'k' })}`, { headers: { cookie } });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ bucket: 'no-such-bucket', key: 'k', current: null, versions: [], held: [] });
    // Asked for no key at all: the empty key of the empty bucket, which holds nothing.
    const bare = await fetch(`${c.url}/_casket/console/api/object`, { headers: { cookie } });
    expect(bare.status).toBe(200);
    expect(await bare.json()).toMatchObject({ bucket: '', key: '', current: null, versions: [], held: [] });
  });

  it('names, as the agent view does, the event from which the page replays refusals', async () => {
    const res = await fetch(`${c.url}/_casket/console/api/agents/alice`, { headers: { cookie } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { refusalsFrom?: string }).refusalsFrom).toBe('0');
  });

  it('offers no diff of any version when casket retains none (--retain-max-size 0)', async () => {
    const none = await startInProcess({ agents: ['alice'], flags: { retainMaxSize: '0' } });
    try {
      const s3 = sdk(none.url, none.agents.alice!, { agentHeader: 'alice' });
      await sdk(none.url, none.admin).send(new CreateBucketCommand({ Bucket: 'objects' }));
      await s3.send(new PutObjectCommand({ Bucket: 'objects', Key: 'n.txt', Body: 'one\n', IfNoneMatch: '*' }));
      s3.destroy();
      const res = await fetch(`${none.url}/_casket/console/api/object?${new URLSearchParams({ bucket: 'objects', key: 'n.txt' })}`, { headers: { cookie: await consoleLogin(none.url, none.admin) } });
      expect(res.status).toBe(200);
      expect(((await res.json()) as ObjectView).versions.map((v) => [v.outcome, v.retained])).toEqual([['write', false]]);
    } finally {
      await none.stop();
    }
  });
});
