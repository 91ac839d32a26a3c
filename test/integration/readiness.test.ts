/**
 * Liveness and readiness (src/readiness.ts): /_casket/health answers while
 * casket runs; /_casket/ready answers 503 naming the part that fails when
 * casket cannot serve writes — an upstream that does not answer, Redis
 * stopped — and 200 again once it returns. The 503 a client gets meanwhile
 * says what happened in casket's words, not the Redis client's.
 */
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { until } from '../helpers/poll.js';
import { raw } from '../helpers/raw.js';
import { hasRedis, startRedis, type RunningRedis } from '../helpers/redis.js';
import { need } from '../helpers/tools.js';

async function get(url: string, path: string): Promise<{ status: number; body: { status: string; checks?: Record<string, { ok: boolean; error?: string }> } }> {
  const res = await fetch(`${url}${path}`);
  return { status: res.status, body: (await res.json()) as never };
}

/** A loopback port nothing listens on: taken, then released. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise((resolve) => s.close(resolve));
  return port;
}

describe('readiness', () => {
  const started: RunningCasket[] = [];
  afterAll(async () => {
    for (const c of started) await c.stop();
  });

  it('is ready on its backend (the embedded store, or the upstream of the run)', async () => {
    const c = await startCasket();
    started.push(c);
    expect(await get(c.url, '/_casket/health')).toEqual({ status: 200, body: { status: 'ok' } });
    // Not ready until the upstream's capability probe has run: on a fresh Ceph
    // cluster the probe's first bucket creates the pools, which takes seconds.
    await until(async () => (await get(c.url, '/_casket/ready')).status === 200, 'casket to be ready');
    const ready = await get(c.url, '/_casket/ready');
    expect(ready.status).toBe(200);
    expect(ready.body.status).toBe('ready');
    expect(ready.body.checks).toMatchObject({ backend: { ok: true }, state: { ok: true } });
  });

  it('is not ready, naming the backend, when the upstream does not answer; alive all the same', async () => {
    const port = await closedPort();
    const c = await startCasket({ upstream: { kind: 'moto', url: `http://127.0.0.1:${port}`, accessKey: 'nobody', secretKey: 'nothing', region: 'us-east-1', stop: async () => {} } });
    started.push(c);
    expect((await get(c.url, '/_casket/health')).status).toBe(200);
    const ready = await get(c.url, '/_casket/ready');
    expect(ready.status).toBe(503);
    expect(ready.body).toMatchObject({ status: 'unavailable', checks: { backend: { ok: false, error: 'ECONNREFUSED' }, state: { ok: true } } });
  });

  it.runIf(need('redis-server', hasRedis()))('is not ready, naming the state store, while Redis is down; ready again when it is back', async () => {
    const redis: RunningRedis = await startRedis();
    try {
      const c = await startCasket({ agents: ['alice'], args: ['--state', 'redis', '--redis-url', redis.url] });
      started.push(c);
      expect((await get(c.url, '/_casket/ready')).status).toBe(200);
      await raw(c.url, c.admin, { method: 'PUT', path: '/ready' });
      await redis.stop();
      await until(async () => (await get(c.url, '/_casket/ready')).status === 503, 'readiness to fail with Redis down');
      const down = await get(c.url, '/_casket/ready');
      expect(down.body.checks!.state).toMatchObject({ ok: false });
      expect(down.body.checks!.backend).toEqual({ ok: true });
      // The client's 503 is casket's own sentence; the Redis client's words stay in the log.
      const refused = await raw(c.url, c.agents.alice!, { method: 'PUT', path: '/ready/k', headers: { 'if-none-match': '*' }, body: 'x' });
      expect(refused.status).toBe(503);
      expect(refused.body).toContain('casket&apos;s state store is unavailable, or could not confirm the change on a replica; nothing was written. Retry shortly.');
      expect(refused.body).not.toMatch(/enableOfflineQueue|Stream isn't writeable|Connection is closed|ECONNREFUSED/);
      await redis.start();
      await until(async () => (await get(c.url, '/_casket/ready')).status === 200, 'readiness once Redis is back');
    } finally {
      await redis.stop();
    }
  });
});
