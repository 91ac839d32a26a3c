/**
 * --agent-writes read-stamp (docs/design.md §4) in this process: an agent's
 * write without a condition is conditioned on what it last read whole, and a
 * lost race names the agent rule that lost it (stale-read, not-read,
 * partial-read), not a condition the agent never sent.
 * test/integration/read-stamp-policy.test.ts drives the same through SDKs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cred } from '../helpers/casket.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { raw, xmlField } from '../helpers/raw.js';

const bucket = 'stamps';
let casket: InProcessCasket;
let alice: Cred;

beforeAll(async () => {
  casket = await startInProcess({ agents: ['alice'], flags: { agentWrites: 'read-stamp' } });
  alice = casket.agents.alice!;
  await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}` });
});
afterAll(async () => {
  await casket?.stop();
});

const put = (who: Cred, key: string, body: string) => raw(casket.url, who, { method: 'PUT', path: `/${bucket}/${key}`, body });
const get = (who: Cred, key: string, range?: string) => raw(casket.url, who, { method: 'GET', path: `/${bucket}/${key}`, ...(range && { headers: { range } }) });

describe('agent writes without a condition, under read-stamp', () => {
  it('after a whole read of the current version: the write lands', async () => {
    await put(casket.admin, 'fresh.txt', 'v1');
    expect((await get(alice, 'fresh.txt')).status).toBe(200);
    expect((await put(alice, 'fresh.txt', 'alice')).status).toBe(200);
  });

  it('a version written since its read: 412 stale-read with the current ETag, nothing written', async () => {
    await put(casket.admin, 'raced.txt', 'v1');
    expect((await get(alice, 'raced.txt')).status).toBe(200);
    const v2 = (await put(casket.admin, 'raced.txt', 'v2 by a person')).headers.etag;
    const r = await put(alice, 'raced.txt', 'alice from v1');
    expect([r.status, xmlField(r.body, 'Reason'), xmlField(r.body, 'CurrentETag')], r.body).toEqual([412, 'stale-read', v2]);
    expect((await get(casket.admin, 'raced.txt')).body).toBe('v2 by a person');
  });

  it('a key it never read, that exists: 412 not-read', async () => {
    await put(casket.admin, 'unseen.txt', 'v1');
    const r = await put(alice, 'unseen.txt', 'blind');
    expect([r.status, xmlField(r.body, 'Reason')], r.body).toEqual([412, 'not-read']);
    expect((await get(casket.admin, 'unseen.txt')).body).toBe('v1');
  });

  it('a key it never read, that does not exist: created', async () => {
    expect((await put(alice, 'new.txt', 'first')).status).toBe(200);
  });

  it('only part of the current version read: refused as partial-read', async () => {
    await put(casket.admin, 'part.txt', '0123456789');
    expect((await get(alice, 'part.txt', 'bytes=0-4')).status).toBe(206);
    const r = await put(alice, 'part.txt', 'from half');
    expect(xmlField(r.body, 'Reason'), r.body).toBe('partial-read');
    expect((await get(casket.admin, 'part.txt')).body).toBe('0123456789');
  });
});
