/**
 * Retained versions belong to the key whose history holds them
 * (docs/design.md §14; ../shared/STYLE.md: "a lookup by content hash is not an
 * access check"). casket keeps the versions agents read or wrote by their
 * SHA-256 ETag; an ETag is public knowledge to anyone who may list the
 * bucket. So a key allowed s3:* on `pub` and only s3:ListBucket on `secret`
 * takes the ETag of `secret/payroll.txt`'s earlier version from a listing
 * and names it as a version of its own `pub/mine.txt` to every way in that
 * reads retained content: GET /_casket/diff, GET /_casket/merge, a PutObject
 * with If-Match + x-casket-merge: text, and MCP edit_file's merge. None may
 * return, merge or hint at a byte of the secret: the ETag is answered as one
 * nobody retained. The key's own earlier versions still diff and merge.
 *
 * On the embedded store or through CASKET_TEST_UPSTREAM; with --state redis
 * too (retention then lives in Redis), when redis-server is at hand.
 */
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type Cred, type RunningCasket } from '../helpers/casket.js';
import { sdk } from '../helpers/clients.js';
import { call, data, httpClient, mintToken, text } from '../helpers/mcp.js';
import { until } from '../helpers/poll.js';
import { raw, xmlField, type RawResponse } from '../helpers/raw.js';
import { hasRedis, startRedis, type RunningRedis } from '../helpers/redis.js';
import { need } from '../helpers/tools.js';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const arn = (r: string) => `arn:aws:s3:::${r}`;

/** The secret's lines: no test answer may contain any of them. */
const SECRET_V1 = 'payroll 2026\nalice 91000 SECRET-ALICE\nbob 87000 SECRET-BOB\n';
const SECRET_V2 = 'payroll 2026\nalice 93000 SECRET-ALICE\nbob 87000 SECRET-BOB\n';
const leaks = (s: string) => /SECRET-|payroll|91000|87000/.test(s);

/** Twenty lines, so that edits of line 2 and line 18 merge cleanly. */
const lines = (tag: string) => Array.from({ length: 20 }, (_, i) => `${tag} line ${i}`).join('\n') + '\n';
const change = (body: string, from: string, to: string) => body.replace(`${from}\n`, `${to}\n`);

/** Allowed everything on `pub`, only the listing of `secret`. */
const MALLORY = {
  Statement: [
    { Effect: 'Allow', Action: 's3:*', Resource: [arn('pub'), arn('pub/*')] },
    { Effect: 'Allow', Action: 's3:ListBucket', Resource: arn('secret') },
  ],
};

/** May write `pub`, not read it. */
const WRITE_ONLY = { Statement: [{ Effect: 'Allow', Action: 's3:PutObject', Resource: arn('pub/*') }] };

interface World {
  casket: RunningCasket;
  mallory: Cred;
  /** The ETag of secret/payroll.txt's earlier version, as mallory listed it. */
  secretV1: string;
  secretV2: string;
}

async function put(c: RunningCasket, who: Cred, path: string, body: string, condition: Record<string, string>, extra: Record<string, string> = {}): Promise<RawResponse> {
  return raw(c.url, who, { method: 'PUT', path, body, headers: { 'content-type': 'text/plain', ...condition, ...extra } });
}

const get = (w: World, who: Cred, path: string) => raw(w.casket.url, who, { method: 'GET', path });
const q = (params: Record<string, string>) => new URLSearchParams(params).toString();

async function setUp(args: string[] = []): Promise<World> {
  const casket = await startCasket({ agents: ['hr'], keys: { mallory: { agent: 'mallory', policy: MALLORY }, writer: { policy: WRITE_ONLY } }, args });
  const hr = casket.agents.hr!;
  const mallory = casket.keys.mallory!;
  for (const b of ['pub', 'secret']) expect((await raw(casket.url, casket.admin, { method: 'PUT', path: `/${b}` })).status).toBe(200);
  // hr (an agent: casket retains what it writes) writes the payroll twice.
  const v1 = await put(casket, hr, '/secret/payroll.txt', SECRET_V1, { 'if-none-match': '*' });
  expect(v1.status).toBe(200);
  // mallory may list `secret`: the listing names the version of the day.
  const listed = await sdk(casket.url, mallory).send(new ListObjectsV2Command({ Bucket: 'secret' }));
  const secretV1 = listed.Contents![0]!.ETag!.replace(/"/g, '');
  expect(secretV1).toBe(sha(SECRET_V1));
  const v2 = await put(casket, hr, '/secret/payroll.txt', SECRET_V2, { 'if-match': `"${secretV1}"` });
  expect(v2.status).toBe(200);
  // The earlier version is retained (hr itself may diff it), so what follows is refused for who asks, not for want of it.
  await until(async () => (await get({ casket } as World, hr, `/_casket/diff?${q({ bucket: 'secret', key: 'payroll.txt', from: secretV1, to: 'current' })}`)).status === 200, 'the secret version to be retained');
  expect((await get({ casket } as World, mallory, '/secret/payroll.txt')).status).toBe(403);
  return { casket, mallory, secretV1, secretV2: sha(SECRET_V2) };
}

/** mallory's own file in two versions; returns their ETags once both are retained. */
async function ownFile(w: World, key: string): Promise<{ v1: string; v2: string; body2: string }> {
  const body1 = lines(key);
  const body2 = change(body1, `${key} line 18`, `${key} line 18, changed`);
  expect((await put(w.casket, w.mallory, `/pub/${key}`, body1, { 'if-none-match': '*' })).status).toBe(200);
  expect((await put(w.casket, w.mallory, `/pub/${key}`, body2, { 'if-match': `"${sha(body1)}"` })).status).toBe(200);
  const v1 = sha(body1);
  await until(async () => (await get(w, w.mallory, `/_casket/diff?${q({ bucket: 'pub', key, from: v1, to: 'current' })}`)).status === 200, `${key}'s first version to be retained`);
  return { v1, v2: sha(body2), body2 };
}

/** The same answer with the ETag named, whichever ETag: the secret's must read as one nobody kept. */
const sameAs = (r: RawResponse, named: string, unknown: RawResponse, unknownETag: string) => {
  expect({ status: r.status, body: r.body.replaceAll(named, '<etag>') }).toEqual({ status: unknown.status, body: unknown.body.replaceAll(unknownETag, '<etag>') });
};

function attacks(world: () => World) {
  const nobody = sha('a version nobody ever wrote\n');

  it('GET /_casket/diff of my key from the secret ETag is the 404 of an ETag nobody retained', async () => {
    const w = world();
    await ownFile(w, 'mine.txt');
    const unknown = await get(w, w.mallory, `/_casket/diff?${q({ bucket: 'pub', key: 'mine.txt', from: nobody, to: 'current' })}`);
    expect(unknown.status).toBe(404);
    for (const secret of [w.secretV1, w.secretV2]) {
      const from = await get(w, w.mallory, `/_casket/diff?${q({ bucket: 'pub', key: 'mine.txt', from: secret, to: 'current' })}`);
      expect(leaks(from.body), from.body).toBe(false);
      sameAs(from, secret, unknown, nobody);
      const to = await get(w, w.mallory, `/_casket/diff?${q({ bucket: 'pub', key: 'mine.txt', from: sha(lines('mine.txt')), to: secret })}`);
      expect(to.status).toBe(404);
      expect(leaks(to.body), to.body).toBe(false);
    }
  });

  it('GET /_casket/merge with the secret ETag as base, current or sent is the 404 of an ETag nobody retained', async () => {
    const w = world();
    const own = await ownFile(w, 'merge-probe.txt');
    const at = (base: string, current: string, sent: string) => get(w, w.mallory, `/_casket/merge?${q({ bucket: 'pub', key: 'merge-probe.txt', base, current, sent })}`);
    const unknown = await at(nobody, own.v2, own.v2);
    expect(unknown.status).toBe(404);
    for (const [base, current, sent] of [[w.secretV1, own.v2, own.v2], [own.v1, w.secretV1, own.v2], [own.v1, own.v2, w.secretV2]] as const) {
      const r = await at(base, current, sent);
      expect(leaks(r.body), r.body).toBe(false);
      expect(r.status).toBe(404);
    }
    sameAs(await at(w.secretV1, own.v2, own.v2), w.secretV1, unknown, nobody);
  });

  it('PutObject with If-Match: <secret ETag> and x-casket-merge: text is the 412 of an ETag nobody retained, and merges nothing', async () => {
    const w = world();
    const own = await ownFile(w, 'put-probe.txt');
    const attempt = (base: string) => put(w.casket, w.mallory, '/pub/put-probe.txt', 'mallory was here\n', { 'if-match': `"${base}"` }, { 'x-casket-merge': 'text' });
    const unknown = await attempt(nobody);
    expect(unknown.status).toBe(412);
    const r = await attempt(w.secretV1);
    expect(r.status).toBe(412);
    // Not a merge-conflict with a link to the merge of the secret: a plain stale write.
    expect(xmlField(r.body, 'Reason')).toBe(xmlField(unknown.body, 'Reason'));
    expect(r.body).not.toContain('_casket/merge');
    expect(r.headers['x-casket-merged']).toBeUndefined();
    const after = await get(w, w.mallory, '/pub/put-probe.txt');
    expect(after.body).toBe(own.body2);
  });

  it('a merge write from a key that may write the key but not read it is AccessDenied: a merge reads the versions it merges', async () => {
    const w = world();
    const own = await ownFile(w, 'write-only.txt');
    const writer = w.casket.keys.writer!;
    const sent = change(lines('write-only.txt'), 'write-only.txt line 2', 'written blind');
    const r = await put(w.casket, writer, '/pub/write-only.txt', sent, { 'if-match': `"${own.v1}"` }, { 'x-casket-merge': 'text' });
    expect([r.status, xmlField(r.body, 'Code')], r.body).toEqual([403, 'AccessDenied']);
    expect(r.body).toContain('s3:GetObject');
    expect((await get(w, w.mallory, '/pub/write-only.txt')).body).toBe(own.body2);
    // Without the merge it is the ordinary write it may make.
    expect((await put(w.casket, writer, '/pub/write-only.txt', 'replaced\n', { 'if-match': `"${own.v2}"` })).status).toBe(200);
  });

  it('MCP edit_file with expected_etag <secret ETag> and merge: true merges nothing and answers the same whether the secret holds the text or not', async () => {
    const w = world();
    const own = await ownFile(w, 'mcp-probe.txt');
    const client: Client = await httpClient(w.casket, mintToken(w.mallory, { agent: 'mallory' }));
    try {
      const edit = (etag: string, oldText: string) => call(client, 'edit_file', { path: 'pub/mcp-probe.txt', edits: [{ oldText, newText: 'mallory' }], expected_etag: `"${etag}"`, merge: true });
      // A first answer carries the reminders of earlier tests' writes (told once): take them now, so the probes compare alike.
      await call(client, 'list_directory', { path: 'pub' });
      // "bob 87000" is in the secret, "carol" is not: an answer that differs tells which.
      const found = await edit(w.secretV1, 'bob 87000');
      const absent = await edit(w.secretV1, 'carol 1');
      const unknown = await edit(nobody, 'bob 87000');
      for (const r of [found, absent]) {
        const shown = JSON.stringify(r);
        expect(leaks(shown.replaceAll('bob 87000', '')), shown).toBe(false);
        expect(r.isError).toBe(true);
        expect(data(r).written ?? false).toBe(false);
      }
      const shape = (r: typeof found, etag: string) => text(r).replaceAll(etag, '<etag>').replaceAll('bob 87000', '<old>').replaceAll('carol 1', '<old>');
      expect(shape(found, w.secretV1)).toBe(shape(absent, w.secretV1));
      expect(shape(found, w.secretV1)).toBe(shape(unknown, nobody));
      expect((await get(w, w.mallory, '/pub/mcp-probe.txt')).body).toBe(own.body2);
    } finally {
      await client.close();
    }
  });

  it('my own earlier version still diffs, merges over GET /_casket/merge, PutObject and MCP edit_file', async () => {
    const w = world();
    const own = await ownFile(w, 'own.txt');
    const diff = await get(w, w.mallory, `/_casket/diff?${q({ bucket: 'pub', key: 'own.txt', from: own.v1, to: 'current' })}`);
    expect(diff.status).toBe(200);
    expect(diff.body).toContain('+own.txt line 18, changed');
    const merge = await get(w, w.mallory, `/_casket/merge?${q({ bucket: 'pub', key: 'own.txt', base: own.v1, current: own.v2, sent: own.v2 })}`);
    expect(merge.status).toBe(200);
    expect(merge.body).toContain('own.txt line 18, changed');
    // An edit of line 2 made on the first version merges into the second.
    const sent = change(lines('own.txt'), 'own.txt line 2', 'own.txt line 2, by S3');
    const put1 = await put(w.casket, w.mallory, '/pub/own.txt', sent, { 'if-match': `"${own.v1}"` }, { 'x-casket-merge': 'text' });
    expect(put1.status, put1.body).toBe(200);
    expect(put1.headers['x-casket-merged']).toBe(`"${own.v2}"`);
    const merged = change(own.body2, 'own.txt line 2', 'own.txt line 2, by S3');
    expect((await get(w, w.mallory, '/pub/own.txt')).body).toBe(merged);
    // And over MCP, an edit of line 5 made on the first version.
    const client = await httpClient(w.casket, mintToken(w.mallory, { agent: 'mallory' }));
    try {
      const r = await call(client, 'edit_file', { path: 'pub/own.txt', edits: [{ oldText: 'own.txt line 5\n', newText: 'own.txt line 5, by MCP\n' }], expected_etag: `"${own.v1}"`, merge: true });
      expect(r.isError, text(r)).toBeFalsy();
      expect(data(r).merged).toBe(true);
    } finally {
      await client.close();
    }
    expect((await get(w, w.mallory, '/pub/own.txt')).body).toBe(change(merged, 'own.txt line 5', 'own.txt line 5, by MCP'));
  });
}

describe('retained versions: only for the key whose history holds them', () => {
  let w: World;
  beforeAll(async () => {
    w = await setUp();
  });
  afterAll(async () => {
    await w?.casket.stop();
  });
  attacks(() => w);
});

const haveRedis = need('redis-server', hasRedis());

describe.runIf(haveRedis)('retained versions in Redis (--state redis): only for the key whose history holds them', () => {
  let w: World;
  let redis: RunningRedis;
  beforeAll(async () => {
    redis = await startRedis();
    w = await setUp(['--state', 'redis', '--redis-url', redis.url]);
  });
  afterAll(async () => {
    await w?.casket.stop();
    await redis?.stop();
  });
  attacks(() => w);
});
