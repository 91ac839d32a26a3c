/**
 * casket_refusals_total{reason,enforced} (GET /_casket/metrics) with casket
 * in this process, so the guard's counting (Guard.report, observe mode) is
 * what a mutant changes: each refusal moves one label set by exactly one —
 * a merge conflict too, though it passes two layers — and observe mode counts
 * what it lets through as enforced="false". test/integration/refusal-counters
 * drives the same against a spawned casket.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cred } from '../helpers/casket.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { until } from '../helpers/poll.js';
import { raw } from '../helpers/raw.js';
import { counted } from '../helpers/refusal-counters.js';

describe('refusal counters, enforce mode', () => {
  let c: InProcessCasket;
  let alice: Cred;
  let bob: Cred;
  beforeAll(async () => {
    c = await startInProcess({ agents: ['alice', 'bob'] });
    ({ alice, bob } = c.agents as { alice: Cred; bob: Cred });
    await raw(c.url, c.admin, { method: 'PUT', path: '/counted' });
  });
  afterAll(async () => c?.stop());

  const put = (who: Cred, key: string, body: string, headers: Record<string, string> = {}) => raw(c.url, who, { method: 'PUT', path: `/counted/${key}`, body, headers });

  it("an agent's refusals by casket's rules and by S3's conditions, and a person's, count once each", async () => {
    const v1 = (await put(c.admin, 'k', 'one')).headers.etag as string;
    await counted(c.url, 'precondition-required true', async () => (await put(alice, 'k', 'x')).status, 428);
    await counted(c.url, 'not-read true', async () => (await put(alice, 'k', 'x', { 'if-match': v1 })).status, 412);
    await counted(c.url, 'precondition-failed true', async () => (await put(c.admin, 'k', 'x', { 'if-match': `"${'0'.repeat(64)}"` })).status, 412);
    await counted(c.url, 'no-such-key true', async () => (await put(c.admin, 'missing', 'x', { 'if-match': v1 })).status, 404);
    await counted(c.url, undefined, async () => (await put(c.admin, 'k', 'two', { 'if-match': v1 })).status, 200);
  });

  it('a merge conflict counts once, as merge-conflict', async () => {
    const text = Array.from({ length: 10 }, (_, i) => `line ${i}`).join('\n') + '\n';
    const base = (await put(c.admin, 'm.md', text)).headers.etag as string;
    for (const who of [alice, bob]) await raw(c.url, who, { method: 'GET', path: '/counted/m.md' });
    await until(async () => (await c.casket.services.retainer!.get({ bucket: 'counted', key: 'm.md', etag: base.slice(1, -1) })) !== undefined, 'the base to be kept');
    expect((await put(alice, 'm.md', text.replace('line 3', 'three by alice'), { 'if-match': base })).status).toBe(200);
    await counted(c.url, 'merge-conflict true', async () => (await put(bob, 'm.md', text.replace('line 3', 'three by bob'), { 'if-match': base, 'x-casket-merge': 'text' })).status, 412);
  });
});

describe('refusal counters, observe mode', () => {
  let c: InProcessCasket;
  beforeAll(async () => {
    c = await startInProcess({ agents: ['alice'], flags: { guard: 'observe' } });
    await raw(c.url, c.admin, { method: 'PUT', path: '/counted' });
  });
  afterAll(async () => c?.stop());

  const put = (who: Cred, key: string, body: string, headers: Record<string, string> = {}) => raw(c.url, who, { method: 'PUT', path: `/counted/${key}`, body, headers });

  it("casket's own rules are counted as not enforced, and the write lands; S3's conditions are still enforced", async () => {
    await counted(c.url, 'precondition-required false', async () => (await put(c.agents.alice!, 'k', 'x')).status, 200);
    // A key alice never read (a person wrote it): If-Match is not-read, let through.
    const v = (await put(c.admin, 'theirs', 'by a person')).headers.etag as string;
    await counted(c.url, 'not-read false', async () => (await put(c.agents.alice!, 'theirs', 'y', { 'if-match': v })).status, 200);
    await counted(c.url, 'precondition-failed true', async () => (await put(c.agents.alice!, 'k', 'z', { 'if-none-match': '*' })).status, 412);
  });
});
