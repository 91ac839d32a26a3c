/**
 * Counters and logs that add up: every refusal — an agent's or a person's,
 * decided by casket's rules, by S3's own conditions or at commit, one key of
 * a DeleteObjects — moves casket_refusals_total{reason,enforced} by exactly
 * one, and nothing else moves; observe mode counts what it lets through as
 * enforced="false" and S3's own refusals as enforced. casket's own endpoints
 * answer a bad signature 403 with the S3 code, and are logged.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type Cred, type RunningCasket } from '../helpers/casket.js';
import { until } from '../helpers/poll.js';
import { raw } from '../helpers/raw.js';
import { counted, refusals } from '../helpers/refusal-counters.js';

const put = (c: RunningCasket, who: Cred, key: string, body: string, headers: Record<string, string> = {}) => raw(c.url, who, { method: 'PUT', path: `/counted/${key}`, body, headers });

describe('refusal counters', () => {
  let c: RunningCasket;
  let alice: Cred;
  beforeAll(async () => {
    c = await startCasket({ agents: ['alice'] });
    alice = c.agents.alice!;
    await raw(c.url, c.admin, { method: 'PUT', path: '/counted' });
  });
  afterAll(async () => c?.stop());

  it('each kind of refusal, of an agent and of a person, counts once', async () => {
    const v1 = (await put(c, c.admin, 'k', 'one')).headers.etag as string;
    await counted(c.url, 'precondition-required true', async () => (await put(c, alice, 'k', 'x')).status, 428);
    await counted(c.url, 'not-read true', async () => (await put(c, alice, 'k', 'x', { 'if-match': v1 })).status, 412);
    await raw(c.url, alice, { method: 'GET', path: '/counted/k', headers: { range: 'bytes=0-0' } });
    await counted(c.url, 'partial-read true', async () => (await put(c, alice, 'k', 'x', { 'if-match': v1 })).status, 412);
    await raw(c.url, alice, { method: 'GET', path: '/counted/k' });
    const v2 = (await put(c, c.admin, 'k', 'two')).headers.etag as string;
    await counted(c.url, 'stale-read true', async () => (await put(c, alice, 'k', 'x', { 'if-match': v2 })).status, 412);
    await counted(c.url, 'precondition-failed true', async () => (await put(c, alice, 'k', 'x', { 'if-match': v1 })).status, 412);
    // A person's refusals are S3's own: counted all the same.
    await counted(c.url, 'precondition-failed true', async () => (await put(c, c.admin, 'k', 'x', { 'if-match': v1 })).status, 412);
    await counted(c.url, 'precondition-failed true', async () => (await put(c, c.admin, 'k', 'x', { 'if-none-match': '*' })).status, 412);
    await counted(c.url, 'no-such-key true', async () => (await put(c, c.admin, 'missing', 'x', { 'if-match': v1 })).status, 404);
    // If-None-Match naming the current version (honoured as Ceph RGW and MinIO do).
    await counted(c.url, 'precondition-failed true', async () => (await put(c, c.admin, 'k', 'x', { 'if-none-match': v2 })).status, 412);
    // A write that goes through counts nothing.
    await counted(c.url, undefined, async () => (await put(c, c.admin, 'k', 'three', { 'if-match': v2 })).status, 200);
  });

  it('each refused key of a DeleteObjects counts once', async () => {
    await put(c, c.admin, 'd1', 'x');
    await put(c, c.admin, 'd2', 'x');
    const body = '<Delete><Object><Key>d1</Key></Object><Object><Key>d2</Key></Object></Delete>';
    const md5 = createHash('md5').update(body).digest('base64');
    const before = await refusals(c.url);
    const res = await raw(c.url, alice, { method: 'POST', path: '/counted?delete', body, headers: { 'content-md5': md5 } });
    expect(res.status).toBe(200);
    expect(res.body.match(/<Error>/g)).toHaveLength(2);
    expect((await refusals(c.url)).get('precondition-required true')).toBe((before.get('precondition-required true') ?? 0) + 2);
  });

  it("casket's endpoints answer a bad signature 403 with the S3 code, and log every request", async () => {
    const wrong = { accessKeyId: c.admin.accessKeyId, secretAccessKey: 'not-the-secret' };
    for (const path of ['/_casket/diff?bucket=counted&from=x&key=k&to=current', '/_casket/merge?base=x&bucket=counted&current=x&key=k&sent=x', '/_casket/agents/alice/changes', '/_casket/agents/alice/stamps', '/_casket/writes']) {
      const res = await raw(c.url, wrong, { method: 'GET', path });
      expect([path, res.status]).toEqual([path, 403]);
      expect(res.body).toMatch(/SignatureDoesNotMatch|AccessDenied/);
    }
    // The line is written once the answer is sent: wait for it to come through casket's stdout.
    const logged = (operation: string) => c.logs.some((l) => l.includes(`"operation":"${operation}"`) && l.includes('"status":403'));
    await until(() => logged('casket:diff') && logged('casket:agents-changes') && logged('casket:writes'), "the /_casket/* requests' log lines");
  });
});

describe('refusal counters in observe mode', () => {
  let c: RunningCasket;
  beforeAll(async () => {
    c = await startCasket({ agents: ['alice'], args: ['--guard', 'observe'] });
    await raw(c.url, c.admin, { method: 'PUT', path: '/counted' });
  });
  afterAll(async () => c?.stop());

  it("counts casket's own rules as not enforced and S3's conditions as enforced, once each", async () => {
    await counted(c.url, 'precondition-required false', async () => (await put(c, c.agents.alice!, 'k', 'x')).status, 200);
    await counted(c.url, 'precondition-failed true', async () => (await put(c, c.agents.alice!, 'k', 'y', { 'if-none-match': '*' })).status, 412);
    await counted(c.url, 'precondition-failed true', async () => (await put(c, c.admin, 'k', 'y', { 'if-none-match': '*' })).status, 412);
  });
});
