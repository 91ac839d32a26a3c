/**
 * What casket logs about readiness while its upstream is down (src/readiness.ts,
 * src/cli.ts): never "casket is ready" while /_casket/ready answers 503 —
 * "casket is listening; not ready: backend ECONNREFUSED" instead, then
 * "casket is ready" once the upstream answers; and a failing check is one
 * warn line without a stack, not one per probe.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { expect, it } from 'vitest';
import { startCasket } from '../helpers/casket.js';
import { until } from '../helpers/poll.js';
import { startUpstream } from '../helpers/upstream.js';

interface Line {
  level: number;
  msg: string;
  stack?: string;
  err?: { stack?: string };
}

it('with the upstream down: listening, not ready, one warn line without a stack; ready once the upstream answers', async () => {
  // A port nothing listens on yet; later a relay to a real moto listens there.
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const port = (probe.address() as AddressInfo).port;
  await new Promise((r) => probe.close(r));
  const moto = await startUpstream('moto');
  let relay: Server | undefined;
  const sockets = new Set<Socket>();
  const c = await startCasket({ upstream: { ...moto, url: `http://127.0.0.1:${port}`, stop: async () => {} } });
  try {
    const lines = () => c.logs.map((l) => JSON.parse(l) as Line);
    const started = lines().find((l) => l.msg.startsWith('casket is'))!;
    expect(started.msg).toBe('casket is listening; not ready: backend ECONNREFUSED');
    expect(lines().some((l) => l.msg === 'casket is ready')).toBe(false);
    for (let i = 0; i < 3; i++) expect((await fetch(`${c.url}/_casket/ready`)).status).toBe(503);
    const failures = lines().filter((l) => l.msg.startsWith('readiness check failed'));
    expect(failures.map((l) => [l.level, l.msg])).toEqual([[40, 'readiness check failed: backend: ECONNREFUSED']]);
    expect(JSON.stringify(failures[0])).not.toMatch(/"stack"/);

    const target = new URL(moto.url);
    relay = createServer((s) => {
      const up = connect(Number(target.port), target.hostname);
      sockets.add(s).add(up);
      s.pipe(up).pipe(s);
      s.on('error', () => up.destroy());
      up.on('error', () => s.destroy());
    });
    await new Promise<void>((r) => relay!.listen(port, '127.0.0.1', r));
    await until(() => lines().some((l) => l.msg === 'casket is ready'), 'casket to log that it is ready', 10_000);
    expect((await fetch(`${c.url}/_casket/ready`)).status).toBe(200);
    expect(lines().filter((l) => l.msg.startsWith('readiness check passes again')).map((l) => l.msg)).toEqual(['readiness check passes again: backend']);
  } finally {
    await c.stop();
    for (const s of sockets) s.destroy();
    relay?.close();
    await moto.stop();
  }
});
