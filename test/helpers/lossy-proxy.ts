/**
 * A TCP proxy in front of casket that loses answers on demand: the request
 * reaches casket whole, casket commits and answers, and the proxy cuts the
 * client's connection at the first byte of that answer. The client sees a
 * reset connection — what an SDK retries automatically — while the write
 * has landed: the "lost response" of docs/design.md §3's exact retries.
 *
 * Interim `100 Continue` answers pass through (boto3 and awscli wait for one
 * before sending a PUT's body); only a final answer is cut.
 */
import { connect, createServer, type Socket } from 'node:net';

export interface LossyProxy {
  url: string;
  /** Lose the next `n` final answers. */
  loseNext(n?: number): void;
  /** Answers lost so far. */
  readonly lost: number;
  close(): Promise<void>;
}

export async function lossyProxy(target: string): Promise<LossyProxy> {
  const to = new URL(target);
  const sockets = new Set<Socket>();
  let toLose = 0;
  let lost = 0;
  const track = (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
    return s;
  };
  const server = createServer((inbound) => {
    track(inbound);
    const outbound = track(connect(Number(to.port), to.hostname));
    inbound.pipe(outbound);
    outbound.on('data', (chunk: Buffer) => {
      const interim = chunk.subarray(0, 12).toString('latin1') === 'HTTP/1.1 100';
      if (!interim && toLose > 0) {
        toLose--;
        lost++;
        inbound.resetAndDestroy();
        outbound.destroy();
        return;
      }
      inbound.write(chunk);
    });
    inbound.once('close', () => outbound.destroy());
    outbound.once('close', () => inbound.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    loseNext: (n = 1) => {
      toLose += n;
    },
    get lost() {
      return lost;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
