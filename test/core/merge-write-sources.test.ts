/**
 * The opt-in merge (x-casket-merge: text, s3/merge-write.ts) where the
 * current version comes from and who keeps what: a current version casket
 * kept is merged from that copy, a version replaced while casket reads it is
 * not merged, and only an agent's write is kept as a base for later merges.
 * Also the one place a merge streams instead of holding the body: a body
 * larger than any kept version goes on as an ordinary write, and when that
 * write stops reading, the request body is released rather than left hanging.
 * And the guarded write itself (s3/write.ts) against a store that answers
 * less than the embedded one: an upstream that refuses before reading the
 * body (no attempted ETag), or reports no writer for a version.
 */
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ConditionFailed, type ObjectInfo, type Payload } from '../../src/backends/types.js';
import { Guard } from '../../src/guard/guard.js';
import type { WriteConditions } from '../../src/guard/preconditions.js';
import { Refusal } from '../../src/guard/refusal.js';
import type { Retainer } from '../../src/retention/retainer.js';
import type { RequestContext, Services } from '../../src/s3/context.js';
import { mergeablePut } from '../../src/s3/merge-write.js';
import { emptyResponse } from '../../src/s3/respond.js';
import { guardedWrite, type GuardedWrite } from '../../src/s3/write.js';
import { MemoryStateStore } from '../../src/state/memory.js';
import type { WriteLogEntry } from '../../src/state/types.js';
import type { Cred } from '../helpers/casket.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { until } from '../helpers/poll.js';
import { raw, xmlField } from '../helpers/raw.js';
import { etagOf } from '../helpers/suite.js';

describe('a merge body larger than any kept version', () => {
  it('goes on as an ordinary write; when that write stops reading, the request body is released', async () => {
    // Three 8-byte chunks against a 10-byte limit: the second chunk shows it is larger.
    const request = Readable.from([Buffer.alloc(8, 'a'), Buffer.alloc(8, 'b'), Buffer.alloc(8, 'c')]);
    const payload: Payload = { stream: request, digest: () => ({ sha256: Buffer.alloc(32), size: 24 }) };
    const ctx = { bucket: 'b', key: 'k', payload: () => payload } as unknown as RequestContext;
    const retainer = { maxObjectSize: 10 } as Retainer;
    const seen: Buffer[] = [];
    // A commit that fails after its first chunk (a backend error) reads no further.
    const ordinary = async (body: Payload) => {
      for await (const chunk of body.stream) {
        seen.push(chunk as Buffer);
        break;
      }
      return emptyResponse(500, {});
    };
    await mergeablePut(ctx, {} as Services, retainer, { ifMatch: ['base'] }, ordinary);
    expect(Buffer.concat(seen).toString()).toBe('aaaaaaaa');
    await until(async () => request.destroyed, 'the request body to be released');
  });
});

describe('x-casket-merge: text, where the current version is read from', () => {
  const bucket = 'merge-sources';
  let casket: InProcessCasket;
  let alice: Cred;
  let bob: Cred;

  beforeAll(async () => {
    casket = await startInProcess({ agents: ['alice', 'bob'] });
    ({ alice, bob } = casket.agents as { alice: Cred; bob: Cred });
    await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}` });
  });
  afterAll(async () => {
    vi.restoreAllMocks();
    await casket?.stop();
  });

  const text = Array.from({ length: 30 }, (_, i) => `line ${i}`).join('\n') + '\n';
  const edit = (from: string, to: string, base = text) => base.replace(`${from}\n`, `${to}\n`);
  const kept = async (key: string, etag: string) => (await casket.casket.services.retainer!.get({ bucket, key, etag: etag.slice(1, -1) })) !== undefined;
  const put = (who: Cred, key: string, body: string, headers: Record<string, string> = {}) => raw(casket.url, who, { method: 'PUT', path: `/${bucket}/${key}`, headers, body });
  const merge = (who: Cred, key: string, ifMatch: string, body: string) => put(who, key, body, { 'if-match': ifMatch, 'x-casket-merge': 'text' });
  const get = async (key: string) => (await raw(casket.url, casket.admin, { method: 'GET', path: `/${bucket}/${key}` })).body;

  /** A person writes `body` (bytes of its own, so kept only by what follows); bob reads it whole; casket keeps it. */
  async function base(key: string, body: string): Promise<string> {
    const etag = (await put(casket.admin, key, body)).headers.etag as string;
    expect((await raw(casket.url, bob, { method: 'GET', path: `/${bucket}/${key}` })).status).toBe(200);
    await until(() => kept(key, etag), `the base of ${key} to be kept`);
    return etag;
  }

  it("a current version an agent wrote is merged from casket's kept copy: the store is not read for it", async () => {
    const own = `${text}kept copy\n`;
    const v1 = await base('kept.md', own);
    expect((await raw(casket.url, alice, { method: 'GET', path: `/${bucket}/kept.md` })).status).toBe(200);
    const a = await merge(alice, 'kept.md', v1, edit('line 4', 'four by alice', own));
    expect(a.status, a.body).toBe(200);
    await until(() => kept('kept.md', a.headers.etag as string), "alice's version to be kept");
    // A store that cannot serve the read now: the merge needs only what casket holds.
    const read = vi.spyOn(casket.casket.services.backend, 'getObject').mockRejectedValue(new Error('store unreadable'));
    try {
      const b = await merge(bob, 'kept.md', v1, edit('line 26', 'twenty-six by bob', own));
      expect([b.status, b.headers['x-casket-merged']], b.body).toEqual([200, a.headers.etag]);
    } finally {
      read.mockRestore();
    }
    expect(await get('kept.md')).toBe(edit('line 26', 'twenty-six by bob', edit('line 4', 'four by alice', own)));
  });

  it('a current version replaced while casket reads it is not merged: the ordinary 412 precondition-failed', async () => {
    const own = `${text}replaced while read\n`;
    const v1 = await base('raced.md', own);
    // A person's version, kept by nobody: casket reads it from the store to merge.
    const p1 = await put(casket.admin, 'raced.md', edit('line 3', 'three by a person', own), { 'if-match': v1 });
    expect(p1.status, p1.body).toBe(200);
    const backend = casket.casket.services.backend;
    const getObject = backend.getObject.bind(backend);
    // Another write lands between the refusal and the read, over the line bob edits too.
    const read = vi.spyOn(backend, 'getObject').mockImplementationOnce(async (...args: Parameters<typeof getObject>) => {
      await put(casket.admin, 'raced.md', edit('line 21', 'twenty-one by a person', own));
      return getObject(...args);
    });
    try {
      const b = await merge(bob, 'raced.md', v1, edit('line 21', 'twenty-one by bob', own));
      // Merged with the version read instead, it would be a merge-conflict over line 21.
      expect([b.status, xmlField(b.body, 'Reason'), b.headers['x-casket-merged']], b.body).toEqual([412, 'precondition-failed', undefined]);
    } finally {
      read.mockRestore();
    }
    expect(await get('raced.md')).toBe(edit('line 21', 'twenty-one by a person', own));
  });

  it('a commit refused while the base is current again (changed, then changed back): the 412 stands, nothing merged', async () => {
    // The docs' rule: from a base that is current, a merge write is an ordinary write, and an ordinary write refused is refused.
    const own = `${text}changed back\n`;
    const v1 = await base('aba.md', own);
    const backend = casket.casket.services.backend;
    const baseInfo = (await backend.headObject(bucket, 'aba.md'))!;
    const sent = edit('line 8', 'eight by bob', own);
    // What an upstream answers when the key changed and changed back between the check and the commit.
    const commit = vi.spyOn(backend, 'putObject').mockRejectedValueOnce(new ConditionFailed(baseInfo, etagOf(sent).slice(1, -1)));
    try {
      const b = await merge(bob, 'aba.md', v1, sent);
      expect([b.status, xmlField(b.body, 'Reason'), b.headers['x-casket-merged']], b.body).toEqual([412, 'precondition-failed', undefined]);
    } finally {
      commit.mockRestore();
    }
    expect(await get('aba.md')).toBe(own);
  });

  it("a person's merge write that lands is not kept as a base: a later merge from it is the ordinary 412", async () => {
    // Versions are kept for agents (what they read or wrote); a person's bytes of its own are kept by nobody.
    const own = `${text}by persons only\n`;
    const v1 = (await put(casket.admin, 'persons.md', own)).headers.etag as string;
    const v2 = await merge(casket.admin, 'persons.md', v1, edit('line 5', 'five', own));
    expect(v2.status, v2.body).toBe(200);
    expect((await put(casket.admin, 'persons.md', edit('line 6', 'six', edit('line 5', 'five', own)))).status).toBe(200);
    const r = await merge(casket.admin, 'persons.md', v2.headers.etag as string, edit('line 20', 'twenty', edit('line 5', 'five', own)));
    expect([r.status, xmlField(r.body, 'Code'), r.headers['x-casket-merged']], r.body).toEqual([412, 'PreconditionFailed', undefined]);
  });
});

const V0 = '0'.repeat(64);
const V1 = '1'.repeat(64);
const info = (etag: string, writer?: string): ObjectInfo => ({ bucket: 'b', key: 'k', etag, size: 10, lastModified: new Date(), headers: {}, metadata: {}, ...(writer && { writer }) });

/** A person's guarded write of b/k (no agent, enforce mode) whose commit is `commit`; the write log holds `logged`. */
async function personWrite(conditions: WriteConditions, commit: () => Promise<ObjectInfo | null>, more: Partial<GuardedWrite<ObjectInfo | null>> = {}, logged?: Omit<WriteLogEntry, 'at' | 'bucket' | 'key'>) {
  const state = new MemoryStateStore();
  if (logged) await state.appendWriteLog({ at: new Date(), bucket: 'b', key: 'k', ...logged });
  const guard = new Guard(state, { mode: 'enforce', agentWrites: 'require' });
  const services = { backend: { headObject: async () => null }, guard, state, log: { error() {}, warn() {}, info() {} } } as unknown as Services;
  const ctx = { headers: {}, agent: undefined, accessKey: 'AKPERSON', requestId: 'req-1' } as unknown as RequestContext;
  const outcome = guardedWrite<ObjectInfo | null>({ ctx, services, bucket: 'b', key: 'k', operation: 'PutObject', conditions, bodyComing: true, commit, written: (i) => i, landed: (c) => c, ...more });
  return { outcome, state };
}

const refusalOf = async (outcome: Promise<unknown>): Promise<Refusal> => {
  const e = await outcome.then(() => undefined, (err: unknown) => err);
  expect(e).toBeInstanceOf(Refusal);
  return e as Refusal;
};

describe('the guarded write against an upstream that refuses before reading the body', () => {
  // s3/commit.ts: a conditional PUT refused upstream before casket hashed the
  // body reports no attempted ETag. The refusal still says identical
  // (x-casket-identical-content) from what the request declared.
  it.each([
    ['a PutObject whose declared SHA-256 is the current ETag', { declaredSha256: V1 }, info(V1)],
    ['a DeleteObject of a key already gone', { deletes: true }, null],
  ])('%s: refused, and identical', async (_, more, current) => {
    const { outcome } = await personWrite({ ifMatch: [V0] }, async () => Promise.reject(new ConditionFailed(current)), more);
    expect((await refusalOf(outcome)).details.identical).toBe(true);
  });
});

describe('the writer a refusal names, from a store that reports none', () => {
  // refusal-error.ts names a person's version by its access key (x-casket-writer-access-key); an agent's write is the agent's, never a person's.
  it.each([
    ['a person', { operation: 'PutObject', accessKey: 'AKBOB', newETag: V1 }, 'AKBOB'],
    ['an agent', { operation: 'PutObject', agent: 'alice', accessKey: 'AKALICE', newETag: V1 }, undefined],
  ])('the current version written by %s', async (_, logged, named) => {
    const { outcome } = await personWrite({ ifMatch: [V0] }, async () => Promise.reject(new ConditionFailed(info(V1), V0.replace(/0$/, '2'))), {}, logged);
    expect((await refusalOf(outcome)).details.writerAccessKey).toBe(named);
  });
});

describe('the version a committed If-Match replaced, in the write log', () => {
  it('If-Match naming two versions: the write log does not guess which one the write replaced', async () => {
    // Only the `-1` client form of one ETag (README, "Clients") names one version twice; a `-1` inside another ETag does not.
    const multipart = `${V1}-12`;
    const { outcome, state } = await personWrite({ ifMatch: [multipart, `${V1}2`] }, async () => info(V0));
    await outcome;
    expect((await state.lastWrite('b', 'k'))?.previousETag).toBeUndefined();
  });

  it('If-Match naming one version in both its forms: the write log names it', async () => {
    const { outcome, state } = await personWrite({ ifMatch: [`${V1}-1`] }, async () => info(V0));
    await outcome;
    expect((await state.lastWrite('b', 'k'))?.previousETag).toBe(V1);
  });
});
