/**
 * A GET the agent abandons half-way is not a read of the whole version
 * (docs/design.md §4), with casket in this process so the guard's
 * recording of it (Guard.recordRead) is what a mutant changes: the stamp
 * names the version but covers nothing, so an If-Match write on it is
 * refused as partial-read until the agent reads it through.
 * test/integration/agents.test.ts drives the same against a spawned casket.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cred } from '../helpers/casket.js';
import { abortedGet } from '../helpers/agents.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { until } from '../helpers/poll.js';
import { raw, xmlField } from '../helpers/raw.js';

const bucket = 'abandoned';
let casket: InProcessCasket;
let alice: Cred;

beforeAll(async () => {
  casket = await startInProcess({ agents: ['alice'] });
  alice = casket.agents.alice!;
  await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}` });
});
afterAll(async () => {
  await casket?.stop();
});

const stamp = () => casket.casket.services.state.getStamp('alice', bucket, 'big');

describe('a GET aborted half-way', () => {
  it('leaves a stamp of the version that covers nothing: If-Match on it is 412 partial-read; a whole read then lets it through', async () => {
    const big = randomBytes(32 * 1024 * 1024);
    const v = (await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}/big`, body: big })).headers.etag as string;
    // A 64 KiB taste of 32 MiB, then the connection dropped: the body cannot have been delivered.
    await abortedGet(casket.url, alice, `/${bucket}/big`, 64 * 1024);
    await until(async () => (await stamp())?.etag === v.slice(1, -1), "alice's aborted read to be recorded");
    expect((await stamp())?.full).toBe(false);
    const refused = await raw(casket.url, alice, { method: 'PUT', path: `/${bucket}/big`, headers: { 'if-match': v }, body: 'by alice' });
    expect([refused.status, xmlField(refused.body, 'Reason')], refused.body).toEqual([412, 'partial-read']);
    expect((await raw(casket.url, alice, { method: 'GET', path: `/${bucket}/big` })).status).toBe(200);
    await until(async () => (await stamp())?.full === true, "alice's whole read to be recorded");
    const written = await raw(casket.url, alice, { method: 'PUT', path: `/${bucket}/big`, headers: { 'if-match': v }, body: 'by alice' });
    expect(written.status, written.body).toBe(200);
  });
});
