/**
 * The JSON behind the console's views (src/console/api.ts), read as the page
 * reads it — a session cookie, plain GETs — with casket in this process so
 * that `npm run mutate:rooms` sees it. Each view's answer is checked field by
 * field against writes and reads made with the AWS SDK: the write log's
 * pages and filters, the agents casket knows, one agent's read stamps (full,
 * partial, stale) and STS sessions, the setup's credentials and metrics.
 * What the browser shows of them is test/console/console.test.ts.
 */
import { CreateBucketCommand, DeleteObjectCommand, GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytes, failure, sdk } from '../helpers/clients.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { consoleLogin } from './login.js';

const BUCKET = 'views';
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

interface Row { at: string; bucket: string; key: string; operation: string; outcome: string; agent: string | null; accessKey: string | null; previousETag: string | null; newETag: string | null; changeset: string | null }

let c: InProcessCasket;
let cookie: string;
let alice: S3Client;
let bob: S3Client;
let person: S3Client;
let carol: S3Client;
const etags: Record<string, string> = {};

const view = async <T>(path: string): Promise<T> => {
  const res = await fetch(new URL(`/_casket/console/api/${path}`, c.url), { headers: { cookie } });
  expect(res.status, path).toBe(200);
  expect(res.headers.get('cache-control')).toBe('no-store');
  return (await res.json()) as T;
};
const read = async (s3: S3Client, key: string, range?: string) => bytes((await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key, ...(range && { Range: range }) }))).Body);

beforeAll(async () => {
  c = await startInProcess({ agents: ['alice', 'bob'], keys: ['person'] });
  cookie = await consoleLogin(c.url, c.admin);
  alice = sdk(c.url, c.agents.alice!, { agentHeader: 'alice' });
  bob = sdk(c.url, c.agents.bob!, { agentHeader: 'bob' });
  person = sdk(c.url, c.keys.person!);
  // A person's key may act as any agent: carol has no key of her own.
  carol = sdk(c.url, c.keys.person!, { agentHeader: 'carol' });
  await sdk(c.url, c.admin).send(new CreateBucketCommand({ Bucket: BUCKET }));
  // In order, oldest first: 1 person d.txt, 2 alice a.txt, 3 alice c.txt, 4 carol e.txt, 5 person d.txt again, 6 alice deletes c.txt.
  etags.d1 = (await person.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'docs/d.txt', Body: 'd one\n' }))).ETag!;
  etags.a = (await alice.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'a.txt', Body: 'a\n', IfNoneMatch: '*' }))).ETag!;
  etags.c = (await alice.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'c.txt', Body: 'c is longer\n', IfNoneMatch: '*' }))).ETag!;
  etags.e = (await carol.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'docs/e.txt', Body: 'e\n', IfNoneMatch: '*' }))).ETag!;
  // bob's stamps: a.txt read in full (fresh), c.txt in part, d.txt in full before the person wrote it again.
  await read(bob, 'a.txt');
  await read(bob, 'c.txt', 'bytes=0-1');
  await read(bob, 'docs/d.txt');
  etags.d2 = (await person.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'docs/d.txt', Body: 'd two\n' }))).ETag!;
  await alice.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: 'c.txt', IfMatch: etags.c }));
});
afterAll(async () => {
  for (const s3 of [alice, bob, person, carol]) s3?.destroy();
  await c?.stop();
});

describe('console views', () => {
  it('activity: the write log newest first, every field, one page at a time to the end', async () => {
    const all = await view<{ writes: Row[]; next: string | null }>('activity');
    expect(all.next).toBeNull();
    expect(all.writes.map((w) => [w.key, w.outcome, w.agent])).toEqual([
      ['c.txt', 'delete', 'alice'], ['docs/d.txt', 'write', null], ['docs/e.txt', 'write', 'carol'], ['c.txt', 'write', 'alice'], ['a.txt', 'write', 'alice'], ['docs/d.txt', 'write', null],
    ]);
    expect(all.writes[0]).toMatchObject({ bucket: BUCKET, operation: 'DeleteObject', accessKey: c.agents.alice!.accessKeyId, previousETag: etags.c, newETag: null, changeset: null });
    expect(all.writes[1]).toMatchObject({ operation: 'PutObject', accessKey: c.keys.person!.accessKeyId, newETag: etags.d2 });
    expect(all.writes[5]).toMatchObject({ previousETag: null, newETag: etags.d1 });
    for (const w of all.writes) expect(w.at).toMatch(ISO);

    // Two rows a page: the cursor moves on until a short page says the end.
    const pages: Row[][] = [];
    let next: string | null = null;
    do {
      const page: { writes: Row[]; next: string | null } = await view(`activity?limit=2${next ? `&before=${encodeURIComponent(next)}` : ''}`);
      pages.push(page.writes);
      next = page.next;
    } while (next !== null && pages.length < 10);
    expect(pages.map((p) => p.length)).toEqual([2, 2, 2, 0]);
    expect(pages.flat()).toEqual(all.writes);
  });

  it('activity: filters by bucket, key, prefix, agent and outcome, and bounds the page size', async () => {
    const keys = async (query: string) => (await view<{ writes: Row[] }>(`activity?${query}`)).writes.map((w) => w.key);
    expect(await keys(`bucket=${BUCKET}&key=docs/d.txt`)).toEqual(['docs/d.txt', 'docs/d.txt']);
    expect(await keys('bucket=elsewhere')).toEqual([]);
    expect(await keys(`bucket=${BUCKET}&prefix=docs/`)).toEqual(['docs/d.txt', 'docs/e.txt', 'docs/d.txt']);
    expect(await keys('agent=alice')).toEqual(['c.txt', 'c.txt', 'a.txt']);
    expect(await keys('outcome=delete')).toEqual(['c.txt']);
    expect(await keys('outcome=write&agent=carol')).toEqual(['docs/e.txt']);
    // Empty parameters are no filter.
    expect(await keys('bucket=&key=&prefix=&agent=&outcome=&before=')).toHaveLength(6);
    // A page holds 1 to 500 rows: less is 1, more is 500, nonsense is the default 50.
    const page = (limit: string) => view<{ writes: Row[]; next: string | null }>(`activity?limit=${limit}`);
    expect((await page('-3')).writes).toHaveLength(1);
    expect((await page('-3')).next).not.toBeNull();
    expect((await page('1')).writes).toHaveLength(1);
    expect((await page('abc')).writes).toHaveLength(6);
    expect((await page('100000')).next).toBeNull();
  });

  it('agents: bound to a key or seen in the log, with their writes and the newest one, by name', async () => {
    const { window, agents } = await view<{ window: number; agents: Array<{ agent: string; keys: string[]; writes: number; lastWrite: string | null }> }>('agents');
    const log = (await view<{ writes: Row[] }>('activity')).writes;
    expect(window).toBe(1000);
    expect(agents).toEqual([
      { agent: 'alice', keys: [c.agents.alice!.accessKeyId], writes: 3, lastWrite: log[0]!.at },
      { agent: 'bob', keys: [c.agents.bob!.accessKeyId], writes: 0, lastWrite: null },
      { agent: 'carol', keys: [], writes: 1, lastWrite: log[2]!.at },
    ]);
  });

  it('agent: its read stamps full, partial or stale against the key now, its writes, keys and STS sessions without secrets', async () => {
    const now = Date.now();
    const session = (name: string, expiresAt: number, revoked?: boolean) => ({ accessKeyId: `ASIA${name.toUpperCase()}`, secretAccessKey: `secret-${name}`, sessionToken: `token-${name}`, agent: 'bob', sessionName: name, expiresAt, issuedBy: c.admin.accessKeyId, policies: [], ...(revoked && { revoked }) });
    for (const s of [session('live', now + 3_600_000), session('past', now - 1000), session('ended', now + 3_600_000, true)]) await c.casket.services.state.putSession(s);

    const bobView = await view<{ agent: string; keys: string[]; stamps: Array<Record<string, unknown>>; writes: Row[]; sessions: Array<Record<string, unknown>> }>('agents/bob');
    expect(bobView.agent).toBe('bob');
    expect(bobView.keys).toEqual([c.agents.bob!.accessKeyId]);
    expect(bobView.writes).toEqual([]);
    const stamp = (key: string) => bobView.stamps.find((s) => s.key === key);
    expect(stamp('a.txt')).toMatchObject({ bucket: BUCKET, etag: etags.a, state: 'full', currentETag: etags.a, currentWriter: 'alice' });
    // Partial, then deleted since: stale wins over partial, and there is no current version.
    expect(stamp('c.txt')).toMatchObject({ etag: etags.c, state: 'stale', currentETag: null, currentWriter: null });
    expect(stamp('docs/d.txt')).toMatchObject({ etag: etags.d1, state: 'stale', currentETag: etags.d2 });
    for (const s of bobView.stamps) expect(s.readAt).toMatch(ISO);
    expect(bobView.sessions.map((s) => [s.sessionName, s.state]).sort()).toEqual([['ended', 'revoked'], ['live', 'active'], ['past', 'expired']]);
    expect(bobView.sessions.find((s) => s.sessionName === 'live')).toEqual({ accessKeyId: 'ASIALIVE', sessionName: 'live', issuedBy: c.admin.accessKeyId, expiresAt: new Date(now + 3_600_000).toISOString(), state: 'active' });

    // A partial read of a key nobody changed since is partial.
    await read(bob, 'docs/e.txt', 'bytes=0-0');
    expect((await view<{ stamps: Array<Record<string, unknown>> }>('agents/bob')).stamps.find((s) => s.key === 'docs/e.txt')).toMatchObject({ etag: etags.e, state: 'partial', currentETag: etags.e, currentWriter: 'carol' });
    const aliceView = await view<{ writes: Row[]; keys: string[] }>('agents/alice');
    expect(aliceView.writes.map((w) => w.key)).toEqual(['c.txt', 'c.txt', 'a.txt']);
  });

  it('setup: credentials without secrets, and the metrics added up by status and reason', async () => {
    // One refusal: bob writes over a version he never read.
    expect((await failure(bob.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'docs/e.txt', Body: 'x', IfMatch: '"0000"' })))).status).toBe(412);
    const s = await view<{ setup: Record<string, unknown>; credentials: unknown[]; metrics: { requests: { total: number; by: Record<string, number> }; refusals: { total: number; by: Record<string, number> }; bytesReceived: { total: number } } }>('setup');
    expect(s.setup).toMatchObject({ backend: 'embedded', state: 'memory' });
    expect(s.setup.upstream).toBeUndefined();
    expect(s.credentials).toEqual(expect.arrayContaining([
      { accessKeyId: c.admin.accessKeyId, agent: null, admin: true, policies: [] },
      { accessKeyId: c.agents.alice!.accessKeyId, agent: 'alice', admin: false, policies: [] },
      { accessKeyId: c.keys.person!.accessKeyId, agent: null, admin: false, policies: [] },
    ]));
    expect(s.credentials).toHaveLength(4);
    const { requests, refusals } = s.metrics;
    expect(requests.total).toBe(Object.values(requests.by).reduce((a, b) => a + b, 0));
    expect(requests.by['200']).toBeGreaterThanOrEqual(8);
    expect(requests.by['412']).toBeGreaterThanOrEqual(1);
    expect(refusals.total).toBeGreaterThanOrEqual(1);
    expect(refusals.total).toBe(Object.values(refusals.by).reduce((a, b) => a + b, 0));
    expect(s.metrics.bytesReceived.total).toBeGreaterThan(0);
    expect(s.metrics.bytesReceived).not.toHaveProperty('by');
  });
});
