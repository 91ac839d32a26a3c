/**
 * A TCP relay in front of an upstream that counts the bytes sent to it: the
 * streamed-upload tests (test/backends/s3/streamed-*.test.ts) point casket
 * at it to see a body reach the upstream while the client is still sending.
 */
import { connect, createServer, type Socket } from 'node:net';
import type { Upstream } from './upstream.js';

export interface CountingRelay {
  /** The upstream, reached through the relay. */
  upstream: Upstream;
  /** Bytes casket has sent the upstream so far. */
  sent(): number;
  close(): Promise<void>;
}

export async function countingRelay(target: Upstream): Promise<CountingRelay> {
  const to = new URL(target.url);
  const sockets = new Set<Socket>();
  let sent = 0;
  const server = createServer((inbound) => {
    const outbound = connect(Number(to.port), to.hostname);
    for (const s of [inbound, outbound]) {
      sockets.add(s);
      s.once('close', () => sockets.delete(s));
      s.on('error', () => s.destroy());
    }
    inbound.on('data', (d: Buffer) => (sent += d.length));
    inbound.pipe(outbound).pipe(inbound);
    inbound.once('close', () => outbound.destroy());
    outbound.once('close', () => inbound.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as { port: number }).port;
  return {
    upstream: { ...target, url: `http://127.0.0.1:${port}`, stop: async () => {} },
    sent: () => sent,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}
