/**
 * What the event stream (GET /_casket/events, docs/design.md §9) is told of
 * a refused write and of a merged one, with casket in this process: a
 * refusal answered is `casket:WriteRefused` naming the agent refused, its
 * access key, the reason, status and code, and the current ETag (the guard
 * reports it, Guard.report); a write merged into a newer version
 * (x-casket-merge: text) is an ordinary s3:ObjectCreated:Put flagged
 * `merged`, and a plain write is not.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cred } from '../helpers/casket.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { until } from '../helpers/poll.js';
import { raw } from '../helpers/raw.js';
import { etagOf } from '../helpers/suite.js';
import { subscribe, type Rec, type Subscription } from '../events/sse.js';

const bucket = 'told';
let casket: InProcessCasket;
let alice: Cred;
let bob: Cred;
let stream: Subscription;

beforeAll(async () => {
  casket = await startInProcess({ agents: ['alice', 'bob'] });
  ({ alice, bob } = casket.agents as { alice: Cred; bob: Cred });
  await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}` });
  stream = await subscribe(casket.url, casket.admin);
  expect(stream.status).toBe(200);
});
afterAll(async () => {
  stream?.close();
  await casket?.stop();
});

const put = (who: Cred, key: string, body: string, headers: Record<string, string> = {}) => raw(casket.url, who, { method: 'PUT', path: `/${bucket}/${key}`, headers, body });
const hex = (quoted: string) => quoted.slice(1, -1);

/** The records of `key` once there are `n` of them. */
async function recordsOf(key: string, n: number): Promise<Rec[]> {
  const mine = (all: Rec[]) => all.filter((r) => r.s3.bucket.name === bucket && r.s3.object.key === key);
  return mine(await stream.until((all) => mine(all).length >= n));
}

describe('a refused write', () => {
  it("an agent's write without If-Match: casket:WriteRefused naming the agent, its key, 428 and the current ETag", async () => {
    await put(casket.admin, 'refused', 'one');
    expect((await put(alice, 'refused', 'two')).status).toBe(428);
    const [, r] = await recordsOf('refused', 2);
    expect([r!.eventName, r!.eventSource]).toEqual(['casket:WriteRefused', 'casket']);
    expect(r!.casket).toEqual({
      operation: 'PutObject',
      agent: 'alice',
      accessKey: alice.accessKeyId,
      reason: 'precondition-required',
      status: 428,
      code: 'PreconditionRequired',
      currentETag: hex(etagOf('one')),
    });
  });
});

describe('a merged write', () => {
  it("bob's edit merged into alice's newer version is s3:ObjectCreated:Put flagged merged; alice's own write is not", async () => {
    const text = Array.from({ length: 20 }, (_, i) => `line ${i}`).join('\n') + '\n';
    const base = (await put(casket.admin, 'notes.md', text)).headers.etag as string;
    for (const who of [alice, bob]) expect((await raw(casket.url, who, { method: 'GET', path: `/${bucket}/notes.md` })).status).toBe(200);
    await until(async () => (await casket.casket.services.retainer!.get({ bucket, key: 'notes.md', etag: hex(base) })) !== undefined, 'the base to be kept');
    expect((await put(alice, 'notes.md', text.replace('line 2\n', 'line 2 by alice\n'), { 'if-match': base })).status).toBe(200);
    const b = await put(bob, 'notes.md', text.replace('line 17\n', 'line 17 by bob\n'), { 'if-match': base, 'x-casket-merge': 'text' });
    expect(b.status, b.body).toBe(200);
    const [, byAlice, byBob] = await recordsOf('notes.md', 3);
    expect([byAlice!.eventName, byAlice!.casket.agent, byAlice!.casket.merged]).toEqual(['s3:ObjectCreated:Put', 'alice', undefined]);
    expect([byBob!.eventName, byBob!.casket.agent, byBob!.casket.merged, byBob!.s3.object.eTag]).toEqual(['s3:ObjectCreated:Put', 'bob', true, hex(b.headers.etag as string)]);
  });
});
