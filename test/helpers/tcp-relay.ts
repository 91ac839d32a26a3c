/**
 * A TCP relay in front of an upstream, for tests that must see or shape the
 * bytes between casket and its upstream: `join` connects each inbound socket
 * (casket's) to its outbound one (the upstream's) as the test needs. Every
 * socket is destroyed on close, and an error on either ends that socket.
 */
import { connect, createServer, type Socket } from 'node:net';
import type { Upstream } from './upstream.js';

export interface TcpRelay {
  /** The upstream, reached through the relay. */
  upstream: Upstream;
  close(): Promise<void>;
}

export async function tcpRelay(target: Upstream, join: (inbound: Socket, outbound: Socket) => void): Promise<TcpRelay> {
  const to = new URL(target.url);
  const sockets = new Set<Socket>();
  const server = createServer((inbound) => {
    const outbound = connect(Number(to.port), to.hostname);
    for (const s of [inbound, outbound]) {
      sockets.add(s);
      s.once('close', () => sockets.delete(s));
      s.on('error', () => s.destroy());
    }
    join(inbound, outbound);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as { port: number }).port;
  return {
    upstream: { ...target, url: `http://127.0.0.1:${port}`, stop: async () => {} },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}
